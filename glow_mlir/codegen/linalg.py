"""glow-ir-to-linalg: rewrites every `glow_ir` instruction into linalg, arith, math and scf on memrefs.

This is Glow's per-instruction kernel selection done with MLIR's structured ops instead of a hand-written
library: each instruction writes into buffers that are already placed (function arguments, `memref.view`s
into the arena, `memref.get_global` constants), so each becomes one or a few linalg ops on those same
memrefs. Nothing is allocated on the heap: the memory plan of glow-allocate stays the whole memory story, and
the only allocations are `memref.alloca`s of the window operands of pooling ops, which linalg reads for their
shape only. Code is plain loops for now; tiling and vectorization are later stages.

Element types follow docs/ARCHITECTURE.md: each lowering picks its arith op from the buffers' element type
(addf/addi, divf/divsi, maximumf/maxsi, ...), so one instruction serves f16/f32/f64 and i8..i64 alike;
float-only instructions reject integer buffers with a located error. Scatter- and search-shaped instructions
(conv_transpose, arg_max/arg_min, softmax) are scf loops; erf, which LLVM has no intrinsic for, is
generated arithmetic (`_erf`).

The function also gets `llvm.emit_c_interface`, so that the runtime can call `_mlir_ciface_<name>` with memref
descriptors.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import factorial, pi, sqrt

from mlir import ir
from mlir.dialects import arith, linalg, math, memref, scf

from glow_mlir import ops
from glow_mlir.errors import UnsupportedError, VerificationError
from glow_mlir.passes.registry import register

# Marks on the bias and activation ops of a CPU convolution, which glow-cpu-schedule fuses into the
# convolution's tiles (codegen/conv_recipes.py) instead of running them as passes of their own.
CONV_BIAS_ATTR = "glow.conv_bias"
CONV_ACTIVATION_ATTR = "glow.conv_activation"

Lowering = Callable[[ir.Operation], None]


@register("glow-ir-to-linalg")
def ir_to_linalg(module: ir.Module) -> None:
    """Rewrite glow_ir instructions into linalg/arith/math/scf on memrefs (needs glow-allocate first)."""
    with module.context:
        for func in ops.functions(module):
            if not func.regions[0].blocks:
                continue
            for op in ops.walk_ops(func):
                if op.name.startswith(ops.GLOW_IR):
                    _lower(op)
            # A splat that every reader took as a scalar (`_splat_scalar`) fills an activation nobody reads.
            for op in ops.walk_ops(func):
                buffer = op.operands[-1] if op.name == "linalg.fill" else None
                if buffer is not None and _is_arena_view(buffer) and len(list(buffer.uses)) == 1:
                    op.erase()
            func.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()


def _lower(op: ir.Operation) -> None:
    lowering = _LOWERINGS.get(op.name[len(ops.GLOW_IR) :])
    if lowering is None:
        raise UnsupportedError(f"{ops.location_text(op)}: glow-ir-to-linalg cannot lower '{op.name}'")
    with op.location, ir.InsertionPoint(op):
        lowering(op)
    op.erase()


def _fail(op: ir.Operation, rule: str) -> VerificationError:
    return VerificationError(op.name, ops.location_text(op), rule)


# ----------------------------------------------------------------------------------------------------------
# Building blocks


def _identity(rank: int) -> ir.AffineMap:
    return ir.AffineMap.get_identity(rank)


def _generic(
    inputs: Sequence[ir.Value],
    dest: ir.Value,
    maps: Sequence[ir.AffineMap],
    body: Callable[[list[ir.Value]], ir.Value],
    reductions: Sequence[int] = (),
) -> ir.Operation:
    """A linalg.generic writing `dest` (returned); `body` gets the input elements, then dest's element.

    `maps` gives one map per input, then dest's. The loop dims listed in `reductions` are reduction
    iterators (dest's map must drop them); all others are parallel, one per dim of dest by default.
    """
    loops = maps[-1].n_dims
    kinds = ["reduction" if d in reductions else "parallel" for d in range(loops)]
    generic = linalg.GenericOp(
        result_tensors=[],
        inputs=list(inputs),
        outputs=[dest],
        indexing_maps=ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
        iterator_types=ir.ArrayAttr.get([ir.Attribute.parse(f"#linalg.iterator_type<{k}>") for k in kinds]),
    )
    block = generic.regions[0].blocks.append(*[ops.element_type(v) for v in (*inputs, dest)])
    with ir.InsertionPoint(block):
        linalg.YieldOp([body(list(block.arguments))])
    return generic.operation


def _elementwise(
    inputs: Sequence[ir.Value], dest: ir.Value, body: Callable[[list[ir.Value]], ir.Value]
) -> ir.Operation:
    identity = _identity(len(ops.shape(dest)))
    return _generic(inputs, dest, [identity] * (len(inputs) + 1), body)


def _is_float(elt: ir.Type) -> bool:
    return isinstance(elt, ir.FloatType)


def _width(elt: ir.Type) -> int:
    return ir.FloatType(elt).width if _is_float(elt) else ir.IntegerType(elt).width


def _is_bool(elt: ir.Type) -> bool:
    return isinstance(elt, ir.IntegerType) and ir.IntegerType(elt).width == 1


def _scalar(elt: ir.Type, value: float) -> ir.Value:
    """A constant of `elt`; integer types take int(value) (an i1 true may come in as -1, its signed value)."""
    if isinstance(elt, ir.IntegerType):
        return arith.ConstantOp(elt, ir.IntegerAttr.get(elt, int(value))).result
    return arith.ConstantOp(elt, ir.FloatAttr.get(elt, value)).result


def _lowest(elt: ir.Type) -> ir.Value:
    """The identity of max: -inf, or the most negative integer."""
    return _scalar(elt, float("-inf") if _is_float(elt) else -(1 << (_width(elt) - 1)))


def _highest(elt: ir.Type) -> ir.Value:
    """The identity of min: +inf, or the largest integer."""
    return _scalar(elt, float("inf") if _is_float(elt) else (1 << (_width(elt) - 1)) - 1)


Scalar2 = Callable[[ir.Value, ir.Value], ir.Value]


def _by_type(on_float: Scalar2, on_int: Scalar2) -> Scalar2:
    """A binary scalar op that picks the float or the (signed) integer arith op from its operands' type."""

    def build(a: ir.Value, b: ir.Value) -> ir.Value:
        return on_float(a, b) if _is_float(a.type) else on_int(a, b)

    return build


_add = _by_type(arith.addf, arith.addi)
_sub = _by_type(arith.subf, arith.subi)
_mul = _by_type(arith.mulf, arith.muli)


def _divide_integers(a: ir.Value, b: ir.Value) -> ir.Value:
    """a / b truncating toward zero (C, ONNX), total like the interpreter: a / 0 = 0, MIN / -1 wraps to MIN.

    x86's idiv traps on both, which would kill the process from user data; dividing by 1 instead makes
    the quotient exact for MIN / -1 (MIN) and is discarded for a zero divisor.
    """
    elt = a.type
    zero, one = _scalar(elt, 0), _scalar(elt, 1)
    by_zero = arith.cmpi(arith.CmpIPredicate.eq, b, zero)
    overflow = arith.andi(
        arith.cmpi(arith.CmpIPredicate.eq, a, _lowest(elt)),
        arith.cmpi(arith.CmpIPredicate.eq, b, _scalar(elt, -1)),
    )
    quotient = arith.divsi(a, arith.select(arith.ori(by_zero, overflow), one, b))
    return arith.select(by_zero, zero, quotient)


_div = _by_type(arith.divf, _divide_integers)
_max = _by_type(arith.maximumf, arith.maxsi)
_min = _by_type(arith.minimumf, arith.minsi)


def _compare(on_float: arith.CmpFPredicate, on_int: arith.CmpIPredicate) -> Scalar2:
    """An i1 comparison: ordered float predicates are false on NaN, except une, which is true (ONNX)."""

    def build(a: ir.Value, b: ir.Value) -> ir.Value:
        return arith.cmpf(on_float, a, b) if _is_float(a.type) else arith.cmpi(on_int, a, b)

    return build


def _index(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), ir.IntegerAttr.get(ir.IndexType.get(), value)).result


def _fill(dest: ir.Value, value: float) -> None:
    linalg.fill(_scalar(ops.element_type(dest), value), outs=[dest])


def _row_major_strides(dims: Sequence[int]) -> list[int]:
    strides = [1] * len(dims)
    for i in range(len(dims) - 2, -1, -1):
        strides[i] = strides[i + 1] * dims[i + 1]
    return strides


def _reshape(value: ir.Value, dims: Sequence[int]) -> ir.Value:
    """The same contiguous bytes with shape `dims`: a reinterpret_cast, which expand-strided-metadata folds."""
    dims = [int(d) for d in dims]
    result = ops.memref_type(dims, ops.element_type(value))
    return memref.ReinterpretCastOp(
        result, value, [], [], [], ops.i64_array([0]), ops.i64_array(dims), ops.i64_array(_row_major_strides(dims))
    ).result


def _block(value: ir.Value, start: Sequence[int], sizes: Sequence[int], op: ir.Operation) -> ir.Value:
    """The block of `value` of shape `sizes` at offset `start`, as a strided subview."""
    dims = ops.shape(value)
    if len(start) != len(dims) or len(sizes) != len(dims):
        raise _fail(op, f"has a start of rank {len(start)} for buffers of rank {len(dims)}")
    if any(s < 0 or s + n > d for s, n, d in zip(start, sizes, dims, strict=True)):
        raise _fail(op, f"block {list(sizes)} at {list(start)} does not fit in {list(dims)}")
    strides, base = ir.MemRefType(value.type).get_strides_and_offset()
    offset = base + sum(s * t for s, t in zip(start, strides, strict=True))
    layout = ir.StridedLayoutAttr.get(offset, strides)
    result = ir.MemRefType.get(list(sizes), ops.element_type(value), layout=layout)
    return memref.SubViewOp(
        result,
        value,
        [],
        [],
        [],
        ops.i64_array(start),
        ops.i64_array(sizes),
        ops.i64_array([1] * len(dims)),
    ).result


def _loop_nest(bounds: Sequence[int], body: Callable[[list[ir.Value]], None]) -> None:
    """Nested scf.for loops over [0, bound) for each bound; `body` gets the induction variables."""
    if not bounds:
        body([])
        return
    loop = scf.ForOp(_index(0), _index(bounds[0]), _index(1))
    with ir.InsertionPoint(loop.body):
        _loop_nest(bounds[1:], lambda ivs: body([loop.induction_variable, *ivs]))
        scf.YieldOp([])


def _reduce_loop(
    upper: int, init: ir.Value, step: Callable[[ir.Value, ir.Value], ir.Value]
) -> ir.Value:
    """A scf.for over [0, upper) carrying one value: `step(j, carried)` returns the next one."""
    loop = scf.ForOp(_index(0), _index(upper), _index(1), [init])
    with ir.InsertionPoint(loop.body):
        scf.YieldOp([step(loop.induction_variable, loop.inner_iter_args[0])])
    return loop.results[0]


def _pair(op: ir.Operation, name: str) -> list[int]:
    values = ops.ints(op, name)
    if len(values) != 2 or any(v < 1 for v in values):
        raise _fail(op, f"needs two positive '{name}', got {values}")
    return values


# ----------------------------------------------------------------------------------------------------------
# One lowering per instruction


def _copy(op: ir.Operation) -> None:
    dest, src = op.operands
    linalg.copy(src, outs=[dest])


def _splat(op: ir.Operation) -> None:
    # The value is an f32 attribute for float buffers and an integer one for integer and i1 buffers.
    attr = op.attributes["value"]
    value = ir.FloatAttr(attr).value if isinstance(attr, ir.FloatAttr) else ir.IntegerAttr(attr).value
    _fill(op.operands[0], value)


def _matmul(op: ir.Operation) -> None:
    dest, lhs, rhs = op.operands
    _fill(dest, 0.0)
    linalg.matmul(lhs, rhs, outs=[dest])


def _batched_add(op: ir.Operation) -> None:
    dest, batch, slice_ = op.operands
    rank, slice_dims = len(ops.shape(dest)), ops.shape(slice_)
    # The slice lines up with the trailing dims of the batch (Glow: slice dims == batch dims[1:]).
    if ops.shape(dest)[rank - len(slice_dims) :] != slice_dims or len(slice_dims) >= rank:
        raise _fail(op, f"slice {list(slice_dims)} does not match the batch {list(ops.shape(dest))}")
    slice_map = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(d) for d in range(rank - len(slice_dims), rank)])
    _generic([batch, slice_], dest, [_identity(rank), slice_map, _identity(rank)], lambda a: _add(a[0], a[1]))


def _binary(build: Callable[[ir.Value, ir.Value], ir.Value]) -> Lowering:
    """An elementwise binary instruction. An operand only a splat wrote (ReLU's zeros, as glow-lower writes
    max(x, splat 0)) becomes the splat's scalar in the body instead of a buffer read per element."""

    def lower(op: ir.Operation) -> None:
        dest, lhs, rhs = op.operands
        scalar = _splat_scalar(rhs) if rhs != dest else None
        if scalar is not None:
            _elementwise([lhs], dest, lambda a: build(a[0], _scalar(ops.element_type(rhs), scalar)))
            return
        _elementwise([lhs, rhs], dest, lambda a: build(a[0], a[1]))

    return lower


def _is_arena_view(buffer: ir.Value) -> bool:
    """An activation: a memref.view of the arena (glow-allocate's form of an alloc), not an argument."""
    owner = buffer.owner
    return isinstance(owner, ir.Operation | ir.OpView) and owner.name == "memref.view"


def _splat_scalar(buffer: ir.Value) -> float | int | None:
    """The value of the splat (a glow_ir.splat or the linalg.fill it became) that is the only write of
    `buffer` in its function, if that is so. While a buffer is live no other buffer shares its arena bytes,
    so only writes through this value can change it."""
    writers = []
    for use in buffer.uses:
        user = use.owner.operation if isinstance(use.owner, ir.OpView) else use.owner
        if user.name.startswith(ops.GLOW_IR):
            roles = ops.roles(user)
            if not roles:  # a view: writes through it are not seen here
                return None
            if roles[use.operand_number] != "in":
                writers.append(user)
        elif user.name.startswith("linalg."):
            # The linalg ops of this lowering write their last operand.
            if use.operand_number == len(user.operands) - 1:
                writers.append(user)
        else:
            return None
    if len(writers) != 1:
        return None
    writer = writers[0]
    if writer.name == "glow_ir.splat":
        attr = writer.attributes["value"]
    elif writer.name == "linalg.fill" and isinstance(writer.operands[0].owner, ir.Operation | ir.OpView):
        constant = writer.operands[0].owner
        if constant.name != "arith.constant":
            return None
        attr = constant.attributes["value"]
    else:
        return None
    return ir.FloatAttr(attr).value if isinstance(attr, ir.FloatAttr) else ir.IntegerAttr(attr).value


def _unary(build: Callable[[ir.Value], ir.Value]) -> Lowering:
    def lower(op: ir.Operation) -> None:
        dest, src = op.operands
        _elementwise([src], dest, lambda a: build(a[0]))

    return lower


def _float_only(lowering: Lowering) -> Lowering:
    """`lowering`, for instructions defined on floating-point buffers only (docs/ARCHITECTURE.md)."""

    def lower(op: ir.Operation) -> None:
        for i, value in enumerate(op.operands):
            elt = ops.element_type(value)
            if not _is_float(elt):
                raise _fail(op, f"takes floating-point buffers only, operand {i} has element type {elt}")
        lowering(op)

    return lower


def _sigmoid(x: ir.Value) -> ir.Value:
    # 1 / (1 + exp(-x)) saturates cleanly: exp overflows to inf for very negative x and the result is 0.
    one = _scalar(x.type, 1.0)
    return arith.divf(one, arith.addf(one, math.exp(arith.negf(x))))


def _softmax(op: ir.Operation) -> None:
    dest, src = op.operands
    dims = ops.shape(src)
    if not dims:
        raise _fail(op, "needs a buffer of rank 1 or more")
    elt, last = ops.element_type(src), dims[-1]

    def row(ivs: list[ir.Value]) -> None:
        def at(j: ir.Value) -> list[ir.Value]:
            return [*ivs, j]

        # Subtracting the row's max keeps exp from overflowing; the divide normalizes in place in dest.
        row_max = _reduce_loop(
            last, _scalar(elt, float("-inf")), lambda j, m: arith.maximumf(m, memref.load(src, at(j)))
        )

        def exp_and_sum(j: ir.Value, total: ir.Value) -> ir.Value:
            e = math.exp(arith.subf(memref.load(src, at(j)), row_max))
            memref.store(e, dest, at(j))
            return arith.addf(total, e)

        total = _reduce_loop(last, _scalar(elt, 0.0), exp_and_sum)

        def normalize(j: list[ir.Value]) -> None:
            memref.store(arith.divf(memref.load(dest, at(*j)), total), dest, at(*j))

        _loop_nest([last], normalize)

    _loop_nest(list(dims[:-1]), row)


def _convolution(op: ir.Operation) -> None:
    dest, src, filter_, bias = op.operands
    kernels, strides, dilation = _pair(op, "kernels"), _pair(op, "strides"), _pair(op, "dilation")
    group = ops.integer(op, "group")
    n, c, h, w = _rank4(op, src)
    _, f, oh, ow = _rank4(op, dest)
    filter_dims = ops.shape(filter_)
    if group < 1 or c % group or f % group or filter_dims != (f, c // group, *kernels):
        raise _fail(op, f"filter {list(filter_dims)} does not fit {c} channels, {f} filters, group {group}")
    if ops.shape(bias) != (f,):
        raise _fail(op, f"bias {list(ops.shape(bias))} is not [{f}]")

    # The conv accumulates into dest, so dest starts as the bias broadcast along N, H and W.
    bias_map = ir.AffineMap.get(4, 0, [ir.AffineDimExpr.get(1)])
    _generic([bias], dest, [bias_map, _identity(4)], lambda a: a[0])
    if group == 1:
        linalg.conv_2d_nchw_fchw(src, filter_, outs=[dest], strides=strides, dilations=dilation)
        return
    # Grouped (and depthwise) convolutions: the same buffers seen with an explicit group dimension.
    g = group
    linalg.conv_2d_ngchw_gfchw(
        _reshape(src, [n, g, c // g, h, w]),
        _reshape(filter_, [g, f // g, c // g, *kernels]),
        outs=[_reshape(dest, [n, g, f // g, oh, ow])],
        strides=strides,
        dilations=dilation,
    )


def _cpu_conv_nhwc(op: ir.Operation) -> None:
    """The CPU backend's convolution: dest = activation(conv(src, filter) + bias), NHWC, filter [KH, KW, I, O].

    dest starts as the bias broadcast along N, H and W, the convolution accumulates into it, and the
    activation then runs in place: three linalg ops on dest, which glow-cpu-schedule runs as one kernel for
    group 1 (the marked bias and activation fused into each output tile, codegen/conv_recipes.py) and one by
    one otherwise.
    Group 1 is `conv_2d_nhwc_hwcf`; a depthwise convolution (one input channel per group) is
    `depthwise_conv_2d_nhwc_hwc`, or `_hwcm` with a channel multiplier, on views of the same buffers; any
    other grouping is one `conv_2d_nhwc_hwcf` per group on channel slices.
    """
    dest, src, filter_, bias = op.operands
    kernels, strides, dilation = _pair(op, "kernels"), _pair(op, "strides"), _pair(op, "dilation")
    group = ops.integer(op, "group")
    n, h, w, c = _rank4(op, src)
    _, oh, ow, f = _rank4(op, dest)
    filter_dims = ops.shape(filter_)
    if group < 1 or c % group or f % group or filter_dims != (*kernels, c // group, f):
        raise _fail(op, f"filter {list(filter_dims)} does not fit {c} channels, {f} filters, group {group}")
    if ops.shape(bias) != (f,):
        raise _fail(op, f"bias {list(ops.shape(bias))} is not [{f}]")

    bias_map = ir.AffineMap.get(4, 0, [ir.AffineDimExpr.get(3)])
    bias_init = _generic([bias], dest, [bias_map, _identity(4)], lambda a: a[0])
    window = {"strides": strides, "dilations": dilation}
    if group == 1:
        linalg.conv_2d_nhwc_hwcf(src, filter_, outs=[dest], **window)
        # The CPU schedule fuses the bias and the activation into the convolution's tiles (conv_recipes).
        bias_init.attributes[CONV_BIAS_ATTR] = ir.UnitAttr.get()
        activation = _activate(op, dest)
        if activation is not None:
            activation.attributes[CONV_ACTIVATION_ATTR] = ir.UnitAttr.get()
        return
    if group == c and f == c:
        linalg.depthwise_conv_2d_nhwc_hwc(src, _reshape(filter_, [*kernels, c]), outs=[dest], **window)
    elif group == c:
        m = f // c
        # Output channel o = channel * m + j of a depthwise convolution with channel multiplier m.
        depthwise = linalg.depthwise_conv_2d_nhwc_hwcm
        depthwise(src, _reshape(filter_, [*kernels, c, m]), outs=[_reshape(dest, [n, oh, ow, c, m])], **window)
    else:
        cg, fg = c // group, f // group
        for g in range(group):
            linalg.conv_2d_nhwc_hwcf(
                _block(src, [0, 0, 0, g * cg], [n, h, w, cg], op),
                _block(filter_, [0, 0, 0, g * fg], [*kernels, cg, fg], op),
                outs=[_block(dest, [0, 0, 0, g * fg], [n, oh, ow, fg], op)],
                **window,
            )
    _activate(op, dest)


def _leaky_relu(x: ir.Value, alpha: float) -> ir.Value:
    negative = arith.cmpf(arith.CmpFPredicate.OLT, x, _scalar(x.type, 0.0))
    return arith.select(negative, arith.mulf(x, _scalar(x.type, alpha)), x)


# A fused activation's scalar body, from the element and the op's activationArgs; None for "none".
# relu and clip use maximumf/minimumf, which propagate NaN as numpy's maximum/minimum do.
_ACTIVATIONS: dict[str, Callable[[ir.Value, list[float]], ir.Value] | None] = {
    "none": None,
    "relu": lambda x, _: arith.maximumf(x, _scalar(x.type, 0.0)),
    "clip": lambda x, a: arith.minimumf(arith.maximumf(x, _scalar(x.type, a[0])), _scalar(x.type, a[1])),
    "sigmoid": lambda x, _: _sigmoid(x),
    "tanh": lambda x, _: math.tanh(x),
    "leaky_relu": lambda x, a: _leaky_relu(x, a[0]),
}


def _activate(op: ir.Operation, dest: ir.Value) -> ir.Operation | None:
    """Applies `op`'s fused activation to `dest` in place: one linalg.generic (returned), none for "none"."""
    activation = _ACTIVATIONS[ir.StringAttr(op.attributes["activation"]).value]
    if activation is None:
        return None
    args = list(ir.DenseF32ArrayAttr(op.attributes["activationArgs"]))
    return _elementwise([], dest, lambda a: activation(a[0], args))


def _fused_convolution(op: ir.Operation) -> None:
    """dest = activation(convolution): the NCHW convolution as `_convolution` emits it, then the activation."""
    _convolution(op)
    _activate(op, op.operands[0])


def _fused_matmul(op: ir.Operation) -> None:
    """dest = activation(lhs x rhs + bias): dest starts as the bias in every row, the product accumulates into
    it, then the activation runs in place."""
    dest, lhs, rhs, bias = op.operands
    _, columns = ops.shape(dest)
    if ops.shape(bias) != (columns,):
        raise _fail(op, f"bias {list(ops.shape(bias))} is not [{columns}]")
    bias_map = ir.AffineMap.get(2, 0, [ir.AffineDimExpr.get(1)])
    _generic([bias], dest, [bias_map, _identity(2)], lambda a: a[0])
    linalg.matmul(lhs, rhs, outs=[dest])
    _activate(op, dest)


def _rank4(op: ir.Operation, value: ir.Value) -> tuple[int, int, int, int]:
    dims = ops.shape(value)
    if len(dims) != 4:
        raise _fail(op, f"needs NCHW buffers, got {list(dims)}")
    return dims[0], dims[1], dims[2], dims[3]


def _pool(op: ir.Operation, init: float, build: Callable[..., object]) -> tuple[ir.Value, int]:
    dest, src = op.operands
    _rank4(op, src)
    _rank4(op, dest)
    kernels, strides = _pair(op, "kernels"), _pair(op, "strides")
    _fill(dest, init)
    # linalg reads only the shape of the window operand; a stack buffer holds no data and costs nothing.
    window = memref.AllocaOp(ops.memref_type(kernels, ops.element_type(src)), [], []).result
    build(src, window, outs=[dest], strides=strides, dilations=[1, 1])
    return dest, kernels[0] * kernels[1]


def _max_pool(op: ir.Operation, build: Callable[..., object] = linalg.pooling_nchw_max) -> None:
    _pool(op, float("-inf"), build)


def _avg_pool(op: ir.Operation, build: Callable[..., object] = linalg.pooling_nchw_sum) -> None:
    dest, window_size = _pool(op, 0.0, build)
    size = _scalar(ops.element_type(dest), float(window_size))
    _elementwise([], dest, lambda a: arith.divf(a[0], size))


def _transpose(op: ir.Operation) -> None:
    dest, src = op.operands
    shuffle = ops.ints(op, "shuffle")
    if sorted(shuffle) != list(range(len(ops.shape(src)))):
        raise _fail(op, f"shuffle {shuffle} is not a permutation of the source's dims")
    linalg.transpose(src, outs=[dest], permutation=shuffle)


def _insert_tensor(op: ir.Operation) -> None:
    dest, src = op.operands
    linalg.copy(src, outs=[_block(dest, ops.ints(op, "start"), ops.shape(src), op)])


def _extract_tensor(op: ir.Operation) -> None:
    dest, src = op.operands
    linalg.copy(_block(src, ops.ints(op, "start"), ops.shape(dest), op), outs=[dest])


def _broadcast(op: ir.Operation) -> None:
    dest, src = op.operands
    dest_dims, src_dims = ops.shape(dest), ops.shape(src)
    axis = ops.integer(op, "axis")
    if axis < 0 or axis + len(src_dims) > len(dest_dims):
        raise _fail(op, f"cannot align {list(src_dims)} at axis {axis} in {list(dest_dims)}")
    exprs: list[ir.AffineExpr] = []
    for i, d in enumerate(src_dims):
        if d == dest_dims[axis + i]:
            exprs.append(ir.AffineDimExpr.get(axis + i))
        elif d == 1:
            exprs.append(ir.AffineConstantExpr.get(0))
        else:
            raise _fail(op, f"cannot broadcast {list(src_dims)} to {list(dest_dims)} at axis {axis}")
    rank = len(dest_dims)
    _generic([src], dest, [ir.AffineMap.get(rank, 0, exprs), _identity(rank)], lambda a: a[0])


def _narrow_float(x: ir.Value, to: ir.Type) -> ir.Value:
    """`x` rounded (to nearest even) to the narrower float type `to`.

    LLVM turns f64 -> f16 into a call of __truncdfhf2, which the JIT cannot resolve. Rounding to f32 first
    would round twice, wrongly for values just off an f16 tie; rounding to f32 *to odd* (keeping the inexact
    bit in the last place) makes the second rounding exact, as f32 has more than 11 + 2 significant bits.
    """
    if not (_width(x.type) == 64 and _width(to) == 16):
        return arith.truncf(to, x)
    f32, i32 = ir.F32Type.get(), ir.IntegerType.get_signless(32)
    nearest = arith.truncf(f32, x)
    back = arith.extf(x.type, nearest)
    bits = arith.bitcast(i32, nearest)
    one = _scalar(i32, 1)
    inexact = arith.cmpf(arith.CmpFPredicate.ONE, back, x)
    even = arith.cmpi(arith.CmpIPredicate.eq, arith.andi(bits, one), _scalar(i32, 0))
    # The other f32 neighbour of x is one ulp back toward x; f32 bits order magnitudes like integers.
    away = arith.cmpf(arith.CmpFPredicate.OGT, math.absf(back), math.absf(x))
    neighbour = arith.select(away, arith.subi(bits, one), arith.addi(bits, one))
    odd = arith.select(arith.andi(inexact, even), neighbour, bits)
    return arith.truncf(to, arith.bitcast(f32, odd))


def _convert(x: ir.Value, to: ir.Type) -> ir.Value:
    """`x` converted to element type `to`: float->int truncates toward zero, x->i1 is x != 0 (NaN included),
    i1->x is 0 or 1."""
    frm = x.type
    if frm == to:
        return x
    if _is_bool(to):
        zero = _scalar(frm, 0)
        if _is_float(frm):
            return arith.cmpf(arith.CmpFPredicate.UNE, x, zero)
        return arith.cmpi(arith.CmpIPredicate.ne, x, zero)
    if _is_float(frm) and _is_float(to):
        return arith.extf(to, x) if _width(to) > _width(frm) else _narrow_float(x, to)
    if _is_float(frm):
        return arith.fptosi(to, x)
    if _is_bool(frm):
        # A bool is unsigned: true is 1, not the -1 a signed extension of i1 would give.
        return arith.uitofp(to, x) if _is_float(to) else arith.extui(to, x)
    if _is_float(to):
        return arith.sitofp(to, x)
    return arith.extsi(to, x) if _width(to) > _width(frm) else arith.trunci(to, x)


def _convert_to(op: ir.Operation) -> None:
    dest, src = op.operands
    to = ops.element_type(dest)
    _elementwise([src], dest, lambda a: _convert(a[0], to))


def _select(op: ir.Operation) -> None:
    dest, cond, lhs, rhs = op.operands
    if not _is_bool(ops.element_type(cond)):
        raise _fail(op, f"needs an i1 condition, got element type {ops.element_type(cond)}")
    _elementwise([cond, lhs, rhs], dest, lambda a: arith.select(a[0], a[1], a[2]))


def _logical(build: Scalar2) -> Lowering:
    def lower(op: ir.Operation) -> None:
        for i, value in enumerate(op.operands):
            if not _is_bool(ops.element_type(value)):
                raise _fail(op, f"takes i1 buffers only, operand {i} has element type {ops.element_type(value)}")
        _binary(build)(op)

    return lower


def _not(op: ir.Operation) -> None:
    dest, src = op.operands
    if not (_is_bool(ops.element_type(dest)) and _is_bool(ops.element_type(src))):
        raise _fail(op, "takes i1 buffers only")
    _elementwise([src], dest, lambda a: arith.xori(a[0], _scalar(a[0].type, 1)))


def _abs(x: ir.Value) -> ir.Value:
    return math.absf(x) if _is_float(x.type) else math.absi(x)


def _neg(x: ir.Value) -> ir.Value:
    return arith.negf(x) if _is_float(x.type) else arith.subi(_scalar(x.type, 0), x)


# erf(x) for |x| < ERF_SERIES_LIMIT: its Maclaurin series, x * sum_n c_n x^(2n), with
# c_n = 2/sqrt(pi) * (-1)^n / (n! (2n + 1)). At |x| = 2.5 the 40th term is below 1e-17 and the largest about
# 20, so in f64 the sum is good to about 1e-14.
ERF_SERIES_LIMIT = 2.5
ERF_SERIES = tuple(2.0 / sqrt(pi) * (-1) ** n / (factorial(n) * (2 * n + 1)) for n in range(40))
# Beyond it, erf = 1 - erfc with Numerical Recipes' Chebyshev fit erfc(a) = t * exp(-a^2 + P(t)),
# t = 1 / (1 + a/2), whose relative error is below 1.2e-7; there erfc < 4.1e-4, so erf is off by < 5e-11.
ERFC_FIT = (
    -1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806,
    0.27886807, -1.13520398, 1.48851587, -0.82215223, 0.17087277,
)  # fmt: skip


def _horner(coefficients: Sequence[float], x: ir.Value) -> ir.Value:
    """sum_i coefficients[i] * x^i."""
    total = _scalar(x.type, coefficients[-1])
    for c in reversed(coefficients[:-1]):
        total = arith.addf(arith.mulf(total, x), _scalar(x.type, c))
    return total


def _erf(x: ir.Value) -> ir.Value:
    """The error function as generated arithmetic (LLVM has no erf intrinsic), in f64 whatever x's float type,
    accurate to about 1e-10: a series near 0, 1 - erfc beyond. NaN stays NaN, erf(+-inf) = +-1."""
    f64 = ir.F64Type.get()
    wide = x if x.type == f64 else arith.extf(f64, x)
    a = math.absf(wide)
    square = arith.mulf(a, a)
    series = arith.mulf(a, _horner(ERF_SERIES, square))
    one = _scalar(f64, 1.0)
    t = arith.divf(one, arith.addf(one, arith.mulf(_scalar(f64, 0.5), a)))
    erfc = arith.mulf(t, math.exp(arith.addf(arith.negf(square), _horner(ERFC_FIT, t))))
    near = arith.cmpf(arith.CmpFPredicate.OLT, a, _scalar(f64, ERF_SERIES_LIMIT))
    result = math.copysign(arith.select(near, series, arith.subf(one, erfc)), wide)
    return result if x.type == f64 else _narrow_float(result, x.type)


def _gather(op: ir.Operation) -> None:
    dest, data, indices = op.operands
    axis = ops.integer(op, "axis")
    data_dims, index_dims = ops.shape(data), ops.shape(indices)
    if not 0 <= axis < len(data_dims):
        raise _fail(op, f"axis {axis} is out of range for data of rank {len(data_dims)}")
    expected = (*data_dims[:axis], *index_dims, *data_dims[axis + 1 :])
    if ops.shape(dest) != expected:
        rule = f"is not data[:axis] + indices + data[axis+1:] = {list(expected)}"
        raise _fail(op, f"destination {list(ops.shape(dest))} {rule}")
    index_type = ops.element_type(indices)
    if not isinstance(index_type, ir.IntegerType) or _width(index_type) not in (32, 64):
        raise _fail(op, f"needs i32 or i64 indices, got {index_type}")
    rank, count = len(expected), len(index_dims)
    index_map = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(axis + i) for i in range(count)])

    def body(a: list[ir.Value]) -> ir.Value:
        # Negative indices count from the end (numpy.take, ONNX Gather).
        index = a[0]
        negative = arith.cmpi(arith.CmpIPredicate.slt, index, _scalar(index_type, 0))
        index = arith.select(negative, arith.addi(index, _scalar(index_type, data_dims[axis])), index)
        outer = [linalg.IndexOp(ops.i64(d)).result for d in range(axis)]
        inner = [linalg.IndexOp(ops.i64(d)).result for d in range(axis + count, rank)]
        return memref.load(data, [*outer, arith.index_cast(ir.IndexType.get(), index), *inner])

    _generic([indices], dest, [index_map, _identity(rank)], body)


def _batched_reduce(identity: Callable[[ir.Type], ir.Value], combine: Scalar2) -> Lowering:
    """dest = combine-reduction of src over `axes`: dest starts as the identity, then accumulates."""

    def lower(op: ir.Operation) -> None:
        dest, src = op.operands
        axes, dims = ops.ints(op, "axes"), ops.shape(src)
        if axes != sorted(set(axes)) or any(not 0 <= a < len(dims) for a in axes):
            raise _fail(op, f"axes {axes} are not sorted, unique dims of a rank-{len(dims)} source")
        kept = [d for d in range(len(dims)) if d not in axes]
        if ops.shape(dest) != tuple(dims[d] for d in kept):
            raise _fail(op, f"destination {list(ops.shape(dest))} is not {list(dims)} without axes {axes}")
        linalg.fill(identity(ops.element_type(dest)), outs=[dest])
        dest_map = ir.AffineMap.get(len(dims), 0, [ir.AffineDimExpr.get(d) for d in kept])
        _generic([src], dest, [_identity(len(dims)), dest_map], lambda a: combine(a[1], a[0]), reductions=axes)

    return lower


def _first_better(v: ir.Value, best: ir.Value, on_float: arith.CmpFPredicate, on_int: arith.CmpIPredicate) -> ir.Value:
    """Whether `v` replaces `best` in a first-occurrence search; a NaN wins over any number, as in numpy."""
    if not _is_float(v.type):
        return arith.cmpi(on_int, v, best)
    strictly = arith.cmpf(on_float, v, best)
    nan_over_number = arith.andi(
        arith.cmpf(arith.CmpFPredicate.UNO, v, v), arith.cmpf(arith.CmpFPredicate.ORD, best, best)
    )
    return arith.ori(strictly, nan_over_number)


def _arg_search(on_float: arith.CmpFPredicate, on_int: arith.CmpIPredicate) -> Lowering:
    """dest (i64) = the index of the first element along `axis` that no later one is strictly better than."""

    def lower(op: ir.Operation) -> None:
        dest, src = op.operands
        axis, keep = ops.integer(op, "axis"), bool(ops.integer(op, "keepDims"))
        dims = ops.shape(src)
        if not 0 <= axis < len(dims):
            raise _fail(op, f"axis {axis} is out of range for a source of rank {len(dims)}")
        outer = [d for i, d in enumerate(dims) if i != axis]
        expected = (*dims[:axis], 1, *dims[axis + 1 :]) if keep else tuple(outer)
        i64 = ir.IntegerType.get_signless(64)
        if ops.shape(dest) != expected or ops.element_type(dest) != i64:
            raise _fail(op, f"destination {dest.type} is not an i64 buffer of shape {list(expected)}")

        def search(ivs: list[ir.Value]) -> None:
            def at(j: ir.Value) -> list[ir.Value]:
                return [*ivs[:axis], j, *ivs[axis:]]

            zero = _index(0)
            loop = scf.ForOp(_index(1), _index(dims[axis]), _index(1), [memref.load(src, at(zero)), zero])
            with ir.InsertionPoint(loop.body):
                best, best_at = loop.inner_iter_args
                v = memref.load(src, at(loop.induction_variable))
                better = _first_better(v, best, on_float, on_int)
                scf.YieldOp([arith.select(better, v, best), arith.select(better, loop.induction_variable, best_at)])
            memref.store(arith.index_cast(i64, loop.results[1]), dest, at(zero) if keep else ivs)

        _loop_nest(outer, search)

    return lower


def _batch_matmul(op: ir.Operation) -> None:
    dest, lhs, rhs = op.operands
    _fill(dest, 0.0)
    linalg.batch_matmul(lhs, rhs, outs=[dest])


def _conv_transpose(op: ir.Operation) -> None:
    dest, src, filter_, bias = op.operands
    kernels, strides, dilation = _pair(op, "kernels"), _pair(op, "strides"), _pair(op, "dilation")
    group = ops.integer(op, "group")
    n, c, h, w = _rank4(op, src)
    _, f, oh, ow = _rank4(op, dest)
    if group < 1 or c % group or f % group or ops.shape(filter_) != (c, f // group, *kernels):
        raise _fail(op, f"filter {list(ops.shape(filter_))} does not fit {c} channels, {f} outputs, group {group}")
    if ops.shape(bias) != (f,):
        raise _fail(op, f"bias {list(ops.shape(bias))} is not [{f}]")
    reach = [(size - 1) * s + (k - 1) * d + 1 for size, s, k, d in zip((h, w), strides, kernels, dilation)]
    # Rows and columns past the reach of the kernel (ONNX's output_padding) hold the bias only.
    if oh < reach[0] or ow < reach[1]:
        raise _fail(op, f"destination {oh}x{ow} is smaller than the {reach[0]}x{reach[1]} the kernel reaches")
    cg, og = c // group, f // group

    bias_map = ir.AffineMap.get(4, 0, [ir.AffineDimExpr.get(1)])
    _generic([bias], dest, [bias_map, _identity(4)], lambda a: a[0])

    # Each input element scatters its products over a KH x KW window of the output:
    # dest[n, g*og + o, ih*sh + kh*dh, iw*sw + kw*dw] += src[n, g*cg + ci, ih, iw] * filter[g*cg + ci, o, kh, kw].
    def each_input(iv: list[ir.Value]) -> None:
        b, g, ci, ih, iw = iv
        channel = arith.addi(arith.muli(g, _index(cg)), ci)
        x = memref.load(src, [b, channel, ih, iw])
        row0, col0 = arith.muli(ih, _index(strides[0])), arith.muli(iw, _index(strides[1]))

        def scatter(kv: list[ir.Value]) -> None:
            o, kh, kw = kv
            out = [
                b,
                arith.addi(arith.muli(g, _index(og)), o),
                arith.addi(row0, arith.muli(kh, _index(dilation[0]))),
                arith.addi(col0, arith.muli(kw, _index(dilation[1]))),
            ]
            product = _mul(x, memref.load(filter_, [channel, o, kh, kw]))
            memref.store(_add(memref.load(dest, out), product), dest, out)

        _loop_nest([og, *kernels], scatter)

    _loop_nest([n, group, cg, h, w], each_input)


def _tensor_view(op: ir.Operation) -> None:
    view = _reshape(op.operands[0], ops.shape(op.results[0]))
    op.results[0].replace_all_uses_with(view)


def _block_view(op: ir.Operation) -> None:
    src = op.operands[0]
    view = _block(src, ops.ints(op, "start"), ops.shape(op.results[0]), op)
    op.results[0].replace_all_uses_with(view)


def _leftover(op: ir.Operation) -> None:
    raise _fail(op, "must be gone before glow-ir-to-linalg: run glow-allocate first")


_LOWERINGS: dict[str, Lowering] = {
    "alloc_activation": _leftover,
    "dealloc_activation": _leftover,
    "tensor_view": _tensor_view,
    "block_view": _block_view,
    "copy": _copy,
    "splat": _splat,
    "matmul": _matmul,
    "batched_add": _batched_add,
    "element_add": _binary(_add),
    "element_sub": _binary(_sub),
    "element_mul": _binary(_mul),
    "element_div": _binary(_div),
    "element_max": _binary(_max),
    "element_min": _binary(_min),
    "sigmoid": _float_only(_unary(_sigmoid)),
    "tanh": _float_only(_unary(math.tanh)),
    "element_exp": _float_only(_unary(math.exp)),
    "element_sqrt": _float_only(_unary(math.sqrt)),
    "softmax": _float_only(_softmax),
    "convolution": _float_only(_convolution),
    "fused_convolution": _float_only(_fused_convolution),
    "fused_matmul": _float_only(_fused_matmul),
    "max_pool": _float_only(_max_pool),
    "avg_pool": _float_only(_avg_pool),
    "transpose": _transpose,
    "insert_tensor": _insert_tensor,
    "extract_tensor": _extract_tensor,
    "broadcast": _broadcast,
    "convert_to": _convert_to,
    "element_select": _select,
    "element_cmp_eq": _binary(_compare(arith.CmpFPredicate.OEQ, arith.CmpIPredicate.eq)),
    "element_cmp_neq": _binary(_compare(arith.CmpFPredicate.UNE, arith.CmpIPredicate.ne)),
    "element_cmp_lt": _binary(_compare(arith.CmpFPredicate.OLT, arith.CmpIPredicate.slt)),
    "element_cmp_lte": _binary(_compare(arith.CmpFPredicate.OLE, arith.CmpIPredicate.sle)),
    "element_and": _logical(arith.andi),
    "element_or": _logical(arith.ori),
    "element_xor": _logical(arith.xori),
    "element_not": _not,
    "element_pow": _float_only(_binary(math.powf)),
    "element_log": _float_only(_unary(math.log)),
    "element_abs": _unary(_abs),
    "element_neg": _unary(_neg),
    "element_floor": _float_only(_unary(math.floor)),
    "element_ceil": _float_only(_unary(math.ceil)),
    # Round half to even, as ONNX Round and numpy.round.
    "element_round": _float_only(_unary(math.roundeven)),
    "element_erf": _float_only(_unary(_erf)),
    "element_sin": _float_only(_unary(math.sin)),
    "element_cos": _float_only(_unary(math.cos)),
    "gather": _gather,
    "batched_reduce_add": _batched_reduce(lambda elt: _scalar(elt, 0), _add),
    "batched_reduce_max": _batched_reduce(_lowest, _max),
    "batched_reduce_min": _batched_reduce(_highest, _min),
    "batched_reduce_prod": _batched_reduce(lambda elt: _scalar(elt, 1), _mul),
    "arg_max": _arg_search(arith.CmpFPredicate.OGT, arith.CmpIPredicate.sgt),
    "arg_min": _arg_search(arith.CmpFPredicate.OLT, arith.CmpIPredicate.slt),
    "batch_matmul": _batch_matmul,
    "conv_transpose": _float_only(_conv_transpose),
    "cpu_conv_nhwc": _float_only(_cpu_conv_nhwc),
    "cpu_max_pool_nhwc": _float_only(lambda op: _max_pool(op, linalg.pooling_nhwc_max)),
    "cpu_avg_pool_nhwc": _float_only(lambda op: _avg_pool(op, linalg.pooling_nhwc_sum)),
}
