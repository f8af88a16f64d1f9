// glow-lower expands the pads of the CPU backend's NHWC ops along their H and W dims (dims 1 and 2), as it
// does for the NCHW ops along dims 2 and 3; an average that does not count padding gets its per-position
// correction broadcast at axis 1.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-lower,glow-verify)' | FileCheck %s

// CHECK-LABEL: func.func @conv
// CHECK: %[[Z:.*]] = "glow.splat"() {value = 0.000000e+00 : f32} : () -> tensor<1x7x6x2xf32>
// CHECK: %[[P:.*]] = "glow.insert_tensor"(%[[Z]], %arg0) {start = array<i64: 0, 1, 0, 0>} : (tensor<1x7x6x2xf32>, tensor<1x5x5x2xf32>) -> tensor<1x7x6x2xf32>
// CHECK: %[[Y:.*]] = "glow.cpu_conv_nhwc"(%[[P]], %arg1, %arg2) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 1 : i64, kernels = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x7x6x2xf32>, tensor<3x3x2x4xf32>, tensor<4xf32>) -> tensor<1x5x4x4xf32>
// CHECK: return %[[Y]]

// CHECK-LABEL: func.func @avg
// CHECK: %[[Z:.*]] = "glow.splat"() {value = 0.000000e+00 : f32} : () -> tensor<1x5x5x3xf32>
// CHECK: %[[P:.*]] = "glow.insert_tensor"(%[[Z]], %arg0) {start = array<i64: 0, 1, 1, 0>}
// CHECK: %[[S:.*]] = "glow.cpu_avg_pool_nhwc"(%[[P]]) {countIncludePads = true, kernels = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x5x5x3xf32>) -> tensor<1x2x2x3xf32>
// CHECK: %[[K:.*]] = "glow.constant"() {value = dense<{{\[\[}}2.250000e+00, 1.500000e+00], [1.500000e+00, 1.000000e+00]]> : tensor<2x2xf32>}
// CHECK: %[[KB:.*]] = "glow.broadcast"(%[[K]]) {axis = 1 : i64} : (tensor<2x2xf32>) -> tensor<1x2x2x3xf32>
// CHECK: %[[Y:.*]] = "glow.mul"(%[[S]], %[[KB]])
// CHECK: return %[[Y]]

// Without pads there is nothing to lower.
// CHECK-LABEL: func.func @max
// CHECK-NEXT: %[[Y:.*]] = "glow.cpu_max_pool_nhwc"(%arg0) {kernels = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
// CHECK-NEXT: return %[[Y]]
func.func @conv(%x: tensor<1x5x5x2xf32> {glow.name = "x"}, %w: tensor<3x3x2x4xf32> {glow.name = "w"}, %b: tensor<4xf32> {glow.name = "b"}) -> (tensor<1x5x4x4xf32> {glow.name = "y"}) {
  %0 = "glow.cpu_conv_nhwc"(%x, %w, %b) {kernels = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 0, 1, 1>, group = 1 : i64, dilation = array<i64: 1, 1>, activation = "relu", activationArgs = array<f32>} : (tensor<1x5x5x2xf32>, tensor<3x3x2x4xf32>, tensor<4xf32>) -> tensor<1x5x4x4xf32> loc("conv")
  return %0 : tensor<1x5x4x4xf32>
}
func.func @avg(%x: tensor<1x4x4x3xf32> {glow.name = "x"}) -> (tensor<1x2x2x3xf32> {glow.name = "y"}) {
  %0 = "glow.cpu_avg_pool_nhwc"(%x) {kernels = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>, countIncludePads = false} : (tensor<1x4x4x3xf32>) -> tensor<1x2x2x3xf32> loc("avg")
  return %0 : tensor<1x2x2x3xf32>
}
func.func @max(%x: tensor<1x4x4x3xf32> {glow.name = "x"}) -> (tensor<1x2x2x3xf32> {glow.name = "y"}) {
  %0 = "glow.cpu_max_pool_nhwc"(%x) {kernels = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x4x4x3xf32>) -> tensor<1x2x2x3xf32> loc("max")
  return %0 : tensor<1x2x2x3xf32>
}
