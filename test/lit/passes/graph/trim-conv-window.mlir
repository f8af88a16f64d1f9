// glow-trim-conv-window drops the outer filter taps of a convolution that read only padding for every output,
// and the pads with them.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-trim-conv-window,glow-verify)' | FileCheck %s

// DeepLab's ASPP on a small map: a 3x3 window of dilation 4 on a 4x4 input padded by 4 reads the input with its
// centre tap only, so it becomes a 1x1 convolution without pads.
// CHECK-LABEL: func.func @aspp
// CHECK: %[[W:.*]] = "glow.slice"(%arg1) {start = array<i64: 0, 0, 1, 1>} : (tensor<2x3x3x3xf32>) -> tensor<2x3x1x1xf32>
// CHECK: "glow.fused_convolution"(%arg0, %[[W]], %{{.*}}) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 4, 4>, group = 1 : i64, kernels = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
func.func @aspp(%x: tensor<1x3x4x4xf32> {glow.name = "x"}, %w: tensor<2x3x3x3xf32> {glow.name = "w"}) -> (tensor<1x2x4x4xf32> {glow.name = "y"}) {
  %b = "glow.splat"() {value = 0.5 : f32} : () -> tensor<2xf32>
  %y = "glow.fused_convolution"(%x, %w, %b) {kernels = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 4, 4, 4, 4>, group = 1 : i64, dilation = array<i64: 4, 4>, activation = "relu", activationArgs = array<f32>} : (tensor<1x3x4x4xf32>, tensor<2x3x3x3xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  return %y : tensor<1x2x4x4xf32>
}

// One side at a time: along H (3 rows, pads 3 and 3) both outer taps read padding only; along W (4 columns, pads
// 3 and 0, one output) only the first does. The output shape stays 3x1.
// CHECK-LABEL: func.func @one_side
// CHECK: %[[W:.*]] = "glow.slice"(%{{.*}}) {start = array<i64: 0, 0, 1, 1>} : (tensor<1x1x3x3xf32>) -> tensor<1x1x1x2xf32>
// CHECK: "glow.convolution"(%arg0, %[[W]], %{{.*}}) {dilation = array<i64: 3, 3>, group = 1 : i64, kernels = array<i64: 1, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x3x4xf32>, tensor<1x1x1x2xf32>, tensor<1xf32>) -> tensor<1x1x3x1xf32>
func.func @one_side(%x: tensor<1x1x3x4xf32> {glow.name = "x"}) -> (tensor<1x1x3x1xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]]]> : tensor<1x1x3x3xf32>} : () -> tensor<1x1x3x3xf32>
  %b = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1xf32>
  %y = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 3, 3, 3, 0>, group = 1 : i64, dilation = array<i64: 3, 3>} : (tensor<1x1x3x4xf32>, tensor<1x1x3x3xf32>, tensor<1xf32>) -> tensor<1x1x3x1xf32>
  return %y : tensor<1x1x3x1xf32>
}

// A dilated window whose every tap reads the input for some output stays whole.
// CHECK-LABEL: func.func @all_live
// CHECK-NOT: glow.slice
// CHECK: "glow.convolution"(%arg0, %arg1, %{{.*}}) {dilation = array<i64: 2, 2>, group = 1 : i64, kernels = array<i64: 3, 3>, pads = array<i64: 2, 2, 2, 2>
func.func @all_live(%x: tensor<1x1x6x6xf32> {glow.name = "x"}, %w: tensor<1x1x3x3xf32> {glow.name = "w"}) -> (tensor<1x1x6x6xf32> {glow.name = "y"}) {
  %b = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1xf32>
  %y = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 2, 2, 2, 2>, group = 1 : i64, dilation = array<i64: 2, 2>} : (tensor<1x1x6x6xf32>, tensor<1x1x3x3xf32>, tensor<1xf32>) -> tensor<1x1x6x6xf32>
  return %y : tensor<1x1x6x6xf32>
}
