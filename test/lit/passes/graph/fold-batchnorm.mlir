// glow-fold-batchnorm folds inference batch normalization into the preceding conv / FC / matmul weights.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-fold-batchnorm,glow-verify)' | FileCheck %s

// k = scale / sqrt(var + eps) = [2, 0.5]; W' = W * k per output channel; b' = (b - mean) * k + bias.
// CHECK-LABEL: func.func @conv
// CHECK-NOT: glow.batch_normalization
// CHECK-DAG: %[[W:.*]] = "glow.constant"() {value = dense<{{\[\[\[\[}}2.000000e+00]]], {{\[\[\[}}5.000000e-01]]]]> : tensor<2x1x1x1xf32>}
// CHECK-DAG: %[[B:.*]] = "glow.constant"() {value = dense<[1.000000e+00, 1.500000e+00]> : tensor<2xf32>}
// CHECK: %[[C:.*]] = "glow.convolution"(%arg0, %[[W]], %[[B]]) {dilation = array<i64: 1, 1>, group = 1 : i64, kernels = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
// CHECK-NEXT: return %[[C]]
func.func @conv(%x: tensor<1x1x2x2xf32> {glow.name = "x"}) -> (tensor<1x2x4x4xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<1.0> : tensor<2x1x1x1xf32>} : () -> tensor<2x1x1x1xf32>
  %b = "glow.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %c = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %scale = "glow.constant"() {value = dense<[4.0, 1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %bias = "glow.constant"() {value = dense<[1.0, 1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %mean = "glow.constant"() {value = dense<[1.0, 1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %var = "glow.constant"() {value = dense<[4.0, 4.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %y = "glow.batch_normalization"(%c, %scale, %bias, %mean, %var) {channelIdx = 1 : i64, epsilon = 0.0 : f32, momentum = 0.9 : f32} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  return %y : tensor<1x2x4x4xf32>
}

// matmul + batched_add + bn -> matmul with scaled columns + batched_add of the folded bias. A second bn right
// after folds too (the pass repeats).
// CHECK-LABEL: func.func @matmul_chain
// CHECK-NOT: glow.batch_normalization
// CHECK: %[[W:.*]] = "glow.constant"() {value = dense<{{\[\[}}2.000000e+00, 2.500000e-01]]> : tensor<1x2xf32>}
// CHECK: %[[M:.*]] = "glow.matmul"(%arg0, %[[W]])
// CHECK: %[[B:.*]] = "glow.constant"() {value = dense<[1.000000e+00, 7.500000e-01]> : tensor<2xf32>}
// CHECK: %[[A:.*]] = "glow.batched_add"(%[[M]], %[[B]])
// CHECK-NEXT: return %[[A]]
func.func @matmul_chain(%x: tensor<3x1xf32> {glow.name = "x"}) -> (tensor<3x2xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<[[1.0, 1.0]]> : tensor<1x2xf32>} : () -> tensor<1x2xf32>
  %b = "glow.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %m = "glow.matmul"(%x, %w) : (tensor<3x1xf32>, tensor<1x2xf32>) -> tensor<3x2xf32>
  %a = "glow.batched_add"(%m, %b) : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %scale = "glow.constant"() {value = dense<[4.0, 1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %bias = "glow.splat"() {value = 1.0 : f32} : () -> tensor<2xf32>
  %mean = "glow.splat"() {value = 1.0 : f32} : () -> tensor<2xf32>
  %var = "glow.splat"() {value = 4.0 : f32} : () -> tensor<2xf32>
  %y = "glow.batch_normalization"(%a, %scale, %bias, %mean, %var) {channelIdx = 1 : i64, epsilon = 0.0 : f32, momentum = 0.9 : f32} : (tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %s2 = "glow.constant"() {value = dense<[1.0, 0.5]> : tensor<2xf32>} : () -> tensor<2xf32>
  %zero = "glow.splat"() {value = 0.0 : f32} : () -> tensor<2xf32>
  %one = "glow.splat"() {value = 1.0 : f32} : () -> tensor<2xf32>
  %z = "glow.batch_normalization"(%y, %s2, %zero, %zero, %one) {channelIdx = 1 : i64, epsilon = 0.0 : f32, momentum = 0.9 : f32} : (tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  return %z : tensor<3x2xf32>
}

// Not folded: the conv result has another user, and the bn of a non-constant-weight FC.
// CHECK-LABEL: func.func @kept
// CHECK: "glow.batch_normalization"
// CHECK: "glow.batch_normalization"
func.func @kept(%x: tensor<1x1x2x2xf32> {glow.name = "x"}, %w: tensor<1x2xf32> {glow.name = "w"}) -> (tensor<1x1x2x2xf32> {glow.name = "y"}, tensor<1x1x2x2xf32> {glow.name = "c"}, tensor<1x2xf32> {glow.name = "f"}) {
  %k = "glow.constant"() {value = dense<1.0> : tensor<1x1x1x1xf32>} : () -> tensor<1x1x1x1xf32>
  %b = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1xf32>
  %c = "glow.convolution"(%x, %k, %b) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %one = "glow.splat"() {value = 1.0 : f32} : () -> tensor<1xf32>
  %y = "glow.batch_normalization"(%c, %one, %b, %b, %one) {channelIdx = 1 : i64, epsilon = 0.0 : f32, momentum = 0.9 : f32} : (tensor<1x1x2x2xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %in = "glow.splat"() {value = 1.0 : f32} : () -> tensor<1x1xf32>
  %b2 = "glow.splat"() {value = 0.0 : f32} : () -> tensor<2xf32>
  %fc = "glow.fully_connected"(%in, %w, %b2) : (tensor<1x1xf32>, tensor<1x2xf32>, tensor<2xf32>) -> tensor<1x2xf32>
  %one2 = "glow.splat"() {value = 1.0 : f32} : () -> tensor<2xf32>
  %f = "glow.batch_normalization"(%fc, %one2, %b2, %b2, %one2) {channelIdx = 1 : i64, epsilon = 0.0 : f32, momentum = 0.9 : f32} : (tensor<1x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2xf32>
  return %y, %c, %f : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x2xf32>
}

// conv_transpose (filter [C, O / group, KH, KW]): output channel g * 2 + o of group g scales W[g's input, o],
// k = [2, 0.5, 1, 3] (not W[:, o] * k[o] of one group).
// CHECK-LABEL: func.func @conv_transpose_grouped
// CHECK-NOT: glow.batch_normalization
// CHECK-DAG: %[[W:.*]] = "glow.constant"() {value = dense<{{\[\[\[\[}}2.000000e+00]], {{\[\[}}5.000000e-01]]], {{\[\[\[}}1.000000e+00]], {{\[\[}}3.000000e+00]]]]> : tensor<2x2x1x1xf32>}
// CHECK-DAG: %[[B:.*]] = "glow.constant"() {value = dense<[2.000000e+00, 5.000000e-01, 1.000000e+00, 3.000000e+00]> : tensor<4xf32>}
// CHECK: %[[C:.*]] = "glow.conv_transpose"(%arg0, %[[W]], %[[B]]) {dilation = array<i64: 1, 1>, group = 2 : i64, kernels = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
// CHECK-NEXT: return %[[C]]
func.func @conv_transpose_grouped(%x: tensor<1x2x2x2xf32> {glow.name = "x"}) -> (tensor<1x4x3x3xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<1.0> : tensor<2x2x1x1xf32>} : () -> tensor<2x2x1x1xf32>
  %b = "glow.constant"() {value = dense<1.0> : tensor<4xf32>} : () -> tensor<4xf32>
  %c = "glow.conv_transpose"(%x, %w, %b) {kernels = array<i64: 1, 1>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, group = 2 : i64, dilation = array<i64: 1, 1>} : (tensor<1x2x2x2xf32>, tensor<2x2x1x1xf32>, tensor<4xf32>) -> tensor<1x4x3x3xf32>
  %scale = "glow.constant"() {value = dense<[2.0, 0.5, 1.0, 3.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %zero = "glow.constant"() {value = dense<0.0> : tensor<4xf32>} : () -> tensor<4xf32>
  %one = "glow.constant"() {value = dense<1.0> : tensor<4xf32>} : () -> tensor<4xf32>
  %y = "glow.batch_normalization"(%c, %scale, %zero, %zero, %one) {channelIdx = 1 : i64, epsilon = 0.0 : f32, momentum = 0.9 : f32} : (tensor<1x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x3x3xf32>
  return %y : tensor<1x4x3x3xf32>
}
