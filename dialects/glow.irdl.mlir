// The high-level `glow` dialect: a strongly typed dataflow graph on tensors with static shapes.
// Ops print in MLIR's generic form. Attribute names follow Glow's node definitions (NodeGen.cpp).
// Semantic rules IRDL cannot state (result shapes, broadcast rules, attribute ranges) are checked by
// the glow-verify pass (glow_mlir/passes/graph/verify.py).
// Generated from the op definitions (glow_mlir/opdefs) by `python -m glow_mlir.opdefs.irdl`: do not edit.
irdl.dialect @glow {
  // Elementwise add; both operands and the result have one shape.
  irdl.operation @add {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }

  // Elementwise sub; both operands and the result have one shape.
  irdl.operation @sub {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }

  // Elementwise mul; both operands and the result have one shape.
  irdl.operation @mul {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }

  // Elementwise div; both operands and the result have one shape.
  irdl.operation @div {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }

  // Elementwise max; both operands and the result have one shape.
  irdl.operation @max {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }

  // Elementwise min; both operands and the result have one shape.
  irdl.operation @min {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }

  // Elementwise relu.
  irdl.operation @relu {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise sigmoid.
  irdl.operation @sigmoid {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise tanh.
  irdl.operation @tanh {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise rounding to the nearest f16 (ties to even; beyond 65504: inf), kept in the input's type: the value an f16 store and load give.
  irdl.operation @round_f16 {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise exp.
  irdl.operation @exp {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise sqrt.
  irdl.operation @sqrt {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise natural logarithm.
  irdl.operation @log {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise absolute value.
  irdl.operation @abs {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise negation.
  irdl.operation @neg {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise round down.
  irdl.operation @floor {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise round up.
  irdl.operation @ceil {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise round half to even.
  irdl.operation @round {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise error function.
  irdl.operation @erf {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise sine.
  irdl.operation @sin {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise cosine.
  irdl.operation @cos {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise tangent.
  irdl.operation @tan {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise arc sine.
  irdl.operation @asin {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise arc cosine.
  irdl.operation @acos {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise arc tangent.
  irdl.operation @atan {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise hyperbolic sine.
  irdl.operation @sinh {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise hyperbolic cosine.
  irdl.operation @cosh {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise inverse hyperbolic sine.
  irdl.operation @asinh {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise inverse hyperbolic cosine.
  irdl.operation @acosh {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise inverse hyperbolic tangent.
  irdl.operation @atanh {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise `lhs ** rhs` (floats); operands of one shape.
  irdl.operation @pow {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }

  // Elementwise `lhs == rhs` as i1; operands of one shape and element type.
  irdl.operation @cmp_eq {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }

  // Elementwise `lhs != rhs` as i1; operands of one shape and element type.
  irdl.operation @cmp_neq {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }

  // Elementwise `lhs < rhs` as i1; operands of one shape and element type.
  irdl.operation @cmp_lt {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }

  // Elementwise `lhs <= rhs` as i1; operands of one shape and element type.
  irdl.operation @cmp_lte {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }

  // Elementwise `input != input` as i1: true where the float input is NaN.
  irdl.operation @is_nan {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise logical and of i1 tensors of one shape.
  irdl.operation @and {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }

  // Elementwise logical or of i1 tensors of one shape.
  irdl.operation @or {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }

  // Elementwise logical xor of i1 tensors of one shape.
  irdl.operation @xor {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }

  // Elementwise logical not of an i1 tensor.
  irdl.operation @not {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise bitwise and of integer tensors of one shape and element type.
  irdl.operation @bitwise_and {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }

  // Elementwise bitwise or of integer tensors of one shape and element type.
  irdl.operation @bitwise_or {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }

  // Elementwise bitwise xor of integer tensors of one shape and element type.
  irdl.operation @bitwise_xor {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }

  // Elementwise bitwise not (ones' complement) of an integer tensor.
  irdl.operation @bitwise_not {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise `lhs << rhs` of integers of one type; 0 where rhs is negative or >= the width.
  irdl.operation @shift_left {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }

  // Elementwise `lhs >> rhs` (arithmetic for signed, logical for unsigned integers); beyond the width (or negative rhs) 0, or -1 for a negative signed lhs.
  irdl.operation @shift_right {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }

  // result[n, j] = sum_k input[n, k] * weights[k, j] + bias[j].
  irdl.operation @fully_connected {
    %input = irdl.base "!builtin.tensor"
    %weights = irdl.base "!builtin.tensor"
    %bias = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input, weights: %weights, bias: %bias)
    irdl.results(result: %result)
  }

  // 2-D matrix product.
  irdl.operation @matmul {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }

  // result[b] = lhs[b] x rhs[b] for lhs [B, M, K] and rhs [B, K, N].
  irdl.operation @batch_matmul {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }

  // input [M, K] x W [K, N], W given in blocks of 2-, 4- or 8-bit unsigned values (onnxruntime's MatMulNBits): weight [N, blocks, block x bits / 8] bytes, lowest bits first, W[k, n] = (value - zeros[n, b]) x scales[n, b] for k in block b. A backend may read the packed values (the CPU's cpu_matmul_nbits); glow-lower otherwise writes W out of shifts and masks.
  irdl.operation @matmul_nbits {
    %input = irdl.base "!builtin.tensor"
    %weight = irdl.base "!builtin.tensor"
    %scales = irdl.base "!builtin.tensor"
    %zeros = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %bits = irdl.base "#builtin.integer"
    irdl.operands(input: %input, weight: %weight, scales: %scales, zeros: %zeros)
    irdl.results(result: %result)
    irdl.attributes {"bits" = %bits}
  }

  // result[b, ...] = batch[b, ...] + slice[...].
  irdl.operation @batched_add {
    %batch = irdl.base "!builtin.tensor"
    %slice = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(batch: %batch, slice: %slice)
    irdl.results(result: %result)
  }

  // activation(lhs x rhs + bias), bias [N] added to every row: a fully connected layer with its activation, one kernel.
  irdl.operation @fused_matmul {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %bias = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %activation = irdl.base "#builtin.string"
    %activationArgs = irdl.base "#builtin.dense_array"
    irdl.operands(lhs: %lhs, rhs: %rhs, bias: %bias)
    irdl.results(result: %result)
    irdl.attributes {"activation" = %activation, "activationArgs" = %activationArgs}
  }

  // The sum over the dimensions `axes` (sorted, unique), which the result drops.
  irdl.operation @batched_reduce_add {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %axes = irdl.base "#builtin.dense_array"
    irdl.operands(input: %input)
    irdl.results(result: %result)
    irdl.attributes {"axes" = %axes}
  }

  // The maximum over the dimensions `axes` (sorted, unique), which the result drops.
  irdl.operation @batched_reduce_max {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %axes = irdl.base "#builtin.dense_array"
    irdl.operands(input: %input)
    irdl.results(result: %result)
    irdl.attributes {"axes" = %axes}
  }

  // The minimum over the dimensions `axes` (sorted, unique), which the result drops.
  irdl.operation @batched_reduce_min {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %axes = irdl.base "#builtin.dense_array"
    irdl.operands(input: %input)
    irdl.results(result: %result)
    irdl.attributes {"axes" = %axes}
  }

  // The product over the dimensions `axes` (sorted, unique), which the result drops.
  irdl.operation @batched_reduce_prod {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %axes = irdl.base "#builtin.dense_array"
    irdl.operands(input: %input)
    irdl.results(result: %result)
    irdl.attributes {"axes" = %axes}
  }

  // Index (i64) of the first maximum along `axis`; `keepDims` keeps that dimension as 1.
  irdl.operation @arg_max {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %axis = irdl.base "#builtin.integer"
    %keepDims = irdl.base "#builtin.integer"
    irdl.operands(input: %input)
    irdl.results(result: %result)
    irdl.attributes {"axis" = %axis, "keepDims" = %keepDims}
  }

  // Index (i64) of the first minimum along `axis`; `keepDims` keeps that dimension as 1.
  irdl.operation @arg_min {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %axis = irdl.base "#builtin.integer"
    %keepDims = irdl.base "#builtin.integer"
    irdl.operands(input: %input)
    irdl.results(result: %result)
    irdl.attributes {"axis" = %axis, "keepDims" = %keepDims}
  }

  // Softmax over the last dimension.
  irdl.operation @softmax {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // The determinant of each square matrix in the last two dims (ONNX Det): [*, N, N] -> [*].
  irdl.operation @det {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // 2-D convolution, NCHW input, OIHW filter (I = C / group); pads are [top, left, bottom, right].
  irdl.operation @convolution {
    %input = irdl.base "!builtin.tensor"
    %filter = irdl.base "!builtin.tensor"
    %bias = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %kernels = irdl.base "#builtin.dense_array"
    %strides = irdl.base "#builtin.dense_array"
    %pads = irdl.base "#builtin.dense_array"
    %group = irdl.base "#builtin.integer"
    %dilation = irdl.base "#builtin.dense_array"
    irdl.operands(input: %input, filter: %filter, bias: %bias)
    irdl.results(result: %result)
    irdl.attributes {"kernels" = %kernels, "strides" = %strides, "pads" = %pads, "group" = %group, "dilation" = %dilation}
  }

  // 2-D max pooling, NCHW; padding never wins the max.
  irdl.operation @max_pool {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %kernels = irdl.base "#builtin.dense_array"
    %strides = irdl.base "#builtin.dense_array"
    %pads = irdl.base "#builtin.dense_array"
    irdl.operands(input: %input)
    irdl.results(result: %result)
    irdl.attributes {"kernels" = %kernels, "strides" = %strides, "pads" = %pads}
  }

  // 2-D average pooling, NCHW.
  irdl.operation @avg_pool {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %kernels = irdl.base "#builtin.dense_array"
    %strides = irdl.base "#builtin.dense_array"
    %pads = irdl.base "#builtin.dense_array"
    %countIncludePads = irdl.base "#builtin.integer"
    irdl.operands(input: %input)
    irdl.results(result: %result)
    irdl.attributes {"kernels" = %kernels, "strides" = %strides, "pads" = %pads, "countIncludePads" = %countIncludePads}
  }

  // Inference batch normalization along dimension `channelIdx`.
  irdl.operation @batch_normalization {
    %input = irdl.base "!builtin.tensor"
    %scale = irdl.base "!builtin.tensor"
    %bias = irdl.base "!builtin.tensor"
    %mean = irdl.base "!builtin.tensor"
    %var = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %epsilon = irdl.base "#builtin.float"
    %momentum = irdl.base "#builtin.float"
    %channelIdx = irdl.base "#builtin.integer"
    irdl.operands(input: %input, scale: %scale, bias: %bias, mean: %mean, var: %var)
    irdl.results(result: %result)
    irdl.attributes {"epsilon" = %epsilon, "momentum" = %momentum, "channelIdx" = %channelIdx}
  }

  // 2-D transposed convolution, NCHW input, filter [C, O / group, KH, KW] (ONNX's layout); pads [top, left, bottom, right] crop the full output.
  irdl.operation @conv_transpose {
    %input = irdl.base "!builtin.tensor"
    %filter = irdl.base "!builtin.tensor"
    %bias = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %kernels = irdl.base "#builtin.dense_array"
    %strides = irdl.base "#builtin.dense_array"
    %pads = irdl.base "#builtin.dense_array"
    %group = irdl.base "#builtin.integer"
    %dilation = irdl.base "#builtin.dense_array"
    irdl.operands(input: %input, filter: %filter, bias: %bias)
    irdl.results(result: %result)
    irdl.attributes {"kernels" = %kernels, "strides" = %strides, "pads" = %pads, "group" = %group, "dilation" = %dilation}
  }

  // activation(convolution(input, filter, bias)), one kernel (Glow's fused activation): attributes as glow.convolution.
  irdl.operation @fused_convolution {
    %input = irdl.base "!builtin.tensor"
    %filter = irdl.base "!builtin.tensor"
    %bias = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %kernels = irdl.base "#builtin.dense_array"
    %strides = irdl.base "#builtin.dense_array"
    %pads = irdl.base "#builtin.dense_array"
    %group = irdl.base "#builtin.integer"
    %dilation = irdl.base "#builtin.dense_array"
    %activation = irdl.base "#builtin.string"
    %activationArgs = irdl.base "#builtin.dense_array"
    irdl.operands(input: %input, filter: %filter, bias: %bias)
    irdl.results(result: %result)
    irdl.attributes {"kernels" = %kernels, "strides" = %strides, "pads" = %pads, "group" = %group, "dilation" = %dilation, "activation" = %activation, "activationArgs" = %activationArgs}
  }

  // ONNX RoiAlign: for each box [x0, y0, x1, y1] of `rois` (scaled by `spatial_scale`, less half a pixel with `half_pixel`) in image `batch_indices` of the NCHW input, an `output_size` grid of cells, each the average (mode avg) or max (mode max) of bilinear samples, `sampling_ratio` per axis or ceil(box / output) when 0.
  irdl.operation @roi_align {
    %input = irdl.base "!builtin.tensor"
    %rois = irdl.base "!builtin.tensor"
    %batch_indices = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %output_size = irdl.base "#builtin.dense_array"
    %sampling_ratio = irdl.base "#builtin.integer"
    %spatial_scale = irdl.base "#builtin.float"
    %half_pixel = irdl.base "#builtin.integer"
    %mode = irdl.base "#builtin.string"
    irdl.operands(input: %input, rois: %rois, batch_indices: %batch_indices)
    irdl.results(result: %result)
    irdl.attributes {"output_size" = %output_size, "sampling_ratio" = %sampling_ratio, "spatial_scale" = %spatial_scale, "half_pixel" = %half_pixel, "mode" = %mode}
  }

  // Uniform numbers in [low, high) of the stated shape and float type: a new draw on every run of the compiled model (Philox-4x32-10 of (seed, element index, run)).
  irdl.operation @random_uniform {
    %result = irdl.base "!builtin.tensor"
    %low = irdl.base "#builtin.float"
    %high = irdl.base "#builtin.float"
    %seed = irdl.base "#builtin.integer"
    %seeded = irdl.base "#builtin.integer"
    irdl.results(result: %result)
    irdl.attributes {"low" = %low, "high" = %high, "seed" = %seed, "seeded" = %seeded}
  }

  // Normal numbers N(mean, scale^2) of the stated shape and float type: a new draw on every run of the compiled model (Philox-4x32-10 of (seed, element index, run)).
  irdl.operation @random_normal {
    %result = irdl.base "!builtin.tensor"
    %mean = irdl.base "#builtin.float"
    %scale = irdl.base "#builtin.float"
    %seed = irdl.base "#builtin.integer"
    %seeded = irdl.base "#builtin.integer"
    irdl.results(result: %result)
    irdl.attributes {"mean" = %mean, "scale" = %scale, "seed" = %seed, "seeded" = %seeded}
  }

  // A constant tensor (Glow's Constant); `value` is a dense elements attribute.
  irdl.operation @constant {
    %result = irdl.base "!builtin.tensor"
    %value = irdl.any
    irdl.results(result: %result)
    irdl.attributes {"value" = %value}
  }

  // A tensor with every element equal to `value` (an f32 attribute for floats, an integer one for integers and i1).
  irdl.operation @splat {
    %result = irdl.base "!builtin.tensor"
    %value = irdl.any
    irdl.results(result: %result)
    irdl.attributes {"value" = %value}
  }

  // Same elements in row-major order, new shape `dims`.
  irdl.operation @reshape {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %dims = irdl.base "#builtin.dense_array"
    irdl.operands(input: %input)
    irdl.results(result: %result)
    irdl.attributes {"dims" = %dims}
  }

  // result.dims[i] = input.dims[shuffle[i]].
  irdl.operation @transpose {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %shuffle = irdl.base "#builtin.dense_array"
    irdl.operands(input: %input)
    irdl.results(result: %result)
    irdl.attributes {"shuffle" = %shuffle}
  }

  // Concatenation along `dim`. Inputs come in up to 8 groups of equal-typed inputs (IRDL variadics are homogeneous); operandSegmentSizes gives each group's length.
  irdl.operation @concat {
    %in0 = irdl.base "!builtin.tensor"
    %in1 = irdl.base "!builtin.tensor"
    %in2 = irdl.base "!builtin.tensor"
    %in3 = irdl.base "!builtin.tensor"
    %in4 = irdl.base "!builtin.tensor"
    %in5 = irdl.base "!builtin.tensor"
    %in6 = irdl.base "!builtin.tensor"
    %in7 = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %dim = irdl.base "#builtin.integer"
    irdl.operands(in0: variadic %in0, in1: variadic %in1, in2: variadic %in2, in3: variadic %in3, in4: variadic %in4, in5: variadic %in5, in6: variadic %in6, in7: variadic %in7)
    irdl.results(result: %result)
    irdl.attributes {"dim" = %dim}
  }

  // The block of the result's shape that starts at `start`.
  irdl.operation @slice {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %start = irdl.base "#builtin.dense_array"
    irdl.operands(input: %input)
    irdl.results(result: %result)
    irdl.attributes {"start" = %start}
  }

  // `big` with `small` written into it at offset `start`.
  irdl.operation @insert_tensor {
    %big = irdl.base "!builtin.tensor"
    %small = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %start = irdl.base "#builtin.dense_array"
    irdl.operands(big: %big, small: %small)
    irdl.results(result: %result)
    irdl.attributes {"start" = %start}
  }

  // Numpy broadcast of `input` to the result shape, its dims aligned at `axis`.
  irdl.operation @broadcast {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %axis = irdl.base "#builtin.integer"
    irdl.operands(input: %input)
    irdl.results(result: %result)
    irdl.attributes {"axis" = %axis}
  }

  // numpy.take(data, indices, axis): result shape data[:axis] + indices + data[axis+1:]; negative indices count from the end.
  irdl.operation @gather {
    %data = irdl.base "!builtin.tensor"
    %indices = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %axis = irdl.base "#builtin.integer"
    irdl.operands(data: %data, indices: %indices)
    irdl.results(result: %result)
    irdl.attributes {"axis" = %axis}
  }

  // numpy.take_along_axis(data, indices, axis) (ONNX GatherElements): result[p] = data[p with p[axis] = indices[p]], of the indices' shape; negative indices count from the end.
  irdl.operation @gather_elements {
    %data = irdl.base "!builtin.tensor"
    %indices = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %axis = irdl.base "#builtin.integer"
    irdl.operands(data: %data, indices: %indices)
    irdl.results(result: %result)
    irdl.attributes {"axis" = %axis}
  }

  // ONNX GatherND: each row of `indices` (its last dim k) picks the slice data[b..., i0, ..., ik-1] within its batch (the first `batch_dims` dims); the result is indices[:-1] + data[batch_dims+k:].
  irdl.operation @gather_nd {
    %data = irdl.base "!builtin.tensor"
    %indices = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %batch_dims = irdl.base "#builtin.integer"
    irdl.operands(data: %data, indices: %indices)
    irdl.results(result: %result)
    irdl.attributes {"batch_dims" = %batch_dims}
  }

  // ONNX ScatterElements: data with updates[p] written at p with p[axis] = indices[p]. `reduction` (none, add, mul, max, min) combines an update with the element it lands on; updates apply in row-major order, so with none the last of duplicate indices wins. Negative indices count from the end.
  irdl.operation @scatter_elements {
    %data = irdl.base "!builtin.tensor"
    %indices = irdl.base "!builtin.tensor"
    %updates = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %axis = irdl.base "#builtin.integer"
    %reduction = irdl.base "#builtin.string"
    irdl.operands(data: %data, indices: %indices, updates: %updates)
    irdl.results(result: %result)
    irdl.attributes {"axis" = %axis, "reduction" = %reduction}
  }

  // ONNX ScatterND: data with each slice updates[p] written at data[indices[p]] (indices[..., k] address data's first k dims). `reduction` (none, add, mul, max, min) combines an update with the element it lands on; updates apply in row-major order, so with none the last of duplicate indices wins. Negative indices count from the end.
  irdl.operation @scatter_nd {
    %data = irdl.base "!builtin.tensor"
    %indices = irdl.base "!builtin.tensor"
    %updates = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %reduction = irdl.base "#builtin.string"
    irdl.operands(data: %data, indices: %indices, updates: %updates)
    irdl.results(result: %result)
    irdl.attributes {"reduction" = %reduction}
  }

  // The i64 indices of the `k` largest (`largest`) or smallest elements along `axis`, best first; equal elements rank by lower index, NaN above every number (numpy's sort order). The values are a gather_elements of them.
  irdl.operation @top_k {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %axis = irdl.base "#builtin.integer"
    %k = irdl.base "#builtin.integer"
    %largest = irdl.base "#builtin.integer"
    irdl.operands(input: %input)
    irdl.results(result: %result)
    irdl.attributes {"axis" = %axis, "k" = %k, "largest" = %largest}
  }

  // Running sums along `axis` (ONNX CumSum): element i is the sum of elements 0..i, or i..n-1 with `reverse`; `exclusive` leaves element i out of its own sum. f32, f64 or integers: the sums are sequential, and narrower floats would round at each step (the importer widens them).
  irdl.operation @cumsum {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %axis = irdl.base "#builtin.integer"
    %exclusive = irdl.base "#builtin.integer"
    %reverse = irdl.base "#builtin.integer"
    irdl.operands(input: %input)
    irdl.results(result: %result)
    irdl.attributes {"axis" = %axis, "exclusive" = %exclusive, "reverse" = %reverse}
  }

  // Elementwise conversion to the result's element type (Glow's ConvertTo): float->int truncates toward zero, x->i1 is x != 0, i1->x is 0 or 1.
  irdl.operation @convert_to {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }

  // Elementwise `cond ? lhs : rhs`; cond is i1; all three operands and the result have one shape.
  irdl.operation @select {
    %cond = irdl.base "!builtin.tensor"
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(cond: %cond, lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }

  // CPU backend: the fused convolution in NHWC, filter [KH, KW, C / group, O], bias [O]; pads [top, left, bottom, right].
  irdl.operation @cpu_conv_nhwc {
    %input = irdl.base "!builtin.tensor"
    %filter = irdl.base "!builtin.tensor"
    %bias = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %kernels = irdl.base "#builtin.dense_array"
    %strides = irdl.base "#builtin.dense_array"
    %pads = irdl.base "#builtin.dense_array"
    %group = irdl.base "#builtin.integer"
    %dilation = irdl.base "#builtin.dense_array"
    %activation = irdl.base "#builtin.string"
    %activationArgs = irdl.base "#builtin.dense_array"
    irdl.operands(input: %input, filter: %filter, bias: %bias)
    irdl.results(result: %result)
    irdl.attributes {"kernels" = %kernels, "strides" = %strides, "pads" = %pads, "group" = %group, "dilation" = %dilation, "activation" = %activation, "activationArgs" = %activationArgs}
  }

  // CPU backend: glow.max_pool in NHWC.
  irdl.operation @cpu_max_pool_nhwc {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %kernels = irdl.base "#builtin.dense_array"
    %strides = irdl.base "#builtin.dense_array"
    %pads = irdl.base "#builtin.dense_array"
    irdl.operands(input: %input)
    irdl.results(result: %result)
    irdl.attributes {"kernels" = %kernels, "strides" = %strides, "pads" = %pads}
  }

  // CPU backend: glow.avg_pool in NHWC.
  irdl.operation @cpu_avg_pool_nhwc {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %kernels = irdl.base "#builtin.dense_array"
    %strides = irdl.base "#builtin.dense_array"
    %pads = irdl.base "#builtin.dense_array"
    %countIncludePads = irdl.base "#builtin.integer"
    irdl.operands(input: %input)
    irdl.results(result: %result)
    irdl.attributes {"kernels" = %kernels, "strides" = %strides, "pads" = %pads, "countIncludePads" = %countIncludePads}
  }

  // CPU backend: glow.roi_align of NHWC input into [R, OH, OW, C].
  irdl.operation @cpu_roi_align_nhwc {
    %input = irdl.base "!builtin.tensor"
    %rois = irdl.base "!builtin.tensor"
    %batch_indices = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %output_size = irdl.base "#builtin.dense_array"
    %sampling_ratio = irdl.base "#builtin.integer"
    %spatial_scale = irdl.base "#builtin.float"
    %half_pixel = irdl.base "#builtin.integer"
    %mode = irdl.base "#builtin.string"
    irdl.operands(input: %input, rois: %rois, batch_indices: %batch_indices)
    irdl.results(result: %result)
    irdl.attributes {"output_size" = %output_size, "sampling_ratio" = %sampling_ratio, "spatial_scale" = %spatial_scale, "half_pixel" = %half_pixel, "mode" = %mode}
  }

  // CPU backend: int8 or uint8 activation [M, K] x constant int8 weights packed [ceil(N/16), ceil(K/4), 64] (one more row of i32 column offsets for wider weights), requantized to f32: f32(sum (input + offset) * W - correction) * multiplier + bias, offset 128 for int8 and 0 for uint8, then optionally relu and QuantizeLinear to uint8 (backends/cpu/int8_ops.py).
  irdl.operation @cpu_int8_matmul {
    %input = irdl.base "!builtin.tensor"
    %weights = irdl.base "!builtin.tensor"
    %correction = irdl.base "!builtin.tensor"
    %multiplier = irdl.base "!builtin.tensor"
    %bias = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %relu = irdl.base "#builtin.integer"
    %clip = irdl.base "#builtin.float"
    %output_scale = irdl.base "#builtin.float"
    %output_zero = irdl.base "#builtin.integer"
    irdl.operands(input: %input, weights: %weights, correction: %correction, multiplier: %multiplier, bias: %bias)
    irdl.results(result: %result)
    irdl.attributes {"relu" = %relu, "clip" = %clip, "output_scale" = %output_scale, "output_zero" = %output_zero}
  }

  // CPU backend: int8 or uint8 NHWC input, already padded (with its zero point), convolved with a constant int8 filter packed [ceil(O/16), KH * KW * ceil(C/4), 64] (conv_weights, then pack_weights), its taps `dilation` apart, requantized to f32 as cpu_int8_matmul: [N, OH, OW, O] (backends/cpu/int8_ops.py).
  irdl.operation @cpu_int8_conv_nhwc {
    %input = irdl.base "!builtin.tensor"
    %weights = irdl.base "!builtin.tensor"
    %correction = irdl.base "!builtin.tensor"
    %multiplier = irdl.base "!builtin.tensor"
    %bias = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %kernels = irdl.base "#builtin.dense_array"
    %strides = irdl.base "#builtin.dense_array"
    %dilation = irdl.base "#builtin.dense_array"
    %relu = irdl.base "#builtin.integer"
    %clip = irdl.base "#builtin.float"
    %output_scale = irdl.base "#builtin.float"
    %output_zero = irdl.base "#builtin.integer"
    irdl.operands(input: %input, weights: %weights, correction: %correction, multiplier: %multiplier, bias: %bias)
    irdl.results(result: %result)
    irdl.attributes {"kernels" = %kernels, "strides" = %strides, "dilation" = %dilation, "relu" = %relu, "clip" = %clip, "output_scale" = %output_scale, "output_zero" = %output_zero}
  }

  // CPU backend: cpu_int8_conv_nhwc whose f32 result (quantized to uint8 and back with product_scale != 0) gets `addend` (the result's shape: a residual block's shortcut; f32, or ui8 dequantized with addend_scale and addend_zero) added before the epilogue's relu and quantization (backends/cpu/int8_ops.py).
  irdl.operation @cpu_int8_conv_nhwc_add {
    %input = irdl.base "!builtin.tensor"
    %weights = irdl.base "!builtin.tensor"
    %correction = irdl.base "!builtin.tensor"
    %multiplier = irdl.base "!builtin.tensor"
    %bias = irdl.base "!builtin.tensor"
    %addend = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %kernels = irdl.base "#builtin.dense_array"
    %strides = irdl.base "#builtin.dense_array"
    %dilation = irdl.base "#builtin.dense_array"
    %relu = irdl.base "#builtin.integer"
    %clip = irdl.base "#builtin.float"
    %output_scale = irdl.base "#builtin.float"
    %output_zero = irdl.base "#builtin.integer"
    %product_scale = irdl.base "#builtin.float"
    %product_zero = irdl.base "#builtin.integer"
    %addend_scale = irdl.base "#builtin.float"
    %addend_zero = irdl.base "#builtin.integer"
    irdl.operands(input: %input, weights: %weights, correction: %correction, multiplier: %multiplier, bias: %bias, addend: %addend)
    irdl.results(result: %result)
    irdl.attributes {"kernels" = %kernels, "strides" = %strides, "dilation" = %dilation, "relu" = %relu, "clip" = %clip, "output_scale" = %output_scale, "output_zero" = %output_zero, "product_scale" = %product_scale, "product_zero" = %product_zero, "addend_scale" = %addend_scale, "addend_zero" = %addend_zero}
  }

  // CPU backend: uint8 QuantizeLinear of an f32 tensor, clamp(round_half_even(input / output_scale) + output_zero, 0, 255), in one pass (backends/cpu/int8_ops.py).
  irdl.operation @cpu_quantize_u8 {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %output_scale = irdl.base "#builtin.float"
    %output_zero = irdl.base "#builtin.float"
    irdl.operands(input: %input)
    irdl.results(result: %result)
    irdl.attributes {"output_scale" = %output_scale, "output_zero" = %output_zero}
  }

  // CPU backend: cpu_int8_matmul whose activation zero point and scale are run-time rank-0 values (dynamic quantization): f32(sum (input + offset) * W - (offset + zero) * colsum) * float32(scale * multiplier) + bias (backends/cpu/int8_ops.py).
  irdl.operation @cpu_int8_matmul_dynamic {
    %input = irdl.base "!builtin.tensor"
    %weights = irdl.base "!builtin.tensor"
    %colsum = irdl.base "!builtin.tensor"
    %multiplier = irdl.base "!builtin.tensor"
    %bias = irdl.base "!builtin.tensor"
    %zero = irdl.base "!builtin.tensor"
    %scale = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %relu = irdl.base "#builtin.integer"
    %clip = irdl.base "#builtin.float"
    %output_scale = irdl.base "#builtin.float"
    %output_zero = irdl.base "#builtin.integer"
    irdl.operands(input: %input, weights: %weights, colsum: %colsum, multiplier: %multiplier, bias: %bias, zero: %zero, scale: %scale)
    irdl.results(result: %result)
    irdl.attributes {"relu" = %relu, "clip" = %clip, "output_scale" = %output_scale, "output_zero" = %output_zero}
  }

  // CPU backend: max pooling of a uint8 NHWC tensor, padded windows clipped to the input (backends/cpu/int8_ops.py).
  irdl.operation @cpu_max_pool_u8_nhwc {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %kernels = irdl.base "#builtin.dense_array"
    %strides = irdl.base "#builtin.dense_array"
    %pads = irdl.base "#builtin.dense_array"
    irdl.operands(input: %input)
    irdl.results(result: %result)
    irdl.attributes {"kernels" = %kernels, "strides" = %strides, "pads" = %pads}
  }

  // CPU backend: depthwise convolution of an int8 or uint8 NHWC input padded with its zero point `zero` (pads [top, left, bottom, right]) by a constant int8 (or int16) filter [KH, KW, C], requantized to f32: f32(sum input * W - correction) * multiplier + bias per channel, correction = zero * the channel's filter sum, then the epilogue of cpu_int8_matmul (backends/cpu/int8_ops.py).
  irdl.operation @cpu_int8_depthwise_nhwc {
    %input = irdl.base "!builtin.tensor"
    %weights = irdl.base "!builtin.tensor"
    %correction = irdl.base "!builtin.tensor"
    %multiplier = irdl.base "!builtin.tensor"
    %bias = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %kernels = irdl.base "#builtin.dense_array"
    %strides = irdl.base "#builtin.dense_array"
    %pads = irdl.base "#builtin.dense_array"
    %zero = irdl.base "#builtin.integer"
    %relu = irdl.base "#builtin.integer"
    %clip = irdl.base "#builtin.float"
    %output_scale = irdl.base "#builtin.float"
    %output_zero = irdl.base "#builtin.integer"
    irdl.operands(input: %input, weights: %weights, correction: %correction, multiplier: %multiplier, bias: %bias)
    irdl.results(result: %result)
    irdl.attributes {"kernels" = %kernels, "strides" = %strides, "pads" = %pads, "zero" = %zero, "relu" = %relu, "clip" = %clip, "output_scale" = %output_scale, "output_zero" = %output_zero}
  }

  // CPU backend: glow.matmul_nbits on weights packed for its kernel: packed [ceil(N/W), bytes, W], scales and zeros [ceil(N/W), blocks, W] (or one zero point, rank 0) for W a multiple of 16 (backends/cpu/nbits.py); `columns` is N; bias [N] and the activation are fused (glow-fuse-activations).
  irdl.operation @cpu_matmul_nbits {
    %input = irdl.base "!builtin.tensor"
    %packed = irdl.base "!builtin.tensor"
    %scales = irdl.base "!builtin.tensor"
    %zeros = irdl.base "!builtin.tensor"
    %bias = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %bits = irdl.base "#builtin.integer"
    %columns = irdl.base "#builtin.integer"
    %activation = irdl.base "#builtin.string"
    %activationArgs = irdl.base "#builtin.dense_array"
    irdl.operands(input: %input, packed: %packed, scales: %scales, zeros: %zeros, bias: %bias)
    irdl.results(result: %result)
    irdl.attributes {"bits" = %bits, "columns" = %columns, "activation" = %activation, "activationArgs" = %activationArgs}
  }

  // A counted loop whose body is the function `body`: carried values, scan inputs sliced per iteration, invariants; results are the final carried values and the stacked scan outputs.
  irdl.operation @loop {
    %in0 = irdl.base "!builtin.tensor"
    %in1 = irdl.base "!builtin.tensor"
    %in2 = irdl.base "!builtin.tensor"
    %in3 = irdl.base "!builtin.tensor"
    %in4 = irdl.base "!builtin.tensor"
    %in5 = irdl.base "!builtin.tensor"
    %in6 = irdl.base "!builtin.tensor"
    %in7 = irdl.base "!builtin.tensor"
    %in8 = irdl.base "!builtin.tensor"
    %in9 = irdl.base "!builtin.tensor"
    %in10 = irdl.base "!builtin.tensor"
    %in11 = irdl.base "!builtin.tensor"
    %in12 = irdl.base "!builtin.tensor"
    %in13 = irdl.base "!builtin.tensor"
    %in14 = irdl.base "!builtin.tensor"
    %in15 = irdl.base "!builtin.tensor"
    %out0 = irdl.base "!builtin.tensor"
    %out1 = irdl.base "!builtin.tensor"
    %out2 = irdl.base "!builtin.tensor"
    %out3 = irdl.base "!builtin.tensor"
    %out4 = irdl.base "!builtin.tensor"
    %out5 = irdl.base "!builtin.tensor"
    %out6 = irdl.base "!builtin.tensor"
    %out7 = irdl.base "!builtin.tensor"
    %out8 = irdl.base "!builtin.tensor"
    %out9 = irdl.base "!builtin.tensor"
    %out10 = irdl.base "!builtin.tensor"
    %out11 = irdl.base "!builtin.tensor"
    %out12 = irdl.base "!builtin.tensor"
    %out13 = irdl.base "!builtin.tensor"
    %out14 = irdl.base "!builtin.tensor"
    %out15 = irdl.base "!builtin.tensor"
    %body = irdl.base "#builtin.symbol_ref"
    %trip_count = irdl.base "#builtin.integer"
    %num_carried = irdl.base "#builtin.integer"
    %num_scan_inputs = irdl.base "#builtin.integer"
    %condition = irdl.base "#builtin.integer"
    %scan_input_axes = irdl.base "#builtin.dense_array"
    %scan_input_directions = irdl.base "#builtin.dense_array"
    %scan_output_axes = irdl.base "#builtin.dense_array"
    %scan_output_directions = irdl.base "#builtin.dense_array"
    irdl.operands(in0: variadic %in0, in1: variadic %in1, in2: variadic %in2, in3: variadic %in3, in4: variadic %in4, in5: variadic %in5, in6: variadic %in6, in7: variadic %in7, in8: variadic %in8, in9: variadic %in9, in10: variadic %in10, in11: variadic %in11, in12: variadic %in12, in13: variadic %in13, in14: variadic %in14, in15: variadic %in15)
    irdl.results(out0: variadic %out0, out1: variadic %out1, out2: variadic %out2, out3: variadic %out3, out4: variadic %out4, out5: variadic %out5, out6: variadic %out6, out7: variadic %out7, out8: variadic %out8, out9: variadic %out9, out10: variadic %out10, out11: variadic %out11, out12: variadic %out12, out13: variadic %out13, out14: variadic %out14, out15: variadic %out15)
    irdl.attributes {"body" = %body, "trip_count" = %trip_count, "num_carried" = %num_carried, "num_scan_inputs" = %num_scan_inputs, "condition" = %condition, "scan_input_axes" = %scan_input_axes, "scan_input_directions" = %scan_input_directions, "scan_output_axes" = %scan_output_axes, "scan_output_directions" = %scan_output_directions}
  }
}
