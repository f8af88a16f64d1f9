"""glow-simplify-arithmetic: algebraic identities on elementwise ops (Glow's OptimizeArithmeticNodes and
OptimizeSplat).

Rewrites, where "0" and "1" are splats or constants whose every element is 0 or 1:

- x + 0, 0 + x, x - 0 -> x;  x * 1, 1 * x, x / 1 -> x
- max(x, x), min(x, x), and(x, x), or(x, x), select(c, x, x) -> x
- neg(neg(x)), not(not(x)) -> x;  relu(relu(x)) -> relu(x)
- pow(x, 2) -> x * x, pow(x, 1) -> x: a square (RMSNorm's and T5's x**2, variance) would otherwise be a
  call of the C library's powf per element; x * x is the correctly rounded square, which powf approximates
- pow(x, 3) -> (x * x) * x, pow(x, 4) -> (x * x) * (x * x) (GeM pooling's cube, polynomial features,
  tanh-GELU's cube outside the activation matcher): a powf call per element is 3.2 ns, onnxruntime's cube
  0.3; two roundings, within 2 ulp of the exact power
- an elementwise op whose operands are all splats -> one splat, computed by the interpreter's `evaluate` on
  one element (so integer division truncates, comparisons give i1, exactly as the op defines), when the
  splat attribute holds the result exactly

Every rewrite gives bit-identical results on every element type, with two exceptions: x + 0 turns -0.0 into
+0.0, which compares equal (Glow accepts it too), and the cube and fourth power round twice. Identities that are wrong for NaN or infinity (x - x -> 0,
x * 0 -> 0 on floats) are not applied.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from glow_mlir import opdefs, ops
from glow_mlir.errors import GlowError
from glow_mlir.interpreter import evaluate
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.registry import register

# op -> (the neutral operand value, the operand positions it may take)
NEUTRAL = {
    "glow.add": (0, (0, 1)),
    "glow.sub": (0, (1,)),
    "glow.mul": (1, (0, 1)),
    "glow.div": (1, (1,)),
}
IDEMPOTENT = opdefs.with_trait(opdefs.Trait.IDEMPOTENT)
INVOLUTION = opdefs.with_trait(opdefs.Trait.INVOLUTION)


def simplify_function(function: ir.Operation) -> bool:
    return g.rewrite_ops(function, _simplified)


def _simplified(op: ir.Operation) -> ir.Value | None:
    """The value that `op` can be replaced with, or None."""
    operands = list(op.operands)
    result = op.results[0] if len(op.results) == 1 else None
    if result is None:
        return None
    if op.name in NEUTRAL:
        neutral, positions = NEUTRAL[op.name]
        for i in positions:
            other = operands[1 - i]
            if other.type == result.type and g.is_uniform(operands[i], neutral):
                return other
    if op.name in IDEMPOTENT and operands[0] == operands[1]:
        return operands[0]
    if op.name == "glow.select" and operands[1] == operands[2]:
        return operands[1]
    if op.name in INVOLUTION and g.producer_name(operands[0]) == op.name:
        return g.producer(operands[0]).operands[0]
    if op.name == "glow.relu" and g.producer_name(operands[0]) == op.name:
        return operands[0]
    if op.name == "glow.pow" and g.is_uniform(operands[1], 1):
        return operands[0]
    if op.name == "glow.pow":
        for n in (2, 3, 4):
            if g.is_uniform(operands[1], n):
                with ir.InsertionPoint(op), op.location:
                    return _power(operands[0], n, result.type)
    if op.name in g.ELEMENTWISE and operands and all(g.producer_name(v) == g.SPLAT for v in operands):
        return _fold_splats(op)
    return None


def _power(x: ir.Value, n: int, result: ir.Type) -> ir.Value:
    """x^n for n in 2..4 as products: x * x, (x * x) * x, (x * x) * (x * x)."""
    square = g.make("glow.mul", [x, x], result)
    if n == 2:
        return square
    return g.make("glow.mul", [square, x if n == 3 else square], result)


def _fold_splats(op: ir.Operation) -> ir.Value | None:
    """One splat for an elementwise op on splats, or None when the value cannot be computed or held."""
    scalars = [np.full((1,), g.splat_scalar(g.producer(v)), g.dtype(v)) for v in op.operands]
    try:
        value = np.asarray(evaluate(op, scalars))
    except (GlowError, ValueError):
        return None
    if value.shape != (1,):
        return None
    result = op.results[0]
    with np.errstate(all="ignore"):
        scalar = value.astype(g.dtype(result))[0].item()
    attr = g.splat_attribute(ops.element_type(result), scalar)
    if attr is None:
        return None
    with ir.InsertionPoint(op), op.location:
        return g.make(g.SPLAT, [], result.type, {"value": attr})


@register("glow-simplify-arithmetic")
def simplify_arithmetic(module: ir.Module) -> None:
    """Remove arithmetic identities (x+0, x*1, x/1, max(x,x), neg(neg(x)), ...), square by multiplying, and
    fold splat-op-splat."""
    g.run_on_functions(module, simplify_function, fixed_point=False)
