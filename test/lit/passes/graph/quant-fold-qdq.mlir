// glow-quant-fold-qdq folds quantize(moves(dequantize(q))) into moves(q) when both conversions have one scale,
// zero point and type: the DQ -> reshape -> Q chains of onnxruntime's QDQ models, as ops_quant.py imports them.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-quant-fold-qdq)' | FileCheck %s

// CHECK-LABEL: func.func @through_reshape
// CHECK-NEXT: %[[R:.*]] = "glow.reshape"(%arg0) {dims = array<i64: 8>} : (tensor<2x4xi8>) -> tensor<8xi8>
// CHECK-NEXT: return %[[R]]
func.func @through_reshape(%q: tensor<2x4xi8> {glow.name = "q"}) -> (tensor<8xi8> {glow.name = "y"}) {
  %w = "glow.convert_to"(%q) : (tensor<2x4xi8>) -> tensor<2x4xf32>
  %z = "glow.splat"() {value = 3.0 : f32} : () -> tensor<2x4xf32>
  %c = "glow.sub"(%w, %z) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %s = "glow.splat"() {value = 0.25 : f32} : () -> tensor<2x4xf32>
  %d = "glow.mul"(%c, %s) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %r = "glow.reshape"(%d) {dims = array<i64: 8>} : (tensor<2x4xf32>) -> tensor<8xf32>
  %s2 = "glow.splat"() {value = 0.25 : f32} : () -> tensor<8xf32>
  %x = "glow.div"(%r, %s2) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %n = "glow.round"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %z2 = "glow.splat"() {value = 3.0 : f32} : () -> tensor<8xf32>
  %a = "glow.add"(%n, %z2) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %lo = "glow.splat"() {value = -128.0 : f32} : () -> tensor<8xf32>
  %m = "glow.max"(%a, %lo) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %hi = "glow.splat"() {value = 127.0 : f32} : () -> tensor<8xf32>
  %k = "glow.min"(%m, %hi) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %y = "glow.convert_to"(%k) : (tensor<8xf32>) -> tensor<8xi8>
  return %y : tensor<8xi8>
}

// Without a zero point (no sub, no add), directly back to back.
// CHECK-LABEL: func.func @direct
// CHECK-NEXT: return %arg0
func.func @direct(%q: tensor<4xui8> {glow.name = "q"}) -> (tensor<4xui8> {glow.name = "y"}) {
  %w = "glow.convert_to"(%q) : (tensor<4xui8>) -> tensor<4xf32>
  %s = "glow.splat"() {value = 0.5 : f32} : () -> tensor<4xf32>
  %d = "glow.mul"(%w, %s) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %x = "glow.div"(%d, %s) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %n = "glow.round"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %lo = "glow.splat"() {value = 0.0 : f32} : () -> tensor<4xf32>
  %m = "glow.max"(%n, %lo) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %hi = "glow.splat"() {value = 255.0 : f32} : () -> tensor<4xf32>
  %k = "glow.min"(%m, %hi) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y = "glow.convert_to"(%k) : (tensor<4xf32>) -> tensor<4xui8>
  return %y : tensor<4xui8>
}

// Another scale requantizes: kept.
// CHECK-LABEL: func.func @other_scale
// CHECK: glow.round
// CHECK: "glow.convert_to"{{.*}} -> tensor<4xi8>
func.func @other_scale(%q: tensor<4xi8> {glow.name = "q"}) -> (tensor<4xi8> {glow.name = "y"}) {
  %w = "glow.convert_to"(%q) : (tensor<4xi8>) -> tensor<4xf32>
  %s = "glow.splat"() {value = 0.5 : f32} : () -> tensor<4xf32>
  %d = "glow.mul"(%w, %s) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s2 = "glow.splat"() {value = 0.25 : f32} : () -> tensor<4xf32>
  %x = "glow.div"(%d, %s2) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %n = "glow.round"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %lo = "glow.splat"() {value = -128.0 : f32} : () -> tensor<4xf32>
  %m = "glow.max"(%n, %lo) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %hi = "glow.splat"() {value = 127.0 : f32} : () -> tensor<4xf32>
  %k = "glow.min"(%m, %hi) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y = "glow.convert_to"(%k) : (tensor<4xf32>) -> tensor<4xi8>
  return %y : tensor<4xi8>
}
