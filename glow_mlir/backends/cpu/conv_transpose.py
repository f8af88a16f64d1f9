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
(T x s / K)^2 times as many otherwise (3x3 of stride 2: 16 / 9), plus the cropped phase rows. Where those
extras weigh (DCGAN's 4x4 / stride-2 / pad-1 layers on 4x4 to 16x16 maps compute 1.56x to 1.13x the products
they keep), each output phase is a convolution of its own instead (`_per_phase`): exactly the outputs kept,
each phase with its own taps, the phases concatenated along the channels before the same interleave; taken
when it computes at most PER_PHASE_GAIN of the combined form's vector products (few output channels waste
lanes in each of its convolutions). A constant filter and bias are rearranged here; run-time ones by
gathers. A batch norm after the transposed convolution folds into it (glow-fold-batchnorm), and an activation
after the interleave into the one convolution of the combined form (glow-fuse-activations looks through the
transposes, reshapes and slice; after the per-phase form's concatenation it stays a pass of its own).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.backends.cpu.ops import TO_NCHW, TO_NHWC
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.graph.sink_transpose import transpose_to

# glow-cpu-layout's rearrangement of an OIHW filter into the [KH, KW, I, O] glow.cpu_conv_nhwc reads.
Filter = Callable[[ir.Value], ir.Value]
# Convolutions per output phase are chosen when they compute at most this share of the combined one's vector
# products: DCGAN (one-process A/B against the combined form alone) 1.176x at 0.8 (its 4x4 and 8x8 layers),
# 1.216x and 1.227x at 0.95 and 0.9 (its 16x16 layer too, at 0.89).
PER_PHASE_GAIN = 0.9


class Combined(NamedTuple):
    """The combined form along a dim: input padding before and after, phase outputs computed, crop in front."""

    before: int
    after: int
    computed: int
    crop: int


class PhaseConv(NamedTuple):
    """An output phase's convolution along a dim: the scatter phase it takes (a row of `phase_taps`' table),
    its taps (the row's last `taps` columns), and the input padding before and after."""

    phase: int
    taps: int
    before: int
    after: int


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
    flat = g.reshape(data, [size])
    if pad_zero:
        zero = g.materialize(np.zeros(size + 1), ops.tensor_type([size + 1], elt))
        flat = g.make("glow.insert_tensor", [zero, flat], zero.type, {"start": ops.i64_array([0])})
    where = g.materialize(index, ops.tensor_type(index.shape, ir.IntegerType.get_signless(64)), prefer_splat=False)
    return g.make("glow.gather", [flat, where], ops.tensor_type(index.shape, elt), {"axis": ops.i64(0)})


def to_nhwc(op: ir.Operation, filter_hwio: Filter) -> ir.Value:
    """The NHWC phase convolutions and interleave of NCHW glow.conv_transpose `op` between transposes, built
    before it; returns the value replacing it. `filter_hwio` gives an OIHW filter as glow.cpu_conv_nhwc reads it
    (glow-cpu-layout's). One convolution of all phases, or one per output phase where that computes
    sufficiently fewer vector products (`_per_phase`)."""
    x, w, _ = op.operands
    n, _, *sizes = ops.shape(x)
    _, outputs, kh, kw = ops.shape(w)
    result = op.results[0]
    _, f, *out = ops.shape(result)
    group = ops.integer(op, "group")
    strides, dilation = ops.ints(op, "strides"), ops.ints(op, "dilation")
    tables = [phase_taps(k, s, d) for k, s, d in zip((kh, kw), strides, dilation)]
    heads = ops.ints(op, "pads")[:2]
    combined = [_combined_dim(*dims) for dims in zip(sizes, tables, strides, heads, out)]
    rows, cols = (_exact_phases(*dims) for dims in zip(sizes, (kh, kw), strides, dilation, heads, out))
    combined_cost = math.prod(d.computed * t.shape[1] for d, t in zip(combined, tables)) * _lanes(
        group * outputs * strides[0] * strides[1]
    )
    xt = transpose_to(x, TO_NHWC)
    if rows is not None and cols is not None and _cost(rows, cols, group * outputs) <= PER_PHASE_GAIN * combined_cost:
        y, crop = _per_phase(op, xt, rows, cols, tables, filter_hwio), [0, 0]
    else:
        y, crop = _combined(op, xt, combined, tables, filter_hwio), [d.crop for d in combined]
    if ops.shape(y) != (n, *out, f):
        y = g.make("glow.slice", [y], ops.tensor_type([n, *out, f], ops.element_type(result)),
                   {"start": ops.i64_array([0, *crop, 0])})  # fmt: skip
    return transpose_to(y, TO_NCHW)


def _combined_dim(size: int, table: np.ndarray, s: int, head: int, size_out: int) -> Combined:
    """The combined form along a dim: phase rows the crop removes whole are skipped (less padding in front),
    the end stops at the last phase row kept."""
    taps = table.shape[1]
    skip = min(head // s, taps - 1)
    before = taps - 1 - skip
    after = max(0, math.ceil((head + size_out) / s) - skip - size - before + taps - 1)
    return Combined(before, after, size + before + after - taps + 1, head - skip * s)


def _exact_phases(size: int, k: int, s: int, d: int, head: int, size_out: int) -> tuple[int, list[PhaseConv]] | None:
    """(Q, per output phase a its convolution): output o = q s + a after the crop is full output
    o + head = (q + c) s + r, which scatter phase r gives from input q + c - t and tap t s + r, T_r taps: a
    convolution of Q outputs from the input padded by T_r - 1 - c before. None where a phase has no tap or
    would need a negative padding (a crop of more than a phase row: the combined form skips those rows)."""
    dense = (k - 1) * d + 1
    count = math.ceil(size_out / s)
    found = []
    for a in range(s):
        r, c = (a + head) % s, (a + head) // s
        taps = len(range(r, dense, s))
        before = taps - 1 - c
        after = count - size - before + taps - 1
        if taps == 0 or before < 0 or after < 0:
            return None
        found.append(PhaseConv(r, taps, before, after))
    return count, found


def _lanes(channels: int) -> int:
    """The vector lanes computing `channels` output channels (whole 16-float registers)."""
    return 16 * math.ceil(channels / 16)


def _cost(rows: tuple[int, list[PhaseConv]], cols: tuple[int, list[PhaseConv]], channels: int) -> int:
    """The vector products of the per-phase form (`channels` outputs per phase)."""
    (qh, along_h), (qw, along_w) = rows, cols
    return sum(qh * qw * a.taps * b.taps for a in along_h for b in along_w) * _lanes(channels)


def _conv(x: ir.Value, phase_filter: ir.Value, bias: ir.Value, kernels: Sequence[int], pads: Sequence[int],
          group: int, outputs: Sequence[int]) -> ir.Value:  # fmt: skip
    """An NHWC convolution of unit strides, no activation, of `outputs` [N, H, W, F]."""
    attributes = {
        "kernels": ops.i64_array(kernels), "strides": ops.i64_array([1, 1]), "pads": ops.i64_array(pads),
        "dilation": ops.i64_array([1, 1]), "group": ops.i64(group),
        "activation": ir.StringAttr.get("none"), "activationArgs": ir.DenseF32ArrayAttr.get([]),
    }  # fmt: skip
    return g.make("glow.cpu_conv_nhwc", [x, phase_filter, bias], ops.tensor_type(outputs, ops.element_type(x)),
                  attributes)  # fmt: skip


def _phase_filter(w: ir.Value, group: int, rows: np.ndarray, cols: np.ndarray, filter_hwio: Filter) -> ir.Value:
    """The HWIO filter of the phases `rows` x `cols` (phase_taps tables, or rows of them)."""
    c, outputs, kh, kw = ops.shape(w)
    gathered = _gathered(w, filter_index(c, outputs, group, (kh, kw), rows, cols), pad_zero=True)
    hwio = filter_hwio(gathered)
    if not list(gathered.uses):
        # A constant, of which filter_hwio made a new one.
        g.erase(g.producer(gathered))
    return hwio


def _combined(op: ir.Operation, xt: ir.Value, plan: Sequence[Combined], tables: Sequence[np.ndarray],
              filter_hwio: Filter) -> ir.Value:  # fmt: skip
    """All phases as one convolution, output channels (group, phase row, phase column, output), interleaved by
    one transpose: [N, MH, MW, (G,) SH, SW, O] -> [N, MH, SH, MW, SW, (G,) O]; uncropped."""
    _, w, b = op.operands
    n = ops.shape(xt)[0]
    _, outputs, _, _ = ops.shape(w)
    f = ops.shape(op.results[0])[1]
    group = ops.integer(op, "group")
    sh, sw = ops.ints(op, "strides")
    along_h, along_w = plan
    mh, mw = along_h.computed, along_w.computed
    repeat = np.arange(group * outputs).reshape(group, 1, 1, outputs).repeat(sh, 1).repeat(sw, 2).reshape(-1)
    pads = [along_h.before, along_w.before, along_h.after, along_w.after]
    y = _conv(xt, _phase_filter(w, group, *tables, filter_hwio), _gathered(b, repeat, pad_zero=False),
              [t.shape[1] for t in tables], pads, group, [n, mh, mw, group * sh * sw * outputs])  # fmt: skip
    if sh * sw > 1:
        split, shuffle = [n, mh, mw, group, sh, sw, outputs], [0, 1, 4, 2, 5, 3, 6]
        if group == 1:
            split, shuffle = [n, mh, mw, sh, sw, outputs], [0, 1, 3, 2, 4, 5]
        y = g.reshape(transpose_to(g.reshape(y, split), shuffle), [n, mh * sh, mw * sw, f])
    return y


def _per_phase(op: ir.Operation, xt: ir.Value, rows: tuple[int, list[PhaseConv]], cols: tuple[int, list[PhaseConv]],
               tables: Sequence[np.ndarray], filter_hwio: Filter) -> ir.Value:  # fmt: skip
    """One convolution per output phase (a row, a column) of exactly the outputs the crop keeps (the last
    phase row rounded up), each with its own taps (3x3 of stride 2: 4, 2, 2 and 1, not 4 each); their
    outputs concatenated along the channels, [N, Q, Q, SH, SW, F] interleaved by one transpose; uncropped at
    the end only."""
    _, w, b = op.operands
    n = ops.shape(xt)[0]
    f = ops.shape(op.results[0])[1]
    group = ops.integer(op, "group")
    sh, sw = ops.ints(op, "strides")
    (qh, along_h), (qw, along_w) = rows, cols
    phases = []
    for ph in along_h:
        for pw in along_w:
            taps = (tables[0][ph.phase : ph.phase + 1, -ph.taps :], tables[1][pw.phase : pw.phase + 1, -pw.taps :])
            phases.append(_conv(xt, _phase_filter(w, group, *taps, filter_hwio), b, [ph.taps, pw.taps],
                                [ph.before, pw.before, ph.after, pw.after], group, [n, qh, qw, f]))  # fmt: skip
    y = g.concat(phases, 3)
    if len(phases) > 1:
        y = g.reshape(transpose_to(g.reshape(y, [n, qh, qw, sh, sw, f]), [0, 1, 3, 2, 4, 5]), [n, qh * sh, qw * sw, f])
    return y
