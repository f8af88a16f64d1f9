"""glow-ir-to-linalg: rewrites every `glow_ir` instruction into linalg, arith, math and scf on memrefs.

This is Glow's per-instruction kernel selection done with MLIR's structured ops instead of a hand-written
library: each instruction writes into buffers that are already placed (function arguments, `memref.view`s
into the arena, `memref.get_global` constants), so each becomes one or a few linalg ops on those same
memrefs. Nothing is allocated on the heap: the memory plan of glow-allocate stays the whole memory story, and
the only allocations are `memref.alloca`s of the window operands of pooling ops, which linalg reads for their
shape only. Code is plain loops for now; tiling and vectorization are later stages.

The function also gets `llvm.emit_c_interface`, so that the runtime can call `_mlir_ciface_<name>` with memref
descriptors.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mlir import ir
from mlir.dialects import arith, linalg, math, memref, scf

from glow_mlir import ops
from glow_mlir.errors import UnsupportedError, VerificationError
from glow_mlir.passes.registry import register

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
) -> None:
    """An all-parallel linalg.generic writing `dest`; `body` gets the input elements, then dest's element.

    `maps` gives one map per input, then dest's.
    """
    rank = len(ops.shape(dest))
    parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
    generic = linalg.GenericOp(
        result_tensors=[],
        inputs=list(inputs),
        outputs=[dest],
        indexing_maps=ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
        iterator_types=ir.ArrayAttr.get([parallel] * rank),
    )
    block = generic.regions[0].blocks.append(*[ops.element_type(v) for v in (*inputs, dest)])
    with ir.InsertionPoint(block):
        linalg.YieldOp([body(list(block.arguments))])


def _elementwise(inputs: Sequence[ir.Value], dest: ir.Value, body: Callable[[list[ir.Value]], ir.Value]) -> None:
    identity = _identity(len(ops.shape(dest)))
    _generic(inputs, dest, [identity] * (len(inputs) + 1), body)


def _scalar(elt: ir.Type, value: float) -> ir.Value:
    if isinstance(elt, ir.IntegerType):
        return arith.ConstantOp(elt, ir.IntegerAttr.get(elt, int(value))).result
    return arith.ConstantOp(elt, ir.FloatAttr.get(elt, value)).result


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
    strides = _row_major_strides(dims)
    offset = sum(s * t for s, t in zip(start, strides, strict=True))
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
    _fill(op.operands[0], ops.floating(op, "value"))


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
    _generic([batch, slice_], dest, [_identity(rank), slice_map, _identity(rank)], lambda a: arith.addf(a[0], a[1]))


def _binary(build: Callable[[ir.Value, ir.Value], ir.Value]) -> Lowering:
    def lower(op: ir.Operation) -> None:
        dest, lhs, rhs = op.operands
        _elementwise([lhs, rhs], dest, lambda a: build(a[0], a[1]))

    return lower


def _unary(build: Callable[[ir.Value], ir.Value]) -> Lowering:
    def lower(op: ir.Operation) -> None:
        dest, src = op.operands
        _elementwise([src], dest, lambda a: build(a[0]))

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


def _max_pool(op: ir.Operation) -> None:
    _pool(op, float("-inf"), linalg.pooling_nchw_max)


def _avg_pool(op: ir.Operation) -> None:
    dest, window_size = _pool(op, 0.0, linalg.pooling_nchw_sum)
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


def _tensor_view(op: ir.Operation) -> None:
    view = _reshape(op.operands[0], ops.shape(op.results[0]))
    op.results[0].replace_all_uses_with(view)


def _leftover(op: ir.Operation) -> None:
    raise _fail(op, "must be gone before glow-ir-to-linalg: run glow-allocate first")


_LOWERINGS: dict[str, Lowering] = {
    "alloc_activation": _leftover,
    "dealloc_activation": _leftover,
    "tensor_view": _tensor_view,
    "copy": _copy,
    "splat": _splat,
    "matmul": _matmul,
    "batched_add": _batched_add,
    "element_add": _binary(arith.addf),
    "element_sub": _binary(arith.subf),
    "element_mul": _binary(arith.mulf),
    "element_div": _binary(arith.divf),
    "element_max": _binary(arith.maximumf),
    "element_min": _binary(arith.minimumf),
    "sigmoid": _unary(_sigmoid),
    "tanh": _unary(math.tanh),
    "element_exp": _unary(math.exp),
    "element_sqrt": _unary(math.sqrt),
    "softmax": _softmax,
    "convolution": _convolution,
    "max_pool": _max_pool,
    "avg_pool": _avg_pool,
    "transpose": _transpose,
    "insert_tensor": _insert_tensor,
    "extract_tensor": _extract_tensor,
    "broadcast": _broadcast,
}
