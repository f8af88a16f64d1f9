"""glow-cpu-layout: the CPU backend's post-lowering transform, which moves convolutions and pools to NHWC.

The graph is NCHW (ONNX's and PyTorch's layout), but the CPU kernels vectorize along the channels: a direct
NHWC convolution reaches the machine's peak where the same schedule on NCHW gets a tenth of it, which is why
Glow's own CPU backend converts too. Each NCHW op becomes its NHWC counterpart between two transposes:

- convolution / fused_convolution(x, W, b) -> transpose(cpu_conv_nhwc(transpose(x, [0, 2, 3, 1]), W', b),
  [0, 3, 1, 2]), with W' the filter as [KH, KW, C / group, O]: the transposed constant when W is one (folded
  here, once), else a glow.transpose of W. A fused_convolution keeps its activation; a convolution gets
  activation "none".
- max_pool / avg_pool(x) -> transpose(cpu_*_pool_nhwc(transpose(x, [0, 2, 3, 1])), [0, 3, 1, 2]); roi_align(x,
  rois, batch_indices) likewise (cpu_roi_align_nhwc: each sample reads a vector of channels).
- conv_transpose(x, W, b) -> transpose(the interleaved phases of one cpu_conv_nhwc, [0, 3, 1, 2])
  (conv_transpose.py).
- a convolution whose taps read padding for a large share of its outputs (a dilated one on a small map) ->
  the concatenation of unpadded cpu_conv_nhwc ops on the regions of outputs that share their live taps
  (conv_regions.py).
- a convolution whose window is as wide as its unpadded input -> a cpu_conv_nhwc along one row of H pixels of
  W x C channels, between reshapes (`_width_as_channels`).

A convolution with fewer output channels than a vector's lanes (a generator's last layer to RGB) stays NCHW,
for the kernel that vectorizes along its output rows instead (narrow_conv_recipes.py, `keeps_nchw`). A matmul
to a few columns multiplies them padded to one vector, and one to a single column is a row reduction
(narrow_matmul.py); a batched product with gathered experts' weights is one product against every expert
(expert_matmul.py).

Pads stay attributes: glow-lower expands them in NHWC. Between consecutive layers the transpose back to NCHW
meets the next layer's transpose to NHWC, through whatever elementwise ops lie between; glow-sink-transpose,
which runs next, moves them together and cancels them, so only the transposes at the graph's boundary and
before a flatten remain.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.backends.cpu import conv_regions, conv_transpose, expert_matmul, narrow_matmul
from glow_mlir.backends.cpu.conv_recipes import LANES
from glow_mlir.backends.cpu.narrow_conv_recipes import keeps_nchw
from glow_mlir.backends.cpu.ops import TO_NCHW, TO_NHWC  # (the module defines the NHWC ops this pass creates)
from glow_mlir.opdefs.nn import ROI_ALIGN
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.registry import register
from glow_mlir.passes.graph.sink_transpose import transpose_to

# OIHW -> [KH, KW, I, O].
FILTER_TO_HWIO = (2, 3, 1, 0)

# NCHW op -> its NHWC counterpart and the attributes carried over.
WINDOW_ATTRS = ("kernels", "strides", "pads")
CONV_ATTRS = (*WINDOW_ATTRS, "group", "dilation")
NHWC_OPS = {
    "glow.convolution": ("glow.cpu_conv_nhwc", CONV_ATTRS),
    "glow.fused_convolution": ("glow.cpu_conv_nhwc", (*CONV_ATTRS, "activation", "activationArgs")),
    "glow.max_pool": ("glow.cpu_max_pool_nhwc", WINDOW_ATTRS),
    "glow.avg_pool": ("glow.cpu_avg_pool_nhwc", (*WINDOW_ATTRS, "countIncludePads")),
    "glow.roi_align": ("glow.cpu_roi_align_nhwc", tuple(name for name, _ in ROI_ALIGN)),
}


def _filter_hwio(weights: ir.Value) -> ir.Value:
    """The OIHW filter `weights` as [KH, KW, I, O]: a new constant when it is one, else a transpose."""
    # A view, transposed in one banded copy (ops.transposed), the one copy of the weights before the new attr.
    array = g.constant_array(weights, copy=False)
    if array is None:
        return transpose_to(weights, FILTER_TO_HWIO)
    dims = [ops.shape(weights)[d] for d in FILTER_TO_HWIO]
    result = ops.tensor_type(dims, ops.element_type(weights))
    return g.materialize(ops.transposed(array, FILTER_TO_HWIO), result, prefer_splat=False)


def to_nhwc(op: ir.Operation) -> ir.Value:
    """The NHWC form of NCHW op `op` between transposes, built before it; returns the value replacing it."""
    name, carried = NHWC_OPS[op.name]
    attributes = {a: op.attributes[a] for a in carried}
    if op.name == "glow.convolution":
        attributes |= {"activation": ir.StringAttr.get("none"), "activationArgs": ir.DenseF32ArrayAttr.get([])}
    n, c, h, w = ops.shape(op.results[0])
    result = ops.tensor_type([n, h, w, c], ops.element_type(op.results[0]))
    conv = name == "glow.cpu_conv_nhwc"
    full_width = conv and _spans_the_width(op)
    found = conv_regions.regions(op) if conv and not full_width else None
    with ir.InsertionPoint(op), op.location:
        if found is not None:
            return conv_regions.to_nhwc(op, found, _filter_hwio, attributes)
        operands = [transpose_to(op.operands[0], TO_NHWC)]
        # A convolution's filter changes layout; RoiAlign's boxes and batch indices do not.
        operands += [_filter_hwio(op.operands[1]), op.operands[2]] if conv else list(op.operands[1:])
        if full_width:
            return transpose_to(_width_as_channels(operands, attributes, result), TO_NCHW)
        return transpose_to(g.make(name, operands, result, attributes), TO_NCHW)


def _spread_channels(op: ir.Operation) -> ir.Value | None:
    """NHWC convolution `op` as a depthwise one of one filter per channel on its input with each channel repeated,
    when it is depthwise with a channel multiplier m (filter o reads channel o // m); else None. On the repeated
    input (a gather along the channels) the same filter is a depthwise convolution of the kernel class the backend
    tiles (depthwise_recipes), where the multiplier's own form ran as scalar loops: MaxxViT-v2's 7x7 stride-2
    layers, 2 filters per channel, 0.26-0.34x onnxruntime; a depthwise transposed convolution's phases, one
    filter per phase (conv_transpose.py), likewise."""
    if op.name != "glow.cpu_conv_nhwc":
        return None
    x = op.operands[0]
    channels, filters = ops.shape(x)[3], ops.shape(op.results[0])[3]
    if not 1 < ops.integer(op, "group") == channels < filters:
        return None
    with ir.InsertionPoint(op), op.location:
        picks = np.arange(filters, dtype=np.int64) // (filters // channels)
        index = g.materialize(picks, ops.tensor_type([filters], ir.IntegerType.get_signless(64)), prefer_splat=False)
        spread = ops.tensor_type([*ops.shape(x)[:3], filters], ops.element_type(x))
        repeated = g.make("glow.gather", [x, index], spread, {"axis": ops.i64(3)})
        attributes = g.attributes(op) | {"group": ops.i64(filters)}
        return g.make(op.name, [repeated, *list(op.operands)[1:]], op.results[0].type, attributes)


def _spans_the_width(op: ir.Operation) -> bool:
    """Whether convolution `op` has one group and a window as wide as its unpadded input rows (LSTNet's and
    text CNNs' Conv2d(1, F, (k, width)) over [N, 1, T, width]): one output column."""
    kernels, pads = ops.ints(op, "kernels"), ops.ints(op, "pads")
    width = ops.shape(op.operands[0])[3]
    return ops.integer(op, "group") == 1 and width > 1 and kernels[1] == width and pads[1] == pads[3] == 0


def _width_as_channels(operands: list[ir.Value], attributes: dict[str, ir.Attribute], result: ir.Type) -> ir.Value:
    """A convolution spanning the width is a 1-D one along H over W x C channels, which the NHWC kernels run
    best as a row: NHWC [N, H, W, C] is [N, 1, H, W C] and the [KH, KW, C, F] filter [1, KH, KW C, F], the same
    bytes, and the output [N, 1, OH, F] is [N, OH, 1, F]. In the 2-D form each output row was one pixel, so
    its register tiles were too (LSTNet's layer at 20 % of onnxruntime's speed)."""
    x, hwio, bias = operands
    n, h, w, c = ops.shape(x)
    kh, kw, _, f = ops.shape(hwio)
    array = g.constant_array(hwio, copy=False)
    if array is None:
        hwio = g.reshape(hwio, [1, kh, kw * c, f])
    else:
        row_filter = ops.tensor_type([1, kh, kw * c, f], ops.element_type(hwio))
        hwio = g.materialize(array.reshape(1, kh, kw * c, f), row_filter, prefer_splat=False)
    sh, dh = (ir.DenseI64ArrayAttr(attributes[a])[0] for a in ("strides", "dilation"))
    top, _, bottom, _ = ir.DenseI64ArrayAttr(attributes["pads"])
    attributes = attributes | {
        "kernels": ops.i64_array([1, kh]), "strides": ops.i64_array([1, sh]),
        "pads": ops.i64_array([0, top, 0, bottom]), "dilation": ops.i64_array([1, dh]),
    }  # fmt: skip
    oh = ops.shape(result)[1]
    row = ops.tensor_type([n, 1, oh, f], ops.element_type(result))
    y = g.make("glow.cpu_conv_nhwc", [g.reshape(x, [n, 1, h, w * c]), hwio, bias], row, attributes)
    return g.reshape(y, [n, oh, 1, f])


def _narrow(op: ir.Operation) -> bool:
    """Whether convolution `op` stays NCHW (`keeps_nchw`)."""
    _, f, _, ow = ops.shape(op.results[0])
    if f >= LANES:
        return False
    kernels, strides = ops.ints(op, "kernels"), ops.ints(op, "strides")
    winograd = (kernels, strides, ops.ints(op, "dilation")) == ([3, 3], [1, 1], [1, 1]) and (
        g.producer_name(op.operands[1]) in (g.CONSTANT, g.SPLAT)
    )
    return keeps_nchw(f, ops.integer(op, "group"), ow, (kernels[0], kernels[1]), strides[1], winograd)


def layout_function(function: ir.Operation) -> bool:
    """Rewrites every NCHW convolution, transposed convolution and pool of `function` into NHWC; returns whether
    any changed."""

    def rewrite(op: ir.Operation) -> ir.Value | None:
        if op.name == "glow.conv_transpose":
            with ir.InsertionPoint(op), op.location:
                return conv_transpose.to_nhwc(op, _filter_hwio)
        if op.name in ("glow.convolution", "glow.fused_convolution") and _narrow(op):
            return None
        if op.name in narrow_matmul.MATMULS:
            return expert_matmul.rewrite(op) or narrow_matmul.rewrite(op)
        return to_nhwc(op) if op.name in NHWC_OPS else None

    changed = g.rewrite_ops(function, rewrite)
    return g.rewrite_ops(function, _spread_channels) or changed


@register("glow-cpu-layout")
def cpu_layout(module: ir.Module) -> None:
    """Move NCHW convolutions, transposed convolutions and pools to the CPU backend's NHWC ops between
    transposes (Glow's post-lowering transform)."""
    g.run_on_functions(module, layout_function, fixed_point=False)
