// glow-fold-transpose-into-weights transposes constant weights at compile time and moves a transpose before a
// flatten + dense layer into the dense layer's weight rows.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-fold-transpose-into-weights,glow-verify)' | FileCheck %s

// The Gemm form matmul(x, transpose(W)): W is stored transposed once.
// CHECK-LABEL: func.func @gemm
// CHECK-NOT: glow.transpose
// CHECK: %[[W:.*]] = "glow.constant"() {value = dense<{{\[\[}}1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>}
// CHECK: "glow.matmul"(%arg0, %[[W]])
func.func @gemm(%x: tensor<1x3xf32> {glow.name = "x"}) -> (tensor<1x2xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %t = "glow.transpose"(%w) {shuffle = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %y = "glow.matmul"(%x, %t) : (tensor<1x3xf32>, tensor<3x2xf32>) -> tensor<1x2xf32>
  return %y : tensor<1x2xf32>
}

// NCHW [1, 2, 1, 2] -> NHWC -> flatten -> FC: the FC reads the NCHW flatten with its rows permuted
// (NHWC row order h,w,c = (0,0,0) (0,0,1) (0,1,0) (0,1,1) = NCHW rows 0, 2, 1, 3).
// CHECK-LABEL: func.func @flatten
// CHECK-NOT: glow.transpose
// CHECK: %[[F:.*]] = "glow.reshape"(%arg0) {dims = array<i64: 1, 4>} : (tensor<1x2x1x2xf32>) -> tensor<1x4xf32>
// CHECK: %[[W:.*]] = "glow.constant"() {value = dense<{{\[\[}}0.000000e+00], [2.000000e+00], [1.000000e+00], [3.000000e+00]]> : tensor<4x1xf32>}
// CHECK: "glow.fully_connected"(%[[F]], %[[W]], %{{.*}})
func.func @flatten(%x: tensor<1x2x1x2xf32> {glow.name = "x"}) -> (tensor<1x1xf32> {glow.name = "y"}) {
  %t = "glow.transpose"(%x) {shuffle = array<i64: 0, 2, 3, 1>} : (tensor<1x2x1x2xf32>) -> tensor<1x1x2x2xf32>
  %r = "glow.reshape"(%t) {dims = array<i64: 1, 4>} : (tensor<1x1x2x2xf32>) -> tensor<1x4xf32>
  %w = "glow.constant"() {value = dense<[[0.0], [1.0], [2.0], [3.0]]> : tensor<4x1xf32>} : () -> tensor<4x1xf32>
  %b = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1xf32>
  %y = "glow.fully_connected"(%r, %w, %b) : (tensor<1x4xf32>, tensor<4x1xf32>, tensor<1xf32>) -> tensor<1x1xf32>
  return %y : tensor<1x1xf32>
}
