"""glow-quant-fold-convert-pairs: removes a conversion to a wider type and straight back.

`convert_to(convert_to(x : T -> W) -> T)` is `x` when W holds every value of T exactly: int8 -> f32 -> int8
(a dequantized value's integer before its scale), f16 or bf16 -> f32 -> f16 (the pairs `convert_to` of
glow_mlir.quantization leaves between two ops it computes in half precision), i32 -> f64 -> i32. A narrowing
first step (f32 -> f16 -> f32, i32 -> f32 -> i32) loses information and is kept. The outer conversion is
replaced, and the inner one erased once nothing else uses it.
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
    return bool(np.can_cast(narrow, wide, casting="safe"))


def _fold(op: ir.Operation) -> ir.Value | None:
    inner = g.producer_named(op.operands[0], CONVERT)
    if inner is None:
        return None
    source = inner.operands[0]
    if g.dtype(source) != g.dtype(op.results[0]) or not widens_exactly(g.dtype(source), g.dtype(inner.results[0])):
        return None
    return source


@register("glow-quant-fold-convert-pairs")
def fold_convert_pairs(module: ir.Module) -> None:
    """Fold convert_to(convert_to(x: T -> W) -> T) into x where W holds every value of T."""
    g.rewrite_functions(module, g.by_name({CONVERT: _fold}), fixed_point=False)
