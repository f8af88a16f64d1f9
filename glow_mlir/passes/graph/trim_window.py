"""glow-trim-conv-window: drops the filter taps of a convolution that read nothing but padding.

A dilated (atrous) convolution on a map smaller than its dilation reaches past the input with its outer taps
for every output: DeepLab's ASPP convolutions of rates 12, 24 and 36 on an 8x8 map (a 128x128 image at output
stride 16) read padding with 8 of their 9 taps, so each is a 1x1 convolution computed at 9 times its cost.
Per spatial dim, tap k of dilation d and stride s reads input o s + k d - pad_begin for output o; where no
output's read falls inside the input, the tap multiplies zeros only. The taps before the first live one and
after the last live one are cut from the filter (a slice, which glow-constant-fold folds when the filter is a
constant), and the pads shrink by as much, so every output keeps its value and the output its shape. A dead
tap between live ones stays (the window must stay one block), and a pad never goes below zero (an input row
would have to be cut off). Convolutions and fused convolutions, NCHW, before the backend's layout.
"""

from __future__ import annotations

from mlir import ir

from glow_mlir import ops
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.registry import register

CONVOLUTIONS = ("glow.convolution", "glow.fused_convolution")


def output_taps(o: int, size: int, kernel: int, stride: int, dilation: int, begin: int) -> list[int]:
    """The taps of output `o` along a dim that read the input, not its padding (input o s + k d - begin for
    tap k): consecutive ones, in order. Also the CPU backend's region split (backends/cpu/conv_regions.py)."""
    return [k for k in range(kernel) if 0 <= o * stride + k * dilation - begin < size]


def live_taps(size: int, outputs: int, kernel: int, stride: int, dilation: int, begin: int,
              end: int) -> tuple[int, int]:  # fmt: skip
    """(first, last) filter taps along a dim to keep: the outer ones that read no input for any output are
    dropped, as far as the pads `begin` and `end` allow."""
    live = [taps for o in range(outputs) if (taps := output_taps(o, size, kernel, stride, dilation, begin))]
    if not live:
        return 0, kernel - 1  # every tap reads padding: the output is the bias; nothing to gain here
    first = min(min(taps[0] for taps in live), begin // dilation)
    last = max(max(taps[-1] for taps in live), kernel - 1 - end // dilation)
    return first, last


def _trimmed(op: ir.Operation) -> ir.Value | None:
    x, w, b = op.operands
    _, _, *sizes = ops.shape(x)
    _, _, *outputs = ops.shape(op.results[0])
    kernels, strides, dilation = ops.ints(op, "kernels"), ops.ints(op, "strides"), ops.ints(op, "dilation")
    top, left, bottom, right = ops.ints(op, "pads")
    spans = [live_taps(*dims) for dims in zip(sizes, outputs, kernels, strides, dilation, (top, left),
                                              (bottom, right))]  # fmt: skip
    if all(first == 0 and last == k - 1 for (first, last), k in zip(spans, kernels)):
        return None
    (fh, lh), (fw, lw) = spans
    (kh, kw), (dh, dw) = kernels, dilation
    pads = [top - fh * dh, left - fw * dw, bottom - (kh - 1 - lh) * dh, right - (kw - 1 - lw) * dw]
    window = [lh - fh + 1, lw - fw + 1]
    filter_dims = [*ops.shape(w)[:2], *window]
    attributes = g.attributes(op) | {"kernels": ops.i64_array(window), "pads": ops.i64_array(pads)}
    with ir.InsertionPoint(op), op.location:
        cut = g.make("glow.slice", [w], ops.tensor_type(filter_dims, ops.element_type(w)),
                     {"start": ops.i64_array([0, 0, fh, fw])})  # fmt: skip
        return g.make(op.name, [x, cut, b], op.results[0].type, attributes)


def trim_function(function: ir.Operation) -> bool:
    return g.rewrite_ops(function, lambda op: _trimmed(op) if op.name in CONVOLUTIONS else None)


@register("glow-trim-conv-window")
def trim_conv_window(module: ir.Module) -> None:
    """Drop the outer filter taps of a convolution that read only padding (dilated convolutions on small maps)."""
    g.run_on_functions(module, trim_function, fixed_point=False)
