"""Resize and Upsample (nearest and linear) as gathers with constant indices and constant weights.

Both modes are separable: each resized axis maps every output position to input positions through the
coordinate transformation, which is known at compile time. Nearest gathers the rounded position; linear
gathers the two neighbours and blends them with constant weights (per axis, so 2-D is bilinear). Positions
are computed in float32, as onnxruntime does, so ties round the same way.

The resized length in the coordinate transformations is the spec's `length_resized = scale *
length_original`: with a `scales` input it may be fractional (a 4-long axis at scale 0.6 has length 2.4 and
2 output cells), and align_corners / pytorch_half_pixel use it unrounded, as the spec's reference
(onnx/reference/ops/op_resize.py) does. onnxruntime uses the rounded output size there instead, so the two
differ for such scales; with a `sizes` input they agree.
"""

from __future__ import annotations

import numpy as np

from glow_mlir.frontends.onnx.node import NodeContext, Value, normalize_axis, rank, shape
from glow_mlir.frontends.onnx.registry import handles

_F = np.float32


@handles("Resize", "Upsample")
def resize(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    mode = ctx.attr("mode", "nearest")
    if mode == "bilinear":
        mode = "linear"
    if mode not in ("nearest", "linear"):
        raise ctx.unsupported("mode", f"'{mode}' is not supported (nearest and linear are)")
    if ctx.op_type == "Upsample" or ctx.opset < 11:
        # Upsample and Resize-10: scales only, asymmetric coordinates, the old nearest rounding.
        scales = ctx.attr("scales") if ctx.op_type == "Upsample" and ctx.opset < 9 else _floats(ctx, 1, "scales")
        sizes, transform, nearest = None, "asymmetric", "simple"
        axes = list(range(rank(x)))
    else:
        transform = ctx.attr("coordinate_transformation_mode", "half_pixel")
        nearest = ctx.attr("nearest_mode", "round_prefer_floor")
        scales, sizes = _floats(ctx, 2, "scales"), ctx.ints(3, "the sizes input")
        axes = [normalize_axis(a, rank(x), ctx) for a in ctx.attr("axes", range(rank(x)))]
        if transform == "tf_crop_and_resize":
            raise ctx.unsupported("coordinate_transformation_mode", "'tf_crop_and_resize' is not supported")
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
    if ctx.attr("antialias", 0) and mode == "linear" and any(s < 1 for s in scales):
        raise ctx.unsupported("antialias", "antialiased downsampling is not supported")
    for axis, scale, size, length in zip(axes, scales, out, resized):
        if size < 1:
            raise ctx.invalid(f"the output dim {axis} is empty")
        if scale == 1 and size == dims[axis]:
            # onnxruntime leaves such an axis alone, even where the transform would shift it.
            continue
        coords = _coordinates(ctx, transform, size, length, dims[axis], _F(scale))
        x = _resize_axis(ctx, x, axis, coords, mode, nearest, scale < 1)
    return [x]


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
    `resized` is the spec's length_resized, scale * length, which may be fractional."""
    x = np.arange(size, dtype=_F)
    half = _F(0.5)
    if transform == "half_pixel":
        return (x + half) / scale - half
    if transform == "pytorch_half_pixel":
        return (x + half) / scale - half if resized > 1 else np.zeros(size, _F)
    if transform == "half_pixel_symmetric":
        adjustment = _F(size) / resized
        offset = _F(length) / _F(2) * (_F(1) - adjustment)
        return offset + (x + half) / scale - half
    if transform == "align_corners":
        return np.zeros(size, _F) if resized == 1 else x * (_F(length - 1) / (resized - _F(1)))
    if transform == "asymmetric":
        return x / scale
    if transform == "tf_half_pixel_for_nn":
        return (x + half) / scale
    raise ctx.unsupported("coordinate_transformation_mode", f"unknown value '{transform}'")


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
