"""Neural-network ONNX ops: convolutions, Gemm/MatMul, normalizations, Softmax (pooling is in ops_pool.py; the
window helpers here serve both; Dropout, a draw in training mode, is in ops_random.py).

glow's window ops are 2-D NCHW, so 1-D ones are lifted to 2-D with a unit height. What a glow op cannot
express directly is composed: ConvTranspose's output_padding / output_shape cells beyond the full scatter
are bias-only, written with insert_tensor into the broadcast bias; a 3-D convolution is the sum over the
filter's depth of 2-D convolutions, the output planes folded into the batch. Float16 MatMul, Gemm and
convolutions, and the sums of float16 Softmax / LogSoftmax, accumulate in float32 as the spec's reference
does (node.float16_in_float32).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from glow_mlir.frontends.onnx.node import (
    NodeContext,
    Value,
    dtype,
    float16_in_float32,
    is_float,
    normalize_axis,
    rank,
    shape,
)
from glow_mlir.frontends.onnx.registry import handles

# Window ops.


def spatial_dims(ctx: NodeContext, x: Value, most: int = 2) -> int:
    """The number of spatial dims of the NC... input `x`, 1 to `most`."""
    n = rank(x) - 2
    if not 1 <= n <= most:
        raise ctx.unsupported("kernel_shape", f"{n}-D windows are not supported (1-D to {most}-D, NC...)")
    return n


def window_pads(
    ctx: NodeContext, sizes: Sequence[int], kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int]
) -> tuple[list[int], list[int]]:
    """The (begin, end) pads per spatial dim, from `pads` or `auto_pad`."""
    n = len(sizes)
    auto = ctx.attr("auto_pad", "NOTSET")
    if auto == "NOTSET":
        pads = list(ctx.attr("pads", [0] * 2 * n))
        if len(pads) != 2 * n:
            raise ctx.invalid(f"pads {pads} must have {2 * n} values")
        return pads[:n], pads[n:]
    if auto == "VALID":
        return [0] * n, [0] * n
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise ctx.unsupported("auto_pad", f"unknown value '{auto}'")
    begin, end = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dilations):
        total = max(0, (math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size)
        small, big = total // 2, total - total // 2
        begin.append(small if auto == "SAME_UPPER" else big)
        end.append(big if auto == "SAME_UPPER" else small)
    return begin, end


def lift_1d(ctx: NodeContext, v: Value) -> Value:
    """A 1-D NCW tensor as NC1W."""
    return ctx.reshape(v, [*shape(v)[:2], 1, shape(v)[2]])


def to_2d(values: Sequence[int], fill: int) -> list[int]:
    return [fill, *values] if len(values) == 1 else list(values)


def _glow_pads(begin: Sequence[int], end: Sequence[int]) -> list[int]:
    return [*to_2d(begin, 0), *to_2d(end, 0)]


def window_attrs(ctx: NodeContext, n: int, kernel: Sequence[int]) -> tuple[list[int], list[int]]:
    strides = list(ctx.attr("strides", [1] * n))
    dilations = list(ctx.attr("dilations", [1] * n))
    if len(strides) != n or len(dilations) != n or len(kernel) != n:
        raise ctx.invalid(f"kernel_shape, strides and dilations must have {n} values")
    if min(*kernel, *strides, *dilations) < 1:
        raise ctx.invalid(f"kernel_shape {list(kernel)}, strides {strides} and dilations {dilations} must be >= 1")
    return strides, dilations


def _conv_node(
    ctx: NodeContext, most: int = 2
) -> tuple[Value, Value, Value | None, int, list[int], list[int], list[int]]:
    """What Conv and ConvTranspose read alike: (x, w, b or None, the number of spatial dims (at most
    `most`), kernel_shape (default: the filter's spatial dims), strides, dilations)."""
    x, w, b = ctx.input(0), ctx.input(1), ctx.optional(2)
    n = spatial_dims(ctx, x, most)
    kernel = list(ctx.attr("kernel_shape", shape(w)[2:]))
    strides, dilations = window_attrs(ctx, n, kernel)
    return x, w, b, n, kernel, strides, dilations


@handles("Conv")
@float16_in_float32
def conv(ctx: NodeContext) -> list[Value]:
    x, w, b, n, kernel, strides, dilations = _conv_node(ctx, most=3)
    begin, end = window_pads(ctx, shape(x)[2:], kernel, strides, dilations)
    if b is None:
        b = np.zeros(shape(w)[0], dtype(x))
    if n == 3:
        return [_conv_3d(ctx, x, w, b, strides, dilations, begin, end)]
    if n == 1:
        x, w = lift_1d(ctx, x), lift_1d(ctx, w)
    y = ctx.g.convolution(
        x, w, b, to_2d(strides, 1), _glow_pads(begin, end), to_2d(dilations, 1), ctx.attr("group", 1)
    )
    return [ctx.reshape(y, [*shape(y)[:2], shape(y)[3]]) if n == 1 else y]


def _conv_3d(
    ctx: NodeContext,
    x: Value,
    w: Value,
    b: Value,
    strides: Sequence[int],
    dilations: Sequence[int],
    begin: Sequence[int],
    end: Sequence[int],
) -> Value:
    """A 3-D (NCDHW) convolution as the sum over the filter's depth of 2-D convolutions: for filter plane i,
    the input planes that output plane d reads (d * stride + i * dilation of the depth-padded input) are
    gathered, the output planes folded into the batch, and convolved with plane i of the filter. A filter
    1 x 1 across (H, W) with unit strides there (the temporal half of a (2+1)-D or separable 3-D layer) is one
    2-D convolution of the (D, H x W) planes instead: no gathers, no sum."""
    batch, channels, depth, height, width = shape(x)
    outputs, kd = shape(w)[0], shape(w)[2]
    if shape(w)[3:] == (1, 1) and list(strides[1:]) == [1, 1] and not any([*begin[1:], *end[1:]]):
        flat = ctx.reshape(x, [batch, channels, depth, height * width])
        kernel = ctx.reshape(w, [*shape(w)[:3], 1])
        y = ctx.g.convolution(flat, kernel, b, [strides[0], 1], [begin[0], 0, end[0], 0], [dilations[0], 1],
                              ctx.attr("group", 1))  # fmt: skip
        return ctx.reshape(y, [*shape(y)[:3], height, width])
    if begin[0] or end[0]:
        dims = [batch, channels, depth + begin[0] + end[0], height, width]
        x = ctx.g.insert_tensor(ctx.full(dims, 0, dtype(x)), x, [0, 0, begin[0], 0, 0])
    span = shape(x)[2] - (kd - 1) * dilations[0] - 1
    if span < 0:
        raise ctx.invalid(f"the filter {list(shape(w))} does not fit the padded input {list(shape(x))}")
    planes = span // strides[0] + 1
    total: Value | None = None
    for i in range(kd):
        rows = np.arange(planes, dtype=np.int64) * strides[0] + i * dilations[0]
        slab = ctx.transpose(ctx.g.gather(x, rows, 2), [0, 2, 1, 3, 4])
        slab = ctx.reshape(slab, [batch * planes, channels, height, width])
        plane = _depth_plane(ctx, w, i)
        bias = b if i == 0 else np.zeros(outputs, dtype(x))
        y = ctx.g.convolution(slab, plane, bias, strides[1:], _glow_pads(begin[1:], end[1:]), dilations[1:],
                              ctx.attr("group", 1))
        total = y if total is None else ctx.g.add(total, y)
    assert total is not None
    out_h, out_w = shape(total)[2:]
    return ctx.transpose(ctx.reshape(total, [batch, planes, outputs, out_h, out_w]), [0, 2, 1, 3, 4])


def _depth_plane(ctx: NodeContext, w: Value, i: int) -> Value:
    """Plane `i` along the depth of a 3-D filter [A, B, KD, KH, KW], as the 2-D filter [A, B, KH, KW]."""
    a, b, _, kh, kw = shape(w)
    return ctx.reshape(ctx.g.slice(w, [0, 0, i, 0, 0], [a, b, 1, kh, kw]), [a, b, kh, kw])


@handles("ConvTranspose")
@float16_in_float32
def conv_transpose(ctx: NodeContext) -> list[Value]:
    x, w, b, n, kernel, strides, dilations = _conv_node(ctx, most=3)
    group = ctx.attr("group", 1)
    adjust = list(ctx.attr("output_padding", [0] * n))
    auto = ctx.attr("auto_pad", "NOTSET")
    sizes = shape(x)[2:]
    full = [(i - 1) * s + (k - 1) * d + 1 for i, s, k, d in zip(sizes, strides, kernel, dilations)]
    # Output cell o is cell o + head of the full scatter extended by output_padding; cells past the full
    # scatter get the bias alone. The total padding splits as the ONNX spec says: more at the end for
    # SAME_UPPER, more at the start otherwise.
    if ctx.has("output_shape") or auto in ("SAME_UPPER", "SAME_LOWER"):
        if ctx.has("output_shape"):
            out = list(ctx.attr("output_shape"))[-n:]
        else:
            out = [i * s for i, s in zip(sizes, strides)]
        head = []
        for f, a, o in zip(full, adjust, out):
            total = max(0, f + a - o)
            head.append(total // 2 if auto == "SAME_UPPER" else total - total // 2)
    else:
        head, tail = window_pads(ctx, sizes, kernel, strides, dilations)
        if auto == "VALID":
            head, tail = [0] * n, [0] * n
        out = [f + a - h - t for f, a, h, t in zip(full, adjust, head, tail)]
    if any(o < 1 for o in out):
        raise ctx.invalid(f"the output spatial shape {out} is empty")
    crop_end = [max(0, f - h - o) for f, h, o in zip(full, head, out)]
    if b is None:
        b = np.zeros(shape(w)[1] * group, dtype(x))
    if n == 3:
        return [_conv_transpose_3d(ctx, x, w, b, strides, dilations, head, crop_end, out, group)]
    if n == 1:
        x, w = lift_1d(ctx, x), lift_1d(ctx, w)
    y = ctx.g.conv_transpose(
        x, w, b, to_2d(strides, 1), _glow_pads(head, crop_end), to_2d(dilations, 1), group
    )
    out_dims = [shape(x)[0], shape(y)[1], *to_2d(out, 1)]
    if list(shape(y)) != out_dims:
        y = ctx.g.insert_tensor(ctx.g.broadcast(b, out_dims, 1), y, [0] * 4)
    return [ctx.reshape(y, [*shape(y)[:2], shape(y)[3]]) if n == 1 else y]


def _conv_transpose_3d(
    ctx: NodeContext,
    x: Value,
    w: Value,
    b: Value,
    strides: Sequence[int],
    dilations: Sequence[int],
    head: Sequence[int],
    crop_end: Sequence[int],
    out: Sequence[int],
    group: int,
) -> Value:
    """A 3-D (NCDHW) transposed convolution as 2-D ones: the input planes folded into the batch, one 2-D
    transposed convolution per filter plane t (its (H, W) pads and crop), whose output for input plane d lands
    on plane d * stride + t * dilation of the full depth. Where each full plane gets one (d, t) (stride = depth
    taps, no dilation: a 3-D UNet's 2x2x2 / stride-2 up-convolution) the planes interleave; otherwise each
    filter plane's planes are spread by the stride, placed at their offset and summed. Then the depth's pads
    are cropped (an output_padding plane past the full depth gets the bias alone) and the bias added once."""
    n, c, depth, height, width = shape(x)
    kd, outputs = shape(w)[2], shape(w)[1] * group
    (sd, *hw_strides), (dd, *hw_dilations) = strides, dilations
    out_d, *out_hw = out
    planes = ctx.reshape(ctx.transpose(x, [0, 2, 1, 3, 4]), [n * depth, c, height, width])
    zero = np.zeros(outputs, dtype(x))
    slabs = []
    for t in range(kd):
        plane = _depth_plane(ctx, w, t)
        z = ctx.g.conv_transpose(planes, plane, zero, hw_strides, _glow_pads(head[1:], crop_end[1:]), hw_dilations,
                                 group)  # fmt: skip
        if list(shape(z)[2:]) != out_hw:  # output_padding past the full (H, W) scatter
            z = ctx.g.insert_tensor(ctx.full([n * depth, outputs, *out_hw], 0, dtype(x)), z, [0] * 4)
        slabs.append(ctx.reshape(z, [n, depth, 1, outputs, *out_hw]))
    full_depth = (depth - 1) * sd + (kd - 1) * dd + 1
    if dd == 1 and sd == kd:
        full = ctx.reshape(ctx.g.concat(slabs, 2), [n, full_depth, outputs, *out_hw])
    else:
        spread = (depth - 1) * sd + 1
        total: Value | None = None
        for t, slab in enumerate(slabs):
            if sd > 1:
                gaps = ctx.full([n, depth, sd - 1, outputs, *out_hw], 0, dtype(x))
                slab = ctx.reshape(ctx.g.concat([slab, gaps], 2), [n, depth * sd, outputs, *out_hw])
                slab = ctx.g.slice(slab, [0] * 5, [n, spread, outputs, *out_hw])
            else:
                slab = ctx.reshape(slab, [n, depth, outputs, *out_hw])
            placed = ctx.g.insert_tensor(ctx.full([n, full_depth, outputs, *out_hw], 0, dtype(x)), slab,
                                         [0, t * dd, 0, 0, 0])  # fmt: skip
            total = placed if total is None else ctx.g.add(total, placed)
        assert total is not None
        full = total
    kept = min(out_d, full_depth - head[0])
    y = ctx.g.slice(full, [0, head[0], 0, 0, 0], [n, kept, outputs, *out_hw]) if kept != full_depth else full
    if kept < out_d:
        y = ctx.g.insert_tensor(ctx.full([n, out_d, outputs, *out_hw], 0, dtype(x)), y, [0] * 5)
    y = ctx.g.add(y, ctx.g.broadcast(b, [n, out_d, outputs, *out_hw], 2))
    return ctx.transpose(y, [0, 2, 1, 3, 4])


@handles("Col2Im")
def col2im(ctx: NodeContext) -> list[Value]:
    """Col2Im (opset 18, PyTorch's fold: MobileViTV2's and VOLO's) in 2-D: the columns [N, C x KH x KW, L]
    summed back into the image [N, C, H, W], which is a ConvTranspose of the columns as [N, C x KH x KW, OH,
    OW], C groups of KH x KW input channels and one output channel, whose filter puts input channel (i, j) of a
    group at tap (i, j) alone (a one-hot filter: KH x KW times the multiply-adds, for an op that rearranges)."""
    x = ctx.input(0)
    image, block = ctx.ints(1, "the image_shape input"), ctx.ints(2, "the block_shape input")
    if image is None or block is None:
        raise ctx.invalid("image_shape and block_shape must be compile-time inputs")
    if len(image) != 2 or len(block) != 2:
        raise ctx.unsupported("image_shape", f"{len(image)} spatial dims (2 are supported)")
    strides, dilations = window_attrs(ctx, 2, block)
    head, tail = window_pads(ctx, image, block, strides, dilations)
    (n, channels, length), kh, kw = shape(x), *block
    c, k = channels // (kh * kw), kh * kw
    windows = [(i + b + e - (f - 1) * d - 1) // s + 1
               for i, b, e, f, d, s in zip(image, head, tail, block, dilations, strides)]  # fmt: skip
    if channels % k or math.prod(windows) != length or min(windows) < 1:
        raise ctx.invalid(f"columns {list(shape(x))} do not fit image {image}, block {block}: "
                          f"{k} rows per channel and {windows[0]} x {windows[1]} windows")  # fmt: skip
    one_hot = np.zeros((c, k, 1, kh, kw), dtype(x))
    for i in range(kh):
        for j in range(kw):
            one_hot[:, i * kw + j, 0, i, j] = 1
    full = [(o - 1) * s + (f - 1) * d + 1 for o, s, f, d in zip(windows, strides, block, dilations)]
    crop_end = [max(0, f - h - i) for f, h, i in zip(full, head, image)]
    y = ctx.g.conv_transpose(ctx.reshape(x, [n, channels, *windows]), one_hot.reshape(c * k, 1, kh, kw),
                             np.zeros(c, dtype(x)), strides, [*head, *crop_end], dilations, c)  # fmt: skip
    if list(shape(y)) != [n, c, *image]:
        # Image cells past the last window's reach (the end pad beyond it) get nothing: zeros.
        y = ctx.g.insert_tensor(ctx.full([n, c, *image], 0.0, dtype(x)), y, [0] * 4)
    return [y]


# Linear algebra.


@handles("Gemm")
@float16_in_float32
def gemm(ctx: NodeContext) -> list[Value]:
    a, b, c = ctx.input(0), ctx.input(1), ctx.optional(2)
    if rank(a) != 2 or rank(b) != 2:
        raise ctx.invalid(f"A and B must be matrices, got shapes {list(shape(a))} and {list(shape(b))}")
    if ctx.attr("transA", 0):
        a = ctx.transpose(a, [1, 0])
    if ctx.attr("transB", 0):
        b = ctx.transpose(b, [1, 0])
    alpha, beta = ctx.attr("alpha", 1.0), ctx.attr("beta", 1.0)
    m, n = shape(a)[0], shape(b)[1]
    # Scaling a constant operand folds; otherwise the product is scaled.
    if alpha != 1 and isinstance(b, np.ndarray):
        b, alpha = ctx.g.mul(b, np.full(shape(b), alpha, dtype(b))), 1.0
    if c is not None and beta != 1 and isinstance(c, np.ndarray):
        c, beta = ctx.g.mul(c, np.full(shape(c), beta, dtype(c))), 1.0
    if c is not None and alpha == 1 and beta == 1 and is_float(a) and shape(c) in ((n,), (1, n)):
        return [ctx.g.fully_connected(a, b, ctx.reshape(c, [n]))]
    y = ctx.g.matmul(a, b)
    if alpha != 1:
        y = ctx.g.mul(y, ctx.scalar_like(y, alpha))
    if c is not None:
        c = ctx.broadcast_to(c, [m, n])
        if beta != 1:
            c = ctx.g.mul(c, ctx.scalar_like(c, beta))
        y = ctx.g.add(y, c)
    return [y]


@handles("MatMul")
@float16_in_float32
def matmul(ctx: NodeContext) -> list[Value]:
    a, b = ctx.input(0), ctx.input(1)
    if rank(a) == 0 or rank(b) == 0:
        raise ctx.invalid(f"operands must have rank 1 or more, got {list(shape(a))} and {list(shape(b))}")
    a_vector, b_vector = rank(a) == 1, rank(b) == 1
    if a_vector:
        a = ctx.reshape(a, [1, shape(a)[0]])
    if b_vector:
        b = ctx.reshape(b, [shape(b)[0], 1])
    (m, k), n = shape(a)[-2:], shape(b)[-1]
    if rank(b) == 2:
        # Batched lhs times one matrix: one glow.matmul over the flattened batch.
        batch = list(shape(a)[:-2])
        y = ctx.g.matmul(ctx.reshape(a, [math.prod(batch) * m, k]), b)
    else:
        try:
            batch = list(np.broadcast_shapes(shape(a)[:-2], shape(b)[:-2]))
        except ValueError:
            raise ctx.invalid(f"batch dims of {list(shape(a))} and {list(shape(b))} do not broadcast") from None
        count = math.prod(batch)
        lhs = ctx.reshape(ctx.broadcast_to(a, [*batch, m, k]), [count, m, k])
        rhs = ctx.reshape(ctx.broadcast_to(b, [*batch, k, n]), [count, k, n])
        y = ctx.g.batch_matmul(lhs, rhs)
    dims = [*batch, m, n]
    if b_vector:
        dims.pop(-1)
    if a_vector:
        dims.pop(-2 if not b_vector else -1)
    return [ctx.reshape(y, dims)]


# Normalizations.


@handles("BatchNormalization")
def batch_normalization(ctx: NodeContext) -> list[Value]:
    """Inference normalizes with the given statistics. Training mode (opset 14+, `training_mode=1`) normalizes
    with the batch's own mean and population variance over every axis but the channels', and its optional
    outputs are the running statistics updated with them, `input * momentum + batch * (1 - momentum)` (onnx's
    reference). Models run it at inference too: NF-ResNet's ScaledStdConv standardizes its weights with it."""
    x = ctx.input(0)
    training = ctx.opset >= 14 and ctx.attr("training_mode", 0)
    if not training and ctx.outputs_wanted() > 1:
        raise ctx.unsupported("training_mode", "outputs beyond Y are defined for training_mode=1 (opset 14+) only")
    if ctx.opset < 9 and not ctx.attr("spatial", 1):
        raise ctx.unsupported("spatial", "spatial=0 (per-activation statistics) is not supported")
    scale, bias, mean, var = (ctx.convert(ctx.input(i), dtype(x)) for i in range(1, 5))
    epsilon = ctx.attr("epsilon", 1e-5)
    if not training:
        return [ctx.g.batch_normalization(x, scale, bias, mean, var, epsilon=epsilon, channel_idx=1)]
    axes = [a for a in range(rank(x)) if a != 1]
    batch_mean, _, batch_var = _moments(ctx, x, axes)
    y = ctx.g.batch_normalization(x, scale, bias, batch_mean, batch_var, epsilon=epsilon, channel_idx=1)
    momentum = ctx.attr("momentum", 0.9)

    def running(value: Value, batch: Value) -> Value:
        kept = ctx.g.mul(value, ctx.scalar_like(value, momentum))
        return ctx.g.add(kept, ctx.g.mul(batch, ctx.scalar_like(batch, 1 - momentum)))

    return [y, running(mean, batch_mean), running(var, batch_var)]


def _moments(ctx: NodeContext, x: Value, axes: list[int]) -> tuple[Value, Value, Value]:
    """The mean of x over `axes` (those dims dropped), x minus it, and the population variance (dims dropped)."""
    count = math.prod(shape(x)[a] for a in axes)
    mean = ctx.g.batched_reduce_add(x, axes)
    mean = ctx.g.div(mean, ctx.scalar_like(mean, count))
    centered = ctx.g.sub(x, ctx.broadcast_to(ctx.keep_dims(mean, shape(x), axes), shape(x)))
    var = ctx.g.batched_reduce_add(ctx.g.mul(centered, centered), axes)
    return mean, centered, ctx.g.div(var, ctx.scalar_like(var, count))


def _normalize(ctx: NodeContext, x: Value, axes: list[int], epsilon: float) -> tuple[Value, Value, Value]:
    """(x - mean) / sqrt(var + epsilon) over `axes`, with the mean and 1/sqrt(var + epsilon) kept as dims."""
    mean, centered, var = _moments(ctx, x, axes)
    inv_std = ctx.g.div(ctx.scalar_like(var, 1), ctx.g.sqrt(ctx.g.add(var, ctx.scalar_like(var, epsilon))))
    inv_std = ctx.keep_dims(inv_std, shape(x), axes)
    return ctx.g.mul(centered, ctx.broadcast_to(inv_std, shape(x))), ctx.keep_dims(mean, shape(x), axes), inv_std


@handles("LayerNormalization")
def layer_normalization(ctx: NodeContext) -> list[Value]:
    x, scale, bias = ctx.input(0), ctx.input(1), ctx.optional(2)
    axis = normalize_axis(ctx.attr("axis", -1), rank(x), ctx)
    y, mean, inv_std = _normalize(ctx, x, list(range(axis, rank(x))), ctx.attr("epsilon", 1e-5))
    y = ctx.g.mul(y, ctx.broadcast_to(scale, shape(x)))
    if bias is not None:
        y = ctx.g.add(y, ctx.broadcast_to(bias, shape(x)))
    return [y, mean, inv_std]


@handles("RMSNormalization")
def rms_normalization(ctx: NodeContext) -> list[Value]:
    """x / sqrt(mean(x^2 over axis..last) + epsilon) * scale. stash_type 1 computes a float16 input in
    float32 and rounds the result once, as the spec's function does."""
    x, scale = ctx.input(0), ctx.input(1)
    original = dtype(x)
    if ctx.attr("stash_type", 1) == 1 and original == np.float16:
        x, scale = ctx.convert(x, np.dtype(np.float32)), ctx.convert(scale, np.dtype(np.float32))
    axes = list(range(normalize_axis(ctx.attr("axis", -1), rank(x), ctx), rank(x)))
    count = math.prod(shape(x)[a] for a in axes)
    total = ctx.g.batched_reduce_add(ctx.g.mul(x, x), axes)
    epsilon = ctx.scalar_like(total, ctx.attr("epsilon", 1e-5))
    mean_square = ctx.g.add(ctx.g.div(total, ctx.scalar_like(total, count)), epsilon)
    inv_rms = ctx.keep_dims(ctx.g.div(ctx.scalar_like(total, 1), ctx.g.sqrt(mean_square)), shape(x), axes)
    y = ctx.g.mul(ctx.g.mul(x, ctx.broadcast_to(inv_rms, shape(x))), ctx.broadcast_to(scale, shape(x)))
    return [ctx.convert(y, original)]


@handles("InstanceNormalization")
def instance_normalization(ctx: NodeContext) -> list[Value]:
    x, scale, bias = ctx.input(0), ctx.input(1), ctx.input(2)
    y, _, _ = _normalize(ctx, x, list(range(2, rank(x))), ctx.attr("epsilon", 1e-5))
    y = ctx.g.mul(y, ctx.g.broadcast(scale, shape(x), 1))
    return [ctx.g.add(y, ctx.g.broadcast(bias, shape(x), 1))]


@handles("LRN")
def lrn(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    size = ctx.attr("size")
    alpha, beta, bias = ctx.attr("alpha", 1e-4), ctx.attr("beta", 0.75), ctx.attr("bias", 1.0)
    before = (size - 1) // 2
    squares = ctx.g.mul(x, x)
    # Sum each channel's window of squares: zero-pad the channels, add `size` shifted slices.
    padded_dims = [shape(x)[0], shape(x)[1] + size - 1, *shape(x)[2:]]
    padded = ctx.g.insert_tensor(ctx.full(padded_dims, 0, dtype(x)), squares, [0, before] + [0] * (rank(x) - 2))
    windows = [ctx.g.slice(padded, [0, i] + [0] * (rank(x) - 2), shape(x)) for i in range(size)]
    total = windows[0]
    for window in windows[1:]:
        total = ctx.g.add(total, window)
    scaled = ctx.g.add(ctx.g.mul(total, ctx.scalar_like(x, alpha / size)), ctx.scalar_like(x, bias))
    return [ctx.g.div(x, ctx.g.pow(scaled, ctx.scalar_like(x, beta)))]


# Softmax family.


def _along_last(ctx: NodeContext, x: Value, fn: str) -> Value:
    """Applies `fn` ("softmax" or "log_softmax") along the op's axis with the opset's semantics."""
    apply = (lambda v: softmax_last(ctx, v)) if fn == "softmax" else (lambda v: _log_softmax(ctx, v))
    if ctx.opset < 13:
        # Before opset 13 the input is coerced to 2-D at `axis` and normalized along the flattened tail.
        axis = normalize_axis(ctx.attr("axis", 1), rank(x), ctx)
        dims = shape(x)
        flat = ctx.reshape(x, [math.prod(dims[:axis]), math.prod(dims[axis:])])
        return ctx.reshape(apply(flat), dims)
    axis = normalize_axis(ctx.attr("axis", -1), rank(x), ctx)
    perm = [d for d in range(rank(x)) if d != axis] + [axis]
    inverse = list(np.argsort(perm))
    return ctx.transpose(apply(ctx.transpose(x, perm)), inverse)


def softmax_last(ctx: NodeContext, x: Value) -> Value:
    """Softmax along the last dim: glow.softmax, except for float16, which follows the spec's function body
    (Exp of x - max, ReduceSum, Div, each in float16) with the sum accumulated in float32 as the spec's
    reference does, so each result is rounded as the reference rounds it."""
    if dtype(x) != np.float16:
        return ctx.g.softmax(x)
    last = [rank(x) - 1]
    peak = ctx.keep_dims(ctx.g.batched_reduce_max(x, last), shape(x), last)
    exp = ctx.g.exp(ctx.g.sub(x, ctx.broadcast_to(peak, shape(x))))
    return ctx.g.div(exp, ctx.broadcast_to(_sum_last(ctx, exp), shape(x)))


def _log_softmax(ctx: NodeContext, x: Value) -> Value:
    """x - max - log(sum(exp(x - max))) along the last dim, which stays finite where log(softmax) would not."""
    last = [rank(x) - 1]
    peak = ctx.keep_dims(ctx.g.batched_reduce_max(x, last), shape(x), last)
    shifted = ctx.g.sub(x, ctx.broadcast_to(peak, shape(x)))
    log_sum = ctx.g.log(_sum_last(ctx, ctx.g.exp(shifted)))
    return ctx.g.sub(shifted, ctx.broadcast_to(log_sum, shape(x)))


def _sum_last(ctx: NodeContext, x: Value) -> Value:
    """The sum along the last dim, kept as a dim of 1; float16 is accumulated in float32 (see
    float16_in_float32) and rounded once."""
    last = [rank(x) - 1]
    total = ctx.g.batched_reduce_add(ctx.convert(x, np.float32) if dtype(x) == np.float16 else x, last)
    return ctx.keep_dims(ctx.convert(total, dtype(x)), shape(x), last)


@handles("Softmax")
def softmax(ctx: NodeContext) -> list[Value]:
    return [_along_last(ctx, ctx.input(0), "softmax")]


@handles("LogSoftmax")
def log_softmax(ctx: NodeContext) -> list[Value]:
    return [_along_last(ctx, ctx.input(0), "log_softmax")]
