"""Pooling ONNX ops: MaxPool (and its Indices output), AveragePool, LpPool, GlobalAveragePool, GlobalMaxPool,
GlobalLpPool, RoiAlign (glow.roi_align: its samples per box are known only at run time).

glow's pools are 2-D NCHW, so 1-D ones are lifted to 2-D with a unit height, and 3-D ones are a 2-D pool over
(H, W) and one over D (separable, `_pool_3d`). What they cannot express is composed: ceil_mode pooling extends
the bottom/right pad; pooling with dilations, or pads glow's pools refuse, gather each kernel row, then each
kernel column, with constant indices (max and sum are separable, so the IR grows with kh + kw, not kh * kw). LpPool is that sum pooling of |x|^p;
MaxPool's Indices output gathers every window's cells at once and maps the first arg max through a
constant table of flat input indices.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from glow_mlir.errors import UnsupportedTypeError
from glow_mlir.frontends.onnx.node import (
    NodeContext,
    Value,
    dtype,
    float16_in_float32,
    is_float,
    rank,
    shape,
)
from glow_mlir.frontends.onnx.ops_nn import (
    lift_1d,
    spatial_dims,
    to_2d,
    window_attrs,
    window_pads,
)
from glow_mlir.frontends.onnx.registry import handles


@dataclass(frozen=True)
class Window:
    """A pooling window over the spatial dims: its size, strides and dilations, the begin and end pads, the
    output sizes they give, and the end pads that ceil_mode adds past them (cells that do not count)."""

    kernel: list[int]
    strides: list[int]
    dilations: list[int]
    begin: list[int]
    end: list[int]
    out: list[int]
    extra: list[int]

    def tail(self, size: Sequence[int]) -> list[int]:
        """The end pads that cover every window: cells past the padded input (ceil_mode) are taps that do not
        exist, padded too and never counted."""
        extent = [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip(self.out, self.strides, self.kernel,
                                                                        self.dilations)]
        return [max(e, t - s_ - b) for e, t, s_, b in zip(self.end, extent, size, self.begin)]

    def lifted(self) -> Window:
        """The 1-D window as a 2-D one with a unit height (glow's pools are 2-D)."""
        return Window(to_2d(self.kernel, 1), to_2d(self.strides, 1), to_2d(self.dilations, 1),
                      to_2d(self.begin, 0), to_2d(self.end, 0), to_2d(self.out, 1), to_2d(self.extra, 0))


def _pool_geometry(
    ctx: NodeContext, sizes: Sequence[int], kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int]
) -> Window:
    begin, end = window_pads(ctx, sizes, kernel, strides, dilations)
    ceil_mode = ctx.attr("ceil_mode", 0)
    out, extra = [], []
    for size, b, e, k, s, d in zip(sizes, begin, end, kernel, strides, dilations):
        span = size + b + e - ((k - 1) * d + 1)
        if span < 0:
            raise ctx.invalid(f"the window {list(kernel)} does not fit the padded input {list(sizes)}")
        o = span // s + 1
        if ceil_mode:
            o = -(-span // s) + 1
            # The last window must start inside the input or the begin pad (onnxruntime, PyTorch).
            if (o - 1) * s >= size + b:
                o -= 1
        out.append(o)
        extra.append(max(0, (o - 1) * s + (k - 1) * d + 1 - (size + b + e)))
    return Window(list(kernel), list(strides), list(dilations), list(begin), list(end), out, extra)


@handles("MaxPool", "AveragePool", "LpPool")
def pool(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    if is_float(x):
        return _pool(ctx, x)
    if ctx.op_type != "MaxPool" or dtype(x) not in (np.int8, np.uint8):
        raise UnsupportedTypeError(f"node '{ctx.name}' ({ctx.op_type}) input 0", dtype(x).name)
    # ONNX's 8-bit integer MaxPool (onnxruntime's QOperator models pool their int8 maps): glow's pools are float
    # ops (their padding is -inf); 8-bit values are exact in f32 and the max of exact values is one of them.
    y, *indices = _pool(ctx, ctx.convert(x, np.dtype(np.float32)))
    return [ctx.convert(y, dtype(x)), *indices]


def _pool(ctx: NodeContext, x: Value) -> list[Value]:
    n = spatial_dims(ctx, x, most=3)
    kernel = list(ctx.attr("kernel_shape"))
    strides, dilations = window_attrs(ctx, n, kernel)
    window = _pool_geometry(ctx, shape(x)[2:], kernel, strides, dilations)
    if ctx.outputs_wanted() > 1:
        return _max_pool_with_indices(ctx, x, window)
    if ctx.op_type == "LpPool":
        return [_lp_pool(ctx, x, window)]
    include_pad = bool(ctx.attr("count_include_pad", 0))
    kind = "max" if ctx.op_type == "MaxPool" else "avg"
    if n == 3:
        return [_pool_3d(ctx, x, kind, window, include_pad)]
    if n == 1:
        x, window = lift_1d(ctx, x), window.lifted()
    y = _pool_2d(ctx, x, kind, window, include_pad)
    return [ctx.reshape(y, [*shape(y)[:2], shape(y)[3]]) if n == 1 else y]


def _pool_2d(ctx: NodeContext, x: Value, kind: str, window: Window, include_pad: bool) -> Value:
    """Max or average pooling of NCHW `x` over a 2-D `window`: glow's pool, or the gathers where it cannot."""
    kernel, strides, begin, extra = window.kernel, window.strides, window.begin, window.extra
    ends = [e + x_ for e, x_ in zip(window.end, extra)]
    fits = all(p < k for p, k in zip([*begin, *ends], kernel * 2))
    if window.dilations != [1, 1] or not fits:
        return _pool_by_gathers(ctx, x, kind, window, include_pad)
    if kind == "max":
        return ctx.g.max_pool(x, kernel, strides, [*begin, *ends])
    if not include_pad or not any(extra):
        return ctx.g.avg_pool(x, kernel, strides, [*begin, *ends], include_pad)
    # The real pads count, ceil_mode's extra cells do not: pad explicitly, let glow exclude the rest.
    padded = _pad_spatial(ctx, x, begin, window.end, 0.0)
    return ctx.g.avg_pool(padded, kernel, strides, [0, 0, *extra], False)


def _pool_3d(ctx: NodeContext, x: Value, kind: str, window: Window, include_pad: bool) -> Value:
    """Max or average pooling of NCDHW `x` as two 2-D pools: over (H, W) with the planes folded into the
    batch, then over D on the (D, H x W) planes. Max is separable; so is an average, since a window's count
    of cells is the product of its counts along each axis (with or without the pads). A pass along an axis
    whose window is 1 with stride 1 is skipped."""
    n, c, depth = shape(x)[:3]
    if window.kernel[1:] != [1, 1] or window.strides[1:] != [1, 1]:
        planes = ctx.reshape(ctx.transpose(x, [0, 2, 1, 3, 4]), [n * depth, c, *shape(x)[3:]])
        plane = Window(*(list(v[1:]) for v in (window.kernel, window.strides, window.dilations, window.begin,
                                                window.end, window.out, window.extra)))  # fmt: skip
        y = _pool_2d(ctx, planes, kind, plane, include_pad)
        x = ctx.transpose(ctx.reshape(y, [n, depth, c, *shape(y)[2:]]), [0, 2, 1, 3, 4])
    height, width = shape(x)[3:]
    if window.kernel[0] == 1 and window.strides[0] == 1:
        return x
    along = Window([window.kernel[0], 1], [window.strides[0], 1], [window.dilations[0], 1], [window.begin[0], 0],
                   [window.end[0], 0], [window.out[0], height * width], [window.extra[0], 0])  # fmt: skip
    y = _pool_2d(ctx, ctx.reshape(x, [n, c, depth, height * width]), kind, along, include_pad)
    return ctx.reshape(y, [n, c, window.out[0], height, width])


def _lp_pool(ctx: NodeContext, x: Value, window: Window) -> Value:
    """(sum of |x|^p over the window) ^ (1/p): the power sum pools like a sum, its pads adding 0."""
    p = _lp_order(ctx)
    return _lp_root(ctx, _pool_by_gathers(ctx, _lp_power(ctx, x, p), "sum", window, False), p)


def _lp_order(ctx: NodeContext) -> int:
    p = ctx.attr("p", 2)
    if p <= 0:
        raise ctx.invalid(f"p must be positive, got {p}")
    return p


def _lp_power(ctx: NodeContext, x: Value, p: int) -> Value:
    """|x|^p, as a product for p = 2."""
    if p == 1:
        return ctx.g.abs(x)
    return ctx.g.mul(x, x) if p == 2 else ctx.g.pow(ctx.g.abs(x), ctx.scalar_like(x, p))


def _lp_root(ctx: NodeContext, total: Value, p: int) -> Value:
    """total^(1/p), as a square root for p = 2."""
    if p == 1:
        return total
    return ctx.g.sqrt(total) if p == 2 else ctx.g.pow(total, ctx.scalar_like(total, 1 / p))


def _max_pool_with_indices(ctx: NodeContext, x: Value, window: Window) -> list[Value]:
    """MaxPool and its Indices output: one gather reads every window's cells (taps in row-major order, as
    the spec's reference scans them) from the -inf-padded input flattened per channel; the max and the first
    arg max over the taps give the values and the tap, and a constant table maps (output cell, tap) to the
    cell's flat index in the unpadded input, row-major (storage_order 0) or column-major (1) over the
    spatial dims, plus the flat channel's offset."""
    order = {0: "C", 1: "F"}.get(ctx.attr("storage_order", 0))
    if order is None:
        raise ctx.invalid(f"storage_order must be 0 or 1, got {ctx.attr('storage_order')}")
    size = shape(x)[2:]
    n = len(size)
    kernel, strides, dilations, begin, out = window.kernel, window.strides, window.dilations, window.begin, window.out
    padded = _pad_spatial(ctx, x, begin, window.tail(size), -np.inf)
    # The padded coordinates of every (output cell, tap), [spatial dim, *out, *kernel].
    grid = np.indices([*out, *kernel])
    cells = np.stack([grid[i] * strides[i] + grid[n + i] * dilations[i] for i in range(n)])
    flat_padded = np.ravel_multi_index(tuple(cells), shape(padded)[2:]).reshape(-1).astype(np.int64)
    # A pad tap holds -inf and is never the first max of a window that has an input cell above -inf.
    column = [n] + [1] * 2 * n
    unpadded = np.clip(cells - np.reshape(begin, column), 0, np.reshape(size, column) - 1)
    table = np.ravel_multi_index(tuple(unpadded), size, order=order).reshape(-1).astype(np.int64)
    batch, channels = shape(x)[:2]
    taps = math.prod(kernel)
    windows = ctx.g.gather(ctx.reshape(padded, [batch, channels, math.prod(shape(padded)[2:])]), flat_padded, 2)
    windows = ctx.reshape(windows, [batch, channels, *out, taps])
    y = ctx.g.batched_reduce_max(windows, [-1])
    # Tap t of output cell o is entry o * taps + t of the table.
    rows = np.arange(0, math.prod(out) * taps, taps, dtype=np.int64).reshape(out)
    first = ctx.g.add(ctx.g.arg_max(windows, -1), ctx.broadcast_to(rows, shape(y)))
    channel = np.arange(batch * channels, dtype=np.int64).reshape(batch, channels, *[1] * n) * math.prod(size)
    return [y, ctx.g.add(ctx.g.gather(table, first, 0), ctx.broadcast_to(channel, shape(y)))]


def _pad_spatial(ctx: NodeContext, x: Value, begin: Sequence[int], end: Sequence[int], value: float) -> Value:
    if not any(begin) and not any(end):
        return x
    dims = [*shape(x)[:2], *(s + b + e for s, b, e in zip(shape(x)[2:], begin, end))]
    return ctx.g.insert_tensor(ctx.full(dims, value, dtype(x)), x, [0, 0, *begin])


def _pool_by_gathers(ctx: NodeContext, x: Value, kind: str, window: Window, include_pad: bool) -> Value:
    """Pooling (`kind` max, avg or sum) over the explicitly padded input as one pass per spatial dim: along
    H, the max or sum of one strided gather per kernel row, then the same along W per kernel column (and so
    on). A window's max (sum) is the max (sum) over its rows of the max (sum) along each row, so this is the
    pool itself with kh + kw gathers of at most one output's length of indices each; an average divides by
    the count of cells it covers, whose table is the outer product of the per-axis counts."""
    size = shape(x)[2:]
    kernel, strides, dilations, begin, end, out = (
        window.kernel, window.strides, window.dilations, window.begin, window.end, window.out)
    result = _pad_spatial(ctx, x, begin, window.tail(size), -np.inf if kind == "max" else 0.0)
    counts = []
    for axis in range(len(size)):
        # The cells an average counts: the input and, with count_include_pad, the pads (never ceil_mode's).
        low = 0 if include_pad else begin[axis]
        high = size[axis] + begin[axis] + (end[axis] if include_pad else 0)
        starts = strides[axis] * np.arange(out[axis])
        taps, count = [], np.zeros(out[axis], np.int64)
        for i in range(kernel[axis]):
            cells = starts + i * dilations[axis]
            taps.append(ctx.g.gather(result, cells.astype(np.int64), axis + 2))
            count += (cells >= low) & (cells < high)
        result = taps[0]
        for tap in taps[1:]:
            result = ctx.g.max(result, tap) if kind == "max" else ctx.g.add(result, tap)
        counts.append(count)
    if kind != "avg":
        return result
    divisor = ctx.g.broadcast(functools.reduce(np.multiply.outer, counts).astype(dtype(x)), shape(result), 2)
    return ctx.g.div(result, divisor)


@handles("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
def global_pool(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    axes = list(range(2, rank(x)))
    if ctx.op_type == "GlobalMaxPool":
        y = ctx.g.batched_reduce_max(x, axes)
    elif ctx.op_type == "GlobalLpPool":
        # (sum of |x|^p over the whole map) ^ (1/p), as LpPool computes each window.
        p = _lp_order(ctx)
        y = _lp_root(ctx, ctx.g.batched_reduce_add(_lp_power(ctx, x, p), axes), p)
    else:
        count = math.prod(shape(x)[2:])
        y = ctx.g.batched_reduce_add(x, axes)
        y = ctx.g.div(y, ctx.scalar_like(y, count))
    return [ctx.keep_dims(y, shape(x), axes)]


@handles("RoiAlign")
@float16_in_float32
def roi_align(ctx: NodeContext) -> list[Value]:
    x, rois, batch = ctx.input(0), ctx.input(1), ctx.input(2)
    # Opset 10 had no attribute and no half-pixel shift (its "output_half_pixel").
    transform = ctx.attr("coordinate_transformation_mode", "half_pixel" if ctx.opset >= 16 else "output_half_pixel")
    if transform not in ("half_pixel", "output_half_pixel"):
        raise ctx.unsupported("coordinate_transformation_mode", f"unknown value '{transform}'")
    mode = ctx.attr("mode", "avg")
    if mode not in ("avg", "max"):
        raise ctx.unsupported("mode", f"unknown value '{mode}'")
    size, ratio = [ctx.attr("output_height", 1), ctx.attr("output_width", 1)], ctx.attr("sampling_ratio", 0)
    if rank(x) != 4 or shape(rois)[1:] != (4,) or shape(batch) != shape(rois)[:1]:
        raise ctx.invalid(
            f"X {list(shape(x))}, rois {list(shape(rois))} and batch_indices {list(shape(batch))} must be "
            "[N, C, H, W], [R, 4] and [R]"
        )
    if not is_float(x) or dtype(rois) != dtype(x):
        raise UnsupportedTypeError(f"node '{ctx.name}' (RoiAlign) X and rois", f"{dtype(x)}, {dtype(rois)}")
    if min(size) < 1 or ratio < 0:
        raise ctx.invalid(f"output size {size} must be >= 1 and sampling_ratio >= 0")
    if shape(rois)[0] == 0:
        return [np.empty([0, shape(x)[1], *size], dtype(x))]
    scale, half_pixel = ctx.attr("spatial_scale", 1.0), transform == "half_pixel"
    return [ctx.g.roi_align(x, rois, ctx.convert(batch, np.int64), size, ratio, scale, half_pixel, mode)]
