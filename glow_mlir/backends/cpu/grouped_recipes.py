"""Schedules of the CPU backend's grouped convolutions, for glow-cpu-schedule (schedule.py); depthwise ones (one
channel per group) are depthwise_recipes.py's.

A grouped convolution (any grouping but depthwise: the `linalg.generic` that lowerings.grouped_conv marks) is one
kernel over tiles of several groups, each tile run by the group-1 schedule (conv_recipes.py) on a filter packed
block-diagonally at compile time; a 1x1 one with a constant filter runs each group as pointwise_recipes.py's
kernel on the group's channel slices instead, and one whose groups have 2, 4 or 8 channels is grouped_narrow.py's
vector code: where they fill whole registers DiagonalGroups' (the products by the filter's diagonals, rotated
into place per output) or for a 1x1 window NarrowGroupKernel's (input channels shuffled to their group's lanes),
and where they do not FlatNarrowGroups' (those shuffles on rows as flat runs of floats).
docs/OPTIMIZATIONS.md ("Depthwise and grouped convolutions", "Pointwise convolutions", "Narrow groups") has the
measurements.
"""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import arith, scf

from glow_mlir.backends.cpu.conv_recipes import (
    L2_INPUT_BYTES,
    LANES,
    ScheduledConv,
    channel_parts,
    epilogue,
    epilogue_alone,
    fused_kernel,
    register_tile,
    static_f32,
)
from glow_mlir.backends.cpu.grouped_interleaved import InterleavedGroups, across_groups
from glow_mlir.backends.cpu.grouped_narrow import (
    DiagonalGroups,
    FlatNarrowGroups,
    NarrowGroupKernel,
    by_diagonals,
    narrow_groups,
)
from glow_mlir.backends.cpu.grouped_pointwise import PixelGroups, along_pixels
from glow_mlir.backends.cpu.lowerings import GROUPED_CONV_ATTR
from glow_mlir.backends.cpu.pointwise_recipes import PointwiseKernel
from glow_mlir.backends.cpu.recipes import (
    Kernel,
    Recipe,
    block_at,
    constant_data,
    index_constant,
    packed_global,
    recipe,
    static_shape,
)


# The most groups one tile of a grouped convolution packs together (`_groups_per_tile`).
MAX_GROUPS_PER_TILE = 8


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
    channels with at least 7/8 of their registers' lanes busy are NarrowGroupKernel's (`narrow_groups`; by
    diagonals, DiagonalGroups, for windows larger than 1x1: `by_diagonals`), the others with unit stride along the
    row FlatNarrowGroups'.
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
    if narrow is not None and by_diagonals(fg, kh, kw, sw, dw, ow):
        narrow = DiagonalGroups
    if FlatNarrowGroups.fits(x, cg, fg, bias, y, window) and narrow is None:
        narrow = FlatNarrowGroups
    if weights is not None and narrow is not None:
        root = narrow(op, x, np.asarray(weights), bias, y, window, activation_op).emit()
        return _vector_code([root], [activation_op, op, bias_op], expanded)
    # A pointwise kernel masks a narrow group's last vector: packing several groups block-diagonally would
    # only multiply its work (ShuffleNet v1 g8's 12-channel groups on 28x28, bench.convs kernel time: 4 per
    # tile 18 % of peak, one per tile 41 %).
    pointwise = weights is not None and (kh, kw) == (1, 1)
    if pointwise and across_groups(groups, cg, fg, x, y, window["strides"]):
        root = InterleavedGroups(op, x, np.asarray(weights), bias, y, activation_op, groups).emit()
        return _vector_code([root], [activation_op, op, bias_op], expanded)
    if pointwise and along_pixels(cg, fg, x, y, window["strides"]):
        root = PixelGroups(op, x, np.asarray(weights), bias, y, activation_op, groups).emit()
        return _vector_code([root], [activation_op, op, bias_op], expanded)
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
        return _vector_code(roots, [activation_op, op, bias_op], expanded)
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


def _vector_code(roots: list[ir.Operation], done: list[ir.Operation | None], expanded: list[ir.OpView]) -> Recipe:
    """The recipe of kernels written as vector code (`roots`: no transform left to run on them), the ops they
    replace erased (`_erase_replaced`)."""
    _erase_replaced(done, expanded)
    return Recipe(tuple(Kernel(root, lambda _: None) for root in roots))


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
