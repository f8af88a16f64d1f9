"""glow-cpu-int8's pooling rule and its kernel: a max pool whose f32 result only feeds a uint8 QuantizeLinear pools
the uint8 activation instead (`glow.cpu_max_pool_u8_nhwc`, int8_ops.py).

QuantizeLinear (divide by a positive scale, round half to even, add the zero point, clamp) is monotone, so it
commutes with max: Q(max_pool(x)) == max_pool(Q(x)) exactly, and the float pool's -inf padding never wins. The
quantization then sits right after the producer of x, whose epilogue takes it (int8_rewrite.fuse_output): ResNet's
stem convolution writes uint8, and the pool reads a quarter of the bytes. An imported QDQ model pools
DequantizeLinear(q) and quantizes with the same scale and zero point: Q(DQ(q)) == q, so the pool reads q.

The kernel clips each window to the input (no padded copy), and takes the max of 64 channels per zmm with
unsigned byte max (`vpmaxub`).
"""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import arith, scf, vector

from glow_mlir import ops
from glow_mlir.backends.cpu.int8_gemm import signless
from glow_mlir.backends.cpu.ops import TO_NCHW, TO_NHWC
from glow_mlir.backends.cpu.int8_residual import dequantized_input, quantization, sole
from glow_mlir.codegen.builders import index, pair
from glow_mlir.codegen.table import lowering
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.graph.sink_transpose import transpose_to

POOL = "glow.cpu_max_pool_u8_nhwc"
# Channels per vector: one zmm of bytes.
BYTES_PER_VECTOR = 64


def _quantize(x: ir.Value, scale: float, zero: int) -> ir.Value:
    """The uint8 QuantizeLinear of f32 `x` as the chain `quantization` matches (div, round, [add z], max 0, min
    255, convert_to ui8), at the current insertion point."""

    def splat(number: float) -> ir.Value:
        return g.materialize(np.full(ops.shape(x), number, np.float32), x.type)

    y = g.make("glow.round", [g.make("glow.div", [x, splat(scale)], x.type)], x.type)
    if zero:
        y = g.make("glow.add", [y, splat(zero)], x.type)
    y = g.make("glow.min", [g.make("glow.max", [y, splat(0)], x.type), splat(255)], x.type)
    return g.make("glow.convert_to", [y], ops.tensor_type(ops.shape(x), ir.IntegerType.get_unsigned(8)))


def int8_max_pool(op: ir.Operation) -> ir.Value | None:
    """glow.max_pool `op` (NCHW) whose result only feeds a uint8 QuantizeLinear, as cpu_max_pool_u8_nhwc of its
    quantized input (of q itself when the input is DequantizeLinear(q : ui8) of the same scale and zero point),
    between transposes to NHWC and back; replaces the quantization. None when `op` is not so used."""
    divide = sole(op.results[0], "glow.div") if op.name == "glow.max_pool" else None
    found = None if divide is None else quantization(divide)
    if found is None:
        return None
    scale, zero, last = found
    x = op.operands[0]
    dequantized = dequantized_input(x)
    n, c, oh, ow = ops.shape(op.results[0])
    with ir.InsertionPoint(last), last.location:
        if dequantized is not None and g.dtype(dequantized[0]) == np.uint8 and dequantized[1:] == (zero, scale):
            q = dequantized[0]
        else:
            q = _quantize(x, scale, zero)
        result = ops.tensor_type([n, oh, ow, c], ir.IntegerType.get_unsigned(8))
        attrs = {name: op.attributes[name] for name in ("kernels", "strides", "pads")}
        pooled = transpose_to(g.make(POOL, [transpose_to(q, TO_NHWC)], result, attrs), TO_NCHW)
    g.replace(last, pooled)
    return pooled


@lowering("cpu_max_pool_u8_nhwc")
def _cpu_max_pool_u8_nhwc(op: ir.Operation) -> None:
    """dest[n, y, x, c] = max of src over the window of (y, x) clipped to the input: per output pixel, the rows
    and columns of its window inside the input, 64 channels a vector (the last vector masked)."""
    dest, src = signless(op.operands[0]), signless(op.operands[1])
    n, oh, ow, c = ops.shape(dest)
    _, h, w, _ = ops.shape(src)
    kh, kw = pair(op, "kernels")
    sh, sw = pair(op, "strides")
    top, left = ops.ints(op, "pads")[:2]
    i8 = ir.IntegerType.get_signless(8)

    def window(o: ir.Value, stride: int, pad: int, size: int, extent: int) -> tuple[ir.Value, ir.Value]:
        start = arith.subi(arith.muli(o, index(stride)), index(pad))
        return arith.maxsi(start, index(0)), arith.minsi(arith.addi(start, index(size)), index(extent))

    def chunk(image: ir.Value, rows: tuple[ir.Value, ir.Value], cols: tuple[ir.Value, ir.Value], y: ir.Value,
              x: ir.Value, c0: ir.Value, width: int) -> None:  # fmt: skip
        """The max over the clipped window of `width` channels from c0 (a masked vector when under 64)."""
        t = ir.VectorType.get([BYTES_PER_VECTOR], i8)
        zero = arith.constant(t, ir.DenseElementsAttr.get_splat(t, ir.IntegerAttr.get(i8, 0)))
        mask = None
        if width < BYTES_PER_VECTOR:
            mask = vector.constant_mask(ir.VectorType.get([BYTES_PER_VECTOR], ir.IntegerType.get_signless(1)), [width])

        def load(at: list[ir.Value]) -> ir.Value:
            return vector.load(t, src, at) if mask is None else vector.maskedload(t, src, at, mask, zero)

        over_rows = scf.ForOp(rows[0], rows[1], index(1), [zero])
        with ir.InsertionPoint(over_rows.body):
            over_cols = scf.ForOp(cols[0], cols[1], index(1), [over_rows.inner_iter_args[0]])
            with ir.InsertionPoint(over_cols.body):
                at = [image, over_rows.induction_variable, over_cols.induction_variable, c0]
                scf.YieldOp([arith.maxui(over_cols.inner_iter_args[0], load(at))])
            scf.YieldOp([over_cols.results[0]])
        out = [image, y, x, c0]
        if mask is None:
            vector.store(over_rows.results[0], dest, out)
        else:
            vector.maskedstore(dest, out, mask, over_rows.results[0])

    full = c - c % BYTES_PER_VECTOR
    images = scf.ForOp(index(0), index(n), index(1))
    with ir.InsertionPoint(images.body):
        out_rows = scf.ForOp(index(0), index(oh), index(1))
        with ir.InsertionPoint(out_rows.body):
            rows = window(out_rows.induction_variable, sh, top, kh, h)
            out_cols = scf.ForOp(index(0), index(ow), index(1))
            with ir.InsertionPoint(out_cols.body):
                cols = window(out_cols.induction_variable, sw, left, kw, w)
                pixel = (images.induction_variable, rows, cols, out_rows.induction_variable,
                         out_cols.induction_variable)  # fmt: skip
                if full:
                    channels = scf.ForOp(index(0), index(full), index(BYTES_PER_VECTOR))
                    with ir.InsertionPoint(channels.body):
                        chunk(*pixel, channels.induction_variable, BYTES_PER_VECTOR)
                        scf.YieldOp([])
                if c % BYTES_PER_VECTOR:
                    chunk(*pixel, index(full), c % BYTES_PER_VECTOR)
                scf.YieldOp([])
            scf.YieldOp([])
        scf.YieldOp([])
