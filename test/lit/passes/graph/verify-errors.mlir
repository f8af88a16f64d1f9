// glow-verify: the rules IRDL cannot state. Each case is a chunk of its own; glow-verify accepts good
// functions and stops at the first broken rule, reporting it at the op's position with the op and the rule.
// RUN: glow-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(glow-verify)'

// Good functions pass; the first broken rule stops glow-verify, so @bad_add after it is not reported.
func.func @good_conv(%x: tensor<1x4x8x8xf32> {glow.name = "x"}, %w: tensor<6x2x3x3xf32> {glow.name = "w"}, %b: tensor<6xf32> {glow.name = "b"}) -> (tensor<1x6x4x8xf32> {glow.name = "y"}) {
  %0 = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 3, 3>, strides = array<i64: 2, 1>, pads = array<i64: 1, 1, 0, 1>, group = 2 : i64, dilation = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x8xf32>
  return %0 : tensor<1x6x4x8xf32>
}

func.func @good_pool(%x: tensor<1x2x5x5xf32> {glow.name = "x"}) -> (tensor<1x2x3x3xf32> {glow.name = "y"}) {
  %0 = "glow.avg_pool"(%x) {kernels = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, countIncludePads = false} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
  return %0 : tensor<1x2x3x3xf32>
}

func.func @bad_conv(%x: tensor<1x3x8x8xf32> {glow.name = "x"}, %w: tensor<4x2x3x3xf32> {glow.name = "w"}, %b: tensor<4xf32> {glow.name = "b"}) -> (tensor<1x4x6x6xf32> {glow.name = "y"}) {
  // expected-error @+1 {{'glow.convolution' input channels must equal filter I * group: input [1, 3, 8, 8], filter [4, 2, 3, 3], group 1}}
  %0 = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// Broken too, but glow-verify has already stopped.
func.func @bad_add(%a: tensor<2x3xf32> {glow.name = "a"}, %b: tensor<3x2xf32> {glow.name = "b"}) -> (tensor<2x3xf32> {glow.name = "y"}) {
  %0 = "glow.add"(%a, %b) : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A dense array of the wrong element width passes IRDL's base check; glow-verify wants array<i64>.
func.func @transpose(%x: tensor<2x3xf32> {glow.name = "x"}) -> (tensor<3x2xf32> {glow.name = "y"}) {
  // expected-error @+1 {{'glow.transpose' attribute 'shuffle' must be array<i64: ...>, got array<i32: 1, 0>}}
  %0 = "glow.transpose"(%x) {shuffle = array<i32: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// A block_view's type has the strides and offset of the block's place in its source.
func.func @layout(%a: memref<2x3xf32> {glow.name = "a"}) {
  // expected-error @+1 {{'glow_ir.block_view' view layout must be strided<[3, 1], offset: 1>, the block's place in its source}}
  %0 = "glow_ir.block_view"(%a) {start = array<i64: 0, 1>} : (memref<2x3xf32>) -> memref<2x2xf32>
  return
}

// -----

// A block_view is a block inside its source.
func.func @outside(%a: memref<2x3xf32> {glow.name = "a"}) {
  // expected-error @+1 {{'glow_ir.block_view' view [2, 2] at [1, 2] must lie inside its source [2, 3]}}
  %0 = "glow_ir.block_view"(%a) {start = array<i64: 1, 2>} : (memref<2x3xf32>) -> memref<2x2xf32, strided<[3, 1], offset: 5>>
  return
}

// -----

// Broadcast aligns the input at `axis`: each input dim must be 1 or the target dim it meets.
func.func @broadcast(%x: tensor<3xf32> {glow.name = "x"}) -> (tensor<2x4xf32> {glow.name = "y"}) {
  // expected-error @+1 {{'glow.broadcast' input [3] aligned at axis 1 must have dims 1 or equal to target [2, 4]}}
  %0 = "glow.broadcast"(%x) {axis = 1 : i64} : (tensor<3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// conv_transpose: each output dim is (in - 1) * stride - pads + dilation * (k - 1) + 1.
func.func @deconv(%x: tensor<1x4x3x4xf32> {glow.name = "x"}, %w: tensor<4x3x2x2xf32> {glow.name = "w"}, %b: tensor<6xf32> {glow.name = "b"}) -> (tensor<1x6x8x8xf32> {glow.name = "y"}) {
  // expected-error @+1 {{'glow.conv_transpose' result shape [1, 6, 8, 8] must equal the shape rule's [1, 6, 5, 7]}}
  %0 = "glow.conv_transpose"(%x, %w, %b) {kernels = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>, group = 2 : i64, dilation = array<i64: 1, 1>} : (tensor<1x4x3x4xf32>, tensor<4x3x2x2xf32>, tensor<6xf32>) -> tensor<1x6x8x8xf32>
  return %0 : tensor<1x6x8x8xf32>
}

// -----

// Float-only ops (log, erf, pow, conv_transpose, ...) refuse integer tensors.
func.func @log(%x: tensor<4xi32> {glow.name = "x"}) -> (tensor<4xi32> {glow.name = "y"}) {
  // expected-error @+1 {{'glow.log' element type must be a float (f32, f64, f16, bf16), got i32}}
  %0 = "glow.log"(%x) : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// gather: the result has data[:axis] + indices + data[axis+1:]. A good gather passes, and glow-verify stops
// at @bad_shape, before @bad_indices.
func.func @good(%d: tensor<10x8xf32> {glow.name = "d"}, %i: tensor<2x4xi32> {glow.name = "i"}) -> (tensor<2x4x8xf32> {glow.name = "y"}) {
  %0 = "glow.gather"(%d, %i) {axis = 0 : i64} : (tensor<10x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
  return %0 : tensor<2x4x8xf32>
}

func.func @bad_shape(%d: tensor<10x8xf32> {glow.name = "d"}, %i: tensor<2x4xi64> {glow.name = "i"}) -> (tensor<3x8xf32> {glow.name = "y"}) {
  // expected-error @+1 {{'glow.gather' result shape [3, 8] must equal the shape rule's [2, 4, 8]}}
  %0 = "glow.gather"(%d, %i) {axis = 0 : i64} : (tensor<10x8xf32>, tensor<2x4xi64>) -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

func.func @bad_indices(%d: tensor<10x8xf32> {glow.name = "d"}, %i: tensor<2xi8> {glow.name = "i"}) -> (tensor<2x8xf32> {glow.name = "y"}) {
  %0 = "glow.gather"(%d, %i) {axis = 0 : i64} : (tensor<10x8xf32>, tensor<2xi8>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// gather: indices are i32 or i64.
func.func @bad_indices(%d: tensor<10x8xf32> {glow.name = "d"}, %i: tensor<2xi8> {glow.name = "i"}) -> (tensor<2x8xf32> {glow.name = "y"}) {
  // expected-error @+1 {{'glow.gather' indices must be i32 or i64, got i8}}
  %0 = "glow.gather"(%d, %i) {axis = 0 : i64} : (tensor<10x8xf32>, tensor<2xi8>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// glow_ir instructions follow the glow element-type rules on their buffers: arg_max writes i64.
func.func @arg_max(%x: memref<2x5xf32> {glow.name = "x"}, %y: memref<2xi32> {glow.name = "y", glow.output}) {
  // expected-error @+1 {{'glow_ir.arg_max' destination element type i32 must equal the type rule's i64}}
  "glow_ir.arg_max"(%y, %x) {axis = 1 : i64, keepDims = false, roles = ["out", "in"]} : (memref<2xi32>, memref<2x5xf32>) -> ()
  return
}

// -----

// glow_ir instructions follow the glow rules on their buffers: the out operand has the rule's shape.
func.func @matmul(%a: memref<2x3xf32> {glow.name = "a"}, %b: memref<3x4xf32> {glow.name = "b"}, %c: memref<2x2xf32> {glow.name = "c", glow.output}) {
  // expected-error @+1 {{'glow_ir.matmul' destination shape [2, 2] must equal the shape rule's [2, 4]}}
  "glow_ir.matmul"(%c, %a, %b) {roles = ["out", "in", "in"]} : (memref<2x2xf32>, memref<2x3xf32>, memref<3x4xf32>) -> ()
  return
}

// -----

// A result type that disagrees with the shape rule is reported at the op's file position when it has no name.
func.func @pool(%x: tensor<1x1x4x4xf32> {glow.name = "x"}) -> (tensor<1x1x3x3xf32> {glow.name = "y"}) {
  // expected-error @+1 {{'glow.max_pool' result shape [1, 1, 3, 3] must equal the shape rule's [1, 1, 2, 2]}}
  %0 = "glow.max_pool"(%x) {kernels = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32>
  return %0 : tensor<1x1x3x3xf32>
}

// -----

// select takes an i1 condition.
func.func @select(%c: tensor<4xf32> {glow.name = "c"}, %a: tensor<4xf32> {glow.name = "a"}) -> (tensor<4xf32> {glow.name = "y"}) {
  // expected-error @+1 {{'glow.select' cond must be i1, got f32}}
  %0 = "glow.select"(%c, %a, %a) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// An integer splat's value is an integer attribute that fits the result's element type.
func.func @splat() -> (tensor<4xi8> {glow.name = "y"}) {
  // expected-error @+1 {{'glow.splat' attribute 'value' 200 must lie in [-128, 127] for i8 results}}
  %0 = "glow.splat"() {value = 200 : i64} : () -> tensor<4xi8>
  return %0 : tensor<4xi8>
}

// -----

// A tensor_view reinterprets its source's elements, so both hold as many.
func.func @view(%a: memref<2x3xf32> {glow.name = "a"}) {
  // expected-error @+1 {{'glow_ir.tensor_view' view [7] must have as many elements as its source [2, 3]}}
  %0 = "glow_ir.tensor_view"(%a) : (memref<2x3xf32>) -> memref<7xf32>
  return
}

// -----

// Element types follow the convention: well-typed functions pass, a comparison must give i1.
func.func @good_ints(%a: tensor<2x3xi64> {glow.name = "a"}, %b: tensor<3x4xi64> {glow.name = "b"}) -> (tensor<2x4xi1> {glow.name = "y"}) {
  %0 = "glow.matmul"(%a, %b) : (tensor<2x3xi64>, tensor<3x4xi64>) -> tensor<2x4xi64>
  %1 = "glow.splat"() {value = -3 : i64} : () -> tensor<2x4xi64>
  %2 = "glow.div"(%0, %1) : (tensor<2x4xi64>, tensor<2x4xi64>) -> tensor<2x4xi64>
  %3 = "glow.cmp_lte"(%2, %1) : (tensor<2x4xi64>, tensor<2x4xi64>) -> tensor<2x4xi1>
  %4 = "glow.not"(%3) : (tensor<2x4xi1>) -> tensor<2x4xi1>
  return %4 : tensor<2x4xi1>
}

func.func @good_floats(%x: tensor<2x3xf16> {glow.name = "x"}) -> (tensor<3xf16> {glow.name = "y"}, tensor<2x3xi32> {glow.name = "z"}) {
  %0 = "glow.erf"(%x) : (tensor<2x3xf16>) -> tensor<2x3xf16>
  %1 = "glow.batched_reduce_add"(%0) {axes = array<i64: 0>} : (tensor<2x3xf16>) -> tensor<3xf16>
  %2 = "glow.convert_to"(%x) : (tensor<2x3xf16>) -> tensor<2x3xi32>
  return %1, %2 : tensor<3xf16>, tensor<2x3xi32>
}

func.func @bad_compare(%a: tensor<4xf32> {glow.name = "a"}, %b: tensor<4xf32> {glow.name = "b"}) -> (tensor<4xf32> {glow.name = "y"}) {
  // expected-error @+1 {{'glow.cmp_lt' result element type f32 must equal the type rule's i1}}
  %0 = "glow.cmp_lt"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
