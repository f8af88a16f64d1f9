// glow-lower's CPU rule for glow.softmax (backends/cpu/rowreduce_softmax.py): f32 rows of 16 or more become
// max, exp(x - max), sum and divide over the last dim, which the vector recipes take; shorter rows and other
// float types keep the op.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-lower,glow-verify)' | FileCheck %s

// CHECK-LABEL: func.func @attention_rows
// CHECK: %[[M:.*]] = "glow.batched_reduce_max"(%arg0) {axes = array<i64: 3>} : (tensor<1x2x4x16xf32>) -> tensor<1x2x4xf32>
// CHECK: %[[MC:.*]] = "glow.reshape"(%[[M]]) {dims = array<i64: 1, 2, 4, 1>}
// CHECK: %[[MB:.*]] = "glow.broadcast"(%[[MC]]) {axis = 0 : i64} : (tensor<1x2x4x1xf32>) -> tensor<1x2x4x16xf32>
// CHECK: %[[D:.*]] = "glow.sub"(%arg0, %[[MB]])
// CHECK: %[[E:.*]] = "glow.exp"(%[[D]])
// CHECK: %[[S:.*]] = "glow.batched_reduce_add"(%[[E]]) {axes = array<i64: 3>}
// CHECK: %[[SC:.*]] = "glow.reshape"(%[[S]])
// CHECK: %[[SB:.*]] = "glow.broadcast"(%[[SC]])
// CHECK: %[[Y:.*]] = "glow.div"(%[[E]], %[[SB]])
// CHECK-NOT: glow.softmax
// CHECK: return %[[Y]]
func.func @attention_rows(%x: tensor<1x2x4x16xf32> {glow.name = "x"}) -> (tensor<1x2x4x16xf32> {glow.name = "y"}) {
  %0 = "glow.softmax"(%x) : (tensor<1x2x4x16xf32>) -> tensor<1x2x4x16xf32>
  return %0 : tensor<1x2x4x16xf32>
}

// CHECK-LABEL: func.func @kept
// CHECK: "glow.softmax"(%arg0) : (tensor<3x8xf32>)
// CHECK: "glow.softmax"(%arg1) : (tensor<2x32xf64>)
func.func @kept(%x: tensor<3x8xf32> {glow.name = "x"}, %w: tensor<2x32xf64> {glow.name = "w"}) -> (tensor<3x8xf32> {glow.name = "y"}, tensor<2x32xf64> {glow.name = "z"}) {
  %0 = "glow.softmax"(%x) : (tensor<3x8xf32>) -> tensor<3x8xf32>
  %1 = "glow.softmax"(%w) : (tensor<2x32xf64>) -> tensor<2x32xf64>
  return %0, %1 : tensor<3x8xf32>, tensor<2x32xf64>
}
