"""The CPU backend's f32 depthwise convolution kernel, for glow-cpu-schedule (schedule.py): the recipe of
`linalg.depthwise_conv_2d_nhwc_hwc` (lowerings.py), which replaces the op with vector code written here (no
transform steps), with the bias and activation of a CPU convolution in its registers.

A depthwise convolution does KH x KW multiply-adds per output element and per input element read, so it is bound
by how often each loaded vector is used, and by where its data comes from, more than by the FMA ports. The
register tile (int8_depthwise.py's, in f32) is a few output pixels along a row by one or two 16-channel vectors,
the accumulators starting from the bias: per filter row, each input column the tile reads is loaded once and
feeds the FMAs of every pixel whose window holds it (6 loaded columns for the 12 FMAs of a 3x3 stride-1 filter row
at 4 pixels), and a 3x3 filter's vectors stay in registers for a whole row of tiles. The activation (the body of
its linalg.generic, cloned on vectors) runs on the accumulators before their one store. Channels beyond the last
multiple of the block are whole vectors and then one partial vector (masked), pixels beyond the last full tile a
smaller tile.

The loop order depends on where the layer's data lives. A layer whose input and output fit in L2 runs in bands of
output rows, each band's channel blocks one after the other down the band's rows, so that a block's input rows
stay in L1 from one output row to the next. A larger one (MobileNetV2's first layers) runs row by row with every
channel block innermost at each tile of pixels, reading and writing memory in order, as the prefetchers expect.

The input comes padded (glow-lower pads a convolution's input, and glow-ir-optimize-inserts makes the producer
write into the padded buffer's interior), so the kernel reads no padding of its own. docs/OPTIMIZATIONS.md
("Depthwise convolutions: a kernel of their own") has the measurements.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Callable, Iterator, Sequence

from mlir import ir
from mlir.dialects import arith, scf, vector

from glow_mlir.backends.cpu.conv_recipes import (
    LANES,
    dense_window,
    divisor_at_most,
    epilogue,
    epilogue_alone,
    static_f32,
    window_of,
)
from glow_mlir.backends.cpu.recipes import L2_BYTES, Recipe, recipe, static_shape
from glow_mlir.backends.cpu.vector_body import lanes_mask, load, store, yielded, zeros
from glow_mlir.codegen.builders import index

# Accumulators of a register tile: pixels x channel vectors. 8 keeps a 3x3 filter's vectors for two channel
# vectors (18) in registers beside them; 12 and 16 (kernel time, one process, bench.convs' layers) were no
# faster overall, and slower on 5x5 layers.
ACCUMULATORS = 8
# Filter vectors that stay in registers across a row's tiles (loaded once per channel block and row); a larger
# filter (5x5, 7x7) is read from L1 by each tile's FMAs instead, which measured 1.02-1.08x faster on ConvNeXt's
# and EfficientNet's 7x7 and 5x5 layers than holding it, mostly spilled, on the stack.
HELD_FILTER_VECTORS = 18
# Output rows of one band: the band's input rows across all channels stay in L2 (this many bytes) while each
# channel block sweeps them, and each block's rows of the band in L1 from one output row to the next (a filter
# row reads what the previous output row's next filter row read). Row by row across all channels, a row's 3
# input rows of 384 channels (74 KB on 14x14) outgrew L1; block by block across all rows, a 112x112 map
# streamed from memory once per block.
BAND_BYTES = 512 * 1024


@recipe("linalg.depthwise_conv_2d_nhwc_hwc")
def depthwise_recipe(op: ir.Operation) -> Recipe | None:
    """A depthwise convolution (loops n, oh, ow, c, kh, kw) with the bias and activation of a CPU convolution,
    as one vector kernel (module docstring); with non-static or non-f32 operands, the linalg loops, and the bias
    and activation as elementwise kernels."""
    bias_op, activation_op = epilogue(op)
    if not static_f32(op):
        return epilogue_alone(bias_op, activation_op)
    x, filter_, y = op.operands
    bias = bias_op.operands[0] if bias_op is not None else None
    window = dense_window(window_of(op))
    kernel = _Depthwise(x, filter_, bias, y, window["strides"], window["dilations"], activation_op)
    root = kernel.emit()
    for done in (activation_op, op, bias_op):
        if done is not None:
            done.erase()
    return Recipe.of(root, lambda _: None)


@dataclasses.dataclass(frozen=True)
class ChannelBlocks:
    """`count` channel blocks from channel `start`, `step` apart, each of vectors of `widths` channels."""

    start: int
    step: int
    count: int
    widths: tuple[int, ...]


def channel_blocks(c: int, vectors: int) -> list[ChannelBlocks]:
    """The channel blocks of `c` channels: blocks of `vectors` whole registers, then the channels left in whole
    registers one by one, then a last partial one (8 lanes when it holds at most 8 channels: GhostNet's 8-channel
    layer ran 0.7x as fast in a masked 16-lane register)."""
    step = LANES * vectors
    blocks = [ChannelBlocks(0, step, c // step, (LANES,) * vectors)] if c >= step else []
    start = c - c % step
    if (c - start) // LANES:
        blocks.append(ChannelBlocks(start, LANES, (c - start) // LANES, (LANES,)))
        start += (c - start) // LANES * LANES
    if c > start:
        blocks.append(ChannelBlocks(start, c - start, 1, (c - start,)))
    return blocks


class _Depthwise:
    """The buffers, window and register tile of one depthwise convolution, and the emitter of its loops."""

    def __init__(self, x: ir.Value, filter_: ir.Value, bias: ir.Value | None, y: ir.Value, strides: Sequence[int],
                 dilations: Sequence[int], activation: ir.Operation | None) -> None:  # fmt: skip
        self.x, self.filter, self.bias, self.y, self.activation = x, filter_, bias, y, activation
        self.n, self.oh, self.ow, self.c = static_shape(y)
        self.kh, self.kw = static_shape(filter_)[:2]
        self.sh, self.sw = strides
        self.dh, self.dw = dilations
        # Two channel vectors per tile where the channels and a 3x3 filter's registers allow (one loaded input
        # column then covers a whole 128-byte pixel of 32 channels: 1.2-1.45x on MobileNetV2's 3x3 layers), else
        # one; the pixels fill ACCUMULATORS.
        self.vectors = 2 if self.c >= 2 * LANES and 2 * self.kh * self.kw <= HELD_FILTER_VECTORS else 1
        self.pixels = ACCUMULATORS // self.vectors
        self.held = self.vectors * self.kh * self.kw <= HELD_FILTER_VECTORS
        input_row = static_shape(x)[2] * self.c * 4
        window = (self.kh - 1) * self.dh + 1
        fits = [b for b in range(1, self.oh + 1) if ((b - 1) * self.sh + window) * input_row <= BAND_BYTES]
        self.band = divisor_at_most(self.oh, max(fits, default=1))
        self.streamed = (math.prod(static_shape(x)) + math.prod(static_shape(y))) * 4 > L2_BYTES

    def emit(self) -> ir.Operation:
        """The images loop, each image in bands of rows or, `streamed`, row by row (`_bands`, `_rows`)."""
        images = scf.ForOp(index(0), index(self.n), index(1))
        with ir.InsertionPoint(images.body):
            (self._rows if self.streamed else self._bands)(images.induction_variable)
            scf.YieldOp([])
        return images.operation

    def _bands(self, image: ir.Value) -> None:
        """Bands of output rows; in each, per group of channel blocks (`channel_blocks`), a loop over its blocks,
        the band's rows, the row's pixels (`row`)."""
        bands = scf.ForOp(index(0), index(self.oh), index(self.band))
        with ir.InsertionPoint(bands.body):
            for blocks in channel_blocks(self.c, self.vectors):
                with _loop(blocks.start, blocks.start + blocks.count * blocks.step, blocks.step) as c0:
                    with _loop(0, self.band, 1) as row:
                        self.row(image, arith.addi(bands.induction_variable, row), c0, blocks.widths)
            scf.YieldOp([])

    def _rows(self, image: ir.Value) -> None:
        """Output rows, their register tiles of pixels, and innermost every channel block at those pixels (the
        tile's filter and bias vectors loaded with it): the input and output are read and written in memory
        order, which the prefetchers follow."""
        with _loop(0, self.oh, 1) as y:

            def tiles(x0: ir.Value, pixels: int) -> None:
                for blocks in channel_blocks(self.c, self.vectors):
                    with _loop(blocks.start, blocks.start + blocks.count * blocks.step, blocks.step) as c0:
                        _Tile(self, image, y, c0, blocks.widths).emit(x0, pixels)

            self._pixels(tiles)

    def row(self, image: ir.Value, y: ir.Value, c0: ir.Value, widths: Sequence[int]) -> None:
        """Output row `y` of the channel block at c0: its pixels in register tiles, the block's held filter
        vectors loaded once for them all."""
        self._pixels(_Tile(self, image, y, c0, widths).emit)

    def _pixels(self, tile: Callable[[ir.Value, int], None]) -> None:
        """`tile(x0, pixels)` for the register tiles of a row of output pixels: a loop of full tiles, then the
        smaller last one."""
        count = self.ow // self.pixels
        if count:
            with _loop(0, count * self.pixels, self.pixels) as x0:
                tile(x0, self.pixels)
        if self.ow % self.pixels:
            tile(index(count * self.pixels), self.ow % self.pixels)


@contextlib.contextmanager
def _loop(start: int, stop: int, step: int) -> Iterator[ir.Value]:
    """An scf.for from `start` to `stop` by `step`, built inside the with block at its induction variable."""
    loop = scf.ForOp(index(start), index(stop), index(step))
    with ir.InsertionPoint(loop.body):
        yield loop.induction_variable
        scf.YieldOp([])


class _Tile:
    """The register tiles of one output row and channel block: the block's vectors (channel offset, type and
    mask: None for a whole register), its bias and held filter vectors, and the emitter of a tile of pixels."""

    def __init__(self, k: _Depthwise, image: ir.Value, y: ir.Value, c0: ir.Value, widths: Sequence[int]) -> None:
        self.k, self.image, self.y = k, image, y
        f32 = ir.F32Type.get()
        self.parts: list[tuple[ir.Value, ir.VectorType, ir.Value | None]] = []
        for v, width in enumerate(widths):
            lanes = 8 if width <= 8 else LANES
            mask = lanes_mask(width, lanes)
            self.parts.append((arith.addi(c0, index(v * LANES)) if v else c0, ir.VectorType.get([lanes], f32), mask))
        self.rows = [arith.addi(arith.muli(y, index(k.sh)), index(i * k.dh)) for i in range(k.kh)]
        self.filter = self.filters() if k.held else None
        self.bias = [load(k.bias, [c], t, m) if k.bias is not None else zeros(t) for c, t, m in self.parts]

    def filters(self) -> list[list[list[ir.Value]]]:
        """The filter's vectors, [filter row][filter column][channel vector]."""
        k = self.k
        return [[[load(k.filter, [index(i), index(j), c], t, m) for c, t, m in self.parts] for j in range(k.kw)]
                for i in range(k.kh)]  # fmt: skip

    def emit(self, x0: ir.Value, pixels: int) -> None:
        """Output pixels x0 .. x0 + pixels - 1: per filter row, each input column the tile reads is loaded once
        and added into the accumulators of the pixels whose windows hold it; then the activation and one store
        per pixel and channel vector."""
        k = self.k
        filter_ = self.filter if self.filter is not None else self.filters()
        accs = [list(self.bias) for _ in range(pixels)]
        left = arith.muli(x0, index(k.sw))
        # Input column (from the first window's start) -> the (pixel, filter column) pairs that read it.
        readers: dict[int, list[tuple[int, int]]] = {}
        for p in range(pixels):
            for j in range(k.kw):
                readers.setdefault(p * k.sw + j * k.dw, []).append((p, j))
        for i in range(k.kh):
            for column in sorted(readers):
                for v, (c, t, m) in enumerate(self.parts):
                    x = load(k.x, [self.image, self.rows[i], arith.addi(left, index(column)), c], t, m)
                    for p, j in readers[column]:
                        accs[p][v] = vector.fma(x, filter_[i][j][v], accs[p][v])
        for p in range(pixels):
            for v, (c, _, m) in enumerate(self.parts):
                value = accs[p][v]
                if k.activation is not None:
                    [value] = yielded(k.activation, [value])
                store(value, k.y, [self.image, self.y, arith.addi(x0, index(p)), c], m)

