// The low-level, address-only `glow_ir` dialect (Glow's IR): instructions read and write memref buffers and
// return nothing. The `roles` attribute of each instruction is fixed by this definition (irdl.is) and names
// each operand's role, as Glow's @in/@out/@inout.
// Generated from the op definitions (glow_mlir/opdefs) by `python -m glow_mlir.opdefs.irdl`: do not edit.
irdl.dialect @glow_ir {
  // dest = lhs add rhs, elementwise, one shape.
  irdl.operation @element_add {
    %dest = irdl.base "!builtin.memref"
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in", "in"]
    irdl.operands(dest: %dest, lhs: %lhs, rhs: %rhs)
    irdl.attributes {"roles" = %roles}
  }

  // dest = lhs sub rhs, elementwise, one shape.
  irdl.operation @element_sub {
    %dest = irdl.base "!builtin.memref"
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in", "in"]
    irdl.operands(dest: %dest, lhs: %lhs, rhs: %rhs)
    irdl.attributes {"roles" = %roles}
  }

  // dest = lhs mul rhs, elementwise, one shape.
  irdl.operation @element_mul {
    %dest = irdl.base "!builtin.memref"
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in", "in"]
    irdl.operands(dest: %dest, lhs: %lhs, rhs: %rhs)
    irdl.attributes {"roles" = %roles}
  }

  // dest = lhs div rhs, elementwise, one shape.
  irdl.operation @element_div {
    %dest = irdl.base "!builtin.memref"
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in", "in"]
    irdl.operands(dest: %dest, lhs: %lhs, rhs: %rhs)
    irdl.attributes {"roles" = %roles}
  }

  // dest = lhs max rhs, elementwise, one shape.
  irdl.operation @element_max {
    %dest = irdl.base "!builtin.memref"
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in", "in"]
    irdl.operands(dest: %dest, lhs: %lhs, rhs: %rhs)
    irdl.attributes {"roles" = %roles}
  }

  // dest = lhs min rhs, elementwise, one shape.
  irdl.operation @element_min {
    %dest = irdl.base "!builtin.memref"
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in", "in"]
    irdl.operands(dest: %dest, lhs: %lhs, rhs: %rhs)
    irdl.attributes {"roles" = %roles}
  }

  // dest = sigmoid(src), elementwise.
  irdl.operation @sigmoid {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = tanh(src), elementwise.
  irdl.operation @tanh {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = round_f16(src), elementwise.
  irdl.operation @element_round_f16 {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = exp(src), elementwise.
  irdl.operation @element_exp {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = sqrt(src), elementwise.
  irdl.operation @element_sqrt {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = log(src), elementwise.
  irdl.operation @element_log {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = abs(src), elementwise.
  irdl.operation @element_abs {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = neg(src), elementwise.
  irdl.operation @element_neg {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = floor(src), elementwise.
  irdl.operation @element_floor {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = ceil(src), elementwise.
  irdl.operation @element_ceil {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = round(src), elementwise.
  irdl.operation @element_round {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = erf(src), elementwise.
  irdl.operation @element_erf {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = sin(src), elementwise.
  irdl.operation @element_sin {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = cos(src), elementwise.
  irdl.operation @element_cos {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = tan(src), elementwise.
  irdl.operation @element_tan {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = asin(src), elementwise.
  irdl.operation @element_asin {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = acos(src), elementwise.
  irdl.operation @element_acos {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = atan(src), elementwise.
  irdl.operation @element_atan {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = sinh(src), elementwise.
  irdl.operation @element_sinh {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = cosh(src), elementwise.
  irdl.operation @element_cosh {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = asinh(src), elementwise.
  irdl.operation @element_asinh {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = acosh(src), elementwise.
  irdl.operation @element_acosh {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = atanh(src), elementwise.
  irdl.operation @element_atanh {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = lhs pow rhs, elementwise, one shape.
  irdl.operation @element_pow {
    %dest = irdl.base "!builtin.memref"
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in", "in"]
    irdl.operands(dest: %dest, lhs: %lhs, rhs: %rhs)
    irdl.attributes {"roles" = %roles}
  }

  // dest = lhs cmp_eq rhs, elementwise, one shape.
  irdl.operation @element_cmp_eq {
    %dest = irdl.base "!builtin.memref"
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in", "in"]
    irdl.operands(dest: %dest, lhs: %lhs, rhs: %rhs)
    irdl.attributes {"roles" = %roles}
  }

  // dest = lhs cmp_neq rhs, elementwise, one shape.
  irdl.operation @element_cmp_neq {
    %dest = irdl.base "!builtin.memref"
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in", "in"]
    irdl.operands(dest: %dest, lhs: %lhs, rhs: %rhs)
    irdl.attributes {"roles" = %roles}
  }

  // dest = lhs cmp_lt rhs, elementwise, one shape.
  irdl.operation @element_cmp_lt {
    %dest = irdl.base "!builtin.memref"
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in", "in"]
    irdl.operands(dest: %dest, lhs: %lhs, rhs: %rhs)
    irdl.attributes {"roles" = %roles}
  }

  // dest = lhs cmp_lte rhs, elementwise, one shape.
  irdl.operation @element_cmp_lte {
    %dest = irdl.base "!builtin.memref"
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in", "in"]
    irdl.operands(dest: %dest, lhs: %lhs, rhs: %rhs)
    irdl.attributes {"roles" = %roles}
  }

  // dest = is_nan(src), elementwise.
  irdl.operation @element_is_nan {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = lhs and rhs, elementwise, one shape.
  irdl.operation @element_and {
    %dest = irdl.base "!builtin.memref"
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in", "in"]
    irdl.operands(dest: %dest, lhs: %lhs, rhs: %rhs)
    irdl.attributes {"roles" = %roles}
  }

  // dest = lhs or rhs, elementwise, one shape.
  irdl.operation @element_or {
    %dest = irdl.base "!builtin.memref"
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in", "in"]
    irdl.operands(dest: %dest, lhs: %lhs, rhs: %rhs)
    irdl.attributes {"roles" = %roles}
  }

  // dest = lhs xor rhs, elementwise, one shape.
  irdl.operation @element_xor {
    %dest = irdl.base "!builtin.memref"
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in", "in"]
    irdl.operands(dest: %dest, lhs: %lhs, rhs: %rhs)
    irdl.attributes {"roles" = %roles}
  }

  // dest = not(src), elementwise.
  irdl.operation @element_not {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = lhs bitwise_and rhs, elementwise, one shape.
  irdl.operation @element_bitwise_and {
    %dest = irdl.base "!builtin.memref"
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in", "in"]
    irdl.operands(dest: %dest, lhs: %lhs, rhs: %rhs)
    irdl.attributes {"roles" = %roles}
  }

  // dest = lhs bitwise_or rhs, elementwise, one shape.
  irdl.operation @element_bitwise_or {
    %dest = irdl.base "!builtin.memref"
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in", "in"]
    irdl.operands(dest: %dest, lhs: %lhs, rhs: %rhs)
    irdl.attributes {"roles" = %roles}
  }

  // dest = lhs bitwise_xor rhs, elementwise, one shape.
  irdl.operation @element_bitwise_xor {
    %dest = irdl.base "!builtin.memref"
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in", "in"]
    irdl.operands(dest: %dest, lhs: %lhs, rhs: %rhs)
    irdl.attributes {"roles" = %roles}
  }

  // dest = bitwise_not(src), elementwise.
  irdl.operation @element_bitwise_not {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = lhs shift_left rhs, elementwise, one shape.
  irdl.operation @element_shift_left {
    %dest = irdl.base "!builtin.memref"
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in", "in"]
    irdl.operands(dest: %dest, lhs: %lhs, rhs: %rhs)
    irdl.attributes {"roles" = %roles}
  }

  // dest = lhs shift_right rhs, elementwise, one shape.
  irdl.operation @element_shift_right {
    %dest = irdl.base "!builtin.memref"
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in", "in"]
    irdl.operands(dest: %dest, lhs: %lhs, rhs: %rhs)
    irdl.attributes {"roles" = %roles}
  }

  // dest = lhs x rhs (2-D).
  irdl.operation @matmul {
    %dest = irdl.base "!builtin.memref"
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in", "in"]
    irdl.operands(dest: %dest, lhs: %lhs, rhs: %rhs)
    irdl.attributes {"roles" = %roles}
  }

  // dest[b] = lhs[b] x rhs[b] (3-D).
  irdl.operation @batch_matmul {
    %dest = irdl.base "!builtin.memref"
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in", "in"]
    irdl.operands(dest: %dest, lhs: %lhs, rhs: %rhs)
    irdl.attributes {"roles" = %roles}
  }

  // dest[b, ...] = batch[b, ...] + slice[...].
  irdl.operation @batched_add {
    %dest = irdl.base "!builtin.memref"
    %batch = irdl.base "!builtin.memref"
    %slice = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in", "in"]
    irdl.operands(dest: %dest, batch: %batch, slice: %slice)
    irdl.attributes {"roles" = %roles}
  }

  // dest = activation(lhs x rhs + bias).
  irdl.operation @fused_matmul {
    %dest = irdl.base "!builtin.memref"
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %bias = irdl.base "!builtin.memref"
    %activation = irdl.base "#builtin.string"
    %activationArgs = irdl.base "#builtin.dense_array"
    %roles = irdl.is ["out", "in", "in", "in"]
    irdl.operands(dest: %dest, lhs: %lhs, rhs: %rhs, bias: %bias)
    irdl.attributes {"activation" = %activation, "activationArgs" = %activationArgs, "roles" = %roles}
  }

  // dest = the sum of src over `axes`, which dest drops.
  irdl.operation @batched_reduce_add {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %axes = irdl.base "#builtin.dense_array"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"axes" = %axes, "roles" = %roles}
  }

  // dest = the maximum of src over `axes`, which dest drops.
  irdl.operation @batched_reduce_max {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %axes = irdl.base "#builtin.dense_array"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"axes" = %axes, "roles" = %roles}
  }

  // dest = the minimum of src over `axes`, which dest drops.
  irdl.operation @batched_reduce_min {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %axes = irdl.base "#builtin.dense_array"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"axes" = %axes, "roles" = %roles}
  }

  // dest = the product of src over `axes`, which dest drops.
  irdl.operation @batched_reduce_prod {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %axes = irdl.base "#builtin.dense_array"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"axes" = %axes, "roles" = %roles}
  }

  // dest (i64) = index of the first maximum of src along axis.
  irdl.operation @arg_max {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %axis = irdl.base "#builtin.integer"
    %keepDims = irdl.base "#builtin.integer"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"axis" = %axis, "keepDims" = %keepDims, "roles" = %roles}
  }

  // dest (i64) = index of the first minimum of src along axis.
  irdl.operation @arg_min {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %axis = irdl.base "#builtin.integer"
    %keepDims = irdl.base "#builtin.integer"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"axis" = %axis, "keepDims" = %keepDims, "roles" = %roles}
  }

  // Softmax over the last dimension.
  irdl.operation @softmax {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = the determinant of each N x N matrix of src (LU, partial pivoting).
  irdl.operation @det {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // 2-D NCHW convolution with no padding (the graph makes padding explicit before IRGen).
  irdl.operation @convolution {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %filter = irdl.base "!builtin.memref"
    %bias = irdl.base "!builtin.memref"
    %kernels = irdl.base "#builtin.dense_array"
    %strides = irdl.base "#builtin.dense_array"
    %group = irdl.base "#builtin.integer"
    %dilation = irdl.base "#builtin.dense_array"
    %roles = irdl.is ["out", "in", "in", "in"]
    irdl.operands(dest: %dest, src: %src, filter: %filter, bias: %bias)
    irdl.attributes {"kernels" = %kernels, "strides" = %strides, "group" = %group, "dilation" = %dilation, "roles" = %roles}
  }

  // 2-D NCHW max pooling, no padding.
  irdl.operation @max_pool {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %kernels = irdl.base "#builtin.dense_array"
    %strides = irdl.base "#builtin.dense_array"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"kernels" = %kernels, "strides" = %strides, "roles" = %roles}
  }

  // 2-D NCHW average pooling over full windows, no padding.
  irdl.operation @avg_pool {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %kernels = irdl.base "#builtin.dense_array"
    %strides = irdl.base "#builtin.dense_array"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"kernels" = %kernels, "strides" = %strides, "roles" = %roles}
  }

  // 2-D NCHW transposed convolution with no cropping (the graph makes pads a slice before IRGen); filter [C, O / group, KH, KW].
  irdl.operation @conv_transpose {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %filter = irdl.base "!builtin.memref"
    %bias = irdl.base "!builtin.memref"
    %kernels = irdl.base "#builtin.dense_array"
    %strides = irdl.base "#builtin.dense_array"
    %group = irdl.base "#builtin.integer"
    %dilation = irdl.base "#builtin.dense_array"
    %roles = irdl.is ["out", "in", "in", "in"]
    irdl.operands(dest: %dest, src: %src, filter: %filter, bias: %bias)
    irdl.attributes {"kernels" = %kernels, "strides" = %strides, "group" = %group, "dilation" = %dilation, "roles" = %roles}
  }

  // dest = activation(convolution(src, filter, bias)), NCHW, no padding.
  irdl.operation @fused_convolution {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %filter = irdl.base "!builtin.memref"
    %bias = irdl.base "!builtin.memref"
    %kernels = irdl.base "#builtin.dense_array"
    %strides = irdl.base "#builtin.dense_array"
    %group = irdl.base "#builtin.integer"
    %dilation = irdl.base "#builtin.dense_array"
    %activation = irdl.base "#builtin.string"
    %activationArgs = irdl.base "#builtin.dense_array"
    %roles = irdl.is ["out", "in", "in", "in"]
    irdl.operands(dest: %dest, src: %src, filter: %filter, bias: %bias)
    irdl.attributes {"kernels" = %kernels, "strides" = %strides, "group" = %group, "dilation" = %dilation, "activation" = %activation, "activationArgs" = %activationArgs, "roles" = %roles}
  }

  // dest [R, C, OH, OW] = roi_align of NCHW src (rules as glow.roi_align); a batch index out of range reads its nearest image, a cell takes at most 1024 samples along an axis.
  irdl.operation @roi_align {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %rois = irdl.base "!builtin.memref"
    %batch_indices = irdl.base "!builtin.memref"
    %output_size = irdl.base "#builtin.dense_array"
    %sampling_ratio = irdl.base "#builtin.integer"
    %spatial_scale = irdl.base "#builtin.float"
    %half_pixel = irdl.base "#builtin.integer"
    %mode = irdl.base "#builtin.string"
    %roles = irdl.is ["out", "in", "in", "in"]
    irdl.operands(dest: %dest, src: %src, rois: %rois, batch_indices: %batch_indices)
    irdl.attributes {"output_size" = %output_size, "sampling_ratio" = %sampling_ratio, "spatial_scale" = %spatial_scale, "half_pixel" = %half_pixel, "mode" = %mode, "roles" = %roles}
  }

  // dest = uniform numbers in [low, high), a new draw per run (glow_mlir/opdefs/random.py).
  irdl.operation @random_uniform {
    %dest = irdl.base "!builtin.memref"
    %low = irdl.base "#builtin.float"
    %high = irdl.base "#builtin.float"
    %seed = irdl.base "#builtin.integer"
    %seeded = irdl.base "#builtin.integer"
    %roles = irdl.is ["out"]
    irdl.operands(dest: %dest)
    irdl.attributes {"low" = %low, "high" = %high, "seed" = %seed, "seeded" = %seeded, "roles" = %roles}
  }

  // dest = normal numbers n(mean, scale^2), a new draw per run (glow_mlir/opdefs/random.py).
  irdl.operation @random_normal {
    %dest = irdl.base "!builtin.memref"
    %mean = irdl.base "#builtin.float"
    %scale = irdl.base "#builtin.float"
    %seed = irdl.base "#builtin.integer"
    %seeded = irdl.base "#builtin.integer"
    %roles = irdl.is ["out"]
    irdl.operands(dest: %dest)
    irdl.attributes {"mean" = %mean, "scale" = %scale, "seed" = %seed, "seeded" = %seeded, "roles" = %roles}
  }

  // Every element of dest = value (f32 attribute for floats, integer attribute for integers and i1).
  irdl.operation @splat {
    %dest = irdl.base "!builtin.memref"
    %value = irdl.any
    %roles = irdl.is ["out"]
    irdl.operands(dest: %dest)
    irdl.attributes {"value" = %value, "roles" = %roles}
  }

  // dest.dims[i] = src.dims[shuffle[i]].
  irdl.operation @transpose {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %shuffle = irdl.base "#builtin.dense_array"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"shuffle" = %shuffle, "roles" = %roles}
  }

  // dest = the block of src of dest's shape at offset start.
  irdl.operation @extract_tensor {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %start = irdl.base "#builtin.dense_array"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"start" = %start, "roles" = %roles}
  }

  // Numpy broadcast of src to dest's shape, src's dims aligned at axis.
  irdl.operation @broadcast {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %axis = irdl.base "#builtin.integer"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"axis" = %axis, "roles" = %roles}
  }

  // dest = numpy.take(data, indices, axis); out-of-range indices read the nearest element (clamped).
  irdl.operation @gather {
    %dest = irdl.base "!builtin.memref"
    %data = irdl.base "!builtin.memref"
    %indices = irdl.base "!builtin.memref"
    %axis = irdl.base "#builtin.integer"
    %roles = irdl.is ["out", "in", "in"]
    irdl.operands(dest: %dest, data: %data, indices: %indices)
    irdl.attributes {"axis" = %axis, "roles" = %roles}
  }

  // dest = numpy.take_along_axis(data, indices, axis); out-of-range indices read the nearest element (clamped).
  irdl.operation @gather_elements {
    %dest = irdl.base "!builtin.memref"
    %data = irdl.base "!builtin.memref"
    %indices = irdl.base "!builtin.memref"
    %axis = irdl.base "#builtin.integer"
    %roles = irdl.is ["out", "in", "in"]
    irdl.operands(dest: %dest, data: %data, indices: %indices)
    irdl.attributes {"axis" = %axis, "roles" = %roles}
  }

  // dest = ONNX GatherND(data, indices, batch_dims); out-of-range indices are clamped.
  irdl.operation @gather_nd {
    %dest = irdl.base "!builtin.memref"
    %data = irdl.base "!builtin.memref"
    %indices = irdl.base "!builtin.memref"
    %batch_dims = irdl.base "#builtin.integer"
    %roles = irdl.is ["out", "in", "in"]
    irdl.operands(dest: %dest, data: %data, indices: %indices)
    irdl.attributes {"batch_dims" = %batch_dims, "roles" = %roles}
  }

  // dest = data, then each update combined in at its index (rules as glow.scatter_elements); an update whose index is out of range is skipped.
  irdl.operation @scatter_elements {
    %dest = irdl.base "!builtin.memref"
    %data = irdl.base "!builtin.memref"
    %indices = irdl.base "!builtin.memref"
    %updates = irdl.base "!builtin.memref"
    %axis = irdl.base "#builtin.integer"
    %reduction = irdl.base "#builtin.string"
    %roles = irdl.is ["out", "in", "in", "in"]
    irdl.operands(dest: %dest, data: %data, indices: %indices, updates: %updates)
    irdl.attributes {"axis" = %axis, "reduction" = %reduction, "roles" = %roles}
  }

  // dest = data, then each update slice combined in at its index (rules as glow.scatter_nd); an update whose index is out of range is skipped.
  irdl.operation @scatter_nd {
    %dest = irdl.base "!builtin.memref"
    %data = irdl.base "!builtin.memref"
    %indices = irdl.base "!builtin.memref"
    %updates = irdl.base "!builtin.memref"
    %reduction = irdl.base "#builtin.string"
    %roles = irdl.is ["out", "in", "in", "in"]
    irdl.operands(dest: %dest, data: %data, indices: %indices, updates: %updates)
    irdl.attributes {"reduction" = %reduction, "roles" = %roles}
  }

  // dest (i64) = indices of the k best elements of src along axis (rules as glow.top_k).
  irdl.operation @top_k {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %axis = irdl.base "#builtin.integer"
    %k = irdl.base "#builtin.integer"
    %largest = irdl.base "#builtin.integer"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"axis" = %axis, "k" = %k, "largest" = %largest, "roles" = %roles}
  }

  // dest = running sums of src along axis (rules as glow.cumsum).
  irdl.operation @cumsum {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %axis = irdl.base "#builtin.integer"
    %exclusive = irdl.base "#builtin.integer"
    %reverse = irdl.base "#builtin.integer"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"axis" = %axis, "exclusive" = %exclusive, "reverse" = %reverse, "roles" = %roles}
  }

  // dest = src converted to dest's element type (rules as glow.convert_to).
  irdl.operation @convert_to {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // dest = cond ? lhs : rhs, elementwise.
  irdl.operation @element_select {
    %dest = irdl.base "!builtin.memref"
    %cond = irdl.base "!builtin.memref"
    %lhs = irdl.base "!builtin.memref"
    %rhs = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in", "in", "in"]
    irdl.operands(dest: %dest, cond: %cond, lhs: %lhs, rhs: %rhs)
    irdl.attributes {"roles" = %roles}
  }

  // A new activation buffer; its lifetime ends at its dealloc_activation.
  irdl.operation @alloc_activation {
    %buffer = irdl.base "!builtin.memref"
    irdl.results(buffer: %buffer)
  }

  // Ends the lifetime of an activation buffer.
  irdl.operation @dealloc_activation {
    %buffer = irdl.base "!builtin.memref"
    %roles = irdl.is ["out"]
    irdl.operands(buffer: %buffer)
    irdl.attributes {"roles" = %roles}
  }

  // The same bytes as `src`, reinterpreted with the result's (contiguous) shape. No data moves.
  irdl.operation @tensor_view {
    %src = irdl.base "!builtin.memref"
    %view = irdl.base "!builtin.memref"
    irdl.operands(src: %src)
    irdl.results(view: %view)
  }

  // The block of `src` at offset `start` with the result's shape: a strided view of part of `src` (Glow's TensorView with offsets). No data moves; an instruction writing through it writes that block of `src`.
  irdl.operation @block_view {
    %src = irdl.base "!builtin.memref"
    %view = irdl.base "!builtin.memref"
    %start = irdl.base "#builtin.dense_array"
    irdl.operands(src: %src)
    irdl.results(view: %view)
    irdl.attributes {"start" = %start}
  }

  // dest = src.
  irdl.operation @copy {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"roles" = %roles}
  }

  // Writes src into dest at offset start; the rest of dest is kept.
  irdl.operation @insert_tensor {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %start = irdl.base "#builtin.dense_array"
    %roles = irdl.is ["inout", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"start" = %start, "roles" = %roles}
  }

  // CPU backend: dest = activation(convolution(src, filter, bias)) in NHWC, filter [KH, KW, C / group, O], no padding.
  irdl.operation @cpu_conv_nhwc {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %filter = irdl.base "!builtin.memref"
    %bias = irdl.base "!builtin.memref"
    %kernels = irdl.base "#builtin.dense_array"
    %strides = irdl.base "#builtin.dense_array"
    %group = irdl.base "#builtin.integer"
    %dilation = irdl.base "#builtin.dense_array"
    %activation = irdl.base "#builtin.string"
    %activationArgs = irdl.base "#builtin.dense_array"
    %roles = irdl.is ["out", "in", "in", "in"]
    irdl.operands(dest: %dest, src: %src, filter: %filter, bias: %bias)
    irdl.attributes {"kernels" = %kernels, "strides" = %strides, "group" = %group, "dilation" = %dilation, "activation" = %activation, "activationArgs" = %activationArgs, "roles" = %roles}
  }

  // CPU backend: dest = activation(depthwise_conv(pad(expandActivation(conv(src, filter, bias)), pads), dw_filter, dw_bias)) in NHWC, filter [KH', KW', C, E] (window expandKernels, expandStrides, expandDilation, no padding), dw_filter [KH, KW, 1, E]; the map between them is not stored.
  irdl.operation @cpu_expand_depthwise_nhwc {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %filter = irdl.base "!builtin.memref"
    %bias = irdl.base "!builtin.memref"
    %dw_filter = irdl.base "!builtin.memref"
    %dw_bias = irdl.base "!builtin.memref"
    %kernels = irdl.base "#builtin.dense_array"
    %strides = irdl.base "#builtin.dense_array"
    %dilation = irdl.base "#builtin.dense_array"
    %pads = irdl.base "#builtin.dense_array"
    %expandKernels = irdl.base "#builtin.dense_array"
    %expandStrides = irdl.base "#builtin.dense_array"
    %expandDilation = irdl.base "#builtin.dense_array"
    %expandActivation = irdl.base "#builtin.string"
    %expandActivationArgs = irdl.base "#builtin.dense_array"
    %activation = irdl.base "#builtin.string"
    %activationArgs = irdl.base "#builtin.dense_array"
    %roles = irdl.is ["out", "in", "in", "in", "in", "in"]
    irdl.operands(dest: %dest, src: %src, filter: %filter, bias: %bias, dw_filter: %dw_filter, dw_bias: %dw_bias)
    irdl.attributes {"kernels" = %kernels, "strides" = %strides, "dilation" = %dilation, "pads" = %pads, "expandKernels" = %expandKernels, "expandStrides" = %expandStrides, "expandDilation" = %expandDilation, "expandActivation" = %expandActivation, "expandActivationArgs" = %expandActivationArgs, "activation" = %activation, "activationArgs" = %activationArgs, "roles" = %roles}
  }

  // CPU backend: max pooling in NHWC, no padding.
  irdl.operation @cpu_max_pool_nhwc {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %kernels = irdl.base "#builtin.dense_array"
    %strides = irdl.base "#builtin.dense_array"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"kernels" = %kernels, "strides" = %strides, "roles" = %roles}
  }

  // CPU backend: average pooling over full windows in NHWC, no padding.
  irdl.operation @cpu_avg_pool_nhwc {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %kernels = irdl.base "#builtin.dense_array"
    %strides = irdl.base "#builtin.dense_array"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"kernels" = %kernels, "strides" = %strides, "roles" = %roles}
  }

  // CPU backend: glow_ir.roi_align of NHWC src into [R, OH, OW, C], a vector of channels at a time.
  irdl.operation @cpu_roi_align_nhwc {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %rois = irdl.base "!builtin.memref"
    %batch_indices = irdl.base "!builtin.memref"
    %output_size = irdl.base "#builtin.dense_array"
    %sampling_ratio = irdl.base "#builtin.integer"
    %spatial_scale = irdl.base "#builtin.float"
    %half_pixel = irdl.base "#builtin.integer"
    %mode = irdl.base "#builtin.string"
    %roles = irdl.is ["out", "in", "in", "in"]
    irdl.operands(dest: %dest, src: %src, rois: %rois, batch_indices: %batch_indices)
    irdl.attributes {"output_size" = %output_size, "sampling_ratio" = %sampling_ratio, "spatial_scale" = %spatial_scale, "half_pixel" = %half_pixel, "mode" = %mode, "roles" = %roles}
  }

  // CPU backend: dest = f32(sum (input + offset) * W - correction) * multiplier + bias, vpdpbusd on packed int8 weights.
  irdl.operation @cpu_int8_matmul {
    %dest = irdl.base "!builtin.memref"
    %input = irdl.base "!builtin.memref"
    %weights = irdl.base "!builtin.memref"
    %correction = irdl.base "!builtin.memref"
    %multiplier = irdl.base "!builtin.memref"
    %bias = irdl.base "!builtin.memref"
    %relu = irdl.base "#builtin.integer"
    %clip = irdl.base "#builtin.float"
    %output_scale = irdl.base "#builtin.float"
    %output_zero = irdl.base "#builtin.integer"
    %roles = irdl.is ["out", "in", "in", "in", "in", "in"]
    irdl.operands(dest: %dest, input: %input, weights: %weights, correction: %correction, multiplier: %multiplier, bias: %bias)
    irdl.attributes {"relu" = %relu, "clip" = %clip, "output_scale" = %output_scale, "output_zero" = %output_zero, "roles" = %roles}
  }

  // CPU backend: dest = f32(sum (input + offset) * W - correction) * multiplier + bias over each (dilated) window of the padded NHWC input, vpdpbusd on packed int8 weights.
  irdl.operation @cpu_int8_conv_nhwc {
    %dest = irdl.base "!builtin.memref"
    %input = irdl.base "!builtin.memref"
    %weights = irdl.base "!builtin.memref"
    %correction = irdl.base "!builtin.memref"
    %multiplier = irdl.base "!builtin.memref"
    %bias = irdl.base "!builtin.memref"
    %kernels = irdl.base "#builtin.dense_array"
    %strides = irdl.base "#builtin.dense_array"
    %dilation = irdl.base "#builtin.dense_array"
    %relu = irdl.base "#builtin.integer"
    %clip = irdl.base "#builtin.float"
    %output_scale = irdl.base "#builtin.float"
    %output_zero = irdl.base "#builtin.integer"
    %roles = irdl.is ["out", "in", "in", "in", "in", "in"]
    irdl.operands(dest: %dest, input: %input, weights: %weights, correction: %correction, multiplier: %multiplier, bias: %bias)
    irdl.attributes {"kernels" = %kernels, "strides" = %strides, "dilation" = %dilation, "relu" = %relu, "clip" = %clip, "output_scale" = %output_scale, "output_zero" = %output_zero, "roles" = %roles}
  }

  // CPU backend: dest = cpu_int8_conv_nhwc's f32(sum (input + offset) * W - correction) * multiplier + bias (through uint8 with product_scale) + addend (dequantized when ui8), then its epilogue, vpdpbusd on packed int8 weights.
  irdl.operation @cpu_int8_conv_nhwc_add {
    %dest = irdl.base "!builtin.memref"
    %input = irdl.base "!builtin.memref"
    %weights = irdl.base "!builtin.memref"
    %correction = irdl.base "!builtin.memref"
    %multiplier = irdl.base "!builtin.memref"
    %bias = irdl.base "!builtin.memref"
    %addend = irdl.base "!builtin.memref"
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
    %roles = irdl.is ["out", "in", "in", "in", "in", "in", "in"]
    irdl.operands(dest: %dest, input: %input, weights: %weights, correction: %correction, multiplier: %multiplier, bias: %bias, addend: %addend)
    irdl.attributes {"kernels" = %kernels, "strides" = %strides, "dilation" = %dilation, "relu" = %relu, "clip" = %clip, "output_scale" = %output_scale, "output_zero" = %output_zero, "product_scale" = %product_scale, "product_zero" = %product_zero, "addend_scale" = %addend_scale, "addend_zero" = %addend_zero, "roles" = %roles}
  }

  // CPU backend: dest (ui8) = clamp(round_half_even(src / output_scale) + output_zero, 0, 255).
  irdl.operation @cpu_quantize_u8 {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %output_scale = irdl.base "#builtin.float"
    %output_zero = irdl.base "#builtin.float"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"output_scale" = %output_scale, "output_zero" = %output_zero, "roles" = %roles}
  }

  // CPU backend: dest = f32(sum (input + offset) * W - (offset + zero) * colsum) * (scale * multiplier) + bias, vpdpbusd on packed int8 weights with run-time zero point and scale.
  irdl.operation @cpu_int8_matmul_dynamic {
    %dest = irdl.base "!builtin.memref"
    %input = irdl.base "!builtin.memref"
    %weights = irdl.base "!builtin.memref"
    %colsum = irdl.base "!builtin.memref"
    %multiplier = irdl.base "!builtin.memref"
    %bias = irdl.base "!builtin.memref"
    %zero = irdl.base "!builtin.memref"
    %scale = irdl.base "!builtin.memref"
    %relu = irdl.base "#builtin.integer"
    %clip = irdl.base "#builtin.float"
    %output_scale = irdl.base "#builtin.float"
    %output_zero = irdl.base "#builtin.integer"
    %roles = irdl.is ["out", "in", "in", "in", "in", "in", "in", "in"]
    irdl.operands(dest: %dest, input: %input, weights: %weights, colsum: %colsum, multiplier: %multiplier, bias: %bias, zero: %zero, scale: %scale)
    irdl.attributes {"relu" = %relu, "clip" = %clip, "output_scale" = %output_scale, "output_zero" = %output_zero, "roles" = %roles}
  }

  // CPU backend: uint8 max pooling in NHWC over the windows clipped to the input (pads [top, left, bottom, right]).
  irdl.operation @cpu_max_pool_u8_nhwc {
    %dest = irdl.base "!builtin.memref"
    %src = irdl.base "!builtin.memref"
    %kernels = irdl.base "#builtin.dense_array"
    %strides = irdl.base "#builtin.dense_array"
    %pads = irdl.base "#builtin.dense_array"
    %roles = irdl.is ["out", "in"]
    irdl.operands(dest: %dest, src: %src)
    irdl.attributes {"kernels" = %kernels, "strides" = %strides, "pads" = %pads, "roles" = %roles}
  }

  // CPU backend: dest[n, y, x, c] = f32(sum over the window of input (padded with zero) * W[., ., c] - correction) * multiplier + bias, then relu, clip and uint8 quantization; the padding is read in the kernel.
  irdl.operation @cpu_int8_depthwise_nhwc {
    %dest = irdl.base "!builtin.memref"
    %input = irdl.base "!builtin.memref"
    %weights = irdl.base "!builtin.memref"
    %correction = irdl.base "!builtin.memref"
    %multiplier = irdl.base "!builtin.memref"
    %bias = irdl.base "!builtin.memref"
    %kernels = irdl.base "#builtin.dense_array"
    %strides = irdl.base "#builtin.dense_array"
    %pads = irdl.base "#builtin.dense_array"
    %zero = irdl.base "#builtin.integer"
    %relu = irdl.base "#builtin.integer"
    %clip = irdl.base "#builtin.float"
    %output_scale = irdl.base "#builtin.float"
    %output_zero = irdl.base "#builtin.integer"
    %roles = irdl.is ["out", "in", "in", "in", "in", "in"]
    irdl.operands(dest: %dest, input: %input, weights: %weights, correction: %correction, multiplier: %multiplier, bias: %bias)
    irdl.attributes {"kernels" = %kernels, "strides" = %strides, "pads" = %pads, "zero" = %zero, "relu" = %relu, "clip" = %clip, "output_scale" = %output_scale, "output_zero" = %output_zero, "roles" = %roles}
  }

  // CPU backend: dest = activation(input x W + bias), W dequantized in registers from packed 2-, 4- or 8-bit values.
  irdl.operation @cpu_matmul_nbits {
    %dest = irdl.base "!builtin.memref"
    %input = irdl.base "!builtin.memref"
    %packed = irdl.base "!builtin.memref"
    %scales = irdl.base "!builtin.memref"
    %zeros = irdl.base "!builtin.memref"
    %bias = irdl.base "!builtin.memref"
    %bits = irdl.base "#builtin.integer"
    %columns = irdl.base "#builtin.integer"
    %activation = irdl.base "#builtin.string"
    %activationArgs = irdl.base "#builtin.dense_array"
    %roles = irdl.is ["out", "in", "in", "in", "in", "in"]
    irdl.operands(dest: %dest, input: %input, packed: %packed, scales: %scales, zeros: %zeros, bias: %bias)
    irdl.attributes {"bits" = %bits, "columns" = %columns, "activation" = %activation, "activationArgs" = %activationArgs, "roles" = %roles}
  }

  // glow.loop's instruction: @out the results' buffers, @in the operands'; `roles` lists them.
  irdl.operation @loop {
    %in0 = irdl.base "!builtin.memref"
    %in1 = irdl.base "!builtin.memref"
    %in2 = irdl.base "!builtin.memref"
    %in3 = irdl.base "!builtin.memref"
    %in4 = irdl.base "!builtin.memref"
    %in5 = irdl.base "!builtin.memref"
    %in6 = irdl.base "!builtin.memref"
    %in7 = irdl.base "!builtin.memref"
    %in8 = irdl.base "!builtin.memref"
    %in9 = irdl.base "!builtin.memref"
    %in10 = irdl.base "!builtin.memref"
    %in11 = irdl.base "!builtin.memref"
    %in12 = irdl.base "!builtin.memref"
    %in13 = irdl.base "!builtin.memref"
    %in14 = irdl.base "!builtin.memref"
    %in15 = irdl.base "!builtin.memref"
    %body = irdl.base "#builtin.symbol_ref"
    %trip_count = irdl.base "#builtin.integer"
    %num_carried = irdl.base "#builtin.integer"
    %num_scan_inputs = irdl.base "#builtin.integer"
    %condition = irdl.base "#builtin.integer"
    %scan_input_axes = irdl.base "#builtin.dense_array"
    %scan_input_directions = irdl.base "#builtin.dense_array"
    %scan_output_axes = irdl.base "#builtin.dense_array"
    %scan_output_directions = irdl.base "#builtin.dense_array"
    %roles = irdl.base "#builtin.array"
    irdl.operands(in0: variadic %in0, in1: variadic %in1, in2: variadic %in2, in3: variadic %in3, in4: variadic %in4, in5: variadic %in5, in6: variadic %in6, in7: variadic %in7, in8: variadic %in8, in9: variadic %in9, in10: variadic %in10, in11: variadic %in11, in12: variadic %in12, in13: variadic %in13, in14: variadic %in14, in15: variadic %in15)
    irdl.attributes {"body" = %body, "trip_count" = %trip_count, "num_carried" = %num_carried, "num_scan_inputs" = %num_scan_inputs, "condition" = %condition, "scan_input_axes" = %scan_input_axes, "scan_input_directions" = %scan_input_directions, "scan_output_axes" = %scan_output_axes, "scan_output_directions" = %scan_output_directions, "roles" = %roles}
  }
}
