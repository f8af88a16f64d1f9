"""GridSample and AffineGrid as gathers and elementwise arithmetic on run-time grids.

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
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

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
        index = ctx.convert(_stack(ctx, pixels), np.int64)
        if strides[axis] != 1:
            index = ctx.g.mul(index, ctx.full(shape(index), strides[axis], np.int64))
        indices.append(index)
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
    return ctx.g.max(ctx.g.min(v, _splat(ctx, v, high)), _splat(ctx, v, low))


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
