// glow-cse merges glow ops of one kind with the same operands, attributes and result types; constants merge
// by value. Operand order counts except for commutative ops.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-cse)' | FileCheck %s

// CHECK-LABEL: func.func @merges
// CHECK: %[[C:.*]] = "glow.constant"() {value = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>}
// CHECK-NOT: glow.constant
// CHECK: %[[A:.*]] = "glow.add"(%arg0, %[[C]])
// CHECK-NOT: glow.add
// CHECK: %[[E:.*]] = "glow.exp"(%[[A]])
// CHECK-NOT: glow.exp
// CHECK: %[[S1:.*]] = "glow.sub"(%[[E]], %arg0)
// CHECK: %[[S2:.*]] = "glow.sub"(%arg0, %[[E]])
// CHECK: %[[M:.*]] = "glow.mul"(%[[S1]], %[[S2]])
// CHECK: return %[[M]], %[[M]], %[[E]]
func.func @merges(%x: tensor<2xf32> {glow.name = "x"}) -> (tensor<2xf32> {glow.name = "a"}, tensor<2xf32> {glow.name = "b"}, tensor<2xf32> {glow.name = "c"}) {
  %c1 = "glow.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %c2 = "glow.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %a1 = "glow.add"(%x, %c1) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  // Commutative: add(c2, x) is add(x, c1).
  %a2 = "glow.add"(%c2, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %e1 = "glow.exp"(%a1) : (tensor<2xf32>) -> tensor<2xf32>
  %e2 = "glow.exp"(%a2) : (tensor<2xf32>) -> tensor<2xf32>
  // Not commutative: sub(e, x) and sub(x, e) stay apart.
  %s1 = "glow.sub"(%e1, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %s2 = "glow.sub"(%x, %e2) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %m1 = "glow.mul"(%s1, %s2) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %m2 = "glow.mul"(%s2, %s1) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %m1, %m2, %e2 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}

// Attributes are part of the key; so are result types; so are constant values and element types.
// CHECK-LABEL: func.func @keeps_distinct
// CHECK: "glow.transpose"(%arg0) {shuffle = array<i64: 1, 0>}
// CHECK: "glow.reshape"(%arg0) {dims = array<i64: 3, 2>}
// CHECK: %[[ONE:.*]] = "glow.splat"() {value = 1 : i64} : () -> tensor<2xi32>
// CHECK: "glow.splat"() {value = 2 : i64} : () -> tensor<2xi32>
// CHECK: "glow.splat"() {value = 1 : i64} : () -> tensor<2xi64>
// CHECK-NOT: glow.splat
// CHECK: "glow.add"(%[[ONE]], %[[ONE]])
func.func @keeps_distinct(%x: tensor<2x3xi32> {glow.name = "x"}) -> (tensor<3x2xi32> {glow.name = "t"}, tensor<3x2xi32> {glow.name = "r"}, tensor<2xi32> {glow.name = "s1"}, tensor<2xi32> {glow.name = "s2"}, tensor<2xi64> {glow.name = "s3"}) {
  %t = "glow.transpose"(%x) {shuffle = array<i64: 1, 0>} : (tensor<2x3xi32>) -> tensor<3x2xi32>
  %r = "glow.reshape"(%x) {dims = array<i64: 3, 2>} : (tensor<2x3xi32>) -> tensor<3x2xi32>
  %s1 = "glow.splat"() {value = 1 : i64} : () -> tensor<2xi32>
  %s2 = "glow.splat"() {value = 2 : i64} : () -> tensor<2xi32>
  %s3 = "glow.splat"() {value = 1 : i64} : () -> tensor<2xi64>
  %s4 = "glow.splat"() {value = 1 : i64} : () -> tensor<2xi32>
  %a = "glow.add"(%s1, %s4) : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  return %t, %r, %a, %s2, %s3 : tensor<3x2xi32>, tensor<3x2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi64>
}
