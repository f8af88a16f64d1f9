"""Schedules of the CPU backend's NHWC convolutions, for glow-cpu-schedule (schedule.py); the pools' are in
pool_recipes.py, which shares this module's window-op helpers.

glow-ir-to-linalg lowers `glow_ir.cpu_conv_nhwc` to `linalg.conv_2d_nhwc_hwcf` (or a depthwise form) on
memrefs. Each recipe here re-emits its op on
tensors (`decompose`, which turns the 2-D window op into 1-D ones along W, works on tensors only) and then:

- tiles the output to one row of `ow` pixels by `f` channels, channel tiles outermost, and the reduction
  dims (KH, KW, C) to 1, so that each innermost step is an outer product: `ow` broadcast inputs times an
  `f`-channel filter row, accumulated in registers;
- decomposes the 2-D window op into its 1-D form (unit KH tile) and vectorizes it.

The register tile is chosen per shape among tiles that divide the output (decompose fails on partial
tiles): `f` a multiple of the 16 f32 lanes of an AVX-512 register where the channels allow, and `ow` the
largest divisor of OW that keeps ow * f / 16 accumulators within ACCUMULATORS and, with the f / 16 filter
vectors and the broadcast input, within AVX-512's 32 vector registers. A 1x1 convolution with a constant
filter is pointwise_recipes.py's vector kernel instead (one whose filter is computed at run time takes this
recipe). Depthwise convolutions and pools have no reduction over channels, so each step is a multiply-add (or
max) of `ow x c` lanes; their tiles are smaller (notes: ow >= 16 drops sharply).

A convolution whose filter is a constant reads it repacked at compile time, one contiguous block per channel
tile (`_packed_kernels`); the same direct schedule then runs once per tile, with the convolution's bias
and activation fused into its output tiles (`fused_kernel`).

Ops with non-static or non-f32 operands are left to glow-to-llvm's loops (a `None` recipe).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, scf

from glow_mlir.backends.cpu import transform as steps
from glow_mlir.backends.cpu.lowerings import CONV_ACTIVATION_ATTR, CONV_BIAS_ATTR
from glow_mlir.backends.cpu.recipes import (
    L2_BYTES,
    Kernel,
    Recipe,
    block_at,
    constant_data,
    elementwise_recipe,
    generic_on_tensors,
    index_constant,
    is_float32,
    model_weight_bytes,
    on_tensors,
    packed_global,
    prefetch_ahead,
    recipe,
    static_shape,
    write_back,
)

LANES = 16  # f32 lanes of one AVX-512 register
# Output-channel tiles outermost: the image is swept once per channel tile, so that tile's filter slice
# (KH * KW * C * f_tile floats) stays in cache instead of the whole filter streaming from memory once per
# output row (ResNet's 7x7x512 3x3 layer: 19 -> 94 GFLOP/s; no shape measured slower).
CHANNELS_OUTER = (0, 3, 1, 2, 4, 5, 6)
# AVX-512's vector registers: a register tile's accumulators, its filter vectors and the broadcast input.
REGISTERS = 32
# Accumulators of the direct schedule's register tile. Each step loads the tile's filter vectors from L2 (a
# channel tile's filter slice outgrows L1) and one broadcast per pixel: 4 pixels x 64 channels (16) spend 4
# filter loads on 16 FMAs, which with two FMA ports (Sapphire Rapids) is 32 bytes per cycle from L2; 14 x 32
# (28; 31 registers, no spill) spends 2 on 28. Measured one process, caches flushed between calls, GFLOP/s
# 16 -> 28: ResNet's 3x3 56x56x64 180 -> 193, 28x28x128 176 -> 193, 14x14x256 168 -> 175, stride 2 64 -> 128
# onto 28x28 166 -> 186, 128 -> 256 onto 14x14 151 -> 159.
ACCUMULATORS = 28
# The register tile's accumulators where the input outgrows L2_INPUT_BYTES (`register_tile`).
LARGE_INPUT_ACCUMULATORS = 16
# A row split in two parts (`width_parts`) takes at most this share of the whole row's register-tile steps.
SPLIT_STEPS = 0.75
# Output rows of at most this many pixels run with their input channels blocked (`_channel_block`).
BLOCKED_ROW = 14
# The bytes of each filter tap ([block, f] of a packed [KH, KW, C, f] tile) per channel block (`_channel_block`).
TAP_BLOCK_BYTES = 1024
# The largest input that stays in cache from one sweep to the next (half of Sapphire Rapids' 2 MiB L2): the
# direct schedule sweeps it once per channel tile (`register_tile`), the blocked one once per channel block
# (`_channel_block`).
L2_INPUT_BYTES = 1024 * 1024


def divisor_at_most(n: int, limit: int) -> int:
    """The largest divisor of n that is at most `limit` (at least 1)."""
    return max(d for d in range(1, min(n, limit) + 1) if n % d == 0)


# Channel tiles tried first: whole AVX-512 registers.
CHANNEL_TILES = (64, 32, 16)


def register_tile(ow: int, channels: int, large_input: bool = False) -> tuple[int, int]:
    """(ow tile, channel tile) for an output row of `ow` pixels and `channels` channels.

    The channel tile is one of CHANNEL_TILES that divides the channels, else the largest power of two that
    does (odd vector lengths such as 24 lower to slow code: 6 GFLOP/s against 86 with 8); the ow tile is the
    largest divisor of ow that keeps the accumulators (ow tile x vectors per channel tile) within
    ACCUMULATORS and, beside the filter vectors and the broadcast, within REGISTERS (64 channels: 6 pixels).
    The pair computing the most output lanes per step wins, the wider on ties. Each channel tile sweeps the
    whole input, so a `large_input` (beyond L2_INPUT_BYTES, swept from memory) takes LARGE_INPUT_ACCUMULATORS,
    whose ties go to the wider tile (4 x 64 on rows of 56 and 28: half the sweeps of 14 x 32). ResNet-50 at
    batch 8 was 0.97x with 28 accumulators on every input; taking only the widest channel tile there, 0.82x
    (rows of 14 and 7 got 2 x 64 and 1 x 64).
    """
    candidates = [w for w in CHANNEL_TILES if channels % w == 0]
    if not candidates:
        candidates = [max(w for w in (8, 4, 2, 1) if channels % w == 0)]
    best: tuple[int, int, int] | None = None
    for width in candidates:
        tile = pixel_tile(ow, width, large_input)
        score = (tile * width, width)
        if best is None or score > best[:2]:
            best = (*score, tile)
    assert best is not None
    return best[2], best[1]


def pixel_tile(ow: int, f_tile: int, large_input: bool = False) -> int:
    """The pixels of the register tile along a row of `ow` output pixels at channel tile `f_tile`: the largest
    divisor of ow whose accumulators (pixels x vectors of f_tile) fit ACCUMULATORS (LARGE_INPUT_ACCUMULATORS for
    a `large_input`) and, beside the filter vectors and the broadcast, REGISTERS."""
    vectors = -(-f_tile // LANES)
    accumulators = min(LARGE_INPUT_ACCUMULATORS if large_input else ACCUMULATORS, REGISTERS - vectors - 1)
    return divisor_at_most(ow, max(1, accumulators // vectors))


def width_parts(ow: int, channels: int, large_input: bool = False,
                split: bool = True) -> tuple[int, list[tuple[int, int, int]]]:  # fmt: skip
    """(channel tile, [(first pixel, pixels, pixel tile)]) of an output row of `ow` pixels and `channels`
    channels: the whole row at `register_tile`'s tiles or, where OW's divisors leave the register tile narrow
    (the tile divides the row: a prime 61 gets one pixel, 62 = 2 x 31 two), the first pixels up to a width with
    a wider divisor and the rest, each with its pixel tile at one channel tile, when that takes at most
    SPLIT_STEPS of the whole row's register-tile steps (a TextCNN's 1-D convolution to 61 outputs: 64 x 1
    tiles, 75 GFLOP/s). Not `split`: the whole row."""

    def steps(pixels: int, tile: int, f_tile: int) -> int:
        return pixels // tile * -(-channels // f_tile)

    tile, f_tile = register_tile(ow, channels, large_input)
    best = (SPLIT_STEPS * steps(ow, tile, f_tile), f_tile, [(0, ow, tile)])
    for main in range(max(1, ow - ACCUMULATORS), ow if split else 1):
        main_tile, f_main = register_tile(main, channels, large_input)
        rest_tile = pixel_tile(ow - main, f_main, large_input)
        cost = steps(main, main_tile, f_main) + steps(ow - main, rest_tile, f_main)
        if cost < best[0]:
            best = (cost, f_main, [(0, main, main_tile), (main, ow - main, rest_tile)])
    return best[1], best[2]


def channel_parts(f: int) -> list[tuple[int, int]]:
    """(first channel, channels) of the parts a direct convolution's `f` output channels are scheduled in:
    the channels up to the last multiple of 16 in whole registers, and those beyond it (1000 % 16, a RegNetX
    group's 24 % 16) as a kernel of their own with narrower vectors; `f` at most 16 is one part. One part for
    all would take the narrower vectors throughout (`register_tile`: 24 channels run as three 8-lane vectors)."""
    main = f - f % LANES if f > LANES else f
    return [(0, main), (main, f - main)] if main < f else [(0, f)]


def static_f32(op: ir.Operation) -> bool:
    """Whether every operand of `op` has a static shape and f32 elements: what the recipes schedule."""
    return all(static_shape(v) is not None and is_float32(v) for v in op.operands)


def window_on_tensors(op: ir.Operation, build: Callable[[list[ir.Value], ir.Value], ir.Value]) -> ir.Operation:
    """Re-emits window op `op` (inputs..., output on memrefs) on tensors through `build(inputs, init)`, writes
    its result back into the output buffer, erases `op`, and returns the new op."""
    *inputs, output = op.operands
    tensors = on_tensors([*inputs, output], [False] * len(inputs) + [True])
    result = build(tensors[:-1], tensors[-1])
    write_back(result, output)
    op.erase()
    return result.owner.operation


def window_of(op: ir.Operation) -> dict[str, ir.Attribute]:
    """The strides and dilations attributes of linalg window op `op` (see `dense_window`)."""
    return {"strides": op.attributes["strides"], "dilations": op.attributes["dilations"]}


def tile_steps(tile_sizes: Sequence[int], interchange: Sequence[int] = ()) -> steps.Build:
    """The steps of a window op's direct schedule: tile by `tile_sizes` (loops in `interchange` order),
    decompose the 2-D window into 1-D ones, vectorize."""

    def build(handle: ir.Value) -> None:
        steps.vectorize(steps.decompose(steps.tile(handle, tile_sizes, interchange)))

    return build


@recipe("linalg.conv_2d_nhwc_hwcf")
def conv_recipe(op: ir.Operation) -> Recipe | None:
    """Direct convolution, loops (n, oh, ow, f, kh, kw, c): tile [1, 1, ow, f, 1, 1, 1], with the bias and
    activation of a CPU convolution fused into each tile."""
    bias_op, activation_op = epilogue(op)
    if not static_f32(op):
        return epilogue_alone(bias_op, activation_op)
    x, filter_, y = op.operands
    bias = bias_op.operands[0] if bias_op is not None else None
    weights = constant_data(filter_)
    conv = ScheduledConv(x, filter_, bias, y, dense_window(window_of(op)), bias_op, activation_op)
    _, _, ow, f = static_shape(y)
    kernels: list[Kernel] = []
    if weights is None or not all(_static_strides(v) for v in (y, bias) if v is not None):
        ow_tile, f_tile = register_tile(ow, f, _input_bytes(conv) > L2_INPUT_BYTES)
        kernels.append(fused_kernel(conv, ow_tile, f_tile))
    else:
        kernels += _packed_kernels(conv, weights, op)
    for part in (activation_op, op, bias_op):
        if part is not None:
            part.erase()
    return Recipe(tuple(kernels))


@dataclasses.dataclass(frozen=True)
class ScheduledConv:
    """A CPU convolution being scheduled: its memref operands (x, filter, bias or None, output y), its window
    (strides, dilations) and the bias and activation ops of glow-ir-to-linalg fused into it (or None)."""

    x: ir.Value
    filter: ir.Value
    bias: ir.Value | None
    y: ir.Value
    window: dict[str, list[int]]
    bias_op: ir.Operation | None
    activation_op: ir.Operation | None


def _input_bytes(conv: ScheduledConv) -> int:
    """The bytes of `conv`'s input (f32)."""
    return int(np.prod(static_shape(conv.x))) * 4


def epilogue(op: ir.Operation) -> tuple[ir.Operation | None, ir.Operation | None]:
    """The bias op right before convolution `op` and the activation op right after it, where glow-ir-to-linalg
    marked them (a CPU convolution), else None."""
    before, after = output_neighbours(op)
    return (
        before if before is not None and CONV_BIAS_ATTR in before.attributes else None,
        after if after is not None and CONV_ACTIVATION_ATTR in after.attributes else None,
    )


def epilogue_alone(bias_op: ir.Operation | None, activation_op: ir.Operation | None) -> Recipe:
    """The vector recipes of a convolution's marked bias and activation ops, for a convolution that no recipe
    schedules (non-static or non-f32 operands): they then run as elementwise kernels of their own."""
    parts = [elementwise_recipe(e) for e in (bias_op, activation_op) if e is not None]
    return Recipe(tuple(k for part in parts if part is not None for k in part.kernels))


def output_neighbours(op: ir.Operation) -> tuple[ir.Operation | None, ir.Operation | None]:
    """The users of `op`'s output (its last operand) in its block nearest before and after it, or None. Found
    among the output's users, not by listing the block, which made the schedule quadratic."""
    before = after = None
    for use in op.operands[-1].uses:
        user = use.owner.operation
        if user.block != op.block or user == op:
            continue
        if user.is_before_in_block(op):
            before = user if before is None or before.is_before_in_block(user) else before
        elif after is None or user.is_before_in_block(after):
            after = user
    return before, after


# Output pixels (over the batch) up to which a convolution whose weights come from memory (the model's beyond L2)
# prefetches its filter (`_packed_kernels`): each filter float feeds one multiply-add per output pixel, so on a
# few pixels the layer waits on its filter (2 x 254 GFLOP/s against ~20 GB/s from memory break even near 25),
# and the hardware prefetchers stop at each 4 KiB page of it. Up to 64 pixels (8x8 maps): bench.ab, ResNet-18 at
# 96x96 (zoo) 1.18x, ResNet-18 at 224 1.12x (7x7 maps), ResNet-50 1.04x; up to 200 no more; every layer cost
# load slots where the FMAs bound it (DenseNet-121 0.94x, SqueezeNet 0.92x).
STREAMED_PIXELS = 64
# How far ahead the filter is prefetched: one page. ResNet-18 at 96x96 against 32 KiB ahead (the matmuls'
# PREFETCH_AHEAD_BYTES), 16 filter-bound layers: 1 KiB 1.08x, 2 KiB 1.11-1.13x, 4 KiB 1.12x, 8 KiB 1.10-1.11x,
# 16 KiB 1.04x; its 3x3 512 -> 512 layers on 3x3 maps 0.586 ms a run without prefetches, 0.550 at 32 KiB, 0.36
# at 4 KiB (26 GB/s of filter).
STREAMED_AHEAD_BYTES = 4 * 1024


def _packed_kernels(conv: ScheduledConv, weights: np.ndarray, user: ir.Operation) -> list[Kernel]:
    """Convolution `conv` with constant weights on a filter packed per channel tile, one tile per loop step.

    HWCF puts consecutive C steps of one channel tile F * 4 bytes apart: a new page per step once F >= 1024,
    which the prefetcher does not follow, so ResNet-50's 7x7 layers ran at 55-65 GFLOP/s streaming their
    filters from memory. The filter is repacked at compile time into [F / f, KH, KW, C, f]; an scf.for over
    the channel tiles (the outermost tile loop of the direct recipe) runs the fused kernel on one contiguous
    [KH, KW, C, f] slice and the output's (and bias's) f channels. Channels beyond the last multiple of 16
    (1000, say) get a kernel of their own with a narrower tile instead of 8-lane vectors throughout. A layer of
    at most STREAMED_PIXELS output pixels whose filter comes from memory prefetches it across pages
    (recipes.prefetch_ahead, as the matmuls' packed weights).
    """
    n, h, _, c = static_shape(conv.x)
    _, oh, ow, f = static_shape(conv.y)
    kh, kw = weights.shape[:2]
    (_, sw), (_, dw) = conv.window["strides"], conv.window["dilations"]
    kernels = []
    large_input = _input_bytes(conv) > L2_INPUT_BYTES
    streamed = n * oh * ow <= STREAMED_PIXELS and model_weight_bytes(user) > L2_BYTES
    for f0, fp in channel_parts(f):
        f_tile, parts = width_parts(ow, fp, large_input, split=_static_strides(conv.x))
        tiles = fp // f_tile
        packed = weights[..., f0 : f0 + fp].reshape(kh, kw, c, tiles, f_tile).transpose(3, 0, 1, 2, 4)
        packed_filter = packed_global(user, packed, f"__glow_packed_conv_{tiles}x{kh}x{kw}x{c}x{f_tile}")
        for w0, pixels, ow_tile in parts:
            # A part of the row reads the input columns its outputs' windows cover.
            x = conv.x
            if len(parts) > 1:
                x = block_at(conv.x, [0, 0, w0 * sw, 0], [n, h, (pixels - 1) * sw + (kw - 1) * dw + 1, c])
            loop = scf.ForOp(index_constant(0), index_constant(tiles), index_constant(1))
            with ir.InsertionPoint(loop.body):
                tile = loop.induction_variable
                filter_ = block_at(packed_filter, [tile, 0, 0, 0, 0], [1, kh, kw, c, f_tile], drop_first=True)
                channel = arith.addi(arith.muli(tile, index_constant(f_tile)), index_constant(f0))
                out = block_at(conv.y, [0, 0, w0, channel], [n, oh, pixels, f_tile])
                tile_bias = block_at(conv.bias, [channel], [f_tile]) if conv.bias is not None else None
                tile_conv = dataclasses.replace(conv, x=x, filter=filter_, bias=tile_bias, y=out)
                kernel = fused_kernel(tile_conv, ow_tile, f_tile)
                if streamed:
                    kernel = dataclasses.replace(kernel, finish=prefetch_ahead(filter_.type, STREAMED_AHEAD_BYTES))
                kernels.append(kernel)
                scf.YieldOp([])
    return kernels


def fused_kernel(conv: ScheduledConv, ow_tile: int, f_tile: int) -> Kernel:
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
    block = _channel_block(conv, f_tile)
    if block is not None:
        has_epilogue = bias_op is not None or activation_op is not None
        return Kernel(root, _blocked_steps(block, ow_tile, f_tile, has_epilogue))
    if bias_op is None and activation_op is None:
        return Kernel(root, tile_steps([1, 1, ow_tile, f_tile, 1, 1, 1], CHANNELS_OUTER))
    extra = [] if activation_op is not None else [0, 0, 0]

    def build(handle: ir.Value) -> None:
        fused = steps.fuse(handle, [1, 1, ow_tile, f_tile, *extra], CHANNELS_OUTER[: 4 + len(extra)])
        function = steps.function_of(fused)
        steps.canonicalize(function)
        tiled = steps.tile(steps.match(function, "linalg.conv_2d_nhwc_hwcf"), [0, 0, 0, 0, 1, 1, 1])
        steps.vectorize(steps.decompose(tiled))
        steps.vectorize(steps.match(function, "linalg.generic"))

    return Kernel(root, build)


def _channel_block(conv: ScheduledConv, f_tile: int) -> int | None:
    """The input channels per block of a convolution on several short output rows (OW <= BLOCKED_ROW), or None
    for the unblocked schedule.

    The direct schedule reads a channel tile's whole filter slice (KH * KW * C * f floats: 590 KB for a 3x3
    512 -> 512 layer at f = 32) once per output row, and a row of OW pixels does only OW FMAs per filter
    vector. In a network the slice comes from memory on the first row (ResNet-18's weights outgrow L2), at a
    few FMAs per load, and the other rows run from L2 only after it: the 3x3 512 -> 512 layer on 7x7 ran at
    96-117 GFLOP/s with caches flushed between calls, 145-160 without. With the input channels in blocks,
    outermost, every output row reuses a block from L1, and each of the KH * KW taps of a block is a piece of
    a stream through the packed filter. Pieces of at most TAP_BLOCK_BYTES ran best; our reading (not checked
    with counters): they stay within the L2 streamer's run-ahead on each tap's stream, so the next block
    arrives while this block's rows compute. Measured one process, caches flushed, GFLOP/s with pieces of
    512 B / 1 KiB / 2 KiB: 3x3 512 -> 512 on 7x7 (f = 32) 167 / 157 / 134 (unblocked 122), on 4x4 (f = 64)
    - / 125 / 106, 5x5 256 -> 256 on 7x7 162 / 166 / 136 (unblocked 127). Rows of 14 gained too (3x3
    512 -> 512 on 14x14 +15 %, 256 -> 256 +2-6 %, stride 2 256 -> 256 onto 14x14 +20 %), rows of 28 did not
    (3x3 128 -> 128 on 28x28 -3 %, stride 2 64 -> 128 onto 28x28 -10 %).

    Each block reads its channels of every input pixel, a few bytes of each cache line, so the input must stay
    in L2 from one block to the next (L2_INPUT_BYTES): ResNet-50 at batch 8, whose 3x3 stride-2
    512 -> 512 layer reads 8 x 16 x 16 x 512 floats (4 MiB), ran it at 79 GFLOP/s blocked, 161 unblocked."""
    kh, kw, c, _ = static_shape(conv.filter)
    n, oh, ow, _ = static_shape(conv.y)
    if _input_bytes(conv) > L2_INPUT_BYTES:
        return None
    # One output row (a squeeze-and-excite FC as a 1x1 convolution on a 1x1 map) reads the filter once anyway.
    # A 1x1 window's block would be a few channels, too few FMAs between two loads of the accumulators (and
    # its one tap streams through the packed filter in order anyway): ResNet-50's 1x1 layers on 7x7 lost
    # 10-28 % blocked.
    if ow > BLOCKED_ROW or n * oh == 1 or kh * kw == 1:
        return None
    block = divisor_at_most(c, max(1, TAP_BLOCK_BYTES // (f_tile * 4)))
    return block if block < c else None


def _blocked_steps(block: int, ow_tile: int, f_tile: int, has_epilogue: bool) -> steps.Build:
    """The direct schedule under an outer loop over input-channel blocks (`_channel_block`): the reduction
    is split, so the bias (the accumulators' start) and the activation (after the last block) run as
    vectorized passes of their own over the output tile, which on short rows is small."""

    def build(handle: ir.Value) -> None:
        function = steps.function_of(handle)
        blocked = steps.tile(steps.match(function, "linalg.conv_2d_nhwc_hwcf"), [0, 0, 0, 0, 0, 0, block])
        steps.vectorize(steps.decompose(steps.tile(blocked, [1, 1, ow_tile, f_tile, 1, 1, 1], CHANNELS_OUTER)))
        if has_epilogue:
            generics = steps.match(function, "linalg.generic")
            steps.vectorize(steps.tile(generics, [1, 1, ow_tile, f_tile], CHANNELS_OUTER[:4]))

    return build


def _static_strides(value: ir.Value) -> bool:
    """A memref with static strides and offset (identity-layout buffers, arena views, blocks of them)."""
    strides, offset = ir.MemRefType(value.type).get_strides_and_offset()
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    return dynamic not in (*strides, offset)


def dense_window(window: dict[str, ir.Attribute]) -> dict[str, list[int]]:
    """strides and dilations as the lists the linalg op builders take."""
    return {name: [int(v) for v in ir.DenseIntElementsAttr(attr)] for name, attr in window.items()}
