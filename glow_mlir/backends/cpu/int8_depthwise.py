"""glow-cpu-int8's depthwise convolution, `glow.cpu_int8_depthwise_nhwc` (int8_ops.py): the op built from a matched
int8 depthwise product (int8_rewrite.int8_convolution matches it as it matches group-1 convolutions), and its
kernel.

A depthwise convolution sums, per channel, only the KH x KW taps of its own input channel, so vpdpbusd (4 adjacent
bytes of one operand into one i32 lane) does not fit: in NHWC the 4 taps of a channel are C bytes apart, and
gathering them would take more shuffles than the products they feed. The kernel computes each product on integer
values in float32 instead: 16 channels of uint8 (or int8) activations widened to f32 (vpmovzxbd + vcvtdq2ps), one
FMA per tap with the filter's int8 values as f32 (int16 ones for uint8 weights less a zero point: `takes`), summed
exactly while every partial sum stays below 2^24 (`int8_ops.depthwise_exact`: up to 514 taps of int8 weights;
`takes` bounds wider ones by their sums; a larger window keeps the float convolution). The epilogue subtracts
the correction (zero point times the filter sum, exact for the same reason, less QLinearConv's int32 bias where
float32 holds the result: `takes`; the one subtraction rounds as onnxruntime's int32 -> float32), then multiplies,
adds the bias and applies relu, clip and uint8 quantization as the other int8 ops (int8_gemm.OutputSteps):
bit-identical to the reference interpreter's integer evaluator.

The register tile is PIXEL_TILE output pixels along a row for 16 channels: per filter row, each input column of
the tile is loaded and widened once and feeds the FMAs of every output pixel whose window covers it (10 widened
vectors for 24 FMAs of a 3x3 stride-1 row at 8 pixels); the filter's KH x KW vectors of a channel block are widened
once per output row, outside the pixel loop. Channels beyond the last multiple of 16 are a masked block, pixels
beyond the last full tile a smaller tile, both emitted once after their loops.

The padding is read in the kernel, not copied: the tiles of output columns whose windows reach past the input
(`interior`) are emitted at static positions, and the output rows whose windows do run in a loop of their own
that decides per filter row at run time whether it reads the input (a select against the zero point, its load
clamped into the input), each tap outside the input multiplying the zero point (whose product the correction
takes off, as it would a canvas's); the others run in loops without a check. A zero-point canvas
(`insert_tensor` into a splat, as the group-1 convolution's) added 5 % (7x7x960) to 65 % (112x112x96, stride 2)
to the kernel's time on MobileNetV2's layers, measured in one process. A filter larger than 3x3 is a loop over its
rows in each tile (HELD_TAPS), as the f32 kernel's is.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from mlir import ir
from mlir.dialects import arith, scf, vector

from glow_mlir import ops
from glow_mlir.backends.cpu.int8_gemm import OutputSteps, signless, store_lanes, vector_type
from glow_mlir.backends.cpu.int8_ops import (
    F32_EXACT,
    LANES,
    depthwise_correction,
    depthwise_exact,
    depthwise_weights,
    output_attributes,
)
from glow_mlir.backends.cpu.vector_body import splat
from glow_mlir.codegen.builders import index, pair
from glow_mlir.codegen.table import lowering
from glow_mlir.opdefs.base import Attr
from glow_mlir.passes.graph import utils as g

DEPTHWISE = "glow.cpu_int8_depthwise_nhwc"
# Output pixels per register tile, measured (3x3, 5x5 and 7x7 windows, strides 1 and 2, MobileNetV2's shapes): 8
# accumulators beside a 3x3 filter's 9 vectors; 2, 4, 6 and 12 were as fast or slower everywhere, also for 5x5 and
# 7x7 filters, whose vectors then partly live on the stack.
PIXEL_TILE = 8
# The most taps of a filter held widened across a row's tiles (3x3); a larger one is a loop over its rows (_Block).
HELD_TAPS = 9


def is_depthwise(op: ir.Operation) -> bool:
    """Whether glow.convolution `op` is depthwise with one output channel per input channel and no dilation, and its
    window sums exactly in the kernel's arithmetic (`depthwise_exact`)."""
    channels = ops.shape(op.operands[0])[1]
    o, per_group, kh, kw = ops.shape(op.operands[1])
    group = ir.IntegerAttr(op.attributes["group"]).value
    dilated = any(d != 1 for d in ir.DenseI64ArrayAttr(op.attributes["dilation"]))
    return group == channels == o and group > 1 and per_group == 1 and not dilated and depthwise_exact(kh * kw)


def takes(weights: np.ndarray, zero: int, accumulated: np.ndarray | None) -> bool:
    """Whether the kernel computes a depthwise product of integer OIHW filter `weights`, activation zero point
    `zero` and integer bias `accumulated` (or None) as the graph does: int16 weights (int8, or uint8 ones less a
    zero point), every partial sum of an 8-bit activation times them below 2^24 (exact in float32), and a
    correction that float32 holds exactly, so that the epilogue's one subtraction rounds the exact sum once, as
    onnxruntime's int32 -> float32 does (QLinearConv's bias)."""
    w = depthwise_weights(weights).astype(np.int64)
    if w.min(initial=0) < -(2**15) or w.max(initial=0) >= 2**15:
        return False
    if 255 * np.abs(w).sum(axis=(0, 1)).max(initial=0) >= F32_EXACT:
        return False
    corr = depthwise_correction(w, zero, accumulated)
    return bool((corr.astype(np.float32).astype(np.int64) == corr).all())


def depthwise(x: ir.Value, zero: int, weights: np.ndarray, multiplier: np.ndarray, bias: np.ndarray,
              op: ir.Operation, accumulated: np.ndarray | None = None) -> ir.Value:  # fmt: skip
    """cpu_int8_depthwise_nhwc of NHWC activation `x` (zero point `zero`, also its padding) with integer OIHW filter
    `weights` (`takes`), per-channel multiplier and bias, and an integer bias inside the accumulation
    (`accumulated`, taken off the correction), with glow.convolution `op`'s window, at the current insertion
    point."""
    w = depthwise_weights(weights)
    n, _, oh, ow = ops.shape(op.results[0])
    corr = depthwise_correction(w, zero, accumulated)
    # int8, or int16 where uint8 weights less their zero point leave it.
    bits = 8 if w.min(initial=0) >= -128 and w.max(initial=0) <= 127 else 16
    arrays = [(w.astype(f"int{bits}"), ir.IntegerType.get_signless(bits)), (corr, ir.IntegerType.get_signless(32)),
              (multiplier, ir.F32Type.get()), (bias, ir.F32Type.get())]  # fmt: skip
    operands = [x, *(g.materialize(a, ops.tensor_type(a.shape, elt), prefer_splat=False) for a, elt in arrays)]
    result = ops.tensor_type([n, oh, ow, w.shape[2]], ir.F32Type.get())
    attrs = {a: op.attributes[a] for a in ("kernels", "strides", "pads")}
    attrs |= {"zero": Attr.INT.make(zero)} | output_attributes()
    return g.make(DEPTHWISE, operands, result, attrs)


def interior(outputs: int, stride: int, pad: int, kernel: int, size: int) -> tuple[int, int]:
    """[lo, hi): the outputs along one axis whose windows lie inside the unpadded input of `size` (the others read
    padding), lo <= hi, both within [0, outputs]."""
    lo = min(outputs, -(-pad // stride))
    return lo, max(lo, min(outputs, (size - kernel + pad) // stride + 1))


def _inside(o: int, stride: int, pad: int, size: int) -> Callable[[int], bool]:
    """For a tile whose first output along one axis is `o`, whether its input index t (from the first window's
    start) is inside the input, not the padding."""
    return lambda t: 0 <= o * stride + t - pad < size


def _everywhere(_: int) -> bool:
    return True


class _Block:
    """One block of up to 16 channels from `c0` of output row `y`: its filter, correction, multiplier and bias
    vectors, loaded once, and the emitter of its register tiles. At an `edge` row (one whose window reaches into
    the top or bottom padding) filter row i reads the input where `inside[i]` holds (an i1 computed from y) and
    the zero point (the padding) elsewhere, its row index clamped into the input so that the load stays in it."""

    def __init__(self, kernel: _Depthwise, image: ir.Value, y: ir.Value, edge: bool, c0: ir.Value,
                 width: int) -> None:  # fmt: skip
        self.k, self.image, self.y, self.c0, self.width = kernel, image, y, c0, width
        self.mask = None
        if width < LANES:
            self.mask = vector.constant_mask(vector_type(LANES, ir.IntegerType.get_signless(1)), [width])
        self.edge = edge
        # A filter of up to HELD_TAPS taps is widened once per block and row and its rows unrolled in each tile; a
        # larger one is a loop over its rows in each tile, a row widened per tile (MixNet's 9x9: 81 vectors held
        # and 648 multiply-adds of code per tile, nine times over).
        self.filter = None
        if kernel.kh * kernel.kw <= HELD_TAPS:
            self.filter = [[self.widen(self.load(kernel.weights, [index(i), index(j), c0], kernel.taps), True)
                            for j in range(kernel.kw)] for i in range(kernel.kh)]  # fmt: skip
            self.rows = [self.row_at(index(i)) for i in range(kernel.kh)]
        self.corr = arith.sitofp(kernel.f32s, self.load(kernel.correction, [c0], kernel.i32))
        self.mult = self.load(kernel.multiplier, [c0], kernel.f32)
        self.bias = self.load(kernel.bias, [c0], kernel.f32)

    def row_at(self, i: ir.Value) -> tuple[ir.Value, ir.Value | None]:
        """The input row that filter row i reads at this output row, and at an edge row whether it lies in the input
        (an i1; the row clamped into the input so that its loads stay there), else None."""
        k = self.k
        row = arith.subi(arith.addi(arith.muli(self.y, index(k.sh)), i), index(k.top))
        if not self.edge:
            return row, None
        low, high = index(0), index(k.h - 1)
        inside = arith.andi(arith.cmpi(arith.CmpIPredicate.sge, row, low),
                            arith.cmpi(arith.CmpIPredicate.sle, row, high))  # fmt: skip
        return arith.minsi(arith.maxsi(row, low), high), inside

    def load(self, buffer: ir.Value, at: list[ir.Value], elt: ir.Type) -> ir.Value:
        """16 elements of `buffer` at `at` (under the block's mask: zeros beyond it)."""
        t = vector_type(LANES, elt)
        if self.mask is None:
            return vector.load(t, buffer, at)
        zero = ir.FloatAttr.get(elt, 0.0) if elt == self.k.f32 else ir.IntegerAttr.get(elt, 0)
        return vector.maskedload(t, buffer, at, self.mask, splat(t, zero))

    def widen(self, value: ir.Value, signed: bool) -> ir.Value:
        """16 integers (bytes, or a filter's int16 taps) as the f32 integers they are."""
        return (arith.sitofp if signed else arith.uitofp)(self.k.f32s, value)

    def tile(self, x0: ir.Value, pixels: int, column_inside: Callable[[int], bool] = _everywhere) -> None:
        """Output pixels x0 .. x0 + pixels - 1: per filter row, each input column the tile reads is widened once
        and added into the accumulators of the pixels whose windows hold it; a column or row of padding (static:
        `column_inside`, relative to the tile's first window; at an edge row, `inside` at run time) is the zero
        point."""
        k = self.k
        accs = [k.zero] * pixels
        left = arith.subi(arith.muli(x0, index(k.sw)), index(k.left))
        if self.filter is not None:
            for i in range(k.kh):
                self.add_row(accs, self.rows[i], self.filter[i], left, column_inside)
        else:
            loop = scf.ForOp(index(0), index(k.kh), index(1), accs)
            with ir.InsertionPoint(loop.body):
                i = loop.induction_variable
                weights = [self.widen(self.load(k.weights, [i, index(j), self.c0], k.taps), True)
                           for j in range(k.kw)]  # fmt: skip
                accs = list(loop.inner_iter_args)
                self.add_row(accs, self.row_at(i), weights, left, column_inside)
                scf.YieldOp(accs)
            accs = list(loop.results)
        for p, acc in enumerate(accs):
            value = arith.addf(arith.mulf(arith.subf(acc, self.corr), self.mult), self.bias)
            at = [self.image, self.y, arith.addi(x0, index(p)), self.c0]
            store_lanes(k.output.apply(value), k.dest, at, self.mask, self.width)

    def add_row(self, accs: list[ir.Value], row: tuple[ir.Value, ir.Value | None], weights: list[ir.Value],
                left: ir.Value, column_inside: Callable[[int], bool]) -> None:  # fmt: skip
        """One filter row's products into the tile's accumulators `accs` (in place): `row` as `row_at` gives it,
        `weights` the row's widened taps, `left` the tile's first input column."""
        k, (at_row, inside) = self.k, row
        for column in range((len(accs) - 1) * k.sw + k.kw):
            if column_inside(column):
                x = self.widen(self.load(k.src, [self.image, at_row, arith.addi(left, index(column)), self.c0], k.i8),
                               k.signed)  # fmt: skip
                if inside is not None:
                    x = arith.select(inside, x, k.padding)
            else:
                x = k.padding
            for p in range(len(accs)):
                j = column - p * k.sw
                if 0 <= j < k.kw:
                    accs[p] = vector.fma(x, weights[j], accs[p])

    def pixels(self) -> None:
        """Every output pixel of the row in register tiles: those whose windows reach into the left or right
        padding in tiles at static positions (each tap knows whether it reads the input), the others in a loop
        (the last tile smaller)."""
        k = self.k
        lo, hi = interior(k.ow, k.sw, k.left, k.kw, k.w)
        for start, stop in ((0, lo), (hi, k.ow)):
            for x0 in range(start, stop, PIXEL_TILE):
                self.tile(index(x0), min(PIXEL_TILE, stop - x0), _inside(x0, k.sw, k.left, k.w))
        count = (hi - lo) // PIXEL_TILE
        if count:
            loop = scf.ForOp(index(lo), index(lo + count * PIXEL_TILE), index(PIXEL_TILE))
            with ir.InsertionPoint(loop.body):
                self.tile(loop.induction_variable, PIXEL_TILE)
                scf.YieldOp([])
        if (hi - lo) % PIXEL_TILE:
            self.tile(index(lo + count * PIXEL_TILE), (hi - lo) % PIXEL_TILE)


class _Depthwise:
    """The buffers, window and types of one cpu_int8_depthwise_nhwc."""

    def __init__(self, op: ir.Operation) -> None:
        dest, src, self.weights, self.correction, self.multiplier, self.bias = op.operands
        self.n, self.oh, self.ow, self.c = ops.shape(dest)
        _, self.h, self.w, _ = ops.shape(src)
        self.kh, self.kw = pair(op, "kernels")
        self.sh, self.sw = pair(op, "strides")
        self.top, self.left = ops.ints(op, "pads")[:2]
        self.output = OutputSteps.of(op)
        # uint8 buffers are stored as the i8 bytes they are; the kernel widens them as unsigned.
        self.dest = signless(dest) if self.output.scale else dest
        self.signed = not ir.IntegerType(ops.element_type(src)).is_unsigned
        self.src = src if self.signed else signless(src)
        self.i8, self.i32, self.f32 = (ir.IntegerType.get_signless(8), ir.IntegerType.get_signless(32),
                                       ir.F32Type.get())  # fmt: skip
        # The filter's element type: i8, or i16 (uint8 weights less their zero point).
        self.taps = ops.element_type(self.weights)
        self.f32s = vector_type(LANES, self.f32)
        self.zero = splat(self.f32s, ir.FloatAttr.get(self.f32, 0.0))
        # What a tap in the padding reads: the zero point, whose product the correction takes off again.
        self.padding = splat(self.f32s, ir.FloatAttr.get(self.f32, float(ir.IntegerAttr(op.attributes["zero"]).value)))

    def row(self, image: ir.Value, y: ir.Value, edge: bool) -> None:
        """Output row `y`: channel blocks of 16 (the last one masked), each with its row of pixels."""
        full = self.c - self.c % LANES
        if full:
            blocks = scf.ForOp(index(0), index(full), index(LANES))
            with ir.InsertionPoint(blocks.body):
                _Block(self, image, y, edge, blocks.induction_variable, LANES).pixels()
                scf.YieldOp([])
        if self.c % LANES:
            _Block(self, image, y, edge, index(full), self.c % LANES).pixels()

    def emit(self) -> None:
        """Images, then output rows: those whose windows reach into the top or bottom padding in a loop of their
        own, each filter row's padding decided at run time (`_Block`), the others in a loop without a check. Each
        top and bottom row emitted at its place, with its padding known, made a 9x9 layer (MixNet's) nine copies
        of a row's tiles: 75 000 multiply-adds of code, 51 s to compile quantized MixNet-S."""
        lo, hi = interior(self.oh, self.sh, self.top, self.kh, self.h)
        edges = self.oh - (hi - lo)
        images = scf.ForOp(index(0), index(self.n), index(1))
        with ir.InsertionPoint(images.body):
            image = images.induction_variable
            if edges:
                # Output rows 0 .. lo - 1, then hi .. oh - 1, as one loop over edges.
                rows = scf.ForOp(index(0), index(edges), index(1))
                with ir.InsertionPoint(rows.body):
                    t = rows.induction_variable
                    below = arith.cmpi(arith.CmpIPredicate.ult, t, index(lo))
                    self.row(image, arith.select(below, t, arith.addi(t, index(hi - lo))), True)
                    scf.YieldOp([])
            if hi > lo:
                rows = scf.ForOp(index(lo), index(hi), index(1))
                with ir.InsertionPoint(rows.body):
                    self.row(image, rows.induction_variable, False)
                    scf.YieldOp([])
            scf.YieldOp([])


@lowering("cpu_int8_depthwise_nhwc")
def _cpu_int8_depthwise_nhwc(op: ir.Operation) -> None:
    """dest[n, y, x, c] = f32(sum_ij src[n, y * sh + i - top, x * sw + j - left, c] * W[i, j, c] - correction[c]) *
    multiplier[c] + bias[c], then the epilogue, with exact f32 sums (module docstring); taps outside src read the
    zero point."""
    _Depthwise(op).emit()
