// A result type that disagrees with the shape rule is reported at the op's file position when it has no name.
// RUN: not glow-opt %s --pass-pipeline='builtin.module(glow-verify)' 2>&1 | FileCheck %s

func.func @pool(%x: tensor<1x1x4x4xf32> {glow.name = "x"}) -> (tensor<1x1x3x3xf32> {glow.name = "y"}) {
  // CHECK: verify-errors-result.mlir:[[@LINE+1]]:8: error: 'glow.max_pool' result shape [1, 1, 3, 3] must equal the shape rule's [1, 1, 2, 2]
  %0 = "glow.max_pool"(%x) {kernels = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32>
  return %0 : tensor<1x1x3x3xf32>
}
