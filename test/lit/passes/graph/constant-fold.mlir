// glow-constant-fold evaluates glow ops fed only by constants and splats with the reference interpreter.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-constant-fold,glow-verify)' | FileCheck %s

// A chain on constants becomes one constant; the op reading the input stays.
// CHECK-LABEL: func.func @chain
// CHECK-NOT: glow.transpose
// CHECK-NOT: glow.sub
// CHECK: %[[C:.*]] = "glow.constant"() {value = dense<{{\[}}[0.000000e+00, 2.000000e+00], [1.000000e+00, 3.000000e+00]]> : tensor<2x2xf32>}
// CHECK-NEXT: %[[R:.*]] = "glow.matmul"(%arg0, %[[C]])
// CHECK-NEXT: return %[[R]]
func.func @chain(%x: tensor<2x2xf32> {glow.name = "x"}) -> (tensor<2x2xf32> {glow.name = "y"}) {
  %c = "glow.constant"() {value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %one = "glow.splat"() {value = 1.0 : f32} : () -> tensor<2x2xf32>
  %t = "glow.transpose"(%c) {shuffle = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %s = "glow.sub"(%t, %one) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %r = "glow.matmul"(%x, %s) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}

// A uniform result becomes a splat; a splat alone is left as it is.
// CHECK-LABEL: func.func @uniform
// CHECK: %[[S:.*]] = "glow.splat"() {value = 6.000000e+00 : f32} : () -> tensor<64xf32>
// CHECK-NOT: glow.constant
// CHECK: "glow.add"(%arg0, %[[S]])
// CHECK: %[[K:.*]] = "glow.splat"() {value = 2.000000e+00 : f32} : () -> tensor<64xf32>
// CHECK: "glow.mul"(%{{.*}}, %[[K]])
func.func @uniform(%x: tensor<64xf32> {glow.name = "x"}) -> (tensor<64xf32> {glow.name = "y"}) {
  %a = "glow.splat"() {value = 2.0 : f32} : () -> tensor<64xf32>
  %b = "glow.splat"() {value = 3.0 : f32} : () -> tensor<64xf32>
  %m = "glow.mul"(%a, %b) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %y = "glow.add"(%x, %m) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %k = "glow.splat"() {value = 2.0 : f32} : () -> tensor<64xf32>
  %z = "glow.mul"(%y, %k) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  return %z : tensor<64xf32>
}

// A broadcast that would turn 3 stored elements into 24 stays unfolded (its operand, computed from
// constants, is folded instead); when a folded op consumes the broadcast, the whole chain folds.
// CHECK-LABEL: func.func @no_blow_up
// CHECK: %[[V:.*]] = "glow.constant"() {value = dense<[2.000000e+00, 4.000000e+00, 6.000000e+00]> : tensor<3xf32>}
// CHECK: %[[B:.*]] = "glow.broadcast"(%[[V]]) {axis = 1 : i64}
// CHECK: "glow.add"(%arg0, %[[B]])
// CHECK: %[[F:.*]] = "glow.constant"() {value = dense<{{.*}}> : tensor<3xf32>}
// CHECK-NOT: glow.broadcast
// CHECK: "glow.mul"(%arg1, %[[F]])
func.func @no_blow_up(%x: tensor<2x3x4xf32> {glow.name = "x"}, %z: tensor<3xf32> {glow.name = "z"}) -> (tensor<2x3x4xf32> {glow.name = "y"}, tensor<3xf32> {glow.name = "w"}) {
  %c = "glow.constant"() {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : () -> tensor<3xf32>
  %d = "glow.add"(%c, %c) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %b = "glow.broadcast"(%d) {axis = 1 : i64} : (tensor<3xf32>) -> tensor<2x3x4xf32>
  %y = "glow.add"(%x, %b) : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %b2 = "glow.broadcast"(%c) {axis = 1 : i64} : (tensor<3xf32>) -> tensor<2x3xf32>
  %s = "glow.slice"(%b2) {start = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<1x3xf32>
  %r = "glow.reshape"(%s) {dims = array<i64: 3>} : (tensor<1x3xf32>) -> tensor<3xf32>
  %w = "glow.mul"(%z, %r) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %y, %w : tensor<2x3x4xf32>, tensor<3xf32>
}

// Integer folding keeps the element type.
// CHECK-LABEL: func.func @integers
// CHECK: "glow.constant"() {value = dense<[5, 7]> : tensor<2xi32>}
func.func @integers(%x: tensor<2xi32> {glow.name = "x"}) -> (tensor<2xi32> {glow.name = "y"}) {
  %a = "glow.constant"() {value = dense<[1, 2]> : tensor<2xi32>} : () -> tensor<2xi32>
  %b = "glow.constant"() {value = dense<[4, 5]> : tensor<2xi32>} : () -> tensor<2xi32>
  %s = "glow.add"(%a, %b) : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  %y = "glow.mul"(%x, %s) : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  return %y : tensor<2xi32>
}
