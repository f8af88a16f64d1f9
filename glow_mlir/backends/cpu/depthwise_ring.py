"""Depthwise convolutions whose channel blocks alias in L1, and the recipe of `linalg.depthwise_conv_2d_nhwc_hwc`,
which picks among the depthwise kernels. Also the band loop over a ring of rows that the fused expansion +
depthwise kernel (expansion_recipes.py) and the copied ring (`CopiedRing`) share (`RingBands`).

A depthwise kernel runs one channel block (one or two 16-channel vectors) at a time over a band of rows, so that
the block's input rows stay in L1 from one tile of rows to the next (depthwise_recipes.DepthwiseKernel). But a
block's vectors are C x 4 bytes apart along a row and the filter's taps too: where C is a multiple of 64 (C x 4
of 256 bytes), a block's vectors fall into 16 or fewer of L1's 64 sets (4 KB apart on Zen 5 and Intel's
cores), where C is a multiple of 512 (MobileNetV1's and Xception's 512 to 2048 channels) into one or two, and
the rows above and below into the same ones: the 12 ways of a set hold a fraction of the band and the block's
tiles read their input from L2. A 3x3 layer of 1024 channels on 7x7 ran at 26 % of peak where 1040 channels ran
at 56 %.

Three remedies, where they measured faster (`python -m bench.convs`, one process): the input's pixels padded to
a stride that spreads them over the sets (glow-cpu-pad-channels, depthwise_tiles.pixel_stride; pad_channels.py),
except for the copied ring's layers below, and here:
- the filter of an aliased layer is a copy whose channels are padded by one vector (`padded_filter`), so that a
  block's taps fall into distinct sets: a filter read by the tiles (5x5 and up) 1.1-1.4x (7x7 of 128 channels on
  28x28 67 -> 92 % of peak), a held 3x3 filter unchanged;
- a 3x3 stride-1 layer of a multiple of 512 channels copies each block's rows into a ring (`CopiedRing`): per
  (block of 4 vectors, image) a call of a helper whose alloca holds the M = (R - 1) x SH + KH padded input rows
  that one band of R output rows reads, that block's channels only; per band the R x SH rows the last band did
  not read are copied in (one load and store per input vector, against 9 multiply-adds per output vector),
  then the band's tiles read the ring. 512 channels on 14x14 26 -> 45 % of peak, 1024 on 7x7 26 -> 36 %, 1024
  on 14x14 16 -> 30 %. The copy's loads and the output's stores still alias; a 7x7 layer (its filter read by
  the tiles) or a stride-2 one ran slower over the ring, and so did 3x3 layers whose blocks fall into 8 or 16
  sets (384, 960 channels).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from mlir import ir
from mlir.dialects import arith, func, memref, scf

from glow_mlir.backends.cpu.conv_recipes import LANES, dense_window, epilogue, epilogue_alone, static_f32, window_of
from glow_mlir.backends.cpu.depthwise_recipes import (
    DepthwiseKernel,
    DepthwiseTile,
    FlatDepthwise,
    channel_blocks,
    each_tile,
    for_loop,
    last_apart,
    register_lanes,
)
from glow_mlir.backends.cpu.depthwise_tiles import Interior, aliased, held_filter, tile_shape
from glow_mlir.backends.cpu.outline import define_helper
from glow_mlir.backends.cpu.recipes import (
    Kernel,
    Recipe,
    block_at,
    constant_data,
    packed_global,
    recipe,
    static_shape,
)
from glow_mlir.backends.cpu.vector_body import lanes_mask, load, store
from glow_mlir.codegen.builders import index

# The most bytes of one block's ring: with the filter slice and the output tiles' lines, within L1 (48 KB on Zen 5
# and Sapphire Rapids).
RING_BYTES = 32 * 1024
# Channel vectors per copied ring: a pixel's 4 lines in 4 sets for the copy (than rings of the tiles' 2 vectors,
# 1024 and 2048 channels on 7x7 ran 1.13-1.14x faster, 512 on 14x14 1.09x; 1024 on 14x14 1.09x slower).
RING_VECTORS = 4


def ring_rows(rows: int, stride: int, window: int) -> int:
    """M: the padded input rows that a band of `rows` output rows reads, `stride` apart, windows of `window`."""
    return (rows - 1) * stride + window


def runs(widths: Sequence[int], vectors: int) -> list[tuple[int, int, tuple[int, ...]]]:
    """The depthwise tiles' blocks of `vectors` vectors within a ring of channel vectors `widths`, as runs of
    blocks of equal widths: (first vector, blocks, widths). A run is one loop: its tiles' code once, not once per
    block."""
    found: list[tuple[int, int, tuple[int, ...]]] = []
    for v in range(0, len(widths), vectors):
        block = tuple(widths[v : v + vectors])
        if found and found[-1][2] == block:
            first, count, _ = found[-1]
            found[-1] = (first, count + 1, block)
        else:
            found.append((v, 1, block))
    return found


class RingBands:
    """One channel block of a depthwise convolution whose input rows are a ring (`ring`, [1, M, W', lanes]) that
    the subclass fills (`fill`): bands of `rows` output rows, each filling the rows it reads that no earlier band
    did (the first band its whole window), then running its depthwise tiles (`depthwise`, a DepthwiseKernel
    whose input is the ring) through the row map `row mod M`."""

    def __init__(self, depthwise: DepthwiseKernel, ring: ir.Value, rows: int, widths: Sequence[int],
                 vectors: int) -> None:  # fmt: skip
        self.depthwise, self.ring, self.rows = depthwise, ring, rows
        k = depthwise
        self.ring_rows = ring_rows(rows, k.sh, k.window)
        self.runs = runs(widths, vectors)

    def fill(self, row: ir.Value) -> None:
        """Padded input row `row` into its ring row (`slot`)."""
        raise NotImplementedError

    def slot(self, row: ir.Value) -> ir.Value:
        """The ring row that holds padded row `row`."""
        return arith.remui(row, index(self.ring_rows))

    def emit(self) -> None:
        """The bands, one loop over all of them, so that the filling code is emitted once (four copies of the
        expansion's 1x1 row, carried rows unrolled and a last band of its own, took EfficientNet-B0's compile from
        4.7 to 8.0 s); the depthwise tiles of a shorter last band are a variant of their own."""
        k, rows = self.depthwise, self.rows
        bands = -(-k.oh // rows)
        last = k.oh - (bands - 1) * rows
        end_of_map = (k.oh - 1) * k.sh + k.window
        with for_loop(0, bands, 1) as band:
            top = arith.muli(band, index(rows * k.sh))
            first = arith.select(arith.cmpi(arith.CmpIPredicate.eq, band, index(0)), index(0),
                                 arith.addi(top, index(k.window - k.sh)))  # fmt: skip
            end = arith.minui(arith.addi(top, index(self.ring_rows)), index(end_of_map))
            loop = scf.ForOp(first, end, index(1))
            with ir.InsertionPoint(loop.body):
                self.fill(loop.induction_variable)
                scf.YieldOp([])
            last_apart(band, bands, lambda is_last: self._tiles(band, last if is_last else rows), last != rows)

    def _tiles(self, band: ir.Value, rows: int) -> None:
        """The depthwise tiles of output rows band x R .. + rows, reading the ring."""
        y0 = arith.muli(band, index(self.rows))
        zero = index(0)
        for first, blocks, widths in self.runs:
            shape = self.depthwise.shape(rows, len(widths))
            step = LANES * len(widths)
            with for_loop(first * LANES, (first * LANES) + blocks * step, step) as c0:

                def tile_rows(y: ir.Value, count: int, c0: ir.Value = c0, widths: Sequence[int] = widths,
                              pixels: int = shape.pixels) -> None:  # fmt: skip
                    tile = DepthwiseTile(self.depthwise, zero, arith.addi(y0, y), count, c0, widths,
                                         source_row=self.slot)  # fmt: skip
                    self.depthwise.pixel_tiles(pixels, tile.emit, tile.filter is not None)

                each_tile(rows, shape.rows, tile_rows)


class CopiedRing(RingBands):
    """A channel block's padded input rows (`x`, [H', W', width]) copied into the ring, a vector at a time."""

    def __init__(self, x: ir.Value, depthwise: DepthwiseKernel, ring: ir.Value, rows: int,
                 widths: Sequence[int]) -> None:  # fmt: skip
        super().__init__(depthwise, ring, rows, widths, depthwise.vectors)
        self.x = x
        f32 = ir.F32Type.get()
        # Built here, in the helper: a value of the caller's cannot cross into it.
        self.parts = [(v * LANES, ir.VectorType.get([register_lanes(w)], f32), lanes_mask(w, register_lanes(w)))
                      for v, w in enumerate(widths)]  # fmt: skip

    def fill(self, row: ir.Value) -> None:
        slot = self.slot(row)
        with for_loop(0, static_shape(self.x)[1], 1) as column:
            for offset, t, mask in self.parts:
                value = load(self.x, [row, column, index(offset)], t, mask)
                store(value, self.ring, [index(0), slot, column, index(offset)], None)


def ring_band(kernel: DepthwiseKernel, vectors: int) -> int:
    """The output rows of a band of a copied ring of `vectors` channel vectors: the register tile's rows
    (depthwise_tiles.tile_shape over the whole map), fewer while the ring outgrows RING_BYTES; 0 where even one
    row's ring does."""
    k = kernel
    wp = static_shape(k.x)[2]
    tile = tile_shape((k.oh, k.ow), min(vectors, k.vectors), (k.kh, k.kw), (k.sh, k.sw), (k.dh, k.dw), k.interior)
    rows = tile.rows
    while rows and ring_rows(rows, k.sh, k.window) * wp * LANES * vectors * 4 > RING_BYTES:
        rows -= 1
    return rows


def padded_filter(op: ir.Operation, filter_: ir.Value) -> ir.Value:
    """`filter_` ([KH, KW, C]), or where it is a constant whose taps alias (`aliased` into 16 sets) a copy whose
    channels are padded by one vector, read as the original's first C (module docstring)."""
    data = constant_data(filter_)
    if data is None or not aliased(data.shape[-1], 16):
        return filter_
    padded = np.pad(data, [(0, 0), (0, 0), (0, LANES)])
    return packed_global(op, padded, f"__glow_packed_depthwise_{'x'.join(map(str, data.shape))}")


def copies_ring(kernel: DepthwiseKernel) -> bool:
    """Whether `kernel` runs over a copied ring (module docstring): a held filter at unit vertical stride, its
    blocks' vectors in at most 2 sets, in bands (not streamed: a ring per block would read a streamed map once
    per block) and a ring of one band row within RING_BYTES."""
    k = kernel
    return (not k.streamed and k.sh == 1 and held_filter(k.vectors, k.kh, k.kw) and aliased(k.pixel, 2)
            and ring_band(k, RING_VECTORS) > 0)  # fmt: skip


def copied_ring(op: ir.Operation, kernel: DepthwiseKernel) -> list[ir.Operation]:
    """The kernel as loops over its channel blocks and images, each a call of a helper that copies the block's
    input rows into a ring and runs the depthwise tiles on it (module docstring); its root loops."""
    roots = []
    k = kernel
    hp, wp = static_shape(k.x)[1:3]
    for blocks in channel_blocks(k.c, RING_VECTORS):
        width = sum(blocks.widths)
        rows = ring_band(k, len(blocks.widths))
        lanes = sum(register_lanes(w) for w in blocks.widths)
        loop = scf.ForOp(index(blocks.start), index(blocks.start + blocks.count * blocks.step), index(blocks.step))
        with ir.InsertionPoint(loop.body):
            c0 = loop.induction_variable
            with for_loop(0, k.n, 1) as image:
                operands = [
                    block_at(k.x, [image, 0, 0, c0], [1, hp, wp, width], drop_first=True),
                    block_at(k.filter, [0, 0, c0], [k.kh, k.kw, width]),
                    block_at(k.y, [image, 0, 0, c0], [1, k.oh, k.ow, width]),
                ]
                if k.bias is not None:
                    operands.append(block_at(k.bias, [c0], [width]))

                def body(arguments: list[ir.Value], rows: int = rows, lanes: int = lanes,
                         widths: tuple[int, ...] = blocks.widths) -> None:  # fmt: skip
                    x, filter_, y, *bias = arguments
                    count = ring_rows(rows, k.sh, k.window)
                    ring_type = ir.MemRefType.get([1, count, wp, lanes], ir.F32Type.get())
                    ring = memref.alloca(ring_type, [], [], alignment=64)
                    depthwise = DepthwiseKernel(ring, filter_, bias[0] if bias else None, y, (k.sh, k.sw),
                                                (k.dh, k.dw), k.activation, k.interior)  # fmt: skip
                    CopiedRing(x, depthwise, ring, rows, widths).emit()

                name = define_helper(op, "depthwise_ring", [v.type for v in operands], body, serial=True)
                func.CallOp([], ir.FlatSymbolRefAttr.get(name), operands)
            scf.YieldOp([])
        roots.append(loop.operation)
    return roots


@recipe("linalg.depthwise_conv_2d_nhwc_hwc")
def depthwise_recipe(op: ir.Operation) -> Recipe | None:
    """A depthwise convolution (loops n, oh, ow, c, kh, kw) with the bias and activation of a CPU convolution,
    as one vector kernel: a layer of few channels on its flat rows (depthwise_recipes.FlatDepthwise), one whose
    blocks' vectors alias in L1 (`aliased`) over a copied ring where a row's ring fits, else by channel blocks
    over bands of rows (depthwise_recipes.DepthwiseKernel); with non-static or non-f32 operands, the linalg
    loops, and the bias and activation as elementwise kernels."""
    bias_op, activation_op = epilogue(op)
    if not static_f32(op):
        return epilogue_alone(bias_op, activation_op)
    x, filter_, y = op.operands
    bias = bias_op.operands[0] if bias_op is not None else None
    window = dense_window(window_of(op))
    interior = Interior.of(op)
    if FlatDepthwise.fits(x, filter_, bias, y, window["strides"]):
        roots = [FlatDepthwise(op, x, filter_, bias, y, window["strides"], window["dilations"], activation_op).emit()]
    else:
        kernel = DepthwiseKernel(x, padded_filter(op, filter_), bias, y, window["strides"], window["dilations"],
                                 activation_op, interior)  # fmt: skip
        if copies_ring(kernel):
            roots = copied_ring(op, kernel)
        else:
            roots = [kernel.emit()]
    for done in (activation_op, op, bias_op):
        if done is not None:
            done.erase()
    return Recipe(tuple(Kernel(root, lambda _: None) for root in roots))
