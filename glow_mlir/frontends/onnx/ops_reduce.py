"""ONNX reductions (Reduce*, ArgMax/ArgMin) on glow's batched_reduce and arg ops, and Det (glow.det: each
matrix of the last two dims to its determinant).

Each Reduce op is an elementwise step before the reduction (abs, square, exp), the reduction, and one after
it (divide by the count, sqrt, log); keepdims reshapes the result so the reduced dims stay as 1. ReduceMax
and ReduceMin take bool since opset 20 (any and all): glow's reductions are numeric, so bools are reduced as
i8 0/1 and converted back, which is exact.
"""

from __future__ import annotations

import math

import numpy as np

from glow_mlir.frontends.onnx.node import NodeContext, Value, dtype, float16_in_float32, normalize_axis, rank, shape
from glow_mlir.frontends.onnx.registry import handles
from glow_mlir.opdefs.shapes import DET_MAX_ORDER

_REDUCE_OPS = (
    "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
    "ReduceLogSum", "ReduceLogSumExp",
)
_BASE = {"ReduceMax": "max", "ReduceMin": "min", "ReduceProd": "prod"}


def _axes(ctx: NodeContext, x: Value) -> list[int] | None:
    """The sorted reduced axes; None when the op reduces nothing (noop_with_empty_axes)."""
    axes_as_input_since = 13 if ctx.op_type == "ReduceSum" else 18
    if ctx.opset >= axes_as_input_since:
        axes = ctx.ints(1, "the axes input")
    else:
        axes = ctx.attr("axes", None)
    if not axes:
        return None if ctx.attr("noop_with_empty_axes", 0) else list(range(rank(x)))
    normalized = sorted({normalize_axis(a, rank(x), ctx) for a in axes})
    if len(normalized) != len(axes):
        raise ctx.invalid(f"axes {list(axes)} repeat a dim")
    return normalized


@handles(*_REDUCE_OPS)
@float16_in_float32
def reduce(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    axes = _axes(ctx, x)
    op = ctx.op_type
    boolean = dtype(x) == np.bool_
    if boolean:
        x = ctx.convert(x, np.dtype(np.int8))
    if op in ("ReduceL1",):
        x = ctx.g.abs(x)
    elif op in ("ReduceL2", "ReduceSumSquare"):
        x = ctx.g.mul(x, x)
    peak: Value | None = None
    if op == "ReduceLogSumExp" and axes:
        # log(sum(exp(x - max))) + max does not overflow where exp(x) would.
        peak = ctx.keep_dims(ctx.g.batched_reduce_max(x, axes), shape(x), axes)
        x = ctx.g.sub(x, ctx.broadcast_to(peak, shape(x)))
    if op == "ReduceLogSumExp":
        x = ctx.g.exp(x)
    if axes is None or rank(x) == 0:
        y = x
    else:
        y = getattr(ctx.g, f"batched_reduce_{_BASE.get(op, 'add')}")(x, axes)
        if op == "ReduceMean":
            y = ctx.g.div(y, ctx.scalar_like(y, math.prod(shape(x)[a] for a in axes)))
        y = ctx.keep_dims(y, shape(x), axes)
    if op == "ReduceL2":
        y = ctx.g.sqrt(y)
    elif op in ("ReduceLogSum", "ReduceLogSumExp"):
        y = ctx.g.log(y)
    if peak is not None:
        y = ctx.g.add(y, peak)
    if axes is not None and not ctx.attr("keepdims", 1):
        y = ctx.reshape(y, [d for i, d in enumerate(shape(x)) if i not in axes])
    return [ctx.convert(y, np.dtype(np.bool_)) if boolean else y]


@handles("ArgMax", "ArgMin")
def arg_reduce(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    axis = normalize_axis(ctx.attr("axis", 0), rank(x), ctx)
    keep = bool(ctx.attr("keepdims", 1))
    method = ctx.g.arg_max if ctx.op_type == "ArgMax" else ctx.g.arg_min
    if not ctx.attr("select_last_index", 0):
        return [method(x, axis, keep)]
    # The last extremum is the first one of the reversed axis, counted back from its end.
    size = shape(x)[axis]
    reversed_x = ctx.g.gather(x, np.arange(size - 1, -1, -1, dtype=np.int64), axis)
    index = method(reversed_x, axis, keep)
    return [ctx.g.sub(ctx.scalar_like(index, size - 1), index)]


def _along(ctx: NodeContext, x: Value, axis: int) -> np.ndarray:
    """0, 1, ..., n-1 along `axis` of `x` (n = that dim), broadcast to x's shape: the index of each element."""
    n = shape(x)[axis]
    aligned = [1] * rank(x)
    aligned[axis] = n
    return np.ascontiguousarray(np.broadcast_to(np.arange(n, dtype=np.int64).reshape(aligned), shape(x)))


@handles("Hardmax")
def hardmax(ctx: NodeContext) -> list[Value]:
    """1 at the first maximum along `axis`, 0 elsewhere: arg_max compared with each element's index.

    Before opset 13 the input is seen as 2-D, [prod(dims[:axis]), prod(dims[axis:])], and the row is the axis.
    """
    x = ctx.input(0)
    dims = shape(x)
    axis = normalize_axis(ctx.attr("axis", -1 if ctx.opset >= 13 else 1), rank(x), ctx)
    if ctx.opset < 13:
        x = ctx.reshape(x, [math.prod(dims[:axis]), math.prod(dims[axis:])])
        axis = 1
    first = ctx.broadcast_to(ctx.g.arg_max(x, axis, True), shape(x))
    one_hot = ctx.g.cmp_eq(first, _along(ctx, x, axis))
    return [ctx.reshape(ctx.convert(one_hot, dtype(x)), dims)]


@handles("LpNormalization")
def lp_normalization(ctx: NodeContext) -> list[Value]:
    """x divided by its L1 (p = 1) or L2 (p = 2) norm along `axis`; 0 where the norm is 0."""
    x = ctx.input(0)
    axis = normalize_axis(ctx.attr("axis", -1), rank(x), ctx)
    p = ctx.attr("p", 2)
    if p not in (1, 2):
        raise ctx.invalid(f"attribute 'p' must be 1 or 2, got {p}")
    terms = ctx.g.abs(x) if p == 1 else ctx.g.mul(x, x)
    norm = ctx.keep_dims(ctx.g.batched_reduce_add(terms, [axis]), shape(x), [axis])
    if p == 2:
        norm = ctx.g.sqrt(norm)
    norm = ctx.broadcast_to(norm, shape(x))
    # A zero norm gives 0, as the spec's function does, not 0 / 0.
    return [ctx.g.select(ctx.g.cmp_eq(norm, ctx.scalar_like(norm, 0)), ctx.scalar_like(x, 0), ctx.g.div(x, norm))]


@handles("Det")
@float16_in_float32
def det(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    if rank(x) < 2 or shape(x)[-1] != shape(x)[-2]:
        raise ctx.invalid(f"X {list(shape(x))} must be [*, N, N]")
    if 0 in shape(x)[:-2]:
        return [np.empty(shape(x)[:-2], dtype(x))]
    if shape(x)[-1] == 0:
        # The determinant of a 0 x 0 matrix is 1 (the empty product).
        return [np.ones(shape(x)[:-2], dtype(x))]
    if shape(x)[-1] > DET_MAX_ORDER:
        raise ctx.unsupported("input", f"{shape(x)[-1]} x {shape(x)[-1]} matrices: glow eliminates on a stack copy "
                              f"of at most {DET_MAX_ORDER} x {DET_MAX_ORDER}")  # fmt: skip
    return [ctx.g.det(x)]
