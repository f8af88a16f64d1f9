// glow-fuse-activations folds a convolution's bias add and activation, and matmul + batched_add + activation,
// into one fused op, in the forms glow-lower and the ONNX importer leave them.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-fuse-activations,glow-verify)' | FileCheck %s

// relu as glow-lower writes it, after a per-channel bias add (a broadcast constant): b' = b + c.
// CHECK-LABEL: func.func @conv_bias_relu
// CHECK: %[[B:.*]] = "glow.constant"() {value = dense<[1.500000e+00, 4.000000e+00]> : tensor<2xf32>}
// CHECK: %[[Y:.*]] = "glow.fused_convolution"(%arg0, %{{.*}}, %[[B]]) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 1 : i64, kernels = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
// CHECK-NOT: glow.max
// CHECK-NOT: glow.add
// CHECK: return %[[Y]]
func.func @conv_bias_relu(%x: tensor<1x1x2x2xf32> {glow.name = "x"}) -> (tensor<1x2x2x2xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<1.0> : tensor<2x1x1x1xf32>} : () -> tensor<2x1x1x1xf32>
  %b = "glow.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %c = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %k = "glow.constant"() {value = dense<[[[0.5]], [[2.0]]]> : tensor<2x1x1xf32>} : () -> tensor<2x1x1xf32>
  %kb = "glow.broadcast"(%k) {axis = 1 : i64} : (tensor<2x1x1xf32>) -> tensor<1x2x2x2xf32>
  %a = "glow.add"(%kb, %c) : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %zero = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1x2x2x2xf32>
  %y = "glow.max"(%a, %zero) : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  return %y : tensor<1x2x2x2xf32>
}

// ReLU6 as the ONNX importer writes Clip: min(max(x, 0), 6), bounds as dense constants.
// CHECK-LABEL: func.func @conv_relu6
// CHECK: %[[Y:.*]] = "glow.fused_convolution"(%arg0, {{.*}}) {activation = "clip", activationArgs = array<f32: 0.000000e+00, 6.000000e+00>
// CHECK-NOT: glow.min
// CHECK: return %[[Y]]
func.func @conv_relu6(%x: tensor<1x1x2x2xf32> {glow.name = "x"}) -> (tensor<1x1x2x2xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<1.0> : tensor<1x1x1x1xf32>} : () -> tensor<1x1x1x1xf32>
  %b = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1xf32>
  %c = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %lo = "glow.constant"() {value = dense<0.0> : tensor<1x1x2x2xf32>} : () -> tensor<1x1x2x2xf32>
  %hi = "glow.constant"() {value = dense<6.0> : tensor<1x1x2x2xf32>} : () -> tensor<1x1x2x2xf32>
  %m = "glow.max"(%c, %lo) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %y = "glow.min"(%m, %hi) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %y : tensor<1x1x2x2xf32>
}

// HardTanh in the other order, max(min(x, 1), -1); sigmoid and tanh; min alone is a half-open clip.
// CHECK-LABEL: func.func @conv_others
// CHECK: "glow.fused_convolution"(%arg0, {{.*}}) {activation = "clip", activationArgs = array<f32: -1.000000e+00, 1.000000e+00>
// CHECK: "glow.fused_convolution"(%arg0, {{.*}}) {activation = "sigmoid", activationArgs = array<f32>
// CHECK: "glow.fused_convolution"(%arg0, {{.*}}) {activation = "tanh", activationArgs = array<f32>
// CHECK: "glow.fused_convolution"(%arg0, {{.*}}) {activation = "clip", activationArgs = array<f32: 0xFF800000, 2.000000e+00>
// CHECK-NOT: "glow.convolution"
func.func @conv_others(%x: tensor<1x1x2x2xf32> {glow.name = "x"}) -> (tensor<1x1x2x2xf32> {glow.name = "a"}, tensor<1x1x2x2xf32> {glow.name = "b"}, tensor<1x1x2x2xf32> {glow.name = "c"}, tensor<1x1x2x2xf32> {glow.name = "d"}) {
  %w = "glow.constant"() {value = dense<1.0> : tensor<1x1x1x1xf32>} : () -> tensor<1x1x1x1xf32>
  %b = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1xf32>
  %one = "glow.splat"() {value = 1.0 : f32} : () -> tensor<1x1x2x2xf32>
  %mone = "glow.splat"() {value = -1.0 : f32} : () -> tensor<1x1x2x2xf32>
  %two = "glow.splat"() {value = 2.0 : f32} : () -> tensor<1x1x2x2xf32>
  %c1 = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %n = "glow.min"(%one, %c1) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %ya = "glow.max"(%n, %mone) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %c2 = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %yb = "glow.sigmoid"(%c2) : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %c3 = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %yc = "glow.tanh"(%c3) : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %c4 = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %yd = "glow.min"(%c4, %two) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %ya, %yb, %yc, %yd : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>
}

// LeakyRelu as the ONNX importer writes it: select(cmp_lt(x, 0), mul(x, alpha), x).
// CHECK-LABEL: func.func @conv_leaky_relu
// CHECK: %[[Y:.*]] = "glow.fused_convolution"(%arg0, {{.*}}) {activation = "leaky_relu", activationArgs = array<f32: 1.250000e-01>
// CHECK-NOT: glow.select
// CHECK: return %[[Y]]
func.func @conv_leaky_relu(%x: tensor<1x1x2x2xf32> {glow.name = "x"}) -> (tensor<1x1x2x2xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<1.0> : tensor<1x1x1x1xf32>} : () -> tensor<1x1x1x1xf32>
  %b = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1xf32>
  %c = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %zero = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1x1x2x2xf32>
  %alpha = "glow.splat"() {value = 0.125 : f32} : () -> tensor<1x1x2x2xf32>
  %neg = "glow.cmp_lt"(%c, %zero) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xi1>
  %scaled = "glow.mul"(%c, %alpha) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %y = "glow.select"(%neg, %scaled, %c) : (tensor<1x1x2x2xi1>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %y : tensor<1x1x2x2xf32>
}

// SiLU as PyTorch exports it (Sigmoid, then Mul of the product and its sigmoid) -> activation "silu".
// CHECK-LABEL: func.func @conv_silu
// CHECK: %[[Y:.*]] = "glow.fused_convolution"(%arg0, {{.*}}) {activation = "silu", activationArgs = array<f32>
// CHECK-NOT: glow.sigmoid
// CHECK-NOT: glow.mul
// CHECK: return %[[Y]]
func.func @conv_silu(%x: tensor<1x1x2x2xf32> {glow.name = "x"}) -> (tensor<1x1x2x2xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<1.0> : tensor<1x1x1x1xf32>} : () -> tensor<1x1x1x1xf32>
  %b = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1xf32>
  %c = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %s = "glow.sigmoid"(%c) : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %y = "glow.mul"(%s, %c) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %y : tensor<1x1x2x2xf32>
}

// An f16 model's SiLU as glow-lower leaves it (each op in f32, each result read rounded: glow.round_f16) ->
// activation "silu_f16", which rounds where the ops did; a lone rounding after a product -> "round_f16".
// CHECK-LABEL: func.func @conv_silu_f16
// CHECK: %[[Y:.*]] = "glow.fused_convolution"(%arg0, {{.*}}) {activation = "silu_f16", activationArgs = array<f32>
// CHECK-NOT: glow.sigmoid
// CHECK: %[[Z:.*]] = "glow.fused_convolution"(%[[Y]], {{.*}}) {activation = "round_f16", activationArgs = array<f32>
// CHECK-NOT: glow.round_f16
// CHECK: return %[[Z]]
func.func @conv_silu_f16(%x: tensor<1x1x2x2xf32> {glow.name = "x"}) -> (tensor<1x1x2x2xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<1.0> : tensor<1x1x1x1xf32>} : () -> tensor<1x1x1x1xf32>
  %b = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1xf32>
  %c = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %r = "glow.round_f16"(%c) : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %s = "glow.sigmoid"(%r) : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %rs = "glow.round_f16"(%s) : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %m = "glow.mul"(%r, %rs) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %y = "glow.round_f16"(%m) : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %c2 = "glow.convolution"(%y, %w, %b) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %z = "glow.round_f16"(%c2) : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %z : tensor<1x1x2x2xf32>
}

// HardSwish as the ONNX importer writes it: x * min(max(x * 1/6 + 0.5, 0), 1) -> activation "hard_swish"; the same
// with 0.2 for 1/6 (x * HardSigmoid(x) at its default alpha) is no HardSwish and stays.
// CHECK-LABEL: func.func @conv_hard_swish
// CHECK: %[[Y:.*]] = "glow.fused_convolution"(%arg0, {{.*}}) {activation = "hard_swish", activationArgs = array<f32>
// CHECK: %[[Z:.*]] = "glow.convolution"
// CHECK: glow.max
// CHECK: glow.min
// CHECK: return %[[Y]], %{{.*}}
func.func @conv_hard_swish(%x: tensor<1x1x2x2xf32> {glow.name = "x"}) -> (tensor<1x1x2x2xf32> {glow.name = "y"}, tensor<1x1x2x2xf32> {glow.name = "z"}) {
  %w = "glow.constant"() {value = dense<1.0> : tensor<1x1x1x1xf32>} : () -> tensor<1x1x1x1xf32>
  %b = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1xf32>
  %sixth = "glow.splat"() {value = 0.166666672 : f32} : () -> tensor<1x1x2x2xf32>
  %fifth = "glow.splat"() {value = 0.2 : f32} : () -> tensor<1x1x2x2xf32>
  %half = "glow.splat"() {value = 0.5 : f32} : () -> tensor<1x1x2x2xf32>
  %zero = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1x1x2x2xf32>
  %one = "glow.splat"() {value = 1.0 : f32} : () -> tensor<1x1x2x2xf32>
  %c = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %m = "glow.mul"(%c, %sixth) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %a = "glow.add"(%m, %half) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %lo = "glow.max"(%a, %zero) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %hi = "glow.min"(%lo, %one) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %y = "glow.mul"(%c, %hi) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %d = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %m2 = "glow.mul"(%d, %fifth) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %a2 = "glow.add"(%m2, %half) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %lo2 = "glow.max"(%a2, %zero) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %hi2 = "glow.min"(%lo2, %one) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %z = "glow.mul"(%d, %hi2) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %y, %z : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>
}

// matmul + batched_add + relu -> one fused_matmul; matmul + batched_add alone -> fused_matmul without activation.
// CHECK-LABEL: func.func @matmul
// CHECK: %[[A:.*]] = "glow.fused_matmul"(%arg0, %arg1, %arg2) {activation = "relu", activationArgs = array<f32>}
// CHECK: %[[B:.*]] = "glow.fused_matmul"(%arg0, %arg1, %arg2) {activation = "none", activationArgs = array<f32>}
// CHECK-NOT: glow.matmul
// CHECK: return %[[A]], %[[B]]
func.func @matmul(%x: tensor<2x3xf32> {glow.name = "x"}, %w: tensor<3x4xf32> {glow.name = "w"}, %b: tensor<4xf32> {glow.name = "b"}) -> (tensor<2x4xf32> {glow.name = "y"}, tensor<2x4xf32> {glow.name = "z"}) {
  %m = "glow.matmul"(%x, %w) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %a = "glow.batched_add"(%m, %b) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %zero = "glow.splat"() {value = 0.0 : f32} : () -> tensor<2x4xf32>
  %y = "glow.max"(%zero, %a) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %m2 = "glow.matmul"(%x, %w) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %z = "glow.batched_add"(%m2, %b) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %y, %z : tensor<2x4xf32>, tensor<2x4xf32>
}

// A matmul without a bias add before its activation (SwiGLU's gate) -> fused_matmul with a zero bias and the
// activation; one without an activation, or whose product is also returned, stays a matmul.
// CHECK-LABEL: func.func @matmul_no_bias
// CHECK: %[[Z:.*]] = "glow.constant"() {value = dense<0.000000e+00> : tensor<4xf32>}
// CHECK: %[[A:.*]] = "glow.fused_matmul"(%arg0, %arg1, %[[Z]]) {activation = "tanh", activationArgs = array<f32>}
// CHECK: %[[P:.*]] = "glow.matmul"(%arg0, %arg1)
// CHECK: %[[Q:.*]] = "glow.matmul"(%arg0, %arg1)
// CHECK: "glow.tanh"(%[[Q]])
func.func @matmul_no_bias(%x: tensor<2x3xf32> {glow.name = "x"}, %w: tensor<3x4xf32> {glow.name = "w"}) -> (tensor<2x4xf32> {glow.name = "y"}, tensor<2x4xf32> {glow.name = "p"}, tensor<2x4xf32> {glow.name = "q"}, tensor<2x4xf32> {glow.name = "t"}) {
  %m = "glow.matmul"(%x, %w) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %y = "glow.tanh"(%m) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %p = "glow.matmul"(%x, %w) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %q = "glow.matmul"(%x, %w) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %t = "glow.tanh"(%q) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %y, %p, %q, %t : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}

// Not fused: a conv whose result is also returned; the min of a clip whose max result is also returned (the
// max, the conv's only user, fuses as a relu and the min reads the fused result); a bias add that varies
// along W; an integer matmul; a fused conv that already has an activation.
// CHECK-LABEL: func.func @kept
// CHECK: %[[C:.*]] = "glow.convolution"
// CHECK: "glow.max"(%[[C]]
// CHECK: %[[R:.*]] = "glow.fused_convolution"{{.*}}activation = "relu"
// CHECK: "glow.min"(%[[R]]
// CHECK: %[[V:.*]] = "glow.convolution"
// CHECK: "glow.add"(%[[V]]
// CHECK: "glow.matmul"
// CHECK: "glow.batched_add"
// CHECK: %[[F:.*]] = "glow.fused_convolution"{{.*}}activation = "tanh"
// CHECK: "glow.sigmoid"(%[[F]])
func.func @kept(%x: tensor<1x1x2x2xf32> {glow.name = "x"}, %i: tensor<2x3xi32> {glow.name = "i"}, %j: tensor<3x4xi32> {glow.name = "j"}, %k: tensor<4xi32> {glow.name = "k"}) -> (tensor<1x1x2x2xf32> {glow.name = "c"}, tensor<1x1x2x2xf32> {glow.name = "y"}, tensor<1x1x2x2xf32> {glow.name = "r"}, tensor<1x1x2x2xf32> {glow.name = "s"}, tensor<1x1x2x2xf32> {glow.name = "v"}, tensor<2x4xi32> {glow.name = "m"}, tensor<1x1x2x2xf32> {glow.name = "f"}) {
  %w = "glow.constant"() {value = dense<1.0> : tensor<1x1x1x1xf32>} : () -> tensor<1x1x1x1xf32>
  %b = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1xf32>
  %zero = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1x1x2x2xf32>
  %six = "glow.splat"() {value = 6.0 : f32} : () -> tensor<1x1x2x2xf32>
  %c = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %y = "glow.max"(%c, %zero) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %c2 = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %r = "glow.max"(%c2, %zero) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %s = "glow.min"(%r, %six) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %c3 = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %col = "glow.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %colb = "glow.broadcast"(%col) {axis = 3 : i64} : (tensor<2xf32>) -> tensor<1x1x2x2xf32>
  %v = "glow.add"(%c3, %colb) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %mm = "glow.matmul"(%i, %j) : (tensor<2x3xi32>, tensor<3x4xi32>) -> tensor<2x4xi32>
  %m = "glow.batched_add"(%mm, %k) : (tensor<2x4xi32>, tensor<4xi32>) -> tensor<2x4xi32>
  %f0 = "glow.fused_convolution"(%x, %w, %b) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>, activation = "tanh", activationArgs = array<f32>} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %f = "glow.sigmoid"(%f0) : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %c, %y, %r, %s, %v, %m, %f : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<2x4xi32>, tensor<1x1x2x2xf32>
}

// The CPU backend's NHWC convolution takes its bias add (channels last) and activation the same way.
// CHECK-LABEL: func.func @cpu_conv_nhwc
// CHECK: %[[B:.*]] = "glow.constant"() {value = dense<[2.000000e+00, 3.000000e+00]> : tensor<2xf32>}
// CHECK: %[[Y:.*]] = "glow.cpu_conv_nhwc"(%arg0, %{{.*}}, %[[B]]) {activation = "clip", activationArgs = array<f32: 0.000000e+00, 6.000000e+00>
// CHECK-NEXT: return %[[Y]]
func.func @cpu_conv_nhwc(%x: tensor<1x2x2x1xf32> {glow.name = "x"}) -> (tensor<1x2x2x2xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<1.0> : tensor<1x1x1x2xf32>} : () -> tensor<1x1x1x2xf32>
  %b = "glow.constant"() {value = dense<[1.0, 1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %c = "glow.cpu_conv_nhwc"(%x, %w, %b) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>, activation = "none", activationArgs = array<f32>} : (tensor<1x2x2x1xf32>, tensor<1x1x1x2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %k = "glow.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %kb = "glow.broadcast"(%k) {axis = 3 : i64} : (tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %a = "glow.add"(%c, %kb) : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %zero = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1x2x2x2xf32>
  %six = "glow.splat"() {value = 6.0 : f32} : () -> tensor<1x2x2x2xf32>
  %m = "glow.max"(%a, %zero) : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %y = "glow.min"(%m, %six) : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  return %y : tensor<1x2x2x2xf32>
}

// Through the transpose back to NCHW that glow-cpu-layout leaves, which glow-sink-transpose cannot move past
// LeakyRelu's three reads: the activation joins the convolution and the transpose follows it.
// CHECK-LABEL: func.func @through_transpose
// CHECK: %[[C:.*]] = "glow.cpu_conv_nhwc"(%arg0, {{.*}}) {activation = "leaky_relu", activationArgs = array<f32: 5.000000e-01>
// CHECK-NEXT: %[[T:.*]] = "glow.transpose"(%[[C]]) {shuffle = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT: return %[[T]]
func.func @through_transpose(%x: tensor<1x2x2x1xf32> {glow.name = "x"}) -> (tensor<1x2x2x2xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<1.0> : tensor<1x1x1x2xf32>} : () -> tensor<1x1x1x2xf32>
  %b = "glow.constant"() {value = dense<[1.0, 1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %c = "glow.cpu_conv_nhwc"(%x, %w, %b) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>, activation = "none", activationArgs = array<f32>} : (tensor<1x2x2x1xf32>, tensor<1x1x1x2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %t = "glow.transpose"(%c) {shuffle = array<i64: 0, 3, 1, 2>} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %zero = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1x2x2x2xf32>
  %alpha = "glow.splat"() {value = 0.5 : f32} : () -> tensor<1x2x2x2xf32>
  %neg = "glow.cmp_lt"(%t, %zero) : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xi1>
  %scaled = "glow.mul"(%alpha, %t) : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %y = "glow.select"(%neg, %scaled, %t) : (tensor<1x2x2x2xi1>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  return %y : tensor<1x2x2x2xf32>
}

// Through the interleave and crop of a transposed convolution's phases (glow-cpu-layout's): reshape, transpose,
// reshape, slice, then the transpose to NCHW; the relu joins the phase convolution and all five follow it.
// CHECK-LABEL: func.func @through_phase_interleave
// CHECK: %[[C:.*]] = "glow.cpu_conv_nhwc"(%arg0, {{.*}}) {activation = "relu"
// CHECK-NEXT: %[[R1:.*]] = "glow.reshape"(%[[C]])
// CHECK-NEXT: %[[T:.*]] = "glow.transpose"(%[[R1]])
// CHECK-NEXT: %[[R2:.*]] = "glow.reshape"(%[[T]])
// CHECK-NEXT: %[[S:.*]] = "glow.slice"(%[[R2]]) {start = array<i64: 0, 1, 1, 0>}
// CHECK-NEXT: %[[Y:.*]] = "glow.transpose"(%[[S]]) {shuffle = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT: return %[[Y]]
func.func @through_phase_interleave(%x: tensor<1x3x3x1xf32> {glow.name = "x"}) -> (tensor<1x1x4x4xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<1.0> : tensor<1x1x1x4xf32>} : () -> tensor<1x1x1x4xf32>
  %b = "glow.constant"() {value = dense<0.5> : tensor<4xf32>} : () -> tensor<4xf32>
  %c = "glow.cpu_conv_nhwc"(%x, %w, %b) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>, activation = "none", activationArgs = array<f32>} : (tensor<1x3x3x1xf32>, tensor<1x1x1x4xf32>, tensor<4xf32>) -> tensor<1x3x3x4xf32>
  %r1 = "glow.reshape"(%c) {dims = array<i64: 1, 3, 3, 2, 2, 1>} : (tensor<1x3x3x4xf32>) -> tensor<1x3x3x2x2x1xf32>
  %t = "glow.transpose"(%r1) {shuffle = array<i64: 0, 1, 3, 2, 4, 5>} : (tensor<1x3x3x2x2x1xf32>) -> tensor<1x3x2x3x2x1xf32>
  %r2 = "glow.reshape"(%t) {dims = array<i64: 1, 6, 6, 1>} : (tensor<1x3x2x3x2x1xf32>) -> tensor<1x6x6x1xf32>
  %s = "glow.slice"(%r2) {start = array<i64: 0, 1, 1, 0>} : (tensor<1x6x6x1xf32>) -> tensor<1x4x4x1xf32>
  %n = "glow.transpose"(%s) {shuffle = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x1xf32>) -> tensor<1x1x4x4xf32>
  %y = "glow.relu"(%n) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return %y : tensor<1x1x4x4xf32>
}

// A per-channel scale after a convolution (a layer scale), then a constant bias add: the filter's output
// channels and the bias are scaled, W' = W * k[o], b' = b * k + c; the scale rounds once.
// CHECK-LABEL: func.func @conv_channel_scale
// CHECK-DAG: %[[W:.*]] = "glow.constant"() {value = dense<{{\[}}{{\[}}{{\[}}{{\[}}5.000000e-01]]], {{\[}}{{\[}}{{\[}}-2.000000e+00]]]]> : tensor<2x1x1x1xf32>}
// CHECK-DAG: %[[B:.*]] = "glow.constant"() {value = dense<[1.500000e+00, -3.000000e+00]> : tensor<2xf32>}
// CHECK: %[[Y:.*]] = "glow.convolution"(%arg0, %[[W]], %[[B]])
// CHECK-NOT: glow.mul
// CHECK-NOT: glow.add
// CHECK: return %[[Y]]
func.func @conv_channel_scale(%x: tensor<1x1x2x2xf32> {glow.name = "x"}) -> (tensor<1x2x2x2xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<1.0> : tensor<2x1x1x1xf32>} : () -> tensor<2x1x1x1xf32>
  %b = "glow.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %c = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %k = "glow.constant"() {value = dense<[[[0.5]], [[-2.0]]]> : tensor<2x1x1xf32>} : () -> tensor<2x1x1xf32>
  %kb = "glow.broadcast"(%k) {axis = 1 : i64} : (tensor<2x1x1xf32>) -> tensor<1x2x2x2xf32>
  %m = "glow.mul"(%kb, %c) : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %one = "glow.splat"() {value = 1.0 : f32} : () -> tensor<1x2x2x2xf32>
  %y = "glow.add"(%m, %one) : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  return %y : tensor<1x2x2x2xf32>
}

// A scale that varies along a spatial dim is no per-channel scale: the mul stays.
// CHECK-LABEL: func.func @conv_spatial_scale
// CHECK: glow.convolution
// CHECK: glow.mul
func.func @conv_spatial_scale(%x: tensor<1x1x2x2xf32> {glow.name = "x"}) -> (tensor<1x1x2x2xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<1.0> : tensor<1x1x1x1xf32>} : () -> tensor<1x1x1x1xf32>
  %b = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1xf32>
  %c = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %k = "glow.constant"() {value = dense<[[[[1.0, 2.0], [3.0, 4.0]]]]> : tensor<1x1x2x2xf32>} : () -> tensor<1x1x2x2xf32>
  %y = "glow.mul"(%c, %k) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %y : tensor<1x1x2x2xf32>
}

// A per-channel affine map (u * k + s, a normalization's scale and shift) before an unpadded convolution,
// through the NCHW -> NHWC transpose: W'[kh, kw, c, o] = W * k[c], b'[o] = b[o] + sum W[., ., c, o] * s[c].
// CHECK-LABEL: func.func @affine_before_conv
// CHECK: %[[T:.*]] = "glow.transpose"(%arg0)
// CHECK-DAG: %[[W:.*]] = "glow.constant"() {value = dense<{{\[}}{{\[}}{{\[}}[2.000000e+00, 4.000000e+00], [-1.000000e+00, -3.000000e+00]]]]> : tensor<1x1x2x2xf32>}
// CHECK-DAG: %[[B:.*]] = "glow.constant"() {value = dense<[1.000000e+00, 8.000000e+00]> : tensor<2xf32>}
// CHECK: %[[Y:.*]] = "glow.cpu_conv_nhwc"(%[[T]], %[[W]], %[[B]])
// CHECK-NOT: glow.mul
// CHECK-NOT: glow.add
// CHECK: return %[[Y]]
func.func @affine_before_conv(%x: tensor<1x2x3x3xf32> {glow.name = "x"}) -> (tensor<1x3x3x2xf32> {glow.name = "y"}) {
  %k = "glow.constant"() {value = dense<[[[2.0]], [[-1.0]]]> : tensor<2x1x1xf32>} : () -> tensor<2x1x1xf32>
  %kb = "glow.broadcast"(%k) {axis = 1 : i64} : (tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %m = "glow.mul"(%x, %kb) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %s = "glow.constant"() {value = dense<[[[[1.0]], [[2.0]]]]> : tensor<1x2x1x1xf32>} : () -> tensor<1x2x1x1xf32>
  %sb = "glow.broadcast"(%s) {axis = 0 : i64} : (tensor<1x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %a = "glow.add"(%sb, %m) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %t = "glow.transpose"(%a) {shuffle = array<i64: 0, 2, 3, 1>} : (tensor<1x2x3x3xf32>) -> tensor<1x3x3x2xf32>
  %w = "glow.constant"() {value = dense<[[[[1.0, 2.0], [1.0, 3.0]]]]> : tensor<1x1x2x2xf32>} : () -> tensor<1x1x2x2xf32>
  %b = "glow.constant"() {value = dense<[-2.0, 0.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %y = "glow.cpu_conv_nhwc"(%t, %w, %b) {activation = "none", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 1 : i64, kernels = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x3x2xf32>, tensor<1x1x2x2xf32>, tensor<2xf32>) -> tensor<1x3x3x2xf32>
  return %y : tensor<1x3x3x2xf32>
}
