// glow-lower rewrites every high-level op that has a rule into glow primitives.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-lower,glow-verify)' | FileCheck %s

// CHECK-LABEL: func.func @fully_connected
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32> {{.*}}, %[[W:.*]]: tensor<3x4xf32> {{.*}}, %[[B:.*]]: tensor<4xf32> {{.*}})
// CHECK-NOT: glow.fully_connected
// CHECK: %[[MM:.*]] = "glow.matmul"(%[[X]], %[[W]]) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
// CHECK: %[[Y:.*]] = "glow.batched_add"(%[[MM]], %[[B]]) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK: return %[[Y]]
func.func @fully_connected(%x: tensor<2x3xf32> {glow.name = "x"}, %w: tensor<3x4xf32> {glow.name = "w"}, %b: tensor<4xf32> {glow.name = "b"}) -> (tensor<2x4xf32> {glow.name = "y"}) {
  %0 = "glow.fully_connected"(%x, %w, %b) : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32> loc("fc")
  return %0 : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @batch_normalization
// CHECK-SAME: (%[[X:[^:]*]]: tensor<1x3x2x2xf32> {{.*}}, %[[SCALE:[^:]*]]: tensor<3xf32> {{.*}}, %[[BIAS:[^:]*]]: tensor<3xf32> {{.*}}, %[[MEAN:[^:]*]]: tensor<3xf32> {{.*}}, %[[VAR:[^:]*]]: tensor<3xf32> {{.*}})
// CHECK-NOT: glow.batch_normalization
// CHECK: %[[EPS:.*]] = "glow.splat"() {value = 1.000000e-03 : f32} : () -> tensor<3xf32>
// CHECK: %[[VE:.*]] = "glow.add"(%[[VAR]], %[[EPS]]) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK: %[[STD:.*]] = "glow.sqrt"(%[[VE]])
// CHECK: %[[K:.*]] = "glow.div"(%[[SCALE]], %[[STD]])
// CHECK: %[[MK:.*]] = "glow.mul"(%[[MEAN]], %[[K]])
// CHECK: %[[SHIFT:.*]] = "glow.sub"(%[[BIAS]], %[[MK]])
// CHECK: %[[KB:.*]] = "glow.broadcast"(%[[K]]) {axis = 1 : i64} : (tensor<3xf32>) -> tensor<1x3x2x2xf32>
// CHECK: %[[SB:.*]] = "glow.broadcast"(%[[SHIFT]]) {axis = 1 : i64} : (tensor<3xf32>) -> tensor<1x3x2x2xf32>
// CHECK: %[[XK:.*]] = "glow.mul"(%[[X]], %[[KB]]) : (tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
// CHECK: %[[Y:.*]] = "glow.add"(%[[XK]], %[[SB]])
// CHECK: return %[[Y]]
func.func @batch_normalization(%x: tensor<1x3x2x2xf32> {glow.name = "x"}, %s: tensor<3xf32> {glow.name = "s"}, %b: tensor<3xf32> {glow.name = "b"}, %m: tensor<3xf32> {glow.name = "m"}, %v: tensor<3xf32> {glow.name = "v"}) -> (tensor<1x3x2x2xf32> {glow.name = "y"}) {
  %0 = "glow.batch_normalization"(%x, %s, %b, %m, %v) {epsilon = 1.0e-3 : f32, momentum = 0.9 : f32, channelIdx = 1 : i64} : (tensor<1x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x2x2xf32> loc("bn")
  return %0 : tensor<1x3x2x2xf32>
}

// CHECK-LABEL: func.func @relu
// CHECK-NOT: glow.relu
// CHECK: %[[ZERO:.*]] = "glow.splat"() {value = 0.000000e+00 : f32} : () -> tensor<2x5xf32>
// CHECK: %[[Y:.*]] = "glow.max"(%arg0, %[[ZERO]]) : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
// CHECK: return %[[Y]]
func.func @relu(%x: tensor<2x5xf32> {glow.name = "x"}) -> (tensor<2x5xf32> {glow.name = "y"}) {
  %0 = "glow.relu"(%x) : (tensor<2x5xf32>) -> tensor<2x5xf32> loc("relu")
  return %0 : tensor<2x5xf32>
}

// CHECK-LABEL: func.func @padded_convolution
// CHECK: %[[ZERO:.*]] = "glow.splat"() {value = 0.000000e+00 : f32} : () -> tensor<1x2x7x8xf32>
// CHECK: %[[PADDED:.*]] = "glow.insert_tensor"(%[[ZERO]], %arg0) {start = array<i64: 0, 0, 1, 2>} : (tensor<1x2x7x8xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x7x8xf32>
// CHECK: "glow.convolution"(%[[PADDED]], %arg1, %arg2) {dilation = array<i64: 1, 1>, group = 1 : i64, kernels = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x7x8xf32>, tensor<3x2x3x3xf32>, tensor<3xf32>) -> tensor<1x3x5x6xf32>
// CHECK-NOT: pads = array<i64: 1
func.func @padded_convolution(%x: tensor<1x2x4x4xf32> {glow.name = "x"}, %w: tensor<3x2x3x3xf32> {glow.name = "w"}, %b: tensor<3xf32> {glow.name = "b"}) -> (tensor<1x3x5x6xf32> {glow.name = "y"}) {
  %0 = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 2, 2, 2>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>, tensor<3xf32>) -> tensor<1x3x5x6xf32> loc("conv")
  return %0 : tensor<1x3x5x6xf32>
}

// A convolution without padding is already primitive.
// CHECK-LABEL: func.func @unpadded_convolution
// CHECK-NOT: glow.splat
// CHECK-NOT: glow.insert_tensor
// CHECK: "glow.convolution"(%arg0, %arg1, %arg2)
func.func @unpadded_convolution(%x: tensor<1x2x4x4xf32> {glow.name = "x"}, %w: tensor<3x2x3x3xf32> {glow.name = "w"}, %b: tensor<3xf32> {glow.name = "b"}) -> (tensor<1x3x2x2xf32> {glow.name = "y"}) {
  %0 = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>, tensor<3xf32>) -> tensor<1x3x2x2xf32> loc("conv")
  return %0 : tensor<1x3x2x2xf32>
}

// Padding never wins a max: it is -inf.
// CHECK-LABEL: func.func @padded_max_pool
// CHECK: %[[NEGINF:.*]] = "glow.splat"() {value = 0xFF800000 : f32} : () -> tensor<1x2x6x6xf32>
// CHECK: %[[PADDED:.*]] = "glow.insert_tensor"(%[[NEGINF]], %arg0) {start = array<i64: 0, 0, 1, 1>}
// CHECK: "glow.max_pool"(%[[PADDED]]) {kernels = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32>
func.func @padded_max_pool(%x: tensor<1x2x4x4xf32> {glow.name = "x"}) -> (tensor<1x2x3x3xf32> {glow.name = "y"}) {
  %0 = "glow.max_pool"(%x) {kernels = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x3x3xf32> loc("pool")
  return %0 : tensor<1x2x3x3xf32>
}

// Counting the padding: the padded average is the answer.
// CHECK-LABEL: func.func @padded_avg_pool_counting_pads
// CHECK: %[[ZERO:.*]] = "glow.splat"() {value = 0.000000e+00 : f32} : () -> tensor<1x1x6x6xf32>
// CHECK: %[[PADDED:.*]] = "glow.insert_tensor"(%[[ZERO]], %arg0)
// CHECK: %[[Y:.*]] = "glow.avg_pool"(%[[PADDED]]) {countIncludePads = true, kernels = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
// CHECK-NOT: glow.mul
// CHECK: return %[[Y]]
func.func @padded_avg_pool_counting_pads(%x: tensor<1x1x4x4xf32> {glow.name = "x"}) -> (tensor<1x1x4x4xf32> {glow.name = "y"}) {
  %0 = "glow.avg_pool"(%x) {kernels = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, countIncludePads = true} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> loc("pool")
  return %0 : tensor<1x1x4x4xf32>
}

// Not counting the padding: each output is rescaled by k*k / (real elements in its window): 9/4 in the
// corners, 9/6 on the edges, 1 inside.
// CHECK-LABEL: func.func @padded_avg_pool_excluding_pads
// CHECK: %[[PADDED:.*]] = "glow.insert_tensor"
// CHECK: %[[AVG:.*]] = "glow.avg_pool"(%[[PADDED]]) {countIncludePads = true, kernels = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
// CHECK: %[[C:.*]] = "glow.constant"() {value = dense<{{\[}}[2.250000e+00, 1.500000e+00, 1.500000e+00, 2.250000e+00], [1.500000e+00, 1.000000e+00, 1.000000e+00, 1.500000e+00], [1.500000e+00, 1.000000e+00, 1.000000e+00, 1.500000e+00], [2.250000e+00, 1.500000e+00, 1.500000e+00, 2.250000e+00]]> : tensor<4x4xf32>}
// CHECK: %[[CB:.*]] = "glow.broadcast"(%[[C]]) {axis = 2 : i64} : (tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
// CHECK: %[[Y:.*]] = "glow.mul"(%[[AVG]], %[[CB]])
// CHECK: return %[[Y]]
func.func @padded_avg_pool_excluding_pads(%x: tensor<1x1x4x4xf32> {glow.name = "x"}) -> (tensor<1x1x4x4xf32> {glow.name = "y"}) {
  %0 = "glow.avg_pool"(%x) {kernels = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, countIncludePads = false} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> loc("pool")
  return %0 : tensor<1x1x4x4xf32>
}

// A transposed convolution's pads crop its full output: the op with zero pads, then a slice at [top, left].
// CHECK-LABEL: func.func @padded_conv_transpose
// CHECK-NOT: pads = array<i64: 1, 2, 0, 1>
// CHECK: %[[FULL:.*]] = "glow.conv_transpose"(%arg0, %arg1, %arg2) {dilation = array<i64: 1, 1>, group = 1 : i64, kernels = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x2x3x3xf32>, tensor<2x4x3x3xf32>, tensor<4xf32>) -> tensor<1x4x7x7xf32>
// CHECK: %[[Y:.*]] = "glow.slice"(%[[FULL]]) {start = array<i64: 0, 0, 1, 2>} : (tensor<1x4x7x7xf32>) -> tensor<1x4x6x4xf32>
// CHECK: return %[[Y]]
func.func @padded_conv_transpose(%x: tensor<1x2x3x3xf32> {glow.name = "x"}, %w: tensor<2x4x3x3xf32> {glow.name = "w"}, %b: tensor<4xf32> {glow.name = "b"}) -> (tensor<1x4x6x4xf32> {glow.name = "y"}) {
  %0 = "glow.conv_transpose"(%x, %w, %b) {kernels = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 2, 0, 1>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x2x3x3xf32>, tensor<2x4x3x3xf32>, tensor<4xf32>) -> tensor<1x4x6x4xf32>
  return %0 : tensor<1x4x6x4xf32>
}

// Relu keeps its element type: on integers the zero is an i64 splat value of an integer tensor.
// CHECK-LABEL: func.func @integer_relu
// CHECK-NOT: glow.relu
// CHECK: %[[ZERO:.*]] = "glow.splat"() {value = 0 : i64} : () -> tensor<3xi32>
// CHECK: %[[Y:.*]] = "glow.max"(%arg0, %[[ZERO]]) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
// CHECK: return %[[Y]]
func.func @integer_relu(%x: tensor<3xi32> {glow.name = "x"}) -> (tensor<3xi32> {glow.name = "y"}) {
  %0 = "glow.relu"(%x) : (tensor<3xi32>) -> tensor<3xi32> loc("relu")
  return %0 : tensor<3xi32>
}

// Primitives pass through untouched.
// CHECK-LABEL: func.func @primitives
// CHECK: "glow.sigmoid"
// CHECK: "glow.softmax"
// CHECK: "glow.max_pool"(%arg0) {kernels = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
func.func @primitives(%x: tensor<1x2x4x4xf32> {glow.name = "x"}) -> (tensor<1x2x4x4xf32> {glow.name = "s"}, tensor<1x2x4x4xf32> {glow.name = "t"}, tensor<1x2x2x2xf32> {glow.name = "p"}) {
  %0 = "glow.sigmoid"(%x) : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %1 = "glow.softmax"(%x) : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %2 = "glow.max_pool"(%x) {kernels = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  return %0, %1, %2 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x2x2xf32>
}

// A chain of bf16 ops is computed in f32: inputs converted up, each op on f32 reading the previous op's f32
// result, and one conversion down at the end (the intermediate one, unused, is dropped; glow-cse then merges
// the up-conversions).
// CHECK-LABEL: func.func @bf16_chain
// CHECK: %[[UP:.*]] = "glow.convert_to"(%arg0) : (tensor<4xbf16>) -> tensor<4xf32>
// CHECK: %[[E:.*]] = "glow.exp"(%[[UP]]) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NOT: tensor<4xbf16>
// CHECK: %[[UP2:.*]] = "glow.convert_to"(%arg0) : (tensor<4xbf16>) -> tensor<4xf32>
// CHECK: %[[S:.*]] = "glow.add"(%[[E]], %[[UP2]]) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK: %[[Y:.*]] = "glow.convert_to"(%[[S]]) : (tensor<4xf32>) -> tensor<4xbf16>
// CHECK: return %[[Y]]
func.func @bf16_chain(%x: tensor<4xbf16> {glow.name = "x"}) -> (tensor<4xbf16> {glow.name = "y"}) {
  %0 = "glow.exp"(%x) : (tensor<4xbf16>) -> tensor<4xbf16> loc("e")
  %1 = "glow.add"(%0, %x) : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16> loc("s")
  return %1 : tensor<4xbf16>
}

// An f16 op is computed in f32 too, but reads its operands rounded to f16, as the model states them: through
// glow.round_f16 (a store to f16 and a load back, in one op), unless they hold f16 values already (the input
// converted up; max_pool and reshape of such values). Only the result is converted down.
// CHECK-LABEL: func.func @f16_chain
// CHECK: %[[UP:.*]] = "glow.convert_to"(%arg0) : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf32>
// CHECK: %[[P:.*]] = "glow.max_pool"(%[[UP]]) {{.*}} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
// CHECK: %[[R:.*]] = "glow.reshape"(%[[P]])
// CHECK: %[[S:.*]] = "glow.softmax"(%[[R]]) : (tensor<4x2xf32>) -> tensor<4x2xf32>
// CHECK: %[[SR:.*]] = "glow.round_f16"(%[[S]]) : (tensor<4x2xf32>) -> tensor<4x2xf32>
// CHECK: %[[E:.*]] = "glow.exp"(%[[SR]])
// CHECK: %[[Y:.*]] = "glow.convert_to"(%[[E]]) : (tensor<4x2xf32>) -> tensor<4x2xf16>
// CHECK-NOT: "glow.convert_to"
// CHECK: return %[[Y]]
func.func @f16_chain(%x: tensor<1x2x4x4xf16> {glow.name = "x"}) -> (tensor<4x2xf16> {glow.name = "y"}) {
  %0 = "glow.max_pool"(%x) {kernels = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x2x4x4xf16>) -> tensor<1x2x2x2xf16>
  %1 = "glow.reshape"(%0) {dims = array<i64: 4, 2>} : (tensor<1x2x2x2xf16>) -> tensor<4x2xf16>
  %2 = "glow.softmax"(%1) : (tensor<4x2xf16>) -> tensor<4x2xf16>
  %3 = "glow.exp"(%2) : (tensor<4x2xf16>) -> tensor<4x2xf16>
  return %3 : tensor<4x2xf16>
}

// An f32 value converted down to f16 and up again (the CPU layout's conversions around an f16 convolution, an
// ONNX Cast pair) is that value rounded: one op.
// CHECK-LABEL: func.func @f16_round_trip
// CHECK: %[[R:.*]] = "glow.round_f16"(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: "glow.exp"(%[[R]])
func.func @f16_round_trip(%x: tensor<4xf32> {glow.name = "x"}) -> (tensor<4xf32> {glow.name = "y"}) {
  %0 = "glow.convert_to"(%x) : (tensor<4xf32>) -> tensor<4xf16>
  %1 = "glow.convert_to"(%0) : (tensor<4xf16>) -> tensor<4xf32>
  %2 = "glow.exp"(%1) : (tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}

// matmul_nbits (4-bit values, blocks of 16, K = 12 ending inside the block) -> each byte's low and high nibble
// (a shift and masks of 0xF), interleaved by a concat, converted, less the zero points, times the scales (each
// broadcast along its block), cut to K, transposed to W [K, N] and a matmul.
// CHECK-LABEL: func.func @matmul_nbits
// CHECK-SAME: (%[[A:.*]]: tensor<3x12xf32> {{.*}}, %[[Q:.*]]: tensor<2x1x8xui8> {{.*}}, %[[S:.*]]: tensor<2x1xf32> {{.*}}, %[[Z:.*]]: tensor<2x1xf32> {{.*}})
// CHECK-NOT: glow.matmul_nbits
// CHECK: %[[BYTES:.*]] = "glow.reshape"(%[[Q]]) {dims = array<i64: 2, 1, 8, 1>}
// CHECK: %[[LOW:.*]] = "glow.bitwise_and"(%[[BYTES]], %{{.*}})
// CHECK: %[[SHIFTED:.*]] = "glow.shift_right"(%[[BYTES]], %{{.*}})
// CHECK: %[[HIGH:.*]] = "glow.bitwise_and"(%[[SHIFTED]], %{{.*}})
// CHECK: %[[BOTH:.*]] = "glow.concat"(%[[LOW]], %[[HIGH]]) {{.*}} -> tensor<2x1x8x2xui8>
// CHECK: %[[VALUES:.*]] = "glow.reshape"(%[[BOTH]]) {dims = array<i64: 2, 1, 16>}
// CHECK: %[[F:.*]] = "glow.convert_to"(%[[VALUES]]) : (tensor<2x1x16xui8>) -> tensor<2x1x16xf32>
// CHECK: "glow.broadcast"
// CHECK: "glow.broadcast"
// CHECK: %[[CENTRED:.*]] = "glow.sub"(%[[F]],
// CHECK: %[[W:.*]] = "glow.mul"(%[[CENTRED]],
// CHECK: %[[ROWS:.*]] = "glow.reshape"(%[[W]]) {dims = array<i64: 2, 16>}
// CHECK: %[[CUT:.*]] = "glow.slice"(%[[ROWS]]) {start = array<i64: 0, 0>} : (tensor<2x16xf32>) -> tensor<2x12xf32>
// CHECK: %[[WT:.*]] = "glow.transpose"(%[[CUT]]) {shuffle = array<i64: 1, 0>} : (tensor<2x12xf32>) -> tensor<12x2xf32>
// CHECK: %[[Y:.*]] = "glow.matmul"(%[[A]], %[[WT]]) : (tensor<3x12xf32>, tensor<12x2xf32>) -> tensor<3x2xf32>
// CHECK: return %[[Y]]
func.func @matmul_nbits(%a: tensor<3x12xf32> {glow.name = "a"}, %q: tensor<2x1x8xui8> {glow.name = "q"}, %s: tensor<2x1xf32> {glow.name = "s"}, %z: tensor<2x1xf32> {glow.name = "z"}) -> (tensor<3x2xf32> {glow.name = "y"}) {
  %y = "glow.matmul_nbits"(%a, %q, %s, %z) {bits = 4 : i64} : (tensor<3x12xf32>, tensor<2x1x8xui8>, tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<3x2xf32> loc("mm")
  return %y : tensor<3x2xf32>
}
