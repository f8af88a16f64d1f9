"""The CPU backend's own ops (Glow's `CPUSpecificNodes.h`): convolution, pooling and RoiAlign in NHWC, with their
definitions and the glow-lower rules that make their padding explicit.

glow-cpu-layout (`glow_mlir.backends.cpu.layout`) turns NCHW convolutions and pools into these between
transposes. They are glow.fused_convolution, glow.max_pool and glow.avg_pool with the channels last, so
their rules and evaluators are those ops' with the layout moved.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Unpack

from mlir import ir

from glow_mlir.opdefs import reference as ref
from glow_mlir.opdefs import shapes
from glow_mlir.opdefs import types as t
from glow_mlir.opdefs.base import (
    Array,
    Attr,
    Attrs,
    Evaluator,
    IrDef,
    OpDef,
    Producer,
    Shape,
    define,
    define_ir,
)
from glow_mlir.opdefs.nn import (
    ACTIVATION,
    ROI_ALIGN,
    CONV,
    CONV_IR_ATTRS,
    CONV_OPERANDS,
    POOL_IR_ATTRS,
    POOL_OPERANDS,
    WINDOW,
)
from glow_mlir.passes.lowering.lower import (
    lower_padded_avg_pool,
    lower_padded_convolution,
    lower_padded_max_pool,
    register_rules,
)

# The attributes of the expansion's activation in glow_ir.cpu_expand_depthwise_nhwc.
EXPAND_ACTIVATION = ("expandActivation", "expandActivationArgs")
# ... and of its window (the producer's kernels, strides and dilation).
EXPAND_WINDOW = ("expandKernels", "expandStrides", "expandDilation")

# The CPU convolution's layout: NHWC input, filter [KH, KW, C / group, O].
NHWC_HWIO = shapes.ConvLayout("NHWC", "HWIO", "KH, KW, C / group, O", "dim 2")


def conv_nhwc(input: Shape, filter: Shape, bias: Shape, **attrs: Unpack[shapes.ConvAttrs]) -> Shape:
    """The CPU backend's convolution: NHWC input, filter [KH, KW, C / group, O], bias [O] -> [N, OH, OW, O].

    The rules are convolution's, with the channels last: this op is glow.convolution in another layout.
    """
    return _nchw_to_nhwc(shapes.grouped_convolution(input, filter, bias, NHWC_HWIO, **attrs))


def pool_nhwc(input: Shape, *, kernels: Sequence[int], strides: Sequence[int], pads: Sequence[int]) -> Shape:
    """The CPU backend's max / avg pooling over NHWC input -> [N, OH, OW, C], with pool's rules."""
    shapes.rank(input, 4, "input (NHWC)")
    n, h, w, c = input
    return _nchw_to_nhwc(shapes.pool((n, c, h, w), kernels=kernels, strides=strides, pads=pads))


def _nchw_to_nhwc(shape: Shape) -> Shape:
    return (shape[0], shape[2], shape[3], shape[1])


def _nhwc_to_nchw(shape: Shape) -> Shape:
    shapes.rank(shape, 4, "input (NHWC)")
    return (shape[0], shape[3], shape[1], shape[2])


# The layout changes of the CPU backend (its NHWC ops, glow-cpu-layout and the ops it builds). The NHWC ops are
# the NCHW ops with the layout moved: NHWC <-> NCHW and filter [KH, KW, I, O] -> OIHW around the NCHW
# evaluators, which read the same attributes.
TO_NCHW = (0, 3, 1, 2)
TO_NHWC = (0, 2, 3, 1)


def cpu_conv_nhwc(op: ir.Operation, a: list[Array]) -> Array:
    x, f, b = a
    y = ref.convolution(op, [x.transpose(TO_NCHW), f.transpose(3, 2, 0, 1), b])
    return ref.activation(op, y).transpose(TO_NHWC)


def nhwc_pool(pool: Evaluator) -> Evaluator:
    return lambda op, a: pool(op, [a[0].transpose(TO_NCHW)]).transpose(TO_NHWC)


def _pool_shape(o: Sequence[Shape], a: Attrs, _: Shape | None) -> Shape:
    return pool_nhwc(*o, kernels=a["kernels"], strides=a["strides"], pads=shapes.pads_of(a))


define(OpDef(
    "cpu_conv_nhwc",
    "CPU backend: the fused convolution in NHWC, filter [KH, KW, C / group, O], bias [O]; pads [top, left, "
    "bottom, right].",
    ("input", "filter", "bias"), attrs=(*CONV, *ACTIVATION), backend="cpu",
    shape=lambda o, a, r: shapes.fused(a, conv_nhwc(
        *o, kernels=a["kernels"], strides=a["strides"], pads=shapes.pads_of(a), dilation=a["dilation"],
        group=a["group"],
    )),
    types=t.FLOAT_PRODUCT, evaluate=cpu_conv_nhwc, producer=Producer("glow.cpu_conv_nhwc", 3, 3, 2),
    ir=IrDef(
        "cpu_conv_nhwc", CONV_OPERANDS, attrs=(*CONV_IR_ATTRS, "activation", "activationArgs"),
        graph="cpu_conv_nhwc",
        doc="CPU backend: dest = activation(convolution(src, filter, bias)) in NHWC, filter [KH, KW, C / group, "
        "O], no padding.",
    ),
))
def _expand_depthwise_shape(o: Sequence[Shape], a: Attrs, _: Shape | None) -> Shape:
    """src [N, H, W, C], filter [KH', KW', C, E], bias [E], dw_filter [KH, KW, 1, E], dw_bias [E] -> the depthwise
    convolution's [N, OH, OW, E] over the producer's map (its window `expandKernels`, no padding) padded by
    `pads`."""
    src, filter_, bias, dw_filter, dw_bias = o
    expanded = conv_nhwc(src, filter_, bias, kernels=a["expandKernels"], strides=a["expandStrides"],
                         pads=(0, 0, 0, 0), dilation=a["expandDilation"], group=1)  # fmt: skip
    return conv_nhwc(expanded, dw_filter, dw_bias, kernels=a["kernels"], strides=a["strides"], pads=a["pads"],
                     dilation=a["dilation"], group=expanded[3])  # fmt: skip


# An inverted residual's expansion (or a network's small stem convolution) and the depthwise convolution after it
# as one instruction (glow-cpu-fuse-expansion, backends/cpu/expansion.py): the map between them, the largest
# tensor of such networks, is never a buffer.
define_ir(IrDef(
    "cpu_expand_depthwise_nhwc",
    (("dest", "out"), ("src", "in"), ("filter", "in"), ("bias", "in"), ("dw_filter", "in"), ("dw_bias", "in")),
    attrs=("kernels", "strides", "dilation", "pads", *EXPAND_WINDOW, *EXPAND_ACTIVATION, "activation",
           "activationArgs"),
    attr_kinds=(("kernels", Attr.INTS), ("strides", Attr.INTS), ("dilation", Attr.INTS), ("pads", Attr.INTS),
                *((name, Attr.INTS) for name in EXPAND_WINDOW), (EXPAND_ACTIVATION[0], Attr.STRING),
                (EXPAND_ACTIVATION[1], Attr.FLOATS), ("activation", Attr.STRING), ("activationArgs", Attr.FLOATS)),
    shape=_expand_depthwise_shape, types=t.FLOAT,
    doc="CPU backend: dest = activation(depthwise_conv(pad(expandActivation(conv(src, filter, bias)), pads), "
    "dw_filter, dw_bias)) in NHWC, filter [KH', KW', C, E] (window expandKernels, expandStrides, "
    "expandDilation, no padding), dw_filter [KH, KW, 1, E]; the map between them is not stored.",
))  # fmt: skip

define(OpDef(
    "cpu_max_pool_nhwc", "CPU backend: glow.max_pool in NHWC.", ("input",), attrs=WINDOW, backend="cpu",
    shape=_pool_shape, types=t.FLOAT, evaluate=nhwc_pool(ref.max_pool),
    ir=IrDef("cpu_max_pool_nhwc", POOL_OPERANDS, attrs=POOL_IR_ATTRS, graph="cpu_max_pool_nhwc",
             doc="CPU backend: max pooling in NHWC, no padding."),
))
define(OpDef(
    "cpu_avg_pool_nhwc", "CPU backend: glow.avg_pool in NHWC.", ("input",),
    attrs=(*WINDOW, ("countIncludePads", Attr.BOOL)), backend="cpu", shape=_pool_shape, types=t.FLOAT,
    evaluate=nhwc_pool(ref.avg_pool),
    ir=IrDef("cpu_avg_pool_nhwc", POOL_OPERANDS, attrs=POOL_IR_ATTRS, graph="cpu_avg_pool_nhwc",
             doc="CPU backend: average pooling over full windows in NHWC, no padding."),
))

define(OpDef(
    "cpu_roi_align_nhwc", "CPU backend: glow.roi_align of NHWC input into [R, OH, OW, C].",
    ("input", "rois", "batch_indices"), attrs=ROI_ALIGN, backend="cpu",
    shape=lambda o, a, r: _nchw_to_nhwc(shapes.roi_align(
        _nhwc_to_nchw(o[0]), *o[1:], output_size=a["output_size"], sampling_ratio=a["sampling_ratio"], mode=a["mode"]
    )),
    types=t.boxes, evaluate=lambda op, a: ref.roi_align(op, [a[0].transpose(TO_NCHW), *a[1:]]).transpose(TO_NHWC),
    ir=IrDef(
        "cpu_roi_align_nhwc", (("dest", "out"), ("src", "in"), ("rois", "in"), ("batch_indices", "in")),
        attrs=tuple(name for name, _ in ROI_ALIGN), graph="cpu_roi_align_nhwc",
        doc="CPU backend: glow_ir.roi_align of NHWC src into [R, OH, OW, C], a vector of channels at a time.",
    ),
))

# H and W of NHWC: glow-lower pads these ops along them.
NHWC_HW = (1, 2)
register_rules({
    "glow.cpu_conv_nhwc": lambda op: lower_padded_convolution(op, NHWC_HW),
    "glow.cpu_max_pool_nhwc": lambda op: lower_padded_max_pool(op, NHWC_HW),
    "glow.cpu_avg_pool_nhwc": lambda op: lower_padded_avg_pool(op, NHWC_HW),
})

# glow.softmax's rule on the CPU (row reductions the vector recipes take) registers with the rules above.
from glow_mlir.backends.cpu import rowreduce_softmax  # noqa: E402, F401
