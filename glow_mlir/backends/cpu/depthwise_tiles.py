"""The register tiles of the CPU backend's f32 depthwise convolution kernel (depthwise_recipes.py): the rule that
picks a tile per layer and channel block (`tile_shape`), where a window over a padded input of zeros reads
values (`Interior`, the taps a tile can skip), and the pixel stride of its input buffer (`pixel_stride`)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from mlir import ir

from glow_mlir.backends.cpu.conv_recipes import LANES, REGISTERS
from glow_mlir.backends.cpu.padding import ZERO_BORDER_ATTR

# A register tile is rows x pixels x channel vectors of accumulators (`tile_shape`): at most this many, and at
# most TILE_ROWS rows and TILE_PIXELS pixels of them.
MAX_ACCUMULATORS = 16
TILE_ROWS = 4
TILE_PIXELS = 8
# Filter vectors that stay in registers across a row's tiles (loaded once per channel block and row); a larger
# filter (5x5, 7x7) is read from L1 by each tile instead, one filter row at a time (holding it, mostly spilled on
# the stack, measured 1.02-1.08x slower on ConvNeXt's and EfficientNet's 7x7 and 5x5 layers).
HELD_FILTER_VECTORS = 18
# Independent FMAs that keep this core's two FMA pipes busy through their 4-cycle latency.
FMAS_IN_FLIGHT = 8
# A tile of pixels whose windows reach into the padding of a marked input is emitted at its place, without its
# dead columns, where that skips at least this share of the row's multiply-adds (a 7x7 window on a 7x7 map reads
# zeros with a quarter of its taps along a row, on 28x28 with 6 %; `skips_columns`).
MIN_DEAD_COLUMNS = 0.1
# Bytes after which L1's set indices repeat: 64 sets of 64-byte lines (48 KB 12-way on Zen 5, Sapphire Rapids).
L1_SET_PERIOD = 4096
LINE_BYTES = 64
# The fewest of L1's sets that a channel block's vectors along a row of pixels should fall into (`pixel_stride`):
# pixels padded to spread over 32 sets or more ran 1.04-1.36x faster where they fell into 16 or fewer (5x5 stride 2
# on 56x56 of 128 channels 1.25x, of 64 1.10x; 3x3 stride 1 on 56x56 of 128 channels 1.16x, on 28x28 of 256
# 1.15x; 5x5 stride 1 on 14x14 of 384 1.12x), 1.05x where no multiple of 16 (72 channels on 56x56, 3x3 and 5x5
# stride 2); padding 32-set strides further (96 -> 112 channels) gained nothing (bench.convs --base).
MIN_PIXEL_SETS = 32
# The most bytes a padded pixel may take, over its C channels' (`pixel_stride`): 3x3 and 5x5 stride-2 layers of 24
# channels (32, 1.33x) ran 0.94-0.96x, read from memory; of 40 (48, 1.2x) 1.08x, of 100 (112) 1.12x.
MAX_PIXEL_GROWTH = 1.25
# Output rows shorter than this keep their pixels unpadded: on 7x7 maps, 5x5 and 7x7 layers of padded pixels ran
# 0.92-0.98x (640, 768, 960, 1152 channels; 3x3 ones 0.97-1.01x), whatever the sets.
MIN_PADDED_PIXELS = 14


def held_filter(vectors: int, kh: int, kw: int) -> bool:
    """Whether a KH x KW filter's vectors for `vectors` channel vectors stay in registers across a row of tiles."""
    return vectors * kh * kw <= HELD_FILTER_VECTORS


def pixel_stride(c: int, window: tuple[int, int], strides: Sequence[int], width: int) -> int:
    """The channels of each pixel of a depthwise convolution's input buffer (glow-cpu-pad-channels): C, or more
    where the kernel reads C channels of a pixel as 16-channel vectors (`DepthwiseKernel`) and a row's pixels C x
    4 bytes apart put a channel block's vectors into fewer than MIN_PIXEL_SETS of L1's sets (C a multiple of 64)
    or across cache lines (C no multiple of 16): the first multiple of 16 from C whose pixels spread over
    MIN_PIXEL_SETS sets, unless that grows a pixel beyond MAX_PIXEL_GROWTH. `width`: the output's pixels along a
    row (rows shorter than MIN_PADDED_PIXELS keep C).
    Not for the flat kernel of a 3x3 layer of unit stride along the rows, nor the copied ring of a 3x3 layer of
    unit stride whose blocks alias into 2 sets (depthwise_ring.py), which reads its own unaliased copy."""
    kh, kw = window
    if c < LANES or width < MIN_PADDED_PIXELS:
        return c
    held = held_filter(1, kh, kw)
    if held and ((c % LANES and strides[1] == 1) or (strides[0] == 1 and aliased(c, 2))):
        return c
    lines, sets = -(-c // LANES), L1_SET_PERIOD // LINE_BYTES
    while sets // math.gcd(lines, sets) < MIN_PIXEL_SETS:
        lines += 1
    return lines * LANES if lines * LANES <= MAX_PIXEL_GROWTH * c else c


def aliased(c: int, sets: int) -> bool:
    """Whether a channel block's vectors along a row of C-channel pixels (or a filter's taps) fall into at most
    `sets` of L1's (depthwise_ring.py): C x 4 bytes a multiple of L1_SET_PERIOD / sets."""
    return c * 4 % (L1_SET_PERIOD // sets) == 0


def window_readers(outputs: int, stride: int, taps: int, dilation: int) -> dict[int, list[tuple[int, int]]]:
    """Input position (from the first output's window start) -> the (output, tap) pairs that read it, for
    `outputs` outputs `stride` apart along a dim and `taps` filter taps `dilation` apart: which loaded input feeds
    which accumulators, in a register tile's rows or columns."""
    readers: dict[int, list[tuple[int, int]]] = {}
    for o in range(outputs):
        for t in range(taps):
            readers.setdefault(o * stride + t * dilation, []).append((o, t))
    return readers


@dataclasses.dataclass(frozen=True)
class Interior:
    """Where a padded input holds values (ZERO_BORDER_ATTR): rows top .. top + height - 1, columns left .. left +
    width - 1; zeros elsewhere. A tap that reads a zero adds nothing: a kernel whose filter is read by its tiles
    (5x5 and larger) runs each tile's filter rows from the first to the last that reads the interior for any of
    the tile's rows, and a tile of pixels placed at compile time leaves out its input columns in the padding.
    RepLKNet's 27x27 window on a 14x14 map reads values with 27 % of its taps, ConvNeXt's 7x7 on 7x7 with 57 %."""

    top: int
    left: int
    height: int
    width: int

    @staticmethod
    def of(op: ir.Operation) -> Interior | None:
        if ZERO_BORDER_ATTR not in op.attributes:
            return None
        return Interior(*ir.DenseI64ArrayAttr(op.attributes[ZERO_BORDER_ATTR]))

    def holds_column(self, column: int) -> bool:
        return self.left <= column < self.left + self.width


def interior_taps(first: int, outputs: int, stride: int, taps: int, dilation: int, begin: int,
                  size: int) -> tuple[int, int]:  # fmt: skip
    """[lo, hi): the taps along a dim, `dilation` apart, that read the interior [begin, begin + size) for some of
    `outputs` outputs `stride` apart whose first window starts at input position `first` (lo == hi: none)."""
    lo = max(0, -((first + (outputs - 1) * stride - begin) // dilation))
    hi = min(taps, (begin + size - 1 - first) // dilation + 1)
    return lo, max(lo, hi)


def tiles(size: int, tile: int) -> list[tuple[int, int]]:
    """(start, count) of the tiles `each_tile` emits along `size` positions."""
    return [(start, min(tile, size - start)) for start in range(0, size, tile)]


def skips_columns(ow: int, window: tuple[int, int], strides: tuple[int, int], dilations: tuple[int, int],
                  interior: Interior) -> bool:  # fmt: skip
    """Whether tiles of pixels leave out their input columns in the padding (MIN_DEAD_COLUMNS): the share of a
    row's multiply-adds that read it."""
    kw, sw, dw = window[1], strides[1], dilations[1]
    live = sum(interior.holds_column(o * sw + j * dw) for o in range(ow) for j in range(kw))
    return 1 - live / (ow * kw) >= MIN_DEAD_COLUMNS


@dataclasses.dataclass(frozen=True)
class TileShape:
    """A register tile: `rows` output rows x `pixels` output pixels x `vectors` channel vectors of accumulators."""

    rows: int
    pixels: int
    vectors: int


def tile_shape(out: tuple[int, int], vectors: int, window: tuple[int, int], strides: tuple[int, int],
               dilations: tuple[int, int], interior: Interior | None = None) -> TileShape:  # fmt: skip
    """The register tile of `vectors` channel vectors that loads the fewest vectors per multiply-add over the
    whole `out` map (edge tiles included), among those within MAX_ACCUMULATORS, TILE_ROWS and TILE_PIXELS whose
    accumulators, held filter and loaded input fit in REGISTERS; on ties the one with fewer accumulators.

    With a held filter each input vector a tile reads is loaded once and feeds every accumulator whose window
    holds it: a tile of R rows and P pixels loads ((R - 1) * SH + (KH - 1) * DH + 1) x ((P - 1) * SW + (KW - 1) *
    DW + 1) input vectors per channel vector for R x P x KH x KW multiply-adds, 3 x 6 for 36 at 1 x 4 (a 3x3
    stride-1 window), 4 x 4 for 36 at 2 x 2. L1-resident FMAs with a load in 1 of 2 ran at 185 GFLOP/s, in 1 of 4
    at 207 (this VM's peak 221-240). A filter read by the tile comes one filter row at a time (KW vectors live),
    and each output row's input row is loaded once per filter row: R x KH x columns, and KH x KW filter vectors
    shared by the R x P outputs.

    A filter read by the tile from a marked input (`interior`) counts the work the tile does, loads and
    multiply-adds, at each place (`skipping_work`): tiles of one row read zeros with no filter row of the
    interior's, those of four with up to three."""
    (oh, ow), (kh, kw), (sh, sw), (dh, dw) = out, window, strides, dilations
    held = held_filter(vectors, kh, kw)
    # Filter vectors live per channel vector: all taps when held, else a filter row; a row that would leave too
    # few registers for a full tile (MAX_ACCUMULATORS) streams, a tap's vector at a time, each loaded just before
    # its FMAs (LLVM sinks the row's loads to their uses). Holding a 29-wide row left one accumulator: RepLKNet's
    # 29x29 layer on 28x28 ran 1 x 1 tiles at 11 % of peak; QuartzNet's 1 x 33 to 1 x 87 rows stream too.
    filter_live = kh * kw if held else kw
    if not held and vectors * (kw + 1) + 1 + MAX_ACCUMULATORS > REGISTERS:
        filter_live = 1

    def spans(size: int, tile: int) -> list[tuple[int, int]]:
        """(tile size, count) of the tiles along a dimension of `size`."""
        return [(t, k) for t, k in ((tile, size // tile), (size % tile, 1)) if t and k]

    # Whether a filter read by the tile skips its columns on a marked input's padding: the same for every tile.
    skip_columns = interior is not None and not held and skips_columns(ow, window, strides, dilations, interior)

    best: tuple[tuple[float, int], TileShape] | None = None
    for rows in range(1, min(TILE_ROWS, oh) + 1):
        for pixels in range(1, min(TILE_PIXELS, ow) + 1):
            accumulators = rows * pixels * vectors
            live = accumulators + vectors * filter_live + vectors + 1
            if accumulators > MAX_ACCUMULATORS or live > REGISTERS:
                continue

            def tile_loads(r: int, p: int) -> int:
                columns = (p - 1) * sw + (kw - 1) * dw + 1
                if held:
                    return ((r - 1) * sh + (kh - 1) * dh + 1) * columns
                return r * kh * columns + kh * kw

            if interior is not None and not held:
                work = skipping_work(out, (rows, pixels), vectors, window, strides, dilations, interior,
                                     skip_columns)  # fmt: skip
            else:
                work = sum(rk * pk * tile_loads(r, p) for r, rk in spans(oh, rows) for p, pk in spans(ow, pixels))
            score = (work / (oh * ow * kh * kw), accumulators)
            if best is None or score < best[0]:
                best = (score, TileShape(rows, pixels, vectors))
    assert best is not None
    return best[1]


def skipping_work(out: tuple[int, int], tile: tuple[int, int], vectors: int, window: tuple[int, int],
                  strides: tuple[int, int], dilations: tuple[int, int], interior: Interior,
                  skip_columns: bool) -> float:  # fmt: skip
    """The vectors loaded plus the multiply-adds of a depthwise convolution over the `out` map whose filter rows
    are read by tiles of `tile` (rows, pixels) from a marked input: per tile, its filter rows that read the
    interior (`interior_taps`), per filter row the row of filter vectors and each output row's input columns,
    those in the padding left out where `skip_columns` (`skips_columns`; where depthwise_recipes places tiles at
    compile time: taken as everywhere). A tile of fewer accumulators than FMAS_IN_FLIGHT waits on its FMAs'
    latency: its multiply-adds count as many times more (a 7x7 window on 7x7 ran 1.15x slower in tiles of 1 x 7
    pixels than of 2 x 7, which read 13 % more zeros)."""
    (oh, ow), (kh, kw), (sh, sw), (dh, dw) = out, window, strides, dilations
    # Per tile of pixels: its pixels, input columns loaded and multiply-adds, per output row and filter row.
    row_tiles = []
    for x0, p in tiles(ow, tile[1]):
        live = [len(pairs) for column, pairs in window_readers(p, sw, kw, dw).items()
                if not skip_columns or interior.holds_column(x0 * sw + column)]  # fmt: skip
        row_tiles.append((p, len(live), sum(live)))
    work = 0.0
    for y0, r in tiles(oh, tile[0]):
        lo, hi = interior_taps(y0 * sh, r, sh, kh, dh, interior.top, interior.height)
        for p, loads, fmas in row_tiles:
            waits = max(1.0, FMAS_IN_FLIGHT / (r * p * vectors))
            work += (hi - lo) * (r * (loads + fmas * waits) + kw)
    return work
