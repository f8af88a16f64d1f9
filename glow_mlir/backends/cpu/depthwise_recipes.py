"""The CPU backend's f32 depthwise convolution kernels, for glow-cpu-schedule (schedule.py): what the recipe of
`linalg.depthwise_conv_2d_nhwc_hwc` (lowerings.py; depthwise_ring.py, which picks among them) replaces the op
with, vector code written here (no transform steps), with the bias and activation of a CPU convolution in its
registers.

A depthwise convolution does KH x KW multiply-adds per output element and per input element read, so it is bound
by how often each loaded vector is used, and by where its data comes from, more than by the FMA ports. The
register tile (depthwise_tiles.tile_shape) is a few output rows by a few pixels by one or two 16-channel vectors, the
accumulators starting from the bias: each input vector the tile reads is loaded once and feeds the FMAs of every
output whose window holds it (a 2 x 2 tile of a 3x3 stride-1 window loads 16 input vectors per channel vector for
36 multiply-adds), and a 3x3 filter's vectors stay in registers for a whole row of tiles. A 5x5 or 7x7 filter is
read by each tile, one filter row at a time, and shared by the tile's outputs. The rule picks, per layer and
channel block, the tile that loads the fewest vectors per multiply-add whose registers fit. The activation (the
body of its linalg.generic, cloned on vectors) runs on the accumulators before their one store. Channels beyond
the last multiple of the block are whole vectors and then one partial vector (masked), rows and pixels beyond the
last full tile a smaller tile.

The loop order depends on the bytes of a window's input rows. A layer runs in bands of output rows whose input
rows, all channels, fit in BAND_BYTES of L2 (the last band shorter), each band's channel blocks one after the
other down the band's rows, so that a block's input rows stay in L1 from one tile of rows to the next. Where not
even one output row's window fits (RepLKNet's 27x27 window on 14x14x512: 2.2 MB), it runs row by row with every
channel block innermost at each tile of pixels, reading and writing memory in order, as the prefetchers expect.

A layer of 2, 4 or 8 channels with unit stride along the row runs on its rows as flat runs of floats instead,
16 / C pixels per register (`FlatDepthwise`), and so does a 3x3 layer of any other channel count that is no
multiple of 16 whose output rows are contiguous (the register's channels then depend on where it starts: its
phase). The input comes padded (glow-lower pads a convolution's input, and
glow-ir-optimize-inserts makes the producer write into the padded buffer's interior), so the kernel reads no
padding of its own; its pixels may be padded too, beyond the C channels the kernel reads (glow-cpu-pad-channels,
depthwise_tiles.pixel_stride), so that a channel block's vectors along a row spread over L1's sets. Where that
buffer's border is known to be zeros (padding.py marks it), a kernel whose tiles
read the filter (5x5 and larger) skips the taps that would read them: per tile the filter rows that read no
value, and at the row's ends, tiles placed at compile time leave out their columns of zeros
(depthwise_tiles.Interior; RepLKNet's 27x27 window on a 14x14 map reads values with 27 % of its taps).
docs/OPTIMIZATIONS.md ("Depthwise convolutions: a kernel of their own") has the measurements.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Callable, Iterator, Sequence

import numpy as np
from mlir import ir
from mlir.dialects import arith, scf, vector

from glow_mlir.backends.cpu.conv_recipes import LANES
from glow_mlir.backends.cpu.depthwise_tiles import (
    Interior,
    TileShape,
    aliased,
    held_filter,
    skips_columns,
    tile_shape,
    window_readers,
)
from glow_mlir.backends.cpu.recipes import (
    collapse_dims,
    constant_data,
    packed_global,
    static_shape,
)
from glow_mlir.backends.cpu.vector_body import lanes_mask, load, store, yielded, zeros
from glow_mlir.codegen.builders import index

# Tiles of pixels whose windows reach into the padding of a marked input (depthwise_tiles.Interior) are emitted at
# their place, without their dead columns, where that pays (`skips_columns`): at most this many at each end of a
# row (the others run in the loop over the row's tiles, dead columns and all).
STATIC_EDGE_TILES = 2
# Output rows of one band: the band's input rows across all channels stay in L2 (this many bytes) while each
# channel block sweeps them, and each block's rows of the band in L1 from one tile of rows to the next. Row by row
# across all channels, a row's 3 input rows of 384 channels (74 KB on 14x14) outgrew L1; block by block across all
# rows, a 112x112 map streamed from memory once per block.
BAND_BYTES = 512 * 1024


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


def register_lanes(width: int) -> int:
    """The lanes of the register that holds a channel block's part of `width` channels: 8 for at most 8 (see
    `channel_blocks`), else 16, masked where fewer."""
    return 8 if width <= 8 else LANES


class DepthwiseKernel:
    """The buffers, window and register tile of one depthwise convolution, and the emitter of its loops."""

    def __init__(self, x: ir.Value, filter_: ir.Value, bias: ir.Value | None, y: ir.Value, strides: Sequence[int],
                 dilations: Sequence[int], activation: ir.Operation | None,
                 interior: Interior | None = None) -> None:  # fmt: skip
        """`interior`: where `x` holds values, if it is marked (ZERO_BORDER_ATTR)."""
        self.x, self.filter, self.bias, self.y, self.activation = x, filter_, bias, y, activation
        self.interior = interior
        self.n, self.oh, self.ow, self.c = static_shape(y)
        self.kh, self.kw = static_shape(filter_)[:2]
        self.sh, self.sw = strides
        self.dh, self.dw = dilations
        window_, strides_, dilations_ = (self.kh, self.kw), (self.sh, self.sw), (self.dh, self.dw)
        self.skip_columns = interior is not None and skips_columns(self.ow, window_, strides_, dilations_, interior)
        # Two channel vectors per tile where the channels and a 3x3 filter's registers allow (one loaded input
        # column then covers a whole 128-byte pixel of 32 channels: 1.2-1.45x on MobileNetV2's 3x3 layers), else
        # one; blocks of fewer vectors (the channels left) get tiles of their own shape. Strided, a loaded vector
        # feeds fewer outputs, and the 4 x 4 tiles of one vector reuse each twice as often as the 2 x 2 of two
        # (3x3 stride 2 on 28x28 of 48 to 240 channels 1.2-1.5x, the others 0.98-1.12x), but where a block's
        # vectors fall into 2 of L1's sets (`aliased`) a pixel's two vectors span twice the sets (512 channels on
        # 14x14 0.88x with one).
        # The input's pixel and row strides (glow-cpu-pad-channels may pad its pixels beyond C channels).
        row_stride, self.pixel = ir.MemRefType(x.type).get_strides_and_offset()[0][1:3]
        strided = (self.sh > 1 or self.sw > 1) and not aliased(self.pixel, 2)
        self.vectors = 2 if self.c >= 2 * LANES and held_filter(2, self.kh, self.kw) and not strided else 1
        input_row = row_stride * 4
        # The input rows one output row's window spans.
        self.window = (self.kh - 1) * self.dh + 1
        fits = [b for b in range(1, self.oh + 1) if ((b - 1) * self.sh + self.window) * input_row <= BAND_BYTES]
        self.band = max(fits, default=1)
        # Bands whenever one fits, however large the map: a map beyond L2 (2.4-5 MB: 56x56x144, 112x112x96) ran
        # 1.02-1.2x faster in bands than row by row (bench.convs --base), its band in L2 while the blocks sweep it.
        self.streamed = not fits
        # The tiles' rows come from a band's rows (the whole map's where streamed).
        rows = self.oh if self.streamed else self.band
        self.blocks = [(b, self.shape(rows, len(b.widths))) for b in channel_blocks(self.c, self.vectors)]

    def shape(self, rows: int, vectors: int) -> TileShape:
        return tile_shape((rows, self.ow), vectors, (self.kh, self.kw), (self.sh, self.sw), (self.dh, self.dw),
                          self.interior)  # fmt: skip

    def emit(self) -> ir.Operation:
        """The images loop, each image in bands of rows or, `streamed`, row by row (`_bands`, `_rows`)."""
        images = scf.ForOp(index(0), index(self.n), index(1))
        with ir.InsertionPoint(images.body):
            (self._rows if self.streamed else self._bands)(images.induction_variable)
            scf.YieldOp([])
        return images.operation

    def _bands(self, image: ir.Value) -> None:
        """Bands of output rows (the last one shorter where `band` does not divide them); in each, per group of
        channel blocks (`channel_blocks`), a loop over its blocks, the band's tiles of rows, their pixels."""

        def band(top: ir.Value, count: int) -> None:
            for blocks, shape in self.blocks:
                with for_loop(blocks.start, blocks.start + blocks.count * blocks.step, blocks.step) as c0:

                    def rows(y: ir.Value, rows: int, c0: ir.Value = c0, widths: Sequence[int] = blocks.widths,
                             shape: TileShape = shape) -> None:  # fmt: skip
                        tile = DepthwiseTile(self, image, arith.addi(top, y), rows, c0, widths)
                        self.pixel_tiles(shape.pixels, tile.emit, tile.filter is not None)

                    each_tile(count, shape.rows, rows)

        each_tile(self.oh, self.band, band)

    def _rows(self, image: ir.Value) -> None:
        """Tiles of output rows, their register tiles of pixels, and innermost every channel block at those
        pixels (the tile's filter and bias vectors loaded with it): the input and output are read and written in
        memory order, which the prefetchers follow. All blocks take the first blocks' tile shape."""
        shape = self.blocks[0][1]
        held = held_filter(len(self.blocks[0][0].widths), self.kh, self.kw)

        def rows(y: ir.Value, count: int) -> None:
            def pixel_tile(x0: ir.Value | int, pixels: int) -> None:
                for blocks, _ in self.blocks:
                    with for_loop(blocks.start, blocks.start + blocks.count * blocks.step, blocks.step) as c0:
                        DepthwiseTile(self, image, y, count, c0, blocks.widths).emit(x0, pixels)

            self.pixel_tiles(shape.pixels, pixel_tile, held)

        each_tile(self.oh, shape.rows, rows)

    def pixel_tiles(self, pixels: int, emit: Callable[[ir.Value | int, int], None], held: bool) -> None:
        """`emit(start, count)` for the tiles of `pixels` along an output row (`each_tile`), those at its ends whose
        windows reach into a marked input's padding (`Interior`; at most STATIC_EDGE_TILES at each end) with a
        start known at compile time, so that they leave out their dead columns; the others in a loop."""
        if held or not self.skip_columns:
            each_tile(self.ow, pixels, emit)
            return
        assert self.interior is not None
        box, full = self.interior, self.ow // pixels
        reach = (pixels - 1) * self.sw + (self.kw - 1) * self.dw

        def dead(tile: int) -> bool:
            start = tile * pixels * self.sw
            return start < box.left or start + reach >= box.left + box.width

        lead = 0
        while lead < min(full, STATIC_EDGE_TILES) and dead(lead):
            lead += 1
        trail = 0
        while trail < min(full - lead, STATIC_EDGE_TILES) and dead(full - 1 - trail):
            trail += 1
        middle = full - trail - lead
        if middle > 1:
            for t in range(lead):
                emit(t * pixels, pixels)
            with for_loop(lead * pixels, (full - trail) * pixels, pixels) as start:
                emit(start, pixels)
            for t in range(full - trail, full):
                emit(t * pixels, pixels)
        else:
            for t in range(full):
                emit(t * pixels, pixels)
        if self.ow % pixels:
            emit(full * pixels, self.ow % pixels)


def each_tile(size: int, tile: int, emit: Callable[[ir.Value, int], None]) -> None:
    """`emit(start, count)` for the tiles of `size` positions (output rows or pixels): a loop of full tiles of
    `tile`, then the smaller last one."""
    full = size // tile
    if full:
        with for_loop(0, full * tile, tile) as start:
            emit(start, tile)
    if size % tile:
        emit(index(full * tile), size % tile)


def last_apart(i: ir.Value, count: int, emit: Callable[[bool], None], differs: bool) -> None:
    """`emit(last)` for iteration `i` of a loop of `count` whose last iteration's code differs from the others'
    where `differs` (a partial band, block or vector): an scf.if on i == count - 1 of emit(True), else
    emit(False); emit(True) alone for a loop of one, emit(False) alone where nothing differs."""
    if not differs:
        emit(False)
    elif count == 1:
        emit(True)
    else:
        branch = scf.IfOp(arith.cmpi(arith.CmpIPredicate.eq, i, index(count - 1)), [], has_else=True)
        with ir.InsertionPoint(branch.then_block):
            emit(True)
            scf.YieldOp([])
        with ir.InsertionPoint(branch.else_block):
            emit(False)
            scf.YieldOp([])


@contextlib.contextmanager
def for_loop(start: int, stop: int, step: int) -> Iterator[ir.Value]:
    """An scf.for from `start` to `stop` by `step`, built inside the with block at its induction variable."""
    loop = scf.ForOp(index(start), index(stop), index(step))
    with ir.InsertionPoint(loop.body):
        yield loop.induction_variable
        scf.YieldOp([])


class DepthwiseTile:
    """The register tiles of some output rows and one channel block: the block's vectors (channel offset, type
    and mask: None for a whole register), its bias and held filter vectors, and the emitter of a tile of pixels."""

    def __init__(self, k: DepthwiseKernel, image: ir.Value, y: ir.Value, rows: int, c0: ir.Value, widths: Sequence[int],
                 source_row: Callable[[ir.Value], ir.Value] | None = None) -> None:  # fmt: skip
        """`source_row` maps an input row to the row of k.x that holds it (expansion_recipes' ring of rows)."""
        self.k, self.image, self.y, self.rows = k, image, y, rows
        f32 = ir.F32Type.get()
        self.parts: list[tuple[ir.Value, ir.VectorType, ir.Value | None]] = []
        for v, width in enumerate(widths):
            lanes = register_lanes(width)
            mask = lanes_mask(width, lanes)
            self.parts.append((arith.addi(c0, index(v * LANES)) if v else c0, ir.VectorType.get([lanes], f32), mask))
        # Input row (from the first output row's window start) -> the (output row, filter row) pairs that read it.
        self.readers = window_readers(rows, k.sh, k.kh, k.dh)
        self.top, self.source_row = arith.muli(y, index(k.sh)), source_row
        self.filter = self.filters() if held_filter(len(widths), k.kh, k.kw) else None
        self.bias = [load(k.bias, [c], t, m) if k.bias is not None else zeros(t) for c, t, m in self.parts]

    def _input_row(self, offset: ir.Value | int) -> ir.Value:
        """The row of k.x that holds input row `offset` of the tile's window (from its first output row's)."""
        if isinstance(offset, int):
            row = arith.addi(self.top, index(offset)) if offset else self.top
        else:
            row = arith.addi(self.top, offset)
        return self.source_row(row) if self.source_row is not None else row

    def _filter_rows(self) -> tuple[ir.Value, ir.Value]:
        """[lo, hi) of the filter rows that read a marked input's values for some of the tile's rows (`Interior`,
        `interior_taps` at run time), or all of them."""
        k, box = self.k, self.k.interior
        if box is None:
            return index(0), index(k.kh)

        def over_dh(value: ir.Value) -> ir.Value:
            return arith.floordivsi(value, index(k.dh)) if k.dh > 1 else value

        # lo = max(0, -floor((top + (rows - 1) sh - box.top) / dh)), hi = min(kh, floor((box.top + box.height - 1
        # - top) / dh) + 1): a loop from lo to hi <= lo runs no filter row.
        below = over_dh(arith.subi(self.top, index(box.top - (self.rows - 1) * k.sh)))
        lo = arith.maxsi(index(0), arith.subi(index(0), below))
        above = over_dh(arith.subi(index(box.top + box.height - 1), self.top))
        return lo, arith.minsi(index(k.kh), arith.addi(above, index(1)))

    def filters(self) -> list[list[list[ir.Value]]]:
        """The filter's vectors, [filter row][filter column][channel vector]."""
        k = self.k
        return [[[load(k.filter, [index(i), index(j), c], t, m) for c, t, m in self.parts] for j in range(k.kw)]
                for i in range(k.kh)]  # fmt: skip

    def emit(self, x0: ir.Value | int, pixels: int) -> None:
        """Output pixels x0 .. x0 + pixels - 1 of the tile's rows: each input vector the tile reads is loaded once
        and added into the accumulators of the (row, pixel) outputs whose windows hold it; then the activation
        and one store per output and channel vector. A filter read by the tile from a marked input (`Interior`)
        runs the filter rows that read its values, and at a start known here (an int) the columns too."""
        k = self.k
        accs = [[list(self.bias) for _ in range(pixels)] for _ in range(self.rows)]
        # Input column (from the first window's start) -> the (pixel, filter column) pairs that read it.
        columns = window_readers(pixels, k.sw, k.kw, k.dw)
        if isinstance(x0, int):
            if k.interior is not None and self.filter is None:
                columns = {c: pairs for c, pairs in columns.items() if k.interior.holds_column(x0 * k.sw + c)}
            left, x0 = index(x0 * k.sw), index(x0)
        else:
            left = arith.muli(x0, index(k.sw))

        def add_row(row: ir.Value, pairs: Sequence[tuple[int, int]],
                    filter_: Callable[[int, int, int], ir.Value]) -> None:  # fmt: skip
            """Input row `row` of the tile, each vector loaded once, into the accumulators of the (output row,
            filter row) `pairs` that read it; `filter_(i, j, v)` is the filter vector of tap (i, j)."""
            for column, column_readers in sorted(columns.items()):
                for v, (c, t, m) in enumerate(self.parts):
                    x = load(k.x, [self.image, row, arith.addi(left, index(column)), c], t, m)
                    for r, i in pairs:
                        for p, j in column_readers:
                            accs[r][p][v] = vector.fma(x, filter_(i, j, v), accs[r][p][v])

        if self.filter is not None:
            held = self.filter
            for a, row_readers in sorted(self.readers.items()):
                add_row(self._input_row(a), row_readers, lambda i, j, v: held[i][j][v])
        else:
            # A filter read by the tile (5x5, 7x7): a loop over the filter rows carrying the accumulators, one
            # filter row's vectors at a time, each input row loaded once per filter row that reads it (all KH x
            # KW vectors live at once spilled). A loop, not KH copies of its body: MixNet-M's 9x9 layers were
            # 2600 FMAs per kernel function, and LLVM's time goes with the code's size.
            flat = [acc for row in accs for pixel in row for acc in pixel]
            loop = scf.ForOp(*self._filter_rows(), index(1), flat)
            with ir.InsertionPoint(loop.body):
                i = loop.induction_variable
                carried = iter(loop.inner_iter_args)
                accs = [[[next(carried) for _ in self.parts] for _ in range(pixels)] for _ in range(self.rows)]
                row = [[load(k.filter, [i, index(j), c], t, m) for c, t, m in self.parts] for j in range(k.kw)]
                first = arith.muli(i, index(k.dh))
                for r in range(self.rows):
                    input_row = self._input_row(arith.addi(first, index(r * k.sh)) if r else first)
                    add_row(input_row, [(r, 0)], lambda _, j, v: row[j][v])
                scf.YieldOp([acc for row_accs in accs for pixel in row_accs for acc in pixel])
            done = iter(loop.results)
            accs = [[[next(done) for _ in self.parts] for _ in range(pixels)] for _ in range(self.rows)]
        for r in range(self.rows):
            y = arith.addi(self.y, index(r)) if r else self.y
            for p in range(pixels):
                for v, (c, _, m) in enumerate(self.parts):
                    value = accs[r][p][v]
                    if k.activation is not None:
                        [value] = yielded(k.activation, [value])
                    store(value, k.y, [self.image, y, arith.addi(x0, index(p)), c], m)


# NHWC as [N, H, W x C]: a row's pixels as one run of floats.
FLAT_ROWS = ([0], [1], [2, 3])


def phase_count(c: int) -> int:
    """P: the registers after which the channels of a flat row of C-channel pixels repeat, lcm(C, 16) / 16."""
    return math.lcm(c, LANES) // LANES


def phases(data: np.ndarray) -> np.ndarray:
    """`data` (the last dim: C channels) as the registers of its phases: [P, ..., 16], where register q holds
    channels 16q, 16q + 1, ... mod C (`phase_count`)."""
    c = data.shape[-1]
    count = phase_count(c)
    flat = np.tile(data, [1] * (data.ndim - 1) + [count * LANES // c])
    return np.moveaxis(flat.reshape(*data.shape[:-1], count, LANES), -2, 0)


def phase_of(f: ir.Value, c: int) -> ir.Value:
    """The phase of the register at float f (a multiple of 16) of a flat row of C-channel pixels: (f / 16) mod P,
    its row in `phases`."""
    return arith.remui(arith.divui(f, index(LANES)), index(phase_count(c)))


class FlatDepthwise:
    """A depthwise convolution of unit horizontal stride and a held filter (3x3) on the rows as flat runs of floats:
    a pixel's C channels are contiguous and so are a row's pixels, so a register holds 16 floats of a row whatever
    C is. For fewer channels than a register that divide it (1, 2, 4 or 8: MobileNetV1-0.25's, LCNet-0.5's and
    GhostNet's first layers) 16 / C pixels fill one register. The output vector at float f of a row reads, for
    filter column j, the 16 floats at f + j x DW x C of its input row, and multiplies them by tap (i, j)'s C
    weights repeated across the register. An 8-channel layer ran in 8-lane registers at 49 % of the 16-lane FMA
    peak. The register tile is up to 4 rows by 4 vectors, the filter's
    vectors (held: at most HELD_FILTER_VECTORS) and the bias built once; each input vector a tile reads is
    loaded once; a row's last vector, when the row is no whole number of registers, is masked. An output whose
    pixels are not contiguous (GhostNet writes its ghost features into a concatenation's channels) takes each
    register's pixels one store each.

    Phased: other channel counts that are no multiple of 16 (GhostNet's 36 and 100, MobileNetV3's 88) take
    channel vectors whose last one is partly empty (36 channels: 3 registers' FMAs for 2.25 registers of work).
    Flat, every lane is busy, but the register at float f of a row starts at channel f mod C, so its taps and
    bias are those of its phase (f / 16) mod P, P = lcm(C, 16) / 16, from packed copies of the constant filter
    (`phases`), loaded by each tile of many rows and one register. The output's rows must be contiguous.
    bench.convs, kernel time against the channel vectors: 36 channels 1.34x, 88 1.14x, 100 1.01x; 3x3 layers of
    12 to 120 channels read from a ReLU 1.00-1.40x (none slower). 5x5 and 7x7 filters stay in channel vectors
    (ConvNeXt-atto's 40 channels 0.77-0.93x: each tile's taps, not held, loaded once per multiply-add)."""

    TILE_ROWS, TILE_VECTORS = 4, 4
    # Phased taps are loaded by each tile, so its tile is one register of many rows (each tap loaded once for
    # 3 x 12 multiply-adds): 3x3 layers of 36, 88 and 100 channels 1.31x, 1.11x, 1.02x at 12 rows, 1.25x, 1.10x,
    # 1.03x at 8, 0.65x, 0.63x, 0.76x at 4 rows x 4 vectors (bench.convs --base).
    PHASED_ROWS = 12

    @staticmethod
    def fits(x: ir.Value, filter_: ir.Value, bias: ir.Value | None, y: ir.Value, strides: Sequence[int]) -> bool:
        kh, kw, c = static_shape(filter_)
        if c % LANES == 0 or strides[1] != 1 or not held_filter(1, kh, kw):
            return False
        y_strides = ir.MemRefType(y.type).get_strides_and_offset()[0]
        if LANES % c:
            # Phased taps come from packed copies of a constant filter and bias. The output's rows flat: into a
            # concatenation's channels (GhostNet's ghost features), a register's lanes of each pixel were a
            # masked store of their own, and 2 masked stores per register took more than the lanes saved
            # (36 channels 1.14x, 92 and 120 channels 0.82x and 0.75x the channel vectors' kernel).
            constant = constant_data(filter_) is not None and (bias is None or constant_data(bias) is not None)
            if not constant or y_strides[2] != c:
                return False
        # The input's pixels contiguous: a row of it is one run of floats; the output's channels contiguous.
        x_strides = ir.MemRefType(x.type).get_strides_and_offset()[0]
        return x_strides[2:] == [c, 1] and y_strides[3] == 1

    def __init__(self, op: ir.Operation, x: ir.Value, filter_: ir.Value, bias: ir.Value | None, y: ir.Value,
                 strides: Sequence[int], dilations: Sequence[int],
                 activation: ir.Operation | None) -> None:  # fmt: skip
        self.filter, self.bias, self.activation = filter_, bias, activation
        self.n, self.oh, ow, self.c = static_shape(y)
        self.kh, self.kw = static_shape(filter_)[:2]
        self.sh, self.dh, self.dw = strides[0], dilations[0], dilations[1]
        self.x = collapse_dims(x, FLAT_ROWS)
        # Phased: C does not divide 16, so the register at float f of a row holds channels f mod C onwards; its
        # taps and bias are phase (f / 16) mod P's registers (`phases`).
        self.phased = bool(LANES % self.c)
        # Pixels contiguous in the output too (always where phased): one store per register, else one per pixel
        # (`_store`).
        self.flat_y = ir.MemRefType(y.type).get_strides_and_offset()[0][2] == self.c
        self.y = collapse_dims(y, FLAT_ROWS) if self.flat_y else y
        self.row = ow * self.c
        self.vt = ir.VectorType.get([LANES], ir.F32Type.get())
        self.tile = (self.PHASED_ROWS, 1) if self.phased else (self.TILE_ROWS, self.TILE_VECTORS)
        if self.phased:
            self.filter = packed_global(op, phases(constant_data(filter_)), f"__glow_packed_flat_dw_{self.c}")
            if bias is not None:
                self.bias = packed_global(op, phases(constant_data(bias)), f"__glow_packed_flat_bias_{self.c}")

    def emit(self) -> ir.Operation:
        images = scf.ForOp(index(0), index(self.n), index(1))
        with ir.InsertionPoint(images.body):
            image = images.induction_variable
            held = None if self.phased else self._held()
            full, tail = divmod(self.row, LANES)

            def rows(y0: ir.Value, count: int) -> None:
                def tile(v0: ir.Value, vectors: int, valid: int = LANES) -> None:
                    self._tile(image, y0, count, arith.muli(v0, index(LANES)), vectors, held, valid)

                if full:
                    each_tile(full, min(self.tile[1], full), tile)
                if tail:
                    tile(index(full), 1, tail)

            each_tile(self.oh, min(self.tile[0], self.oh), rows)
            scf.YieldOp([])
        return images.operation

    def _held(self) -> tuple[list[list[ir.Value]], ir.Value]:
        """The taps and bias of C dividing 16: the C weights repeated across a register, the same in every one."""
        pattern = [lane % self.c for lane in range(LANES)]
        part = ir.VectorType.get([self.c], ir.F32Type.get())
        taps = [[vector.shuffle(v, v, pattern) for v in
                 (vector.load(part, self.filter, [index(i), index(j), index(0)]) for j in range(self.kw))]
                for i in range(self.kh)]  # fmt: skip
        if self.bias is None:
            return taps, zeros(self.vt)
        b = vector.load(part, self.bias, [index(0)])
        return taps, vector.shuffle(b, b, pattern)

    def _phase(self, f: ir.Value) -> tuple[list[list[ir.Value]], ir.Value]:
        """The taps and bias of the register at float f of a row, phased (`phased`): its phase's registers."""
        q = phase_of(f, self.c)
        taps = [[vector.load(self.vt, self.filter, [q, index(i), index(j), index(0)]) for j in range(self.kw)]
                for i in range(self.kh)]  # fmt: skip
        return taps, vector.load(self.vt, self.bias, [q, index(0)]) if self.bias is not None else zeros(self.vt)

    def _tile(self, image: ir.Value, y0: ir.Value, rows: int, f0: ir.Value, vectors: int,
              held: tuple[list[list[ir.Value]], ir.Value] | None, valid: int) -> None:  # fmt: skip
        """Output rows y0 .. + rows, floats f0 .. + 16 x vectors of them (the first `valid` lanes of a single
        last vector): each input vector loaded once and added into every (row, vector) output whose window holds
        it; then the activation and the stores. `held`: the taps and bias of every register, else phased."""
        mask = lanes_mask(valid, LANES)
        registers = [held or self._phase(arith.addi(f0, index(v * LANES)) if v else f0) for v in range(vectors)]
        accs = [[bias for _, bias in registers] for _ in range(rows)]
        top = arith.muli(y0, index(self.sh))
        # Input row (from the tile's first window row) -> (output row, filter row); float offset -> (vector, column).
        readers = window_readers(rows, self.sh, self.kh, self.dh)
        columns = window_readers(vectors, LANES, self.kw, self.dw * self.c)
        for a, row_readers in sorted(readers.items()):
            row = arith.addi(top, index(a)) if a else top
            for offset, column_readers in sorted(columns.items()):
                x = load(self.x, [image, row, arith.addi(f0, index(offset))], self.vt, mask)
                for r, i in row_readers:
                    for v, j in column_readers:
                        accs[r][v] = vector.fma(x, registers[v][0][i][j], accs[r][v])
        for r in range(rows):
            out = arith.addi(y0, index(r)) if r else y0
            for v in range(vectors):
                value = accs[r][v]
                if self.activation is not None:
                    [value] = yielded(self.activation, [value])
                self._store(value, image, out, arith.addi(f0, index(v * LANES)), valid, mask)

    def _store(self, value: ir.Value, image: ir.Value, row: ir.Value, f: ir.Value, valid: int,
               mask: ir.Value | None) -> None:  # fmt: skip
        """Output vector `value` at float f of output row `row`: one store, or one per pixel of its valid lanes."""
        if self.flat_y:
            store(value, self.y, [image, row, f], mask)
            return
        part = ir.VectorType.get([self.c], ir.F32Type.get())
        pixel = arith.divui(f, index(self.c))
        for k in range(valid // self.c):
            piece = vector.extract_strided_slice(part, value, [k * self.c], [self.c], [1])
            vector.store(piece, self.y, [image, row, arith.addi(pixel, index(k)) if k else pixel, index(0)])
