"""ONNX ops that read or write at indices held in tensors: GatherElements, GatherND, ScatterElements (and its
deprecated name Scatter), ScatterND, TopK, on glow's gather_elements / gather_nd / scatter_elements /
scatter_nd / top_k; ReverseSequence, a gather_elements at indices computed from the lengths; MaxUnpool and
TensorScatter, scatter_elements at indices computed from theirs; Compress, a gather of the kept indices.

Indices may be computed at run time; only TopK's K and Compress's condition must be known at compile time (they
decide a result dim).
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
from glow_mlir.frontends.onnx.ops_nn import spatial_dims, window_attrs, window_pads
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


def _no_updates(indices: Value, updates: Value) -> bool:
    """Whether a scatter writes nothing: no index (torchvision's RoI pooling of a level that no box is assigned
    to scatters an empty update), so that the result is its data."""
    return 0 in shape(indices) or 0 in shape(updates)


@handles("ScatterElements", "Scatter")
def scatter_elements(ctx: NodeContext) -> list[Value]:
    data, indices, updates = ctx.input(0), ctx.input(1), ctx.input(2)
    axis = normalize_axis(ctx.attr("axis", 0), rank(data), ctx)
    reduction = _reduction(ctx, data)
    if _no_updates(indices, updates):
        return [data]
    return [ctx.g.scatter_elements(data, indices, updates, axis, reduction)]


@handles("ScatterND")
def scatter_nd(ctx: NodeContext) -> list[Value]:
    data, indices, updates = ctx.input(0), ctx.input(1), ctx.input(2)
    reduction = _reduction(ctx, data)
    if _no_updates(indices, updates):
        return [data]
    return [ctx.g.scatter_nd(data, indices, updates, reduction)]


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


@handles("ReverseSequence")
def reverse_sequence(ctx: NodeContext) -> list[Value]:
    """Each batch entry's first sequence_lens[b] steps reversed, the rest kept: a gather_elements along the
    time axis at index t' = lens[b] - 1 - t where t < lens[b], else t, computed from the (run-time) lengths."""
    x, lens = ctx.input(0), ctx.input(1)
    time_axis, batch_axis = ctx.attr("time_axis", 0), ctx.attr("batch_axis", 1)
    if rank(x) < 2 or sorted((time_axis, batch_axis)) != [0, 1]:
        raise ctx.invalid(f"time_axis {time_axis} and batch_axis {batch_axis} must be 0 and 1 (in either order) "
                          f"of an input of rank >= 2, got {list(shape(x))}")
    steps, batch = shape(x)[time_axis], shape(x)[batch_axis]
    if shape(lens) != (batch,):
        raise ctx.invalid(f"sequence_lens must have shape [{batch}] (the batch dim), got {list(shape(lens))}")
    # [T, B] or [B, T], as the two axes of x.
    grid = [steps, batch] if time_axis == 0 else [batch, steps]
    t = np.arange(steps, dtype=np.int64).reshape([steps, 1] if time_axis == 0 else [1, steps])
    t = ctx.broadcast_to(ctx.constant_beside(t, lens), grid)
    n = ctx.broadcast_to(ctx.reshape(lens, [1, batch] if time_axis == 0 else [batch, 1]), grid)
    reversed_t = ctx.g.sub(ctx.g.sub(n, ctx.scalar_like(n, 1)), t)
    index = ctx.g.select(ctx.g.cmp_lt(t, n), reversed_t, t)
    index = ctx.broadcast_to(ctx.reshape(index, [*grid, *[1] * (rank(x) - 2)]), shape(x))
    return [ctx.g.gather_elements(x, index, time_axis)]


@handles("MaxUnpool")
def max_unpool(ctx: NodeContext) -> list[Value]:
    """X's values at the flat indices I (MaxPool's Indices: positions in the whole N x C x spatial input) of
    zeros of the output's shape, a scatter_elements into it seen flat. The output is output_shape where given
    (the pool's input shape, which odd sizes leave ambiguous), else (in - 1) * stride + kernel - pads. With
    output_shape, I indexes its elements, as in onnxruntime and PyTorch's max_unpool (so an exported SegNet
    with odd map sizes runs as trained); onnx's reference indexes the inferred shape and places that at the
    output's start, and its backend case test_maxunpool_export_with_output_shape expects that."""
    x, indices = ctx.input(0), ctx.input(1)
    dims = shape(x)
    spatial = spatial_dims(ctx, x, 3)
    kernel = list(ctx.attr("kernel_shape"))
    strides, dilations = window_attrs(ctx, spatial, kernel)
    begin, end = window_pads(ctx, dims[2:], kernel, strides, dilations)
    if shape(indices) != dims:
        raise ctx.invalid(f"I has shape {list(shape(indices))}, X {list(dims)}: they must be the same")
    out = ctx.ints(2, "the output_shape input") or [
        *dims[:2], *((d - 1) * s + k - b - e for d, s, k, b, e in zip(dims[2:], strides, kernel, begin, end))]
    if len(out) != len(dims) or list(out[:2]) != list(dims[:2]) or min(out) < 1:
        raise ctx.invalid(f"output shape {out} must keep X's batch and channels {list(dims[:2])}")
    size = int(np.prod(dims))
    flat = ctx.g.scatter_elements(ctx.full([int(np.prod(out))], 0, dtype(x)), ctx.reshape(indices, [size]),
                                  ctx.reshape(x, [size]), 0, "none")  # fmt: skip
    return [ctx.reshape(flat, out)]


@handles("TensorScatter")
def tensor_scatter(ctx: NodeContext) -> list[Value]:
    """The cache with `update` written along `axis` from each batch row's write index on (0 without
    write_indices; modulo the cache's length in mode circular): a scatter_elements at those positions."""
    cache, update = ctx.input(0), ctx.input(1)
    axis = normalize_axis(ctx.attr("axis", -2), rank(cache), ctx)
    mode = str(ctx.attr("mode", "linear"))
    dims, steps = shape(cache), shape(update)
    if axis == 0 or mode not in ("linear", "circular"):
        raise ctx.invalid(f"axis {axis} must not be the batch dim and mode '{mode}' linear or circular")
    if rank(update) != rank(cache) or any(a != b for d, (a, b) in enumerate(zip(dims, steps)) if d != axis):
        raise ctx.invalid(f"update {list(steps)} must match past_cache {list(dims)} but along axis {axis}")
    if steps[axis] > dims[axis]:
        raise ctx.invalid(f"update's {steps[axis]} steps along axis {axis} exceed the cache's {dims[axis]}")
    along = [1] * rank(update)
    along[axis] = steps[axis]
    position = np.arange(steps[axis], dtype=np.int64).reshape(along)
    starts = ctx.optional(2)
    if starts is not None:
        if shape(starts) != (dims[0],):
            raise ctx.invalid(f"write_indices must have shape [{dims[0]}], got {list(shape(starts))}")
        row = [dims[0]] + [1] * (rank(update) - 1)
        position = ctx.g.add(ctx.broadcast_to(ctx.constant_beside(position, starts), steps),
                             ctx.broadcast_to(ctx.reshape(ctx.convert(starts, np.int64), row), steps))  # fmt: skip
        if mode == "circular":
            length = ctx.scalar_like(position, dims[axis])
            position = ctx.g.sub(position, ctx.g.mul(ctx.g.div(position, length), length))
    else:
        position = ctx.broadcast_to(position, steps)
    return [ctx.g.scatter_elements(cache, position, update, axis, "none")]


@handles("Compress")
def compress(ctx: NodeContext) -> list[Value]:
    """The slices along `axis` (of the flattened input without it) where the condition is true: a gather of
    those indices. The condition decides the result's size, so it must be known at compile time."""
    x, condition = ctx.input(0), ctx.const(1, "the condition input")
    assert condition is not None  # a required input
    if condition.ndim != 1:
        raise ctx.invalid(f"condition {list(condition.shape)} must be 1-D")
    if ctx.has("axis"):
        axis = normalize_axis(ctx.attr("axis"), rank(x), ctx)
    else:
        x, axis = ctx.reshape(x, [int(np.prod(shape(x)))]), 0
    if condition.size > shape(x)[axis]:
        raise ctx.invalid(f"condition of {condition.size} values is longer than axis {axis} of {list(shape(x))}")
    kept = np.flatnonzero(condition).astype(np.int64)
    if kept.size == 0:
        return [np.empty([*shape(x)[:axis], 0, *shape(x)[axis + 1 :]], dtype(x))]
    return [ctx.g.gather(x, ctx.constant_beside(kept, x), axis)]
