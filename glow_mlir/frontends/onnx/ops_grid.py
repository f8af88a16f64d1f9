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
broadcasting into [N, T, Q] flat pixel indices and weights, and one gather_elements from X flattened to
[N, C, pixels] reads all T taps of every point; a multiply and a sum over the taps blend them. For `zeros`,
X gets a one-pixel frame of zeros first, so that an outside tap clamps into the frame instead of needing a
mask (a masked value would still carry an inf or NaN of the pixel it hid).

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
from glow_mlir.frontends.onnx.registry import handles

# Opset 16 names the modes bilinear and bicubic; opset 20 renamed them linear and cubic.
_MODES = {"bilinear": "linear", "linear": "linear", "bicubic": "cubic", "cubic": "cubic", "nearest": "nearest"}
_PADDINGS = ("zeros", "border", "reflection")
# The cubic convolution coefficient of GridSample (PyTorch's; Resize's cubic_coeff_a is an attribute).
_CUBIC_A = -0.75
_LOW_PRECISION = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


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
    out_dims = [n, c, *points]
    if 0 in out_dims:
        return [np.empty(out_dims, dtype(x))]
    if 0 in spatial:
        raise ctx.invalid(f"X {list(shape(x))} has no pixel to sample")
    if mode != "nearest" and not is_float(x):
        # Interpolating integers would need a rounding rule the spec does not give.
        raise UnsupportedTypeError(f"node '{ctx.name}' (GridSample, {mode}) input X", str(dtype(x)))
    ft = np.dtype(np.float64) if np.float64 in (dtype(x), dtype(grid)) else np.dtype(np.float32)
    q = math.prod(points)
    coords = ctx.reshape(ctx.convert(grid, ft), [n, q, k])

    lengths = [d + 2 for d in spatial] if padding == "zeros" else spatial
    if padding == "zeros":
        x = ctx.g.insert_tensor(ctx.full([n, c, *lengths], 0, dtype(x)), x, [0, 0, *([1] * k)])
    strides = [math.prod(lengths[a + 1 :]) for a in range(k)]

    indices: list[Value] = []
    weights: list[Value] = []
    for axis, length in enumerate(spatial):
        # The grid lists the coordinates last axis first.
        g = ctx.reshape(ctx.g.slice(coords, [0, 0, k - 1 - axis], [n, q, 1]), [n, 1, q])
        taps, tap_weights = _axis_taps(ctx, _denormalize(ctx, g, length, align), length, mode, padding, align)
        pixels = [_pixel(ctx, t, length, padding, align) for t in taps]
        indices.append(_tap_index(ctx, pixels, strides[axis], np.dtype(np.int64)))
        if tap_weights is not None:
            weights.append(_stack(ctx, tap_weights))
    index = _combine(ctx, indices, ctx.g.add)
    t = shape(index)[1]

    flat = ctx.reshape(x if mode == "nearest" else ctx.convert(x, ft), [n, c, math.prod(lengths)])
    index = ctx.broadcast_to(ctx.reshape(index, [n, 1, t * q]), [n, c, t * q])
    values = ctx.g.gather_elements(flat, index, 2)
    if mode == "nearest":
        return [ctx.reshape(values, out_dims)]
    weight = ctx.reshape(_combine(ctx, weights, ctx.g.mul), [n, 1, t, q])
    blended = ctx.g.mul(ctx.reshape(values, [n, c, t, q]), ctx.broadcast_to(weight, [n, c, t, q]))
    return [ctx.convert(ctx.reshape(ctx.g.batched_reduce_add(blended, [2]), out_dims), dtype(x))]


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
    (DeformConv's row gathers read memory at it unchecked; the NaN reaches the result through the weights)."""
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
    y = _deform_product(ctx, _deform_columns(ctx, x, index, weight, win.offset_group), w, bias, n, win)
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
    strides, dilations = list(ctx.attr("strides", [1, 1])), list(ctx.attr("dilations", [1, 1]))
    pads = list(ctx.attr("pads", [0, 0, 0, 0]))
    if len(strides) != 2 or len(dilations) != 2 or len(pads) != 4 or min(*strides, *dilations) < 1 or min(pads) < 0:
        raise ctx.invalid(f"strides {strides} and dilations {dilations} must be 2 values >= 1, pads {pads} 4 >= 0")
    out_hw = []
    for size, k, s, d, low, high in zip((h, wd), kernel, strides, dilations, pads[:2], pads[2:]):
        span = size + low + high - (k - 1) * d - 1
        if k < 1 or span < 0:
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
    """The rows of framed X that each sample's 4 bilinear corners read (see _deform_columns), and the corners'
    weights (times the mask): [1, 4, q] each. The q samples run over (image, output pixel, kernel tap, offset
    group), so that the rows gathered for them line up as the im2col matrix [N * P, taps * C]."""
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


def _deform_columns(ctx: NodeContext, x: Value, index: Value, weight: Value, offset_group: int) -> Value:
    """The im2col matrix [q, C / G_off] (q samples as in _deform_samples): X, channels last and framed by a pixel
    of zeros, is [N * (H + 2) * (W + 2) * G_off, C / G_off] rows, and each corner of the samples gathers its
    rows, weighted and accumulated, so that only the sum, one corner's rows and their weights are live at once
    (the 4 corners in one gather would be 4 times the matrix)."""
    n, c, h, wd = shape(x)
    framed = ctx.g.insert_tensor(ctx.full([n, h + 2, wd + 2, c], 0, dtype(x)), ctx.transpose(x, [0, 2, 3, 1]),
                                 [0, 1, 1, 0])  # fmt: skip
    framed = ctx.reshape(framed, [n * (h + 2) * (wd + 2) * offset_group, c // offset_group])
    q = shape(index)[2]
    columns: Value | None = None
    for corner in range(4):
        rows = ctx.g.gather(framed, ctx.reshape(ctx.g.slice(index, [0, corner, 0], [1, 1, q]), [q]), 0)
        scale = ctx.reshape(ctx.g.slice(weight, [0, corner, 0], [1, 1, q]), [q, 1])
        term = ctx.g.mul(rows, ctx.broadcast_to(scale, shape(rows)))
        columns = term if columns is None else ctx.g.add(columns, term)
    assert columns is not None
    return columns


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
