// A dense array of the wrong element width passes IRDL's base check; glow-verify wants array<i64>.
// RUN: not glow-opt %s --pass-pipeline='builtin.module(glow-verify)' 2>&1 | FileCheck %s

// CHECK: t1: error: 'glow.transpose' attribute 'shuffle' must be array<i64: ...>, got array<i32: 1, 0>
func.func @transpose(%x: tensor<2x3xf32> {glow.name = "x"}) -> (tensor<3x2xf32> {glow.name = "y"}) {
  %0 = "glow.transpose"(%x) {shuffle = array<i32: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32> loc("t1")
  return %0 : tensor<3x2xf32>
}
