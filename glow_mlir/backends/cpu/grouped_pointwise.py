"""Grouped 1x1 convolutions whose groups fill channel vectors poorly, as vector code along the pixels: part of
grouped_recipes.py's recipe.

A grouped 1x1 convolution runs each group as the pointwise kernel (pointwise_recipes.py), whose registers hold
16 of the group's output channels and whose multiply-adds take one input channel broadcast. With 12 outputs per
group (ShuffleNet v1 g8) a quarter of every register's lanes is empty, with 20 (g3) three eighths: the g3 layer
ran at 54 % of peak (`bench.convs`), below the other grouped layers' 64-98 %.

Here a register holds one output channel of 16 pixels instead, so every lane is busy whatever the group's width.
Per group (a helper call: the loop over groups is the kernel's, glow-cpu-parallelize splits it) and per tile of
up to PIXEL_VECTORS x 16 pixels, the tile's input rows of the group's channels are transposed in registers
(`transpose_16x16`) into a scratch block [channels, pixels] in L1; then each output channel's accumulators (its
pixel vectors, from the bias) take, per input channel, one broadcast weight and one multiply-add per pixel
vector; the accumulators, after the activation, are transposed back into the output's pixel rows (masked to the
group's channels). Output channels beyond MAX_ACCUMULATORS' worth of registers are further passes over the same
scratch block. The transposes cost shuffles, so only groups whose registers the pointwise kernel leaves emptier
than that run so (`pays`: the g3 layer 54 -> 69 % of peak), and where grouped_interleaved.py's form does not
(an even number of groups: g8's 12-channel groups run across the groups).
docs/OPTIMIZATIONS.md ("Narrow groups along the pixels") has the measurements.
"""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import arith, func, memref, scf, vector

from glow_mlir.backends.cpu.conv_recipes import LANES
from glow_mlir.backends.cpu.depthwise_recipes import each_tile
from glow_mlir.backends.cpu.outline import define_helper
from glow_mlir.backends.cpu.pointwise_recipes import even_pixels
from glow_mlir.backends.cpu.recipes import block_at, collapse_dims, packed_global, static_shape
from glow_mlir.backends.cpu.vector_body import lanes_mask, load, store, transpose_16x16, yielded, zeros
from glow_mlir.codegen.builders import index

# The most accumulator registers of one pass (output channels x pixel vectors), leaving registers for the
# scratch block's pixel vectors and a broadcast weight.
MAX_ACCUMULATORS = 24
# The most pixel vectors (16 pixels each) of one tile.
PIXEL_VECTORS = 4
# Multiply-adds that one shuffle of the transposes costs (from the two forms' kernel times on five grouped 1x1
# layers, `pays`).
SHUFFLE_COST = 1.5


def along_pixels(cg: int, fg: int, x: ir.Value, y: ir.Value, strides: list[int]) -> bool:
    """Whether a grouped 1x1 convolution of `cg` input and `fg` output channels per group runs as PixelGroups:
    `pays` for the group, and the pixels of x and y evenly spaced (one [pixels, channels] view of each, stride 1)."""
    return pays(cg, fg) and list(strides) == [1, 1] and even_pixels(x) and even_pixels(y)


def pays(cg: int, fg: int) -> bool:
    """Whether the pointwise kernel's empty lanes cost more than the transposes. Per multiply-add of the group,
    that kernel issues 16 x ceil(FG / 16) / FG lanes' worth; along the pixels every lane is busy, but each 16 x
    16 input block (64 shuffles) feeds 16 x FG of them and each output block 16 x CG: 4 / FG + 4 / CG shuffles
    each. `python -m bench.convs` kernel times (% of peak, pointwise -> along pixels): 3 groups of 80 -> 20
    (ShuffleNet v1 g3) 54 -> 69, 4 of 40 -> 40 76 -> 68, 8 of 48 -> 12 (g8) 56 -> 54, 8 of 24 -> 24 56 -> 56,
    8 of 12 -> 12 50 -> 45."""
    busy = LANES * -(-fg // LANES) / fg
    return 1 + SHUFFLE_COST * (4 / fg + 4 / cg) < busy


class PixelGroups:
    """The buffers, filter and tiles of one grouped 1x1 convolution run along the pixels (module docstring)."""

    def __init__(self, op: ir.Operation, x: ir.Value, weights: np.ndarray, bias: ir.Value | None, y: ir.Value,
                 activation: ir.Operation | None, groups: int) -> None:  # fmt: skip
        # weights: [1, 1, CG, G x FG], group g's output channels from g x FG.
        self.cg, self.groups, self.fg = weights.shape[2], groups, weights.shape[3] // groups
        self.op, self.bias, self.activation = op, bias, activation
        self.x, self.y = (collapse_dims(v, [[0, 1, 2], [3]]) for v in (x, y))
        self.pixels = static_shape(self.y)[0]
        packed = np.ascontiguousarray(np.asarray(weights, np.float32).reshape(self.cg, self.groups, self.fg)
                                      .transpose(1, 0, 2))  # fmt: skip
        self.filter = packed_global(op, packed, f"__glow_packed_pixel_groups_{self.cg}x{self.fg}")
        # Output channels in passes of near-equal size, each at most MAX_ACCUMULATORS / (pixel vectors).
        passes = -(-self.fg // MAX_ACCUMULATORS)
        width = -(-self.fg // passes)
        self.passes = [(f, min(width, self.fg - f)) for f in range(0, self.fg, width)]
        self.vectors = max(1, min(PIXEL_VECTORS, MAX_ACCUMULATORS // width))
        self.vt = ir.VectorType.get([LANES], ir.F32Type.get())

    def emit(self) -> ir.Operation:
        """The kernel's root: a loop over the groups, each a call of the group's helper on views of the operands."""
        loop = scf.ForOp(index(0), index(self.groups), index(1))
        with ir.InsertionPoint(loop.body):
            group = loop.induction_variable
            operands = [
                block_at(self.x, [0, arith.muli(group, index(self.cg))], [self.pixels, self.cg]),
                block_at(self.filter, [group, 0, 0], [1, self.cg, self.fg], drop_first=True),
                block_at(self.y, [0, arith.muli(group, index(self.fg))], [self.pixels, self.fg]),
            ]
            if self.bias is not None:
                operands.append(block_at(self.bias, [arith.muli(group, index(self.fg))], [self.fg]))
            name = define_helper(self.op, "pixel_groups", [v.type for v in operands], self._group, serial=True)
            func.CallOp([], ir.FlatSymbolRefAttr.get(name), operands)
            scf.YieldOp([])
        return loop.operation

    def _group(self, arguments: list[ir.Value]) -> None:
        """The helper's body: the scratch block, the loop of full tiles and the tile of the pixels left."""
        x, w, y, *bias = arguments
        rows = LANES * -(-self.cg // LANES)
        scratch = memref.alloca(ir.MemRefType.get([rows, self.vectors * LANES], ir.F32Type.get()), [], [],
                                alignment=64)  # fmt: skip
        tile = _Tile(self, x, w, y, bias[0] if bias else None, scratch)
        each_tile(self.pixels, self.vectors * LANES, tile.emit)


class _Tile:
    """The code of one tile of pixels of one group: in a helper, on the helper's arguments."""

    def __init__(self, k: PixelGroups, x: ir.Value, w: ir.Value, y: ir.Value, bias: ir.Value | None,
                 scratch: ir.Value) -> None:  # fmt: skip
        self.k, self.x, self.w, self.y, self.bias, self.scratch = k, x, w, y, bias, scratch

    def emit(self, p0: ir.Value, pixels: int) -> None:
        """Pixels p0 .. p0 + pixels - 1: the input transposed into the scratch block, then each pass."""
        each_tile(self.k.cg, LANES, lambda c0, channels: self._transposed_in(p0, pixels, c0, channels))
        vectors = -(-pixels // LANES)
        for f0, width in self.k.passes:
            self._pass(p0, pixels, vectors, f0, width)

    def _transposed_in(self, p0: ir.Value, pixels: int, c0: ir.Value, channels: int) -> None:
        """Input channels c0 .. c0 + channels - 1 of the tile's pixels into the scratch block's rows c0 ..."""
        vt, mask = self.k.vt, lanes_mask(channels, LANES)
        for v in range(-(-pixels // LANES)):
            count = min(LANES, pixels - v * LANES)
            rows = [load(self.x, [arith.addi(p0, index(v * LANES + i)), c0], vt, mask) for i in range(count)]
            columns = transpose_16x16(rows + [zeros(vt)] * (LANES - count))
            for c in range(channels):
                vector.store(columns[c], self.scratch, [arith.addi(c0, index(c)) if c else c0, index(v * LANES)])

    def _pass(self, p0: ir.Value, pixels: int, vectors: int, f0: int, width: int) -> None:
        """Output channels f0 .. f0 + width - 1 of the tile: accumulators over the input channels, the
        activation, the transposes back into the output rows."""
        k, vt = self.k, self.k.vt
        starts = []
        for f in range(f0, f0 + width):
            bias = None if self.bias is None else memref.load(self.bias, [index(f)])
            starts += [zeros(vt) if bias is None else vector.BroadcastOp(vt, bias).result] * vectors
        loop = scf.ForOp(index(0), index(k.cg), index(1), starts)
        with ir.InsertionPoint(loop.body):
            c = loop.induction_variable
            block = [vector.load(vt, self.scratch, [c, index(v * LANES)]) for v in range(vectors)]
            accs = list(loop.inner_iter_args)
            for f in range(width):
                weight = vector.BroadcastOp(vt, memref.load(self.w, [c, index(f0 + f)])).result
                for v in range(vectors):
                    accs[f * vectors + v] = vector.fma(block[v], weight, accs[f * vectors + v])
            scf.YieldOp(accs)
        results = list(loop.results)
        if k.activation is not None:
            results = [yielded(k.activation, [acc])[0] for acc in results]
        for v in range(vectors):
            count = min(LANES, pixels - v * LANES)
            for b in range(0, width, LANES):
                part = min(LANES, width - b)
                columns = [results[(b + f) * vectors + v] for f in range(part)]
                pixel_rows = transpose_16x16(columns + [zeros(vt)] * (LANES - part))
                mask = lanes_mask(part, LANES)
                for i in range(count):
                    store(pixel_rows[i], self.y, [arith.addi(p0, index(v * LANES + i)), index(f0 + b)], mask)

