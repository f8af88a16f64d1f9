"""Definitions of the neural-network ops: convolutions, pooling, batch normalization.

Their instructions carry no pads: glow-lower makes padding explicit before IRGen, which copies only the
attributes an instruction lists (`IrDef.attrs`).
"""

from __future__ import annotations

from glow_mlir.opdefs import reference as ref
from glow_mlir.opdefs import shapes
from glow_mlir.opdefs import types as t
from glow_mlir.opdefs.base import Attr, Attrs, IrDef, OpDef, Producer, Shape, define

WINDOW = (("kernels", Attr.INTS), ("strides", Attr.INTS), ("pads", Attr.INTS))
CONV = (*WINDOW, ("group", Attr.INT), ("dilation", Attr.INTS))
ACTIVATION = (("activation", Attr.STRING), ("activationArgs", Attr.FLOATS))
CONV_OPERANDS = (("dest", "out"), ("src", "in"), ("filter", "in"), ("bias", "in"))
POOL_OPERANDS = (("dest", "out"), ("src", "in"))
# The attributes an instruction keeps (no pads).
CONV_IR_ATTRS = ("kernels", "strides", "group", "dilation")
POOL_IR_ATTRS = ("kernels", "strides")


def conv_shape(operands: list[Shape], a: Attrs, _: Shape | None) -> Shape:
    return shapes.convolution(
        *operands, kernels=a["kernels"], strides=a["strides"], pads=shapes.pads_of(a), dilation=a["dilation"],
        group=a["group"],
    )


def pool_shape(operands: list[Shape], a: Attrs, _: Shape | None) -> Shape:
    return shapes.pool(*operands, kernels=a["kernels"], strides=a["strides"], pads=shapes.pads_of(a))


define(OpDef(
    "convolution", "2-D convolution, NCHW input, OIHW filter (I = C / group); pads are [top, left, bottom, right].",
    ("input", "filter", "bias"), attrs=CONV, shape=conv_shape, types=t.FLOAT, evaluate=ref.convolution,
    producer=Producer("glow.fused_convolution", 1, 0, 1),
    ir=IrDef(
        "convolution", CONV_OPERANDS, attrs=CONV_IR_ATTRS, graph="convolution",
        doc="2-D NCHW convolution with no padding (the graph makes padding explicit before IRGen).",
    ),
))
define(OpDef(
    "max_pool", "2-D max pooling, NCHW; padding never wins the max.", ("input",), attrs=WINDOW,
    shape=pool_shape, types=t.FLOAT, evaluate=ref.max_pool,
    ir=IrDef("max_pool", POOL_OPERANDS, attrs=POOL_IR_ATTRS, graph="max_pool",
             doc="2-D NCHW max pooling, no padding."),
))
define(OpDef(
    "avg_pool", "2-D average pooling, NCHW.", ("input",), attrs=(*WINDOW, ("countIncludePads", Attr.BOOL)),
    shape=pool_shape, types=t.FLOAT, evaluate=ref.avg_pool,
    ir=IrDef("avg_pool", POOL_OPERANDS, attrs=POOL_IR_ATTRS, graph="avg_pool",
             doc="2-D NCHW average pooling over full windows, no padding."),
))
define(OpDef(
    "batch_normalization", "Inference batch normalization along dimension `channelIdx`.",
    ("input", "scale", "bias", "mean", "var"),
    attrs=(("epsilon", Attr.FLOAT), ("momentum", Attr.FLOAT), ("channelIdx", Attr.INT)),
    shape=lambda o, a, r: shapes.batch_normalization(*o, channel_idx=a["channelIdx"], epsilon=a["epsilon"]),
    types=t.FLOAT, evaluate=ref.batch_normalization,
))
define(OpDef(
    "conv_transpose",
    "2-D transposed convolution, NCHW input, filter [C, O / group, KH, KW] (ONNX's layout); pads [top, left, "
    "bottom, right] crop the full output.",
    ("input", "filter", "bias"), attrs=CONV,
    shape=lambda o, a, r: shapes.conv_transpose(
        *o, kernels=a["kernels"], strides=a["strides"], pads=shapes.pads_of(a), dilation=a["dilation"],
        group=a["group"],
    ),
    types=t.FLOAT, evaluate=ref.conv_transpose,
    ir=IrDef(
        "conv_transpose", CONV_OPERANDS, attrs=CONV_IR_ATTRS, graph="conv_transpose",
        doc="2-D NCHW transposed convolution with no cropping (the graph makes pads a slice before IRGen); "
        "filter [C, O / group, KH, KW].",
    ),
))
define(OpDef(
    "fused_convolution",
    "activation(convolution(input, filter, bias)), one kernel (Glow's fused activation): attributes as "
    "glow.convolution.",
    ("input", "filter", "bias"), attrs=(*CONV, *ACTIVATION),
    shape=lambda o, a, r: shapes.fused(a, conv_shape(o, a, r)), types=t.FLOAT, evaluate=ref.fused_convolution,
    producer=Producer("glow.fused_convolution", 1, 0, 1),
    ir=IrDef(
        "fused_convolution", CONV_OPERANDS, attrs=(*CONV_IR_ATTRS, "activation", "activationArgs"),
        graph="fused_convolution", doc="dest = activation(convolution(src, filter, bias)), NCHW, no padding.",
    ),
))
ROI_ALIGN = (
    ("output_size", Attr.INTS), ("sampling_ratio", Attr.INT), ("spatial_scale", Attr.FLOAT),
    ("half_pixel", Attr.BOOL), ("mode", Attr.STRING),
)
define(OpDef(
    "roi_align",
    "ONNX RoiAlign: for each box [x0, y0, x1, y1] of `rois` (scaled by `spatial_scale`, less half a pixel with "
    "`half_pixel`) in image `batch_indices` of the NCHW input, an `output_size` grid of cells, each the average "
    "(mode avg) or max (mode max) of bilinear samples, `sampling_ratio` per axis or ceil(box / output) when 0.",
    ("input", "rois", "batch_indices"), attrs=ROI_ALIGN,
    shape=lambda o, a, r: shapes.roi_align(
        *o, output_size=a["output_size"], sampling_ratio=a["sampling_ratio"], mode=a["mode"]
    ),
    types=t.boxes, evaluate=ref.roi_align,
    ir=IrDef(
        "roi_align", (("dest", "out"), ("src", "in"), ("rois", "in"), ("batch_indices", "in")),
        attrs=tuple(name for name, _ in ROI_ALIGN), graph="roi_align",
        doc="dest [R, C, OH, OW] = roi_align of NCHW src (rules as glow.roi_align); a batch index out of range "
        "reads its nearest image, a cell takes at most 1024 samples along an axis.",
    ),
))
