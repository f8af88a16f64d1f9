"""Grouped 1x1 convolutions of an even number of groups whose output channels fill registers poorly, as registers
across sets of groups: part of grouped_recipes.py's recipe.

The pointwise kernel (pointwise_recipes.py) holds 16 of one group's output channels in a register and multiplies
them by one broadcast input channel; with 12 outputs per group (ShuffleNet v1 g8) a quarter of its lanes is empty.
The form along the pixels (grouped_pointwise.py) fills them, but transposes 16 x 16 blocks of each group's input
across 128-bit lanes for every 16 x FG lane-multiply-adds. Here the groups go in sets of S = 4 (or 2, where 4 does
not divide G), the floats of a 128-bit lane (or half of one): a register holds 16 / S outputs of each of the set's
groups, its lane l one of group l mod S, and the multiply-add's other operand is the set's S inputs of one input
channel broadcast to every lane-quarter (vbroadcastf32x4), so every lane is busy:

- per pixel, each block of 16 input channels of the set's S groups (S rows) is interleaved within 128-bit lanes
  (`IN_ROUNDS`: unpcklps / unpckhps, then the 64-bit ones) into an L1 scratch block of S-float chunks, one per
  input channel, in the order the network leaves them; the packed filter takes its rows in that order
  (`Network.chunk_channels`), so no shuffle crosses a 128-bit lane;
- per chunk, the weight registers (at most MAX_REGISTERS: FG <= 24 for sets of 4) multiply the broadcast of each
  pixel's chunk into P x registers accumulators (from the bias); a tile's loop over the blocks interleaves the
  next tile's input into a second buffer, so its shuffles and stores run beside the multiply-adds (66 % of peak
  on ShuffleNet v1 g8's layer, 61 % with the tile's own input interleaved first) and no load reads a store just
  made (48 % when each block was interleaved just before its products);
- after the activation, each S registers of a pixel (16 outputs of every group of the set) go through the rounds
  inverted into S rows of the output, compacted where a row has lanes of absent registers (`Network.rows`).

A helper call runs a block of pixels, its loop over the sets inside (the loop over blocks is the kernel's,
glow-cpu-parallelize splits it). docs/OPTIMIZATIONS.md ("Narrow groups across the groups") has the measurements.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from mlir import ir
from mlir.dialects import arith, func, memref, scf, vector

from glow_mlir.backends.cpu.conv_recipes import LANES
from glow_mlir.backends.cpu.depthwise_recipes import each_tile, for_loop, last_apart
from glow_mlir.backends.cpu.outline import define_helper
from glow_mlir.backends.cpu.pointwise_recipes import even_pixels
from glow_mlir.backends.cpu.recipes import block_at, collapse_dims, packed_global, static_shape
from glow_mlir.backends.cpu.vector_body import ZIPS, in_lanes, lanes_mask, load, store, yielded, zeros
from glow_mlir.codegen.builders import index

# The most accumulator registers of a tile (pixels x a pixel's registers), leaving registers for the weights and
# a broadcast.
MAX_ACCUMULATORS = 18
# The most registers of a pixel's outputs of a set (weights held across the tile's pixels): wider groups took
# passes over the interleaved input, 0.87x the form along the pixels on 4 groups of 136 -> 34 (`bench.convs`).
MAX_REGISTERS = 6
# The most bytes of a set's packed filter, which every tile reads: within L1 (48 KB on Zen 5). 2 groups of 256 -> 36
# (80 KB) ran at 0.91x the form along the pixels, 8 groups of 96 -> 24 (36 KB) at 1.14x.
FILTER_BYTES = 40 * 1024
# The most pixels of a tile.
PIXEL_TILE = 6
# Pixels of one helper call (a block the parallel loop hands out).
BLOCK_PIXELS = 64

# The patterns that undo vector_body.ZIPS (its (low, high) back into the first and the second source); the 64-bit
# interleave is its own inverse.
_UNZIPS = {32: (in_lanes((0, 2, 16, 18)), in_lanes((1, 3, 17, 19))), 64: ZIPS[64]}
# Per set size, the rounds interleaving its S rows: each (i, j, bits) zips vectors i and j of the round before into
# two (lo, hi), appended in order.
IN_ROUNDS = {
    2: [[(0, 1, 32)]],
    4: [[(0, 1, 32), (2, 3, 32)], [(0, 2, 64), (1, 3, 64)]],
}


def set_size(groups: int) -> int:
    """Groups per register set: 4 where 4 divides G, else 2 (G even), else 0 (none)."""
    return 4 if groups % 4 == 0 else 2 if groups % 2 == 0 else 0


def registers(size: int, fg: int) -> int:
    """Registers of one pixel's outputs of a set of `size` groups: 16 / S outputs of each group in each."""
    return -(-fg // (LANES // size))


class Network:
    """The interleaving of a set's S input rows into chunks, and its inverse for the outputs, with what their
    lanes hold (simulated on labels once, so the filter's packing and the compaction follow the rounds)."""

    def __init__(self, size: int) -> None:
        self.size, self.rounds = size, IN_ROUNDS[size]
        labels = [np.array([g * LANES + k for k in range(LANES)]) for g in range(size)]
        chunks = np.concatenate(self._run(labels, _label_shuffle)).reshape(LANES, size)
        assert (chunks % LANES == chunks[:, :1] % LANES).all() and (chunks // LANES == np.arange(size)).all()
        # Input channel (of the block's 16) of each chunk of the interleaved block.
        self.chunk_channels = [int(c) for c in chunks[:, 0] % LANES]
        # Output rows of the inverse: row g's lane i from register rr's lane l (label rr x 16 + l).
        labels = [np.array([rr * LANES + lane for lane in range(LANES)]) for rr in range(size)]
        self.sources = np.stack(self._undo(labels, _label_shuffle))
        assert (self.sources % LANES % size == np.arange(size)[:, None]).all()

    def kept(self, present: int) -> list[int]:
        """The lanes of each output row that come from the first `present` of the S registers, in order."""
        return [i for i in range(LANES) if self.sources[0, i] // LANES < present]

    def interleave(self, rows: Sequence[ir.Value]) -> list[ir.Value]:
        """The S vectors of chunks (`chunk_channels` order) of S rows of 16 input channels."""
        return self._run(list(rows), vector.shuffle)

    def rows(self, registers_: Sequence[ir.Value]) -> list[ir.Value]:
        """The S output rows of the first registers of S (the rest zeros), each compacted to its `kept` lanes."""
        t = ir.VectorType(registers_[0].type)
        rows = self._undo(list(registers_) + [zeros(t)] * (self.size - len(registers_)), vector.shuffle)
        kept = self.kept(len(registers_))
        if len(kept) < LANES:
            pattern = kept + [kept[0]] * (LANES - len(kept))
            rows = [vector.shuffle(row, row, pattern) for row in rows]
        return rows

    def _run(self, values: list[Any], shuffle: Callable[[Any, Any, list[int]], Any]) -> list[Any]:
        """The rounds on `values` (MLIR vectors, or label arrays to simulate them)."""
        for round_ in self.rounds:
            values = [shuffle(values[i], values[j], pattern) for i, j, bits in round_ for pattern in ZIPS[bits]]
        return values

    def _undo(self, values: list[Any], shuffle: Callable[[Any, Any, list[int]], Any]) -> list[Any]:
        """The rounds inverted, last first."""
        for round_ in reversed(self.rounds):
            before = list(values)
            for m, (i, j, bits) in enumerate(round_):
                lo, hi = values[2 * m], values[2 * m + 1]
                before[i], before[j] = (shuffle(lo, hi, pattern) for pattern in _UNZIPS[bits])
            values = before
        return values


def _label_shuffle(a: np.ndarray, b: np.ndarray, pattern: list[int]) -> np.ndarray:
    """vector.shuffle on label arrays."""
    return np.concatenate([a, b])[pattern]


def across_groups(groups: int, cg: int, fg: int, x: ir.Value, y: ir.Value, strides: list[int]) -> bool:
    """Whether a grouped 1x1 convolution of `groups` groups of `cg` input and `fg` output channels runs as
    InterleavedGroups: `interleaves`, and the pixels of x and y evenly spaced (one [pixels, channels] view of each,
    stride 1)."""
    return interleaves(groups, cg, fg) and list(strides) == [1, 1] and even_pixels(x) and even_pixels(y)


def interleaves(groups: int, cg: int, fg: int) -> bool:
    """Whether the groups' shape suits the form: G even, the pointwise kernel would leave more lanes empty
    (`pays`), a set's outputs of a pixel in at most MAX_REGISTERS registers and its packed filter in FILTER_BYTES."""
    if not pays(groups, fg):
        return False
    count = registers(set_size(groups), fg)
    return count <= MAX_REGISTERS and cg * count * LANES * 4 <= FILTER_BYTES


def pays(groups: int, fg: int) -> bool:
    """Whether the pointwise kernel's registers hold a group's outputs more poorly than a set's: lanes issued per
    output, 16 x ceil(FG / 16) / FG there, 16 x registers / (S x FG) here."""
    size = set_size(groups)
    return size > 0 and LANES * -(-fg // LANES) * size > LANES * registers(size, fg)


class InterleavedGroups:
    """The buffers, packed filter and tiles of one grouped 1x1 convolution run across the groups (module
    docstring)."""

    def __init__(self, op: ir.Operation, x: ir.Value, weights: np.ndarray, bias: ir.Value | None, y: ir.Value,
                 activation: ir.Operation | None, groups: int) -> None:  # fmt: skip
        # weights: [1, 1, CG, G x FG], group g's output channels from g x FG.
        self.cg, self.groups, self.fg = weights.shape[2], groups, weights.shape[3] // groups
        self.size = set_size(groups)
        self.sets, self.network = groups // self.size, Network(self.size)
        self.registers = registers(self.size, self.fg)
        self.op, self.bias, self.activation = op, bias, activation
        self.x, self.y = (collapse_dims(v, [[0, 1, 2], [3]]) for v in (x, y))
        self.pixels = static_shape(self.y)[0]
        self.full, self.rest = divmod(self.cg, LANES)
        # The chunks of the last, partial block that hold input channels.
        self.tail = [c for c, k in enumerate(self.network.chunk_channels) if k < self.rest]
        self.outputs = self._outputs()
        self.filter = packed_global(op, self._packed(np.asarray(weights, np.float32)),
                                    f"__glow_packed_interleaved_groups_{groups}x{self.cg}x{self.fg}")  # fmt: skip
        self.tile = max(1, min(PIXEL_TILE, MAX_ACCUMULATORS // self.registers))
        self.vt = ir.VectorType.get([LANES], ir.F32Type.get())

    def output_chunks(self) -> list[tuple[int, int, int]]:
        """Per 16 outputs of each group from f0: (f0, the first of their S registers, how many of those exist)."""
        first = [f0 // (LANES // self.size) for f0 in range(0, self.fg, LANES)]
        return [(f0, r, min(self.size, self.registers - r)) for f0, r in zip(range(0, self.fg, LANES), first)]

    def _outputs(self) -> np.ndarray:
        """[register, lane] -> the output channel of its group (-1: none), from the inverse network's rows."""
        outputs = np.full((self.registers, LANES), -1)
        for f0, first, present in self.output_chunks():
            kept = self.network.kept(present)
            for g in range(self.size):
                for rank, i in enumerate(kept):
                    source = int(self.network.sources[g, i])
                    if f0 + rank < self.fg:
                        outputs[first + source // LANES, source % LANES] = f0 + rank
        return outputs

    def _packed(self, weights: np.ndarray) -> np.ndarray:
        """The filter as [set, chunk position, register, lane]: the chunks of the full blocks, then `tail`."""
        w = weights.reshape(self.cg, self.sets, self.size, self.fg)  # [k][set][g][f]
        ks = [b * LANES + k for b in range(self.full) for k in self.network.chunk_channels]
        ks += [self.full * LANES + self.network.chunk_channels[c] for c in self.tail]
        packed = np.zeros((self.sets, len(ks), self.registers, LANES), np.float32)
        lanes = np.arange(LANES)
        for r in range(self.registers):
            valid = self.outputs[r] >= 0
            g, f = lanes[valid] % self.size, self.outputs[r][valid]
            packed[:, :, r, valid] = w[ks][:, :, g, f].transpose(1, 0, 2)
        return packed

    def emit(self) -> ir.Operation:
        """The kernel's root: a loop over blocks of pixels, each a call of the block's helper on views of the
        operands (the last block's of the pixels left)."""
        # Whole tiles a block.
        block = self.tile * max(1, BLOCK_PIXELS // self.tile)
        blocks = -(-self.pixels // block)
        last = self.pixels - (blocks - 1) * block
        loop = scf.ForOp(index(0), index(blocks), index(1))
        with ir.InsertionPoint(loop.body):
            b = loop.induction_variable
            p0 = arith.muli(b, index(block))
            last_apart(b, blocks, lambda is_last: self._call(p0, last if is_last else block), last != block)
            scf.YieldOp([])
        return loop.operation

    def _call(self, p0: ir.Value, pixels: int) -> None:
        """A call of the helper of `pixels` pixels on the block from pixel p0."""
        channels = (self.cg * self.groups, self.fg * self.groups)
        operands = [
            block_at(self.x, [p0, 0], [pixels, channels[0]]),
            self.filter,
            block_at(self.y, [p0, 0], [pixels, channels[1]]),
        ]
        if self.bias is not None:
            operands.append(self.bias)
        name = define_helper(self.op, "interleaved_groups", [v.type for v in operands], self._block, serial=True)
        func.CallOp([], ir.FlatSymbolRefAttr.get(name), operands)

    def _block(self, arguments: list[ir.Value]) -> None:
        """The helper's body: per set, the bias registers and the block's tiles of pixels."""
        x, w, y, *bias = arguments
        pixels = ir.MemRefType(x.type).shape[0]
        f32 = ir.F32Type.get()
        # Kept in memory, loaded at each tile: as values held across the tiles they took registers from the
        # accumulators.
        starts = None
        if bias:
            starts = memref.alloca(ir.MemRefType.get([self.registers, LANES], f32), [], [], alignment=64)
        columns = (self.full + (self.rest > 0)) * LANES * self.size
        # Two buffers: a tile's products read one while its loop interleaves the next tile's input into the other.
        scratch = memref.alloca(ir.MemRefType.get([2, self.tile, columns], f32), [], [], alignment=64)
        results = memref.alloca(ir.MemRefType.get([self.tile, self.registers, LANES], f32), [], [], alignment=64)
        with for_loop(0, self.sets, 1) as s:
            if bias:
                for r in range(self.registers):
                    vector.store(self._bias_register(bias[0], s, r), starts, [index(r), index(0)])
            _Tiles(self, s, x, w, y, starts, scratch, results).emit(pixels)

    def _bias_register(self, bias: ir.Value, s: ir.Value, r: int) -> ir.Value:
        """Register r's bias in set s (zero where the lane holds no output)."""
        valid = self.outputs[r] >= 0
        offsets = np.where(valid, np.arange(LANES) % self.size * self.fg + self.outputs[r], 0)
        it = ir.VectorType.get([LANES], ir.IndexType.get())
        indices = arith.constant(it, ir.DenseElementsAttr.get(offsets.astype(np.int64), type=it))
        mt = ir.VectorType.get([LANES], ir.IntegerType.get_signless(1))
        # i1 elements are bit-packed, the first lane the lowest bit.
        mask = arith.constant(mt, ir.DenseElementsAttr.get(np.packbits(valid, bitorder="little"), type=mt))
        base = arith.muli(s, index(self.size * self.fg))
        return vector.gather(self.vt, bias, [base], indices, mask, zeros(self.vt))


class _Tiles:
    """The code of one set's tiles of pixels: in the helper, on its arguments."""

    def __init__(self, k: InterleavedGroups, s: ir.Value, x: ir.Value, w: ir.Value, y: ir.Value,
                 starts: ir.Value | None, scratch: ir.Value, results: ir.Value) -> None:  # fmt: skip
        self.k, self.s, self.x, self.w, self.y = k, s, x, w, y
        self.starts, self.scratch, self.results = starts, scratch, results
        # The set's first input and output channels.
        self.c0 = arith.muli(s, index(k.size * k.cg))
        self.f0 = arith.muli(s, index(k.size * k.fg))

    def emit(self, pixels: int) -> None:
        """The tiles of the block's pixels, software-pipelined: each tile's loop interleaves the next tile's input
        into the other buffer. The last tile ends at the last pixel, overlapping the one before where the tile does
        not divide the pixels (its outputs computed twice, by this thread: one loop body for every tile); a block
        of fewer pixels than a tile is one tile."""
        tile = self.k.tile
        if pixels < tile:
            self._interleaved_tile(index(0), pixels, index(0))
            self._tile(index(0), pixels, index(0), None)
            return
        last = index(pixels - tile)
        self._interleaved_tile(index(0), tile, index(0))
        with for_loop(0, -(-pixels // tile), 1) as t:
            p0 = arith.minsi(arith.muli(t, index(tile)), last)
            buffer = arith.andi(t, index(1))
            # The last tile's loop interleaves itself again: no read past the block.
            ahead = arith.minsi(arith.muli(arith.addi(t, index(1)), index(tile)), last)
            self._tile(p0, tile, buffer, (ahead, arith.xori(buffer, index(1))))

    def _interleaved_tile(self, p0: ir.Value, pixels: int, buffer: ir.Value) -> None:
        """Every block of input channels of the tile's pixels, interleaved into `buffer`."""
        each_tile(self.k.cg, LANES, lambda at, channels: self._interleaved(p0, pixels, at, channels, buffer))

    def _tile(self, p0: ir.Value, pixels: int, buffer: ir.Value, ahead: tuple[ir.Value, ir.Value] | None) -> None:
        """Pixels p0 .. p0 + pixels - 1 (input interleaved in `buffer`): the accumulators over the blocks of input
        channels (interleaving the tile `ahead`: first pixel, buffer), the activation, into the results block;
        then the outputs."""
        k = self.k
        if self.starts is None:
            starts = [zeros(k.vt)] * k.registers
        else:
            starts = [vector.load(k.vt, self.starts, [index(r), index(0)]) for r in range(k.registers)]
        accumulators = starts * pixels
        if k.full:
            loop = scf.ForOp(index(0), index(k.full), index(1), accumulators)
            with ir.InsertionPoint(loop.body):
                at = arith.muli(loop.induction_variable, index(LANES))
                if ahead is not None:
                    self._interleaved(ahead[0], k.tile, at, LANES, ahead[1])
                chunks = list(enumerate(range(LANES)))
                products = self._products(list(loop.inner_iter_args), pixels, buffer, at, chunks)
                scf.YieldOp(products)
            accumulators = list(loop.results)
        if k.rest:
            at = index(k.full * LANES)
            if ahead is not None:
                self._interleaved(ahead[0], k.tile, at, k.rest, ahead[1])
            chunks = list(enumerate(k.tail))
            accumulators = self._products(accumulators, pixels, buffer, at, chunks)
        if k.activation is not None:
            accumulators = [yielded(k.activation, [value])[0] for value in accumulators]
        for i, value in enumerate(accumulators):
            vector.store(value, self.results, [index(i // k.registers), index(i % k.registers), index(0)])
        with for_loop(0, pixels, 1) as p:
            self._stored(arith.addi(p0, p), p)

    def _interleaved(self, p0: ir.Value, pixels: int, k0: ir.Value, channels: int, buffer: ir.Value) -> None:
        """Input channels k0 .. k0 + channels - 1 of the set's groups of each pixel, interleaved into its row of
        `buffer` from k0 x S."""
        k, mask = self.k, lanes_mask(channels, LANES)
        start = arith.addi(self.c0, k0)
        base = arith.muli(k0, index(k.size))
        for p in range(pixels):
            pixel = arith.addi(p0, index(p)) if p else p0
            rows = [load(self.x, [pixel, arith.addi(start, index(g * k.cg)) if g else start], k.vt, mask)
                    for g in range(k.size)]  # fmt: skip
            for m, value in enumerate(k.network.interleave(rows)):
                at = arith.addi(base, index(m * LANES)) if m else base
                vector.store(value, self.scratch, [buffer, index(p), at])

    def _products(self, accumulators: list[ir.Value], pixels: int, buffer: ir.Value, at: ir.Value,
                  chunks: list[tuple[int, int]]) -> list[ir.Value]:  # fmt: skip
        """The accumulators after the chunks (position in the filter rows from `at`, chunk of the block) of the
        interleaved block of input channels from `at`."""
        k = self.k
        part = ir.VectorType.get([k.size], ir.F32Type.get())
        repeat = [lane % k.size for lane in range(LANES)]
        accumulators = list(accumulators)
        base = arith.muli(at, index(k.size))
        for position, chunk in chunks:
            row = arith.addi(at, index(position)) if position else at
            weights = [vector.load(k.vt, self.w, [self.s, row, index(r), index(0)]) for r in range(k.registers)]
            column = arith.addi(base, index(chunk * k.size)) if chunk else base
            for p in range(pixels):
                inputs = vector.load(part, self.scratch, [buffer, index(p), column])
                inputs = vector.shuffle(inputs, inputs, repeat)
                for r in range(k.registers):
                    i = p * k.registers + r
                    accumulators[i] = vector.fma(weights[r], inputs, accumulators[i])
        return accumulators

    def _stored(self, pixel: ir.Value, p: ir.Value) -> None:
        """One pixel's outputs of the set: each S registers of the results block through the inverse network into
        the groups' rows, stored masked to the group's channels."""
        k = self.k
        for f0, first, present in k.output_chunks():
            chunk = [vector.load(k.vt, self.results, [p, index(first + r), index(0)]) for r in range(present)]
            rows = k.network.rows(chunk)
            mask = lanes_mask(k.fg - f0, LANES)
            for g, row in enumerate(rows):
                store(row, self.y, [pixel, arith.addi(self.f0, index(g * k.fg + f0))], mask)
