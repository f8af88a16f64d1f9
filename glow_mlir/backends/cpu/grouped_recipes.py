"""Schedules of the CPU backend's depthwise and grouped convolutions, for glow-cpu-schedule (schedule.py).

A depthwise convolution (`linalg.depthwise_conv_2d_nhwc_hwc`) is tiled over output pixels and whole channel
registers, its bias and activation fused into each tile; channels past the last multiple of 16 get a kernel of
their own. A grouped one (any other grouping: the `linalg.generic` that lowerings.grouped_conv marks) is one
kernel over tiles of several groups, each tile run by the group-1 schedule (conv_recipes.py) on a filter packed
block-diagonally at compile time. docs/OPTIMIZATIONS.md ("Depthwise and grouped convolutions") has the
measurements.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, memref, scf

from glow_mlir import ops
from glow_mlir.backends.cpu import transform as steps
from glow_mlir.backends.cpu.conv_recipes import (
    L2_INPUT_BYTES,
    LANES,
    _Conv,
    _divisor_at_most,
    _dense_window,
    _dynamic_block,
    _fused_kernel,
    _steps,
    _usable,
    _window,
    epilogue,
    register_tile,
)
from glow_mlir.backends.cpu.lowerings import GROUPED_CONV_ATTR
from glow_mlir.backends.cpu.recipes import (
    Kernel,
    Recipe,
    constant_data,
    elementwise_recipe,
    generic_on_tensors,
    index_constant,
    on_tensors,
    packed_global,
    recipe,
    static_shape,
    write_back,
)


@recipe("linalg.depthwise_conv_2d_nhwc_hwc")
def depthwise_recipe(op: ir.Operation) -> Recipe | None:
    """Depthwise convolution, loops (n, oh, ow, c, kh, kw): tile [1, 1, ow, c, 1, KW], with the bias and
    activation of a CPU convolution fused into each tile (`_depthwise_kernel`).

    Measured on MobileNetV2's shapes: wide maps (OW >= 28) run best with 4 pixels x 32 channels in image
    order; small ones (14, 7) with up to 8 pixels x 16 channels, channel tiles outermost.

    Channels beyond the last multiple of 16 (MobileNetV3's 88 and 40, ConvNeXt-atto's 40) get a kernel of
    their own on that channel slice (channels are independent), so the main kernel keeps whole 16-lane
    registers: a tile as wide as all 88 or 40 channels is an odd vector length, which lowers to slow code
    (88 channels of 14x14 ran at 1.2 GFLOP/s).
    """
    bias_op, activation_op = epilogue(op)
    if not _usable(op):
        return _epilogue_alone(bias_op, activation_op)
    x, filter_, y = op.operands
    bias = bias_op.operands[0] if bias_op is not None else None
    c = static_shape(y)[3]
    main = c - c % LANES
    conv = _Conv(x, filter_, bias, y, _dense_window(_window(op)), bias_op, activation_op)
    kernels = []
    for c0, cp in [(0, main), (main, c - main)] if 0 < main < c else [(0, c)]:
        part = conv
        if (c0, cp) != (0, c):
            sliced = {name: _channel_slice(getattr(conv, name), c0, cp) for name in ("x", "filter", "y")}
            bias_slice = _channel_slice(bias, c0, cp) if bias is not None else None
            part = dataclasses.replace(conv, bias=bias_slice, **sliced)
        kernels.append(_depthwise_kernel(part))
    for done in (activation_op, op, bias_op):
        if done is not None:
            done.erase()
    return Recipe(tuple(kernels))


def _depthwise_tile(ow: int, c: int) -> tuple[int, int, tuple[int, ...]]:
    """(ow tile, channel tile, loop interchange) of a depthwise convolution with rows of `ow` pixels and `c`
    channels."""
    wide = ow >= 28
    c_tile = next((w for w in ((32, 16) if wide else (16,)) if c % w == 0), None)
    if c_tile is None:
        c_tile = c if c > LANES else max(w for w in (16, 8, 4, 2, 1) if c % w == 0)
    ow_tile = _divisor_at_most(ow, 4 if wide else 8)
    return ow_tile, c_tile, () if wide else (0, 3, 1, 2, 4, 5)


def _epilogue_alone(bias_op: ir.Operation | None, activation_op: ir.Operation | None) -> Recipe:
    """The vector recipes of a convolution's marked bias and activation ops, for a convolution that no recipe
    schedules (non-static or non-f32 operands): they then run as elementwise kernels of their own."""
    parts = [elementwise_recipe(e) for e in (bias_op, activation_op) if e is not None]
    return Recipe(tuple(k for part in parts if part is not None for k in part.kernels))


def _channel_slice(value: ir.Value, start: int, size: int) -> ir.Value:
    """Channels [start, start + size) of memref `value` (channels last)."""
    shape = static_shape(value)
    strides, offset = ir.MemRefType(value.type).get_strides_and_offset()
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    # A static slice of a static-offset view has a static offset (the subview verifier insists on it).
    result_offset = dynamic if offset == dynamic else offset + start * strides[-1]
    layout = ir.StridedLayoutAttr.get(result_offset, strides)
    result = ir.MemRefType.get([*shape[:-1], size], ir.MemRefType(value.type).element_type, layout=layout)
    offsets = ops.i64_array([0] * (len(shape) - 1) + [start])
    sizes = ops.i64_array([*shape[:-1], size])
    return memref.SubViewOp(result, value, [], [], [], offsets, sizes, ops.i64_array([1] * len(shape))).result


def _depthwise_kernel(conv: _Conv) -> Kernel:
    """y = activation(depthwise(x, filter) + bias) (NHWC memrefs) as one scheduled kernel: the channel tile a
    whole register or more where the channels allow, else their largest power-of-two divisor.

    As in `_fused_kernel`, each [1, 1, ow, c] output tile starts from the bias and gets the activation in
    registers before its one store: a depthwise layer does only KH * KW multiply-adds per output element, so
    the bias and activation as passes of their own over the output (write, read and write, read and write)
    cost as much as the convolution (MobileNetV2's 3x3 on 28x28x192: 25 + 51 us beside its 51)."""
    _, _, ow, c = static_shape(conv.y)
    kw = static_shape(conv.filter)[1]
    ow_tile, c_tile, interchange = _depthwise_tile(ow, c)
    inputs = [conv.x, conv.filter, *([conv.bias] if conv.bias is not None else [])]
    tensors = on_tensors([*inputs, conv.y], [False] * len(inputs) + [True])
    init = tensors[-1]
    if conv.bias_op is not None:
        init = generic_on_tensors(conv.bias_op, [tensors[2]], init)
    result = linalg.depthwise_conv_2d_nhwc_hwc(tensors[0], tensors[1], outs=[init], **conv.window)
    if conv.activation_op is not None:
        result = generic_on_tensors(conv.activation_op, [], result)
    write_back(result, conv.y)
    if conv.bias_op is None and conv.activation_op is None:
        return Kernel(result.owner.operation, _steps([1, 1, ow_tile, c_tile, 1, kw], interchange))
    # The root is the activation (4 loops) or, without one, the convolution (6: its window not tiled here).
    extra = [] if conv.activation_op is not None else [0, 0]

    def build(handle: ir.Value) -> None:
        fused = steps.fuse(handle, [1, 1, ow_tile, c_tile, *extra], interchange[: 4 + len(extra)])
        function = steps.function_of(fused)
        steps.canonicalize(function)
        tiled = steps.tile(steps.match(function, "linalg.depthwise_conv_2d_nhwc_hwc"), [0, 0, 0, 0, 1, kw])
        steps.vectorize(steps.decompose(tiled))
        steps.vectorize(steps.match(function, "linalg.generic"))

    return Kernel(result.owner.operation, build)


# The most groups one tile of a grouped convolution packs together (`_groups_per_tile`).
MAX_GROUPS_PER_TILE = 8


def _is_grouped_conv(op: ir.Operation) -> bool:
    return GROUPED_CONV_ATTR in op.attributes


@recipe("linalg.generic", when=_is_grouped_conv)
def grouped_recipe(op: ir.Operation) -> Recipe | None:
    """A grouped convolution (lowerings.grouped_conv, G groups of CG input and FG output channels) as one
    kernel: an scf.for over tiles of S consecutive groups, each the direct convolution (`_fused_kernel`, bias
    and activation fused) of the tile's S * CG input channels into its S * FG output channels.

    With a constant filter, a tile's filter is packed at compile time as a dense [KH, KW, S * CG, S * FG]
    block, zero outside the S diagonal [CG, FG] blocks, and S (`_groups_per_tile`) makes S * FG whole 16-lane
    registers: for the narrow groups of ResNeXt (FG = 4, 8) and RegNetX-200MF (8) the tile computes S times
    the multiply-adds, but in full registers (FG lanes of 16 waste as much), with a register tile of many
    pixels, and one kernel instead of G tiny ones with 4- or 8-lane vectors and the bias and activation as
    passes of their own. Wider groups (S = 1) read their packed filter slice contiguously.
    """
    x5, w5, y5 = op.operands
    expanded = [v.owner for v in (x5, w5, y5)]
    bias_op, activation_op = epilogue(expanded[2].operation)
    if not _usable(op):
        return _epilogue_alone(bias_op, activation_op)
    x, filter_, y = (e.operation.operands[0] for e in expanded)
    kh, kw, cg, groups, fg = static_shape(w5)
    n, h, w, _ = static_shape(x)
    _, oh, ow, _ = static_shape(y)
    sh, sw, dh, dw = ir.DenseI64ArrayAttr(op.attributes[GROUPED_CONV_ATTR])
    window = {"strides": [sh, sw], "dilations": [dh, dw]}
    bias = bias_op.operands[0] if bias_op is not None else None
    weights = constant_data(filter_)
    per_tile = _groups_per_tile(groups, fg) if weights is not None else 1
    tiles, width, depth = groups // per_tile, per_tile * fg, per_tile * cg
    if weights is not None:
        blocks = np.asarray(weights).reshape(kh, kw, cg, tiles, per_tile, fg).transpose(3, 0, 1, 2, 4, 5)
        dense = np.zeros((tiles, kh, kw, per_tile, cg, per_tile, fg), np.float32)
        for i in range(per_tile):
            dense[:, :, :, i, :, i, :] = blocks[..., i, :]
        packed = dense.reshape(tiles, kh, kw, depth, width)
        packed_filter = packed_global(op, packed, f"__glow_packed_gconv_{tiles}x{kh}x{kw}x{depth}x{width}")
    ow_tile, f_tile = register_tile(ow, width, n * h * w * depth * 4 > L2_INPUT_BYTES)
    loop = scf.ForOp(index_constant(0), index_constant(tiles), index_constant(1))
    with ir.InsertionPoint(loop.body):
        tile = loop.induction_variable
        channel = arith.muli(tile, index_constant(width))
        if weights is not None:
            tile_filter = _dynamic_block(packed_filter, [tile, 0, 0, 0, 0], [1, kh, kw, depth, width], True)
        else:
            tile_filter = _dynamic_block(filter_, [0, 0, 0, channel], [kh, kw, cg, fg])
        tile_conv = _Conv(
            _dynamic_block(x, [0, 0, 0, arith.muli(tile, index_constant(depth))], [n, h, w, depth]),
            tile_filter,
            _dynamic_block(bias, [channel], [width]) if bias is not None else None,
            _dynamic_block(y, [0, 0, 0, channel], [n, oh, ow, width]),
            window,
            bias_op,
            activation_op,
        )
        kernel = _fused_kernel(tile_conv, ow_tile, f_tile)
        scf.YieldOp([])
    for done in (activation_op, op, bias_op):
        if done is not None:
            done.erase()
    # The (group, channel) views, unless something else reads them too.
    for view in expanded:
        if not list(view.results[0].uses):
            view.erase()
    return Recipe((kernel,))


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
