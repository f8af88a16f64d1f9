// glow-eliminate-noop replaces ops that pass their input on unchanged by that input.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-eliminate-noop)' | FileCheck %s

// CHECK-LABEL: func.func @noops
// CHECK-NOT: glow.reshape
// CHECK-NOT: glow.transpose
// CHECK-NOT: glow.slice
// CHECK-NOT: glow.concat
// CHECK-NOT: glow.convert_to
// CHECK-NOT: glow.broadcast
// CHECK-NOT: glow.max_pool
// CHECK: %[[E:.*]] = "glow.exp"(%arg0)
// CHECK-NEXT: return %[[E]], %arg1, %arg2
func.func @noops(%x: tensor<1x2x3x4xf32> {glow.name = "x"}, %i: tensor<2x3xi64> {glow.name = "i"}, %b: tensor<5xi1> {glow.name = "b"}) -> (tensor<1x2x3x4xf32> {glow.name = "y"}, tensor<2x3xi64> {glow.name = "j"}, tensor<5xi1> {glow.name = "c"}) {
  %r = "glow.reshape"(%x) {dims = array<i64: 1, 2, 3, 4>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %t = "glow.transpose"(%r) {shuffle = array<i64: 0, 1, 2, 3>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %s = "glow.slice"(%t) {start = array<i64: 0, 0, 0, 0>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %c = "glow.concat"(%s) {dim = 1 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %p = "glow.max_pool"(%c) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %e = "glow.exp"(%p) : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %k = "glow.convert_to"(%i) : (tensor<2x3xi64>) -> tensor<2x3xi64>
  %bb = "glow.broadcast"(%b) {axis = 0 : i64} : (tensor<5xi1>) -> tensor<5xi1>
  return %e, %k, %bb : tensor<1x2x3x4xf32>, tensor<2x3xi64>, tensor<5xi1>
}

// Real work stays: a reshape that changes dims, a non-identity transpose, a partial slice, a conversion.
// CHECK-LABEL: func.func @kept
// CHECK: "glow.reshape"
// CHECK: "glow.transpose"
// CHECK: "glow.slice"
// CHECK: "glow.convert_to"
func.func @kept(%x: tensor<2x3xf32> {glow.name = "x"}) -> (tensor<3x2xf32> {glow.name = "r"}, tensor<3x2xf32> {glow.name = "t"}, tensor<1x3xf32> {glow.name = "s"}, tensor<2x3xi32> {glow.name = "c"}) {
  %r = "glow.reshape"(%x) {dims = array<i64: 3, 2>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %t = "glow.transpose"(%x) {shuffle = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %s = "glow.slice"(%x) {start = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<1x3xf32>
  %c = "glow.convert_to"(%x) : (tensor<2x3xf32>) -> tensor<2x3xi32>
  return %r, %t, %s, %c : tensor<3x2xf32>, tensor<3x2xf32>, tensor<1x3xf32>, tensor<2x3xi32>
}

// A gather of indices 0 .. n - 1 along a dim of size n is its input; other indices stay a gather.
// CHECK-LABEL: func.func @identity_gather
// CHECK-NOT: "glow.gather"(%arg0, %{{.*}}) {axis = 2
// CHECK: %[[G:.*]] = "glow.gather"(%arg0, %{{.*}}) {axis = 1 : i64}
// CHECK: "glow.add"(%arg0, %[[G]])
func.func @identity_gather(%x: tensor<1x3x4xf32> {glow.name = "x"}) -> (tensor<1x3x4xf32> {glow.name = "y"}) {
  %all = "glow.constant"() {value = dense<[0, 1, 2, 3]> : tensor<4xi64>} : () -> tensor<4xi64>
  %same = "glow.gather"(%x, %all) {axis = 2 : i64} : (tensor<1x3x4xf32>, tensor<4xi64>) -> tensor<1x3x4xf32>
  %rev = "glow.constant"() {value = dense<[2, 1, 0]> : tensor<3xi64>} : () -> tensor<3xi64>
  %flipped = "glow.gather"(%x, %rev) {axis = 1 : i64} : (tensor<1x3x4xf32>, tensor<3xi64>) -> tensor<1x3x4xf32>
  %y = "glow.add"(%same, %flipped) : (tensor<1x3x4xf32>, tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  return %y : tensor<1x3x4xf32>
}
