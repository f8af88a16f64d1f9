"""glow-quant-fold-qdq: folds a dequantize followed by a quantize with the same scale and zero point, across
the data movement between them (Glow's optimizeQuantization, for the QDQ models onnxruntime writes).

glow has no quantized type: ONNX's DequantizeLinear imports as `mul(sub(convert_to(q : iN -> f32), Z), S)` and
QuantizeLinear as `convert_to(min(max(add(round(div(x, S)), Z), lo), hi) : f32 -> iN)` (ops_quant.py; the
sub and add are absent for a zero point of 0), S and Z uniform constants, lo and hi iN's range. QDQ models put
such a pair around every reshape, transpose or slice: DQ -> reshape -> Q. Data movement commutes with a
per-tensor dequantize, and Q(DQ(q)) is q exactly for |q - Z| < 2^16 (((q - Z) * S) / S is q - Z within two
float32 roundings, far from a .5 that round could take elsewhere), so

    Q(move_1(...move_k(DQ(q))))  ->  move_1(...move_k(q))     (q : iN, moves on iN)

when the quantize has DQ's S, Z and type, and each float value on the way has no other user (otherwise the
float form would stay beside the integer one). The integer moves carry a quarter of the bytes, and the
arithmetic of both conversions is gone.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.opdefs.types import integer_range
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.registry import register

CONVERT = "glow.convert_to"
# Ops that only move elements: they commute with an elementwise, per-tensor dequantize.
MOVES = ("glow.reshape", "glow.transpose", "glow.slice")
F32 = np.dtype(np.float32)


def _through(value: ir.Value, name: str, constant_at: int) -> tuple[ir.Value, float | int] | None:
    """When `value` is `name(v, c)` (c a uniform constant operand at index `constant_at`, v the other):
    (v, c); else None."""
    op = g.producer_named(value, name)
    if op is None:
        return None
    c = g.uniform_value(op.operands[constant_at])
    return None if c is None else (op.operands[1 - constant_at], c)


def _quantize(op: ir.Operation) -> tuple[ir.Value, float, float] | None:
    """(x, S, Z) when convert_to `op` ends a quantize of float32 x into its integer result type."""
    result = ops.NUMPY_TO_MLIR.get(g.dtype(op.results[0]))
    if result is None or result[0] not in "iu" or result == "i1" or g.dtype(op.operands[0]) != F32:
        return None
    lo, hi = integer_range(result)
    upper = _through(op.operands[0], "glow.min", 1)
    lower = None if upper is None or upper[1] != hi else _through(upper[0], "glow.max", 1)
    if lower is None or lower[1] != lo:
        return None
    shifted = _through(lower[0], "glow.add", 1)
    rounded, zero = (lower[0], 0.0) if shifted is None else (shifted[0], float(shifted[1]))
    round_op = g.producer_named(rounded, "glow.round")
    if round_op is None:
        return None
    divided = _through(round_op.operands[0], "glow.div", 1)
    return None if divided is None else (divided[0], float(divided[1]), zero)


def _dequantized(value: ir.Value) -> tuple[ir.Value, float, float] | None:
    """(q, S, Z) when float32 `value` is the dequantize of integer q."""
    scaled = _through(value, "glow.mul", 1)
    if scaled is None:
        return None
    shifted = _through(scaled[0], "glow.sub", 1)
    widened, zero = (scaled[0], 0.0) if shifted is None else (shifted[0], float(shifted[1]))
    convert = g.producer_named(widened, CONVERT)
    if convert is None or g.dtype(widened) != F32:
        return None
    return convert.operands[0], float(scaled[1]), zero


def _fold(op: ir.Operation) -> ir.Value | None:
    quantized = _quantize(op)
    if quantized is None:
        return None
    x, scale, zero = quantized
    moves: list[ir.Operation] = []
    # Only the quantize's own chain may use each float value on the way back to the dequantize.
    while (mover := g.producer(x)) is not None and mover.name in MOVES and g.has_one_use(x):
        moves.append(mover)
        x = mover.operands[0]
    found = _dequantized(x) if g.has_one_use(x) or not moves else None
    if found is None:
        return None
    q, dq_scale, dq_zero = found
    if g.dtype(q) != g.dtype(op.results[0]) or np.float32(dq_scale) != np.float32(scale) or dq_zero != zero:
        return None
    if abs(zero) >= 1 << 16:
        return None
    elt = ops.element_type(q)
    with ir.InsertionPoint(op):
        for mover in reversed(moves):
            with mover.location:
                q = g.make(mover.name, [q], ops.tensor_type(ops.shape(mover.results[0]), elt), g.attributes(mover))
    return q


@register("glow-quant-fold-qdq")
def fold_qdq(module: ir.Module) -> None:
    """Fold quantize(moves(dequantize(q))) into moves(q) when both conversions share scale, zero point and type."""
    g.rewrite_functions(module, g.by_name({CONVERT: _fold}), fixed_point=False)
