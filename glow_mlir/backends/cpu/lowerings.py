"""glow-ir-to-linalg's lowerings of the CPU backend's own instructions: the NHWC convolution and pools that
glow-cpu-layout creates (`glow_ir.cpu_conv_nhwc`, `glow_ir.cpu_max_pool_nhwc`, `glow_ir.cpu_avg_pool_nhwc`).

They register into the codegen table (glow_mlir/codegen/table.py) on import, and mark the bias and
activation ops of a group-1 convolution for glow-cpu-schedule, which reads `CONV_BIAS_ATTR` and
`CONV_ACTIVATION_ATTR` from here.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import linalg

from glow_mlir import ops
from glow_mlir.codegen.builders import (
    block,
    conv_operands,
    float_only,
    generic,
    identity_map,
    rank4,
    reshape,
)
from glow_mlir.codegen.math import activate
from glow_mlir.codegen.nn import avg_pool, max_pool
from glow_mlir.codegen.table import fail, lowering, register_lowerings

# Marks on the bias and activation ops of a CPU convolution, which glow-cpu-schedule fuses into the
# convolution's tiles (backends/cpu/conv_recipes.py) instead of running them as passes of their own.
CONV_BIAS_ATTR = "glow.conv_bias"
CONV_ACTIVATION_ATTR = "glow.conv_activation"


@lowering("cpu_conv_nhwc")
@float_only
def _cpu_conv_nhwc(op: ir.Operation) -> None:
    """The CPU backend's convolution: dest = activation(conv(src, filter) + bias), NHWC, filter [KH, KW, I, O].

    dest starts as the bias broadcast along N, H and W, the convolution accumulates into it, and the
    activation then runs in place: three linalg ops on dest, which glow-cpu-schedule runs as one kernel for
    group 1 (the marked bias and activation fused into each output tile, backends/cpu/conv_recipes.py) and
    one by one otherwise.
    Group 1 is `conv_2d_nhwc_hwcf`; a depthwise convolution (one input channel per group) is
    `depthwise_conv_2d_nhwc_hwc`, or `_hwcm` with a channel multiplier, on views of the same buffers; any
    other grouping is one `conv_2d_nhwc_hwcf` per group on channel slices.
    """
    dest, src, filter_, bias, kernels, strides, dilation, group = conv_operands(op)
    n, h, w, c = rank4(op, src)
    _, oh, ow, f = rank4(op, dest)
    filter_dims = ops.shape(filter_)
    if group < 1 or c % group or f % group or filter_dims != (*kernels, c // group, f):
        raise fail(op, f"filter {list(filter_dims)} does not fit {c} channels, {f} filters, group {group}")
    if ops.shape(bias) != (f,):
        raise fail(op, f"bias {list(ops.shape(bias))} is not [{f}]")

    bias_map = ir.AffineMap.get(4, 0, [ir.AffineDimExpr.get(3)])
    bias_init = generic([bias], dest, [bias_map, identity_map(4)], lambda a: a[0])
    window = {"strides": strides, "dilations": dilation}
    if group == 1:
        linalg.conv_2d_nhwc_hwcf(src, filter_, outs=[dest], **window)
        # The CPU schedule fuses the bias and the activation into the convolution's tiles (conv_recipes).
        bias_init.attributes[CONV_BIAS_ATTR] = ir.UnitAttr.get()
        activation = activate(op, dest)
        if activation is not None:
            activation.attributes[CONV_ACTIVATION_ATTR] = ir.UnitAttr.get()
        return
    if group == c and f == c:
        linalg.depthwise_conv_2d_nhwc_hwc(src, reshape(filter_, [*kernels, c]), outs=[dest], **window)
    elif group == c:
        m = f // c
        # Output channel o = channel * m + j of a depthwise convolution with channel multiplier m.
        depthwise = linalg.depthwise_conv_2d_nhwc_hwcm
        depthwise(src, reshape(filter_, [*kernels, c, m]), outs=[reshape(dest, [n, oh, ow, c, m])], **window)
    else:
        cg, fg = c // group, f // group
        for g in range(group):
            linalg.conv_2d_nhwc_hwcf(
                block(src, [0, 0, 0, g * cg], [n, h, w, cg], op),
                block(filter_, [0, 0, 0, g * fg], [*kernels, cg, fg], op),
                outs=[block(dest, [0, 0, 0, g * fg], [n, oh, ow, fg], op)],
                **window,
            )
    activate(op, dest)


register_lowerings(
    {
        "cpu_max_pool_nhwc": float_only(lambda op: max_pool(op, linalg.pooling_nhwc_max)),
        "cpu_avg_pool_nhwc": float_only(lambda op: avg_pool(op, linalg.pooling_nhwc_sum)),
    }
)
