// glow-fuse-activations on a transformer's linear layers as PyTorch exports them: MatMul, Reshape to
// [batch, seq, n], Add of a bias constant along n (-> glow.fused_matmul); attention's query scaling after the
// head reshape (folded into the weights and bias); GELU in its erf and tanh forms, in any order of the
// arithmetic (-> activation "gelu_erf" / "gelu_tanh").
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-fuse-activations,glow-verify)' | FileCheck %s

// Bias through the reshape, then the scale through a second reshape: W * 0.5 and b * 0.5.
// CHECK-LABEL: func.func @linear_bias_scale
// CHECK-DAG: %[[W:.*]] = "glow.constant"() {value = dense<{{\[}}[5.000000e-01, 1.000000e+00], [1.500000e+00, 2.000000e+00]]> : tensor<2x2xf32>}
// CHECK-DAG: %[[B:.*]] = "glow.constant"() {value = dense<[5.000000e-01, -1.000000e+00]> : tensor<2xf32>}
// CHECK: %[[Y:.*]] = "glow.fused_matmul"(%arg0, %[[W]], %[[B]]) {activation = "none", activationArgs = array<f32>}
// CHECK: %[[R:.*]] = "glow.reshape"(%[[Y]]) {dims = array<i64: 1, 3, 2>}
// CHECK: %[[H:.*]] = "glow.reshape"(%[[R]]) {dims = array<i64: 1, 3, 2, 1>}
// CHECK-NOT: glow.add
// CHECK-NOT: glow.mul
// CHECK: return %[[H]]
func.func @linear_bias_scale(%x: tensor<3x2xf32> {glow.name = "x"}) -> (tensor<1x3x2x1xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %m = "glow.matmul"(%x, %w) : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %r = "glow.reshape"(%m) {dims = array<i64: 1, 3, 2>} : (tensor<3x2xf32>) -> tensor<1x3x2xf32>
  %b = "glow.constant"() {value = dense<[[[1.0, -2.0], [1.0, -2.0], [1.0, -2.0]]]> : tensor<1x3x2xf32>} : () -> tensor<1x3x2xf32>
  %a = "glow.add"(%b, %r) : (tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> tensor<1x3x2xf32>
  %h = "glow.reshape"(%a) {dims = array<i64: 1, 3, 2, 1>} : (tensor<1x3x2xf32>) -> tensor<1x3x2x1xf32>
  %s = "glow.splat"() {value = 0.5 : f32} : () -> tensor<1x3x2x1xf32>
  %y = "glow.mul"(%h, %s) : (tensor<1x3x2x1xf32>, tensor<1x3x2x1xf32>) -> tensor<1x3x2x1xf32>
  return %y : tensor<1x3x2x1xf32>
}

// nn.GELU as the TorchScript exporter writes it: x * (1 + erf(x / 1.4142135)) * 0.5.
// CHECK-LABEL: func.func @gelu_erf
// CHECK: %[[Y:.*]] = "glow.fused_matmul"(%arg0, %{{.*}}, %{{.*}}) {activation = "gelu_erf", activationArgs = array<f32>}
// CHECK: %[[R:.*]] = "glow.reshape"(%[[Y]])
// CHECK-NOT: glow.erf
// CHECK: return %[[R]]
func.func @gelu_erf(%x: tensor<3x2xf32> {glow.name = "x"}) -> (tensor<1x3x2xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %m = "glow.matmul"(%x, %w) : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %r = "glow.reshape"(%m) {dims = array<i64: 1, 3, 2>} : (tensor<3x2xf32>) -> tensor<1x3x2xf32>
  %b = "glow.constant"() {value = dense<[[[1.0, -2.0], [1.0, -2.0], [1.0, -2.0]]]> : tensor<1x3x2xf32>} : () -> tensor<1x3x2xf32>
  %a = "glow.add"(%r, %b) : (tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> tensor<1x3x2xf32>
  %sqrt2 = "glow.splat"() {value = 1.41421354 : f32} : () -> tensor<1x3x2xf32>
  %d = "glow.div"(%a, %sqrt2) : (tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> tensor<1x3x2xf32>
  %e = "glow.erf"(%d) : (tensor<1x3x2xf32>) -> tensor<1x3x2xf32>
  %one = "glow.splat"() {value = 1.0 : f32} : () -> tensor<1x3x2xf32>
  %p = "glow.add"(%e, %one) : (tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> tensor<1x3x2xf32>
  %q = "glow.mul"(%a, %p) : (tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> tensor<1x3x2xf32>
  %half = "glow.splat"() {value = 0.5 : f32} : () -> tensor<1x3x2xf32>
  %y = "glow.mul"(%q, %half) : (tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> tensor<1x3x2xf32>
  return %y : tensor<1x3x2xf32>
}

// GPT-2's gelu_new: 0.5 * x * (1 + tanh(0.7978846 * (x + 0.044715 * pow(x, 3)))), after matmul + batched_add.
// CHECK-LABEL: func.func @gelu_tanh
// CHECK: %[[Y:.*]] = "glow.fused_matmul"(%arg0, %{{.*}}, %{{.*}}) {activation = "gelu_tanh", activationArgs = array<f32>}
// CHECK-NOT: glow.tanh
// CHECK: return %[[Y]]
func.func @gelu_tanh(%x: tensor<3x2xf32> {glow.name = "x"}) -> (tensor<3x2xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %m = "glow.matmul"(%x, %w) : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %b = "glow.constant"() {value = dense<[1.0, -2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %a = "glow.batched_add"(%m, %b) : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %half = "glow.splat"() {value = 0.5 : f32} : () -> tensor<3x2xf32>
  %h = "glow.mul"(%half, %a) : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %three = "glow.splat"() {value = 3.0 : f32} : () -> tensor<3x2xf32>
  %c = "glow.pow"(%a, %three) : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %k = "glow.splat"() {value = 0.044715 : f32} : () -> tensor<3x2xf32>
  %kc = "glow.mul"(%k, %c) : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %s = "glow.add"(%a, %kc) : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %g = "glow.splat"() {value = 0.797884583 : f32} : () -> tensor<3x2xf32>
  %gs = "glow.mul"(%s, %g) : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %t = "glow.tanh"(%gs) : (tensor<3x2xf32>) -> tensor<3x2xf32>
  %one = "glow.splat"() {value = 1.0 : f32} : () -> tensor<3x2xf32>
  %p = "glow.add"(%one, %t) : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %y = "glow.mul"(%h, %p) : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// Left alone: erf(x) * x is not GELU; the product read twice keeps its add.
// CHECK-LABEL: func.func @not_gelu
// CHECK: "glow.fused_matmul"{{.*}}activation = "none"
// CHECK: glow.erf
// CHECK: glow.mul
func.func @not_gelu(%x: tensor<3x2xf32> {glow.name = "x"}) -> (tensor<3x2xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %m = "glow.matmul"(%x, %w) : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %b = "glow.constant"() {value = dense<[1.0, -2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %a = "glow.batched_add"(%m, %b) : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %e = "glow.erf"(%a) : (tensor<3x2xf32>) -> tensor<3x2xf32>
  %y = "glow.mul"(%a, %e) : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// A layer scale after a Linear layer on 4-D activations: a constant per column, through the reshape that
// keeps the columns last: W[:, n] * k[n], b * k.
// CHECK-LABEL: func.func @linear_layer_scale
// CHECK-DAG: %[[W:.*]] = "glow.constant"() {value = dense<{{\[}}[5.000000e-01, -2.000000e+00], [1.500000e+00, -4.000000e+00]]> : tensor<2x2xf32>}
// CHECK-DAG: %[[B:.*]] = "glow.constant"() {value = dense<[5.000000e-01, 2.000000e+00]> : tensor<2xf32>}
// CHECK: %[[Y:.*]] = "glow.fused_matmul"(%arg0, %[[W]], %[[B]])
// CHECK: %[[R:.*]] = "glow.reshape"(%[[Y]])
// CHECK-NOT: glow.mul
// CHECK: return %[[R]]
func.func @linear_layer_scale(%x: tensor<4x2xf32> {glow.name = "x"}) -> (tensor<1x2x2x2xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %b = "glow.constant"() {value = dense<[1.0, -2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %m = "glow.fused_matmul"(%x, %w, %b) {activation = "none", activationArgs = array<f32>} : (tensor<4x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %r = "glow.reshape"(%m) {dims = array<i64: 1, 2, 2, 2>} : (tensor<4x2xf32>) -> tensor<1x2x2x2xf32>
  %k = "glow.constant"() {value = dense<[0.5, -1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %kb = "glow.broadcast"(%k) {axis = 3 : i64} : (tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %y = "glow.mul"(%r, %kb) : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  return %y : tensor<1x2x2x2xf32>
}
