"""Bounded forms of ONNX's data-dependent ops, in glow's own domain (GLOW_DOMAIN): NonZeroBounded,
NonMaxSuppressionBounded, UniqueBounded, CompressBounded and TopKBounded.

glow compiles static shapes, but the results of NonZero, NonMaxSuppression, Unique, of Compress by a run-time
condition and of TopK by a run-time K are as long as the values make them. A model split at such an op
(frontends/onnx/stages.py) computes it in its bounded form: the ONNX op's inputs and attributes, its results
each padded with zeros along one axis (`padded_axes`) to the longest the op can make it, then one more result,
the count (an int64 scalar): the first `count` entries along the padded axis are the ONNX op's result, in its
order. The session cuts each padded result to the count and feeds the next stage.

Every form is composed from existing glow ops, so the compiled code computes it all. Their common step is a
stable compaction (`_pack`): the exclusive running sum of a 0/1 keep mask gives each kept entry its slot, the
dropped entries go behind the kept ones in order, so the slots are a permutation; one 1-D scatter of the
entries' positions to their slots gives, per slot, the entry it holds, gathered from the data and zeroed from
the count on. Costs, for n the padded length:

- NonZeroBounded(x): mask, compaction of the flat positions, coordinates by division: O(n), n = numel(x);
  indices [rank, n].
- CompressBounded(input, condition): the condition's mask, compaction of the slices: O(size of input).
- TopKBounded(X, K): a full top_k along the axis (all of it, best first: O(n log n) per row), the values
  gathered, those from min(max(K, 0), n) on zeroed. K < 0 counts as 0 (it is known only at run time).
- UniqueBounded(x) without an axis: a stable ascending sort (top_k of all n), boundaries between unequal
  neighbours (NaNs are one value, as numpy's), group numbers by a running sum, the groups' first elements
  compacted; counts by a scatter-add: O(n log n). Unsorted order (sorted = 0) re-packs the first occurrences
  in input order: O(n) more. With an axis, the slices are compared all against all (O(L^2 M) time and memory
  for L slices of M elements), lexicographically for sorted = 1.
- NonMaxSuppressionBounded: each (batch, class)'s boxes ranked by descending score (ties to the lower index,
  as the reference and onnxruntime), then one `glow.loop` over the ranks, all (batch, class) pairs at once:
  rank i is selected when its score passes the threshold, no selected box suppressed it and its class has
  fewer than max_output_boxes_per_class; it then suppresses every box whose IoU with it exceeds the threshold
  (the reference's tests, in float32). O(B C N) per iteration, O(B C N^2) in all; the loop ends early once
  every class is full. Selected [B C min(max_out, N), 3]. max_output_boxes_per_class, iou_threshold and
  score_threshold must be known at compile time; without max_output_boxes_per_class (or with 0) nothing is
  selected: the result is one zero row and count 0 (glow has no empty tensors).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from glow_mlir.builder import Tensor
from glow_mlir.errors import InvalidNodeError
from glow_mlir.frontends.onnx.node import BOUNDED_SUFFIX, NodeContext, Value, dtype, normalize_axis, rank, shape
from glow_mlir.frontends.onnx.ops_control import body_symbol, loop_op
from glow_mlir.frontends.onnx.registry import handles_glow
from glow_mlir.opdefs import control

# ONNX op -> its bounded form: `<op>Bounded` (node.BOUNDED_SUFFIX), whose attributes the op's schema types.
BOUNDED: dict[str, str] = {
    op: op + BOUNDED_SUFFIX for op in ("NonZero", "NonMaxSuppression", "Unique", "Compress", "TopK")
}

I64 = np.dtype(np.int64)


def _int_attr(node: onnx.NodeProto, name: str, shown: str) -> int | None:
    """Int attribute `name` of `node` (named `shown` in errors), None when absent."""
    for a in node.attribute:
        if a.name == name:
            if a.type != onnx.AttributeProto.INT:
                raise InvalidNodeError(f"node '{shown}' ({node.op_type}): attribute '{name}' must be of type INT, "
                                       f"got {onnx.AttributeProto.AttributeType.Name(a.type)}")
            return int(a.i)
    return None


def padded_axes(node: onnx.NodeProto, ranks: Sequence[int], name: str) -> list[int | None]:
    """Per ONNX output of `node` (an op of BOUNDED, default domain, named `name`; `ranks`: its inputs' ranks),
    the axis along which its bounded form pads that output, None for an output it does not pad (Unique's
    inverse_indices)."""
    op = node.op_type

    def axis(attribute: str, default: int | None) -> int | None:
        value = _int_attr(node, attribute, name)
        value = default if value is None else value
        return None if value is None else value % max(ranks[0], 1)

    if op == "NonZero":
        return [1]
    if op == "NonMaxSuppression":
        return [0]
    if op == "Unique":
        along = axis("axis", None)
        return [0 if along is None else along, 0, None, 0]
    if op == "Compress":
        along = axis("axis", None)
        return [0 if along is None else along]
    if op == "TopK":
        along = axis("axis", -1)
        return [along, along]
    raise ValueError(f"{op} has no bounded form")


# Composition helpers. `beside` is a value computed at run time, so that constants made for it stay constants
# of the graph (ctx.constant_beside) instead of folding into arrays of the result's size.


def _iota(ctx: NodeContext, n: int, beside: Value) -> Value:
    return ctx.constant_beside(np.arange(n, dtype=I64), beside)


def _sum(ctx: NodeContext, flags: Value) -> Value:
    """The int64 scalar sum of a 1-D int64 tensor."""
    return ctx.reshape(ctx.g.batched_reduce_add(flags, [0]), [])


def _along(ctx: NodeContext, v: Value, axis: int, dims: Sequence[int]) -> Value:
    """1-D `v` broadcast along `axis` of `dims`."""
    along = [1] * len(dims)
    along[axis] = shape(v)[0]
    return ctx.broadcast_to(ctx.reshape(v, along), dims)


def _below(ctx: NodeContext, count: Value, n: int, beside: Value) -> Value:
    """The bool mask [n] of the slots before `count`."""
    return ctx.g.cmp_lt(_iota(ctx, n, beside), ctx.broadcast_to(ctx.reshape(count, [1]), [n]))


def _zero_from(ctx: NodeContext, v: Value, axis: int, live: Value) -> Value:
    """`v` with its entries along `axis` where the bool mask `live` is false set to zero."""
    return ctx.g.select(_along(ctx, live, axis, shape(v)), v, ctx.full(shape(v), 0, dtype(v)))


def _pack(ctx: NodeContext, keep: Value, count: Value | None = None) -> tuple[Value, Value]:
    """(order, count) of a 0/1 int64 mask [n]: order[s] is the position of the s-th kept entry for s < count,
    then the dropped ones in order (a permutation: a scatter without duplicates)."""
    n = shape(keep)[0]
    iota = _iota(ctx, n, keep)
    count = _sum(ctx, keep) if count is None else count
    slot = ctx.g.cumsum(keep, 0, exclusive=True)
    # A dropped entry i goes behind the kept ones: count + (the dropped ones before it) = count + i - slot.
    behind = ctx.g.sub(ctx.g.add(ctx.broadcast_to(ctx.reshape(count, [1]), [n]), iota), slot)
    target = ctx.g.select(ctx.g.cmp_eq(keep, ctx.full([n], 1, I64)), slot, behind)
    return ctx.g.scatter_elements(ctx.full([n], 0, I64), target, iota, 0, "none"), count


def _compact(ctx: NodeContext, data: Value, keep: Value, axis: int) -> tuple[Value, Value]:
    """(data's slices along `axis` where `keep` (0/1 int64) is 1, in order, then zeros; their count)."""
    order, count = _pack(ctx, keep)
    live = _below(ctx, count, shape(keep)[0], keep)
    return _zero_from(ctx, ctx.g.gather(data, order, axis), axis, live), count


def _mask(ctx: NodeContext, flags: Value) -> Value:
    """Non-zero flags (any type) as a 0/1 int64 mask."""
    if dtype(flags).type.__module__.startswith("ml_dtypes"):
        # bfloat16, the float8 / float4 and int4 / int2 types: compared in float32, which holds each exactly.
        flags = ctx.convert(flags, np.dtype(np.float32))
    if dtype(flags) != np.bool_:
        flags = ctx.g.cmp_neq(flags, ctx.full(shape(flags), 0, dtype(flags)))
    return ctx.convert(flags, I64)


def _empty_count() -> np.ndarray:
    return np.array(0, I64)


@handles_glow("NonZeroBounded")
def non_zero(ctx: NodeContext) -> list[Value]:
    """Indices [rank, numel] of the non-zero elements in row-major order: their flat positions compacted,
    then each coordinate (position / stride) % dim."""
    x = ctx.input(0)
    dims, n = shape(x), int(np.prod(shape(x)))
    if not dims or n == 0:
        # ONNX gives [0, count] for a scalar: nothing to compute but the count.
        count = _sum(ctx, _mask(ctx, ctx.reshape(x, [1]))) if n else _empty_count()
        return [np.zeros([len(dims), max(n, 1)], I64), count]
    keep = _mask(ctx, ctx.reshape(x, [n]))
    order, count = _pack(ctx, keep)
    flat = ctx.g.select(_below(ctx, count, n, keep), order, ctx.full([n], 0, I64))
    rows = []
    stride = n
    for k, d in enumerate(dims):
        stride //= d
        q = ctx.g.div(flat, ctx.full([n], stride, I64)) if stride > 1 else flat
        if k:  # the first coordinate is below its dim already
            q = ctx.g.sub(q, ctx.g.mul(ctx.g.div(q, ctx.full([n], d, I64)), ctx.full([n], d, I64)))
        rows.append(ctx.reshape(q, [1, n]))
    return [rows[0] if len(rows) == 1 else ctx.g.concat(rows, 0), count]


@handles_glow("CompressBounded")
def compress(ctx: NodeContext) -> list[Value]:
    """The slices along `axis` (of the flattened input without one) where the condition is true, packed to
    the front of the axis's length; the condition may be shorter than the axis (the rest is dropped)."""
    x, condition = ctx.input(0), ctx.input(1)
    if rank(condition) != 1:
        raise ctx.invalid(f"condition {list(shape(condition))} must be 1-D")
    if ctx.has("axis"):
        axis = normalize_axis(ctx.attr("axis"), rank(x), ctx)
    else:
        x, axis = ctx.reshape(x, [int(np.prod(shape(x)))]), 0
    length, given = shape(x)[axis], shape(condition)[0]
    if given > length:
        raise ctx.invalid(f"condition of {given} values is longer than axis {axis} of {list(shape(x))}")
    if length == 0:
        return [np.zeros(shape(x), dtype(x)), _empty_count()]
    if given == 0:
        keep: Value = np.zeros([length], I64)
    else:
        keep = _mask(ctx, condition)
        if given < length:  # the entries beyond the condition are dropped
            keep = ctx.g.concat([keep, ctx.full([length - given], 0, I64)], 0)
    return list(_compact(ctx, x, keep, axis))


@handles_glow("TopKBounded")
def top_k(ctx: NodeContext) -> list[Value]:
    """All of the axis ranked (values and int64 indices, best first, ties to the lower index), zero from
    min(max(K, 0), length) on. `sorted` = 0 leaves the order open, so the sorted order serves it too."""
    x, k = ctx.input(0), ctx.input(1)
    axis = normalize_axis(ctx.attr("axis", -1), rank(x), ctx)
    if int(np.prod(shape(k))) != 1:
        raise ctx.invalid(f"the K input must hold one integer, got shape {list(shape(k))}")
    length = shape(x)[axis]
    if length == 0:
        return [np.zeros(shape(x), dtype(x)), np.zeros(shape(x), I64), _empty_count()]
    k = ctx.reshape(ctx.convert(k, I64), [])
    count = ctx.g.min(ctx.g.max(k, ctx.full([], 0, I64)), ctx.full([], length, I64))
    indices = ctx.g.top_k(x, length, axis, bool(ctx.attr("largest", 1)))
    live = _below(ctx, count, length, indices)
    values = _zero_from(ctx, ctx.g.gather_elements(x, indices, axis), axis, live)
    return [values, _zero_from(ctx, indices, axis, live), count]


@handles_glow("UniqueBounded")
def unique(ctx: NodeContext) -> list[Value]:
    """Y, indices, inverse_indices and counts (ONNX Unique) with Y, indices and counts padded to the element
    (or slice) count; see the module docstring for the two compositions."""
    x = ctx.input(0)
    ordered = bool(ctx.attr("sorted", 1))
    n = int(np.prod(shape(x)))
    # Slices of one element (a 1-D input) are the flattened case, sorted in O(n log n): y keeps the input's rank.
    y_dims = [n]
    if ctx.has("axis"):
        axis = normalize_axis(ctx.attr("axis"), rank(x), ctx)
        if n == 0 or n != shape(x)[axis]:
            return _unique_axis(ctx, x, axis, ordered)
        y_dims = [n if d == axis else 1 for d in range(rank(x))]
    if n == 0:
        empty = np.zeros([0], I64)
        return [np.zeros([0], dtype(x)), empty, empty, empty, _empty_count()]
    flat = ctx.reshape(x, [n])
    # The stable ascending sort: equal values keep their input order, so a group's first is its first occurrence.
    perm = ctx.g.top_k(_key(ctx, flat), n, 0, False)
    start = _starts(ctx, ctx.g.gather(_key(ctx, flat), perm, 0))
    group = ctx.g.sub(ctx.g.cumsum(start, 0), ctx.full([n], 1, I64))
    first, count = _pack(ctx, start)
    live = _below(ctx, count, n, start)
    indices = _zero_from(ctx, ctx.g.gather(perm, first, 0), 0, live)
    y = _zero_from(ctx, ctx.g.gather(flat, indices, 0), 0, live)
    inverse = ctx.g.scatter_elements(ctx.full([n], 0, I64), perm, group, 0, "none")
    counts = ctx.g.scatter_elements(ctx.full([n], 0, I64), group, ctx.full([n], 1, I64), 0, "add")
    if not ordered:
        y, indices, inverse, counts = _by_first_occurrence(ctx, flat, indices, inverse, counts, count, 0)
    return [ctx.reshape(y, y_dims), indices, inverse, counts, count]


def _key(ctx: NodeContext, v: Value) -> Value:
    """`v` as glow's sorts and order compares take it: bool as int8."""
    return ctx.convert(v, np.int8) if dtype(v) == np.bool_ else v


def _starts(ctx: NodeContext, s: Value) -> Value:
    """0/1 int64 [n]: whether sorted element i differs from element i - 1 (1 for the first; NaNs are equal,
    as numpy's unique has them)."""
    n = shape(s)[0]
    one = ctx.full([1], 1, I64)
    if n == 1:
        return one
    here, before = ctx.g.slice(s, [1], [n - 1]), ctx.g.slice(s, [0], [n - 1])
    differs = ctx.g.cmp_neq(here, before)
    if np.issubdtype(dtype(s), np.floating):
        both_nan = ctx.g.logical_and(ctx.g.is_nan(here), ctx.g.is_nan(before))
        differs = ctx.g.logical_and(differs, ctx.g.logical_not(both_nan))
    return ctx.g.concat([one, ctx.convert(differs, I64)], 0)


def _by_first_occurrence(ctx: NodeContext, data: Value, indices: Value, inverse: Value, counts: Value,
                         count: Value, axis: int) -> tuple[Value, Value, Value, Value]:
    """Unique's sorted results (groups in value order) re-ordered by first occurrence (sorted = 0): the first
    occurrences, marked in input order, compacted; each group's new place is the number of first occurrences
    before its own. `data` holds the slices along `axis`."""
    n = shape(inverse)[0]
    iota = _iota(ctx, n, inverse)
    is_first = ctx.convert(ctx.g.cmp_eq(ctx.g.gather(indices, inverse, 0), iota), I64)
    place = ctx.g.cumsum(is_first, 0, exclusive=True)
    order, _ = _pack(ctx, is_first, count)
    live = _below(ctx, count, n, inverse)
    y = _zero_from(ctx, ctx.g.gather(data, order, axis), axis, live)
    new_indices = ctx.g.select(live, order, ctx.full([n], 0, I64))
    new_inverse = ctx.g.gather(place, ctx.g.gather(indices, inverse, 0), 0)
    new_counts = _zero_from(ctx, ctx.g.gather(counts, ctx.g.gather(inverse, order, 0), 0), 0, live)
    return y, new_indices, new_inverse, new_counts


def _unique_axis(ctx: NodeContext, x: Value, axis: int, ordered: bool) -> list[Value]:
    """Unique of the slices along `axis`: every pair compared ([L, L, M] for L slices of M elements); a slice's
    group is its first equal slice; sorted = 1 ranks the distinct slices by counting those lexicographically
    smaller (at the first element where they differ)."""
    dims = shape(x)
    length = dims[axis]
    m = int(np.prod(dims)) // length if length else 0
    if length == 0 or m == 0:
        raise ctx.unsupported("axis", f"Unique along axis {axis} of {list(dims)}: no slices or empty slices")
    perm = [axis, *(d for d in range(len(dims)) if d != axis)]
    rows = ctx.reshape(ctx.transpose(x, perm), [length, m])
    grid = [length, length, m]
    a = ctx.broadcast_to(ctx.reshape(_key(ctx, rows), [length, 1, m]), grid)
    b = ctx.broadcast_to(ctx.reshape(_key(ctx, rows), [1, length, m]), grid)
    differs = ctx.convert(ctx.g.cmp_neq(a, b), I64)
    # same[i, j]: slices i and j are equal; first[i]: the first slice equal to i (argmax: the first maximum).
    same = ctx.g.cmp_eq(ctx.g.batched_reduce_max(differs, [2]), ctx.full([length, length], 0, I64))
    first = ctx.g.arg_max(ctx.convert(same, I64), 1)
    iota = _iota(ctx, length, first)
    is_first = ctx.convert(ctx.g.cmp_eq(first, iota), I64)
    count = _sum(ctx, is_first)
    if ordered:
        # less[i, j]: slice i < slice j at their first differing element (none: equal, not less).
        at = ctx.reshape(ctx.g.arg_max(differs, 2), [length, length, 1])
        less = ctx.g.gather_elements(ctx.convert(ctx.g.cmp_lt(a, b), I64), at, 2)
        smaller = ctx.g.mul(ctx.reshape(less, [length, length]), ctx.broadcast_to(
            ctx.reshape(is_first, [length, 1]), [length, length]))
        rank_ = ctx.g.batched_reduce_add(smaller, [0])  # distinct slices before each slice
        # The distinct slices to their ranks, the others behind them in order (a permutation).
        seen = ctx.g.cumsum(is_first, 0, exclusive=True)
        behind = ctx.g.sub(ctx.g.add(ctx.broadcast_to(ctx.reshape(count, [1]), [length]), iota), seen)
        target = ctx.g.select(ctx.g.cmp_eq(is_first, ctx.full([length], 1, I64)), rank_, behind)
        order = ctx.g.scatter_elements(ctx.full([length], 0, I64), target, iota, 0, "none")
        inverse = ctx.g.gather(rank_, first, 0)
    else:
        order, _ = _pack(ctx, is_first, count)
        inverse = ctx.g.gather(ctx.g.cumsum(is_first, 0, exclusive=True), first, 0)
    live = _below(ctx, count, length, first)
    moved = [dims[d] for d in perm]
    y = ctx.reshape(_zero_from(ctx, ctx.g.gather(rows, order, 0), 0, live), moved)
    y = ctx.transpose(y, list(np.argsort(perm)))
    indices = ctx.g.select(live, order, ctx.full([length], 0, I64))
    counts = ctx.g.scatter_elements(ctx.full([length], 0, I64), inverse, ctx.full([length], 1, I64), 0, "add")
    return [y, indices, inverse, counts, count]


@handles_glow("NonMaxSuppressionBounded")
def non_max_suppression(ctx: NodeContext) -> list[Value]:
    """Greedy NMS per (batch, class) in one loop over the score ranks (module docstring); the selected
    [batch, class, box] rows in the reference's order, padded to B * C * min(max_out, N)."""
    boxes, scores = ctx.input(0), ctx.input(1)
    if rank(boxes) != 3 or shape(boxes)[2] != 4 or rank(scores) != 3 or shape(scores)[0] != shape(boxes)[0] \
            or shape(scores)[2] != shape(boxes)[1]:
        raise ctx.invalid(f"boxes {list(shape(boxes))} must be [B, N, 4] and scores {list(shape(scores))} [B, C, N]")
    if dtype(boxes) != np.float32 or dtype(scores) != np.float32:
        raise ctx.invalid(f"boxes and scores must be float, got {dtype(boxes)} and {dtype(scores)}")
    # ONNX's defaults: no box per class, IoU threshold 0, no score threshold.
    max_out, iou, threshold = (_static(ctx, i, what) for i, what in enumerate(
        ("max_output_boxes_per_class", "iou_threshold", "score_threshold"), 2))
    batches, n = shape(boxes)[:2]
    classes = shape(scores)[1]
    per_class = 0 if max_out is None else min(max(int(max_out), 0), n)
    if per_class == 0 or batches * classes == 0:
        return [np.zeros([1, 3], I64), _empty_count()]
    bc = batches * classes
    order = ctx.g.top_k(scores, n, 2, True)  # [B, C, N], best first, ties to the lower index
    ranked = [ctx.reshape(ctx.g.gather_elements(ctx.broadcast_to(ctx.reshape(c, [batches, 1, n]),
                                                                  [batches, classes, n]), order, 2), [bc, n])
              for c in _corners(ctx, boxes, int(ctx.attr("center_point_box", 0)))]
    if threshold is None:
        valid = ctx.full([bc, n], 1, np.bool_)
    else:
        best = ctx.reshape(ctx.g.gather_elements(scores, order, 2), [bc, n])
        valid = ctx.g.cmp_lt(ctx.full([bc, n], threshold, np.float32), best)
    xmin, ymin, xmax, ymax = ranked
    area = ctx.g.mul(ctx.g.sub(xmax, xmin), ctx.g.sub(ymax, ymin))
    fields = [xmin, ymin, xmax, ymax, area]
    full = ctx.constant_beside(np.full([bc], per_class, I64), boxes)
    positions = _iota(ctx, n, boxes)

    def body(args: list[Tensor]) -> list[Value]:
        i, selected, suppressed, taken = args
        at = ctx.reshape(i, [1])

        def column(v: Value) -> Value:  # rank i of every (batch, class), broadcast to [bc, n]
            return ctx.broadcast_to(ctx.g.gather(v, at, 1), [bc, n])

        alive = ctx.g.logical_and(ctx.g.logical_and(ctx.reshape(ctx.g.gather(valid, at, 1), [bc]), ctx.g.logical_not(
            ctx.reshape(ctx.g.gather(suppressed, at, 1), [bc]))), ctx.g.cmp_lt(taken, full))
        wide = ctx.broadcast_to(ctx.reshape(alive, [bc, 1]), [bc, n])
        over = _overlaps(ctx, [column(f) for f in fields], fields, np.float32(iou or 0.0))
        here = ctx.broadcast_to(ctx.g.cmp_eq(positions, ctx.broadcast_to(at, [n])), [bc, n])
        selected = ctx.g.logical_or(selected, ctx.g.logical_and(wide, here))
        suppressed = ctx.g.logical_or(suppressed, ctx.g.logical_and(wide, over))
        taken = ctx.g.add(taken, ctx.convert(alive, I64))
        # Go on while some class has room and ranks remain.
        room = ctx.g.batched_reduce_max(ctx.g.sub(full, taken), [0])
        more = ctx.g.logical_and(ctx.g.cmp_lt(ctx.full([], 0, I64), room),
                                 ctx.g.cmp_lt(i, ctx.full([], n - 1, I64)))
        return [more, selected, suppressed, taken]

    no = ctx.full([bc, n], 0, np.bool_)
    spec = control.Loop(body_symbol(ctx), n, 3, 0, 1, (), (), (), ())
    selected = loop_op(ctx, [no, no, ctx.full([bc], 0, I64)], [], spec, body)[0]
    # The selected ranks in (batch, class, rank) order: compacted, cut to the bound.
    keep = ctx.convert(ctx.reshape(selected, [bc * n]), I64)
    where, count = _pack(ctx, keep)
    bound = bc * per_class
    where = ctx.g.slice(where, [0], [bound]) if bound < bc * n else where
    pair = ctx.g.div(where, ctx.full([bound], n, I64))
    batch = ctx.g.div(pair, ctx.full([bound], classes, I64))
    klass = ctx.g.sub(pair, ctx.g.mul(batch, ctx.full([bound], classes, I64)))
    box = ctx.g.gather(ctx.reshape(order, [bc * n]), where, 0)
    rows = ctx.g.concat([ctx.reshape(v, [bound, 1]) for v in (batch, klass, box)], 1)
    return [_zero_from(ctx, rows, 0, _below(ctx, count, bound, keep)), count]


def _static(ctx: NodeContext, i: int, what: str) -> float | int | None:
    """Optional scalar input `i`, which must be known at compile time; None when absent or empty."""
    value = ctx.const(i, what) if ctx.optional(i) is not None else None
    if value is None or value.size == 0:
        return None
    if value.size != 1:
        raise ctx.invalid(f"{what} must hold one value, got shape {list(value.shape)}")
    return value.reshape(-1)[0].item()


def _corners(ctx: NodeContext, boxes: Value, center_point_box: int) -> list[Value]:
    """xmin, ymin, xmax, ymax [B, N] of the boxes, computed as the reference does: corners [y1, x1, y2, x2] in
    either order, or [x_center, y_center, width, height]."""
    b, n = shape(boxes)[:2]
    part = [ctx.reshape(ctx.g.slice(boxes, [0, 0, k], [b, n, 1]), [b, n]) for k in range(4)]
    if center_point_box == 0:
        y1, x1, y2, x2 = part
        return [ctx.g.min(x1, x2), ctx.g.min(y1, y2), ctx.g.max(x1, x2), ctx.g.max(y1, y2)]
    if center_point_box != 1:
        raise ctx.invalid(f"center_point_box must be 0 or 1, got {center_point_box}")
    xc, yc, w, h = part
    two = ctx.full([b, n], 2, np.float32)
    half_w, half_h = ctx.g.div(w, two), ctx.g.div(h, two)
    return [ctx.g.sub(xc, half_w), ctx.g.sub(yc, half_h), ctx.g.add(xc, half_w), ctx.g.add(yc, half_h)]


def _overlaps(ctx: NodeContext, a: list[Value], b: list[Value], threshold: np.float32) -> Value:
    """Whether boxes a and b (xmin, ymin, xmax, ymax, area) overlap by IoU > threshold, with the reference's
    tests: positive intersection extents and area, positive areas and union."""
    ax0, ay0, ax1, ay1, a_area = a
    bx0, by0, bx1, by1, b_area = b
    ix0, iy0, ix1, iy1 = ctx.g.max(ax0, bx0), ctx.g.max(ay0, by0), ctx.g.min(ax1, bx1), ctx.g.min(ay1, by1)
    inter = ctx.g.mul(ctx.g.sub(ix1, ix0), ctx.g.sub(iy1, iy0))
    union = ctx.g.sub(ctx.g.add(b_area, a_area), inter)
    zero = ctx.full(shape(inter), 0, np.float32)
    tests = [ctx.g.cmp_lt(ix0, ix1), ctx.g.cmp_lt(iy0, iy1), ctx.g.cmp_lt(zero, inter), ctx.g.cmp_lt(zero, a_area),
             ctx.g.cmp_lt(zero, b_area), ctx.g.cmp_lt(zero, union),
             ctx.g.cmp_lt(ctx.full(shape(inter), threshold, np.float32), ctx.g.div(inter, union))]
    out = tests[0]
    for t in tests[1:]:
        out = ctx.g.logical_and(out, t)
    return out
