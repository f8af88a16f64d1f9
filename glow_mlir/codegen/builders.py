"""Building blocks of glow-ir-to-linalg's lowerings, shared by every category of instruction.

linalg.generic and elementwise builders, constants of any element type, views of a buffer (reshape, block),
scf loop nests, the checks of window attributes and NCHW ranks, and the lowering factories of elementwise
instructions (`with_scalars`, `float_only`). The scalar bodies that go into them are stated by the op
definitions (glow_mlir/opdefs/scalar.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import NamedTuple

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, memref, scf

from glow_mlir import ops
from glow_mlir.codegen.table import Lowering, fail
from glow_mlir.opdefs import types
from glow_mlir.opdefs.scalar import constant as scalar
from glow_mlir.opdefs.scalar import highest, is_bool, is_float, lowest, signless_type, width  # noqa: F401

# ----------------------------------------------------------------------------------------------------------
# Builders and helpers


def identity_map(rank: int) -> ir.AffineMap:
    return ir.AffineMap.get_identity(rank)


def generic(
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


def elementwise(
    inputs: Sequence[ir.Value], dest: ir.Value, body: Callable[[list[ir.Value]], ir.Value]
) -> ir.Operation:
    identity = identity_map(len(ops.shape(dest)))
    return generic(inputs, dest, [identity] * (len(inputs) + 1), body)


def storage_type(t: ir.Type) -> ir.Type:
    """The type generated code holds `t` in: an unsigned integer as the signless one of its width (arith takes
    signless integers only; the ops chosen for it say unsigned), a low-precision format as the byte it is
    stored in (LLVM has no float8 types and loads no sub-byte integers), shaped types by their element."""
    if isinstance(t, ir.MemRefType):
        return ir.MemRefType.get(t.shape, storage_type(t.element_type), t.layout, t.memory_space)
    if isinstance(t, ir.RankedTensorType):
        return ir.RankedTensorType.get(t.shape, storage_type(t.element_type))
    if isinstance(t, ir.VectorType):
        return ir.VectorType.get(t.shape, storage_type(t.element_type))
    if str(t) in types.LOW_PRECISION:
        return ir.IntegerType.get_signless(8)
    return signless_type(t)


def signless_types(func: ir.Operation) -> None:
    """Gives every value of `func` its storage type (`storage_type`), once every instruction is lowered: the
    scalar bodies read unsigned and low-precision values through unrealized casts to their storage type
    (glow_mlir/opdefs/scalar.py), which become casts of a type to itself here and go. The constant globals it
    reads get their storage type too."""
    # Types are uniqued: one answer per type (rebuilding each value's memref type was 2.2 s of HRM-Text QDQ's
    # compile, 275k values).
    stored_of: dict[ir.Type, ir.Type] = {}
    for op in ops.walk_ops(func):
        for value in (*op.results, *(a for r in op.regions for b in r.blocks for a in b.arguments)):
            t = value.type
            stored = stored_of.get(t)
            if stored is None:
                stored = stored_of[t] = storage_type(t)
            if stored != t:
                value.set_type(stored)
    for arg in func.regions[0].blocks[0].arguments:
        arg.set_type(storage_type(arg.type))
    signature = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    func.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get([storage_type(t) for t in signature.inputs], [storage_type(t) for t in signature.results])
    )
    for op in ops.walk_ops(func):
        if op.name == "builtin.unrealized_conversion_cast" and op.operands[0].type == op.results[0].type:
            op.results[0].replace_all_uses_with(op.operands[0])
            op.erase()
    for op in func.parent.regions[0].blocks[0].operations:
        if op.operation.name == "memref.global":
            _stored_global(op.operation)


def _stored_global(op: ir.Operation) -> None:
    """A memref.global of an unsigned or low-precision type, retyped with the same bytes."""
    t = ir.MemRefType(ir.TypeAttr(op.attributes["type"]).value)
    stored = storage_type(t)
    if stored == t:
        return
    op.attributes["type"] = ir.TypeAttr.get(stored)
    if "initial_value" in op.attributes and isinstance(op.attributes["initial_value"], ir.DenseElementsAttr):
        # The same bits as integers of the storage type (a byte each for the low-precision formats).
        data = ops.dense_array(ir.DenseElementsAttr(op.attributes["initial_value"]))
        bits = ir.IntegerType(stored.element_type).width
        stored_data = data.view(np.dtype(f"int{bits}")) if data.itemsize * 8 == bits else data.view(np.int8)
        tensor = ir.RankedTensorType.get(t.shape, stored.element_type)
        op.attributes["initial_value"] = ir.DenseElementsAttr.get(np.ascontiguousarray(stored_data), type=tensor)


# The bytes of the vectors codegen writes: AVX-512's zmm (LLVM splits them where the target's are narrower).
VECTOR_BYTES = 64


def vector_lanes(elt: ir.Type) -> int:
    """How many elements of type `elt` a vector of VECTOR_BYTES holds."""
    return VECTOR_BYTES * 8 // width(elt)


def index(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), ir.IntegerAttr.get(ir.IndexType.get(), value)).result


def fill(dest: ir.Value, value: float) -> None:
    linalg.fill(scalar(ops.element_type(dest), value), outs=[dest])


def row_major_strides(dims: Sequence[int]) -> list[int]:
    strides = [1] * len(dims)
    for i in range(len(dims) - 2, -1, -1):
        strides[i] = strides[i + 1] * dims[i + 1]
    return strides


def reshape(value: ir.Value, dims: Sequence[int]) -> ir.Value:
    """The same contiguous bytes with shape `dims`: a reinterpret_cast, which expand-strided-metadata folds."""
    dims = [int(d) for d in dims]
    result = ops.memref_type(dims, ops.element_type(value))
    return memref.ReinterpretCastOp(
        result, value, [], [], [], ops.i64_array([0]), ops.i64_array(dims), ops.i64_array(row_major_strides(dims))
    ).result


def block(value: ir.Value, start: Sequence[int], sizes: Sequence[int], op: ir.Operation) -> ir.Value:
    """The block of `value` of shape `sizes` at offset `start`, as a strided subview."""
    dims = ops.shape(value)
    if len(start) != len(dims) or len(sizes) != len(dims):
        raise fail(op, f"has a start of rank {len(start)} for buffers of rank {len(dims)}")
    if any(s < 0 or s + n > d for s, n, d in zip(start, sizes, dims, strict=True)):
        raise fail(op, f"block {list(sizes)} at {list(start)} does not fit in {list(dims)}")
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


def loop_nest(bounds: Sequence[int], body: Callable[[list[ir.Value]], None]) -> None:
    """Nested scf.for loops over [0, bound) for each bound; `body` gets the induction variables."""
    if not bounds:
        body([])
        return
    loop = scf.ForOp(index(0), index(bounds[0]), index(1))
    with ir.InsertionPoint(loop.body):
        loop_nest(bounds[1:], lambda ivs: body([loop.induction_variable, *ivs]))
        scf.YieldOp([])


def reduce_loop(
    upper: int | ir.Value, init: ir.Value, step: Callable[[ir.Value, ir.Value], ir.Value]
) -> ir.Value:
    """A scf.for over [0, upper) carrying one value: `step(j, carried)` returns the next one; `upper` is a
    number or an index value known at run time."""
    loop = scf.ForOp(index(0), index(upper) if isinstance(upper, int) else upper, index(1), [init])
    with ir.InsertionPoint(loop.body):
        scf.YieldOp([step(loop.induction_variable, loop.inner_iter_args[0])])
    return loop.results[0]


def pair(op: ir.Operation, name: str) -> list[int]:
    values = ops.ints(op, name)
    if len(values) != 2 or any(v < 1 for v in values):
        raise fail(op, f"needs two positive '{name}', got {values}")
    return values


def rank4(op: ir.Operation, value: ir.Value) -> tuple[int, int, int, int]:
    dims = ops.shape(value)
    if len(dims) != 4:
        raise fail(op, f"needs NCHW buffers, got {list(dims)}")
    return dims[0], dims[1], dims[2], dims[3]


class Conv(NamedTuple):
    """What every convolution instruction's lowering reads: its buffers and its window attributes."""

    dest: ir.Value
    src: ir.Value
    filter: ir.Value
    bias: ir.Value
    kernels: list[int]
    strides: list[int]
    dilation: list[int]
    group: int


def conv_operands(op: ir.Operation) -> Conv:
    """The buffers and window attributes of a convolution instruction (NCHW, transposed or a backend's)."""
    dest, src, filter_, bias = op.operands
    window = [pair(op, name) for name in ("kernels", "strides", "dilation")]
    return Conv(dest, src, filter_, bias, *window, ops.integer(op, "group"))


# ----------------------------------------------------------------------------------------------------------
# Lowering factories


def with_scalars(
    inputs: Sequence[ir.Value], dest: ir.Value, body: Callable[[list[ir.Value]], ir.Value]
) -> None:
    """An elementwise instruction on `inputs` into `dest`. An input whose every element is one known value (a
    buffer only a splat wrote: ReLU's zeros, as glow-lower writes max(x, splat 0); a constant global of one
    value: a GELU's sqrt 2, a select's -inf) is that scalar in the body instead of a buffer read per element,
    whatever its position (1 - x, 1 / x, where(mask, x, -inf))."""
    known = [_splat_scalar(v) if v != dest else None for v in inputs]
    if all(k is not None for k in known):
        known[0] = None  # the generic still reads one buffer, which gives the loop its shape
    read = [v for v, k in zip(inputs, known, strict=True) if k is None]

    def full(args: list[ir.Value]) -> ir.Value:
        it = iter(args)
        return body([next(it) if k is None else scalar(ops.element_type(v), k) for v, k in zip(inputs, known)])

    elementwise(read, dest, full)


# The constant globals whose value is a splat, by symbol: glow-ir-to-linalg's, for the module it lowers.
SPLAT_GLOBALS: ContextVar[Mapping[str, float | int]] = ContextVar("glow_splat_globals", default={})


def splat_globals(module: ir.Operation) -> dict[str, float | int]:
    """The scalar of each constant `memref.global` of `module` whose initial value is a splat (the importer's
    scalar initializers broadcast to an operand's shape, a dequantization's scale), by symbol name."""
    found: dict[str, float | int] = {}
    for op in module.regions[0].blocks[0].operations:
        if op.operation.name != "memref.global" or "constant" not in op.attributes:
            continue
        value = op.attributes["initial_value"] if "initial_value" in op.attributes else None
        if isinstance(value, ir.DenseElementsAttr) and value.is_splat:
            element = value.get_splat_value()
            if isinstance(element, ir.FloatAttr | ir.IntegerAttr):
                found[ir.StringAttr(op.attributes["sym_name"]).value] = ops.number(element)
    return found


# `_splat_scalar`'s answers within one glow-ir-to-linalg run, by buffer: a splat that glow-cse shared reads in
# every block of a QDQ model (its zero point), and each reader asked about all its uses (quadratic: 2.3 s of a
# 400-block chain's compile). Lowering adds readers' views of a buffer, never a writer, so an answer holds.
SPLAT_BUFFERS: ContextVar[dict[ir.Value, float | int | None] | None] = ContextVar("glow_splat_buffers", default=None)


def _splat_scalar(buffer: ir.Value) -> float | int | None:
    """The value of `buffer` when every element is one known scalar: a constant global of a splat value
    (`SPLAT_GLOBALS`), or a buffer whose only write in its function is a splat (a glow_ir.splat or the
    linalg.fill it became). While a buffer is live no other buffer shares its arena bytes, so only writes
    through this value can change it."""
    known = SPLAT_BUFFERS.get()
    if known is None:
        return _splat_scalar_of(buffer)
    if buffer not in known:
        known[buffer] = _splat_scalar_of(buffer)
    return known[buffer]


def _splat_scalar_of(buffer: ir.Value) -> float | int | None:
    owner = buffer.owner
    # (`.operation.name`: memref.GetGlobalOp's `name` is its symbol attribute.)
    if isinstance(owner, ir.Operation | ir.OpView) and owner.operation.name == "memref.get_global":
        return SPLAT_GLOBALS.get().get(ir.FlatSymbolRefAttr(owner.attributes["name"]).value)
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
    return ops.number(attr)




def float_only(lowering: Lowering) -> Lowering:
    """`lowering`, for instructions defined on floating-point buffers only (docs/ARCHITECTURE.md)."""

    def lower(op: ir.Operation) -> None:
        for i, value in enumerate(op.operands):
            elt = ops.element_type(value)
            if not is_float(elt):
                raise fail(op, f"takes floating-point buffers only, operand {i} has element type {elt}")
        lowering(op)

    return lower


def has_identity_layout(value: ir.Value) -> bool:
    """A memref whose layout is the plain row-major one (function arguments, arena views, globals)."""
    layout = ir.MemRefType(value.type).layout
    return isinstance(layout, ir.AffineMapAttr) and layout.value == ir.AffineMap.get_identity(layout.value.n_dims)


def split_last(view: ir.Value, inner: int) -> ir.Value:
    """`view` with its last dim n split into (n / inner, inner) (an expand_shape, foldable like a subview)."""
    t = ir.MemRefType(view.type)
    dims = list(t.shape)
    strides, offset = t.get_strides_and_offset()
    sizes = [*dims[:-1], dims[-1] // inner, inner]
    layout = (
        None
        if has_identity_layout(view)
        else ir.StridedLayoutAttr.get(offset, [*strides[:-1], strides[-1] * inner, strides[-1]])
    )
    result = ir.MemRefType.get(sizes, t.element_type, layout=layout)
    groups = [[d] for d in range(len(dims) - 1)] + [[len(dims) - 1, len(dims)]]
    reassociation = ir.ArrayAttr.get([ir.ArrayAttr.get([ops.i64(d) for d in g]) for g in groups])
    return memref.expand_shape(result, view, reassociation, [], ops.i64_array(sizes))
