"""glow-quant-fold-convert-pairs: removes a conversion and straight back where it loses nothing.

`convert_to(convert_to(x : T -> W) -> T)` is `x` when W holds every value of T exactly: int8 -> f32 -> int8
(a dequantized value's integer before its scale), f16 or bf16 -> f32 -> f16 (the pairs `convert_to` of
glow_mlir.quantization leaves between two ops it computes in half precision), i32 -> f64 -> i32. A narrowing
first step (f32 -> f16 -> f32, i32 -> f32 -> i32) loses information and is kept, but for a float that is an
integer within the integer type's range: a QuantizeLinear's clamp of a rounded value, which a DequantizeLinear
reads straight back (`f32 -> int8 -> f32`). QDQ models put such a pair after every activation an int8 kernel
does not take (a GELU's erf and adds, a LayerNorm's output: a QDQ BERT's 151 QuantizeLinear), and without the
pair the quantize and dequantize arithmetic is one elementwise chain with the ops around it instead of two
kernels and an int8 buffer. The compile pipeline runs the pass after the backend's layout, whose int8 kernels
(glow-cpu-int8) take the pairs their products read. The outer conversion is replaced, and the inner one
erased once nothing else uses it.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from mlir import ir

from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.registry import register

CONVERT = "glow.convert_to"
_BF16 = np.dtype(ml_dtypes.bfloat16)


def widens_exactly(narrow: np.dtype, wide: np.dtype) -> bool:
    """Whether every value of `narrow` is a value of `wide` (numpy's safe casting; bf16 by its format)."""
    if narrow == wide:
        return True
    if narrow == _BF16:
        return wide in (np.dtype(np.float32), np.dtype(np.float64))
    if wide == _BF16 or narrow == np.bool_:
        return False
    if np.issubdtype(narrow, np.integer) and np.issubdtype(wide, np.floating):
        # numpy calls int64 -> float64 safe; a float holds the integers of its significand's bits only.
        return np.iinfo(narrow).bits - (np.iinfo(narrow).min < 0) <= np.finfo(wide).nmant + 1
    return bool(np.can_cast(narrow, wide, casting="safe"))


def _integral(value: ir.Value, depth: int = 4) -> bool:
    """Whether every element of float `value` is an integer: a round, a conversion from an integer type, an
    integer constant, or a sum, difference, max or min of such."""
    op = g.producer(value)
    if op is None or depth == 0:
        return False
    if op.name == "glow.round":
        return True
    if op.name == CONVERT:
        return np.issubdtype(g.dtype(op.operands[0]), np.integer)
    if op.name in ("glow.add", "glow.sub", "glow.max", "glow.min"):
        return all(_integral(v, depth - 1) for v in op.operands)
    uniform = g.uniform_value(value)
    return isinstance(uniform, (int, float)) and float(uniform).is_integer()


def _clamped_into(value: ir.Value, target: np.dtype) -> bool:
    """Whether float `value` is min(max(v, lo), hi) (either order) of an integral v, with lo and hi uniform
    and within integer type `target`'s range: every element is a value of `target`."""
    info = np.iinfo(target)

    def clamped(op: ir.Operation | None) -> ir.Value | None:
        """The operand that min or max `op` bounds by a uniform operand within the range, else None."""
        if op is None or op.name not in ("glow.min", "glow.max"):
            return None
        a, b = op.operands
        for other, bound in ((a, g.uniform_value(b)), (b, g.uniform_value(a))):
            if isinstance(bound, (int, float)) and info.min <= bound <= info.max:
                return other
        return None

    outer = g.producer(value)
    middle = clamped(outer)
    inner = None if middle is None else g.producer(middle)
    source = clamped(inner)
    return source is not None and {outer.name, inner.name} == {"glow.min", "glow.max"} and _integral(source)


def _fold(op: ir.Operation) -> ir.Value | None:
    inner = g.producer_named(op.operands[0], CONVERT)
    if inner is None:
        return None
    source, middle = inner.operands[0], g.dtype(inner.results[0])
    if g.dtype(source) != g.dtype(op.results[0]):
        return None
    exact = widens_exactly(g.dtype(source), middle) or (
        np.issubdtype(g.dtype(source), np.floating) and np.issubdtype(middle, np.integer)
        and _clamped_into(source, middle)
    )  # fmt: skip
    return source if exact else None


@register("glow-quant-fold-convert-pairs")
def fold_convert_pairs(module: ir.Module) -> None:
    """Fold convert_to(convert_to(x: T -> W) -> T) into x where W holds every value x takes."""
    g.rewrite_functions(module, g.by_name({CONVERT: _fold}), fixed_point=False)
