"""glow-ir-to-linalg's lowering of arg_max / arg_min: the index of the first element along an axis that no later
one is strictly better than (a NaN beats any number, as in numpy), as i64.

One element at a time (a compare and two selects per element, an scf loop per output) ran a VQ-VAE's argmin over
[256, 128] distances at 4.2 ns an element, 45 % of that model's time. Where the source's innermost dim has unit
stride and its type is a 32- or 64-bit float or signless integer, the search goes a 64-byte vector at a time:

- along that innermost dim (a row per output: logits over classes, a codebook's distances), each lane keeps the
  best of the elements it sees and where it was, a vector of indices beside the vector of values; the tail
  vector is a masked load padded with the worst value (never strictly better); then the lanes are merged in
  halves (log2 of the lanes steps of vector compares), the better value or on a tie the lower index winning;
- along any other axis (a segmentation head's classes in NCHW), a vector holds one element of each of 64 bytes'
  worth of outputs along the innermost dim, which go through the axis together, one compare per step, and
  their indices are stored as a vector.
Both keep the scalar search's order exactly: within a lane later positions come later, and the merge breaks ties
by index.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from mlir import ir
from mlir.dialects import arith, memref, scf, vector

from glow_mlir import ops
from glow_mlir.codegen.builders import index, is_float, loop_nest, vector_lanes
from glow_mlir.codegen.table import fail, register_lowerings
from glow_mlir.opdefs import scalar as s

# A row along the innermost dim is searched by vectors when it is at least this many vectors long.
ROW_VECTORS = 2

_Better = Callable[[ir.Value, ir.Value], ir.Value]


def _first_better(on_float: arith.CmpFPredicate, on_int: arith.CmpIPredicate) -> _Better:
    """`better(v, best)`: whether `v` replaces `best` in a first-occurrence search (scalars or vectors): strictly
    better, or a NaN over a number."""

    def better(v: ir.Value, best: ir.Value) -> ir.Value:
        elt = v.type.element_type if isinstance(v.type, ir.VectorType) else v.type
        if not is_float(elt):
            return arith.cmpi(on_int, v, best)
        strictly = arith.cmpf(on_float, v, best)
        nan_over_number = arith.andi(
            arith.cmpf(arith.CmpFPredicate.UNO, v, v), arith.cmpf(arith.CmpFPredicate.ORD, best, best)
        )
        return arith.ori(strictly, nan_over_number)

    return better


def _lanes(src: ir.Value) -> int:
    """Elements of `src` in a 64-byte vector where its innermost dim has unit stride and its type compares as
    vectors (32- or 64-bit floats and signless integers), else 0: one element at a time."""
    elt = ops.element_type(src)
    if ir.MemRefType(src.type).get_strides_and_offset()[0][-1] != 1:
        return 0
    if s.is_unsigned(elt) or s.is_bool(elt) or s.width(elt) not in (32, 64):
        return 0
    return vector_lanes(elt)


def _arg_search(on_float: arith.CmpFPredicate, on_int: arith.CmpIPredicate, largest: bool) -> Callable[..., None]:
    better = _first_better(on_float, on_int)

    def lower(op: ir.Operation) -> None:
        dest, src = op.operands
        axis, keep = ops.integer(op, "axis"), bool(ops.integer(op, "keepDims"))
        dims = ops.shape(src)
        if not 0 <= axis < len(dims):
            raise fail(op, f"axis {axis} is out of range for a source of rank {len(dims)}")
        outer = [d for i, d in enumerate(dims) if i != axis]
        expected = (*dims[:axis], 1, *dims[axis + 1 :]) if keep else tuple(outer)
        i64 = ir.IntegerType.get_signless(64)
        if ops.shape(dest) != expected or ops.element_type(dest) != i64:
            raise fail(op, f"destination {dest.type} is not an i64 buffer of shape {list(expected)}")
        search = _Search(dest, src, axis, keep, better, largest)
        last = len(dims) - 1
        if search.lanes and axis == last and dims[axis] >= ROW_VECTORS * search.lanes:
            loop_nest(outer, search.row)
        elif search.lanes and axis != last:
            loop_nest(outer[:-1], search.columns)
        else:
            loop_nest(outer, search.scalar)

    return lower


class _Search:
    """One arg_max / arg_min: its buffers, axis and order, and the searches of one output or a vector of them."""

    def __init__(self, dest: ir.Value, src: ir.Value, axis: int, keep: bool, better: _Better, largest: bool) -> None:
        self.dest, self.src, self.axis, self.keep, self.better = dest, src, axis, keep, better
        self.n = ops.shape(src)[axis]
        self.lanes = _lanes(src)
        self.largest = largest
        if self.lanes:
            self.values = ir.VectorType.get([self.lanes], ops.element_type(src))
            self.positions = ir.VectorType.get([self.lanes], ir.IntegerType.get_signless(32))

    def worst(self) -> ir.Value:
        """The padding of a masked load: a vector of the value never strictly better than another."""
        elt = self.values.element_type
        return vector.broadcast(self.values, s.lowest(elt) if self.largest else s.highest(elt))

    def at(self, ivs: list[ir.Value], j: ir.Value) -> list[ir.Value]:
        """The source indices of position j along the axis, the other dims at `ivs`."""
        return [*ivs[: self.axis], j, *ivs[self.axis :]]

    def out(self, ivs: list[ir.Value]) -> list[ir.Value]:
        return self.at(ivs, index(0)) if self.keep else ivs

    def scalar(self, ivs: list[ir.Value]) -> None:
        """One output, an element at a time."""
        zero = index(0)
        loop = scf.ForOp(index(1), index(self.n), index(1), [memref.load(self.src, self.at(ivs, zero)), zero])
        with ir.InsertionPoint(loop.body):
            best, best_at = loop.inner_iter_args
            v = memref.load(self.src, self.at(ivs, loop.induction_variable))
            b = self.better(v, best)
            scf.YieldOp([arith.select(b, v, best), arith.select(b, loop.induction_variable, best_at)])
        memref.store(arith.index_cast(ir.IntegerType.get_signless(64), loop.results[1]), self.dest, self.out(ivs))

    def row(self, ivs: list[ir.Value]) -> None:
        """One output along the innermost dim: a best value and position per lane, then the lanes merged."""
        lanes, i32 = self.lanes, self.positions.element_type
        lane_numbers = ir.DenseElementsAttr.get(np.arange(lanes, dtype=np.int32), type=self.positions)
        iota = arith.constant(self.positions, lane_numbers)

        def step(j: ir.Value, v: ir.Value, best: ir.Value, best_at: ir.Value) -> tuple[ir.Value, ir.Value]:
            b = self.better(v, best)
            here = arith.addi(iota, vector.broadcast(self.positions, arith.index_cast(i32, j)))
            return arith.select(b, v, best), arith.select(b, here, best_at)

        full, tail = divmod(self.n, lanes)
        first = vector.load(self.values, self.src, self.at(ivs, index(0)))
        loop = scf.ForOp(index(lanes), index(full * lanes), index(lanes), [first, iota])
        with ir.InsertionPoint(loop.body):
            j = loop.induction_variable
            v = vector.load(self.values, self.src, self.at(ivs, j))
            scf.YieldOp(list(step(j, v, *loop.inner_iter_args)))
        best, best_at = loop.results
        if tail:
            j = index(full * lanes)
            mask = vector.constant_mask(ir.VectorType.get([lanes], ir.IntegerType.get_signless(1)), [tail])
            v = vector.maskedload(self.values, self.src, self.at(ivs, j), mask, self.worst())
            best, best_at = step(j, v, best, best_at)
        # The lanes merged in halves: lane l against lane l + half, the better value or on a tie (neither
        # better) the lower position winning.
        half = lanes // 2
        while half:
            pairs = [lane + half if lane < half else lane for lane in range(lanes)]
            v, p = vector.shuffle(best, best, pairs), vector.shuffle(best_at, best_at, pairs)
            tie_first = arith.andi(_not(self.better(best, v)), arith.cmpi(arith.CmpIPredicate.slt, p, best_at))
            b = arith.ori(self.better(v, best), tie_first)
            best, best_at = arith.select(b, v, best), arith.select(b, p, best_at)
            half //= 2
        position = vector.extract(best_at, [], [0])
        memref.store(arith.extsi(ir.IntegerType.get_signless(64), position), self.dest, self.out(ivs))

    def columns(self, ivs: list[ir.Value]) -> None:
        """The outputs along the innermost dim at `ivs` (the other dims but the axis), a vector of them at a time
        through the axis."""
        width = ops.shape(self.src)[-1]
        full, tail = divmod(width, self.lanes)
        if full:
            loop = scf.ForOp(index(0), index(full * self.lanes), index(self.lanes))
            with ir.InsertionPoint(loop.body):
                self._column_block(ivs, loop.induction_variable, None)
                scf.YieldOp([])
        if tail:
            mask = vector.constant_mask(ir.VectorType.get([self.lanes], ir.IntegerType.get_signless(1)), [tail])
            self._column_block(ivs, index(full * self.lanes), mask)

    def _column_block(self, ivs: list[ir.Value], c0: ir.Value, mask: ir.Value | None) -> None:
        """The outputs at innermost positions c0 .. c0 + lanes - 1 (under `mask`)."""
        i32 = self.positions.element_type
        worst = self.worst() if mask is not None else None

        def load(j: ir.Value) -> ir.Value:
            at = self.at([*ivs, c0], j)
            if mask is None:
                return vector.load(self.values, self.src, at)
            return vector.maskedload(self.values, self.src, at, mask, worst)

        zero = vector.broadcast(self.positions, arith.constant(i32, 0))
        loop = scf.ForOp(index(1), index(self.n), index(1), [load(index(0)), zero])
        with ir.InsertionPoint(loop.body):
            j = loop.induction_variable
            best, best_at = loop.inner_iter_args
            v = load(j)
            b = self.better(v, best)
            here = vector.broadcast(self.positions, arith.index_cast(i32, j))
            scf.YieldOp([arith.select(b, v, best), arith.select(b, here, best_at)])
        wide = arith.extsi(ir.VectorType.get([self.lanes], ir.IntegerType.get_signless(64)), loop.results[1])
        at = self.out([*ivs, c0])
        if mask is None:
            vector.store(wide, self.dest, at)
        else:
            vector.maskedstore(self.dest, at, mask, wide)


def _not(x: ir.Value) -> ir.Value:
    """Logical not of an i1 vector."""
    ones = ir.DenseElementsAttr.get_splat(x.type, ir.IntegerAttr.get(ir.IntegerType.get_signless(1), 1))
    return arith.xori(x, arith.constant(x.type, ones))


register_lowerings(
    {
        "arg_max": _arg_search(arith.CmpFPredicate.OGT, arith.CmpIPredicate.sgt, largest=True),
        "arg_min": _arg_search(arith.CmpFPredicate.OLT, arith.CmpIPredicate.slt, largest=False),
    }
)
