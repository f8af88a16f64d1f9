// glow-gather-nd-to-gather writes a gather_nd as a gather of rows of its data seen flat over the dims it indexes.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-gather-nd-to-gather,glow-verify)' | FileCheck %s

// An index depth of 1 without batch dims (a dynamo export's w[idx], per-token expert weights): the gather.
// CHECK-LABEL: func.func @experts
// CHECK-NOT: glow.gather_nd
// CHECK: %[[I:.*]] = "glow.reshape"(%arg1) {dims = array<i64: 6>} : (tensor<6x1xi64>) -> tensor<6xi64>
// CHECK: %[[Y:.*]] = "glow.gather"(%arg0, %[[I]]) {axis = 0 : i64} : (tensor<4x3x5xf32>, tensor<6xi64>) -> tensor<6x3x5xf32>
// CHECK: return %[[Y]]
func.func @experts(%w: tensor<4x3x5xf32> {glow.name = "w"}, %i: tensor<6x1xi64> {glow.name = "i"}) -> (tensor<6x3x5xf32> {glow.name = "y"}) {
  %y = "glow.gather_nd"(%w, %i) {batch_dims = 0 : i64} : (tensor<4x3x5xf32>, tensor<6x1xi64>) -> tensor<6x3x5xf32>
  return %y : tensor<6x3x5xf32>
}

// Pairs into [4, 3, 5]: row = wrap(i0) * 3 + wrap(i1) into the data seen as [12, 5]; each column counted from
// the end when negative and clamped into its dim.
// CHECK-LABEL: func.func @pairs
// CHECK-NOT: glow.gather_nd
// CHECK: %[[C0:.*]] = "glow.slice"(%arg1) {start = array<i64: 0, 0>} : (tensor<6x2xi64>) -> tensor<6x1xi64>
// CHECK: "glow.cmp_lt"
// CHECK: "glow.select"
// CHECK: "glow.max"
// CHECK: "glow.min"
// CHECK: %[[THREE:.*]] = "glow.splat"() {value = 3 : i64} : () -> tensor<6xi64>
// CHECK: %[[SCALED:.*]] = "glow.mul"(%{{.*}}, %[[THREE]])
// CHECK: %[[C1:.*]] = "glow.slice"(%arg1) {start = array<i64: 0, 1>} : (tensor<6x2xi64>) -> tensor<6x1xi64>
// CHECK: %[[ROW:.*]] = "glow.add"(%[[SCALED]], %{{.*}}) : (tensor<6xi64>, tensor<6xi64>) -> tensor<6xi64>
// CHECK: %[[FLAT:.*]] = "glow.reshape"(%arg0) {dims = array<i64: 12, 5>} : (tensor<4x3x5xf32>) -> tensor<12x5xf32>
// CHECK: %[[G:.*]] = "glow.gather"(%[[FLAT]], %[[ROW]]) {axis = 0 : i64} : (tensor<12x5xf32>, tensor<6xi64>) -> tensor<6x5xf32>
// CHECK: return %[[G]]
func.func @pairs(%x: tensor<4x3x5xf32> {glow.name = "x"}, %i: tensor<6x2xi64> {glow.name = "i"}) -> (tensor<6x5xf32> {glow.name = "y"}) {
  %y = "glow.gather_nd"(%x, %i) {batch_dims = 0 : i64} : (tensor<4x3x5xf32>, tensor<6x2xi64>) -> tensor<6x5xf32>
  return %y : tensor<6x5xf32>
}

// One batch dim of 2 over [2, 4, 5] rows: each batch entry's rows start at 4 x its index (a constant).
// CHECK-LABEL: func.func @batched
// CHECK-NOT: glow.gather_nd
// CHECK: %[[OFF:.*]] = "glow.constant"() {value = dense<{{\[\[}}0, 0, 0], [4, 4, 4]]> : tensor<2x3xi64>}
// CHECK: %[[ROW:.*]] = "glow.add"(%{{.*}}, %[[OFF]])
// CHECK: %[[FLAT:.*]] = "glow.reshape"(%arg0) {dims = array<i64: 8, 5>}
// CHECK: "glow.gather"(%[[FLAT]], %[[ROW]]) {axis = 0 : i64} : (tensor<8x5xf32>, tensor<2x3xi64>) -> tensor<2x3x5xf32>
func.func @batched(%x: tensor<2x4x5xf32> {glow.name = "x"}, %i: tensor<2x3x1xi64> {glow.name = "i"}) -> (tensor<2x3x5xf32> {glow.name = "y"}) {
  %y = "glow.gather_nd"(%x, %i) {batch_dims = 1 : i64} : (tensor<2x4x5xf32>, tensor<2x3x1xi64>) -> tensor<2x3x5xf32>
  return %y : tensor<2x3x5xf32>
}
