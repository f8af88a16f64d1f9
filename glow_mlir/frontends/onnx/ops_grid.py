"""GridSample, AffineGrid and DeformConv as gathers, elementwise arithmetic and matmuls on run-time grids.

GridSample reads X [N, C, D1, ..., Dk] at the points a run-time grid [N, O1, ..., Om, k] names (the last
grid dim lists the coordinates in reverse: x, the last spatial axis, first). Everything follows onnx's
reference (onnx/reference/ops/op_grid_sample.py), which follows PyTorch:

- each coordinate is denormalized from [-1, 1] to pixel units (align_corners chooses whether -1 and 1 are
  the centres or the outer edges of the corner pixels);
- nearest rounds half to even; a coordinate outside the borders ([0, L-1], or [-0.5, L-0.5] without
  align_corners) is clamped to [0, L-1] (`border`) or reflected into them (`reflection`);
- linear and cubic read the 2 or 4 integer neighbours along each axis ("taps"), weighted by 1-t, t or Keys'
  cubic convolution with A = -0.75; a tap outside the image reads 0 (`zeros`), the nearest edge pixel
  (`border`), or its reflection (`reflection`).

The interpolation is separable, so every output point is a weighted sum over the product of the axes'
taps. Each axis's taps are computed as [N, taps, Q] tensors (Q the grid points), combined across axes by
broadcasting into [N, T, Q] flat pixel indices and weights. For `zeros`, X gets a one-pixel frame of zeros
first, so that an outside tap clamps into the frame instead of needing a mask (a masked value would still carry
an inf or NaN of the pixel it hid). Then, where the taps are many for the image (T * Q at least a tenth of its
pixels, half for nearest: deformable attention, spatial transformers, flow warps), X goes channels last into rows
[N * pixels, C] and the indices get each image's first row added: each tap is one gather of N * Q rows, runs of C
values, weighted and added to the sum, which is transposed from [N, Q, C] to [N, C, Q] at the end (bilinear, X
[4, 16, 32, 32] at grid [4, 336, 4, 2]: 0.065 ms, 0.42 with gather_elements). A few points in a large image
would not pay for transposing X: there one gather_elements from X flattened to [N, C, pixels] reads all T taps
of every point and channel, and a multiply and a sum over the taps blend them.

AffineGrid's size must be known at compile time: the grid of normalized pixel centres is then a constant,
and the node is one matmul of theta with it.

DeformConv (2-D; onnx/reference/ops/op_deform_conv.py runs an align_corners GridSample per output pixel) is an
im2col with bilinear taps. Kernel tap (i, j) of output pixel (y, x) samples X at (y * stride - pad_top + i *
dilation + its offset along H, likewise along W), with the offsets (and mask) of its channel's offset group.
The corners and weights of all q = N * P * taps * G_off samples are computed as above (linear, zeros), the
weights times the mask. X, channels last and in the frame of zeros, is [N * (H + 2) * (W + 2) * G_off, C / G_off]
rows, so each corner of a sample is one row: per corner, one gather of q rows, weighted and added up. The
samples run over (image, output pixel, tap, offset group), so the rows form the im2col matrix [N * P, taps * C]
as they come, and one matmul by W as [taps * C, O] (with the bias) is the convolution; with groups, each
group's channels are brought together for a batch_matmul. Gathering corner by corner keeps about three matrices
live (the sum, one corner's rows and its weights broadcast over them) where one gather of all 4 would need 5.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from glow_mlir.errors import UnsupportedTypeError
from glow_mlir.frontends.onnx.node import NodeContext, Value, dtype, is_float, rank, shape
from glow_mlir.frontends.onnx.ops_nn import window_attrs, window_pads
from glow_mlir.frontends.onnx.registry import handles

# Opset 16 names the modes bilinear and bicubic; opset 20 renamed them linear and cubic.
_MODES = {"bilinear": "linear", "linear": "linear", "bicubic": "cubic", "cubic": "cubic", "nearest": "nearest"}
_PADDINGS = ("zeros", "border", "reflection")
# The cubic convolution coefficient of GridSample (PyTorch's; Resize's cubic_coeff_a is an attribute).
_CUBIC_A = -0.75
_LOW_PRECISION = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))
# Taps per point along each axis.
_TAPS = {"nearest": 1, "linear": 2, "cubic": 4}
# GridSample gathers rows once its taps (T * Q) are at least 1 / _ROWS_PER_PIXEL[mode] of an image's pixels: a row
# gather reads C values an index, but needs X transposed to rows and the result back. Measured single-threaded on 558
# 2-D shapes (C 1 to 64, 16^2 to 200^2 pixels, N 1 and 8, zeros and border), summed by pixels / (T * Q): linear and
# cubic took 16% to 67% of gather_elements' time with rows up to 8.4 (X [8, 32, 100, 100], grid [8, 75, 4, 2],
# bilinear: 0.38 ms against 0.75), 165% to 275% beyond (X [1, 64, 128, 128], 256 points, bilinear border: 0.25 ms
# against 0.064). Nearest saves no blend: 34% to 62% up to 2, 86% up to 4 but 115% to 190% with C = 256 (X [2, 256,
# 64, 64], 1024 points: 0.68 ms against 0.36 to 0.58), 150% to 350% beyond.
_ROWS_PER_PIXEL = {"nearest": 2, "linear": 10, "cubic": 10}


@handles("GridSample")
def grid_sample(ctx: NodeContext) -> list[Value]:
    x, grid = ctx.input(0), ctx.input(1)
    name = ctx.attr("mode", "linear" if ctx.opset >= 20 else "bilinear")
    mode = _MODES.get(name)
    if mode is None:
        raise ctx.unsupported("mode", f"unknown value '{name}'")
    padding = ctx.attr("padding_mode", "zeros")
    if padding not in _PADDINGS:
        raise ctx.unsupported("padding_mode", f"unknown value '{padding}'")
    align = bool(ctx.attr("align_corners", 0))
    n, c, *spatial = shape(x)
    k = len(spatial)
    if k < 1 or (ctx.opset < 20 and k != 2):
        volumetric = " or [N, C, D1, ..., Dk]" if ctx.opset >= 20 else ""
        raise ctx.invalid(f"X {list(shape(x))} must be [N, C, H, W]{volumetric}")
    if rank(grid) != k + 2 or shape(grid)[0] != n or shape(grid)[-1] != k:
        raise ctx.invalid(f"grid {list(shape(grid))} must be [{n}, ..., {k}] ({k + 2}-D) for X {list(shape(x))}")
    if not is_float(grid):
        raise ctx.invalid(f"grid must be a float tensor, got {dtype(grid)}")
    points = list(shape(grid)[1:-1])
    out_type, out_dims = dtype(x), [n, c, *points]
    if 0 in out_dims:
        return [np.empty(out_dims, out_type)]
    if 0 in spatial:
        raise ctx.invalid(f"X {list(shape(x))} has no pixel to sample")
    if mode != "nearest" and not is_float(x):
        # Interpolating integers would need a rounding rule the spec does not give.
        raise UnsupportedTypeError(f"node '{ctx.name}' (GridSample, {mode}) input X", str(dtype(x)))
    ft = np.dtype(np.float64) if np.float64 in (dtype(x), dtype(grid)) else np.dtype(np.float32)
    q = math.prod(points)
    coords = ctx.reshape(ctx.convert(grid, ft), [n, q, k])
    by_rows = _TAPS[mode] ** k * q * _ROWS_PER_PIXEL[mode] >= math.prod(spatial)

    lengths = [d + 2 for d in spatial] if padding == "zeros" else spatial
    pixels = math.prod(lengths)
    it = np.dtype(np.int32) if n * pixels < 2**31 else np.dtype(np.int64)
    strides = [math.prod(lengths[a + 1 :]) for a in range(k)]
    indices: list[Value] = []
    weights: list[Value] = []
    for axis, length in enumerate(spatial):
        # The grid lists the coordinates last axis first.
        g = ctx.reshape(ctx.g.slice(coords, [0, 0, k - 1 - axis], [n, q, 1]), [n, 1, q])
        taps, tap_weights = _axis_taps(ctx, _denormalize(ctx, g, length, align), length, mode, padding, align)
        indices.append(_tap_index(ctx, [_pixel(ctx, t, length, padding, align) for t in taps], strides[axis], it))
        if tap_weights is not None:
            weights.append(_stack(ctx, tap_weights))
    if by_rows and n > 1:
        # The rows of all images are one matrix: image i's pixels start at row i * pixels.
        first = (np.arange(n) * pixels).reshape(n, 1, 1).astype(it)
        indices.append(ctx.broadcast_to(ctx.constant_beside(first, indices[0]), [n, 1, q]))
    index = _combine(ctx, indices, ctx.g.add)
    weight = _combine(ctx, weights, ctx.g.mul) if weights else None
    x = x if mode == "nearest" else ctx.convert(x, ft)
    if by_rows:
        rows = _blend_rows(ctx, _pixel_rows(ctx, x, padding == "zeros"), index, weight)
        y = ctx.transpose(ctx.reshape(rows, [n, q, c]), [0, 2, 1])
    else:
        y = _blend_elements(ctx, _framed(ctx, x, range(2, k + 2)) if padding == "zeros" else x, index, weight)
    return [ctx.convert(ctx.reshape(y, out_dims), out_type)]


def _blend_elements(ctx: NodeContext, x: Value, index: Value, weight: Value | None) -> Value:
    """The sum over taps of the pixels of X [N, C, D1, ..., Dk] that `index` [N, T, Q] names (flat) times
    `weight` [N, T, Q] (None: one tap, taken as is): [N, C, Q], by one gather_elements of all taps of every channel."""
    n, c, *spatial = shape(x)
    _, taps, q = shape(index)
    index = ctx.broadcast_to(ctx.reshape(index, [n, 1, taps * q]), [n, c, taps * q])
    values = ctx.g.gather_elements(ctx.reshape(x, [n, c, math.prod(spatial)]), index, 2)
    if weight is None:
        return values
    weight = ctx.broadcast_to(ctx.reshape(weight, [n, 1, taps, q]), [n, c, taps, q])
    return ctx.g.batched_reduce_add(ctx.g.mul(ctx.reshape(values, [n, c, taps, q]), weight), [2])


def _denormalize(ctx: NodeContext, g: Value, length: int, align: bool) -> Value:
    """Grid values in [-1, 1] as pixel coordinates, computed in the reference's order of operations."""
    shifted = ctx.g.add(g, _splat(ctx, g, 1))
    if align:
        return ctx.g.mul(ctx.g.mul(shifted, _splat(ctx, g, 0.5)), _splat(ctx, g, length - 1))
    scaled = ctx.g.sub(ctx.g.mul(shifted, _splat(ctx, g, length)), _splat(ctx, g, 1))
    return ctx.g.mul(scaled, _splat(ctx, g, 0.5))


def _borders(length: int, align: bool) -> tuple[float, float]:
    """The span a coordinate may take before padding applies: pixel centres with align_corners, else the
    outer edges of the corner pixels."""
    return (0.0, length - 1.0) if align else (-0.5, length - 0.5)


def _axis_taps(
    ctx: NodeContext, coord: Value, length: int, mode: str, padding: str, align: bool
) -> tuple[list[Value], list[Value] | None]:
    """The tap positions (float, whole numbers) along one axis and their weights (None for nearest)."""
    if mode == "nearest":
        coord = ctx.g.round(coord)
    low, high = _borders(length, align)
    if padding == "border":
        # Only a coordinate beyond the borders moves: one in [-0.5, 0) keeps its cubic taps at -2..1.
        outside = ctx.g.logical_or(_less(ctx, coord, low), _less(ctx, high, coord))
        coord = ctx.g.select(outside, _clamp(ctx, coord, 0, length - 1), coord)
    elif padding == "reflection":
        coord = _reflect(ctx, coord, low, high)
    if mode == "nearest":
        return [coord], None
    base = ctx.g.floor(coord)
    frac = ctx.g.sub(coord, base)
    one = _splat(ctx, coord, 1)
    if mode == "linear":
        offsets, tap_weights = (0, 1), [ctx.g.sub(one, frac), frac]
    else:
        near = ctx.g.sub(one, frac)
        tap_weights = [
            _cubic_outer(ctx, ctx.g.add(frac, one)),
            _cubic_inner(ctx, frac),
            _cubic_inner(ctx, near),
            _cubic_outer(ctx, ctx.g.add(near, one)),
        ]
        offsets = (-1, 0, 1, 2)
    taps = [base if o == 0 else ctx.g.add(base, _splat(ctx, base, o)) for o in offsets]
    return taps, tap_weights


def _cubic_inner(ctx: NodeContext, s: Value) -> Value:
    """Keys' cubic convolution weight of a tap at distance s in [0, 1]: ((A+2)s - (A+3))s^2 + 1."""
    a = _CUBIC_A
    poly = ctx.g.sub(ctx.g.mul(_splat(ctx, s, a + 2), s), _splat(ctx, s, a + 3))
    return ctx.g.add(ctx.g.mul(ctx.g.mul(poly, s), s), _splat(ctx, s, 1))


def _cubic_outer(ctx: NodeContext, s: Value) -> Value:
    """Keys' cubic convolution weight of a tap at distance s in [1, 2]: ((As - 5A)s + 8A)s - 4A."""
    a = _CUBIC_A
    poly = ctx.g.sub(ctx.g.mul(_splat(ctx, s, a), s), _splat(ctx, s, 5 * a))
    poly = ctx.g.add(ctx.g.mul(poly, s), _splat(ctx, s, 8 * a))
    return ctx.g.sub(ctx.g.mul(poly, s), _splat(ctx, s, 4 * a))


def _pixel(ctx: NodeContext, tap: Value, length: int, padding: str, align: bool) -> Value:
    """The pixel a tap reads along an axis of `length`, as a whole float: for `zeros` an index into X framed
    by one zero pixel each side, where every tap outside the image lands on the frame."""
    if padding == "zeros":
        return _clamp(ctx, ctx.g.add(tap, _splat(ctx, tap, 1)), 0, length + 1)
    if padding == "reflection":
        low, high = _borders(length, align)
        # The clamp only keeps float rounding of a far reflection within the image.
        tap = _reflect(ctx, tap, low, high)
    return _clamp(ctx, tap, 0, length - 1)


def _reflect(ctx: NodeContext, v: Value, low: float, high: float) -> Value:
    """v reflected by the borders [low, high] until within them (the reference's _gs_reflect): a point d
    beyond a border after n whole spans lands d - n*span from it, from the far border when n is odd."""
    span = high - low
    if span == 0:
        # A one-pixel axis with align_corners: the only place is its centre.
        return _splat(ctx, v, low)
    below = _less(ctx, v, low)
    above = _less(ctx, high, v)
    distance = ctx.g.select(below, ctx.g.sub(_splat(ctx, v, low), v), ctx.g.sub(v, _splat(ctx, v, high)))
    spans = ctx.g.floor(ctx.g.div(distance, _splat(ctx, v, span)))
    rest = ctx.g.sub(distance, ctx.g.mul(spans, _splat(ctx, v, span)))
    half = ctx.g.mul(spans, _splat(ctx, v, 0.5))
    odd = ctx.g.cmp_neq(ctx.g.floor(half), half)
    # Below with an even count, or above with an odd one, measures from the low border.
    from_low = ctx.g.logical_xor(below, odd)
    reflected = ctx.g.select(
        from_low, ctx.g.add(_splat(ctx, v, low), rest), ctx.g.sub(_splat(ctx, v, high), rest)
    )
    return ctx.g.select(ctx.g.logical_or(below, above), reflected, v)


def _tap_index(ctx: NodeContext, pixels: Sequence[Value], stride: int, it: np.dtype) -> Value:
    """One axis's tap pixels ([N, 1, Q] whole floats) as its term of the flat pixel indices: [N, taps, Q] of
    the integer type `it`, times the axis's `stride` in the flattened image."""
    index = ctx.convert(_stack(ctx, pixels), it)
    return index if stride == 1 else ctx.g.mul(index, ctx.full(shape(index), stride, it))


def _stack(ctx: NodeContext, values: Sequence[Value]) -> Value:
    """[N, 1, Q] tensors stacked into [N, len(values), Q]."""
    return values[0] if len(values) == 1 else ctx.g.concat(list(values), 1)


def _combine(ctx: NodeContext, per_axis: Sequence[Value], op: Callable[[Value, Value], Value]) -> Value:
    """Per-axis [N, t_a, Q] tap values combined over every tuple of taps by `op` (add for indices, mul for
    weights): [N, t_0 * ... * t_(k-1), Q], the last axis's taps varying fastest."""
    n, _, q = shape(per_axis[0])
    counts = [shape(v)[1] for v in per_axis]
    dims = [n, *counts, q]
    total: Value | None = None
    for axis, v in enumerate(per_axis):
        lifted = [n, *(t if a == axis else 1 for a, t in enumerate(counts)), q]
        term = ctx.broadcast_to(ctx.reshape(v, lifted), dims)
        total = term if total is None else op(total, term)
    return ctx.reshape(total, [n, math.prod(counts), q])


def _splat(ctx: NodeContext, like: Value, value: float) -> Value:
    return ctx.full(shape(like), value, dtype(like))


def _less(ctx: NodeContext, a: Value | float, b: Value | float) -> Value:
    """a < b, where one side may be a number."""
    like = a if not isinstance(a, float) else b
    a = _splat(ctx, like, a) if isinstance(a, float) else a
    b = _splat(ctx, like, b) if isinstance(b, float) else b
    return ctx.g.cmp_lt(a, b)


def _clamp(ctx: NodeContext, v: Value, low: float, high: float) -> Value:
    """v within [low, high], a NaN at `low`: a pixel index made of a NaN coordinate must still address the image
    (the row gathers read memory at it unchecked; the NaN reaches the result through the weights)."""
    return ctx.g.select(_less(ctx, float(low), v), ctx.g.min(v, _splat(ctx, v, high)), _splat(ctx, v, low))


@handles("AffineGrid")
def affine_grid(ctx: NodeContext) -> list[Value]:
    theta = ctx.input(0)
    size = ctx.ints(1, "the size input")
    if size is None:
        raise ctx.invalid("input 1 (size) is required")
    align = bool(ctx.attr("align_corners", 0))
    k = len(size) - 2
    if k not in (2, 3):
        raise ctx.invalid(f"size {size} must be [N, C, H, W] or [N, C, D, H, W]")
    n, spatial = size[0], size[2:]
    if shape(theta) != (n, k, k + 1):
        raise ctx.invalid(f"theta {list(shape(theta))} must be [{n}, {k}, {k + 1}] for size {size}")
    if not is_float(theta):
        raise ctx.invalid(f"theta must be a float tensor, got {dtype(theta)}")
    if any(d < 0 for d in size):
        raise ctx.invalid(f"size {size} has a negative dim")
    out_dims = [n, *spatial, k]
    if 0 in out_dims:
        return [np.empty(out_dims, dtype(theta))]
    wide = dtype(theta) in _LOW_PRECISION
    flat = ctx.reshape(ctx.convert(theta, np.float32) if wide else theta, [n * k, k + 1])
    base = _base_grid(spatial, align).astype(dtype(flat))
    points = math.prod(spatial)
    grid = ctx.transpose(ctx.reshape(ctx.g.matmul(flat, base), [n, k, points]), [0, 2, 1])
    return [ctx.convert(ctx.reshape(grid, out_dims), dtype(theta))]


def _base_grid(spatial: Sequence[int], align: bool) -> np.ndarray:
    """The homogeneous normalized coordinates of every output point, [k + 1, points] (float64): rows x, y
    (, z), 1, the last spatial axis first, as the reference's construct_original_grid stacks them."""
    axes = [_normalized(length, align) for length in spatial]
    mesh = np.meshgrid(*axes, indexing="ij")
    rows = [m.reshape(-1) for m in reversed(mesh)]
    return np.stack([*rows, np.ones(math.prod(spatial))])


def _normalized(length: int, align: bool) -> np.ndarray:
    """The normalized coordinates of the pixel centres of an axis, as the reference's arange computes them."""
    if not align:
        step = 2.0 / length
        return -1 + step / 2 + step * np.arange(length)
    if length == 1:
        # The reference divides by zero here; onnxruntime (Eigen's LinSpaced of one point) gives 1.
        return np.ones(1)
    return -1 + 2.0 / (length - 1) * np.arange(length)


@dataclass(frozen=True)
class _Window:
    """A DeformConv node's window, its attributes checked, and its output size."""

    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads: tuple[int, ...]
    out_hw: tuple[int, ...]
    group: int
    offset_group: int

    @property
    def taps(self) -> int:
        return self.kernel[0] * self.kernel[1]

    @property
    def points(self) -> int:
        return self.out_hw[0] * self.out_hw[1]


@handles("DeformConv")
def deform_conv(ctx: NodeContext) -> list[Value]:
    x, w, offset = ctx.input(0), ctx.input(1), ctx.input(2)
    bias, mask = ctx.optional(3), ctx.optional(4)
    win = _deform_window(ctx, x, w, offset, bias, mask)
    n, c, h, wd = shape(x)
    out_type, out_dims = dtype(x), [n, shape(w)[0], *win.out_hw]
    if 0 in out_dims:
        return [np.empty(out_dims, out_type)]
    if 0 in (c, h, wd):
        # Every sample reads zeros: only the bias is left.
        zeros = ctx.full(out_dims, 0, out_type)
        return [zeros if bias is None else ctx.broadcast_to(ctx.reshape(bias, [out_dims[1], 1, 1]), out_dims)]
    # Float16 and bfloat16 compute in float32 and round once at the end, as Conv does (node.float16_in_float32).
    ft = np.dtype(np.float64) if out_type == np.float64 else np.dtype(np.float32)
    x, w, offset, bias, mask = (None if v is None else ctx.convert(v, ft) for v in (x, w, offset, bias, mask))
    index, weight = _deform_samples(ctx, offset, mask, shape(x), win)
    columns = _blend_rows(ctx, _pixel_rows(ctx, x, True, win.offset_group), index, weight)
    y = _deform_product(ctx, columns, w, bias, n, win)
    return [ctx.convert(ctx.reshape(y, out_dims), out_type)]


def _deform_window(
    ctx: NodeContext, x: Value, w: Value, offset: Value, bias: Value | None, mask: Value | None
) -> _Window:
    """The window of a DeformConv node, every input's shape and type checked against it."""
    if rank(x) != 4:
        if rank(x) < 3:
            raise ctx.invalid(f"X {list(shape(x))} must be [N, C, D1, ..., Dk]")
        raise ctx.unsupported("kernel_shape", f"{rank(x) - 2}-D DeformConv is not supported (X must be [N, C, H, W])")
    n, c, h, wd = shape(x)
    group, offset_group = ctx.attr("group", 1), ctx.attr("offset_group", 1)
    if rank(w) != 4 or group < 1 or shape(w)[1] * group != c or shape(w)[0] % group:
        raise ctx.invalid(f"W {list(shape(w))} must be [O, C / group, kH, kW], O divisible by group {group}, "
                          f"for X {list(shape(x))}")  # fmt: skip
    if offset_group < 1 or c % offset_group:
        raise ctx.invalid(f"X's {c} channels must be divisible by offset_group {offset_group}")
    kernel = list(shape(w)[2:])
    if list(ctx.attr("kernel_shape", kernel)) != kernel:
        raise ctx.invalid(f"kernel_shape {ctx.attr('kernel_shape')} must be W's spatial dims {kernel}")
    # Conv's attribute rules (DeformConv has no auto_pad, so window_pads reads `pads`); their values are the
    # builder's to check there, here the window's own.
    strides, dilations = window_attrs(ctx, 2, kernel)
    begin, end = window_pads(ctx, (h, wd), kernel, strides, dilations)
    pads = [*begin, *end]
    if min(pads) < 0:
        raise ctx.invalid(f"pads {pads} must be >= 0")
    out_hw = []
    for size, k, s, d, low, high in zip((h, wd), kernel, strides, dilations, begin, end):
        span = size + low + high - (k - 1) * d - 1
        if span < 0:
            raise ctx.invalid(f"the {kernel} kernel dilated by {dilations} does not fit X {list(shape(x))} padded "
                              f"by {pads}")  # fmt: skip
        out_hw.append(span // s + 1)
    win = _Window(tuple(kernel), tuple(strides), tuple(dilations), tuple(pads), tuple(out_hw), group, offset_group)
    expected = {"offset": (offset, [n, offset_group * win.taps * 2, *out_hw]), "B": (bias, [shape(w)[0]]),
                "mask": (mask, [n, offset_group * win.taps, *out_hw])}  # fmt: skip
    for what, (v, dims) in expected.items():
        if v is not None and list(shape(v)) != dims:
            raise ctx.invalid(f"{what} {list(shape(v))} must be {dims} for X {list(shape(x))}, W {list(shape(w))}, "
                              f"offset_group {offset_group}, pads {pads}, strides {strides}, dilations {dilations}")
    present = [v for v in (x, w, offset, bias, mask) if v is not None]
    if not is_float(x) or any(dtype(v) != dtype(x) for v in present):
        types = ", ".join(str(dtype(v)) for v in present)
        raise ctx.invalid(f"X, W, offset (, B, mask) must be of one float type, got {types}")
    return win


def _deform_samples(
    ctx: NodeContext, offset: Value, mask: Value | None, x_dims: Sequence[int], win: _Window
) -> tuple[Value, Value]:
    """The rows of framed X ([N * (H + 2) * (W + 2) * G_off, C / G_off], _pixel_rows) that each sample's 4
    bilinear corners read, and the corners' weights (times the mask): [1, 4, q] each. The q samples run over
    (image, output pixel, kernel tap, offset group), so that the rows gathered for them line up as the im2col
    matrix [N * P, taps * C]."""
    n, _, h, wd = x_dims
    dims = [n, win.points, win.taps, win.offset_group]
    q = math.prod(dims)
    offset = ctx.transpose(ctx.reshape(offset, [n, win.offset_group, win.taps, 2, win.points]), [0, 4, 2, 1, 3])
    offset = ctx.reshape(offset, [1, q, 2])
    it = np.dtype(np.int32) if n * (h + 2) * (wd + 2) * win.offset_group < 2**31 else np.dtype(np.int64)
    indices: list[Value] = []
    weights: list[Value] = []
    origins = _kernel_origins(win)
    for axis, (length, stride) in enumerate(((h, (wd + 2) * win.offset_group), (wd, win.offset_group))):
        delta = ctx.reshape(ctx.g.slice(offset, [0, 0, axis], [1, q, 1]), [1, 1, q])
        origin = origins[axis].reshape(1, win.points, win.taps, 1).astype(dtype(delta))
        corners, corner_weights = _axis_taps(ctx, ctx.g.add(delta, _spread(ctx, origin, delta, dims)), length,
                                             "linear", "zeros", True)  # fmt: skip
        indices.append(_tap_index(ctx, [_pixel(ctx, t, length, "zeros", True) for t in corners], stride, it))
        weights.append(_stack(ctx, corner_weights))
    if n * win.offset_group > 1:
        # The first row of each (image, offset group).
        first = np.arange(n).reshape(n, 1, 1, 1) * (h + 2) * (wd + 2) * win.offset_group + np.arange(win.offset_group)
        indices.append(_spread(ctx, first.astype(it), indices[0], dims))
    weight = _combine(ctx, weights, ctx.g.mul)
    if mask is not None:
        mask = ctx.transpose(ctx.reshape(mask, [n, win.offset_group, win.taps, win.points]), [0, 3, 2, 1])
        weight = ctx.g.mul(weight, ctx.broadcast_to(ctx.reshape(mask, [1, 1, q]), shape(weight)))
    return _combine(ctx, indices, ctx.g.add), weight


def _spread(ctx: NodeContext, array: np.ndarray, beside: Value, dims: Sequence[int]) -> Value:
    """A constant broadcast over the samples `dims` at run time, as a [1, 1, q] row like `beside`'s."""
    return ctx.reshape(ctx.broadcast_to(ctx.constant_beside(array, beside), dims), [1, 1, math.prod(dims)])


def _kernel_origins(win: _Window) -> list[np.ndarray]:
    """Where each kernel tap of each output pixel reads without an offset, along H and along W: two [P, taps]
    arrays, output pixels row-major over (oH, oW), taps over (kH, kW)."""
    out_rows, out_cols = np.meshgrid(*(np.arange(win.out_hw[a]) * win.strides[a] - win.pads[a] for a in (0, 1)),
                                     indexing="ij")  # fmt: skip
    tap_rows, tap_cols = np.meshgrid(*(np.arange(win.kernel[a]) * win.dilations[a] for a in (0, 1)), indexing="ij")
    return [o.reshape(-1, 1) + t.reshape(1, -1) for o, t in ((out_rows, tap_rows), (out_cols, tap_cols))]


def _pixel_rows(ctx: NodeContext, x: Value, frame: bool, groups: int = 1) -> Value:
    """X [N, C, D1, ..., Dk] channels last (framed by zeros with `frame`) as rows [N * pixels * groups, C / groups]:
    a row is one pixel's channels (of one group), which a row gather reads as one contiguous run."""
    n, c, *spatial = shape(x)
    k = len(spatial)
    x = ctx.transpose(x, [0, *range(2, k + 2), 1])
    x = _framed(ctx, x, range(1, k + 1)) if frame else x
    return ctx.reshape(x, [n * math.prod(shape(x)[1:-1]) * groups, c // groups])


def _framed(ctx: NodeContext, x: Value, axes: Sequence[int]) -> Value:
    """x in a frame of zeros one pixel wide on both sides of `axes`."""
    dims = [d + 2 if a in axes else d for a, d in enumerate(shape(x))]
    return ctx.g.insert_tensor(ctx.full(dims, 0, dtype(x)), x, [1 if a in axes else 0 for a in range(len(dims))])


def _blend_rows(ctx: NodeContext, rows: Value, index: Value, weight: Value | None) -> Value:
    """The sum over taps of the `rows` [R, C] that `index` [B, T, Q] names times `weight` [B, T, Q] (None: one
    tap, taken as is), [B * Q, C]. Tap by tap, one gather and a weighted add, so that only the sum, one tap's
    rows and their weights are live at once: all T taps in one gather would be T times the result, and took
    longer too (GridSample, X [4, 16, 32, 32] at grid [4, 336, 4, 2]: bilinear 0.080 ms against 0.064, bicubic
    0.25 against 0.22)."""
    b, taps, q = shape(index)
    total: Value | None = None
    for tap in range(taps):
        picked = ctx.g.gather(rows, ctx.reshape(ctx.g.slice(index, [0, tap, 0], [b, 1, q]), [b * q]), 0)
        if weight is None:
            return picked
        scale = ctx.reshape(ctx.g.slice(weight, [0, tap, 0], [b, 1, q]), [b * q, 1])
        term = ctx.g.mul(picked, ctx.broadcast_to(scale, shape(picked)))
        total = term if total is None else ctx.g.add(total, term)
    assert total is not None
    return total


def _deform_product(ctx: NodeContext, columns: Value, w: Value, bias: Value | None, n: int, win: _Window) -> Value:
    """The convolution of the im2col matrix [N * P, taps * C] by W [O, C / group, kH, kW] and the bias: one
    matmul per group, [N * P, taps * C / group] x [taps * C / group, O / group]; [N, O, P]."""
    outputs, channels = shape(w)[:2]
    per_group, depth = outputs // win.group, channels * win.taps
    # W as [group, taps, C / group, O / group]: the rows in the matrix's order of (tap, channel).
    w = ctx.transpose(ctx.reshape(w, [win.group, per_group, channels, win.taps]), [0, 3, 2, 1])
    if win.group == 1:
        lhs, rhs = ctx.reshape(columns, [n * win.points, depth]), ctx.reshape(w, [depth, outputs])
        y = ctx.g.matmul(lhs, rhs) if bias is None else ctx.g.fused_matmul(lhs, rhs, bias)
        return ctx.transpose(ctx.reshape(y, [n, win.points, outputs]), [0, 2, 1])
    # The groups split the channels, which run fastest within a tap: bring each group's together first.
    columns = ctx.reshape(columns, [n * win.points, win.taps, win.group, channels])
    columns = ctx.reshape(ctx.transpose(columns, [2, 0, 1, 3]), [win.group, n * win.points, depth])
    y = ctx.g.batch_matmul(columns, ctx.reshape(w, [win.group, depth, per_group]))
    y = ctx.reshape(ctx.transpose(ctx.reshape(y, [win.group, n, win.points, per_group]), [1, 0, 3, 2]),
                    [n, outputs, win.points])  # fmt: skip
    if bias is None:
        return y
    bias = ctx.constant_beside(bias, y) if isinstance(bias, np.ndarray) else bias
    return ctx.g.add(y, ctx.broadcast_to(ctx.reshape(bias, [outputs, 1]), shape(y)))
