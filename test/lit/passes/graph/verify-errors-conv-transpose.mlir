// conv_transpose: each output dim is (in - 1) * stride - pads + dilation * (k - 1) + 1.
// RUN: not glow-opt %s --pass-pipeline='builtin.module(glow-verify)' 2>&1 | FileCheck %s

// CHECK: up1: error: 'glow.conv_transpose' result shape [1, 6, 8, 8] must equal the shape rule's [1, 6, 5, 7]
func.func @deconv(%x: tensor<1x4x3x4xf32> {glow.name = "x"}, %w: tensor<4x3x2x2xf32> {glow.name = "w"}, %b: tensor<6xf32> {glow.name = "b"}) -> (tensor<1x6x8x8xf32> {glow.name = "y"}) {
  %0 = "glow.conv_transpose"(%x, %w, %b) {kernels = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>, group = 2 : i64, dilation = array<i64: 1, 1>} : (tensor<1x4x3x4xf32>, tensor<4x3x2x2xf32>, tensor<6xf32>) -> tensor<1x6x8x8xf32> loc("up1")
  return %0 : tensor<1x6x8x8xf32>
}
