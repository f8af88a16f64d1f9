"""ONNX data-movement, shape and constant ops, on glow's reshape/transpose/slice/concat/gather/broadcast.

Shapes are static, so Shape and Size are compile-time arrays, and the inputs that decide a shape (Reshape's
target, Slice bounds, pads, repeats, ...) must be known at compile time. Strided or reversed slices, and the
reflect/edge/wrap pads, gather along each axis with constant indices. An empty result (a zero-length slice or
Split part, a ConstantOfShape with a zero dim) holds no data, so it is an empty array (see importer.py).
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import onnx

from glow_mlir.errors import UnsupportedAttributeError, UnsupportedTypeError
from glow_mlir.frontends.onnx.node import ONNX_TO_NUMPY, NodeContext, Value, dtype, normalize_axis, rank, shape
from glow_mlir.frontends.onnx.registry import handles
from glow_mlir.ops import ML_DTYPES


def _onnx_type(ctx: NodeContext, to: int) -> np.dtype:
    if to not in ONNX_TO_NUMPY:
        name = onnx.TensorProto.DataType.Name(to) if to in onnx.TensorProto.DataType.values() else str(to)
        raise UnsupportedTypeError(f"node '{ctx.name}' ({ctx.op_type}) attribute 'to'", name)
    return ONNX_TO_NUMPY[to]


@handles("Cast")
def cast(ctx: NodeContext) -> list[Value]:
    return [cast_to(ctx, ctx.input(0), _onnx_type(ctx, ctx.attr("to")))]


@handles("CastLike")
def cast_like(ctx: NodeContext) -> list[Value]:
    return [cast_to(ctx, ctx.input(0), dtype(ctx.input(1)))]


_FLOAT8 = {np.dtype(t) for t in ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")}
_E8M0 = np.dtype(ml_dtypes.float8_e8m0fnu)


def cast_to(ctx: NodeContext, x: Value, to: np.dtype) -> Value:
    """convert_to rounds as ml_dtypes' astype, overflowing a float8 to NaN or Inf; `saturate` (default 1)
    clamps to the float8's range first, as onnx.numpy_helper.saturate_cast does (Inf to the largest finite
    value, NaN kept). convert_to casts to float8e8m0 by ONNX's default rule (saturate, round_mode up) only."""
    if to == _E8M0 and (ctx.attr("saturate", 1) != 1 or ctx.attr("round_mode", "up") != "up"):
        modes = f"saturate {ctx.attr('saturate', 1)}, round_mode {ctx.attr('round_mode', 'up')}"
        raise UnsupportedAttributeError(ctx.name, ctx.op_type, "round_mode", f"{modes} to float8e8m0 (1, up only)")
    if to in _FLOAT8 and ctx.attr("saturate", 1) and dtype(x) != np.bool_:
        limit = float(ml_dtypes.finfo(to).max)
        if dtype(x) in ML_DTYPES and dtype(x) != np.dtype(ml_dtypes.bfloat16):
            x = ctx.convert(x, np.dtype(np.float32))  # exact; glow's min and max take no low-precision types
        if np.issubdtype(dtype(x), np.integer):
            low, high = ml_dtypes.iinfo(dtype(x)).min, ml_dtypes.iinfo(dtype(x)).max
            if high > limit:
                x = ctx.g.min(x, ctx.scalar_like(x, int(limit)))
            if low < -limit:
                x = ctx.g.max(x, ctx.scalar_like(x, -int(limit)))
        else:
            x = ctx.g.min(ctx.g.max(x, ctx.scalar_like(x, -limit)), ctx.scalar_like(x, limit))
    return ctx.convert(x, to)


@handles("Reshape")
def reshape(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    target = ctx.ints(1, "the shape input")
    if target is None:
        raise ctx.invalid("the shape input is required")
    allow_zero = ctx.attr("allowzero", 0)
    copied = [i for i, d in enumerate(target) if d == 0 and not allow_zero and i >= rank(x)]
    if copied:
        raise ctx.invalid(f"shape {target} copies dim {copied[0]} (a 0) of an input of rank {rank(x)}")
    dims = [shape(x)[i] if d == 0 and not allow_zero else d for i, d in enumerate(target)]
    if dims.count(-1) > 1:
        raise ctx.invalid(f"shape {target} has more than one -1")
    if -1 in dims:
        known = math.prod(d for d in dims if d != -1)
        if known == 0 or math.prod(shape(x)) % known:
            raise ctx.invalid(f"cannot reshape {list(shape(x))} to {target}")
        dims[dims.index(-1)] = math.prod(shape(x)) // known
    return [ctx.reshape(x, dims)]


@handles("Flatten")
def flatten(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    axis = ctx.attr("axis", 1)
    axis = axis + rank(x) if axis < 0 else axis
    if not 0 <= axis <= rank(x):
        raise ctx.invalid(f"axis {ctx.attr('axis', 1)} is out of range for rank {rank(x)}")
    return [ctx.reshape(x, [math.prod(shape(x)[:axis]), math.prod(shape(x)[axis:])])]


@handles("Transpose")
def transpose(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    perm = ctx.attr("perm", list(range(rank(x) - 1, -1, -1)))
    # The spec's perm counts from 0, but PyTorch's TorchScript exporter writes permute's negative dims as they
    # are (Mamba2's permute(0, -2, -1, 1)); onnx's reference (numpy) reads them from the end, as here.
    perm = [normalize_axis(p, rank(x), ctx, "perm") for p in perm]
    return [ctx.transpose(x, perm)]


def _axes_attr_or_input(ctx: NodeContext, since: int) -> list[int] | None:
    return ctx.ints(1, "the axes input") if ctx.opset >= since else ctx.attr("axes", None)


@handles("Squeeze")
def squeeze(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    axes = _axes_attr_or_input(ctx, 13)
    if axes is None:
        axes = [i for i, d in enumerate(shape(x)) if d == 1]
    axes = [normalize_axis(a, rank(x), ctx) for a in axes]
    if any(shape(x)[a] != 1 for a in axes):
        raise ctx.invalid(f"cannot squeeze axes {axes} of shape {list(shape(x))}: not all of size 1")
    return [ctx.reshape(x, [d for i, d in enumerate(shape(x)) if i not in axes])]


@handles("Unsqueeze")
def unsqueeze(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    axes = _axes_attr_or_input(ctx, 13)
    if not axes:
        raise ctx.invalid("axes are required")
    out_rank = rank(x) + len(axes)
    listed = [normalize_axis(a, out_rank, ctx) for a in axes]
    axes = set(listed)
    if len(axes) != len(listed):
        raise ctx.invalid(f"axes {listed} name an axis twice")
    dims = iter(shape(x))
    return [ctx.reshape(x, [1 if i in axes else next(dims) for i in range(out_rank)])]


@handles("Concat")
def concat(ctx: NodeContext) -> list[Value]:
    # Empty inputs (a Shape of a scalar in shape arithmetic) add nothing, and glow has no empty tensors.
    values = [v for v in ctx.inputs if v is not None and math.prod(shape(v)) > 0]
    if not values:
        return [np.concatenate([np.asarray(v) for v in ctx.inputs if v is not None], axis=ctx.attr("axis"))]
    axis = normalize_axis(ctx.attr("axis"), rank(values[0]), ctx)
    return [values[0] if len(values) == 1 else ctx.g.concat(values, axis)]


@handles("Split")
def split(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    axis = normalize_axis(ctx.attr("axis", 0), rank(x), ctx)
    size = shape(x)[axis]
    parts = ctx.ints(1, "the split input") if ctx.opset >= 13 else ctx.attr("split", None)
    if not parts:
        count = ctx.attr("num_outputs", len(ctx.node.output))
        # num_outputs (opset 18) allows an uneven split: the last part is smaller.
        step = -(-size // count) if ctx.has("num_outputs") else size // count
        if not ctx.has("num_outputs") and size % count:
            raise ctx.invalid(f"dim {size} does not split into {count} equal parts")
        parts = [step] * (count - 1) + [size - step * (count - 1)]
    if sum(parts) != size or any(p < 0 for p in parts):
        raise ctx.invalid(f"split {parts} must be sizes >= 0 summing to dim {axis} of {list(shape(x))}")
    outputs, offset = [], 0
    for part in parts:
        start = [0] * rank(x)
        start[axis] = offset
        sizes = list(shape(x))
        sizes[axis] = part
        if part == 0:
            outputs.append(np.empty(sizes, dtype(x)))
        else:
            outputs.append(x if part == size else ctx.g.slice(x, start, sizes))
        offset += part
    return outputs


@handles("Slice")
def slice_(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    if ctx.opset < 10:
        starts, ends = ctx.attr("starts"), ctx.attr("ends")
        axes, steps = ctx.attr("axes", None), None
    else:
        starts, ends = ctx.ints(1, "the starts input"), ctx.ints(2, "the ends input")
        axes, steps = ctx.ints(3, "the axes input"), ctx.ints(4, "the steps input")
    if starts is None or ends is None:
        raise ctx.invalid("starts and ends are required")
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.invalid("starts, ends, axes and steps must have one length")
    begin, sizes = [0] * rank(x), list(shape(x))
    strided: dict[int, np.ndarray] = {}
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis = normalize_axis(axis, rank(x), ctx)
        if step == 0:
            raise ctx.invalid("steps must not be 0")
        indices = _slice_range(start, end, step, shape(x)[axis])
        if step == 1:
            begin[axis], sizes[axis] = indices.start, len(indices)
        else:
            strided[axis] = np.array(indices, np.int64)
    result_dims = [len(strided[a]) if a in strided else d for a, d in enumerate(sizes)]
    if 0 in result_dims:
        return [np.empty(result_dims, dtype(x))]
    y = x if sizes == list(shape(x)) else ctx.g.slice(x, begin, sizes)
    for axis, indices in strided.items():
        y = ctx.g.gather(y, indices, axis)
    return [y]


def _slice_range(start: int, end: int, step: int, dim: int) -> range:
    """The indices ONNX's Slice takes: negatives count from the end, then clamp into [0, dim] going forward
    and into [-1, dim - 1] going backward (so INT64_MAX / INT64_MIN mean "to the end")."""
    start, end = (v + dim if v < 0 else v for v in (start, end))
    if step > 0:
        return range(min(max(start, 0), dim), min(max(end, 0), dim), step)
    return range(min(max(start, 0), dim - 1), min(max(end, -1), dim - 1), step)


@handles("Gather")
def gather(ctx: NodeContext) -> list[Value]:
    data, indices = ctx.input(0), ctx.input(1)
    axis = normalize_axis(ctx.attr("axis", 0), rank(data), ctx)
    block = _index_block(indices, shape(data)[axis]) if isinstance(indices, np.ndarray) else None
    if block is None or isinstance(data, np.ndarray):
        return [ctx.g.gather(data, indices, axis)]
    # Constant consecutive indices (q, k, v = qkv[0], qkv[1], qkv[2] in timm's attention): a slice, which the
    # memory passes can make a view of its input, where a gather copies.
    start, count = block
    dims = list(shape(data))
    offsets = [0] * len(dims)
    offsets[axis], dims[axis] = start, count
    result = ctx.g.slice(data, offsets, dims)
    return [ctx.reshape(result, dims[:axis] + dims[axis + 1 :]) if np.ndim(indices) == 0 else result]


def _index_block(indices: np.ndarray, dim: int) -> tuple[int, int] | None:
    """(start, count) when `indices` (a scalar or a vector) are the consecutive positions start, start + 1, ...
    of a dim of length `dim` (negative ones counting from its end); None otherwise (out of range included)."""
    flat = np.asarray(indices).reshape(-1)
    if np.ndim(indices) > 1 or flat.size == 0 or flat.dtype.kind not in "iu":
        return None
    flat = np.where(flat < 0, flat + dim, flat).astype(np.int64)
    if flat[0] < 0 or flat[-1] >= dim or not np.array_equal(flat, np.arange(flat[0], flat[0] + flat.size)):
        return None
    return int(flat[0]), int(flat.size)


@handles("Expand")
def expand(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    target = ctx.ints(1, "the shape input")
    try:
        dims = np.broadcast_shapes(shape(x), tuple(target or ()))
    except ValueError:
        raise ctx.invalid(f"shape {list(shape(x))} does not broadcast to {target}") from None
    return [ctx.broadcast_to(x, dims)]


@handles("Tile")
def tile(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    repeats = ctx.ints(1, "the repeats input")
    if repeats is None or len(repeats) != rank(x) or any(r < 1 for r in repeats):
        raise ctx.invalid(f"repeats {repeats} must be {rank(x)} positive counts")
    # x of dims [d0, d1, ...] as [1, d0, 1, d1, ...] broadcast to [r0, d0, r1, d1, ...]: element (k, j) of each
    # pair is x's j, so [r0 * d0, r1 * d1, ...] repeats x whole along every axis. One op whatever the counts (a
    # concat of `count` copies made a list of them: a count of 2^62 was a MemoryError).
    dims = shape(x)
    pairs = [n for d in dims for n in (1, d)]
    tiled = ctx.broadcast_to(ctx.reshape(x, pairs), [n for r, d in zip(repeats, dims) for n in (r, d)])
    return [ctx.reshape(tiled, [r * d for r, d in zip(repeats, dims)])]


@handles("Pad")
def pad(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    mode = ctx.attr("mode", "constant")
    if ctx.opset < 11:
        pads, value, axes = list(ctx.attr("pads")), ctx.attr("value", 0.0), None
    else:
        pads, value, axes = ctx.ints(1, "the pads input"), ctx.optional(2), ctx.ints(3, "the axes input")
    axes = list(range(rank(x))) if axes is None else [normalize_axis(a, rank(x), ctx) for a in axes]
    if pads is None or len(pads) != 2 * len(axes):
        raise ctx.invalid(f"pads {pads} must have 2 values per padded axis ({len(axes)})")
    begin, end = [0] * rank(x), [0] * rank(x)
    for i, axis in enumerate(axes):
        begin[axis], end[axis] = pads[i], pads[i + len(axes)]
    if mode == "constant":
        return [_pad_constant(ctx, x, begin, end, value)]
    if mode not in ("reflect", "edge", "wrap"):
        raise ctx.unsupported("mode", f"unknown pad mode '{mode}'")
    for axis, (b, e) in enumerate(zip(begin, end)):
        if b or e:
            x = ctx.g.gather(x, _pad_indices(ctx, mode, shape(x)[axis], b, e), axis)
    return [x]


def _pad_constant(ctx: NodeContext, x: Value, begin: list[int], end: list[int], value: Value | float | None) -> Value:
    # Negative pads crop.
    crop_begin = [max(0, -b) for b in begin]
    sizes = [d - max(0, -b) - max(0, -e) for d, b, e in zip(shape(x), begin, end)]
    if any(s < 1 for s in sizes):
        raise ctx.invalid("the pads crop the input to nothing")
    if sizes != list(shape(x)):
        x = ctx.g.slice(x, crop_begin, sizes)
    begin, end = [max(0, b) for b in begin], [max(0, e) for e in end]
    if not any(begin) and not any(end):
        return x
    dims = [d + b + e for d, b, e in zip(shape(x), begin, end)]
    if value is None or isinstance(value, (float, int)) or isinstance(value, np.ndarray):
        fill = 0.0 if value is None else np.asarray(value).reshape(-1)[0].item()
        big = ctx.full(dims, fill, dtype(x))
    else:
        big = ctx.broadcast_to(ctx.reshape(value, []), dims)
    return ctx.g.insert_tensor(big, x, begin)


def _pad_indices(ctx: NodeContext, mode: str, size: int, begin: int, end: int) -> np.ndarray:
    """For each output position along an axis, the input position reflect/edge/wrap padding reads."""
    positions = np.arange(-begin, size + end)
    if mode == "edge":
        return np.clip(positions, 0, size - 1).astype(np.int64)
    if mode == "wrap":
        return np.mod(positions, size).astype(np.int64)
    if size == 1:
        return np.zeros_like(positions, np.int64)
    if begin >= size or end >= size:
        raise ctx.invalid(f"reflect pads {begin}, {end} must be smaller than the dim {size}")
    period = 2 * (size - 1)
    folded = np.mod(positions, period)
    return np.where(folded < size, folded, period - folded).astype(np.int64)


# Constants and shapes.


@handles("Constant")
def constant(ctx: NodeContext) -> list[Value]:
    for name, dt in (("value_float", np.float32), ("value_floats", np.float32), ("value_int", np.int64),
                     ("value_ints", np.int64)):
        if ctx.has(name):
            return [np.array(ctx.attr(name), dt)]
    if ctx.has("value"):
        return [ctx.attr("value")]
    if ctx.has("value_string") or ctx.has("value_strings"):
        raise UnsupportedTypeError(f"node '{ctx.name}' (Constant)", "STRING")
    if ctx.has("sparse_value"):
        raise ctx.unsupported("sparse_value", "sparse constants are not supported")
    raise ctx.invalid("has no value attribute")


@handles("ConstantOfShape")
def constant_of_shape(ctx: NodeContext) -> list[Value]:
    dims = ctx.ints(0, "the shape input")
    value = ctx.attr("value", np.zeros(1, np.float32))
    if dims is None or any(d < 0 for d in dims):
        raise ctx.invalid(f"shape {dims} must have every dim >= 0")
    return [ctx.full(dims, value.reshape(-1)[0].item(), value.dtype)]


@handles("EyeLike")
def eye_like(ctx: NodeContext) -> list[Value]:
    """Ones on the k-th diagonal of a 2-D tensor of the input's shape: shapes are static, so a constant."""
    x = ctx.input(0)
    if rank(x) != 2:
        raise ctx.invalid(f"the input must be 2-D, got {list(shape(x))}")
    dt = _onnx_type(ctx, ctx.attr("dtype")) if ctx.has("dtype") else dtype(x)
    return [np.eye(*shape(x), k=ctx.attr("k", 0), dtype=dt)]


@handles("Shape")
def shape_(ctx: NodeContext) -> list[Value]:
    dims = shape(ctx.input(0))
    start, end = ctx.attr("start", 0), ctx.attr("end", None)
    return [np.array(dims[start:end], np.int64)]


@handles("Size")
def size(ctx: NodeContext) -> list[Value]:
    return [np.array(math.prod(shape(ctx.input(0))), np.int64)]


@handles("Range")
def range_(ctx: NodeContext) -> list[Value]:
    start, limit, delta = (ctx.const(i, f"Range's {w}") for i, w in enumerate(("start", "limit", "delta")))
    if start is None or limit is None or delta is None:
        raise ctx.invalid("start, limit and delta are required")
    # No glow op makes a sequence, and every input is a compile-time scalar: compute it here.
    if delta.item() == 0:
        raise ctx.invalid("delta is 0: the range never reaches its limit")
    steps = (float(limit.item()) - float(start.item())) / float(delta.item())
    if not math.isfinite(steps):
        raise ctx.invalid(f"start {start.item()}, limit {limit.item()} and delta {delta.item()} give no finite count")
    count = max(math.ceil(steps), 0)
    return [(start + np.arange(count, dtype=start.dtype) * delta).astype(start.dtype)]


@handles("Trilu")
def trilu(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    k = ctx.ints(1, "the k input")
    k = 0 if k is None else k[0]
    rows, cols = shape(x)[-2:]
    ones = np.ones((rows, cols), np.bool_)
    keep = np.triu(ones, k) if ctx.attr("upper", 1) else np.tril(ones, k)
    return [ctx.g.select(ctx.broadcast_to(keep, shape(x)), x, ctx.scalar_like(x, 0))]


def _blocks(ctx: NodeContext) -> tuple[Value, int, tuple[int, int, int, int], str]:
    """What DepthToSpace and SpaceToDepth read alike: (x, blocksize, x's NCHW dims, mode).

    DCR (the default) puts the block offset before the channel, CRD after it; SpaceToDepth has a `mode`
    from opset 28.
    """
    x = ctx.input(0)
    b = ctx.attr("blocksize")
    n, c, h, w = shape(x)
    mode = ctx.attr("mode", "DCR")
    if mode not in ("DCR", "CRD"):
        raise ctx.unsupported("mode", f"unknown value '{mode}' (DCR and CRD are defined)")
    return x, b, (n, c, h, w), mode


@handles("DepthToSpace")
def depth_to_space(ctx: NodeContext) -> list[Value]:
    x, b, (n, c, h, w), mode = _blocks(ctx)
    if mode == "DCR":
        y = ctx.transpose(ctx.reshape(x, [n, b, b, c // (b * b), h, w]), [0, 3, 4, 1, 5, 2])
    else:
        y = ctx.transpose(ctx.reshape(x, [n, c // (b * b), b, b, h, w]), [0, 1, 4, 2, 5, 3])
    return [ctx.reshape(y, [n, c // (b * b), h * b, w * b])]


@handles("SpaceToDepth")
def space_to_depth(ctx: NodeContext) -> list[Value]:
    x, b, (n, c, h, w), mode = _blocks(ctx)
    perm = [0, 3, 5, 1, 2, 4] if mode == "DCR" else [0, 1, 3, 5, 2, 4]
    y = ctx.transpose(ctx.reshape(x, [n, c, h // b, b, w // b, b]), perm)
    return [ctx.reshape(y, [n, c * b * b, h // b, w // b])]


def _scan_operands(ctx: NodeContext) -> tuple[Value, int]:
    """CumSum's and CumProd's input and axis (a compile-time input: it decides the kernel's shape)."""
    x = ctx.input(0)
    axes = ctx.ints(1, "the axis input")
    if axes is None or len(axes) != 1:
        raise ctx.invalid(f"the axis input must be one integer, got {axes}")
    if dtype(x) == np.bool_:
        raise ctx.invalid(f"{ctx.op_type} takes numbers, got bool")
    return x, normalize_axis(axes[0], rank(x), ctx)


@handles("CumSum")
def cumsum(ctx: NodeContext) -> list[Value]:
    """glow.cumsum; f16 and bf16 sums accumulate in f32 (a sequential sum would round at every step)."""
    x, axis = _scan_operands(ctx)
    narrow = dtype(x) in (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))
    y = ctx.g.cumsum(ctx.convert(x, np.float32) if narrow else x, axis, bool(ctx.attr("exclusive", 0)),
                     bool(ctx.attr("reverse", 0)))  # fmt: skip
    return [ctx.convert(y, dtype(x)) if narrow else y]


@handles("CumProd")
def cumprod(ctx: NodeContext) -> list[Value]:
    """Products along `axis` as a Hillis-Steele scan: after the step of shift d (1, 2, 4, ...) each element
    holds the product of the 2d elements ending at it, so ceil(log2 n) elementwise products of the whole
    tensor with itself shifted (a slice concatenated after ones) compute it; no triangular matrix serves a
    product. `exclusive` shifts the input by one first, `reverse` scans the axis reversed."""
    x, axis = _scan_operands(ctx)
    n = shape(x)[axis]
    backward = np.arange(n - 1, -1, -1, dtype=np.int64)
    y = ctx.g.gather(x, backward, axis) if ctx.attr("reverse", 0) else x

    def shifted(v: Value, d: int) -> Value:
        """v moved d places along the axis, ones filling the start."""
        ones_dims, kept_dims = list(shape(v)), list(shape(v))
        ones_dims[axis], kept_dims[axis] = d, n - d
        ones = ctx.full(ones_dims, 1, dtype(v))
        if d == n:
            return ones
        return ctx.g.concat([ones, ctx.g.slice(v, [0] * rank(v), kept_dims)], axis)

    if ctx.attr("exclusive", 0):
        y = shifted(y, 1)
    d = 1
    while d < n:
        y = ctx.g.mul(y, shifted(y, d))
        d *= 2
    return [ctx.g.gather(y, backward, axis) if ctx.attr("reverse", 0) else y]


@handles("OneHot")
def one_hot(ctx: NodeContext) -> list[Value]:
    """values[1] where an index equals the position along the new `axis`, values[0] elsewhere; negative
    indices count from `depth`, and an index out of [-depth, depth) gives a row of values[0]."""
    indices = ctx.input(0)
    depth = ctx.const(1, "OneHot's depth")
    values = ctx.input(2)
    if depth is None or depth.size != 1:
        raise ctx.invalid("the depth input must be one number")
    n = int(depth.reshape(-1)[0])
    if n < 1:
        raise ctx.invalid(f"depth must be at least 1, got {n}")
    if shape(values) != (2,):
        raise ctx.invalid(f"values must have shape [2] (off, on), got {list(shape(values))}")
    axis = normalize_axis(ctx.attr("axis", -1), rank(indices) + 1, ctx)
    index = ctx.convert(indices, np.dtype(np.int64))
    negative = ctx.g.cmp_lt(index, ctx.scalar_like(index, 0))
    wrapped = ctx.g.select(negative, ctx.g.add(index, ctx.scalar_like(index, n)), index)
    dims = list(shape(indices))
    dims.insert(axis, n)
    expanded = ctx.broadcast_to(ctx.reshape(wrapped, dims[:axis] + [1] + dims[axis + 1 :]), dims)
    aligned = [1] * len(dims)
    aligned[axis] = n
    position = np.broadcast_to(np.arange(n, dtype=np.int64).reshape(aligned), dims)
    hit = ctx.g.cmp_eq(expanded, np.ascontiguousarray(position))
    off = ctx.broadcast_to(ctx.reshape(ctx.g.slice(values, [0], [1]), [1] * len(dims)), dims)
    on = ctx.broadcast_to(ctx.reshape(ctx.g.slice(values, [1], [1]), [1] * len(dims)), dims)
    return [ctx.g.select(hit, on, off)]
