"""ONNX ops that read or write at indices held in tensors: GatherElements, GatherND, ScatterElements (and its
deprecated name Scatter), ScatterND, TopK, on glow's gather_elements / gather_nd / scatter_elements /
scatter_nd / top_k.

Indices may be computed at run time; only TopK's K must be known at compile time (it is a result dim).
Negative indices count from the end; an out-of-range index, which ONNX leaves undefined, is clamped by the
gathers and skipped by the scatters (glow_mlir/codegen/tensor.py).
"""

from __future__ import annotations

import numpy as np

from glow_mlir.frontends.onnx.node import (
    NodeContext,
    Value,
    dtype,
    normalize_axis,
    rank,
    shape,
)
from glow_mlir.frontends.onnx.registry import handles


def _reduction(ctx: NodeContext, data: Value) -> str:
    reduction = ctx.attr("reduction", "none")
    if reduction != "none" and dtype(data) == np.bool_:
        raise ctx.unsupported("reduction", f"'{reduction}' on bool data")
    return str(reduction)


@handles("GatherElements")
def gather_elements(ctx: NodeContext) -> list[Value]:
    data, indices = ctx.input(0), ctx.input(1)
    axis = normalize_axis(ctx.attr("axis", 0), rank(data), ctx)
    return [ctx.g.gather_elements(data, indices, axis)]


@handles("GatherND")
def gather_nd(ctx: NodeContext) -> list[Value]:
    return [ctx.g.gather_nd(ctx.input(0), ctx.input(1), ctx.attr("batch_dims", 0))]


@handles("ScatterElements", "Scatter")
def scatter_elements(ctx: NodeContext) -> list[Value]:
    data, indices, updates = ctx.input(0), ctx.input(1), ctx.input(2)
    axis = normalize_axis(ctx.attr("axis", 0), rank(data), ctx)
    return [ctx.g.scatter_elements(data, indices, updates, axis, _reduction(ctx, data))]


@handles("ScatterND")
def scatter_nd(ctx: NodeContext) -> list[Value]:
    data, indices, updates = ctx.input(0), ctx.input(1), ctx.input(2)
    return [ctx.g.scatter_nd(data, indices, updates, _reduction(ctx, data))]


@handles("TopK")
def top_k(ctx: NodeContext) -> list[Value]:
    """Values and int64 indices of the K largest (or smallest) along `axis`, best first, ties to the lower
    index. `sorted` = 0 lets any order through, so the sorted order serves it too."""
    x = ctx.input(0)
    if ctx.opset >= 10:
        ks = ctx.ints(1, "the K input")
        if ks is None or len(ks) != 1:
            raise ctx.invalid(f"the K input must be one integer, got {ks}")
        k = ks[0]
    else:
        k = ctx.attr("k")
    axis = normalize_axis(ctx.attr("axis", -1), rank(x), ctx)
    if not 0 <= k <= shape(x)[axis]:
        raise ctx.invalid(f"K = {k} must be in [0, {shape(x)[axis]}] for axis {axis} of input {list(shape(x))}")
    if k == 0:
        dims = [0 if d == axis else n for d, n in enumerate(shape(x))]
        return [np.empty(dims, dtype(x)), np.empty(dims, np.int64)]
    indices = ctx.g.top_k(x, k, axis, bool(ctx.attr("largest", 1)))
    return [ctx.g.gather_elements(x, indices, axis), indices]
