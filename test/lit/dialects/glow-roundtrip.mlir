// Every op of the `glow` dialect parses, verifies against its IRDL definition and prints back.
// RUN: glow-opt %s | glow-opt | FileCheck %s

// CHECK-LABEL: func.func @all_ops
func.func @all_ops(%x: tensor<1x3x8x8xf32> {glow.name = "x"}, %m: tensor<2x4xf32>) -> (tensor<1x4x8x8xf32> {glow.name = "y"}) {
  // CHECK: "glow.constant"() {value = dense<1.000000e+00> : tensor<4x3x3x3xf32>}
  %w = "glow.constant"() {value = dense<1.0> : tensor<4x3x3x3xf32>} : () -> tensor<4x3x3x3xf32>
  // CHECK: "glow.splat"() {value = 5.000000e-01 : f32}
  %b = "glow.splat"() {value = 0.5 : f32} : () -> tensor<4xf32>
  // CHECK: "glow.convolution"(%{{.*}}, %{{.*}}, %{{.*}}) {dilation = array<i64: 1, 1>, group = 1 : i64, kernels = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
  %c = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  // CHECK: "glow.max_pool"(%{{.*}}) {kernels = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
  %mp = "glow.max_pool"(%c) {kernels = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  // CHECK: "glow.avg_pool"(%{{.*}}) {countIncludePads = false, kernels = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
  %ap = "glow.avg_pool"(%mp) {kernels = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, countIncludePads = false} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: "glow.batch_normalization"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {channelIdx = 1 : i64, epsilon = 9.99999974E-6 : f32, momentum = 0.899999976 : f32}
  %bn = "glow.batch_normalization"(%mp, %b, %b, %b, %b) {epsilon = 1.0e-5 : f32, momentum = 0.9 : f32, channelIdx = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  // CHECK: "glow.relu"
  %r = "glow.relu"(%bn) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  // CHECK: "glow.sigmoid"
  %s = "glow.sigmoid"(%r) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  // CHECK: "glow.tanh"
  %t = "glow.tanh"(%s) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  // CHECK: "glow.exp"
  %e = "glow.exp"(%t) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  // CHECK: "glow.sqrt"
  %q = "glow.sqrt"(%e) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  // CHECK: "glow.add"
  %a1 = "glow.add"(%q, %r) : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  // CHECK: "glow.sub"
  %a2 = "glow.sub"(%a1, %r) : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  // CHECK: "glow.mul"
  %a3 = "glow.mul"(%a2, %r) : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  // CHECK: "glow.div"
  %a4 = "glow.div"(%a3, %e) : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  // CHECK: "glow.max"
  %a5 = "glow.max"(%a4, %r) : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  // CHECK: "glow.min"
  %a6 = "glow.min"(%a5, %r) : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  // CHECK: "glow.reshape"(%{{.*}}) {dims = array<i64: 4, 64>}
  %rs = "glow.reshape"(%a6) {dims = array<i64: 4, 64>} : (tensor<1x4x8x8xf32>) -> tensor<4x64xf32>
  // CHECK: "glow.transpose"(%{{.*}}) {shuffle = array<i64: 1, 0>}
  %tr = "glow.transpose"(%rs) {shuffle = array<i64: 1, 0>} : (tensor<4x64xf32>) -> tensor<64x4xf32>
  // CHECK: "glow.matmul"
  %mm = "glow.matmul"(%tr, %m) : (tensor<64x4xf32>, tensor<2x4xf32>) -> tensor<64x4xf32>
  %fw = "glow.constant"() {value = dense<0.25> : tensor<4x4xf32>} : () -> tensor<4x4xf32>
  %fb = "glow.constant"() {value = dense<0.0> : tensor<4xf32>} : () -> tensor<4xf32>
  // CHECK: "glow.fully_connected"
  %fc = "glow.fully_connected"(%tr, %fw, %fb) : (tensor<64x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<64x4xf32>
  // CHECK: "glow.batched_add"
  %ba = "glow.batched_add"(%fc, %fb) : (tensor<64x4xf32>, tensor<4xf32>) -> tensor<64x4xf32>
  // CHECK: "glow.softmax"
  %sm = "glow.softmax"(%ba) : (tensor<64x4xf32>) -> tensor<64x4xf32>
  // CHECK: "glow.concat"(%{{.*}}, %{{.*}}, %{{.*}}) {dim = 1 : i64, operandSegmentSizes = array<i32: 2, 1, 0, 0, 0, 0, 0, 0>}
  %cc = "glow.concat"(%sm, %sm, %tr) {dim = 1 : i64, operandSegmentSizes = array<i32: 2, 1, 0, 0, 0, 0, 0, 0>} : (tensor<64x4xf32>, tensor<64x4xf32>, tensor<64x4xf32>) -> tensor<64x12xf32>
  // CHECK: "glow.slice"(%{{.*}}) {start = array<i64: 0, 4>}
  %sl = "glow.slice"(%cc) {start = array<i64: 0, 4>} : (tensor<64x12xf32>) -> tensor<64x4xf32>
  // CHECK: "glow.insert_tensor"(%{{.*}}, %{{.*}}) {start = array<i64: 0, 8>}
  %it = "glow.insert_tensor"(%cc, %sl) {start = array<i64: 0, 8>} : (tensor<64x12xf32>, tensor<64x4xf32>) -> tensor<64x12xf32>
  // CHECK: "glow.broadcast"(%{{.*}}) {axis = 1 : i64}
  %bc = "glow.broadcast"(%fb) {axis = 1 : i64} : (tensor<4xf32>) -> tensor<1x4x8x8xf32>
  return %bc : tensor<1x4x8x8xf32>
}
