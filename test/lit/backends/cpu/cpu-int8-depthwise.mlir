// glow-cpu-int8 turns the quantizer's requantized depthwise product (convert_to(q : i8 -> f32) minus its zero point 3,
// convolved with group = channels by a constant int8-valued filter, times a per-channel multiplier, plus a bias) into
// one glow.cpu_int8_depthwise_nhwc between NCHW/NHWC transposes, which reads the padding as the zero point itself
// (attributes pads and zero: no padded copy), the filter as [KH, KW, C] int8, the correction 3 * each channel's
// filter sum = [3 * 45, 3 * -9] = [135, -27]; glow-ir-to-linalg lowers it to FMAs of 16 channels widened to f32.
// A dilated depthwise convolution has no int8 kernel and stays.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-cpu-int8,glow-verify)' | FileCheck %s
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-cpu-int8,glow-lower,glow-irgen,glow-allocate,glow-ir-to-linalg)' | FileCheck %s --check-prefix=KERNEL

// CHECK-LABEL: func.func @depthwise
// CHECK-NOT: glow.convolution
// CHECK: %[[X:.*]] = "glow.transpose"(%arg0) {shuffle = array<i64: 0, 2, 3, 1>} : (tensor<1x2x4x4xi8>) -> tensor<1x4x4x2xi8>
// CHECK-NOT: glow.insert_tensor
// CHECK: %[[W:.*]] = "glow.constant"() {value = dense<{{\[\[\[}}1, -1], [2, -1], [3, -1]], {{\[\[}}4, -1], [5, -1], [6, -1]], {{\[\[}}7, -1], [8, -1], [9, -1]]]> : tensor<3x3x2xi8>}
// CHECK: %[[C:.*]] = "glow.constant"() {value = dense<[135, -27]> : tensor<2xi32>}
// CHECK: %[[M:.*]] = "glow.constant"() {value = dense<[5.000000e-01, 2.500000e-01]> : tensor<2xf32>}
// CHECK: %[[B:.*]] = "glow.constant"() {value = dense<[1.000000e+00, -1.000000e+00]> : tensor<2xf32>}
// CHECK: %[[Y:.*]] = "glow.cpu_int8_depthwise_nhwc"(%[[X]], %[[W]], %[[C]], %[[M]], %[[B]]) {clip = 0.000000e+00 : f32, kernels = array<i64: 3, 3>, output_scale = 0.000000e+00 : f32, output_zero = 0 : i64, pads = array<i64: 1, 1, 1, 1>, relu = false, strides = array<i64: 1, 1>, zero = 3 : i64} : (tensor<1x4x4x2xi8>, tensor<3x3x2xi8>, tensor<2xi32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x4x4x2xf32>
// CHECK: %[[R:.*]] = "glow.transpose"(%[[Y]]) {shuffle = array<i64: 0, 3, 1, 2>}
// CHECK: return %[[R]]
// The int8 bytes are widened as signed, 2 channels under a mask, and multiplied and added in f32; a tap in the
// padding multiplies the zero point.
// KERNEL-LABEL: func.func @depthwise
// KERNEL: arith.constant dense<3.000000e+00> : vector<16xf32>
// KERNEL: vector.maskedload {{.*}} : memref<1x4x4x2xi8>, vector<16xi1>, vector<16xi8> into vector<16xi8>
// KERNEL: arith.sitofp {{.*}} : vector<16xi8> to vector<16xf32>
// KERNEL: vector.fma {{.*}} : vector<16xf32>
func.func @depthwise(%q: tensor<1x2x4x4xi8> {glow.name = "q"}) -> (tensor<1x2x4x4xf32> {glow.name = "y"}) {
  %wide = "glow.convert_to"(%q) : (tensor<1x2x4x4xi8>) -> tensor<1x2x4x4xf32>
  %z = "glow.splat"() {value = 3.0 : f32} : () -> tensor<1x2x4x4xf32>
  %centred = "glow.sub"(%wide, %z) : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %w = "glow.constant"() {value = dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]], [[[-1.0, -1.0, -1.0], [-1.0, -1.0, -1.0], [-1.0, -1.0, -1.0]]]]> : tensor<2x1x3x3xf32>} : () -> tensor<2x1x3x3xf32>
  %zeros = "glow.constant"() {value = dense<0.0> : tensor<2xf32>} : () -> tensor<2xf32>
  %acc = "glow.convolution"(%centred, %w, %zeros) {dilation = array<i64: 1, 1>, group = 2 : i64, kernels = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<2x1x3x3xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %m = "glow.constant"() {value = dense<[0.5, 0.25]> : tensor<2xf32>} : () -> tensor<2xf32>
  %mb = "glow.broadcast"(%m) {axis = 1 : i64} : (tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %scaled = "glow.mul"(%acc, %mb) : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %b = "glow.constant"() {value = dense<[1.0, -1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %bb = "glow.broadcast"(%b) {axis = 1 : i64} : (tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %y = "glow.add"(%scaled, %bb) : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %y : tensor<1x2x4x4xf32>
}

// CHECK-LABEL: func.func @dilated
// CHECK-NOT: glow.cpu_int8_depthwise_nhwc
// CHECK: "glow.convolution"
func.func @dilated(%q: tensor<1x2x6x6xi8> {glow.name = "q"}) -> (tensor<1x2x6x6xf32> {glow.name = "y"}) {
  %wide = "glow.convert_to"(%q) : (tensor<1x2x6x6xi8>) -> tensor<1x2x6x6xf32>
  %w = "glow.constant"() {value = dense<1.0> : tensor<2x1x3x3xf32>} : () -> tensor<2x1x3x3xf32>
  %zeros = "glow.constant"() {value = dense<0.0> : tensor<2xf32>} : () -> tensor<2xf32>
  %acc = "glow.convolution"(%wide, %w, %zeros) {dilation = array<i64: 2, 2>, group = 2 : i64, kernels = array<i64: 3, 3>, pads = array<i64: 2, 2, 2, 2>, strides = array<i64: 1, 1>} : (tensor<1x2x6x6xf32>, tensor<2x1x3x3xf32>, tensor<2xf32>) -> tensor<1x2x6x6xf32>
  %m = "glow.splat"() {value = 0.5 : f32} : () -> tensor<1x2x6x6xf32>
  %y = "glow.mul"(%acc, %m) : (tensor<1x2x6x6xf32>, tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
  return %y : tensor<1x2x6x6xf32>
}
