// glow-sink-transpose crosses a transpose that several ops read, when every one of them sinks it: the
// convolution output that x * hardsigmoid(x) (HardSwish) or x * sigmoid(x) (SiLU) reads twice, and the
// squeeze-and-excite block that pools it and scales it by a broadcast. None of these lost a transpose
// before; now the NHWC -> NCHW transpose of the layout pass meets the next NCHW -> NHWC one and they cancel.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-sink-transpose,glow-verify)' | FileCheck %s

// HardSwish between two NHWC layers: no transpose left.
// CHECK-LABEL: func.func @hardswish
// CHECK-NOT: glow.transpose
// CHECK: %[[M:.*]] = "glow.mul"(%arg0, %{{.*}}) : (tensor<1x3x4x8xf32>, tensor<1x3x4x8xf32>)
// CHECK: %[[A:.*]] = "glow.add"(%[[M]]
// CHECK: %[[H:.*]] = "glow.max"(%[[A]]
// CHECK: %[[L:.*]] = "glow.min"(%[[H]]
// CHECK: %[[Y:.*]] = "glow.mul"(%arg0, %[[L]]) : (tensor<1x3x4x8xf32>, tensor<1x3x4x8xf32>)
// CHECK-NOT: glow.transpose
// CHECK: return %[[Y]]
func.func @hardswish(%x: tensor<1x3x4x8xf32> {glow.name = "x"}) -> (tensor<1x3x4x8xf32> {glow.name = "y"}) {
  %t = "glow.transpose"(%x) {shuffle = array<i64: 0, 3, 1, 2>} : (tensor<1x3x4x8xf32>) -> tensor<1x8x3x4xf32>
  %sixth = "glow.splat"() {value = 0.1666667 : f32} : () -> tensor<1x8x3x4xf32>
  %half = "glow.splat"() {value = 0.5 : f32} : () -> tensor<1x8x3x4xf32>
  %zero = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1x8x3x4xf32>
  %one = "glow.splat"() {value = 1.0 : f32} : () -> tensor<1x8x3x4xf32>
  %m = "glow.mul"(%t, %sixth) : (tensor<1x8x3x4xf32>, tensor<1x8x3x4xf32>) -> tensor<1x8x3x4xf32>
  %a = "glow.add"(%m, %half) : (tensor<1x8x3x4xf32>, tensor<1x8x3x4xf32>) -> tensor<1x8x3x4xf32>
  %h = "glow.max"(%a, %zero) : (tensor<1x8x3x4xf32>, tensor<1x8x3x4xf32>) -> tensor<1x8x3x4xf32>
  %l = "glow.min"(%h, %one) : (tensor<1x8x3x4xf32>, tensor<1x8x3x4xf32>) -> tensor<1x8x3x4xf32>
  %y = "glow.mul"(%t, %l) : (tensor<1x8x3x4xf32>, tensor<1x8x3x4xf32>) -> tensor<1x8x3x4xf32>
  %u = "glow.transpose"(%y) {shuffle = array<i64: 0, 2, 3, 1>} : (tensor<1x8x3x4xf32>) -> tensor<1x3x4x8xf32>
  return %u : tensor<1x3x4x8xf32>
}

// Squeeze-and-excite on an NHWC tensor: the pool reduces H and W of the NHWC value, the scale's broadcast
// reads the pooled channels reshaped (the transpose of a [1, C, 1, 1] moves no data), the product stays NHWC.
// CHECK-LABEL: func.func @squeeze_excite
// CHECK: %[[S:.*]] = "glow.sigmoid"(%arg0) : (tensor<1x3x4x8xf32>)
// CHECK: %[[X:.*]] = "glow.mul"(%arg0, %[[S]]) : (tensor<1x3x4x8xf32>, tensor<1x3x4x8xf32>)
// CHECK: "glow.batched_reduce_add"(%[[X]]) {axes = array<i64: 1, 2>} : (tensor<1x3x4x8xf32>) -> tensor<1x8xf32>
// CHECK-NOT: glow.transpose
// CHECK: %[[B:.*]] = "glow.broadcast"(%{{.*}}) {axis = 0 : i64} : (tensor<1x1x1x8xf32>) -> tensor<1x3x4x8xf32>
// CHECK: %[[Y:.*]] = "glow.mul"(%[[X]], %[[B]])
// CHECK-NOT: glow.transpose
// CHECK: return %[[Y]]
func.func @squeeze_excite(%x: tensor<1x3x4x8xf32> {glow.name = "x"}) -> (tensor<1x3x4x8xf32> {glow.name = "y"}) {
  %t = "glow.transpose"(%x) {shuffle = array<i64: 0, 3, 1, 2>} : (tensor<1x3x4x8xf32>) -> tensor<1x8x3x4xf32>
  %s = "glow.sigmoid"(%t) : (tensor<1x8x3x4xf32>) -> tensor<1x8x3x4xf32>
  %silu = "glow.mul"(%t, %s) : (tensor<1x8x3x4xf32>, tensor<1x8x3x4xf32>) -> tensor<1x8x3x4xf32>
  %p = "glow.batched_reduce_add"(%silu) {axes = array<i64: 2, 3>} : (tensor<1x8x3x4xf32>) -> tensor<1x8xf32>
  %r = "glow.reshape"(%p) {dims = array<i64: 1, 8, 1, 1>} : (tensor<1x8xf32>) -> tensor<1x8x1x1xf32>
  %g = "glow.sigmoid"(%r) : (tensor<1x8x1x1xf32>) -> tensor<1x8x1x1xf32>
  %b = "glow.broadcast"(%g) {axis = 0 : i64} : (tensor<1x8x1x1xf32>) -> tensor<1x8x3x4xf32>
  %y = "glow.mul"(%silu, %b) : (tensor<1x8x3x4xf32>, tensor<1x8x3x4xf32>) -> tensor<1x8x3x4xf32>
  %u = "glow.transpose"(%y) {shuffle = array<i64: 0, 2, 3, 1>} : (tensor<1x8x3x4xf32>) -> tensor<1x3x4x8xf32>
  return %u : tensor<1x3x4x8xf32>
}

// A transpose that something other than a sinking op also reads (here the function's result) stays, and the
// op beside it is not rewritten: sinking would then add a transpose.
// CHECK-LABEL: func.func @other_user
// CHECK: %[[T:.*]] = "glow.transpose"(%arg0)
// CHECK: %[[S:.*]] = "glow.sigmoid"(%[[T]])
// CHECK: "glow.mul"(%[[T]], %[[S]])
func.func @other_user(%x: tensor<1x3x4x8xf32> {glow.name = "x"}) -> (tensor<1x8x3x4xf32> {glow.name = "t"}, tensor<1x8x3x4xf32> {glow.name = "y"}) {
  %t = "glow.transpose"(%x) {shuffle = array<i64: 0, 3, 1, 2>} : (tensor<1x3x4x8xf32>) -> tensor<1x8x3x4xf32>
  %s = "glow.sigmoid"(%t) : (tensor<1x8x3x4xf32>) -> tensor<1x8x3x4xf32>
  %y = "glow.mul"(%t, %s) : (tensor<1x8x3x4xf32>, tensor<1x8x3x4xf32>) -> tensor<1x8x3x4xf32>
  return %t, %y : tensor<1x8x3x4xf32>, tensor<1x8x3x4xf32>
}

// DenseNet: each layer's NHWC output (transposed back to NCHW) joins the concat of every later layer; each
// concat feeds a batch norm (per-channel broadcasts of [C] vectors) and ReLU before the next NHWC layer. The
// concats and the batch norms run on NHWC values: the vectors' broadcast axis moves to the last dim.
// CHECK-LABEL: func.func @dense_block
// CHECK-NOT: glow.transpose
// CHECK: %[[C1:.*]] = "glow.concat"(%arg0, %arg1) {{.*}} -> tensor<1x3x3x8xf32>
// CHECK: "glow.broadcast"(%{{.*}}) {axis = 3 : i64} : (tensor<8xf32>) -> tensor<1x3x3x8xf32>
// CHECK: %[[C2:.*]] = "glow.concat"(%arg0, %arg1, %arg2) {{.*}} -> tensor<1x3x3x12xf32>
// CHECK-NOT: glow.transpose
// CHECK: return
func.func @dense_block(%a: tensor<1x3x3x4xf32> {glow.name = "a"}, %b: tensor<1x3x3x4xf32> {glow.name = "b"}, %c: tensor<1x3x3x4xf32> {glow.name = "c"}) -> (tensor<1x3x3x8xf32> {glow.name = "y1"}, tensor<1x3x3x12xf32> {glow.name = "y2"}) {
  %ta = "glow.transpose"(%a) {shuffle = array<i64: 0, 3, 1, 2>} : (tensor<1x3x3x4xf32>) -> tensor<1x4x3x3xf32>
  %tb = "glow.transpose"(%b) {shuffle = array<i64: 0, 3, 1, 2>} : (tensor<1x3x3x4xf32>) -> tensor<1x4x3x3xf32>
  %tc = "glow.transpose"(%c) {shuffle = array<i64: 0, 3, 1, 2>} : (tensor<1x3x3x4xf32>) -> tensor<1x4x3x3xf32>
  %c1 = "glow.concat"(%ta, %tb) {dim = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>} : (tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>) -> tensor<1x8x3x3xf32>
  %s = "glow.constant"() {value = dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>} : () -> tensor<8xf32>
  %sb = "glow.broadcast"(%s) {axis = 1 : i64} : (tensor<8xf32>) -> tensor<1x8x3x3xf32>
  %m = "glow.mul"(%c1, %sb) : (tensor<1x8x3x3xf32>, tensor<1x8x3x3xf32>) -> tensor<1x8x3x3xf32>
  %zero = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1x8x3x3xf32>
  %r = "glow.max"(%m, %zero) : (tensor<1x8x3x3xf32>, tensor<1x8x3x3xf32>) -> tensor<1x8x3x3xf32>
  %u1 = "glow.transpose"(%r) {shuffle = array<i64: 0, 2, 3, 1>} : (tensor<1x8x3x3xf32>) -> tensor<1x3x3x8xf32>
  %c2 = "glow.concat"(%ta, %tb, %tc) {dim = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>} : (tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>) -> tensor<1x12x3x3xf32>
  %u2 = "glow.transpose"(%c2) {shuffle = array<i64: 0, 2, 3, 1>} : (tensor<1x12x3x3xf32>) -> tensor<1x3x3x12xf32>
  return %u1, %u2 : tensor<1x3x3x8xf32>, tensor<1x3x3x12xf32>
}

// Two transposes meet in an add; the second one is also read by the result. The add cannot lose its
// transposes, so the first one's other reader (the exp) is not rewritten either: no transpose is added.
// CHECK-LABEL: func.func @partner_kept
// CHECK-COUNT-2: "glow.transpose"
// CHECK-NOT: "glow.transpose"
// CHECK: return
func.func @partner_kept(%a: tensor<2x3xf32> {glow.name = "a"}, %b: tensor<2x3xf32> {glow.name = "b"}) -> (tensor<3x2xf32> {glow.name = "s"}, tensor<3x2xf32> {glow.name = "e"}, tensor<3x2xf32> {glow.name = "tb"}) {
  %ta = "glow.transpose"(%a) {shuffle = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %tb = "glow.transpose"(%b) {shuffle = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %s = "glow.add"(%ta, %tb) : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %e = "glow.exp"(%ta) : (tensor<3x2xf32>) -> tensor<3x2xf32>
  return %s, %e, %tb : tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>
}

// A softmax over the last axis of heads moved in front (CaiT's talking heads: [1, 5, 6, 4] -> [1, 4, 5, 6]) keeps
// its reductions along the contiguous axis: sunk, they would reduce along the 6 with only the 4 heads contiguous
// (fewer than MIN_CONTIGUOUS). With 8 heads contiguous, the same softmax sinks and its transposes cancel.
// CHECK-LABEL: func.func @softmax_of_few_heads
// CHECK: %[[T:.*]] = "glow.transpose"(%arg0) {shuffle = array<i64: 0, 3, 1, 2>}
// CHECK: "glow.batched_reduce_max"(%[[T]]) {axes = array<i64: 3>} : (tensor<1x4x5x6xf32>)
// CHECK: "glow.batched_reduce_add"({{.*}}) {axes = array<i64: 3>} : (tensor<1x4x5x6xf32>)
// CHECK-LABEL: func.func @softmax_of_many_heads
// CHECK: "glow.batched_reduce_max"(%arg0) {axes = array<i64: 2>} : (tensor<1x5x6x8xf32>)
// CHECK: "glow.sub"(%arg0,
// CHECK: %[[E:.*]] = "glow.exp"
// CHECK: return %[[E]]
func.func @softmax_of_few_heads(%x: tensor<1x5x6x4xf32> {glow.name = "x"}) -> (tensor<1x5x6x4xf32> {glow.name = "y"}) {
  %t = "glow.transpose"(%x) {shuffle = array<i64: 0, 3, 1, 2>} : (tensor<1x5x6x4xf32>) -> tensor<1x4x5x6xf32>
  %m = "glow.batched_reduce_max"(%t) {axes = array<i64: 3>} : (tensor<1x4x5x6xf32>) -> tensor<1x4x5xf32>
  %r = "glow.reshape"(%m) {dims = array<i64: 1, 4, 5, 1>} : (tensor<1x4x5xf32>) -> tensor<1x4x5x1xf32>
  %b = "glow.broadcast"(%r) {axis = 0 : i64} : (tensor<1x4x5x1xf32>) -> tensor<1x4x5x6xf32>
  %d = "glow.sub"(%t, %b) : (tensor<1x4x5x6xf32>, tensor<1x4x5x6xf32>) -> tensor<1x4x5x6xf32>
  %e = "glow.exp"(%d) : (tensor<1x4x5x6xf32>) -> tensor<1x4x5x6xf32>
  %s = "glow.batched_reduce_add"(%e) {axes = array<i64: 3>} : (tensor<1x4x5x6xf32>) -> tensor<1x4x5xf32>
  %sr = "glow.reshape"(%s) {dims = array<i64: 1, 4, 5, 1>} : (tensor<1x4x5xf32>) -> tensor<1x4x5x1xf32>
  %sb = "glow.broadcast"(%sr) {axis = 0 : i64} : (tensor<1x4x5x1xf32>) -> tensor<1x4x5x6xf32>
  %p = "glow.div"(%e, %sb) : (tensor<1x4x5x6xf32>, tensor<1x4x5x6xf32>) -> tensor<1x4x5x6xf32>
  %u = "glow.transpose"(%p) {shuffle = array<i64: 0, 2, 3, 1>} : (tensor<1x4x5x6xf32>) -> tensor<1x5x6x4xf32>
  return %u : tensor<1x5x6x4xf32>
}
func.func @softmax_of_many_heads(%x: tensor<1x5x6x8xf32> {glow.name = "x"}) -> (tensor<1x5x6x8xf32> {glow.name = "y"}) {
  %t = "glow.transpose"(%x) {shuffle = array<i64: 0, 3, 1, 2>} : (tensor<1x5x6x8xf32>) -> tensor<1x8x5x6xf32>
  %m = "glow.batched_reduce_max"(%t) {axes = array<i64: 3>} : (tensor<1x8x5x6xf32>) -> tensor<1x8x5xf32>
  %r = "glow.reshape"(%m) {dims = array<i64: 1, 8, 5, 1>} : (tensor<1x8x5xf32>) -> tensor<1x8x5x1xf32>
  %b = "glow.broadcast"(%r) {axis = 0 : i64} : (tensor<1x8x5x1xf32>) -> tensor<1x8x5x6xf32>
  %d = "glow.sub"(%t, %b) : (tensor<1x8x5x6xf32>, tensor<1x8x5x6xf32>) -> tensor<1x8x5x6xf32>
  %e = "glow.exp"(%d) : (tensor<1x8x5x6xf32>) -> tensor<1x8x5x6xf32>
  %u = "glow.transpose"(%e) {shuffle = array<i64: 0, 2, 3, 1>} : (tensor<1x8x5x6xf32>) -> tensor<1x5x6x8xf32>
  return %u : tensor<1x5x6x8xf32>
}
