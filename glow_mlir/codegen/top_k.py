"""glow-ir-to-linalg's lowering of top_k: each row's k best, best first, ties to the lower index, NaN above
every number (the interpreter's and onnxruntime's order).

A short row sorted (nearly) whole is ranked by counting: element j's rank is the count of elements ahead of
it, a vector of the row at a time where the row is contiguous, and j goes to slot rank when rank < k. Any
other row keeps its k best in a binary heap in dest's own slots (O(n log k), no scratch buffer), its scan
passing over blocks of a contiguous row none of whose elements beat the root with one vector compare, then
sorts them in place. docs/OPTIMIZATIONS.md ("TopK") has the measurements.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
from mlir import ir
from mlir.dialects import arith, memref, scf, vector

from glow_mlir import ops
from glow_mlir.codegen.builders import index, loop_nest, vector_lanes
from glow_mlir.codegen.table import fail, lowering
from glow_mlir.opdefs import scalar as s


def _ranking(largest: bool) -> tuple[Callable[..., ir.Value], Callable[..., ir.Value]]:
    """`better(x, y)`: x ranks before y by value, NaN above every number (numpy's sort order, as
    onnxruntime has it), and `same(x, y)`: neither ranks before the other. Scalars, or vectors of floats and
    signless integers (the heap's scan compares blocks of a row at once)."""
    greater = arith.CmpFPredicate.OGT if largest else arith.CmpFPredicate.OLT
    ordered_int = s.compare(greater, arith.CmpIPredicate.sgt if largest else arith.CmpIPredicate.slt)
    equal_int = s.compare(arith.CmpFPredicate.OEQ, arith.CmpIPredicate.eq)

    def is_float(t: ir.Type) -> bool:
        return s.is_float(t.element_type if isinstance(t, ir.VectorType) else t)

    def nan(x: ir.Value) -> ir.Value:
        return arith.cmpf(arith.CmpFPredicate.UNO, x, x)

    def number(x: ir.Value) -> ir.Value:
        return arith.cmpf(arith.CmpFPredicate.ORD, x, x)

    def better(x: ir.Value, y: ir.Value) -> ir.Value:
        if not is_float(x.type):
            return ordered_int(x, y)
        # Largest: a NaN x beats a number y; smallest: a number x beats a NaN y.
        nan_order = arith.andi(nan(x), number(y)) if largest else arith.andi(number(x), nan(y))
        return arith.ori(arith.cmpf(greater, x, y), nan_order)

    def same(x: ir.Value, y: ir.Value) -> ir.Value:
        if not is_float(x.type):
            return equal_int(x, y)
        return arith.ori(arith.cmpf(arith.CmpFPredicate.OEQ, x, y), arith.andi(nan(x), nan(y)))

    return better, same


# A row is ranked by counting (n^2 compares, a vector of them at a time on contiguous rows) rather than sorted
# through a heap (a mispredicted branch and two dependent loads per level) when n^2 < RANK_COST k log2 k.
# Kernel times per row of both ways (Zen 5, f32): n = k = 54 0.37 against 2.1 us, 16 of 54 0.36 / 0.49,
# 8 of 54 0.36 / 0.22, 256 of 256 7.6 / 8.8, 512 of 512 29 / 18, 32 of 128 1.9 / 1.3.
RANK_COST = 40

_Slots = Callable[[ir.Value], list[ir.Value]]  # a row's position -> the indices of that element


@dataclasses.dataclass(frozen=True)
class _Row:
    """One row of a top_k: the buffers, the row's element indices (`at`), its length n, k, the (better,
    same) ranking and how many elements a vector compares (0: one at a time)."""

    dest: ir.Value
    src: ir.Value
    at: _Slots
    n: int
    k: int
    ranking: tuple[Callable[..., ir.Value], ...]
    lanes: int


_Step = tuple[ir.Value, ir.Value]  # a heap sift's step: whether the hole moves, the slot it moves to


@lowering("top_k")
def _top_k(op: ir.Operation) -> None:
    """Each row's k best, best first, ties to the lower index: ranked by counting on short rows whose k is most
    of the row, else kept in a binary heap (_heap_top_k)."""
    dest, src = op.operands
    axis, k = ops.integer(op, "axis"), ops.integer(op, "k")
    dims = ops.shape(src)
    if not 0 <= axis < len(dims) or not 1 <= k <= dims[axis] or ops.shape(dest) != (*dims[:axis], k, *dims[axis + 1 :]):
        raise fail(op, f"cannot take the top {k} along axis {axis} of {list(dims)} into {list(ops.shape(dest))}")
    n = dims[axis]
    ranking = _ranking(bool(ops.integer(op, "largest")))
    by_rank = n * n < RANK_COST * k * k.bit_length()
    lanes = _block_lanes(src, axis)

    def row(outer: list[ir.Value]) -> None:
        def at(i: ir.Value) -> list[ir.Value]:
            return [*outer[:axis], i, *outer[axis:]]

        (_ranked_top_k if by_rank else _heap_top_k)(_Row(dest, src, at, n, k, ranking, lanes))

    loop_nest([*dims[:axis], *dims[axis + 1 :]], row)


def _ranked_top_k(row: _Row) -> None:
    """Element j's rank is the count of elements ahead of it (a better value, or the same at a lower index);
    the order is total, so the ranks are a permutation and rank < k puts j in its slot. A contiguous row is
    compared `lanes` elements at a time (the last block masked), else one at a time."""
    dest, src, at, n, k, lanes = row.dest, row.src, row.at, row.n, row.k, row.lanes
    better, same = row.ranking
    i32 = ir.IntegerType.get_signless(32)
    each = scf.ForOp(index(0), index(n), index(1))
    with ir.InsertionPoint(each.body):
        j = each.induction_variable
        v = memref.load(src, at(j))
        if lanes:
            rank = _vector_count(row, j, v)
        else:
            count = scf.ForOp(index(0), index(n), index(1), [arith.constant(i32, 0)])
            with ir.InsertionPoint(count.body):
                i = count.induction_variable
                w = memref.load(src, at(i))
                ahead = arith.ori(better(w, v), arith.andi(same(w, v), arith.cmpi(arith.CmpIPredicate.slt, i, j)))
                scf.YieldOp([arith.addi(count.inner_iter_args[0], arith.extui(i32, ahead))])
            rank = count.results[0]
        rank = arith.index_cast(ir.IndexType.get(), rank)
        kept = scf.IfOp(arith.cmpi(arith.CmpIPredicate.slt, rank, index(k)), [], has_else=False)
        with ir.InsertionPoint(kept.then_block):
            memref.store(arith.index_cast(ir.IntegerType.get_signless(64), j), dest, at(rank))
            scf.YieldOp([])
        scf.YieldOp([])


def _vector_count(row: _Row, j: ir.Value, v: ir.Value) -> ir.Value:
    """The i32 count of row elements ahead of element j (value v), `lanes` at a time: per lane a count, summed
    at the end; the blocks' lane positions against j decide the ties."""
    src, at, n, lanes = row.src, row.at, row.n, row.lanes
    better, same = row.ranking
    i32 = ir.IntegerType.get_signless(32)
    counts_type, values_type = ir.VectorType.get([lanes], i32), ir.VectorType.get([lanes], v.type)
    lane = np.arange(lanes, dtype=np.int32)
    positions = arith.constant(counts_type, ir.DenseElementsAttr.get(lane, type=counts_type))
    one = arith.constant(counts_type, ir.DenseElementsAttr.get_splat(counts_type, ir.IntegerAttr.get(i32, 1)))
    zero = arith.constant(counts_type, ir.DenseElementsAttr.get_splat(counts_type, ir.IntegerAttr.get(i32, 0)))
    pivot, pivot_at = vector.broadcast(values_type, v), vector.broadcast(counts_type, arith.index_cast(i32, j))

    def add_block(first: ir.Value, counts: ir.Value, valid: int) -> ir.Value:
        if valid < lanes:
            mask = vector.constant_mask(ir.VectorType.get([lanes], ir.IntegerType.get_signless(1)), [valid])
            w = vector.maskedload(values_type, src, at(first), mask, pivot)
        else:
            mask, w = None, vector.load(values_type, src, at(first))
        earlier = arith.cmpi(arith.CmpIPredicate.slt,
                             arith.addi(positions, vector.broadcast(counts_type, arith.index_cast(i32, first))),
                             pivot_at)  # fmt: skip
        ahead = arith.ori(better(w, pivot), arith.andi(same(w, pivot), earlier))
        if mask is not None:
            ahead = arith.andi(ahead, mask)
        return arith.addi(counts, arith.select(ahead, one, zero))

    blocks, rest = divmod(n, lanes)
    counts = zero
    if blocks:
        loop = scf.ForOp(index(0), index(blocks * lanes), index(lanes), [zero])
        with ir.InsertionPoint(loop.body):
            scf.YieldOp([add_block(loop.induction_variable, loop.inner_iter_args[0], lanes)])
        counts = loop.results[0]
    if rest:
        counts = add_block(index(blocks * lanes), counts, rest)
    return vector.reduction(i32, vector.CombiningKind.ADD, counts)


def _block_lanes(src: ir.Value, axis: int) -> int:
    """How many elements of a row a vector compares (the heap's scan, the counting): 64 bytes where the rows are
    contiguous (axis last, unit stride) and of a type `_ranking` compares as vectors, else 0 (one by one)."""
    elt = ops.element_type(src)
    contiguous = axis == len(ops.shape(src)) - 1 and ir.MemRefType(src.type).get_strides_and_offset()[0][-1] == 1
    if not contiguous or s.is_unsigned(elt) or s.is_bool(elt) or s.width(elt) not in (32, 64):
        return 0
    return vector_lanes(elt)


def _heap_top_k(row: _Row) -> None:
    """The row's k best as a binary heap in dest's own slots, then sorted in place (heapsort): O(n log k)
    compares at worst, about n where the best come early or at random, no scratch buffer. The root is the worst
    kept element; a later element enters only when it ranks before the root (on a tie the kept one has the
    lower index), and the final sort moves the worst left to the back. Slots hold indices into the row; their
    values are read through them."""
    dest, src, at, n, k, lanes = row.dest, row.src, row.at, row.n, row.k, row.lanes
    better, same = row.ranking
    i1, i64, idx = ir.IntegerType.get_signless(1), ir.IntegerType.get_signless(64), ir.IndexType.get()

    def slot(s: ir.Value) -> ir.Value:
        return arith.index_cast(idx, memref.load(dest, at(s)))

    def after(v: ir.Value, i: ir.Value, w: ir.Value, j: ir.Value) -> ir.Value:
        """Row element i (value v) ranks after element j (value w)."""
        return arith.ori(better(w, v), arith.andi(same(v, w), arith.cmpi(arith.CmpIPredicate.sgt, i, j)))

    def sift(e: ir.Value, hole: ir.Value, step: Callable[[ir.Value, ir.Value], _Step]) -> None:
        """Moves the hole while `step(hole, e's value)` gives (move, next slot): next's element into the hole;
        then row element e into it."""
        loop = scf.WhileOp([idx, idx], [hole])
        before = loop.before.blocks.append(idx)
        with ir.InsertionPoint(before):
            move, to = step(before.arguments[0], memref.load(src, at(e)))
            scf.ConditionOp(move, [before.arguments[0], to])
        moved = loop.after.blocks.append(idx, idx)
        with ir.InsertionPoint(moved):
            memref.store(memref.load(dest, at(moved.arguments[1])), dest, at(moved.arguments[0]))
            scf.YieldOp([moved.arguments[1]])
        memref.store(arith.index_cast(i64, e), dest, at(loop.results[0]))

    def guarded(condition: ir.Value, p: ir.Value, then: Callable[[], _Step]) -> _Step:
        """(then()) where `condition` holds, else (false, p): the loads in `then` stay inside the heap."""
        branch = scf.IfOp(condition, [i1, idx], has_else=True)
        with ir.InsertionPoint(branch.then_block):
            scf.YieldOp(list(then()))
        with ir.InsertionPoint(branch.else_block):
            scf.YieldOp([arith.constant(i1, 0), p])
        return branch.results[0], branch.results[1]

    def up(e: ir.Value) -> Callable[[ir.Value, ir.Value], _Step]:
        """Toward the root while e ranks after the parent (the root is the worst)."""

        def step(h: ir.Value, v: ir.Value) -> _Step:
            def parent() -> _Step:
                q = arith.divui(arith.subi(h, index(1)), index(2))
                eq = slot(q)
                return after(v, e, memref.load(src, at(eq)), eq), q

            return guarded(arith.cmpi(arith.CmpIPredicate.sgt, h, index(0)), h, parent)

        return step

    def down(e: ir.Value, size: ir.Value) -> Callable[[ir.Value, ir.Value], _Step]:
        """Toward the leaves of a heap of `size` slots while the worse child ranks after e."""

        def step(p: ir.Value, v: ir.Value) -> _Step:
            c1 = arith.addi(arith.muli(p, index(2)), index(1))

            def child() -> _Step:
                # A missing second child reads the first again.
                c2 = arith.addi(c1, index(1))
                c2 = arith.select(arith.cmpi(arith.CmpIPredicate.slt, c2, size), c2, c1)
                e1, e2 = slot(c1), slot(c2)
                v1, v2 = memref.load(src, at(e1)), memref.load(src, at(e2))
                second = after(v2, e2, v1, e1)
                c, ec, vc = (arith.select(second, b, a) for a, b in ((c1, c2), (e1, e2), (v1, v2)))
                return after(vc, ec, v, e), c

            return guarded(arith.cmpi(arith.CmpIPredicate.slt, c1, size), p, child)

        return step

    # The heap of the row's first k, each sifted up from the next free slot.
    build = scf.ForOp(index(0), index(k), index(1))
    with ir.InsertionPoint(build.body):
        sift(build.induction_variable, build.induction_variable, up(build.induction_variable))
        scf.YieldOp([])

    def scan(start: ir.Value, stop: ir.Value, worst: ir.Value) -> ir.Value:
        """Row elements [start, stop) against the root, whose value is carried in a register."""
        loop = scf.ForOp(start, stop, index(1), [worst])
        with ir.InsertionPoint(loop.body):
            j, worst = loop.induction_variable, loop.inner_iter_args[0]
            enters = scf.IfOp(better(memref.load(src, at(j)), worst), [worst.type], has_else=True)
            with ir.InsertionPoint(enters.then_block):
                sift(j, index(0), down(j, index(k)))
                scf.YieldOp([memref.load(src, at(slot(index(0))))])
            with ir.InsertionPoint(enters.else_block):
                scf.YieldOp([worst])
            scf.YieldOp([enters.results[0]])
        return loop.results[0]

    # The rest of the row: a block of `lanes` elements none of which beats the root is passed over by one
    # vector compare (most of a long row, once the heap holds good elements); the others one by one.
    worst = memref.load(src, at(slot(index(0))))
    blocks = (n - k) // lanes if lanes else 0
    if blocks:
        vector_type = ir.VectorType.get([lanes], worst.type)
        each = scf.ForOp(index(0), index(blocks), index(1), [worst])
        with ir.InsertionPoint(each.body):
            first = arith.addi(index(k), arith.muli(each.induction_variable, index(lanes)))
            block_worst = each.inner_iter_args[0]
            values = vector.load(vector_type, src, at(first))
            hits = better(values, vector.broadcast(vector_type, block_worst))
            any_hit = vector.reduction(ir.IntegerType.get_signless(1), vector.CombiningKind.OR, hits)
            branch = scf.IfOp(any_hit, [worst.type], has_else=True)
            with ir.InsertionPoint(branch.then_block):
                scf.YieldOp([scan(first, arith.addi(first, index(lanes)), block_worst)])
            with ir.InsertionPoint(branch.else_block):
                scf.YieldOp([block_worst])
            scf.YieldOp([branch.results[0]])
        worst = each.results[0]
    if k + blocks * lanes < n:
        scan(index(k + blocks * lanes), index(n), worst)

    # Heapsort: the root (the worst left) to the back; the back's element sifted down from the root.
    order = scf.ForOp(index(1), index(k), index(1))
    with ir.InsertionPoint(order.body):
        end = arith.subi(index(k), order.induction_variable)
        last = slot(end)
        memref.store(memref.load(dest, at(index(0))), dest, at(end))
        sift(last, index(0), down(last, end))
        scf.YieldOp([])
