"""The CPU backend's f32 1x1 (pointwise) convolution kernel, for glow-cpu-schedule (schedule.py): the recipe of
a `linalg.conv_2d_nhwc_hwcf` with a 1x1 constant filter, which replaces the op with vector code written here (no
transform steps), with the bias and activation of a CPU convolution in its registers.

A 1x1 convolution is a matrix product over the output pixels: y[p, f] = sum_c x[p, c] w[c, f], each pixel's
channels contiguous in NHWC. The register tile is `pixels` output pixels by `vectors` 16-channel vectors of
accumulators (`register_tile`), started from the bias; each step over the input channels loads the tile's
filter vectors and one broadcast per pixel, then the activation (its generic's body cloned on vectors) runs on
the accumulators before their one store. Unlike the direct schedule of conv_recipes.py, whose tiles must divide
the output row (a row of 7 pixels got 7 x 32 or 1 x 64), pixels beyond the last full tile are a smaller tile
of their own and channels beyond the last full block one narrower block, its last vector masked; where the
pixels of the map are evenly spaced in memory (identity layout, stride 1) the tiles run over all of them as one
row, so that a 7x7 map is 49 pixels, not 7 rows of 7.

The filter is packed at compile time into one [C, 16 x vectors] slice per channel block, read in order. Which
operand streams and which is re-read from cache follows their sizes (`PointwiseKernel.channels_outer`): the larger
one is read once, in memory order, and the smaller one once per tile of the other. With the channel blocks
outermost and a filter that comes from beyond L2 on every run (the model's weights outgrow it), each tile also
prefetches a part of the next block's slice, so that it is in cache when that block starts.

docs/OPTIMIZATIONS.md ("Pointwise convolutions") has the measurements.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np
from mlir import ir
from mlir.dialects import arith, memref, scf, vector

from glow_mlir.backends.cpu.conv_recipes import (
    L2_INPUT_BYTES,
    LANES,
    REGISTERS,
    dense_window,
    divisor_at_most,
    epilogue,
    static_f32,
    window_of,
)
from glow_mlir.backends.cpu.recipes import (
    L2_BYTES,
    Kernel,
    Recipe,
    collapse_dims,
    constant_data,
    model_weight_bytes,
    packed_global,
    recipe,
    static_shape,
)
from glow_mlir.backends.cpu.vector_body import lanes_mask, load, store, yielded, zeros
from glow_mlir.codegen.builders import has_identity_layout, index

# A tile's accumulators, its filter vectors and the broadcast input share the REGISTERS (LLVM 22 keeps the
# broadcast in a register rather than folding it into the FMAs: 7 x 4 accumulators spilled one filter vector per
# step and ran a 128 -> 512 layer on 28x28 3 times slower than 6 x 4).
# The most pixels of a register tile (14 x 2 vectors: 28 accumulators).
MAX_PIXELS = 14
# Two FMA ports with 4 cycles' latency: a step of fewer than 8 FMAs waits on its accumulators.
FMA_PORTS, FMA_LATENCY, LOAD_PORTS = 2, 4, 2
# Floats per cache line.
LINE = 16


def is_pointwise(op: ir.Operation) -> bool:
    """A convolution this module's kernel runs: a 1x1 filter that is a constant, f32 operands of static shape."""
    if not static_f32(op):
        return False
    kh, kw = static_shape(op.operands[1])[:2]
    return (kh, kw) == (1, 1) and constant_data(op.operands[1]) is not None


@recipe("linalg.conv_2d_nhwc_hwcf", when=is_pointwise)
def pointwise_recipe(op: ir.Operation) -> Recipe:
    """A 1x1 convolution with the bias and activation of a CPU convolution, as vector kernels (module docstring)."""
    bias_op, activation_op = epilogue(op)
    x, filter_, y = op.operands
    weights = constant_data(filter_)
    assert weights is not None
    bias = bias_op.operands[0] if bias_op is not None else None
    strides = dense_window(window_of(op))["strides"]
    kernel = PointwiseKernel(op, x, np.asarray(weights[0, 0]), bias, y, strides, activation_op)
    roots = kernel.emit()
    for done in (activation_op, op, bias_op):
        if done is not None:
            done.erase()
    return Recipe(tuple(Kernel(root, lambda _: None) for root in roots))


def step_cycles(pixels: int, vectors: int) -> float:
    """Cycles of one input channel's step of a pixels x vectors tile: its FMAs on the FMA ports, its loads (the
    filter vectors and a broadcast per pixel) on the load ports, or the FMA latency, whichever is longest."""
    return max(pixels * vectors / FMA_PORTS, (pixels + vectors) / LOAD_PORTS, FMA_LATENCY)


def row_tile(row: int, most: int) -> int:
    """The pixels of a register tile along a row of `row` pixels, at most `most`: the row split as evenly as
    possible, so that the tile left at its end is not a sliver."""
    tiles = -(-row // most)
    return -(-row // tiles)


def channel_blocks(f: int, vectors: int) -> list[tuple[int, int, int]]:
    """(first channel, blocks, vectors per block) covering `f` channels: blocks of `vectors` registers, then one
    block of the channels left (its last vector partial when 16 does not divide them)."""
    step = LANES * vectors
    blocks = [(0, f // step, vectors)] if f >= step else []
    rest = f % step
    if rest:
        blocks.append((f - rest, 1, -(-rest // LANES)))
    return blocks


def register_tile(row: int, f: int, channels_outer: bool) -> tuple[int, int]:
    """(pixels, vectors) of the register tile for rows of `row` pixels and `f` output channels: the pair whose
    steps cost the fewest cycles per pixel and channel (`step_cycles`, over the row's tiles and the channel
    blocks with their narrower last one). Ties (6 x 4 and 14 x 2 fill the FMA ports alike) go to the more
    pixels with the channel blocks outermost, where each tile re-reads its block's filter slice from L2 (14 x 2
    reads half the filter bytes per FMA: ResNet-50's 1x1 layers on 7x7 maps 1.09x, 1024 -> 2048 stride 2 1.10x),
    else to the fewer loads per FMA (6 x 4: its 1x1 layers on 56x56 1.05-1.09x)."""
    best: tuple[float, float, int, int] | None = None
    for vectors in (4, 2, 1):
        if vectors > 1 and f < LANES * vectors:
            continue
        pixels = row_tile(row, min(MAX_PIXELS, (REGISTERS - vectors - 1) // vectors))
        tiles = [pixels] * (row // pixels) + ([row % pixels] if row % pixels else [])
        cycles = sum(count * step_cycles(t, width) for _, count, width in channel_blocks(f, vectors) for t in tiles)
        tie = -pixels if channels_outer else (pixels + vectors) / (pixels * vectors)
        score = (cycles / (row * f), tie, pixels, vectors)
        if best is None or score[:2] < best[:2]:
            best = score
    assert best is not None
    return best[2], best[3]


def chunk_images(n: int, image_bytes: int) -> int:
    """The images per chunk of a batch of `n` whose input (`image_bytes` each) is re-read from cache once per
    channel block: as many as fit L2_INPUT_BYTES (all of them if they do; at least one), dividing n."""
    return divisor_at_most(n, max(1, L2_INPUT_BYTES // image_bytes))


@dataclasses.dataclass(frozen=True)
class _Block:
    """A group of channel blocks: `count` blocks of `vectors` registers from channel `start`, the last vector of
    each with `lanes` channels, their packed slices ([C, 16 x vectors] each) from float `offset` of the packed
    filter."""

    start: int
    count: int
    vectors: int
    lanes: int
    offset: int


# A tile's emitter: (its pixels' addressing, its pixel count, its index among the map's tiles or None).
_TileFn = Callable[["_At", int, ir.Value | None], None]


class PointwiseKernel:
    """The buffers, register tile and loop order of one 1x1 convolution, and the emitter of its kernels."""

    def __init__(self, op: ir.Operation, x: ir.Value, weights: np.ndarray, bias: ir.Value | None, y: ir.Value,
                 strides: list[int], activation: ir.Operation | None) -> None:  # fmt: skip
        self.bias, self.activation = bias, activation
        self.n, self.oh, self.ow, self.f = static_shape(y)
        self.c = weights.shape[0]
        self.sh, self.sw = strides
        # The larger operand streams once, the smaller one is re-read from cache once per tile of the other.
        self.channels_outer = weights.nbytes >= math.prod(static_shape(x)) * 4
        # The pixels of the whole map as one row where they are evenly spaced in both buffers.
        self.collapsed = list(strides) == [1, 1] and even_pixels(x) and even_pixels(y)
        if self.collapsed:
            # NHWC as [N * H * W, C].
            self.x, self.y = (collapse_dims(v, [[0, 1, 2], [3]]) for v in (x, y))
            self.rows, self.row = 1, self.n * self.oh * self.ow
        else:
            self.x, self.y = x, y
            self.rows, self.row = self.n * self.oh, self.ow
        # With the channel blocks outermost, each block re-reads the input: where it outgrows L2 (a batch), the
        # images run in chunks whose input stays there, each chunk streaming the filter once.
        self.chunks = self.n // chunk_images(self.n, math.prod(static_shape(x)[1:]) * 4) if self.channels_outer else 1
        if self.chunks > 1:
            if self.collapsed:
                self.row //= self.chunks
            else:
                self.rows //= self.chunks
        self.pixels, self.vectors = register_tile(self.row, self.f, self.channels_outer)
        blocks, offset = [], 0
        for start, count, vectors in channel_blocks(self.f, self.vectors):
            lanes = min(LANES, self.f - start - (count * vectors - 1) * LANES) if count == 1 else LANES
            blocks.append(_Block(start, count, vectors, lanes, offset))
            offset += count * self.c * LANES * vectors
        self.blocks = blocks
        # Packed straight into one array: a zeroed array per block and their concatenation were two more fresh
        # copies of the filter (a GB of weights costs seconds of page faults per copy).
        data = np.zeros(offset, np.float32)
        for block in blocks:
            width = LANES * block.vectors
            part = data[block.offset : block.offset + block.count * self.c * width].reshape(block.count, self.c, width)
            end = block.start + block.count * width
            if end <= self.f:
                # Whole blocks: one copy of the columns regrouped [block, C, width] (a copy per block was 40
                # strided numpy calls for a 2560 -> 1280 layer).
                part[...] = weights[:, block.start : end].reshape(self.c, block.count, width).transpose(1, 0, 2)
                continue
            for b in range(block.count):
                chunk = weights[:, block.start + b * width : min(self.f, block.start + (b + 1) * width)]
                part[b, :, : chunk.shape[1]] = chunk
        self.packed_size = data.size
        self.filter = packed_global(op, data, f"__glow_packed_pointwise_{self.c}x{self.f}")
        self.prefetch = self.channels_outer and model_weight_bytes(op) > L2_BYTES
        f32 = ir.F32Type.get()
        self.vector_type = ir.VectorType.get([LANES], f32)

    def emit(self) -> list[ir.Operation]:
        """The kernels' root loops, built at the insertion point: with the channel blocks outermost, one per
        group of blocks (over its blocks, then every pixel tile); else one over the rows (collapsed: the full
        tiles, and one for the last tile) with every channel block inside."""
        roots = []
        if self.channels_outer:
            for block in self.blocks:
                chunks = scf.ForOp(index(0), index(self.chunks), index(1))
                with ir.InsertionPoint(chunks.body):
                    loop = scf.ForOp(index(0), index(block.count), index(1))
                    with ir.InsertionPoint(loop.body):
                        self._tiles(chunks.induction_variable,
                                    lambda at, pixels, tile, block=block, b=loop.induction_variable:
                                    self._tile(at, pixels, block, b, tile))  # fmt: skip
                        scf.YieldOp([])
                    scf.YieldOp([])
                roots.append(chunks.operation)
            return roots
        full = self.row // self.pixels
        if self.collapsed:
            segments = [(full, self.pixels, 0)] if full else []
            if self.row % self.pixels:
                segments.append((1, self.row % self.pixels, full * self.pixels))
            for count, pixels, first in segments:
                loop = scf.ForOp(index(0), index(count), index(1))
                with ir.InsertionPoint(loop.body):
                    p0 = arith.addi(arith.muli(loop.induction_variable, index(pixels)), index(first))
                    self._all_blocks(self._at(None, p0), pixels)
                    scf.YieldOp([])
                roots.append(loop.operation)
            return roots
        loop = scf.ForOp(index(0), index(self.rows), index(1))
        with ir.InsertionPoint(loop.body):
            row = loop.induction_variable
            self._row_tiles(row, lambda at, pixels, _: self._all_blocks(at, pixels))
            scf.YieldOp([])
        return [loop.operation]

    def _all_blocks(self, at: _At, pixels: int) -> None:
        """Every channel block of the pixels at `at`."""
        for block in self.blocks:
            loop = scf.ForOp(index(0), index(block.count), index(1))
            with ir.InsertionPoint(loop.body):
                self._tile(at, pixels, block, loop.induction_variable, None)
                scf.YieldOp([])

    def _tiles(self, chunk: ir.Value, tile: _TileFn) -> None:
        """`tile(at, pixels, index)` for every pixel tile of chunk `chunk` of the map, `index` counting them
        from 0."""
        if self.collapsed:
            self._row_tiles(None, tile, arith.muli(chunk, index(self.row)))
            return
        loop = scf.ForOp(index(0), index(self.rows), index(1))
        with ir.InsertionPoint(loop.body):
            local = loop.induction_variable
            self._row_tiles(arith.addi(arith.muli(chunk, index(self.rows)), local), tile, None, local)
            scf.YieldOp([])

    def _row_tiles(self, row: ir.Value | None, tile: _TileFn, start: ir.Value | None = None,
                   local: ir.Value | None = None) -> None:  # fmt: skip
        """`tile(at, pixels, index)` for the tiles of one row (None: the collapsed map, from pixel `start`): a loop
        of full tiles, then the smaller last one; `index` counts from the chunk's first tile (`local`: the row
        within the chunk)."""
        full = self.row // self.pixels
        per_row = full + (1 if self.row % self.pixels else 0)
        first = arith.muli(local, index(per_row)) if local is not None else index(0)

        def at(x0: ir.Value) -> _At:
            return self._at(row, x0 if start is None else arith.addi(start, x0))

        if full:
            loop = scf.ForOp(index(0), index(full), index(1))
            with ir.InsertionPoint(loop.body):
                t = loop.induction_variable
                tile(at(arith.muli(t, index(self.pixels))), self.pixels, arith.addi(first, t))
                scf.YieldOp([])
        if self.row % self.pixels:
            tile(at(index(full * self.pixels)), self.row % self.pixels, arith.addi(first, index(full)))

    def _at(self, row: ir.Value | None, x0: ir.Value) -> _At:
        """The addressing of the pixels of `row` (None: the collapsed map) from pixel x0."""
        if row is None:
            return _At(self, None, None, x0)
        image, y = arith.divui(row, index(self.oh)), arith.remui(row, index(self.oh))
        return _At(self, image, y, x0)

    def _tile(self, at: _At, pixels: int, block: _Block, b: ir.Value, tile: ir.Value | None) -> None:
        """The register tile of `pixels` pixels at `at` and block `b` of group `block`: the accumulators from the
        bias, a loop over the input channels, the activation, one store per pixel and vector. `tile` (the tile's
        index among the block's, with the channel blocks outermost) says which part of the next block's slice
        it prefetches."""
        vt = self.vector_type
        mask = lanes_mask(block.lanes, LANES)
        masks = [mask if v == block.vectors - 1 else None for v in range(block.vectors)]
        width = LANES * block.vectors
        channel0 = arith.addi(arith.muli(b, index(width)), index(block.start))
        channels = [arith.addi(channel0, index(v * LANES)) for v in range(block.vectors)]
        slice_floats = self.c * width
        base = arith.addi(arith.muli(b, index(slice_floats)), index(block.offset))
        if self.bias is not None:
            start = [load(self.bias, [ch], vt, m) for ch, m in zip(channels, masks, strict=True)]
        else:
            start = [zeros(vt)] * block.vectors
        accs = [acc for _ in range(pixels) for acc in start]
        prefetches = self._prefetches(block, b, tile)
        loop = scf.ForOp(index(0), index(self.c), index(1), accs)
        with ir.InsertionPoint(loop.body):
            c = loop.induction_variable
            row0 = arith.addi(base, arith.muli(c, index(width)))
            filters = [vector.load(vt, self.filter, [arith.addi(row0, index(v * LANES))]) for v in range(block.vectors)]
            carried = list(loop.inner_iter_args)
            out = []
            for p in range(pixels):
                value = vector.broadcast(vt, memref.load(self.x, at.input(p, c)))
                out += [vector.fma(value, w, carried[p * block.vectors + v]) for v, w in enumerate(filters)]
            for line in prefetches:
                ahead = arith.minui(arith.addi(line, arith.muli(c, index(LINE))), index(self.packed_size - 1))
                memref.PrefetchOp(self.filter, [ahead], False, 2, True)
            scf.YieldOp(out)
        results = list(loop.results)
        for p in range(pixels):
            for v in range(block.vectors):
                value = results[p * block.vectors + v]
                if self.activation is not None:
                    [value] = yielded(self.activation, [value])
                store(value, self.y, at.output(p, channels[v]), masks[v])

    def _prefetches(self, block: _Block, b: ir.Value, tile: ir.Value | None) -> list[ir.Value]:
        """The float of the next block's slice that this tile prefetches at channel 0, one per part it takes
        (the next line of each at every later channel): the slice's `vectors` x C lines split into `vectors`
        contiguous parts of C lines, tile t taking part min(t, vectors - 1) (several parts each when there are
        fewer tiles than vectors). None without prefetching, or with the pixel tiles outermost."""
        if not self.prefetch or tile is None:
            return []
        tiles = self.rows * -(-self.row // self.pixels)
        per_tile = -(-block.vectors // tiles)
        width = LANES * block.vectors
        next_slice = arith.addi(arith.muli(arith.addi(b, index(1)), index(self.c * width)), index(block.offset))
        lines = []
        for j in range(per_tile):
            part = arith.minui(arith.addi(arith.muli(tile, index(per_tile)), index(j)), index(block.vectors - 1))
            # Part k of the slice: its lines k * C .. (k + 1) * C - 1, in memory order.
            lines.append(arith.addi(next_slice, arith.muli(part, index(self.c * LINE))))
        return lines


@dataclasses.dataclass(frozen=True)
class _At:
    """The addressing of a tile's pixels: pixel x0 + p of output row y of image `image` (None: pixel x0 + p of the
    collapsed [pixels, channels] views)."""

    kernel: PointwiseKernel
    image: ir.Value | None
    y: ir.Value | None
    x0: ir.Value

    def input(self, p: int, c: ir.Value) -> list[ir.Value]:
        k = self.kernel
        x = arith.addi(self.x0, index(p))
        if self.image is None:
            return [x, c]
        assert self.y is not None
        return [self.image, arith.muli(self.y, index(k.sh)), arith.muli(x, index(k.sw)), c]

    def output(self, p: int, channel: ir.Value) -> list[ir.Value]:
        x = arith.addi(self.x0, index(p))
        if self.image is None:
            return [x, channel]
        assert self.y is not None
        return [self.image, self.y, x, channel]


def even_pixels(value: ir.Value) -> bool:
    """Whether NHWC memref `value`'s pixels are evenly spaced (a [N * H * W, C] view of it exists)."""
    if has_identity_layout(value):
        return True
    n, h, w, _ = static_shape(value)
    strides, _ = ir.MemRefType(value.type).get_strides_and_offset()
    return strides[1] == w * strides[2] and (n == 1 or strides[0] == h * strides[1])

