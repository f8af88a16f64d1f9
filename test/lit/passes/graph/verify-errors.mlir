// glow-verify accepts good functions and stops at the first broken rule, naming the node, the op and the rule.
// RUN: not glow-opt %s --pass-pipeline='builtin.module(glow-verify)' 2>&1 | FileCheck %s

// CHECK-NOT: good
// CHECK: conv1: error: 'glow.convolution' input channels must equal filter I * group: input [1, 3, 8, 8], filter [4, 2, 3, 3], group 1
// CHECK-NOT: error

func.func @good_conv(%x: tensor<1x4x8x8xf32> {glow.name = "x"}, %w: tensor<6x2x3x3xf32> {glow.name = "w"}, %b: tensor<6xf32> {glow.name = "b"}) -> (tensor<1x6x4x8xf32> {glow.name = "y"}) {
  %0 = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 3, 3>, strides = array<i64: 2, 1>, pads = array<i64: 1, 1, 0, 1>, group = 2 : i64, dilation = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x8xf32> loc("good_conv")
  return %0 : tensor<1x6x4x8xf32>
}

func.func @good_pool(%x: tensor<1x2x5x5xf32> {glow.name = "x"}) -> (tensor<1x2x3x3xf32> {glow.name = "y"}) {
  %0 = "glow.avg_pool"(%x) {kernels = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, countIncludePads = false} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32> loc("good_pool")
  return %0 : tensor<1x2x3x3xf32>
}

func.func @bad_conv(%x: tensor<1x3x8x8xf32> {glow.name = "x"}, %w: tensor<4x2x3x3xf32> {glow.name = "w"}, %b: tensor<4xf32> {glow.name = "b"}) -> (tensor<1x4x6x6xf32> {glow.name = "y"}) {
  %0 = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32> loc("conv1")
  return %0 : tensor<1x4x6x6xf32>
}

// Broken too, but glow-verify has already stopped.
func.func @bad_add(%a: tensor<2x3xf32> {glow.name = "a"}, %b: tensor<3x2xf32> {glow.name = "b"}) -> (tensor<2x3xf32> {glow.name = "y"}) {
  %0 = "glow.add"(%a, %b) : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x3xf32> loc("add1")
  return %0 : tensor<2x3xf32>
}
