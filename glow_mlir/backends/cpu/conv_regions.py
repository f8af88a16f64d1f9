"""The CPU backend's convolutions whose taps read padding for a large share of their outputs, split by
glow-cpu-layout (layout.py) into regions of outputs that read the input with the same taps.

Along a spatial dim, output o reads input o s + k d - pad with tap k; the taps that land in the input form a
run [lo(o), hi(o)], the same for runs of neighbouring outputs. A dilated convolution on a map not much larger
than its reach reads zeros with many taps of its border outputs: DeepLabV3's ASPP convolution of rate 12 on
the 16x16 map of a 128x128 image reads the input with 1 of its 9 taps for the centre 8x8 outputs, 2 or 4 for
the rest, a quarter of its multiply-adds (glow-trim-conv-window removes taps dead for every output; these are
dead for some). Split, each region of outputs (a run along H by a run along W) is a convolution without
padding of the input block it reads, with the filter's live taps only; the regions are concatenated along W,
then H. onnxruntime's NCHWc convolution skips such taps output by output.

A split is taken when it saves at least MIN_SAVED of the multiply-adds and every region keeps at least
MIN_REGION_OUTPUTS outputs per image (so that a 3x3 layer on a 4x4 map, whose border outputs also miss a tap,
stays one kernel: its regions of one or two pixels would cost more in calls than the products saved). In
one-process A/B (/tmp/s17/ab_regions.py): DeepLabV3-ResNet50's ASPP of rate 12 on 16x16 (75 % saved) 1.177x
on the whole model; its backbone's dilation-4 3x3 layers on 16x16 (31 % saved, regions of 4x4 to 8x8) were
0.98x on FCN-ResNet50 when split too, so half is the bar.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from mlir import ir

from glow_mlir import ops
from glow_mlir.backends.cpu.ops import TO_NCHW, TO_NHWC
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.graph.sink_transpose import transpose_to
from glow_mlir.passes.graph.trim_window import output_taps

MIN_SAVED = 0.5
MIN_REGION_OUTPUTS = 16


Run = tuple[int, int, int, int]


def runs(size: int, outputs: int, kernel: int, stride: int, dilation: int, begin: int) -> list[Run] | None:
    """(first output, outputs, first live tap, last live tap) for the runs of consecutive outputs along a dim that
    read the input with the same taps; None when some output reads padding only."""
    found: list[Run] = []
    for o in range(outputs):
        live = output_taps(o, size, kernel, stride, dilation, begin)
        if not live:
            return None
        if found and found[-1][2:] == (live[0], live[-1]):
            first, count, lo, hi = found[-1]
            found[-1] = (first, count + 1, lo, hi)
        else:
            found.append((o, 1, live[0], live[-1]))
    return found


def regions(op: ir.Operation) -> tuple[list[Run], list[Run]] | None:
    """The runs along H and W of NCHW convolution `op` when splitting by them pays (module docstring), else None."""
    _, _, *sizes = ops.shape(op.operands[0])
    _, _, *outputs = ops.shape(op.results[0])
    kernels, strides, dilation = ops.ints(op, "kernels"), ops.ints(op, "strides"), ops.ints(op, "dilation")
    begins = ops.ints(op, "pads")[:2]
    found = [runs(*dims) for dims in zip(sizes, outputs, kernels, strides, dilation, begins)]
    rows, cols = found
    if rows is None or cols is None or len(rows) * len(cols) == 1:
        return None
    if min(r[1] for r in rows) * min(c[1] for c in cols) < MIN_REGION_OUTPUTS:
        return None
    work = sum(r[1] * (r[3] - r[2] + 1) for r in rows) * sum(c[1] * (c[3] - c[2] + 1) for c in cols)
    if work > (1 - MIN_SAVED) * math.prod(outputs) * math.prod(kernels):
        return None
    return rows, cols


def _block(value: ir.Value, start: Sequence[int], dims: Sequence[int]) -> ir.Value:
    """The block of `value` of shape `dims` at `start`: a new constant of a constant, else a slice."""
    array = g.constant_array(value)
    result = ops.tensor_type(dims, ops.element_type(value))
    if array is not None:
        index = tuple(slice(s, s + d) for s, d in zip(start, dims))
        return g.materialize(array[index], result, prefer_splat=False)
    return g.make("glow.slice", [value], result, {"start": ops.i64_array(start)})


def to_nhwc(op: ir.Operation, found: tuple[list[Run], list[Run]], filter_hwio: Callable[[ir.Value], ir.Value],
            attributes: dict[str, ir.Attribute]) -> ir.Value:  # fmt: skip
    """NCHW convolution `op` as NHWC convolutions of its regions (`regions`), concatenated, between transposes,
    built before it; `attributes` are the cpu_conv_nhwc's (pads aside). Returns the value replacing it."""
    x, w, b = op.operands
    n, f, *_ = ops.shape(op.results[0])
    elt = ops.element_type(op.results[0])
    (sh, sw), (dh, dw) = ops.ints(op, "strides"), ops.ints(op, "dilation")
    top, left = ops.ints(op, "pads")[:2]
    rows, cols = found
    xt = transpose_to(x, TO_NHWC)
    filt = filter_hwio(w)
    c, cg = ops.shape(xt)[3], ops.shape(filt)[2]
    band_values = []
    for first_h, count_h, lo_h, hi_h in rows:
        parts = []
        for first_w, count_w, lo_w, hi_w in cols:
            in_h, in_w = (count_h - 1) * sh + (hi_h - lo_h) * dh + 1, (count_w - 1) * sw + (hi_w - lo_w) * dw + 1
            block = _block(xt, [0, first_h * sh + lo_h * dh - top, first_w * sw + lo_w * dw - left, 0],
                           [n, in_h, in_w, c])  # fmt: skip
            taps = _block(filt, [lo_h, lo_w, 0, 0], [hi_h - lo_h + 1, hi_w - lo_w + 1, cg, f])
            region = attributes | {
                "kernels": ops.i64_array([hi_h - lo_h + 1, hi_w - lo_w + 1]), "pads": ops.i64_array([0, 0, 0, 0]),
            }  # fmt: skip
            result = ops.tensor_type([n, count_h, count_w, f], elt)
            parts.append(g.make("glow.cpu_conv_nhwc", [block, taps, b], result, region))
        band_values.append(g.concat(parts, 2))
    if not list(filt.uses):
        g.erase(g.producer(filt))
    return transpose_to(g.concat(band_values, 1), TO_NCHW)

