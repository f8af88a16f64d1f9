"""glow-ir-to-linalg's lowerings of the CPU backend's own instructions: the NHWC convolution and pools that
glow-cpu-layout creates (`glow_ir.cpu_conv_nhwc`, `glow_ir.cpu_max_pool_nhwc`, `glow_ir.cpu_avg_pool_nhwc`,
`glow_ir.cpu_roi_align_nhwc`).

They register into the codegen table (glow_mlir/codegen/table.py) on import, and mark the bias and
activation ops of a convolution for glow-cpu-schedule, which reads `CONV_BIAS_ATTR` and
`CONV_ACTIVATION_ATTR` from here.
"""

from __future__ import annotations

from collections.abc import Sequence

from mlir import ir
from mlir.dialects import arith, linalg, memref

from glow_mlir import ops
from glow_mlir.backends.cpu.ops import EXPAND_ACTIVATION, EXPAND_WINDOW, conv_nhwc
from glow_mlir.codegen.builders import (
    block,
    conv_operands,
    float_only,
    generic,
    identity_map,
    rank4,
    reshape,
    split_last,
)
from glow_mlir.codegen.math import activate
from glow_mlir.codegen.nn import avg_pool, max_pool
from glow_mlir.codegen.roi_align import lower_roi_align
from glow_mlir.codegen.table import fail, lowering, register_lowerings

# Marks on the bias and activation ops of a CPU convolution, which glow-cpu-schedule fuses into the
# convolution's tiles (backends/cpu/conv_recipes.py) instead of running them as passes of their own.
CONV_BIAS_ATTR = "glow.conv_bias"
CONV_ACTIVATION_ATTR = "glow.conv_activation"
# Marks the fill of the expanded map's buffer, the 1x1 convolution writing it and the depthwise convolution reading
# it, lowered from glow_ir.cpu_expand_depthwise_nhwc: glow-cpu-schedule runs them, with both convolutions' bias and
# activation, as one kernel (expansion_recipes.py) before any other recipe.
EXPANSION_ATTR = "glow.expansion"
# Marks the linalg.generic of a grouped convolution (`grouped_conv`), with its window: [sh, sw, dh, dw].
GROUPED_CONV_ATTR = "glow.grouped_conv"


@lowering("cpu_conv_nhwc")
@float_only
def _cpu_conv_nhwc(op: ir.Operation) -> None:
    """The CPU backend's convolution: dest = activation(conv(src, filter) + bias), NHWC, filter [KH, KW, I, O].

    dest starts as the bias broadcast along N, H and W, the convolution accumulates into it, and the
    activation then runs in place: three linalg ops on dest, which glow-cpu-schedule runs as one kernel (the
    marked bias and activation fused into each output tile, backends/cpu/conv_recipes.py), but for a
    depthwise convolution with a channel multiplier, whose three ops run one by one.
    Group 1 is `conv_2d_nhwc_hwcf`; a depthwise convolution (one input channel per group) is
    `depthwise_conv_2d_nhwc_hwc`, or `_hwcm` with a channel multiplier, on views of the same buffers; any
    other grouping is one linalg.generic over all groups (`grouped_conv`).
    """
    dest, src, filter_, bias, kernels, strides, dilation, group = conv_operands(op)
    n, _, _, c = rank4(op, src)
    _, oh, ow, f = rank4(op, dest)
    filter_dims = ops.shape(filter_)
    if group < 1 or c % group or f % group or filter_dims != (*kernels, c // group, f):
        raise fail(op, f"filter {list(filter_dims)} does not fit {c} channels, {f} filters, group {group}")
    if ops.shape(bias) != (f,):
        raise fail(op, f"bias {list(ops.shape(bias))} is not [{f}]")

    bias_map = ir.AffineMap.get(4, 0, [ir.AffineDimExpr.get(3)])
    bias_init = generic([bias], dest, [bias_map, identity_map(4)], lambda a: a[0])
    window = {"strides": strides, "dilations": dilation}
    # The CPU schedule fuses the bias and the activation into the convolution's tiles (conv_recipes), except
    # for a channel multiplier's.
    fused = True
    if group == 1:
        linalg.conv_2d_nhwc_hwcf(src, filter_, outs=[dest], **window)
    elif group == c and f == c:
        linalg.depthwise_conv_2d_nhwc_hwc(src, reshape(filter_, [*kernels, c]), outs=[dest], **window)
    elif group == c:
        m = f // c
        # Output channel o = channel * m + j of a depthwise convolution with channel multiplier m.
        depthwise = linalg.depthwise_conv_2d_nhwc_hwcm
        depthwise(src, reshape(filter_, [*kernels, c, m]), outs=[reshape(dest, [n, oh, ow, c, m])], **window)
        fused = False
    else:
        grouped_conv(src, filter_, dest, group, strides, dilation)
    activation = activate(op, dest)
    if fused:
        bias_init.attributes[CONV_BIAS_ATTR] = ir.UnitAttr.get()
        if activation is not None:
            activation.attributes[CONV_ACTIVATION_ATTR] = ir.UnitAttr.get()


@lowering("cpu_expand_depthwise_nhwc")
@float_only
def _cpu_expand_depthwise_nhwc(op: ir.Operation) -> None:
    """An expansion (or stem) and depthwise convolution (backends/cpu/expansion.py) as the two convolutions they
    are, the map between them in a buffer of its own with the padding around it: the first convolution's bias,
    convolution and activation on the buffer's interior, then the depthwise convolution's on dest, each bias and
    activation marked as a CPU convolution's; the fill and both convolutions marked EXPANSION_ATTR for the kernel
    that fuses them and removes the buffer. Left to the convolutions' own recipes, they are correct as they
    stand."""
    dest, src, filter_, bias, dw_filter, dw_bias = op.operands
    rank4(op, src)
    n, h, w, c = _produced(op)
    top, left, bottom, right = ops.ints(op, "pads")
    elt = ops.element_type(src)
    padded = memref.alloc(ops.memref_type([n, h + top + bottom, w + left + right, c], elt), [], [])
    marked = [linalg.fill(arith.constant(elt, 0.0), outs=[padded]).owner]
    interior = block(padded, [0, top, left, 0], [n, h, w, c], op) if any((top, left, bottom, right)) else padded
    bias_map = ir.AffineMap.get(4, 0, [ir.AffineDimExpr.get(3)])
    pw_init = generic([bias], interior, [bias_map, identity_map(4)], lambda a: a[0])
    producer = {"strides": ops.ints(op, "expandStrides"), "dilations": ops.ints(op, "expandDilation")}
    marked.append(linalg.conv_2d_nhwc_hwcf(src, filter_, outs=[interior], **producer).owner)
    pw_activation = activate(op, interior, EXPAND_ACTIVATION)
    window = {"strides": ops.ints(op, "strides"), "dilations": ops.ints(op, "dilation")}
    dw_init = generic([dw_bias], dest, [bias_map, identity_map(4)], lambda a: a[0])
    depthwise = linalg.depthwise_conv_2d_nhwc_hwc(padded, reshape(dw_filter, [*ops.ints(op, "kernels"), c]),
                                                  outs=[dest], **window).owner  # fmt: skip
    activation = activate(op, dest)
    memref.dealloc(padded)
    for marked_op in [*marked, depthwise]:
        if marked_op is not None:
            marked_op.attributes[EXPANSION_ATTR] = ir.UnitAttr.get()
    for init, act in ((pw_init, pw_activation), (dw_init, activation)):
        init.attributes[CONV_BIAS_ATTR] = ir.UnitAttr.get()
        if act is not None:
            act.attributes[CONV_ACTIVATION_ATTR] = ir.UnitAttr.get()


def _produced(op: ir.Operation) -> tuple[int, ...]:
    """The [N, H, W, E] map that cpu_expand_depthwise_nhwc's first convolution produces (no padding): the CPU
    convolution's shape rule."""
    _, src, filter_, bias, _, _ = op.operands
    kernels, strides, dilation = (ops.ints(op, a) for a in EXPAND_WINDOW)
    return conv_nhwc(ops.shape(src), ops.shape(filter_), ops.shape(bias), kernels=kernels, strides=strides,
                     pads=(0, 0, 0, 0), dilation=dilation, group=1)  # fmt: skip


def grouped_conv(
    src: ir.Value, filter_: ir.Value, dest: ir.Value, group: int, strides: Sequence[int], dilation: Sequence[int]
) -> ir.Operation:
    """dest[n, oh, ow, g * FG + j] += sum over (kh, kw, c) of src[n, oh * sh + kh * dh, ow * sw + kw * dw,
    g * CG + c] * filter_[kh, kw, c, g * FG + j], as one linalg.generic on the buffers with their channels
    split into (group, channel) (loops n, oh, ow, g, j, kh, kw, c), marked GROUPED_CONV_ATTR with the window.

    One op for all groups, so that the schedule sees the whole convolution (grouped_recipes.grouped_recipe packs
    several narrow groups into one tile of whole registers); unscheduled, it runs as loops."""
    (sh, sw), (dh, dw) = strides, dilation
    c, f = ops.shape(src)[3], ops.shape(dest)[3]
    x, w, y = split_last(src, c // group), split_last(filter_, f // group), split_last(dest, f // group)
    d = [ir.AffineDimExpr.get(i) for i in range(8)]  # n, oh, ow, g, j, kh, kw, c
    maps = [
        ir.AffineMap.get(8, 0, [d[0], d[1] * sh + d[5] * dh, d[2] * sw + d[6] * dw, d[3], d[7]]),
        ir.AffineMap.get(8, 0, [d[5], d[6], d[7], d[3], d[4]]),
        ir.AffineMap.get(8, 0, d[:5]),
    ]
    conv = generic([x, w], y, maps, lambda a: arith.addf(a[2], arith.mulf(a[0], a[1])), reductions=(5, 6, 7))
    conv.attributes[GROUPED_CONV_ATTR] = ir.DenseI64ArrayAttr.get([sh, sw, dh, dw])
    return conv


register_lowerings(
    {
        "cpu_max_pool_nhwc": float_only(lambda op: max_pool(op, linalg.pooling_nhwc_max)),
        "cpu_roi_align_nhwc": lambda op: lower_roi_align(op, channels_last=True),
        "cpu_avg_pool_nhwc": float_only(lambda op: avg_pool(op, linalg.pooling_nhwc_sum)),
    }
)
