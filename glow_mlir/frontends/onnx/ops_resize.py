"""Resize and Upsample (nearest, linear, cubic) as gathers with constant indices and constant weights.

Every mode is separable: each resized axis maps every output position to input positions through the
coordinate transformation, which is known at compile time. Nearest gathers the rounded position; linear
gathers the two neighbours and blends them with constant weights (per axis, so 2-D is bilinear). Cubic and
antialiased filters read more neighbours (taps): one gather reads all taps of every output position, a
multiply by the constant tap weights and a sum over the taps blend them. Positions are computed in float32,
as onnxruntime does, so ties round the same way.

tf_crop_and_resize maps the output onto the region of interest (the roi input) of each axis; an output
position whose coordinate falls outside the input takes extrapolation_value (a select on a constant mask).

With a `scales` input the spec's resized length, `scale * length_original`, may be fractional (a 4-long axis at
scale 0.6: 2.4, and 2 output cells). align_corners and pytorch_half_pixel take the output size, an integer, as
onnxruntime, PyTorch and TensorFlow do: PyTorch's `interpolate(scale_factor=0.5, align_corners=True)` of a 45-row
map gives 22 rows at a step of 44 / 21, which the fractional length (44 / 21.5) moved by up to a row (values off
by 3.5 in the thirteenth wave). The spec's reference (onnx/reference/ops/op_resize.py) uses the fractional one,
so its two backend cases of fractional downscales with align_corners fail here as they do in onnxruntime;
half_pixel_symmetric uses it as the spec states. With a `sizes` input they all agree.
"""

from __future__ import annotations

import numpy as np

from glow_mlir.errors import UnsupportedTypeError
from glow_mlir.frontends.onnx.node import (
    NodeContext,
    Value,
    dtype,
    normalize_axis,
    rank,
    shape,
)
from glow_mlir.frontends.onnx.registry import handles

_F = np.float32


@handles("Resize", "Upsample")
def resize(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    mode = ctx.attr("mode", "nearest")
    if mode == "bilinear":
        mode = "linear"
    if mode not in ("nearest", "linear", "cubic"):
        raise ctx.unsupported("mode", f"unknown value '{mode}'")
    if ctx.op_type == "Upsample" or ctx.opset < 11:
        # Upsample and Resize-10: scales only, asymmetric coordinates, the old nearest rounding.
        scales = ctx.attr("scales") if ctx.op_type == "Upsample" and ctx.opset < 9 else _floats(ctx, 1, "scales")
        sizes, transform, nearest = None, "asymmetric", "simple"
        axes = list(range(rank(x)))
        roi = None
    else:
        transform = ctx.attr("coordinate_transformation_mode", "half_pixel")
        nearest = ctx.attr("nearest_mode", "round_prefer_floor")
        scales, sizes = _floats(ctx, 2, "scales"), ctx.ints(3, "the sizes input")
        axes = [normalize_axis(a, rank(x), ctx) for a in ctx.attr("axes", range(rank(x)))]
        roi = _roi(ctx, len(axes)) if transform == "tf_crop_and_resize" else None
    if scales is None and sizes is None:
        raise ctx.invalid("one of scales and sizes is required")
    dims = shape(x)
    if sizes is not None:
        scales, out, resized = _from_sizes(ctx, [dims[a] for a in axes], sizes)
    else:
        if len(scales) != len(axes):
            raise ctx.invalid(f"scales {list(scales)} must have {len(axes)} values")
        resized = [_F(s) * _F(dims[a]) for s, a in zip(scales, axes)]
        out = [int(r) for r in resized]
    # The spec antialiases linear and cubic downsampling only.
    antialias = bool(ctx.attr("antialias", 0)) and mode != "nearest"
    if (mode == "cubic" or antialias) and (np.issubdtype(dtype(x), np.integer) or dtype(x) == np.bool_):
        # Integer resizing would round and saturate each weighted sum; only float tensors are filtered.
        raise UnsupportedTypeError(f"node '{ctx.name}' (Resize, {mode}) input", str(dtype(x)))
    for i, (axis, scale, size, length) in enumerate(zip(axes, scales, out, resized)):
        if size < 1:
            raise ctx.invalid(f"the output dim {axis} is empty")
        window = None if roi is None else (roi[i], roi[i + len(axes)])
        if scale == 1 and size == dims[axis] and window in (None, (0, 1)):
            # onnxruntime leaves such an axis alone, even where the transform would shift it.
            continue
        if window is None:
            coords = _coordinates(ctx, transform, size, length, dims[axis], _F(scale))
        else:
            coords = _crop_coordinates(size, length, dims[axis], window)
        if mode == "cubic" or (antialias and scale < 1):
            taps = _Taps(mode, ctx.attr("cubic_coeff_a", -0.75), bool(ctx.attr("exclude_outside", 0)))
            y = _filter_axis(ctx, x, axis, *taps.of(coords, dims[axis], min(scale, 1) if antialias else 1))
        else:
            y = _resize_axis(ctx, x, axis, coords, mode, nearest, scale < 1)
        if window is not None:
            y = _extrapolate(ctx, y, axis, (coords < 0) | (coords > dims[axis] - 1))
        x = y
    return [x]


def _roi(ctx: NodeContext, naxes: int) -> list[np.float32]:
    """tf_crop_and_resize's region of interest: starts then ends, as fractions of each resized axis."""
    values = ctx.const(1, "the roi input")
    if values is None or values.size != 2 * naxes:
        got = "none" if values is None else list(np.asarray(values).reshape(-1))
        raise ctx.invalid(f"tf_crop_and_resize needs a roi of {2 * naxes} values (starts, ends), got {got}")
    return [_F(v) for v in np.asarray(values).reshape(-1)]


def _floats(ctx: NodeContext, i: int, what: str) -> list[float] | None:
    values = ctx.const(i, f"the {what} input")
    # An empty scales input stands for "use sizes".
    return None if values is None or values.size == 0 else [float(v) for v in values.reshape(-1)]


def _from_sizes(
    ctx: NodeContext, dims: list[int], sizes: list[int]
) -> tuple[list[float], list[int], list[np.float32]]:
    """The scales, output sizes and resized lengths (scale * input length) for a `sizes` input, honouring
    keep_aspect_ratio_policy: stretching resizes to exactly `sizes`, the other policies scale every axis by
    one factor and round the output sizes."""
    if len(sizes) != len(dims):
        raise ctx.invalid(f"sizes {sizes} must have {len(dims)} values")
    policy = ctx.attr("keep_aspect_ratio_policy", "stretch")
    if policy == "stretch":
        return [float(_F(o) / _F(d)) for o, d in zip(sizes, dims)], list(sizes), [_F(o) for o in sizes]
    if policy not in ("not_larger", "not_smaller"):
        raise ctx.unsupported("keep_aspect_ratio_policy", f"unknown value '{policy}'")
    ratios = [_F(o) / _F(d) for o, d in zip(sizes, dims)]
    scale = min(ratios) if policy == "not_larger" else max(ratios)
    resized = [scale * _F(d) for d in dims]
    return [float(scale)] * len(dims), [int(np.round(r)) for r in resized], resized


def _coordinates(
    ctx: NodeContext, transform: str, size: int, resized: np.float32, length: int, scale: np.float32
) -> np.ndarray:
    """The input coordinate of each of the `size` output positions along an axis of `length` (float32);
    `resized` is the spec's length_resized, scale * length, which may be fractional (module docstring)."""
    x = np.arange(size, dtype=_F)
    half = _F(0.5)
    if transform == "half_pixel":
        return (x + half) / scale - half
    if transform == "pytorch_half_pixel":
        return (x + half) / scale - half if size > 1 else np.zeros(size, _F)
    if transform == "half_pixel_symmetric":
        adjustment = _F(size) / resized
        offset = _F(length) / _F(2) * (_F(1) - adjustment)
        return offset + (x + half) / scale - half
    if transform == "align_corners":
        return np.zeros(size, _F) if size == 1 else x * (_F(length - 1) / _F(size - 1))
    if transform == "asymmetric":
        return x / scale
    if transform == "tf_half_pixel_for_nn":
        return (x + half) / scale
    raise ctx.unsupported("coordinate_transformation_mode", f"unknown value '{transform}'")


def _crop_coordinates(
    size: int, resized: np.float32, length: int, window: tuple[np.float32, np.float32]
) -> np.ndarray:
    """tf_crop_and_resize's input coordinates: the output spans the roi window [start, end] of the axis
    (fractions of length - 1); one output cell reads the window's centre."""
    start, end = window
    span = _F(length - 1)
    if resized == 1:
        return np.full(size, (end - start) * span / _F(2) + start * span, _F)
    return np.arange(size, dtype=_F) * ((end - start) * span / (resized - _F(1))) + start * span


def _nearest(ctx: NodeContext, coords: np.ndarray, mode: str, downsampling: bool) -> np.ndarray:
    if mode == "round_prefer_floor":
        ties = coords == np.trunc(coords) + _F(0.5)
        return np.where(ties, np.floor(coords), _round_half_away(coords))
    if mode == "round_prefer_ceil":
        return _round_half_away(coords)
    if mode == "floor":
        return np.floor(coords)
    if mode == "ceil":
        return np.ceil(coords)
    if mode == "simple":
        # Before opset 11: ceil when downsampling, truncation otherwise.
        return np.ceil(coords) if downsampling else np.trunc(coords)
    raise ctx.unsupported("nearest_mode", f"unknown value '{mode}'")


def _round_half_away(v: np.ndarray) -> np.ndarray:
    return np.sign(v) * np.floor(np.abs(v) + _F(0.5))


def _resize_axis(
    ctx: NodeContext, x: Value, axis: int, coords: np.ndarray, mode: str, nearest: str, downsampling: bool
) -> Value:
    length = shape(x)[axis]
    if mode == "nearest":
        index = np.clip(_nearest(ctx, coords, nearest, downsampling), 0, length - 1).astype(np.int64)
        if np.array_equal(index, np.arange(length)):
            return x
        return ctx.g.gather(x, index, axis)
    clamped = np.clip(coords, 0, length - 1)
    low = np.floor(clamped).astype(np.int64)
    high = np.minimum(low + 1, length - 1)
    weight = (clamped - low).astype(x.dtype)
    if np.array_equal(low, np.arange(length)) and not weight.any():
        return x
    lower, upper = ctx.g.gather(x, low, axis), ctx.g.gather(x, high, axis)
    dims = shape(lower)
    w_high = ctx.g.broadcast(weight, dims, axis)
    w_low = ctx.g.broadcast((1 - weight).astype(x.dtype), dims, axis)
    return ctx.g.add(ctx.g.mul(lower, w_low), ctx.g.mul(upper, w_high))


class _Taps:
    """The filter of cubic and antialiased resizing, as the spec's reference states it: output position
    `x` reads the inputs base + i for i in [first, 1 - first], base = ceil(x) - 1 (the neighbour at or left
    of x, preferring the left one), weighted by kernel(s * (i - (x - base))) over the weights' sum. s is 1,
    or the scale when antialiasing a downsample (the kernel then widens to 1/scale); inputs past the ends
    repeat the edge, or get weight 0 with exclude_outside."""

    def __init__(self, mode: str, a: float, exclude_outside: bool) -> None:
        self.mode, self.a, self.exclude_outside = mode, a, exclude_outside

    def kernel(self, d: np.ndarray) -> np.ndarray:
        d = np.abs(d)
        if self.mode == "linear":
            return np.clip(1 - d, 0, 1)
        a = self.a
        near = ((a + 2) * d - (a + 3)) * d * d + 1
        far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
        return np.where(d <= 1, near, np.where(d < 2, far, 0.0))

    def of(self, coords: np.ndarray, length: int, s: float) -> tuple[np.ndarray, np.ndarray]:
        """The input indices and weights, each [output positions, taps], of every output position."""
        support = 2 if self.mode == "cubic" else 1
        first = int(np.floor(-support / s)) + 1
        offsets = np.arange(first, 2 - first)
        x = coords.astype(np.float64)
        base = np.ceil(x) - 1
        index = base[:, None].astype(np.int64) + offsets
        weights = self.kernel(s * (offsets - (x - base)[:, None]))
        if self.exclude_outside:
            weights = np.where((index < 0) | (index >= length), 0.0, weights)
        total = weights.sum(axis=1, keepdims=True)
        return np.clip(index, 0, length - 1), weights / np.where(total == 0, 1, total)


def _filter_axis(ctx: NodeContext, x: Value, axis: int, index: np.ndarray, weights: np.ndarray) -> Value:
    """The weighted sums of the taps `index` of `x` along `axis`: one gather of every tap, then a multiply
    by the weights and a sum over the taps."""
    size, taps = index.shape
    dims = list(shape(x))
    gathered = ctx.g.gather(x, index.reshape(-1), axis)
    spread = [*dims[:axis], size, taps, *dims[axis + 1:]]
    w = ctx.constant_beside(weights.astype(dtype(x)), x)
    product = ctx.g.mul(ctx.reshape(gathered, spread), ctx.g.broadcast(w, spread, axis))
    return ctx.g.batched_reduce_add(product, [axis + 1])


def _extrapolate(ctx: NodeContext, y: Value, axis: int, outside: np.ndarray) -> Value:
    """`y` with extrapolation_value at the output positions along `axis` that read outside the input."""
    if not outside.any():
        return y
    dims = shape(y)
    mask = ctx.constant_beside(outside, y)
    fill = ctx.full(dims, ctx.attr("extrapolation_value", 0.0), dtype(y))
    return ctx.g.select(ctx.g.broadcast(mask, dims, axis), fill, y)

