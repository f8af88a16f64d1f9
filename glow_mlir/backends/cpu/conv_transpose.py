"""The CPU backend's transposed convolution: one NHWC convolution of its phases and their interleave, built by
glow-cpu-layout (layout.py) in place of each glow.conv_transpose.

A transposed convolution of stride s scatters every input element through its K taps: output y = i * s + k
(per spatial dim; a dilated filter is its dense form with zero taps between). The outputs of one phase
p = y mod s are those of the taps k = t * s + p, so each phase is an ordinary convolution of the input, of
T = ceil(K / s) taps (the filter padded with zero taps up to T * s), read in reverse:

    y[m * s + p] = sum_t x[m - t] * w[t * s + p]          (t = 0 .. T - 1, x = 0 outside the input)

All SH x SW phases take the same window, so they are one convolution whose output channels are (group, phase
row, phase column, output channel), on the input padded by T - 1: the filter [C, O, KH, KW] becomes the phase
filter [G x SH x SW x O / G, C / G, TH, TW] (a gather of the flat filter, zero where a phase has no tap), the
bias repeats per phase, and in NHWC one transpose interleaves the phases, [N, MH, MW, G, SH, SW, O / G] ->
[N, MH, SH, MW, SW, G, O / G], moving runs of SW x O / G floats (the pixel shuffle of depth-to-space). The
pads crop the interleaved output: whole phase rows they remove are never computed (less input padding in
front, none past what the crop keeps), the rest is a slice.

So the scatter, whose NCHW lowering is scalar loops (a UNet's 2x2 up-convolutions ran 18x slower than
onnxruntime's, a DCGAN generator's 4x4 ones 47x), runs on the NHWC convolution kernels, with as many
multiply-adds when s divides K (2x2 and 4x4 filters of stride 2, the usual up-sampling layers) and
(T x s / K)^2 times as many otherwise (3x3 of stride 2: 16 / 9), plus the cropped phase rows. A constant filter
and bias are rearranged here; run-time ones by gathers. A batch norm after the transposed convolution folds into
it (glow-fold-batchnorm) and an activation after the interleave into the convolution (glow-fuse-activations
looks through the transposes, reshapes and slice).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.graph.sink_transpose import transpose_to

TO_NHWC = (0, 2, 3, 1)
TO_NCHW = (0, 3, 1, 2)


def phase_taps(k: int, stride: int, dilation: int) -> np.ndarray:
    """[stride, T]: per phase p and phase-filter column u (the convolution reads input m - (T - 1) + u for
    phase output m), the filter tap it multiplies, or -1 for none. Tap t = T - 1 - u of phase p sits at dense
    position q = t * s + p, which is filter tap q / dilation where that divides."""
    taps = math.ceil(((k - 1) * dilation + 1) / stride)
    table = np.full((stride, taps), -1, np.int64)
    for p in range(stride):
        for u in range(taps):
            q = (taps - 1 - u) * stride + p
            if q % dilation == 0 and q // dilation < k:
                table[p, u] = q // dilation
    return table


def filter_index(c: int, outputs: int, group: int, kernels: tuple[int, int], rows: np.ndarray,
                 cols: np.ndarray) -> np.ndarray:  # fmt: skip
    """The flat-filter index of each element of the phase filter [G x SH x SW x O, C / G, TH, TW] (O outputs
    per group), or the index one past the filter (a zero) where the phase has no tap; `rows` and `cols` are
    the two spatial dims' `phase_taps`."""
    kh, kw = kernels
    cg = c // group
    gi, py, px, o, ci, uh, uw = np.meshgrid(range(group), range(rows.shape[0]), range(cols.shape[0]),
                                            range(outputs), range(cg), range(rows.shape[1]), range(cols.shape[1]),
                                            indexing="ij")  # fmt: skip
    tap_h, tap_w = rows[py, uh], cols[px, uw]
    flat = (((gi * cg + ci) * outputs + o) * kh + tap_h) * kw + tap_w
    index = np.where((tap_h < 0) | (tap_w < 0), c * outputs * kh * kw, flat)
    return index.reshape(group * rows.shape[0] * cols.shape[0] * outputs, cg, rows.shape[1], cols.shape[1])


def _gathered(data: ir.Value, index: np.ndarray, pad_zero: bool) -> ir.Value:
    """`data` flattened (with one zero after it, `pad_zero`) and gathered at `index`: numpy on a constant,
    else glow ops."""
    elt = ops.element_type(data)
    size = math.prod(ops.shape(data))
    array = g.constant_array(data)
    if array is not None:
        flat = np.append(array.reshape(-1), 0) if pad_zero else array.reshape(-1)
        return g.materialize(flat[index], ops.tensor_type(index.shape, elt), prefer_splat=False)
    flat = g.make("glow.reshape", [data], ops.tensor_type([size], elt), {"dims": ops.i64_array([size])})
    if pad_zero:
        zero = g.materialize(np.zeros(size + 1), ops.tensor_type([size + 1], elt))
        flat = g.make("glow.insert_tensor", [zero, flat], zero.type, {"start": ops.i64_array([0])})
    where = g.materialize(index, ops.tensor_type(index.shape, ir.IntegerType.get_signless(64)), prefer_splat=False)
    return g.make("glow.gather", [flat, where], ops.tensor_type(index.shape, elt), {"axis": ops.i64(0)})


def to_nhwc(op: ir.Operation, filter_hwio: Callable[[ir.Value], ir.Value]) -> ir.Value:
    """The NHWC phase convolution and interleave of NCHW glow.conv_transpose `op` between transposes, built
    before it; returns the value replacing it. `filter_hwio` gives an OIHW filter as glow.cpu_conv_nhwc reads it
    (glow-cpu-layout's)."""
    x, w, b = op.operands
    n, c, *sizes = ops.shape(x)
    _, outputs, kh, kw = ops.shape(w)
    result = op.results[0]
    _, f, *out = ops.shape(result)
    elt = ops.element_type(result)
    group = ops.integer(op, "group")
    strides, dilation = ops.ints(op, "strides"), ops.ints(op, "dilation")
    rows, cols = (phase_taps(k, s, d) for k, s, d in zip((kh, kw), strides, dilation))
    sh, sw = strides
    channels = group * sh * sw * outputs

    # Per spatial dim: the input padding, the phase outputs computed, and the crop of the interleaved output.
    # Phase rows the crop removes whole are skipped (less padding in front); the end stops at the last kept.
    pads, computed, crop = [[0, 0], [0, 0]], [0, 0], [0, 0]
    for d, (size, table, s, head, size_out) in enumerate(zip(sizes, (rows, cols), strides, ops.ints(op, "pads"),
                                                             out)):  # fmt: skip
        taps = table.shape[1]
        skip = min(head // s, taps - 1)
        before = taps - 1 - skip
        after = max(0, math.ceil((head + size_out) / s) - skip - size - before + taps - 1)
        pads[d] = [before, after]
        computed[d] = size + before + after - taps + 1
        crop[d] = head - skip * s
    (pt, pb), (pl, pr) = pads
    mh, mw = computed

    index = filter_index(c, outputs, group, (kh, kw), rows, cols)
    gathered = _gathered(w, index, pad_zero=True)
    phase_filter = filter_hwio(gathered)
    if not list(gathered.uses):
        # A constant, of which filter_hwio made a new one.
        g.erase(g.producer(gathered))
    repeat = np.arange(group * outputs).reshape(group, 1, 1, outputs).repeat(sh, 1).repeat(sw, 2).reshape(-1)
    phase_bias = _gathered(b, repeat, pad_zero=False)
    attributes = {
        "kernels": ops.i64_array([rows.shape[1], cols.shape[1]]), "strides": ops.i64_array([1, 1]),
        "pads": ops.i64_array([pt, pl, pb, pr]), "dilation": ops.i64_array([1, 1]), "group": ops.i64(group),
        "activation": ir.StringAttr.get("none"), "activationArgs": ir.DenseF32ArrayAttr.get([]),
    }  # fmt: skip
    y = g.make("glow.cpu_conv_nhwc", [transpose_to(x, TO_NHWC), phase_filter, phase_bias],
               ops.tensor_type([n, mh, mw, channels], elt), attributes)  # fmt: skip
    if sh * sw > 1:
        # [N, MH, MW, (G,) SH, SW, O] -> [N, MH, SH, MW, SW, (G,) O]: each pixel's phases to their places.
        split, shuffle = [n, mh, mw, group, sh, sw, outputs], [0, 1, 4, 2, 5, 3, 6]
        if group == 1:
            split, shuffle = [n, mh, mw, sh, sw, outputs], [0, 1, 3, 2, 4, 5]
        y = g.make("glow.reshape", [y], ops.tensor_type(split, elt), {"dims": ops.i64_array(split)})
        y = transpose_to(y, shuffle)
        merged = [n, mh * sh, mw * sw, f]
        y = g.make("glow.reshape", [y], ops.tensor_type(merged, elt), {"dims": ops.i64_array(merged)})
    if ops.shape(y) != (n, *out, f):
        y = g.make("glow.slice", [y], ops.tensor_type([n, *out, f], elt), {"start": ops.i64_array([0, *crop, 0])})
    return transpose_to(y, TO_NCHW)
