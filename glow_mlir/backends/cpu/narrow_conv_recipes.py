"""The CPU backend's kernel for convolutions with fewer output channels than a vector has lanes, for
glow-cpu-schedule (schedule.py): the recipe of a `linalg.conv_2d_nchw_fchw` (codegen/nn.py's NCHW convolution,
which glow-cpu-layout leaves NCHW for such layers: `keeps_nchw`), replaced by vector code written here.

The NHWC kernels vectorize along the output channels: a layer of 3 outputs (an image generator's or a style
transfer network's last convolution to RGB, a vocoder's to one waveform) fills 3 of 16 lanes, and the direct
schedule's channel tile for an odd count is one lane, scalar code (a style transfer network's 9x9 16 -> 3 layer on
128x128 ran at 16 GFLOP/s, 60 % of the model's time). NCHW, a row of output pixels is contiguous, and so is the
row of input pixels that each tap reads at unit horizontal stride: the register tile is R output rows by V
vectors of 16 pixels by all F output channels, each step (input channel c, tap kh, kw) loads the R x V input
vectors once and each of the F weights w[f, c, kh, kw] as a broadcast, for R x V x F multiply-adds. The tile
loads the fewest vectors per multiply-add within MAX_ACCUMULATORS (`register_tile`).

The accumulators start from the output buffer, which holds the bias (the NCHW convolution's lowering writes it
first), and the activation, a linalg.generic of its own, runs after the kernel: for these layers both are passes
over F channels only, next to a convolution of C x KH x KW multiply-adds per output. A row's last vector is
masked when the row is no multiple of 16 pixels; the input comes padded (glow-lower pads the convolution).
"""

from __future__ import annotations

import dataclasses
import math

from mlir import ir
from mlir.dialects import arith, memref, scf, vector

from glow_mlir.backends.cpu.conv_recipes import LANES, dense_window, static_f32, window_of
from glow_mlir.backends.cpu.depthwise_recipes import each_tile, for_loop
from glow_mlir.backends.cpu.recipes import Recipe, recipe, static_shape
from glow_mlir.backends.cpu.vector_body import lanes_mask, load, store
from glow_mlir.codegen.builders import index

# The register tile's accumulators (R x V x F), and with the F broadcast weights of a tap and its input vector
# within AVX-512's 32 registers (`register_tile`).
MAX_ACCUMULATORS = 24
REGISTERS = 32
# The most outputs taken from a Winograd kernel: one process, this kernel against the NHWC form (Winograd for a
# 3x3 constant filter) on 3x3 layers of 64 channels on 56x56 and 256 on 28x28: 8 outputs 1.20x / 1.82x, 12
# outputs 0.71x / 1.08x; other windows (5x5, 9x9) 1.78-16x up to 12 outputs.
WINOGRAD_OUTPUTS = 8
# At most this many output rows and vectors of a row per tile.
TILE_ROWS = 4
TILE_VECTORS = 6


def keeps_nchw(output_channels: int, group: int, out_width: int, window: tuple[int, int], stride_w: int,
               winograd: bool) -> bool:  # fmt: skip
    """Whether glow-cpu-layout leaves a convolution NCHW for this module's kernel: one group of fewer output
    channels than a vector's lanes (at most WINOGRAD_OUTPUTS where the NHWC form would be a Winograd kernel: a
    constant 3x3 filter of unit strides and dilations), unit horizontal stride, rows of at least one vector of
    pixels, and a window of more than one tap (a 1x1 convolution is a product per pixel that the NHWC pointwise
    kernel runs, and its input's transpose would cost as much as the product)."""
    most = WINOGRAD_OUTPUTS if winograd else LANES - 1
    return group == 1 and output_channels <= most and stride_w == 1 and out_width >= LANES and math.prod(window) > 1


@dataclasses.dataclass(frozen=True)
class TileShape:
    """R output rows by V vectors of 16 pixels (by all F output channels)."""

    rows: int
    vectors: int


def row_tiles(width: int, vectors: int) -> list[tuple[int, int, int]]:
    """(vectors, lanes of the last one, count) of the tiles along an output row of `width` pixels, at most
    `vectors` vectors each: a loop of tiles of whole vectors, then one of the whole vectors left and the row's
    last, partial vector (masked)."""
    full, tail = divmod(width, LANES)
    tiles = [(vectors, LANES, full // vectors)] if full >= vectors else []
    rest = full % vectors if full >= vectors else full
    if rest or tail:
        tiles.append((rest + (1 if tail else 0), tail or LANES, 1))
    return tiles


def register_tile(out: tuple[int, int], filters: int) -> TileShape:
    """The tile of at most MAX_ACCUMULATORS accumulators that loads the fewest vectors per multiply-add over the
    whole [OH, OW] output (edge tiles counted, `row_tiles`); on ties the one with fewer accumulators.
    A step loads R x V input vectors and F broadcasts for R x V x F multiply-adds."""
    oh, ow = out
    best: tuple[tuple[float, int], TileShape] | None = None
    for rows in range(1, min(TILE_ROWS, oh) + 1):
        for vectors in range(1, min(TILE_VECTORS, -(-ow // LANES)) + 1):
            accumulators = rows * vectors * filters
            if accumulators > MAX_ACCUMULATORS or accumulators + filters + 1 > REGISTERS:
                continue
            loads = 0.0
            for r, rk in ((rows, oh // rows), (oh % rows, 1)):
                for v, _, vk in row_tiles(ow, vectors):
                    if r and rk:
                        loads += rk * vk * (r * v + filters)
            score = (loads / (oh * ow * filters), rows * vectors)
            if best is None or score < best[0]:
                best = (score, TileShape(rows, vectors))
    assert best is not None
    return best[1]


@recipe("linalg.conv_2d_nchw_fchw")
def narrow_conv_recipe(op: ir.Operation) -> Recipe | None:
    """An NCHW convolution to fewer than 16 channels of unit horizontal stride as one vector kernel (module
    docstring); others (a pipeline without glow-cpu-layout's, non-static or non-f32 operands) are left to
    glow-to-llvm's loops."""
    window = dense_window(window_of(op))
    if not static_f32(op) or window["strides"][1] != 1 or static_shape(op.operands[2])[1] >= LANES:
        return None
    root = NarrowConv(*op.operands, window["strides"][0], window["dilations"]).emit()
    op.erase()
    return Recipe.of(root, lambda _: None)


class NarrowConv:
    """The buffers, window and register tile of one NCHW convolution, and the emitter of its loops."""

    def __init__(self, x: ir.Value, filter_: ir.Value, y: ir.Value, stride_h: int, dilations: list[int]) -> None:
        self.x, self.filter, self.y = x, filter_, y
        self.n, self.f, self.oh, self.ow = static_shape(y)
        _, self.c, self.kh, self.kw = static_shape(filter_)
        self.sh = stride_h
        self.dh, self.dw = dilations
        self.tile = register_tile((self.oh, self.ow), self.f)
        self.vt = ir.VectorType.get([LANES], ir.F32Type.get())

    def emit(self) -> ir.Operation:
        """Per image, tiles of output rows, and in each the row's tiles of pixel vectors (`row_tiles`)."""
        images = scf.ForOp(index(0), index(self.n), index(1))
        with ir.InsertionPoint(images.body):
            image = images.induction_variable

            def rows(y0: ir.Value, count: int) -> None:
                start = 0
                for vectors, valid, tiles in row_tiles(self.ow, self.tile.vectors):
                    step = vectors * LANES
                    if tiles == 1:
                        self._tile(image, y0, count, index(start), vectors, valid)
                    else:
                        with for_loop(start, start + tiles * step, step) as x0:
                            self._tile(image, y0, count, x0, vectors, valid)
                    start += tiles * step

            each_tile(self.oh, self.tile.rows, rows)
            scf.YieldOp([])
        return images.operation

    def _tile(self, image: ir.Value, y0: ir.Value, rows: int, x0: ir.Value, vectors: int, valid: int) -> None:
        """Output rows y0 .. + rows, pixels x0 .. + 16 x vectors (of the last vector the first `valid` lanes),
        every output channel: the accumulators from the output, a loop over the input channels and filter rows
        carrying them, the filter row's taps unrolled; then one store each."""
        last = lanes_mask(valid, LANES)
        masks = [last if v == vectors - 1 else None for v in range(vectors)]
        places = [(f, r, v) for f in range(self.f) for r in range(rows) for v in range(vectors)]

        def at(f: int, r: int, v: int) -> list[ir.Value]:
            row = arith.addi(y0, index(r)) if r else y0
            column = arith.addi(x0, index(v * LANES)) if v else x0
            return [image, index(f), row, column]

        accs = [load(self.y, at(*p), self.vt, masks[p[2]]) for p in places]
        channels = scf.ForOp(index(0), index(self.c), index(1), accs)
        with ir.InsertionPoint(channels.body):
            c = channels.induction_variable
            taps = scf.ForOp(index(0), index(self.kh), index(1), list(channels.inner_iter_args))
            with ir.InsertionPoint(taps.body):
                i = taps.induction_variable
                carried = dict(zip(places, taps.inner_iter_args, strict=True))
                top = arith.addi(arith.muli(y0, index(self.sh)), arith.muli(i, index(self.dh)))
                for j in range(self.kw):
                    weights = [
                        vector.broadcast(self.vt, memref.load(self.filter, [index(f), c, i, index(j)]))
                        for f in range(self.f)
                    ]
                    for r in range(rows):
                        row = arith.addi(top, index(r * self.sh)) if r else top
                        for v in range(vectors):
                            column = arith.addi(x0, index(v * LANES + j * self.dw))
                            x = load(self.x, [image, c, row, column], self.vt, masks[v])
                            for f in range(self.f):
                                carried[f, r, v] = vector.fma(x, weights[f], carried[f, r, v])
                scf.YieldOp([carried[p] for p in places])
            scf.YieldOp(list(taps.results))
        for p, value in zip(places, channels.results, strict=True):
            store(value, self.y, at(*p), masks[p[2]])
