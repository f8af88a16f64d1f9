// glow-split-gather turns a gather of constant indices whose runs of consecutive indices hold at least half of
// them into slices of the runs, gathers of the indices between, and a concat along the axis.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-split-gather,glow-verify)' | FileCheck %s

// A reflection pad of 2 along W of an 6-wide map: [2, 1 | 0 .. 5 | 4, 3].
// CHECK-LABEL: func.func @reflect
// CHECK: %[[L:.*]] = "glow.constant"() {value = dense<[2, 1]> : tensor<2xi64>}
// CHECK: %[[LEFT:.*]] = "glow.gather"(%arg0, %[[L]]) {axis = 3 : i64} : (tensor<1x2x5x6xf32>, tensor<2xi64>) -> tensor<1x2x5x2xf32>
// CHECK: %[[MID:.*]] = "glow.slice"(%arg0) {start = array<i64: 0, 0, 0, 0>} : (tensor<1x2x5x6xf32>) -> tensor<1x2x5x6xf32>
// CHECK: %[[R:.*]] = "glow.constant"() {value = dense<[4, 3]> : tensor<2xi64>}
// CHECK: %[[RIGHT:.*]] = "glow.gather"(%arg0, %[[R]]) {axis = 3 : i64}
// CHECK: %[[Y:.*]] = "glow.concat"(%[[LEFT]], %[[MID]], %[[RIGHT]]) {dim = 3 : i64
// CHECK-SAME: -> tensor<1x2x5x10xf32>
// CHECK: return %[[Y]]
func.func @reflect(%x: tensor<1x2x5x6xf32> {glow.name = "x"}) -> (tensor<1x2x5x10xf32> {glow.name = "y"}) {
  %i = "glow.constant"() {value = dense<[2, 1, 0, 1, 2, 3, 4, 5, 4, 3]> : tensor<10xi64>} : () -> tensor<10xi64>
  %y = "glow.gather"(%x, %i) {axis = 3 : i64} : (tensor<1x2x5x6xf32>, tensor<10xi64>) -> tensor<1x2x5x10xf32>
  return %y : tensor<1x2x5x10xf32>
}

// A wrap (torch.roll by 2, negative indices counted from the end): two slices.
// CHECK-LABEL: func.func @wrap
// CHECK-NOT: glow.gather
// CHECK: %[[A:.*]] = "glow.slice"(%arg0) {start = array<i64: 6, 0>} : (tensor<8x3xf32>) -> tensor<2x3xf32>
// CHECK: %[[B:.*]] = "glow.slice"(%arg0) {start = array<i64: 0, 0>} : (tensor<8x3xf32>) -> tensor<6x3xf32>
// CHECK: "glow.concat"(%[[A]], %[[B]]) {dim = 0 : i64
func.func @wrap(%x: tensor<8x3xf32> {glow.name = "x"}) -> (tensor<8x3xf32> {glow.name = "y"}) {
  %i = "glow.constant"() {value = dense<[-2, -1, 0, 1, 2, 3, 4, 5]> : tensor<8xi32>} : () -> tensor<8xi32>
  %y = "glow.gather"(%x, %i) {axis = 0 : i64} : (tensor<8x3xf32>, tensor<8xi32>) -> tensor<8x3xf32>
  return %y : tensor<8x3xf32>
}

// Left whole: a channel shuffle (no run), a permutation whose one pair in order holds less than half of it,
// and indices known only at run time.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-3: "glow.gather"
// CHECK-NOT: glow.concat
func.func @kept(%x: tensor<6x3xf32> {glow.name = "x"}, %r: tensor<4xi64> {glow.name = "r"}) -> (tensor<6x3xf32> {glow.name = "y"}, tensor<6x3xf32> {glow.name = "z"}, tensor<4x3xf32> {glow.name = "w"}) {
  %s = "glow.constant"() {value = dense<[0, 2, 4, 1, 3, 5]> : tensor<6xi64>} : () -> tensor<6xi64>
  %y = "glow.gather"(%x, %s) {axis = 0 : i64} : (tensor<6x3xf32>, tensor<6xi64>) -> tensor<6x3xf32>
  %p = "glow.constant"() {value = dense<[5, 1, 2, 0, 4, 3]> : tensor<6xi64>} : () -> tensor<6xi64>
  %z = "glow.gather"(%x, %p) {axis = 0 : i64} : (tensor<6x3xf32>, tensor<6xi64>) -> tensor<6x3xf32>
  %w = "glow.gather"(%x, %r) {axis = 0 : i64} : (tensor<6x3xf32>, tensor<4xi64>) -> tensor<4x3xf32>
  return %y, %z, %w : tensor<6x3xf32>, tensor<6x3xf32>, tensor<4x3xf32>
}
