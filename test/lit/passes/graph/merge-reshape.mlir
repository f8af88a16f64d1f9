// glow-merge-reshape collapses reshape chains and folds reshapes of constants and splats.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-merge-reshape)' | FileCheck %s

// CHECK-LABEL: func.func @chains
// CHECK: %[[R:.*]] = "glow.reshape"(%arg0) {dims = array<i64: 6>} : (tensor<2x3xf32>) -> tensor<6xf32>
// CHECK-NOT: glow.reshape
// CHECK: return %[[R]], %arg0
func.func @chains(%x: tensor<2x3xf32> {glow.name = "x"}) -> (tensor<6xf32> {glow.name = "a"}, tensor<2x3xf32> {glow.name = "b"}) {
  %a = "glow.reshape"(%x) {dims = array<i64: 3, 2>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %b = "glow.reshape"(%a) {dims = array<i64: 1, 6>} : (tensor<3x2xf32>) -> tensor<1x6xf32>
  %c = "glow.reshape"(%b) {dims = array<i64: 6>} : (tensor<1x6xf32>) -> tensor<6xf32>
  %d = "glow.reshape"(%c) {dims = array<i64: 2, 3>} : (tensor<6xf32>) -> tensor<2x3xf32>
  return %c, %d : tensor<6xf32>, tensor<2x3xf32>
}

// CHECK-LABEL: func.func @leaves
// CHECK-DAG: "glow.constant"() {value = dense<{{\[\[}}1, 2], [3, 4]]> : tensor<2x2xi8>}
// CHECK-DAG: "glow.splat"() {value = 5.000000e-01 : f32} : () -> tensor<4x1xf64>
// CHECK-NOT: glow.reshape
func.func @leaves() -> (tensor<2x2xi8> {glow.name = "c"}, tensor<4x1xf64> {glow.name = "s"}) {
  %c = "glow.constant"() {value = dense<[1, 2, 3, 4]> : tensor<4xi8>} : () -> tensor<4xi8>
  %r = "glow.reshape"(%c) {dims = array<i64: 2, 2>} : (tensor<4xi8>) -> tensor<2x2xi8>
  %s = "glow.splat"() {value = 0.5 : f32} : () -> tensor<2x2xf64>
  %t = "glow.reshape"(%s) {dims = array<i64: 4, 1>} : (tensor<2x2xf64>) -> tensor<4x1xf64>
  return %r, %t : tensor<2x2xi8>, tensor<4x1xf64>
}
