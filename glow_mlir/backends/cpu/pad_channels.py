"""glow-cpu-pad-channels: a depthwise convolution's input buffer with its pixels padded to a stride that spreads
them over L1's sets (depthwise_tiles.pixel_stride); the convolution reads, and its producer writes, the first C
channels of each pixel through a block view.

A depthwise kernel (depthwise_recipes.DepthwiseKernel) runs one channel block at a time over a band of rows, the
block's vectors C x 4 bytes apart along a row. Where that pixel size is a multiple of 512 bytes (128, 256, ...
channels) a tile's vectors fall into 8 or fewer of L1's 64 sets, the rows above and below into the same ones, and
the band's rows no longer stay in L1; where C is no multiple of 16, half the vectors cross a cache line. The pass
runs on glow_ir right before glow-allocate, after glow-ir-optimize-inserts has made the producer write into the
interior of the convolution's padded input P, and after glow-cpu-fuse-expansion (a fused expansion writes no
buffer). For a depthwise `glow_ir.cpu_conv_nhwc` (one channel per group, f32) reading P, it applies when:

1. `pixel_stride` pads P's C channels to more (not for the flat kernels of 3x3 layers of unit stride along the
   rows, which read a row of pixels as one run of floats);
2. P is an activation, and every instruction that accesses it, directly or through a block view, takes strided
   buffers (optimize_inserts.STRIDED_KERNELS), with no other view of it.

P becomes a buffer of the padded channels: its block views (the producer's) are taken of the new buffer at the same
place, its splats fill the new buffer (glow-cpu-schedule's `fill_borders` then fills only the border the readers
read) and its inserts (a concat's buffer copied into the padding) write into it at the same place, and every other
access reads a block view of its first C channels.
"""

from __future__ import annotations

from mlir import ir

from glow_mlir import ops
from glow_mlir.backends.cpu.depthwise_tiles import pixel_stride
from glow_mlir.backends.cpu.expansion import one_channel_per_group
from glow_mlir.backends.cpu.recipes import is_float32
from glow_mlir.passes.ir import utils as u
from glow_mlir.passes.ir.optimize_inserts import STRIDED_KERNELS
from glow_mlir.passes.registry import register

CONV = "glow_ir.cpu_conv_nhwc"
SPLAT = "glow_ir.splat"
INSERT = "glow_ir.insert_tensor"


def _padded_channels(dw: ir.Operation) -> int | None:
    """The channels of the padded input of `dw` when it is a depthwise convolution whose input `pixel_stride` pads,
    else None."""
    if dw.name != CONV or not all(is_float32(v) for v in dw.operands):
        return None
    if not one_channel_per_group(dw):
        return None
    dest, src, _, _ = dw.operands
    c = ops.shape(src)[3]
    kh, kw = ops.ints(dw, "kernels")
    stride = pixel_stride(c, (kh, kw), ops.ints(dw, "strides"), ops.shape(dest)[2])
    return stride if stride > c else None


def _paddable(buffer: ir.Value) -> bool:
    """Whether every access of activation `buffer` takes strided buffers, through no view but block views of it
    that have no views themselves."""
    if not u.is_activation(buffer):
        return False
    for user in u.users(buffer):
        if user.name == u.VIEW:
            return False
        if user.name == u.BLOCK_VIEW and any(v.name in u.VIEWS for v in u.users(user.results[0])):
            return False
    return all(op.name in STRIDED_KERNELS for op in u.accessing(buffer))


def _rewrite(buffer: ir.Value, channels: int) -> None:
    """`buffer` ([N, H, W, C]) as the first C channels of a new buffer of `channels` (module docstring)."""
    shape = ops.shape(buffer)
    element = ops.element_type(buffer)
    alloc = u.producer(buffer)
    with ir.InsertionPoint(alloc), alloc.location:
        padded = ops.create(u.ALLOC, results=[ir.MemRefType.get([*shape[:3], channels], element)]).results[0]

    def view(before: ir.Operation, start: list[int], sizes: list[int]) -> ir.Value:
        with ir.InsertionPoint(before), before.location:
            return u.block_view(padded, start, sizes).results[0]

    for user in u.users(buffer):
        if user.name == u.BLOCK_VIEW:
            old = user.results[0]
            old.replace_all_uses_with(view(user, ops.ints(user, "start"), ops.shape(old)))
            user.erase()
        elif user.name in (SPLAT, u.DEALLOC) or (user.name == INSERT and user.operands[0] == buffer):
            # An insert into `buffer` writes its block at the same place of the padded one.
            user.operands[0] = padded
        else:
            whole = view(user, [0, 0, 0, 0], shape)
            for i, operand in enumerate(user.operands):
                if operand == buffer:
                    user.operands[i] = whole
    alloc.erase()


def pad_function(function: ir.Operation) -> None:
    """Pads the input of every depthwise convolution of `function` that qualifies (module docstring)."""
    for dw in u.block_ops(u.body(function)):
        channels = _padded_channels(dw)
        if channels is not None and _paddable(dw.operands[1]):
            _rewrite(dw.operands[1], channels)


@register("glow-cpu-pad-channels")
def cpu_pad_channels(module: ir.Module) -> None:
    """Pad the pixels of a depthwise convolution's input to a stride that spreads them over L1's sets."""
    for function in ops.functions(module):
        pad_function(function)
