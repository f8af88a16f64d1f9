"""The numpy meaning of every `glow` op: the evaluators the op definitions name, read by the interpreter.

Written as plainly as numpy allows, not for speed: NCHW/OIHW convolution with groups, strides, dilation and
pads; transposed convolution as the scatter of every input element through the kernel; pooling where padding
never wins a max; batch normalization in inference form; softmax over the last dim. Every evaluator is
`(op, operands) -> result`, reading attributes from the op by name; `glow_mlir.interpreter.evaluate` types
the operands and rounds the result to the op's element type. Integers wrap and divide truncating toward zero
(C, ONNX); float sums, products and transcendental functions are computed in float64.
"""

from __future__ import annotations

from collections.abc import Callable

import ml_dtypes
import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.errors import UnsupportedError
from glow_mlir.opdefs.base import activations
from glow_mlir.opdefs.scalar import e8m0_reference

Array = np.ndarray
Evaluator = Callable[[ir.Operation, list[Array]], Array]


def dtype(value: ir.Value) -> np.dtype:
    return ops.numpy_dtype(ops.element_type(value))


def constant(op: ir.Operation, _: list[Array]) -> Array:
    attr = op.attributes["value"]
    if not isinstance(attr, ir.DenseElementsAttr):
        raise UnsupportedError(f"{ops.location_text(op)}: constant value {attr.type} is not a dense elements attr")
    shape = ops.shape(op.results[0])
    if attr.is_splat and isinstance(attr.get_splat_value(), ir.BoolAttr):
        # The bindings' buffer of an i1 splat holds one packed byte, which numpy would read as many bits.
        return np.full(shape, ir.BoolAttr(attr.get_splat_value()).value, np.bool_)
    return ops.dense_array(attr).reshape(shape)


def splat(op: ir.Operation, _: list[Array]) -> Array:
    attr = op.attributes["value"]
    value = ops.number(attr)
    return np.full(ops.shape(op.results[0]), value, dtype(op.results[0]))


def is_float(dtype: np.dtype) -> bool:
    """numpy's floats and ml_dtypes' (bfloat16, float8, float4), which numpy sees as kind 'V'."""
    return np.dtype(dtype).kind == "f" or ops.NUMPY_TO_MLIR.get(np.dtype(dtype), "").startswith(("bf", "f8", "f4"))


def wide(x: Array) -> Array:
    """`x` in the type products and sums accumulate in: float64, or int64 (wrapping as narrower ints do)."""
    return x.astype(np.float64 if is_float(x.dtype) else np.int64)


def fully_connected(_: ir.Operation, a: list[Array]) -> Array:
    x, w, b = a
    return wide(x) @ wide(w) + b


def matmul(_: ir.Operation, a: list[Array]) -> Array:
    return wide(a[0]) @ wide(a[1])


def dequantize_blocks(q: Array, scales: Array, zeros: Array, bits: int, k: int) -> Array:
    """W [k, N] of matmul_nbits' operands: q [N, blocks, bytes] holding `bits`-wide unsigned values lowest bits
    first, W[i, n] = (value - zeros[n, b]) * scales[n, b] in the scales' type for i in block b."""
    n, blocks, _ = q.shape
    shifts = (np.arange(8 // bits) * bits).astype(np.uint8)
    values = ((q[..., None] >> shifts) & np.uint8((1 << bits) - 1)).reshape(n, blocks, -1)
    w = (values.astype(scales.dtype) - zeros[..., None]) * scales[..., None]
    return w.reshape(n, -1)[:, :k].T


def matmul_nbits(op: ir.Operation, a: list[Array]) -> Array:
    x, q, scales, zeros = a
    bits = ir.IntegerAttr(op.attributes["bits"]).value
    return matmul(op, [x, dequantize_blocks(q, scales, zeros, bits, x.shape[1])])


def softmax(_: ir.Operation, a: list[Array]) -> Array:
    x = a[0].astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _windows(x: Array, kernels: list[int], strides: list[int], dilation: list[int]) -> Array:
    """View [N, C, OH, OW, KH, KW] of every (dilated) window of an already padded NCHW array."""
    kh, kw = kernels
    sh, sw = strides
    dh, dw = dilation
    n, c, h, w = x.shape
    oh = (h - (dh * (kh - 1) + 1)) // sh + 1
    ow = (w - (dw * (kw - 1) + 1)) // sw + 1
    s = x.strides
    return np.lib.stride_tricks.as_strided(
        x, (n, c, oh, ow, kh, kw), (s[0], s[1], s[2] * sh, s[3] * sw, s[2] * dh, s[3] * dw), writeable=False
    )


def _pad(x: Array, pads: list[int], value: float) -> Array:
    top, left, bottom, right = pads
    return np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=value)


def convolution(op: ir.Operation, a: list[Array]) -> Array:
    x, f, b = a
    group = ops.integer(op, "group")
    windows = _windows(
        _pad(x.astype(np.float64), ops.ints(op, "pads"), 0.0), ops.ints(op, "kernels"), ops.ints(op, "strides"),
        ops.ints(op, "dilation"),
    )
    n, c, oh, ow, kh, kw = windows.shape
    o = f.shape[0]
    # Split channels into groups: windows [N, G, C/G, OH, OW, KH, KW], filter [G, O/G, C/G, KH, KW].
    windows = windows.reshape(n, group, c // group, oh, ow, kh, kw)
    filters = f.astype(np.float64).reshape(group, o // group, c // group, kh, kw)
    out = np.einsum("ngcyxij,gocij->ngoyx", windows, filters).reshape(n, o, oh, ow)
    return out + b.reshape(1, o, 1, 1)


def _pool_windows(op: ir.Operation, x: Array, pad_value: float) -> Array:
    return _windows(
        _pad(x, ops.ints(op, "pads"), pad_value), ops.ints(op, "kernels"), ops.ints(op, "strides"), [1, 1]
    )


def max_pool(op: ir.Operation, a: list[Array]) -> Array:
    # -inf padding never wins: glow-verify ensures every window holds a real element.
    return _pool_windows(op, a[0], -np.inf).max(axis=(4, 5))


def avg_pool(op: ir.Operation, a: list[Array]) -> Array:
    sums = _pool_windows(op, a[0].astype(np.float64), 0.0).sum(axis=(4, 5))
    if ops.integer(op, "countIncludePads"):
        kh, kw = ops.ints(op, "kernels")
        return sums / (kh * kw)
    ones = np.ones((1, 1) + a[0].shape[2:])
    counts = _pool_windows(op, ones, 0.0).sum(axis=(4, 5))
    return sums / counts


def activation(op: ir.Operation, y: Array) -> Array:
    """`y` through the fused activation that `op`'s `activation` and `activationArgs` attributes name."""
    name = ir.StringAttr(op.attributes["activation"]).value
    if name == "none":
        return y
    args = list(ir.DenseF32ArrayAttr(op.attributes["activationArgs"]))
    return activations()[name].evaluate(y, args)


def fused_convolution(op: ir.Operation, a: list[Array]) -> Array:
    return activation(op, convolution(op, a))


def fused_matmul(op: ir.Operation, a: list[Array]) -> Array:
    lhs, rhs, bias = a
    return activation(op, wide(lhs) @ wide(rhs) + bias)


def batch_normalization(op: ir.Operation, a: list[Array]) -> Array:
    x, scale, bias, mean, var = (v.astype(np.float64) for v in a)
    axis = ops.integer(op, "channelIdx")
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    eps = ops.floating(op, "epsilon")
    scale, bias, mean, var = (v.reshape(shape) for v in (scale, bias, mean, var))
    return (x - mean) / np.sqrt(var + eps) * scale + bias


def concat(op: ir.Operation, a: list[Array]) -> Array:
    return np.concatenate(a, axis=ops.integer(op, "dim"))


def _block(start: list[int], sizes: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple(slice(s, s + n) for s, n in zip(start, sizes, strict=True))


def slice_(op: ir.Operation, a: list[Array]) -> Array:
    return a[0][_block(ops.ints(op, "start"), ops.shape(op.results[0]))]


def insert_tensor(op: ir.Operation, a: list[Array]) -> Array:
    big, small = a
    out = big.copy()
    out[_block(ops.ints(op, "start"), small.shape)] = small
    return out


def broadcast(op: ir.Operation, a: list[Array]) -> Array:
    x = a[0]
    target = ops.shape(op.results[0])
    axis = ops.integer(op, "axis")
    aligned = (1,) * axis + x.shape + (1,) * (len(target) - axis - x.ndim)
    return np.broadcast_to(x.reshape(aligned), target)


def sigmoid(_: ir.Operation, a: list[Array]) -> Array:
    x = a[0].astype(np.float64)
    return 1.0 / (1.0 + np.exp(-x))


def divide(a: Array, b: Array) -> Array:
    """Float division, or integer division truncating toward zero (C, ONNX) where numpy would floor.

    An integer division by zero gives 0 here: compiled code leaves it undefined, so no test may rely on it.
    """
    if is_float(a.dtype):
        return np.divide(a, b)
    divisor = np.where(b == 0, np.ones_like(b), b)
    floored = a // divisor
    inexact_negative = (a % divisor != 0) & ((a < 0) != (divisor < 0))
    return np.where(b == 0, np.zeros_like(a), floored + inexact_negative.astype(a.dtype))


def convert_to(op: ir.Operation, a: list[Array]) -> Array:
    x = a[0]
    target = dtype(op.results[0])
    if target == np.bool_:
        return x != 0
    if target == np.dtype(ml_dtypes.float8_e8m0fnu):
        return e8m0_reference(x.astype(np.float32))
    if target.kind == "i" and is_float(x.dtype):
        # numpy's cast truncates toward zero, as the convention asks; NaN and out-of-range values are
        # undefined in compiled code, so their result here is whatever numpy gives.
        return np.trunc(x).astype(target)
    return x.astype(target)


def gather(op: ir.Operation, a: list[Array]) -> Array:
    data, indices = a
    axis = ops.integer(op, "axis")
    size = data.shape[axis]
    if np.any((indices < -size) | (indices >= size)):
        raise ValueError(
            f"{ops.location_text(op)}: glow.gather indices must lie in [{-size}, {size - 1}] for axis {axis} of "
            f"data {list(data.shape)}, got {indices.min()}..{indices.max()}"
        )
    # Negative indices count from the end, as numpy.take (and ONNX Gather) has them.
    return np.take(data, indices.astype(np.int64), axis=axis)


def _wrapped(op: ir.Operation, indices: Array, size: Array | int, what: str) -> Array:
    """Indices with negatives counted from the end (ONNX); out of [-size, size) is an error here (ONNX leaves
    it undefined; compiled code clamps or skips it)."""
    indices = indices.astype(np.int64)
    if np.any((indices < -size) | (indices >= size)):
        raise ValueError(
            f"{ops.location_text(op)}: {op.name} indices out of range for {what}, got "
            f"{indices.min()}..{indices.max()}"
        )
    return np.where(indices < 0, indices + size, indices)


def gather_elements(op: ir.Operation, a: list[Array]) -> Array:
    data, indices = a
    axis = ops.integer(op, "axis")
    index = _wrapped(op, indices, data.shape[axis], f"axis {axis} of data {list(data.shape)}")
    # Off the axis, the indices' dims may be shorter than data's: read the block they cover.
    block = tuple(slice(0, d) if i != axis else slice(None) for i, d in enumerate(indices.shape))
    return np.take_along_axis(data[block], index, axis=axis)


def _nd_positions(op: ir.Operation, data: Array, indices: Array, batch_dims: int) -> Array:
    """The indices of a gather_nd / scatter_nd, wrapped along each of the data dims they address."""
    k = indices.shape[-1]
    sizes = np.array(data.shape[batch_dims : batch_dims + k], np.int64)
    return _wrapped(op, indices, sizes, f"data {list(data.shape)}")


def gather_nd(op: ir.Operation, a: list[Array]) -> Array:
    data, indices = a
    b = ops.integer(op, "batch_dims")
    index = _nd_positions(op, data, indices, b)
    batch = int(np.prod(data.shape[:b], dtype=np.int64))
    flat_data = data.reshape((batch, *data.shape[b:]))
    flat_index = index.reshape((batch, -1, index.shape[-1]))
    rows = [np.stack([d[tuple(i)] for i in idx]) for d, idx in zip(flat_data, flat_index, strict=True)]
    return np.stack(rows).reshape(ops.shape(op.results[0]))


_COMBINE: dict[str, Callable[[Array, Array], Array]] = {
    "none": lambda _, u: u, "add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum,
}


def _combine(op: ir.Operation) -> Callable[[Array, Array], Array]:
    # glow-verify and the builder hold the reduction to shapes.SCATTER_REDUCTIONS, the keys here.
    return _COMBINE[ir.StringAttr(op.attributes["reduction"]).value]


def scatter_elements(op: ir.Operation, a: list[Array]) -> Array:
    data, indices, updates = a
    axis = ops.integer(op, "axis")
    index = _wrapped(op, indices, data.shape[axis], f"axis {axis} of data {list(data.shape)}")
    combine, out = _combine(op), data.copy()
    # In row-major order of the updates, so the last of duplicate indices wins (reduction none).
    for position in np.ndindex(*indices.shape):
        target = list(position)
        target[axis] = index[position]
        out[tuple(target)] = combine(out[tuple(target)], updates[position])
    return out


def scatter_nd(op: ir.Operation, a: list[Array]) -> Array:
    data, indices, updates = a
    index = _nd_positions(op, data, indices, 0)
    combine, out = _combine(op), data.copy()
    for position in np.ndindex(*indices.shape[:-1]):
        target = tuple(index[position])
        out[target] = combine(out[target], updates[position])
    return out


def top_k(op: ir.Operation, a: list[Array]) -> Array:
    """The indices of the k largest (smallest) along `axis`, best first, ties to the lower index; NaN ranks
    above every number (numpy's sort order, as onnxruntime and ONNX's reference have it)."""
    x = a[0]
    axis, k = ops.integer(op, "axis"), ops.integer(op, "k")
    if not ops.integer(op, "largest"):
        order = np.argsort(x, axis=axis, kind="stable")
    elif is_float(x.dtype):
        # NaN first, then the numbers by descending value; lexsort is stable, so ties keep index order.
        nan = np.isnan(x)
        order = np.lexsort((np.where(nan, 0, -x), ~nan), axis=axis)
    else:
        # Bitwise not reverses the order of signed and unsigned integers alike, without overflowing.
        order = np.argsort(~x, axis=axis, kind="stable")
    return np.take(order, np.arange(k), axis=axis).astype(np.int64)


def det(_: ir.Operation, a: list[Array]) -> Array:
    """The determinant of each square matrix in the last two dims, in float64 (LAPACK's LU)."""
    return np.linalg.det(wide(a[0]))


def cumsum(op: ir.Operation, a: list[Array]) -> Array:
    """Running sums along `axis` in float64 / int64; `exclusive` leaves each element out of its own sum,
    `reverse` sums from the end."""
    x, axis = a[0], ops.integer(op, "axis")
    reverse = bool(ops.integer(op, "reverse"))
    flipped = np.flip(wide(x), axis) if reverse else wide(x)
    sums = np.cumsum(flipped, axis)
    if ops.integer(op, "exclusive"):
        sums = sums - flipped
    return (np.flip(sums, axis) if reverse else sums).astype(x.dtype)


def reduce(fn: Callable[..., Array], widen: bool) -> Callable[[ir.Operation, list[Array]], Array]:
    """A batched_reduce evaluator; sums and products accumulate in float64 / int64 (`widen`)."""

    def run(op: ir.Operation, a: list[Array]) -> Array:
        x = wide(a[0]) if widen else a[0]
        return fn(x, axis=tuple(ops.ints(op, "axes")))

    return run


def arg_reduce(fn: Callable[..., Array]) -> Callable[[ir.Operation, list[Array]], Array]:
    """arg_max / arg_min: numpy's argmax/argmin return the first occurrence, as the op defines."""

    def run(op: ir.Operation, a: list[Array]) -> Array:
        axis = ops.integer(op, "axis")
        index = fn(a[0], axis=axis).astype(np.int64)
        return np.expand_dims(index, axis) if ops.integer(op, "keepDims") else index

    return run


def batch_matmul(_: ir.Operation, a: list[Array]) -> Array:
    return np.matmul(wide(a[0]), wide(a[1]))


def conv_transpose(op: ir.Operation, a: list[Array]) -> Array:
    """Each input element scattered through its kernel into the full output, which the pads then crop."""
    x, f, b = (v.astype(np.float64) for v in a)
    group = ops.integer(op, "group")
    sh, sw = ops.ints(op, "strides")
    dh, dw = ops.ints(op, "dilation")
    top, left, bottom, right = ops.ints(op, "pads")
    n, c, h, w = x.shape
    _, o_per_group, kh, kw = f.shape
    full = np.zeros((n, group, o_per_group, (h - 1) * sh + dh * (kh - 1) + 1, (w - 1) * sw + dw * (kw - 1) + 1))
    xg = x.reshape(n, group, c // group, h, w)
    fg = f.reshape(group, c // group, o_per_group, kh, kw)
    for i in range(kh):
        for j in range(kw):
            # Tap (i, j) sends input (y, x) to output (y * stride + i * dilation, x * stride + j * dilation).
            tap = np.einsum("ngchw,gco->ngohw", xg, fg[:, :, :, i, j])
            full[:, :, :, i * dh : i * dh + (h - 1) * sh + 1 : sh, j * dw : j * dw + (w - 1) * sw + 1 : sw] += tap
    full = full.reshape(n, group * o_per_group, full.shape[3], full.shape[4])
    cropped = full[:, :, top : full.shape[2] - bottom, left : full.shape[3] - right]
    return cropped + b.reshape(1, -1, 1, 1)


def binary(fn: Callable[[Array, Array], Array]) -> Callable[[ir.Operation, list[Array]], Array]:
    return lambda _, a: fn(a[0], a[1])


def unary(fn: Callable[[Array], Array]) -> Callable[[ir.Operation, list[Array]], Array]:
    return lambda _, a: fn(a[0])


def in_float64(fn: Callable[[Array], Array]) -> Callable[[ir.Operation, list[Array]], Array]:
    """A transcendental function computed in float64, rounded once to the result type by `evaluate`."""
    return lambda _, a: fn(a[0].astype(np.float64))


# The most samples per cell along an axis RoiAlign takes (sampling_ratio 0: ceil(box / output)): the generated
# code keeps each axis's samples in a table on the stack, which a box of absurd size would overflow; a box of up
# to 1024 times the output size along an axis is sampled as the spec's reference samples it.
ROI_ALIGN_MAX_SAMPLES = 1024


def roi_align(op: ir.Operation, a: list[Array]) -> Array:
    """ONNX RoiAlign (its reference's arithmetic): each output cell of a box averages (or takes the max of)
    bilinear samples on a grid over the cell, `sampling_ratio` per axis or, when 0, ceil(box / output) of
    them; a sample more than one pixel outside the image reads 0; a batch index out of range reads the nearest
    image, as the generated code does. Coordinates in the input's type, sums in float64."""
    x, rois, batch = a
    t = x.dtype.type
    n, c, h, w = x.shape
    out_h, out_w = ops.ints(op, "output_size")
    ratio, half = ops.integer(op, "sampling_ratio"), bool(ops.integer(op, "half_pixel"))
    scale, largest = t(ops.floating(op, "spatial_scale")), ir.StringAttr(op.attributes["mode"]).value == "max"
    out = np.zeros((len(rois), c, out_h, out_w))
    for r, (box, b) in enumerate(zip(rois, batch, strict=True)):
        x0, y0, x1, y1 = box * scale - t(0.5 if half else 0)
        size_h, size_w = y1 - y0, x1 - x0
        if not half:
            size_h, size_w = max(size_h, t(1)), max(size_w, t(1))
        grid_h = ratio or min(int(np.nan_to_num(np.ceil(size_h / t(out_h)))), ROI_ALIGN_MAX_SAMPLES)
        grid_w = ratio or min(int(np.nan_to_num(np.ceil(size_w / t(out_w)))), ROI_ALIGN_MAX_SAMPLES)
        if grid_h <= 0 or grid_w <= 0:
            continue
        rows, row_weights = _roi_taps(y0, size_h / t(out_h), out_h, grid_h, h)
        cols, col_weights = _roi_taps(x0, size_w / t(out_w), out_w, grid_w, w)
        # [C, out_h, grid_h, 2, out_w, grid_w, 2]: every sample's four corners.
        values = wide(x[min(max(int(b), 0), n - 1)])[:, rows][:, :, :, :, cols]
        weights = row_weights[:, :, :, None, None, None] * col_weights
        terms = weights * values
        if largest:
            out[r] = terms.max(axis=(2, 3, 5, 6))
        else:
            out[r] = terms.sum(axis=(2, 3, 5, 6)) / (grid_h * grid_w)
    return out


def _roi_taps(start: Array, size: Array, cells: int, grid: int, length: int) -> tuple[Array, Array]:
    """Along one axis, the two pixels each sample of each cell reads and their weights, [cells, grid, 2]; a
    sample beyond [-1, length] has weights 0."""
    t = type(start)
    cell, sample = np.arange(cells, dtype=start.dtype)[:, None], np.arange(grid, dtype=start.dtype)[None, :]
    pos = start + cell * size + (sample + t(0.5)) * size / t(grid)
    valid = (pos >= -1) & (pos <= length)
    pos = np.where(valid, np.maximum(pos, 0), 0)
    low = np.minimum(np.floor(pos), length - 1).astype(np.int64)
    pos = np.where(low >= length - 1, t(length - 1), pos)
    high = np.minimum(low + 1, length - 1)
    frac = pos - low
    weights = np.stack([t(1) - frac, frac], -1) * valid[..., None]
    return np.stack([low, high], -1), weights.astype(np.float64)
