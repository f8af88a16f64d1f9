"""Schedules of the CPU backend's grouped convolutions, for glow-cpu-schedule (schedule.py); depthwise ones (one
channel per group) are depthwise_recipes.py's.

A grouped convolution (any grouping but depthwise: the `linalg.generic` that lowerings.grouped_conv marks) is one
kernel over tiles of several groups, each tile run by the group-1 schedule (conv_recipes.py) on a filter packed
block-diagonally at compile time; a 1x1 one with a constant filter runs each group as pointwise_recipes.py's
kernel on the group's channel slices instead, and one whose groups have 2, 4 or 8 channels that fill whole
registers is NarrowGroupKernel's vector code (input channels shuffled to their group's lanes), or where they
do not, FlatNarrowGroups' (the same shuffles on rows as flat runs of floats).
docs/OPTIMIZATIONS.md ("Depthwise and grouped convolutions", "Pointwise convolutions", "Narrow groups") has the
measurements.
"""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import arith, llvm, scf, vector

from glow_mlir.backends.cpu.conv_recipes import (
    L2_INPUT_BYTES,
    LANES,
    REGISTERS,
    ScheduledConv,
    channel_parts,
    epilogue,
    epilogue_alone,
    fused_kernel,
    register_tile,
    static_f32,
)
from glow_mlir.backends.cpu.depthwise_recipes import (
    FLAT_ROWS,
    each_tile,
    for_loop,
    phase_of,
    phases,
)
from glow_mlir.backends.cpu.depthwise_tiles import window_readers
from glow_mlir.backends.cpu.grouped_interleaved import InterleavedGroups, across_groups
from glow_mlir.backends.cpu.grouped_pointwise import PixelGroups, along_pixels
from glow_mlir.backends.cpu.host import cpu_flags
from glow_mlir.backends.cpu.lowerings import GROUPED_CONV_ATTR
from glow_mlir.backends.cpu.pointwise_recipes import PointwiseKernel, row_tile
from glow_mlir.backends.cpu.recipes import (
    Kernel,
    Recipe,
    block_at,
    collapse_dims,
    constant_data,
    index_constant,
    packed_global,
    recipe,
    static_shape,
)
from glow_mlir.backends.cpu.vector_body import lanes_mask, load, store, yielded, zeros
from glow_mlir.codegen.builders import index


# The most groups one tile of a grouped convolution packs together (`_groups_per_tile`).
MAX_GROUPS_PER_TILE = 8
# Group widths (input = output channels per group) that NarrowGroupKernel runs: several whole groups per register.
NARROW_GROUPS = (2, 4, 8)
# The least share of its vectors' lanes that NarrowGroupKernel keeps busy (`narrow_groups`).
NARROW_FILL = 7 / 8
# The most output pixels of a NarrowGroupKernel register tile (one accumulator each).
NARROW_PIXELS = 14
# vpermps: lane i of the result is lane idx[i] of the source, idx a vector of i32 in a register.
PERMUTE = "llvm.x86.avx512.permvar.sf.512"


def _is_grouped_conv(op: ir.Operation) -> bool:
    return GROUPED_CONV_ATTR in op.attributes


@recipe("linalg.generic", when=_is_grouped_conv)
def grouped_recipe(op: ir.Operation) -> Recipe | None:
    """A grouped convolution (lowerings.grouped_conv, G groups of CG input and FG output channels) as one
    kernel: an scf.for over tiles of S consecutive groups, each the direct convolution (`fused_kernel`, bias
    and activation fused) of the tile's S * CG input channels into its S * FG output channels.

    With a constant filter, a tile's filter is packed at compile time as a dense [KH, KW, S * CG, S * FG]
    block, zero outside the S diagonal [CG, FG] blocks, and S (`_groups_per_tile`) makes S * FG whole 16-lane
    registers: for narrow groups that neither NarrowGroupKernel nor FlatNarrowGroups takes (9 groups of 4 at
    stride 2) the tile computes S times the multiply-adds, but in full registers (FG lanes of 16 waste as much),
    with a register tile of many pixels, and one kernel instead of G tiny ones with 4- or 8-lane vectors and
    the bias and activation as passes of their own. Wider groups (S = 1) read their packed filter slice
    contiguously; a group wider than 16 channels that 16 does not divide (RegNetX's 24 and 56) is two kernels
    per tile (`channel_parts`: 16-lane registers, then the rest). A 1x1 filter's groups are pointwise kernels
    (`_pointwise_tiles`, one group per tile: the kernel masks a narrow group's last vector, and its tiles need not
    divide the row), but an even number of groups that fill its registers poorly run across the groups
    (grouped_interleaved.py) and other such groups along the pixels (grouped_pointwise.py); groups of 2, 4 or 8
    channels with at least 7/8 of their registers' lanes busy are NarrowGroupKernel's (`narrow_groups`), the
    others with unit stride along the row FlatNarrowGroups'.
    """
    x5, w5, y5 = op.operands
    expanded = [v.owner for v in (x5, w5, y5)]
    bias_op, activation_op = epilogue(expanded[2].operation)
    if not static_f32(op):
        return epilogue_alone(bias_op, activation_op)
    x, filter_, y = (e.operation.operands[0] for e in expanded)
    kh, kw, cg, groups, fg = static_shape(w5)
    n, h, w, _ = static_shape(x)
    _, oh, ow, _ = static_shape(y)
    sh, sw, dh, dw = ir.DenseI64ArrayAttr(op.attributes[GROUPED_CONV_ATTR])
    window = {"strides": [sh, sw], "dilations": [dh, dw]}
    bias = bias_op.operands[0] if bias_op is not None else None
    weights = constant_data(filter_)
    narrow = NarrowGroupKernel if narrow_groups(cg, fg, groups) else None
    if FlatNarrowGroups.fits(x, cg, fg, bias, y, window) and narrow is None:
        narrow = FlatNarrowGroups
    if weights is not None and narrow is not None:
        root = narrow(op, x, np.asarray(weights), bias, y, window, activation_op).emit()
        _erase_replaced([activation_op, op, bias_op], expanded)
        return Recipe((Kernel(root, lambda _: None),))
    # A pointwise kernel masks a narrow group's last vector: packing several groups block-diagonally would
    # only multiply its work (ShuffleNet v1 g8's 12-channel groups on 28x28, bench.convs kernel time: 4 per
    # tile 18 % of peak, one per tile 41 %).
    pointwise = weights is not None and (kh, kw) == (1, 1)
    if pointwise and across_groups(groups, cg, fg, x, y, window["strides"]):
        root = InterleavedGroups(op, x, np.asarray(weights), bias, y, activation_op, groups).emit()
        _erase_replaced([activation_op, op, bias_op], expanded)
        return Recipe((Kernel(root, lambda _: None),))
    if pointwise and along_pixels(cg, fg, x, y, window["strides"]):
        root = PixelGroups(op, x, np.asarray(weights), bias, y, activation_op, groups).emit()
        _erase_replaced([activation_op, op, bias_op], expanded)
        return Recipe((Kernel(root, lambda _: None),))
    per_tile = _groups_per_tile(groups, fg) if weights is not None and not pointwise else 1
    tiles, width, depth = groups // per_tile, per_tile * fg, per_tile * cg
    if weights is not None:
        blocks = np.asarray(weights).reshape(kh, kw, cg, tiles, per_tile, fg).transpose(3, 0, 1, 2, 4, 5)
        dense = np.zeros((tiles, kh, kw, per_tile, cg, per_tile, fg), np.float32)
        for i in range(per_tile):
            dense[:, :, :, i, :, i, :] = blocks[..., i, :]
        packed = dense.reshape(tiles, kh, kw, depth, width)
    if pointwise:
        roots = _pointwise_tiles(op, packed, (x, bias, y), (depth, width), window, activation_op)
        _erase_replaced([activation_op, op, bias_op], expanded)
        return Recipe(tuple(Kernel(root, lambda _: None) for root in roots))
    if weights is not None:
        packed_filter = packed_global(op, packed, f"__glow_packed_gconv_{tiles}x{kh}x{kw}x{depth}x{width}")
    large_input = n * h * w * depth * 4 > L2_INPUT_BYTES
    kernels = []
    loop = scf.ForOp(index_constant(0), index_constant(tiles), index_constant(1))
    with ir.InsertionPoint(loop.body):
        tile = loop.induction_variable
        tile_x = block_at(x, [0, 0, 0, arith.muli(tile, index_constant(depth))], [n, h, w, depth])
        first = arith.muli(tile, index_constant(width))
        # A tile's output channels in whole registers and the rest (a RegNetX-1.6GF group's 24 as 16 + 8), each
        # a kernel: one of 8-lane vectors throughout did half the lanes per multiply-add.
        for f0, fp in channel_parts(width):
            channel = arith.addi(first, index_constant(f0)) if f0 else first
            if weights is not None:
                tile_filter = block_at(packed_filter, [tile, 0, 0, 0, f0], [1, kh, kw, depth, fp], True)
            else:
                tile_filter = block_at(filter_, [0, 0, 0, channel], [kh, kw, cg, fp])
            tile_conv = ScheduledConv(
                tile_x,
                tile_filter,
                block_at(bias, [channel], [fp]) if bias is not None else None,
                block_at(y, [0, 0, 0, channel], [n, oh, ow, fp]),
                window,
                bias_op,
                activation_op,
            )
            kernels.append(fused_kernel(tile_conv, *register_tile(ow, fp, large_input)))
        scf.YieldOp([])
    _erase_replaced([activation_op, op, bias_op], expanded)
    return Recipe(tuple(kernels))


def _erase_replaced(done: list[ir.Operation | None], expanded: list[ir.OpView]) -> None:
    """Erases the grouped convolution's ops that its kernels replace (`done`: activation, convolution, bias), then
    its (group, channel) views unless something else reads them too."""
    for op in done:
        if op is not None:
            op.erase()
    for view in expanded:
        if not list(view.results[0].uses):
            view.erase()


def _pointwise_tiles(op: ir.Operation, packed: np.ndarray, buffers: tuple[ir.Value, ir.Value | None, ir.Value],
                     sizes: tuple[int, int], window: dict[str, list[int]], activation: ir.Operation | None
                     ) -> list[ir.Operation]:  # fmt: skip
    """A grouped 1x1 convolution's tiles (`packed`: [tiles, 1, 1, depth, width], one group each) each as
    pointwise_recipes.py's kernel on the tile's channel slices of x, the bias and y: the kernels' roots. Tiles
    of one shape share one outlined function (their packed filters are arguments)."""
    x, bias, y = buffers
    depth, width = sizes
    n, h, w, _ = static_shape(x)
    _, oh, ow, _ = static_shape(y)
    roots = []
    for t in range(packed.shape[0]):
        kernel = PointwiseKernel(
            op,
            block_at(x, [0, 0, 0, t * depth], [n, h, w, depth]),
            packed[t, 0, 0],
            block_at(bias, [t * width], [width]) if bias is not None else None,
            block_at(y, [0, 0, 0, t * width], [n, oh, ow, width]),
            window["strides"],
            activation,
        )
        roots += kernel.emit()
    return roots


def _groups_per_tile(groups: int, fg: int) -> int:
    """Groups of `fg` output channels per tile of a grouped convolution (`grouped_recipe`): 1 where `fg` is a
    register or more (wider groups keep their own tiles, of 8-lane vectors where FG is not a multiple of 16),
    else the count S of at most MAX_GROUPS_PER_TILE that divides the groups and makes the widest vectors (the
    largest power of two dividing S * FG, up to 16 lanes), the fewest groups on ties."""
    if fg >= LANES:
        return 1

    def lanes(s: int) -> int:
        return min(LANES, (s * fg) & -(s * fg))

    counts = [s for s in range(1, MAX_GROUPS_PER_TILE + 1) if groups % s == 0]
    return max(counts, key=lambda s: (lanes(s), -s))


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
    last multiple of 16 are one masked vector (the filter is zero-padded)."""

    def __init__(self, op: ir.Operation, x: ir.Value, weights: np.ndarray, bias: ir.Value | None, y: ir.Value,
                 window: dict[str, list[int]], activation: ir.Operation | None) -> None:  # fmt: skip
        # weights: [KH, KW, FG, C]: output channel o's weight for input channel j of its group.
        self.kh, self.kw, self.fg, self.c = weights.shape
        self.x, self.y, self.bias, self.activation = x, y, bias, activation
        self.n, self.oh, self.ow, _ = static_shape(y)
        (self.sh, self.sw), (self.dh, self.dw) = window["strides"], window["dilations"]
        self.filter = self._packed(op, weights)
        self.pixels = row_tile(self.ow, narrow_pixels(self.sw, self.kw, self.dw))
        self.vector_type = ir.VectorType.get([LANES], ir.F32Type.get())
        self.shuffles = [[(lane // self.fg) * self.fg + j for lane in range(LANES)] for j in range(self.fg)]
        # Groups wider than a 128-bit lane (8 channels) need a shuffle across lanes, which LLVM makes two
        # instructions and a spilled register from a vector.shuffle (or from vpermps with a constant index: it
        # folds that into the same shuffle). vpermps with its index vectors read from a global LLVM cannot see
        # into is one: 8-channel layers 1.13-1.51x (`python -m bench.convs --base`), spills per tile 112 -> 12.
        self.indices = None
        if self.fg > 4 and "avx512f" in cpu_flags():
            table = np.array(self.shuffles, np.int32)
            self.indices = packed_global(op, table, f"__glow_packed_shuffles_{self.fg}", constant=False)

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
            iy = arith.addi(arith.muli(oy, index(self.sh)), arith.muli(kh, index(self.dh)))
            ix0 = arith.muli(x0, index(self.sw))
            accs = list(loop.inner_iter_args)
            row = {column: load(self.x, [image, iy, arith.addi(ix0, index(column)), c0], vt, mask)
                   for column in sorted(readers)}  # fmt: skip
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
