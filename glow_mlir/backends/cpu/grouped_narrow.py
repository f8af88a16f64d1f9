"""Grouped convolutions whose groups have 2, 4 or 8 input and output channels, as vector code: part of
grouped_recipes.py's recipe.

NarrowGroupKernel holds 16 / FG whole groups in a register and shuffles input channel j of each group to its
group's lanes; FlatNarrowGroups runs the same shuffles on rows as flat runs of floats where channel vectors would
leave lanes empty; DiagonalGroups moves the shuffles from the inputs to the outputs (a few per output vector
instead of some per multiply-add) for windows larger than 1x1. docs/OPTIMIZATIONS.md ("Narrow groups", "Narrow
groups by diagonals") has the measurements.
"""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import arith, llvm, scf, vector

from glow_mlir.backends.cpu.conv_recipes import LANES, REGISTERS
from glow_mlir.backends.cpu.depthwise_recipes import FLAT_ROWS, each_tile, for_loop, last_apart, phase_of, phases
from glow_mlir.backends.cpu.depthwise_tiles import window_readers
from glow_mlir.backends.cpu.host import cpu_flags
from glow_mlir.backends.cpu.pointwise_recipes import row_tile
from glow_mlir.backends.cpu.recipes import collapse_dims, constant_data, packed_global, static_shape
from glow_mlir.backends.cpu.vector_body import lanes_mask, load, store, yielded, zeros
from glow_mlir.codegen.builders import index

# Group widths (input = output channels per group) that NarrowGroupKernel runs: several whole groups per register.
NARROW_GROUPS = (2, 4, 8)
# The least share of its vectors' lanes that NarrowGroupKernel keeps busy (`narrow_groups`).
NARROW_FILL = 7 / 8
# The most output pixels of a NarrowGroupKernel register tile (one accumulator each).
NARROW_PIXELS = 14
# vpermps: lane i of the result is lane idx[i] of the source, idx a vector of i32 in a register.
PERMUTE = "llvm.x86.avx512.permvar.sf.512"


class NarrowGroupKernel:
    """A grouped KxK convolution whose groups have FG input and FG output channels, FG in NARROW_GROUPS (ResNeXt's
    4, RegNetX's 8), as vector code: each 16-lane register holds 16 / FG whole groups, and input channel j of
    every group reaches its group's lanes by one in-register shuffle of the input vector (lane i takes lane
    (i // FG) * FG + j), multiplied by a packed filter vector whose lane i is output channel i's weight for
    input channel j. The multiply-adds are the convolution's own, not those of a block-diagonal dense filter
    (which does 16 / FG times the work: ResNeXt's 4-channel groups ran at 15 % of peak so).

    The register tile is up to NARROW_PIXELS output pixels of one row by one vector; for each filter row, each
    input pixel the tile reads is loaded once and shuffled once per j, and feeds every output pixel and filter
    column that reads it (3 for a 3x3 stride-1 window): one shuffle per KW multiply-adds. Channels beyond the
    last multiple of 16 are one masked vector (the filter is zero-padded). DiagonalGroups (below) takes the
    windows larger than 1x1, where those shuffles outnumber its rotations (`by_diagonals`)."""

    # The name of the lane-pattern table's global (vpermps index rows).
    TABLE = "shuffles"

    def __init__(self, op: ir.Operation, x: ir.Value, weights: np.ndarray, bias: ir.Value | None, y: ir.Value,
                 window: dict[str, list[int]], activation: ir.Operation | None) -> None:  # fmt: skip
        # weights: [KH, KW, FG, C]: output channel o's weight for input channel j of its group.
        self.kh, self.kw, self.fg, self.c = weights.shape
        self.x, self.y, self.bias, self.activation = x, y, bias, activation
        self.n, self.oh, self.ow, _ = static_shape(y)
        (self.sh, self.sw), (self.dh, self.dw) = window["strides"], window["dilations"]
        self.filter = self._packed(op, weights)
        self.pixels = row_tile(self.ow, self._most_pixels())
        self.vector_type = ir.VectorType.get([LANES], ir.F32Type.get())
        self.shuffles = self._lane_patterns()
        # Groups wider than a 128-bit lane (8 channels) need a shuffle across lanes, which LLVM makes two
        # instructions and a spilled register from a vector.shuffle (or from vpermps with a constant index: it
        # folds that into the same shuffle). vpermps with its index vectors read from a global LLVM cannot see
        # into is one: 8-channel layers 1.13-1.51x (`python -m bench.convs --base`), spills per tile 112 -> 12.
        self.indices = None
        if self.fg > 4 and "avx512f" in cpu_flags():
            table = np.array(self.shuffles, np.int32)
            self.indices = packed_global(op, table, f"__glow_packed_{self.TABLE}_{self.fg}", constant=False)

    def _most_pixels(self) -> int:
        """The most output pixels of a register tile."""
        return narrow_pixels(self.sw, self.kw, self.dw)

    def _lane_patterns(self) -> list[list[int]]:
        """Per input channel j of a group, the lanes a shuffle takes: lane i of the result is lane
        (i // FG) * FG + j of the input."""
        return [[(lane // self.fg) * self.fg + j for lane in range(LANES)] for j in range(self.fg)]

    def _packed(self, op: ir.Operation, weights: np.ndarray) -> ir.Value:
        """The filter as channel vectors, [KH, KW, FG, 16 x vectors], zero beyond the last channel."""
        vectors = -(-self.c // LANES)
        packed = np.zeros((self.kh, self.kw, self.fg, vectors * LANES), np.float32)
        packed[..., : self.c] = weights
        return packed_global(op, packed, f"__glow_packed_narrow_gconv_{self.kh}x{self.kw}x{self.fg}x{vectors * LANES}")

    def emit(self) -> ir.Operation:
        """The kernel's root loop (over the output rows, every tile and vector inside), at the insertion point."""
        loop = scf.ForOp(index(0), index(self.n * self.oh), index(1))
        with ir.InsertionPoint(loop.body):
            row = loop.induction_variable
            image, oy = arith.divui(row, index(self.oh)), arith.remui(row, index(self.oh))
            full = self.ow // self.pixels
            if full:
                tiles = scf.ForOp(index(0), index(full), index(1))
                with ir.InsertionPoint(tiles.body):
                    self._vectors(image, oy, arith.muli(tiles.induction_variable, index(self.pixels)), self.pixels)
                    scf.YieldOp([])
            if self.ow % self.pixels:
                self._vectors(image, oy, index(full * self.pixels), self.ow % self.pixels)
            scf.YieldOp([])
        return loop.operation

    def _vectors(self, image: ir.Value, oy: ir.Value, x0: ir.Value, pixels: int) -> None:
        """The tiles of `pixels` output pixels from x0 of row oy, one per channel vector (the last one masked when
        16 does not divide the channels)."""
        full = self.c // LANES
        if full:
            loop = scf.ForOp(index(0), index(full), index(1))
            with ir.InsertionPoint(loop.body):
                self._tile(image, oy, x0, pixels, arith.muli(loop.induction_variable, index(LANES)), None)
                scf.YieldOp([])
        if self.c % LANES:
            self._tile(image, oy, x0, pixels, index(full * LANES), lanes_mask(self.c % LANES, LANES))

    def _tile(self, image: ir.Value, oy: ir.Value, x0: ir.Value, pixels: int, c0: ir.Value,
              mask: ir.Value | None) -> None:  # fmt: skip
        """One register tile: accumulators from the bias, a loop over the filter rows, the activation, the stores."""
        vt = self.vector_type
        start = load(self.bias, [c0], vt, mask) if self.bias is not None else zeros(vt)
        # The output pixels and filter columns that read each input column of the tile's window.
        readers = window_readers(pixels, self.sw, self.kw, self.dw)
        loop = scf.ForOp(index(0), index(self.kh), index(1), [start] * pixels)
        with ir.InsertionPoint(loop.body):
            kh = loop.induction_variable
            accs = list(loop.inner_iter_args)
            row = self._input_row(image, oy, x0, kh, readers, c0, mask)
            for j, lanes in enumerate(self.shuffles):
                weights = [vector.load(vt, self.filter, [kh, index(kw), index(j), c0]) for kw in range(self.kw)]
                indices = self._indices(j)
                for column, pairs in sorted(readers.items()):
                    shuffled = self._shuffle(row[column], lanes, indices)
                    for p, kw in pairs:
                        accs[p] = vector.fma(shuffled, weights[kw], accs[p])
            scf.YieldOp(accs)
        for p, acc in enumerate(loop.results):
            value = yielded(self.activation, [acc])[0] if self.activation is not None else acc
            store(value, self.y, [image, oy, arith.addi(x0, index(p)), c0], mask)

    def _input_row(self, image: ir.Value, oy: ir.Value, x0: ir.Value, kh: ir.Value,
                   readers: dict[int, list[tuple[int, int]]], c0: ir.Value, mask: ir.Value | None
                   ) -> dict[int, ir.Value]:  # fmt: skip
        """The channel vector from c0 of each input column (from the tile's window start) that `readers` reads, in
        filter row kh of output row oy: each loaded once for every output pixel and filter column that reads it."""
        iy = arith.addi(arith.muli(oy, index(self.sh)), arith.muli(kh, index(self.dh)))
        ix0 = arith.muli(x0, index(self.sw))
        return {column: load(self.x, [image, iy, arith.addi(ix0, index(column)), c0], self.vector_type, mask)
                for column in sorted(readers)}  # fmt: skip

    def _indices(self, j: int) -> ir.Value | None:
        """vpermps' index vector of input channel j (row j of the table), or None where shuffles are static."""
        if self.indices is None:
            return None
        i32 = ir.VectorType.get([LANES], ir.IntegerType.get_signless(32))
        return vector.load(i32, self.indices, [index(j), index(0)])

    def _shuffle(self, value: ir.Value, lanes: list[int], indices: ir.Value | None) -> ir.Value:
        """`value` with one input channel of each group in all of its group's lanes: lane i takes lane lanes[i],
        by vpermps with `indices` (the same lanes, from the table) where given."""
        if indices is None:
            return vector.shuffle(value, value, lanes)
        return llvm.call_intrinsic(self.vector_type, PERMUTE, [value, indices], [], [])


def narrow_groups(cg: int, fg: int, groups: int) -> bool:
    """Whether NarrowGroupKernel runs a grouped convolution of `groups` groups of cg input and fg output channels:
    fg in NARROW_GROUPS input and output channels per group, and at least NARROW_FILL of the lanes of its vectors
    busy (RegNetX-200MF's 3 groups of 8, 24 channels in two vectors, ran at 38 % of peak against the block-
    diagonal tiles' 45 %; its 7 groups, 56 channels, at 47 % against 44 %). Below that, with unit stride along
    the row, FlatNarrowGroups fills every lane instead."""
    channels = groups * fg
    return cg == fg and fg in NARROW_GROUPS and channels >= NARROW_FILL * LANES * -(-channels // LANES)


def narrow_pixels(sw: int, kw: int, dw: int) -> int:
    """The most output pixels of a NarrowGroupKernel tile whose registers fit: one accumulator per pixel, the
    input columns of its window ((P - 1) * sw + (KW - 1) * dw + 1, each loaded once per filter row), the KW
    filter vectors of one input channel and the shuffled input."""
    pixels = NARROW_PIXELS
    while pixels > 1 and pixels + (pixels - 1) * sw + (kw - 1) * dw + 1 + kw + 1 > REGISTERS:
        pixels -= 1
    return pixels


class FlatNarrowGroups(NarrowGroupKernel):
    """NarrowGroupKernel's convolution (groups of FG = 2, 4 or 8 input and output channels) where its channel
    vectors would leave more than 1/8 of their lanes empty (`narrow_groups`: RegNetX-200MF's 3 groups of 8), with
    unit stride along the row, on the rows as flat runs of floats (depthwise_recipes' FlatDepthwise, phased): the
    register at float f of an output row holds 16 floats of its pixels, and since FG divides both 16 and C, lane
    i's group starts at lane (i // FG) * FG of the input vector at f + (column) x C, so the same shuffles bring
    input channel j of each lane's group. Its weights are phase (f / 16) mod P's ([P, KH, KW, FG, 16], packed as
    `phases` packs a depthwise filter). Channel vectors wasted a register's lanes on the last partial vector (24
    channels: 16 + 8 lanes in two registers' FMAs; the block-diagonal tiles that took them ran at 47 % of peak,
    this kernel at 78-80 %: g3x8-3x3-s1-24>24@56, `bench.convs --base` 1.63-1.66x). At 7/8 of the lanes or more
    the channel vectors are as fast or faster (56 channels 1.01-1.06x flat, 152 0.94-0.97x).

    The register tile is up to FLAT_ROWS output rows by one register, its accumulators from the phase's bias; per
    input channel j the tile's KH x KW weights are held, and each input vector it reads is loaded and shuffled
    once for the FMAs of every output row that reads it."""

    FLAT_ROWS = 12

    @staticmethod
    def fits(x: ir.Value, cg: int, fg: int, bias: ir.Value | None, y: ir.Value, window: dict[str, list[int]]) -> bool:
        c = static_shape(y)[3]
        if cg != fg or fg not in NARROW_GROUPS or c % LANES == 0 or window["strides"][1] != 1:
            return False
        if bias is not None and constant_data(bias) is None:
            return False
        # The input's and output's pixels contiguous: a row of each is one run of floats.
        return all(ir.MemRefType(v.type).get_strides_and_offset()[0][2:] == [c, 1] for v in (x, y))

    def __init__(self, op: ir.Operation, x: ir.Value, weights: np.ndarray, bias: ir.Value | None, y: ir.Value,
                 window: dict[str, list[int]], activation: ir.Operation | None) -> None:  # fmt: skip
        super().__init__(op, x, weights, bias, y, window, activation)
        if bias is not None:
            self.bias = packed_global(op, phases(constant_data(bias)), f"__glow_packed_flat_bias_{self.c}")
        self.x, self.y = collapse_dims(x, FLAT_ROWS), collapse_dims(y, FLAT_ROWS)

    def _packed(self, op: ir.Operation, weights: np.ndarray) -> ir.Value:
        """The filter as its phases' registers, [P, KH, KW, FG, 16]."""
        return packed_global(op, phases(weights), f"__glow_packed_flat_gconv_{self.kh}x{self.kw}x{self.fg}")

    def emit(self) -> ir.Operation:
        """The images loop; in each, tiles of rows, and along them tiles of one register of floats."""
        images = scf.ForOp(index(0), index(self.n), index(1))
        with ir.InsertionPoint(images.body):
            image = images.induction_variable
            full, tail = divmod(self.ow * self.c, LANES)

            def rows(y0: ir.Value, count: int) -> None:
                if full:
                    with for_loop(0, full * LANES, LANES) as f:
                        self._flat_tile(image, y0, count, f, LANES)
                if tail:
                    self._flat_tile(image, y0, count, index(full * LANES), tail)

            each_tile(self.oh, min(self.FLAT_ROWS, self.oh), rows)
            scf.YieldOp([])
        return images.operation

    def _flat_tile(self, image: ir.Value, y0: ir.Value, rows: int, f: ir.Value, valid: int) -> None:
        """Output rows y0 .. + rows at floats f .. f + valid of them."""
        vt, mask = self.vector_type, lanes_mask(valid, LANES)
        q = phase_of(f, self.c)
        start = vector.load(vt, self.bias, [q, index(0)]) if self.bias is not None else zeros(vt)
        accs = [start] * rows
        readers = window_readers(rows, self.sh, self.kh, self.dh)
        top = arith.muli(y0, index(self.sh))
        for j, lanes in enumerate(self.shuffles):
            weights = [[vector.load(vt, self.filter, [q, index(i), index(k), index(j), index(0)])
                        for k in range(self.kw)] for i in range(self.kh)]  # fmt: skip
            indices = self._indices(j)
            for a, pairs in sorted(readers.items()):
                row = arith.addi(top, index(a)) if a else top
                for k in range(self.kw):
                    at = arith.addi(f, index(k * self.dw * self.c)) if k else f
                    shuffled = self._shuffle(load(self.x, [image, row, at], vt, mask), lanes, indices)
                    for r, i in pairs:
                        accs[r] = vector.fma(shuffled, weights[i][k], accs[r])
        for r, acc in enumerate(accs):
            value = yielded(self.activation, [acc])[0] if self.activation is not None else acc
            store(value, self.y, [image, arith.addi(y0, index(r)) if r else y0, f], mask)


# The most registers of a DiagonalGroups tile's accumulators, input columns and weight vectors: 3x3 groups of 8 ran
# at 88-93 % of peak with tiles of 2 pixels (23 registers), 86-90 % with 3 (32: `bench.convs`, stride 1).
DIAGONAL_REGISTERS = 24
# The least output pixels of a DiagonalGroups block of rows: a channel vector's weights serve at least this many
# pixels while in L1 (row by row, RegNetX-200MF's 368 channels on 7x7 ran at 55 %, in blocks of 4 rows 84-89 %).
BLOCK_PIXELS = 28


def by_diagonals(fg: int, kh: int, kw: int, sw: int, dw: int, ow: int) -> bool:
    """Whether DiagonalGroups runs a narrow-group convolution rather than NarrowGroupKernel: its FG - 1 rotations
    and FG - 1 adds per output vector against the input shuffles, FG per filter row and input column of a tile
    (for a 3x3 window of groups of 8 at stride 2 about 50, at stride 1 about 30; 8 at 1x1, where the rotations
    and adds cost more: 1x1 groups of 8 ran at 48 % of peak so against 56 %)."""
    pixels = row_tile(ow, narrow_pixels(sw, kw, dw))
    columns = (pixels - 1) * sw + (kw - 1) * dw + 1
    return 2 * (fg - 1) * pixels < fg * kh * columns


def diagonal_pixels(fg: int, sw: int, kw: int, dw: int) -> int:
    """The most output pixels of a DiagonalGroups tile within DIAGONAL_REGISTERS: FG accumulators per pixel, the
    tile's input columns of one filter row and its KW weight vectors of one diagonal."""
    pixels = NARROW_PIXELS
    while pixels > 1 and pixels * fg + (pixels - 1) * sw + (kw - 1) * dw + 1 + kw > DIAGONAL_REGISTERS:
        pixels -= 1
    return pixels


class DiagonalGroups(NarrowGroupKernel):
    """NarrowGroupKernel's convolution with the shuffles moved from the inputs to the outputs. Output o of group g
    sums x[l] w[o, l] over the group's input channels l; with l = (o + r) mod FG, the products of diagonal r (input
    lane l times its weight for output (l - r) mod FG) need no shuffle: a pixel's accumulator r takes the input
    vector as loaded times packed weight vector r (lane (g, l): w[g, (l - r) mod FG, l]), and after the window
    output lane (g, o) is the sum over r of accumulator r's lane (g, (o + r) mod FG), FG - 1 rotations within the
    groups and FG - 1 adds (`by_diagonals`). ResNeXt-50's stride-2 layer of 32 groups of 8 ran at 59-61 % of peak
    with a shuffle per input vector and channel, 75-80 % so.

    A tile is P pixels of a row by FG accumulators each (`diagonal_pixels`). The kernel's loop is over blocks of
    rows of at least BLOCK_PIXELS output pixels (glow-cpu-parallelize splits it); in each, the channel vectors
    (the last one masked where 16 does not divide the channels), then the rows, then the tiles: one vector's KH x
    KW x FG weight vectors, packed contiguous ([vectors, KH, KW, FG, 16], 4.6 KB for 3x3 groups of 8), stay in L1
    across the block's tiles. (Packed [KH, KW, FG, C] they lay 1 KB apart on 256 channels, in 4 of L1's 64 sets:
    the stride-2 layer ran at 49 %.)"""

    TABLE = "rotations"

    def _most_pixels(self) -> int:
        return diagonal_pixels(self.fg, self.sw, self.kw, self.dw)

    def _lane_patterns(self) -> list[list[int]]:
        """Per diagonal r, the rotation of each group's lanes: lane (g, o) takes lane (g, (o + r) mod FG)."""
        return [[(lane // self.fg) * self.fg + (lane % self.fg + r) % self.fg for lane in range(LANES)]
                for r in range(self.fg)]  # fmt: skip

    def _packed(self, op: ir.Operation, weights: np.ndarray) -> ir.Value:
        """The filter as [vectors, KH, KW, FG (diagonal r), 16]: lane (g, l) of diagonal r holds input channel l's
        weight for output channel (l - r) mod FG of group g; zero beyond the last channel."""
        vectors = -(-self.c // LANES)
        channel = np.arange(self.c)
        first, lane = channel // self.fg * self.fg, channel % self.fg
        packed = np.zeros((self.kh, self.kw, self.fg, vectors * LANES), np.float32)
        for r in range(self.fg):
            packed[:, :, r, : self.c] = weights[:, :, lane, first + (lane - r) % self.fg]
        packed = packed.reshape(self.kh, self.kw, self.fg, vectors, LANES).transpose(3, 0, 1, 2, 4)
        name = f"__glow_packed_diagonal_gconv_{vectors}x{self.kh}x{self.kw}x{self.fg}"
        return packed_global(op, np.ascontiguousarray(packed), name)

    def emit(self) -> ir.Operation:
        """The kernel's root loop, over the blocks of rows."""
        rows = self.n * self.oh
        block = -(-BLOCK_PIXELS // self.ow)
        vectors, rest = -(-self.c // LANES), self.c % LANES
        loop = scf.ForOp(index(0), index(-(-rows // block)), index(1))
        with ir.InsertionPoint(loop.body):
            r0 = arith.muli(loop.induction_variable, index(block))
            r1 = arith.minsi(arith.addi(r0, index(block)), index(rows))
            with for_loop(0, vectors, 1) as v:

                def vector_rows(masked: bool) -> None:
                    """The block's rows of vector v, masked to the channels left where it is the last."""
                    self._rows(r0, r1, v, lanes_mask(rest, LANES) if masked else None)

                last_apart(v, vectors, vector_rows, rest > 0)
            scf.YieldOp([])
        return loop.operation

    def _rows(self, r0: ir.Value, r1: ir.Value, v: ir.Value, mask: ir.Value | None) -> None:
        """Channel vector v of output rows r0 .. r1 - 1 (images x rows), tile by tile."""
        loop = scf.ForOp(r0, r1, index(1))
        with ir.InsertionPoint(loop.body):
            row = loop.induction_variable
            image, oy = arith.divui(row, index(self.oh)), arith.remui(row, index(self.oh))

            def tile(x0: ir.Value, pixels: int) -> None:
                self._diagonal_tile(image, oy, x0, pixels, v, mask)

            each_tile(self.ow, self.pixels, tile)
            scf.YieldOp([])

    def _diagonal_tile(self, image: ir.Value, oy: ir.Value, x0: ir.Value, pixels: int, v: ir.Value,
                       mask: ir.Value | None) -> None:  # fmt: skip
        """One register tile: the accumulators (the bias in diagonal 0's), a loop over the filter rows, then per
        pixel the diagonals rotated into place and summed, the activation, the store."""
        vt = self.vector_type
        c0 = arith.muli(v, index(LANES))
        start = load(self.bias, [c0], vt, mask) if self.bias is not None else zeros(vt)
        readers = window_readers(pixels, self.sw, self.kw, self.dw)
        # Accumulator order: pixel 0's diagonals, then pixel 1's, ...; the bias in pixel p's diagonal 0 only.
        loop = scf.ForOp(index(0), index(self.kh), index(1),
                         [start if r == 0 else zeros(vt) for _ in range(pixels) for r in range(self.fg)])  # fmt: skip
        with ir.InsertionPoint(loop.body):
            kh = loop.induction_variable
            accumulators = list(loop.inner_iter_args)
            row = self._input_row(image, oy, x0, kh, readers, c0, mask)
            for r in range(self.fg):
                weights = [vector.load(vt, self.filter, [v, kh, index(kw), index(r), index(0)])
                           for kw in range(self.kw)]  # fmt: skip
                for column, pairs in sorted(readers.items()):
                    for p, kw in pairs:
                        i = p * self.fg + r
                        accumulators[i] = vector.fma(row[column], weights[kw], accumulators[i])
            scf.YieldOp(accumulators)
        results = list(loop.results)
        for p in range(pixels):
            total = results[p * self.fg]
            for r in range(1, self.fg):
                rotated = self._shuffle(results[p * self.fg + r], self.shuffles[r], self._indices(r))
                total = arith.addf(total, rotated)
            value = yielded(self.activation, [total])[0] if self.activation is not None else total
            store(value, self.y, [image, oy, arith.addi(x0, index(p)), c0], mask)
