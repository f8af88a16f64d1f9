"""Schedules of the CPU backend's NHWC convolutions and pools, for glow-cpu-schedule (schedule.py).

glow-ir-to-linalg lowers `glow_ir.cpu_conv_nhwc` to `linalg.conv_2d_nhwc_hwcf` (or a depthwise form) on
memrefs and the NHWC pools to `linalg.pooling_nhwc_max` / `_sum`. Each recipe here re-emits its op on
tensors (`decompose`, which turns the 2-D window op into 1-D ones along W, works on tensors only) and then:

- tiles the output to one row of `ow` pixels by `f` channels, channel tiles outermost, and the reduction
  dims (KH, KW, C) to 1, so that each innermost step is an outer product: `ow` broadcast inputs times an
  `f`-channel filter row, accumulated in registers;
- decomposes the 2-D window op into its 1-D form (unit KH tile) and vectorizes it.

The register tile is chosen per shape among tiles that divide the output (decompose fails on partial
tiles): `f` a multiple of the 16 f32 lanes of an AVX-512 register where the channels allow, and `ow` the
largest divisor of OW that keeps ow * f / 16 <= 16 accumulators (AVX-512 has 32 vector registers; 16
accumulators leave room for the broadcasts and filter rows, more spill). 1x1 convolutions take the same
recipe: 108-114 GFLOP/s on ResNet's 1x1 shapes, as fast as a GEMM. Depthwise convolutions and pools have
no reduction over channels, so each step is a multiply-add (or max) of `ow x c` lanes; their tiles are
smaller (notes: ow >= 16 drops sharply).

A convolution whose filter is a constant reads it repacked at compile time, one contiguous block per channel
tile (`_packed_kernels`); the same direct schedule then runs once per tile, with the convolution's bias
and activation fused into its output tiles (`_fused_kernel`).

Ops with non-static or non-f32 operands are left to glow-to-llvm's loops (a `None` recipe).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, memref, scf

from glow_mlir import ops
from glow_mlir.backends.cpu import transform as steps
from glow_mlir.backends.cpu.lowerings import CONV_ACTIVATION_ATTR, CONV_BIAS_ATTR
from glow_mlir.backends.cpu.recipes import (
    Kernel,
    Recipe,
    constant_data,
    elementwise_recipe,
    generic_on_tensors,
    is_float32,
    on_tensors,
    packed_global,
    recipe,
    static_shape,
    write_back,
)

LANES = 16  # f32 lanes of one AVX-512 register
# Output-channel tiles outermost: the image is swept once per channel tile, so that tile's filter slice
# (KH * KW * C * f_tile floats) stays in cache instead of the whole filter streaming from memory once per
# output row (ResNet's 7x7x512 3x3 layer: 19 -> 94 GFLOP/s; no shape measured slower).
CHANNELS_OUTER = (0, 3, 1, 2, 4, 5, 6)
ACCUMULATORS = 16


def _divisor_at_most(n: int, limit: int) -> int:
    """The largest divisor of n that is at most `limit` (at least 1)."""
    return max(d for d in range(1, min(n, limit) + 1) if n % d == 0)


# Channel tiles tried first: whole AVX-512 registers.
CHANNEL_TILES = (64, 32, 16)


def register_tile(ow: int, channels: int) -> tuple[int, int]:
    """(ow tile, channel tile) for an output row of `ow` pixels and `channels` channels.

    The channel tile is one of CHANNEL_TILES that divides the channels, else the largest power of two that
    does (odd vector lengths such as 24 lower to slow code: 6 GFLOP/s against 86 with 8); the ow tile is the
    largest divisor of ow that keeps the accumulators (ow tile x vectors per channel tile) within budget.
    The pair computing the most output lanes per step wins, the wider on ties.
    """
    candidates = [w for w in CHANNEL_TILES if channels % w == 0]
    if not candidates:
        candidates = [max(w for w in (8, 4, 2, 1) if channels % w == 0)]
    best: tuple[int, int, int] | None = None
    for width in candidates:
        vectors = -(-width // LANES)
        tile = _divisor_at_most(ow, max(1, ACCUMULATORS // vectors))
        score = (tile * width, width)
        if best is None or score > best[:2]:
            best = (*score, tile)
    assert best is not None
    return best[2], best[1]


def _usable(op: ir.Operation) -> bool:
    return all(static_shape(v) is not None and is_float32(v) for v in op.operands)


def _on_tensors(op: ir.Operation, build: Callable[[list[ir.Value], ir.Value], ir.Value]) -> ir.Operation:
    """Re-emits window op `op` (inputs..., output on memrefs) on tensors through `build(inputs, init)`, writes
    its result back into the output buffer, erases `op`, and returns the new op."""
    *inputs, output = op.operands
    tensors = on_tensors([*inputs, output], [False] * len(inputs) + [True])
    result = build(tensors[:-1], tensors[-1])
    write_back(result, output)
    op.erase()
    return result.owner.operation


def _window(op: ir.Operation) -> dict[str, ir.Attribute]:
    return {"strides": op.attributes["strides"], "dilations": op.attributes["dilations"]}


def _steps(tile_sizes: Sequence[int], interchange: Sequence[int] = ()) -> steps.Build:
    def build(handle: ir.Value) -> None:
        steps.vectorize(steps.decompose(steps.tile(handle, tile_sizes, interchange)))

    return build


@recipe("linalg.conv_2d_nhwc_hwcf")
def conv_recipe(op: ir.Operation) -> Recipe | None:
    """Direct convolution, loops (n, oh, ow, f, kh, kw, c): tile [1, 1, ow, f, 1, 1, 1], with the bias and
    activation of a CPU convolution fused into each tile."""
    bias_op, activation_op = _epilogue(op)
    if not _usable(op):
        # The bias and the activation then run as elementwise kernels of their own.
        parts = [elementwise_recipe(e) for e in (bias_op, activation_op) if e is not None]
        return Recipe(tuple(k for part in parts if part is not None for k in part.kernels))
    x, filter_, y = op.operands
    bias = bias_op.operands[0] if bias_op is not None else None
    weights = constant_data(filter_)
    conv = _Conv(x, filter_, bias, y, _dense_window(_window(op)), bias_op, activation_op)
    _, _, ow, f = static_shape(y)
    kernels: list[Kernel] = []
    if weights is None or not all(_static_strides(v) for v in (y, bias) if v is not None):
        ow_tile, f_tile = register_tile(ow, f)
        kernels.append(_fused_kernel(conv, ow_tile, f_tile))
    else:
        kernels += _packed_kernels(conv, weights, op)
    for part in (activation_op, op, bias_op):
        if part is not None:
            part.erase()
    return Recipe(tuple(kernels))


@dataclasses.dataclass(frozen=True)
class _Conv:
    """A CPU convolution being scheduled: its memref operands (x, filter, bias or None, output y), its window
    (strides, dilations) and the bias and activation ops of glow-ir-to-linalg fused into it (or None)."""

    x: ir.Value
    filter: ir.Value
    bias: ir.Value | None
    y: ir.Value
    window: dict[str, list[int]]
    bias_op: ir.Operation | None
    activation_op: ir.Operation | None


def _epilogue(op: ir.Operation) -> tuple[ir.Operation | None, ir.Operation | None]:
    """The bias op right before convolution `op` and the activation op right after it, where glow-ir-to-linalg
    marked them (a CPU convolution), else None."""
    siblings = [o.operation for o in op.block.operations]
    i = next(j for j, o in enumerate(siblings) if o == op)
    before = siblings[i - 1] if i > 0 and CONV_BIAS_ATTR in siblings[i - 1].attributes else None
    after = siblings[i + 1] if i + 1 < len(siblings) and CONV_ACTIVATION_ATTR in siblings[i + 1].attributes else None
    return before, after


def _packed_kernels(conv: _Conv, weights: np.ndarray, user: ir.Operation) -> list[Kernel]:
    """Convolution `conv` with constant weights on a filter packed per channel tile, one tile per loop step.

    HWCF puts consecutive C steps of one channel tile F * 4 bytes apart: a new page per step once F >= 1024,
    which the prefetcher does not follow, so ResNet-50's 7x7 layers ran at 55-65 GFLOP/s streaming their
    filters from memory. The filter is repacked at compile time into [F / f, KH, KW, C, f]; an scf.for over
    the channel tiles (the outermost tile loop of the direct recipe) runs the fused kernel on one contiguous
    [KH, KW, C, f] slice and the output's (and bias's) f channels. Channels beyond the last multiple of 16
    (SqueezeNet's 1000) get a kernel of their own with a narrower tile instead of 8-lane vectors throughout.
    """
    n, _, _, c = static_shape(conv.x)
    _, oh, ow, f = static_shape(conv.y)
    kh, kw = weights.shape[:2]
    main = f - f % LANES if f > LANES else f
    kernels = []
    for f0, fp in [(0, main), (main, f - main)]:
        if fp == 0:
            continue
        ow_tile, f_tile = register_tile(ow, fp)
        tiles = fp // f_tile
        packed = weights[..., f0 : f0 + fp].reshape(kh, kw, c, tiles, f_tile).transpose(3, 0, 1, 2, 4)
        packed_filter = packed_global(user, packed, f"__glow_packed_conv_{tiles}x{kh}x{kw}x{c}x{f_tile}")
        loop = scf.ForOp(_index(0), _index(tiles), _index(1))
        with ir.InsertionPoint(loop.body):
            tile = loop.induction_variable
            filter_ = _dynamic_block(packed_filter, [tile, 0, 0, 0, 0], [1, kh, kw, c, f_tile], drop_first=True)
            channel = arith.addi(arith.muli(tile, _index(f_tile)), _index(f0))
            out = _dynamic_block(conv.y, [0, 0, 0, channel], [n, oh, ow, f_tile])
            tile_bias = _dynamic_block(conv.bias, [channel], [f_tile]) if conv.bias is not None else None
            tile_conv = dataclasses.replace(conv, filter=filter_, bias=tile_bias, y=out)
            kernels.append(_fused_kernel(tile_conv, ow_tile, f_tile))
            scf.YieldOp([])
    return kernels


def _fused_kernel(conv: _Conv, ow_tile: int, f_tile: int) -> Kernel:
    """y = activation(conv(x, filter) + bias) on tensors, as one kernel: each [1, 1, ow, f] output tile starts
    from the bias, accumulates in registers and gets the activation before it is stored, so the output is
    written once instead of three times (bias broadcast, convolution, activation as separate passes).
    `conv.bias_op` and `conv.activation_op` (the memref ops of glow-ir-to-linalg, kept) give their bodies."""
    x, y, bias_op, activation_op = conv.x, conv.y, conv.bias_op, conv.activation_op
    inputs = [x, conv.filter, *([conv.bias] if conv.bias is not None else [])]
    tensors = on_tensors([*inputs, y], [False] * len(inputs) + [True])
    init = tensors[-1]
    if bias_op is not None:
        init = generic_on_tensors(bias_op, [tensors[2]], init)
    result = linalg.conv_2d_nhwc_hwcf(tensors[0], tensors[1], outs=[init], **conv.window)
    if activation_op is not None:
        result = generic_on_tensors(activation_op, [], result)
    write_back(result, y)
    root = result.owner.operation
    if bias_op is None and activation_op is None:
        return Kernel(root, _steps([1, 1, ow_tile, f_tile, 1, 1, 1], CHANNELS_OUTER))
    extra = [] if activation_op is not None else [0, 0, 0]

    def build(handle: ir.Value) -> None:
        fused = steps.fuse(handle, [1, 1, ow_tile, f_tile, *extra], CHANNELS_OUTER[: 4 + len(extra)])
        function = steps.function_of(fused)
        steps.canonicalize(function)
        tiled = steps.tile(steps.match(function, "linalg.conv_2d_nhwc_hwcf"), [0, 0, 0, 0, 1, 1, 1])
        steps.vectorize(steps.decompose(tiled))
        steps.vectorize(steps.match(function, "linalg.generic"))

    return Kernel(root, build)


def _index(value: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), value)


def _static_strides(value: ir.Value) -> bool:
    """A memref with static strides and offset (identity-layout buffers, arena views, blocks of them)."""
    strides, offset = ir.MemRefType(value.type).get_strides_and_offset()
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    return dynamic not in (*strides, offset)


def _dynamic_block(
    base: ir.Value, offsets: Sequence[int | ir.Value], sizes: Sequence[int], drop_first: bool = False
) -> ir.Value:
    """The block of `base` (static strides) at `offsets` (ints or index values), without its first (unit)
    dim if `drop_first`."""
    strides, _ = ir.MemRefType(base.type).get_strides_and_offset()
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    static_offsets = [o if isinstance(o, int) else dynamic for o in offsets]
    values = [o for o in offsets if not isinstance(o, int)]
    kept = slice(1, None) if drop_first else slice(None)
    layout = ir.StridedLayoutAttr.get(dynamic, strides[kept])
    element = ir.MemRefType(base.type).element_type
    result = ir.MemRefType.get(list(sizes)[kept], element, layout=layout)
    ones = ops.i64_array([1] * len(strides))
    offsets = ops.i64_array(static_offsets)
    return memref.SubViewOp(result, base, values, [], [], offsets, ops.i64_array(sizes), ones).result


@recipe("linalg.depthwise_conv_2d_nhwc_hwc")
def depthwise_recipe(op: ir.Operation) -> Recipe | None:
    """Depthwise convolution, loops (n, oh, ow, c, kh, kw): tile [1, 1, ow, c, 1, KW].

    Measured on MobileNetV2's shapes: wide maps (OW >= 28) run best with 4 pixels x 32 channels in image
    order; small ones (14, 7) with up to 8 pixels x 16 channels, channel tiles outermost.
    """
    if not _usable(op):
        return None
    _, _, ow, c = static_shape(op.operands[2])
    kw = static_shape(op.operands[1])[1]
    wide = ow >= 28
    c_tile = next((w for w in ((32, 16) if wide else (16,)) if c % w == 0), c)
    ow_tile = _divisor_at_most(ow, 4 if wide else 8)
    window = _window(op)
    conv = _on_tensors(
        op, lambda ins, init: linalg.depthwise_conv_2d_nhwc_hwc(ins[0], ins[1], outs=[init], **_dense_window(window))
    )
    return Recipe.of(conv, _steps([1, 1, ow_tile, c_tile, 1, kw], () if wide else (0, 3, 1, 2, 4, 5)))


def _pool_recipe(build: Callable[..., ir.Value]) -> Callable[[ir.Operation], Recipe | None]:
    """Pooling, loops (n, oh, ow, c, kh, kw): vectorized along C, tile [1, 1, ow, c, 1, KW]."""

    def schedule(op: ir.Operation) -> Recipe | None:
        if not _usable(op):
            return None
        _, _, ow, c = static_shape(op.operands[2])
        kw = static_shape(op.operands[1])[1]
        c_tile = _divisor_at_most(c, 64) if c % LANES else max(w for w in (64, 32, 16) if c % w == 0)
        ow_tile = _divisor_at_most(ow, 4)
        window = _window(op)
        pool = _on_tensors(op, lambda ins, init: build(ins[0], ins[1], outs=[init], **_dense_window(window)))
        return Recipe.of(pool, _steps([1, 1, ow_tile, c_tile, 1, kw]))

    return schedule


def _dense_window(window: dict[str, ir.Attribute]) -> dict[str, list[int]]:
    """strides and dilations as the lists the linalg op builders take."""
    return {name: [int(v) for v in ir.DenseIntElementsAttr(attr)] for name, attr in window.items()}


recipe("linalg.pooling_nhwc_max")(_pool_recipe(linalg.pooling_nhwc_max))
recipe("linalg.pooling_nhwc_sum")(_pool_recipe(linalg.pooling_nhwc_sum))
