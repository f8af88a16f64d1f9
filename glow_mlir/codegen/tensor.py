"""glow-ir-to-linalg's lowerings of data-movement instructions: copy, splat, views (tensor_view, block_view),
transpose, insert/extract tensor, broadcast, convert_to, select, the gathers, the scatters and cumsum (top_k:
top_k.py).

Gathers are a linalg.generic over dest that loads data at computed indices; an out-of-range index (ONNX
leaves it undefined) is clamped to the nearest element, so no read leaves the buffer. Scatters copy data to
dest, then scf loops over the updates in row-major order (the last of duplicate indices wins) store each one;
an update whose index is out of range is skipped, so no write leaves the buffer. cumsum scans its axis.

Views become memref views of the same buffer (a reinterpret_cast or a strided subview) that replace the
view's result; the others are linalg ops writing their destination. An alloc_activation or dealloc_activation
left over (glow-allocate did not run) is an error.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from mlir import ir
from mlir.dialects import arith, linalg, memref, scf

from glow_mlir import ops
from glow_mlir.codegen.builders import (
    block,
    fill,
    generic,
    has_identity_layout,
    identity_map,
    index,
    is_bool,
    loop_nest,
    reshape,
    scalar,
    width,
)
from glow_mlir.codegen.table import fail, lowering
from glow_mlir.opdefs import scalar as s


@lowering("alloc_activation")
@lowering("dealloc_activation")
def _leftover(op: ir.Operation) -> None:
    raise fail(op, "must be gone before glow-ir-to-linalg: run glow-allocate first")


@lowering("tensor_view")
def _tensor_view(op: ir.Operation) -> None:
    view = reshape(op.operands[0], ops.shape(op.results[0]))
    op.results[0].replace_all_uses_with(view)


@lowering("block_view")
def _block_view(op: ir.Operation) -> None:
    src = op.operands[0]
    view = block(src, ops.ints(op, "start"), ops.shape(op.results[0]), op)
    op.results[0].replace_all_uses_with(view)


@lowering("copy")
def _copy(op: ir.Operation) -> None:
    dest, src = op.operands
    linalg.copy(src, outs=[dest])


@lowering("splat")
def _splat(op: ir.Operation) -> None:
    # The value is an f32 attribute for float buffers and an integer one for integer and i1 buffers.
    attr = op.attributes["value"]
    value = ir.FloatAttr(attr).value if isinstance(attr, ir.FloatAttr) else ir.IntegerAttr(attr).value
    fill(op.operands[0], value)


@lowering("transpose")
def _transpose(op: ir.Operation) -> None:
    dest, src = op.operands
    shuffle = ops.ints(op, "shuffle")
    dims = ops.shape(src)
    if sorted(shuffle) != list(range(len(dims))):
        raise fail(op, f"shuffle {shuffle} is not a permutation of the source's dims")
    kept = [d for d in range(len(dims)) if dims[d] != 1]
    unit_innermost = 1 in (dims[-1], dims[shuffle[-1]]) if dims else False
    if unit_innermost and len(kept) < len(dims) and has_identity_layout(dest) and has_identity_layout(src):
        # Unit dims move nothing: where one is innermost in the source or the result, the same transpose of the
        # buffers without them, whose innermost dims are real ([2, 1024, 1, 256] -> [2, 256, 1024, 1] took 1.09 ms
        # as such, 0.14 as [2, 1024, 256] -> [2, 256, 1024]: a unit innermost dim left the recipe's register tiles
        # one element wide). Others keep their rank, which the recipe's NCHW -> NHWC forms read.
        position = {d: i for i, d in enumerate(kept)}
        shuffle = [position[d] for d in shuffle if d in position]
        src = reshape(src, [dims[d] for d in kept])
        dest = reshape(dest, [ops.shape(src)[d] for d in shuffle])
    if shuffle == sorted(shuffle):
        linalg.copy(src, outs=[dest])
        return
    linalg.transpose(src, outs=[dest], permutation=shuffle)


@lowering("insert_tensor")
def _insert_tensor(op: ir.Operation) -> None:
    dest, src = op.operands
    linalg.copy(src, outs=[block(dest, ops.ints(op, "start"), ops.shape(src), op)])


@lowering("extract_tensor")
def _extract_tensor(op: ir.Operation) -> None:
    dest, src = op.operands
    linalg.copy(block(src, ops.ints(op, "start"), ops.shape(dest), op), outs=[dest])


@lowering("broadcast")
def _broadcast(op: ir.Operation) -> None:
    dest, src = op.operands
    dest_dims, src_dims = ops.shape(dest), ops.shape(src)
    axis = ops.integer(op, "axis")
    if axis < 0 or axis + len(src_dims) > len(dest_dims):
        raise fail(op, f"cannot align {list(src_dims)} at axis {axis} in {list(dest_dims)}")
    exprs: list[ir.AffineExpr] = []
    for i, d in enumerate(src_dims):
        if d == dest_dims[axis + i]:
            exprs.append(ir.AffineDimExpr.get(axis + i))
        elif d == 1:
            exprs.append(ir.AffineConstantExpr.get(0))
        else:
            raise fail(op, f"cannot broadcast {list(src_dims)} to {list(dest_dims)} at axis {axis}")
    rank = len(dest_dims)
    generic([src], dest, [ir.AffineMap.get(rank, 0, exprs), identity_map(rank)], lambda a: a[0])


# Marks the linalg.generic of a gather with its axis, for a backend's gather kernel (the CPU backend's
# gather_recipes.py); the generic itself is the reference form, correct as it stands.
GATHER_AXIS_ATTR = "glow.gather_axis"


@lowering("gather")
def _gather(op: ir.Operation) -> None:
    dest, data, indices = op.operands
    axis = ops.integer(op, "axis")
    data_dims, index_dims = ops.shape(data), ops.shape(indices)
    if not 0 <= axis < len(data_dims):
        raise fail(op, f"axis {axis} is out of range for data of rank {len(data_dims)}")
    expected = (*data_dims[:axis], *index_dims, *data_dims[axis + 1 :])
    if ops.shape(dest) != expected:
        rule = f"is not data[:axis] + indices + data[axis+1:] = {list(expected)}"
        raise fail(op, f"destination {list(ops.shape(dest))} {rule}")
    index_type = ops.element_type(indices)
    if not isinstance(index_type, ir.IntegerType) or width(index_type) not in (32, 64):
        raise fail(op, f"needs i32 or i64 indices, got {index_type}")
    rank, count = len(expected), len(index_dims)
    index_map = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(axis + i) for i in range(count)])

    def body(a: list[ir.Value]) -> ir.Value:
        # Negative indices count from the end (numpy.take, ONNX Gather); out of range, the nearest row.
        outer = [linalg.IndexOp(ops.i64(d)).result for d in range(axis)]
        inner = [linalg.IndexOp(ops.i64(d)).result for d in range(axis + count, rank)]
        return memref.load(data, [*outer, _clamped(a[0], data_dims[axis]), *inner])

    gathered = generic([indices], dest, [index_map, identity_map(rank)], body)
    gathered.attributes[GATHER_AXIS_ATTR] = ops.i64(axis)


def _index_type(op: ir.Operation, indices: ir.Value) -> ir.Type:
    index_type = ops.element_type(indices)
    if not isinstance(index_type, ir.IntegerType) or width(index_type) not in (32, 64):
        raise fail(op, f"needs i32 or i64 indices, got {index_type}")
    return index_type


def _integer(like: ir.Value, number: int) -> ir.Value:
    """A constant of `like`'s type: an integer, or a vector of them (the CPU backend's gather kernel)."""
    if not isinstance(like.type, ir.VectorType):
        return scalar(like.type, number)
    element = ir.IntegerAttr.get(ir.VectorType(like.type).element_type, number)
    return arith.constant(like.type, ir.DenseElementsAttr.get_splat(like.type, element))


def _wrapped(value: ir.Value, size: int) -> ir.Value:
    """An index (or a vector of them) with a negative one counted from the end (ONNX), in its own type."""
    negative = arith.cmpi(arith.CmpIPredicate.slt, value, _integer(value, 0))
    return arith.select(negative, arith.addi(value, _integer(value, size)), value)


def in_range(value: ir.Value, size: int) -> ir.Value:
    """A wrapped index (or a vector of them) clamped into [0, size), in its own type: an out-of-range index
    reads the nearest element."""
    return arith.minsi(arith.maxsi(_wrapped(value, size), _integer(value, 0)), _integer(value, size - 1))


def _clamped(value: ir.Value, size: int) -> ir.Value:
    """`in_range` as an `index`."""
    return arith.index_cast(ir.IndexType.get(), in_range(value, size))


def _positions(rank: int) -> list[ir.Value]:
    return [linalg.IndexOp(ops.i64(d)).result for d in range(rank)]


@lowering("gather_elements")
def _gather_elements(op: ir.Operation) -> None:
    dest, data, indices = op.operands
    axis = ops.integer(op, "axis")
    data_dims, index_dims = ops.shape(data), ops.shape(indices)
    if len(index_dims) != len(data_dims) or not 0 <= axis < len(data_dims) or ops.shape(dest) != index_dims:
        raise fail(op, f"cannot gather {list(index_dims)} along axis {axis} of {list(data_dims)}")
    _index_type(op, indices)
    rank = len(index_dims)

    def body(a: list[ir.Value]) -> ir.Value:
        at = _positions(rank)
        at[axis] = _clamped(a[0], data_dims[axis])
        return memref.load(data, at)

    generic([indices], dest, [identity_map(rank), identity_map(rank)], body)


@lowering("gather_nd")
def _gather_nd(op: ir.Operation) -> None:
    dest, data, indices = op.operands
    b = ops.integer(op, "batch_dims")
    data_dims, index_dims = ops.shape(data), ops.shape(indices)
    k = index_dims[-1] if index_dims else 0
    if not index_dims or not 1 <= k <= len(data_dims) - b or ops.shape(dest) != (*index_dims[:-1], *data_dims[b + k :]):
        raise fail(op, f"cannot gather {list(ops.shape(dest))} from {list(data_dims)} by {list(index_dims)}")
    _index_type(op, indices)
    rank, rows = len(ops.shape(dest)), len(index_dims) - 1

    def body(_: list[ir.Value]) -> ir.Value:
        at = _positions(rank)
        picked = [
            _clamped(memref.load(indices, [*at[:rows], index(j)]), data_dims[b + j]) for j in range(k)
        ]
        return memref.load(data, [*at[:b], *picked, *at[rows:]])

    generic([], dest, [identity_map(rank)], body)


_COMBINE: dict[str, Callable[[ir.Value, ir.Value], ir.Value]] = {
    "none": lambda _, update: update, "add": s.add, "mul": s.mul, "max": s.maximum, "min": s.minimum,
}


def _scatter_start(op: ir.Operation) -> tuple[ir.Value, ir.Value, ir.Value, Callable[..., ir.Value]]:
    """dest = data, and how an update combines with the element it lands on."""
    dest, data, indices, updates = op.operands
    reduction = ir.StringAttr(op.attributes["reduction"]).value
    if reduction not in _COMBINE:
        raise fail(op, f"reduction '{reduction}' is not one of {', '.join(_COMBINE)}")
    if reduction != "none" and is_bool(ops.element_type(dest)):
        raise fail(op, f"reduction '{reduction}' needs numbers, got {ops.element_type(dest)}")
    if ops.shape(dest) != ops.shape(data):
        raise fail(op, f"destination {list(ops.shape(dest))} is not data's shape {list(ops.shape(data))}")
    _index_type(op, indices)
    linalg.copy(data, outs=[dest])
    return dest, indices, updates, _COMBINE[reduction]


def _store_if_inside(checks: Sequence[tuple[ir.Value, int]], store: Callable[[], None]) -> None:
    """Runs `store` only where every (wrapped index, size) pair of `checks` is in [0, size)."""
    inside = None
    for value, size in checks:
        ok = arith.andi(
            arith.cmpi(arith.CmpIPredicate.sge, value, scalar(value.type, 0)),
            arith.cmpi(arith.CmpIPredicate.slt, value, scalar(value.type, size)),
        )
        inside = ok if inside is None else arith.andi(inside, ok)
    branch = scf.IfOp(inside)
    with ir.InsertionPoint(branch.then_block):
        store()
        scf.YieldOp([])


def _combine_into(dest: ir.Value, at: list[ir.Value], update: ir.Value, combine: Callable[..., ir.Value]) -> None:
    memref.store(combine(memref.load(dest, at), update), dest, at)


@lowering("scatter_elements")
def _scatter_elements(op: ir.Operation) -> None:
    dest, indices, updates, combine = _scatter_start(op)
    axis = ops.integer(op, "axis")
    size = ops.shape(dest)[axis]

    def each(iv: list[ir.Value]) -> None:
        wrapped = _wrapped(memref.load(indices, iv), size)
        at = [*iv[:axis], arith.index_cast(ir.IndexType.get(), wrapped), *iv[axis + 1 :]]
        _store_if_inside([(wrapped, size)], lambda: _combine_into(dest, at, memref.load(updates, iv), combine))

    loop_nest(ops.shape(indices), each)


@lowering("scatter_nd")
def _scatter_nd(op: ir.Operation) -> None:
    dest, indices, updates, combine = _scatter_start(op)
    dims, index_dims = ops.shape(dest), ops.shape(indices)
    k = index_dims[-1]

    def each(iv: list[ir.Value]) -> None:
        wrapped = [_wrapped(memref.load(indices, [*iv, index(j)]), dims[j]) for j in range(k)]
        at = [arith.index_cast(ir.IndexType.get(), w) for w in wrapped]

        def write_slice() -> None:
            loop_nest(
                dims[k:],
                lambda jv: _combine_into(dest, [*at, *jv], memref.load(updates, [*iv, *jv]), combine),
            )

        _store_if_inside(list(zip(wrapped, dims[:k], strict=True)), write_slice)

    loop_nest(index_dims[:-1], each)


@lowering("cumsum")
def _cumsum(op: ir.Operation) -> None:
    """A sequential scan along the axis, in O(n): each step adds a slice of src to the previous slice of dest,
    a loop over the trailing dims' contiguous elements that LLVM vectorizes; on the last axis, the running sum
    of each row in a register."""
    dest, src = op.operands
    axis, dims = ops.integer(op, "axis"), ops.shape(src)
    exclusive, reverse = bool(ops.integer(op, "exclusive")), bool(ops.integer(op, "reverse"))
    n, elt = dims[axis], ops.element_type(src)
    if has_identity_layout(dest) and has_identity_layout(src):
        # Contiguous buffers as [before, n, after]: one flat loop over a slice (LLVM vectorizes one loop, the
        # innermost: over three trailing dims [4, 32, 32] a scan took 0.81 ns an element, flat 0.10).
        before, after = math.prod(dims[:axis]), math.prod(dims[axis + 1 :])
        dims = [before, n, after] if after > 1 else [before, n]
        dest, src, axis = reshape(dest, dims), reshape(src, dims), 1

    def position(step: ir.Value) -> ir.Value:
        """The step'th position along the axis in scan order."""
        return arith.subi(index(n - 1), step) if reverse else step

    def outer(before: list[ir.Value]) -> None:
        def at(t: ir.Value, after: list[ir.Value]) -> list[ir.Value]:
            return [*before, t, *after]

        if axis == len(dims) - 1:
            # One row: the sum so far carried in a register.
            scan = scf.ForOp(index(0), index(n), index(1), [scalar(elt, 0)])
            with ir.InsertionPoint(scan.body):
                t, total = position(scan.induction_variable), scan.inner_iter_args[0]
                grown = s.add(total, memref.load(src, at(t, [])))
                memref.store(total if exclusive else grown, dest, at(t, []))
                scf.YieldOp([grown])
            return
        first = index(n - 1 if reverse else 0)
        loop_nest(
            dims[axis + 1 :],
            lambda after: memref.store(scalar(elt, 0) if exclusive else memref.load(src, at(first, after)), dest,
                                       at(first, after)),
        )  # fmt: skip
        steps = scf.ForOp(index(1), index(n), index(1))
        with ir.InsertionPoint(steps.body):
            t, previous = position(steps.induction_variable), position(arith.subi(steps.induction_variable, index(1)))

            def add(after: list[ir.Value]) -> None:
                term = memref.load(src, at(previous if exclusive else t, after))
                memref.store(s.add(memref.load(dest, at(previous, after)), term), dest, at(t, after))

            loop_nest(dims[axis + 1 :], add)
            scf.YieldOp([])

    loop_nest(dims[:axis], outer)
