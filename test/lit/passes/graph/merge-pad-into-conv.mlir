// glow-merge-pad-into-conv merges a splat + insert_tensor border into the pads of the conv or pool reading it.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-merge-pad-into-conv,glow-verify)' | FileCheck %s

// CHECK-LABEL: func.func @conv
// CHECK-NOT: glow.insert_tensor
// CHECK: "glow.convolution"(%arg0, %{{.*}}, %{{.*}}) {{{.*}}pads = array<i64: 2, 1, 1, 3>
func.func @conv(%x: tensor<1x1x3x3xf32> {glow.name = "x"}) -> (tensor<1x1x6x7xf32> {glow.name = "y"}) {
  %zero = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1x1x5x6xf32>
  %p = "glow.insert_tensor"(%zero, %x) {start = array<i64: 0, 0, 1, 1>} : (tensor<1x1x5x6xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x5x6xf32>
  %w = "glow.constant"() {value = dense<1.0> : tensor<1x1x1x1xf32>} : () -> tensor<1x1x1x1xf32>
  %b = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1xf32>
  %y = "glow.convolution"(%p, %w, %b) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 1, 0, 0, 1>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x1x5x6xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x6x7xf32>
  return %y : tensor<1x1x6x7xf32>
}

// max_pool takes a -inf border, avg_pool a zero border (and then counts its pads).
// CHECK-LABEL: func.func @pools
// CHECK-NOT: glow.insert_tensor
// CHECK: "glow.max_pool"(%arg0) {kernels = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
// CHECK: "glow.avg_pool"(%arg0) {countIncludePads = true, kernels = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
func.func @pools(%x: tensor<1x2x4x4xf32> {glow.name = "x"}) -> (tensor<1x2x3x3xf32> {glow.name = "m"}, tensor<1x2x4x4xf32> {glow.name = "a"}) {
  %ninf = "glow.splat"() {value = 0xFF800000 : f32} : () -> tensor<1x2x6x6xf32>
  %pm = "glow.insert_tensor"(%ninf, %x) {start = array<i64: 0, 0, 1, 1>} : (tensor<1x2x6x6xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x6x6xf32>
  %m = "glow.max_pool"(%pm) {kernels = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32>
  %zero = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1x2x6x6xf32>
  %pa = "glow.insert_tensor"(%zero, %x) {start = array<i64: 0, 0, 1, 1>} : (tensor<1x2x6x6xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x6x6xf32>
  %a = "glow.avg_pool"(%pa) {kernels = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, countIncludePads = false} : (tensor<1x2x6x6xf32>) -> tensor<1x2x4x4xf32>
  return %m, %a : tensor<1x2x3x3xf32>, tensor<1x2x4x4xf32>
}

// Kept: a border of the wrong value (1 into a conv, 0 into a max_pool), a pad of the channel dim.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-3: glow.insert_tensor
func.func @kept(%x: tensor<1x1x3x3xf32> {glow.name = "x"}) -> (tensor<1x1x5x5xf32> {glow.name = "c"}, tensor<1x1x5x5xf32> {glow.name = "m"}, tensor<1x2x3x3xf32> {glow.name = "k"}) {
  %one = "glow.splat"() {value = 1.0 : f32} : () -> tensor<1x1x5x5xf32>
  %p1 = "glow.insert_tensor"(%one, %x) {start = array<i64: 0, 0, 1, 1>} : (tensor<1x1x5x5xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x5x5xf32>
  %w = "glow.constant"() {value = dense<1.0> : tensor<1x1x1x1xf32>} : () -> tensor<1x1x1x1xf32>
  %b = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1xf32>
  %c = "glow.convolution"(%p1, %w, %b) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x1x5x5xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x5x5xf32>
  %zero = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1x1x5x5xf32>
  %p2 = "glow.insert_tensor"(%zero, %x) {start = array<i64: 0, 0, 1, 1>} : (tensor<1x1x5x5xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x5x5xf32>
  %m = "glow.max_pool"(%p2) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x1x5x5xf32>) -> tensor<1x1x5x5xf32>
  %zc = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1x2x3x3xf32>
  %p3 = "glow.insert_tensor"(%zc, %x) {start = array<i64: 0, 1, 0, 0>} : (tensor<1x2x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32>
  %w2 = "glow.constant"() {value = dense<1.0> : tensor<2x2x1x1xf32>} : () -> tensor<2x2x1x1xf32>
  %b2 = "glow.splat"() {value = 0.0 : f32} : () -> tensor<2xf32>
  %k = "glow.convolution"(%p3, %w2, %b2) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  return %c, %m, %k : tensor<1x1x5x5xf32>, tensor<1x1x5x5xf32>, tensor<1x2x3x3xf32>
}
