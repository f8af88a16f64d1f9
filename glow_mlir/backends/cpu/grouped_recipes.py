"""Schedules of the CPU backend's grouped convolutions, for glow-cpu-schedule (schedule.py); depthwise ones (one
channel per group) are depthwise_recipes.py's.

A grouped convolution (any grouping but depthwise: the `linalg.generic` that lowerings.grouped_conv marks) is one
kernel over tiles of several groups, each tile run by the group-1 schedule (conv_recipes.py) on a filter packed
block-diagonally at compile time; a 1x1 one with a constant filter runs each group as pointwise_recipes.py's
kernel on the group's channel slices instead. docs/OPTIMIZATIONS.md ("Depthwise and grouped convolutions", "Pointwise convolutions")
has the measurements.
"""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import arith, scf

from glow_mlir.backends.cpu.conv_recipes import (
    L2_INPUT_BYTES,
    LANES,
    ScheduledConv,
    epilogue,
    epilogue_alone,
    fused_kernel,
    register_tile,
    static_f32,
)
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
    registers: for the narrow groups of ResNeXt (FG = 4, 8) and RegNetX-200MF (8) the tile computes S times
    the multiply-adds, but in full registers (FG lanes of 16 waste as much), with a register tile of many
    pixels, and one kernel instead of G tiny ones with 4- or 8-lane vectors and the bias and activation as
    passes of their own. Wider groups (S = 1) read their packed filter slice contiguously. A 1x1 filter's
    groups are pointwise kernels (`_pointwise_tiles`, one group per tile: the kernel masks a narrow group's last
    vector, and its tiles need not divide the row).
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
    # A pointwise kernel masks a narrow group's last vector: packing several groups block-diagonally would
    # only multiply its work (ShuffleNet v1 g8's 12-channel groups on 28x28, bench.convs kernel time: 4 per
    # tile 18 % of peak, one per tile 41 %).
    pointwise = weights is not None and (kh, kw) == (1, 1)
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
    ow_tile, f_tile = register_tile(ow, width, n * h * w * depth * 4 > L2_INPUT_BYTES)
    loop = scf.ForOp(index_constant(0), index_constant(tiles), index_constant(1))
    with ir.InsertionPoint(loop.body):
        tile = loop.induction_variable
        channel = arith.muli(tile, index_constant(width))
        if weights is not None:
            tile_filter = block_at(packed_filter, [tile, 0, 0, 0, 0], [1, kh, kw, depth, width], True)
        else:
            tile_filter = block_at(filter_, [0, 0, 0, channel], [kh, kw, cg, fg])
        tile_conv = ScheduledConv(
            block_at(x, [0, 0, 0, arith.muli(tile, index_constant(depth))], [n, h, w, depth]),
            tile_filter,
            block_at(bias, [channel], [width]) if bias is not None else None,
            block_at(y, [0, 0, 0, channel], [n, oh, ow, width]),
            window,
            bias_op,
            activation_op,
        )
        kernel = fused_kernel(tile_conv, ow_tile, f_tile)
        scf.YieldOp([])
    _erase_replaced([activation_op, op, bias_op], expanded)
    return Recipe((kernel,))


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
