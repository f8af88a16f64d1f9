// glow-sink-transpose sinks transposes below elementwise ops so that pairs meet and cancel or compose.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-sink-transpose,glow-verify)' | FileCheck %s

// NCHW -> NHWC, relu, add with a splat, NHWC -> NCHW: the two transposes cancel.
// CHECK-LABEL: func.func @cancel
// CHECK-NOT: glow.transpose
// CHECK: %[[R:.*]] = "glow.relu"(%arg0) : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
// CHECK: %[[S:.*]] = "glow.splat"() {value = 1.000000e+00 : f32} : () -> tensor<1x2x3x4xf32>
// CHECK: %[[A:.*]] = "glow.add"(%[[R]], %[[S]])
// CHECK-NOT: glow.transpose
// CHECK: return %[[A]]
func.func @cancel(%x: tensor<1x2x3x4xf32> {glow.name = "x"}) -> (tensor<1x2x3x4xf32> {glow.name = "y"}) {
  %t = "glow.transpose"(%x) {shuffle = array<i64: 0, 2, 3, 1>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x4x2xf32>
  %r = "glow.relu"(%t) : (tensor<1x3x4x2xf32>) -> tensor<1x3x4x2xf32>
  %one = "glow.splat"() {value = 1.0 : f32} : () -> tensor<1x3x4x2xf32>
  %a = "glow.add"(%r, %one) : (tensor<1x3x4x2xf32>, tensor<1x3x4x2xf32>) -> tensor<1x3x4x2xf32>
  %u = "glow.transpose"(%a) {shuffle = array<i64: 0, 3, 1, 2>} : (tensor<1x3x4x2xf32>) -> tensor<1x2x3x4xf32>
  return %u : tensor<1x2x3x4xf32>
}

// Two operands transposed alike (here i32 compared to i1): the op runs on the originals, one transpose after.
// Two transposes in a row compose into one.
// CHECK-LABEL: func.func @binary_and_compose
// CHECK: %[[C:.*]] = "glow.cmp_lt"(%arg0, %arg1) : (tensor<2x3x4xi32>, tensor<2x3x4xi32>) -> tensor<2x3x4xi1>
// CHECK: %[[T:.*]] = "glow.transpose"(%[[C]]) {shuffle = array<i64: 1, 2, 0>} : (tensor<2x3x4xi1>) -> tensor<3x4x2xi1>
// CHECK: %[[D:.*]] = "glow.transpose"(%arg0) {shuffle = array<i64: 2, 0, 1>} : (tensor<2x3x4xi32>) -> tensor<4x2x3xi32>
// CHECK: return %[[T]], %[[D]]
func.func @binary_and_compose(%a: tensor<2x3x4xi32> {glow.name = "a"}, %b: tensor<2x3x4xi32> {glow.name = "b"}) -> (tensor<3x4x2xi1> {glow.name = "c"}, tensor<4x2x3xi32> {glow.name = "d"}) {
  %ta = "glow.transpose"(%a) {shuffle = array<i64: 1, 2, 0>} : (tensor<2x3x4xi32>) -> tensor<3x4x2xi32>
  %tb = "glow.transpose"(%b) {shuffle = array<i64: 1, 2, 0>} : (tensor<2x3x4xi32>) -> tensor<3x4x2xi32>
  %c = "glow.cmp_lt"(%ta, %tb) : (tensor<3x4x2xi32>, tensor<3x4x2xi32>) -> tensor<3x4x2xi1>
  %t1 = "glow.transpose"(%a) {shuffle = array<i64: 0, 2, 1>} : (tensor<2x3x4xi32>) -> tensor<2x4x3xi32>
  %t2 = "glow.transpose"(%t1) {shuffle = array<i64: 1, 0, 2>} : (tensor<2x4x3xi32>) -> tensor<4x2x3xi32>
  return %c, %t2 : tensor<3x4x2xi1>, tensor<4x2x3xi32>
}

// A transpose with another user is not sunk (it would be computed twice); different shuffles do not sink.
// A transposed constant is folded.
// CHECK-LABEL: func.func @kept
// CHECK: %[[T:.*]] = "glow.transpose"(%arg0)
// CHECK: "glow.exp"(%[[T]])
// CHECK: "glow.constant"() {value = dense<{{\[\[}}1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>}
// CHECK-NOT: glow.transpose
// CHECK: return %[[T]]
func.func @kept(%x: tensor<2x2xf32> {glow.name = "x"}) -> (tensor<2x2xf32> {glow.name = "t"}, tensor<2x2xf32> {glow.name = "e"}, tensor<2x2xf32> {glow.name = "c"}) {
  %t = "glow.transpose"(%x) {shuffle = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %e = "glow.exp"(%t) : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %c = "glow.constant"() {value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %ct = "glow.transpose"(%c) {shuffle = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  return %t, %e, %ct : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>
}

// A transpose sinks through a reshape that splits dims or merges neighbours of its input: planes folded into
// the batch (NHWC [N x D, H, W, C]) seen as NCDHW and then as (D, H x W) planes for a temporal convolution,
// all views of one NDHWC buffer. Every transpose meets its inverse and cancels; only reshapes remain (which
// glow-merge-reshape then merges).
// CHECK-LABEL: func.func @through_reshapes
// CHECK-NOT: glow.transpose
// CHECK: %[[S:.*]] = "glow.reshape"(%arg0) {dims = array<i64: 1, 2, 3, 3, 4>} : (tensor<2x3x3x4xf32>) -> tensor<1x2x3x3x4xf32>
// CHECK-NEXT: %[[R:.*]] = "glow.reshape"(%[[S]]) {dims = array<i64: 1, 2, 9, 4>} : (tensor<1x2x3x3x4xf32>) -> tensor<1x2x9x4xf32>
// CHECK-NEXT: return %[[R]]
func.func @through_reshapes(%y: tensor<2x3x3x4xf32> {glow.name = "y"}) -> (tensor<1x2x9x4xf32> {glow.name = "z"}) {
  %nchw = "glow.transpose"(%y) {shuffle = array<i64: 0, 3, 1, 2>} : (tensor<2x3x3x4xf32>) -> tensor<2x4x3x3xf32>
  %split = "glow.reshape"(%nchw) {dims = array<i64: 1, 2, 4, 3, 3>} : (tensor<2x4x3x3xf32>) -> tensor<1x2x4x3x3xf32>
  %ncdhw = "glow.transpose"(%split) {shuffle = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x2x4x3x3xf32>) -> tensor<1x4x2x3x3xf32>
  %planes = "glow.reshape"(%ncdhw) {dims = array<i64: 1, 4, 2, 9>} : (tensor<1x4x2x3x3xf32>) -> tensor<1x4x2x9xf32>
  %z = "glow.transpose"(%planes) {shuffle = array<i64: 0, 2, 3, 1>} : (tensor<1x4x2x9xf32>) -> tensor<1x2x9x4xf32>
  return %z : tensor<1x2x9x4xf32>
}

// Merging dims that are not neighbours in the transpose's input (attention's heads back into the hidden size)
// would need the data moved: the transpose stays before the reshape.
// CHECK-LABEL: func.func @merge_moves_data
// CHECK: %[[T:.*]] = "glow.transpose"(%arg0) {shuffle = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT: %[[R:.*]] = "glow.reshape"(%[[T]]) {dims = array<i64: 1, 5, 8>}
// CHECK-NEXT: return %[[R]]
func.func @merge_moves_data(%x: tensor<1x2x5x4xf32> {glow.name = "x"}) -> (tensor<1x5x8xf32> {glow.name = "y"}) {
  %t = "glow.transpose"(%x) {shuffle = array<i64: 0, 2, 1, 3>} : (tensor<1x2x5x4xf32>) -> tensor<1x5x2x4xf32>
  %y = "glow.reshape"(%t) {dims = array<i64: 1, 5, 8>} : (tensor<1x5x2x4xf32>) -> tensor<1x5x8xf32>
  return %y : tensor<1x5x8xf32>
}

// A block written along an axis moved to the front and back (PyTorch's slice_scatter through ScatterND, once
// glow-scatter-to-insert made it an insert_tensor): the insert of the untransposed block at start'[s[i]] =
// start[i], and the transposes cancel. A splat block is built in the untransposed shape.
// CHECK-LABEL: func.func @insert_block
// CHECK-NOT: glow.transpose
// CHECK: %[[I:.*]] = "glow.insert_tensor"(%arg0, %arg1) {start = array<i64: 0, 1, 0, 3>} : (tensor<1x4x1x8xf32>, tensor<1x2x1x2xf32>) -> tensor<1x4x1x8xf32>
// CHECK: %[[Z:.*]] = "glow.splat"() {value = 0.000000e+00 : f32} : () -> tensor<1x1x1x8xf32>
// CHECK: %[[J:.*]] = "glow.insert_tensor"(%[[I]], %[[Z]]) {start = array<i64: 0, 0, 0, 0>}
// CHECK: return %[[J]]
func.func @insert_block(%x: tensor<1x4x1x8xf32> {glow.name = "x"}, %b: tensor<1x2x1x2xf32> {glow.name = "b"}) -> (tensor<1x4x1x8xf32> {glow.name = "y"}) {
  %tx = "glow.transpose"(%x) {shuffle = array<i64: 3, 1, 2, 0>} : (tensor<1x4x1x8xf32>) -> tensor<8x4x1x1xf32>
  %tb = "glow.transpose"(%b) {shuffle = array<i64: 3, 1, 2, 0>} : (tensor<1x2x1x2xf32>) -> tensor<2x2x1x1xf32>
  %i = "glow.insert_tensor"(%tx, %tb) {start = array<i64: 3, 1, 0, 0>} : (tensor<8x4x1x1xf32>, tensor<2x2x1x1xf32>) -> tensor<8x4x1x1xf32>
  %z = "glow.splat"() {value = 0.000000e+00 : f32} : () -> tensor<8x1x1x1xf32>
  %j = "glow.insert_tensor"(%i, %z) {start = array<i64: 0, 0, 0, 0>} : (tensor<8x4x1x1xf32>, tensor<8x1x1x1xf32>) -> tensor<8x4x1x1xf32>
  %y = "glow.transpose"(%j) {shuffle = array<i64: 3, 1, 2, 0>} : (tensor<8x4x1x1xf32>) -> tensor<1x4x1x8xf32>
  return %y : tensor<1x4x1x8xf32>
}

// A channel split of an NHWC value read in NCHW (InceptionNeXt's token mixer): each slice takes the block of
// the untransposed value at start'[s[i]] = start[i], and its transpose cancels against the one after it.
// CHECK-LABEL: func.func @split_channels
// CHECK-NOT: glow.transpose
// CHECK: %[[A:.*]] = "glow.slice"(%arg0) {start = array<i64: 0, 0, 0, 0>} : (tensor<1x3x5x8xf32>) -> tensor<1x3x5x2xf32>
// CHECK: %[[B:.*]] = "glow.slice"(%arg0) {start = array<i64: 0, 0, 0, 2>} : (tensor<1x3x5x8xf32>) -> tensor<1x3x5x6xf32>
// CHECK: %[[R:.*]] = "glow.relu"(%[[B]])
// CHECK: return %[[A]], %[[R]]
func.func @split_channels(%x: tensor<1x3x5x8xf32> {glow.name = "x"}) -> (tensor<1x3x5x2xf32> {glow.name = "a"}, tensor<1x3x5x6xf32> {glow.name = "b"}) {
  %t = "glow.transpose"(%x) {shuffle = array<i64: 0, 3, 1, 2>} : (tensor<1x3x5x8xf32>) -> tensor<1x8x3x5xf32>
  %a = "glow.slice"(%t) {start = array<i64: 0, 0, 0, 0>} : (tensor<1x8x3x5xf32>) -> tensor<1x2x3x5xf32>
  %b = "glow.slice"(%t) {start = array<i64: 0, 2, 0, 0>} : (tensor<1x8x3x5xf32>) -> tensor<1x6x3x5xf32>
  %r = "glow.relu"(%b) : (tensor<1x6x3x5xf32>) -> tensor<1x6x3x5xf32>
  %ta = "glow.transpose"(%a) {shuffle = array<i64: 0, 2, 3, 1>} : (tensor<1x2x3x5xf32>) -> tensor<1x3x5x2xf32>
  %tr = "glow.transpose"(%r) {shuffle = array<i64: 0, 2, 3, 1>} : (tensor<1x6x3x5xf32>) -> tensor<1x3x5x6xf32>
  return %ta, %tr : tensor<1x3x5x2xf32>, tensor<1x3x5x6xf32>
}

// A QDQ model's float island: x * hardsigmoid(x) with a quantization and dequantization between the hard
// sigmoid's ops (nine elementwise ops from the transpose to the product's other operand), then the CPU
// backend's one-pass quantization, which is elementwise too: the transposes cancel.
// CHECK-LABEL: func.func @quantized_island
// CHECK-NOT: glow.transpose
// CHECK: %[[Q:.*]] = "glow.cpu_quantize_u8"(%{{.*}}) {{.*}} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xui8>
// CHECK-NOT: glow.transpose
// CHECK: return %[[Q]]
func.func @quantized_island(%x: tensor<1x4x4x8xf32> {glow.name = "x"}) -> (tensor<1x4x4x8xui8> {glow.name = "y"}) {
  %t = "glow.transpose"(%x) {shuffle = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32>
  %sixth = "glow.splat"() {value = 0.166666672 : f32} : () -> tensor<1x8x4x4xf32>
  %half = "glow.splat"() {value = 0.5 : f32} : () -> tensor<1x8x4x4xf32>
  %zero = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1x8x4x4xf32>
  %one = "glow.splat"() {value = 1.0 : f32} : () -> tensor<1x8x4x4xf32>
  %top = "glow.splat"() {value = 255.0 : f32} : () -> tensor<1x8x4x4xf32>
  %step = "glow.splat"() {value = 0.00392156886 : f32} : () -> tensor<1x8x4x4xf32>
  %h1 = "glow.mul"(%t, %sixth) : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %h2 = "glow.add"(%h1, %half) : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %h3 = "glow.max"(%h2, %zero) : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %h4 = "glow.min"(%h3, %one) : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %q1 = "glow.div"(%h4, %step) : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %q2 = "glow.round"(%q1) : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %q3 = "glow.max"(%q2, %zero) : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %q4 = "glow.min"(%q3, %top) : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %gate = "glow.mul"(%q4, %step) : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %p = "glow.mul"(%t, %gate) : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %q = "glow.cpu_quantize_u8"(%p) {output_scale = 0.0196685847 : f32, output_zero = 19.0 : f32} : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xui8>
  %u = "glow.transpose"(%q) {shuffle = array<i64: 0, 2, 3, 1>} : (tensor<1x8x4x4xui8>) -> tensor<1x4x4x8xui8>
  return %u : tensor<1x4x4x8xui8>
}
