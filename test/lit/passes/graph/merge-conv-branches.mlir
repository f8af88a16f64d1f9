// glow-merge-conv-branches merges added convolutions of one input (and its identity or batch norm) into one.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-merge-conv-branches,glow-verify)' | FileCheck %s

// A 3x3 (pads 1) + a 1x1 (pads 0) + a 1x3 (pads 0, 1) + x itself, one input channel: one 3x3 with pads 1 whose
// filter is the 3x3's ones, plus 2 at the center from the 1x1 and x (weight 1), plus 3 along the middle row;
// the biases 1 + 2 + 4.
// CHECK-LABEL: func.func @branches
// CHECK-NOT: glow.add
// CHECK: %[[W:.*]] = "glow.constant"() {value = dense<{{\[\[\[\[}}1.000000e+00, 1.000000e+00, 1.000000e+00], [4.000000e+00, 7.000000e+00, 4.000000e+00], [1.000000e+00, 1.000000e+00, 1.000000e+00]]]]> : tensor<1x1x3x3xf32>}
// CHECK: %[[B:.*]] = "glow.constant"() {value = dense<7.000000e+00> : tensor<1xf32>}
// CHECK: %[[C:.*]] = "glow.convolution"(%arg0, %[[W]], %[[B]]) {dilation = array<i64: 1, 1>, group = 1 : i64, kernels = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
// CHECK-NEXT: return %[[C]]
func.func @branches(%x: tensor<1x1x4x4xf32> {glow.name = "x"}) -> (tensor<1x1x4x4xf32> {glow.name = "y"}) {
  %w3 = "glow.constant"() {value = dense<1.0> : tensor<1x1x3x3xf32>} : () -> tensor<1x1x3x3xf32>
  %b3 = "glow.constant"() {value = dense<1.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %c3 = "glow.convolution"(%x, %w3, %b3) {kernels = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>, tensor<1xf32>) -> tensor<1x1x4x4xf32>
  %w1 = "glow.constant"() {value = dense<2.0> : tensor<1x1x1x1xf32>} : () -> tensor<1x1x1x1xf32>
  %b1 = "glow.constant"() {value = dense<2.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %c1 = "glow.convolution"(%x, %w1, %b1) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x4x4xf32>
  %wh = "glow.constant"() {value = dense<3.0> : tensor<1x1x1x3xf32>} : () -> tensor<1x1x1x3xf32>
  %bh = "glow.constant"() {value = dense<4.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %ch = "glow.convolution"(%x, %wh, %bh) {kernels = array<i64: 1, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 1, 0, 1>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>, tensor<1x1x1x3xf32>, tensor<1xf32>) -> tensor<1x1x4x4xf32>
  %s1 = "glow.add"(%c3, %c1) : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %s2 = "glow.add"(%s1, %ch) : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %y = "glow.add"(%x, %s2) : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return %y : tensor<1x1x4x4xf32>
}

// Strides differ: nothing merges.
// CHECK-LABEL: func.func @strided
// CHECK: glow.add
func.func @strided(%x: tensor<1x1x4x4xf32> {glow.name = "x"}) -> (tensor<1x1x2x2xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<1.0> : tensor<1x1x2x2xf32>} : () -> tensor<1x1x2x2xf32>
  %b = "glow.constant"() {value = dense<1.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %a = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %c = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 2, 2>} : (tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %y = "glow.add"(%a, %c) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %y : tensor<1x1x2x2xf32>
}
