// glow-simplify-arithmetic removes algebraic identities and folds elementwise ops on splats.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-simplify-arithmetic)' | FileCheck %s

// CHECK-LABEL: func.func @identities
// CHECK-NOT: glow.add
// CHECK-NOT: glow.sub
// CHECK-NOT: glow.div
// CHECK-NOT: glow.max
// CHECK-NOT: glow.neg
// CHECK: %[[R:.*]] = "glow.relu"(%arg0)
// CHECK-NOT: glow.relu
// CHECK-NOT: glow.mul
// CHECK: return %[[R]]
func.func @identities(%x: tensor<4xf32> {glow.name = "x"}) -> (tensor<4xf32> {glow.name = "y"}) {
  %zero = "glow.splat"() {value = 0.0 : f32} : () -> tensor<4xf32>
  %one = "glow.constant"() {value = dense<1.0> : tensor<4xf32>} : () -> tensor<4xf32>
  %a = "glow.add"(%zero, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = "glow.sub"(%a, %zero) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %c = "glow.mul"(%b, %one) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %d = "glow.div"(%c, %one) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %e = "glow.max"(%d, %d) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %f = "glow.neg"(%e) : (tensor<4xf32>) -> tensor<4xf32>
  %g = "glow.neg"(%f) : (tensor<4xf32>) -> tensor<4xf32>
  %h = "glow.relu"(%g) : (tensor<4xf32>) -> tensor<4xf32>
  %i = "glow.relu"(%h) : (tensor<4xf32>) -> tensor<4xf32>
  return %i : tensor<4xf32>
}

// Not identities: 0 - x, 1 / x, x * 0 on floats (NaN * 0 is NaN), x + 1.
// CHECK-LABEL: func.func @kept
// CHECK: "glow.sub"
// CHECK: "glow.div"
// CHECK: "glow.mul"
// CHECK: "glow.add"
func.func @kept(%x: tensor<4xf32> {glow.name = "x"}) -> (tensor<4xf32> {glow.name = "y"}) {
  %zero = "glow.splat"() {value = 0.0 : f32} : () -> tensor<4xf32>
  %one = "glow.splat"() {value = 1.0 : f32} : () -> tensor<4xf32>
  %a = "glow.sub"(%zero, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = "glow.div"(%one, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %c = "glow.mul"(%b, %zero) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %d = "glow.add"(%c, %one) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %d : tensor<4xf32>
}

// Splat op splat folds to one splat in the op's element type; integer identities too; select(c, x, x) -> x.
// CHECK-LABEL: func.func @splats_and_integers
// CHECK-DAG: %[[S:.*]] = "glow.splat"() {value = 7 : i64} : () -> tensor<3xi32>
// CHECK-DAG: %[[F:.*]] = "glow.splat"() {value = 1.250000e+00 : f32} : () -> tensor<3xf16>
// CHECK-NOT: glow.mul
// CHECK-NOT: glow.select
// CHECK: return %arg0, %[[S]], %[[F]]
func.func @splats_and_integers(%x: tensor<3xi32> {glow.name = "x"}, %c: tensor<3xi1> {glow.name = "c"}) -> (tensor<3xi32> {glow.name = "y"}, tensor<3xi32> {glow.name = "s"}, tensor<3xf16> {glow.name = "f"}) {
  %one = "glow.splat"() {value = 1 : i64} : () -> tensor<3xi32>
  %m = "glow.mul"(%one, %x) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  %y = "glow.select"(%c, %m, %m) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  %three = "glow.splat"() {value = 3 : i64} : () -> tensor<3xi32>
  %four = "glow.splat"() {value = 4 : i64} : () -> tensor<3xi32>
  %s = "glow.add"(%three, %four) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  %h1 = "glow.splat"() {value = 2.5 : f32} : () -> tensor<3xf16>
  %h2 = "glow.splat"() {value = 2.0 : f32} : () -> tensor<3xf16>
  %f = "glow.div"(%h1, %h2) : (tensor<3xf16>, tensor<3xf16>) -> tensor<3xf16>
  return %y, %s, %f : tensor<3xi32>, tensor<3xi32>, tensor<3xf16>
}

// pow(x, 2) is x * x; pow(x, 1) is x; pow(x, 3) (x * x) * x, pow(x, 4) (x * x) * (x * x); other exponents
// stay powers.
// CHECK-LABEL: func.func @powers
// CHECK: %[[SQ:.*]] = "glow.mul"(%arg0, %arg0)
// CHECK: %[[S2:.*]] = "glow.mul"(%[[SQ]], %[[SQ]])
// CHECK: %[[CUBE:.*]] = "glow.mul"(%[[S2]], %[[SQ]])
// CHECK: %[[S4:.*]] = "glow.mul"(%[[CUBE]], %[[CUBE]])
// CHECK: %[[FOURTH:.*]] = "glow.mul"(%[[S4]], %[[S4]])
// CHECK: %[[P:.*]] = "glow.pow"(%[[FOURTH]], %{{.*}})
// CHECK: return %[[P]]
func.func @powers(%x: tensor<4xf32> {glow.name = "x"}) -> (tensor<4xf32> {glow.name = "y"}) {
  %two = "glow.splat"() {value = 2.0 : f32} : () -> tensor<4xf32>
  %one = "glow.constant"() {value = dense<1.0> : tensor<4xf32>} : () -> tensor<4xf32>
  %three = "glow.splat"() {value = 3.0 : f32} : () -> tensor<4xf32>
  %four = "glow.splat"() {value = 4.0 : f32} : () -> tensor<4xf32>
  %half = "glow.splat"() {value = 0.5 : f32} : () -> tensor<4xf32>
  %a = "glow.pow"(%x, %two) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = "glow.pow"(%a, %one) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %c = "glow.pow"(%b, %three) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %d = "glow.pow"(%c, %four) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %e = "glow.pow"(%d, %half) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %e : tensor<4xf32>
}
