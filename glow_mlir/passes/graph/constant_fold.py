"""glow-constant-fold: evaluates at compile time every glow op whose operands are all constants or splats.

Glow's ConstantFold: a subgraph fed only by `glow.constant` and `glow.splat` computes the same tensor on every
run, so it is computed once, here, with the reference interpreter's `evaluate` (the oracle every backend is
tested against, so the folded value is the one the op defines, in its element type). Ops the interpreter
cannot run are left alone.

Folding must not make the model bigger: a splat is one scalar, while a constant is stored element by
element. So only the values that leave the foldable subgraph (read by an op that does not fold, or returned)
are materialized, and one whose storage would cost more elements than its foldable operands' (a broadcast
of a small constant, an op on splats giving a non-uniform tensor) is not: it stays an op and its operands are
materialized instead. A uniform result becomes a `glow.splat` when the splat attribute holds it exactly,
otherwise a `glow.constant`. A splat alone is never folded: it already is its cheapest form.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.errors import GlowError
from glow_mlir.interpreter import evaluate
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.registry import register

LEAVES = (g.CONSTANT, g.SPLAT)


def fold_function(function: ir.Operation) -> bool:
    """Folds the constant subgraphs of one function; returns whether anything changed."""
    values: dict[ir.Value, np.ndarray] = {}
    cost: dict[ir.Value, int] = {}
    foldable: list[ir.Operation] = []
    for op in g.graph_ops(function):
        if op.name in LEAVES or len(op.results) != 1 or not op.operands:
            continue
        # A leaf is read only for an op whose operands are all constants: reading every leaf copied all of a
        # model's weights out on every run of the pass (VGG-19: 548 MB each time).
        if not all(v in values or g.producer_name(v) in LEAVES for v in op.operands):
            continue
        if not all(v in values or _read_leaf(v, values, cost) for v in op.operands):
            continue
        result = _evaluate(op, [values[v] for v in op.operands])
        if result is None:
            continue
        values[op.results[0]] = result
        cost[op.results[0]] = _storage_cost(result, op.results[0].type)
        foldable.append(op)

    folded = set(foldable)
    # The values that leave the foldable subgraph: used by an op that is not folded (or by the return).
    frontier = [op for op in foldable if any(u not in folded for u in g.users(op.results[0]))]
    changed = False
    done: set[ir.Operation] = set()
    while frontier:
        op = frontier.pop()
        if op in done:
            continue
        done.add(op)
        result = op.results[0]
        operand_cost = sum(cost[v] for v in set(op.operands))
        if cost[result] > operand_cost:
            # Materializing would grow the model: keep the op, fold what feeds it instead.
            frontier.extend(p for p in (g.producer(v) for v in op.operands) if p in folded)
            continue
        with ir.InsertionPoint(op), op.location:
            replacement = g.materialize(values[result], result.type)
        g.replace(op, replacement)
        changed = True
    return changed


def _read_leaf(value: ir.Value, values: dict[ir.Value, np.ndarray], cost: dict[ir.Value, int]) -> bool:
    """Reads the constant or splat `value` into `values` and its storage into `cost`; whether it could."""
    array = g.constant_array(value)
    if array is None:
        return False
    values[value] = array
    cost[value] = 1 if g.producer_name(value) == g.SPLAT else array.size
    return True


def _evaluate(op: ir.Operation, operands: list[np.ndarray]) -> np.ndarray | None:
    """`op`'s value on constant operands in its result's element type, or None if it cannot be computed."""
    try:
        result = np.asarray(evaluate(op, operands))
        expected = g.dtype(op.results[0])
    except (GlowError, ValueError):
        return None
    if result.shape != ops.shape(op.results[0]):
        return None
    with np.errstate(all="ignore"):
        return result.astype(expected)


def _storage_cost(array: np.ndarray, result: ir.Type) -> int:
    """Elements stored when `array` is materialized: 1 for a splat, every element for a constant."""
    if array.size:
        first = array.reshape(-1)[0]
        if np.all(array == first) and g.splat_attribute(ops.element_type(result), first.item()) is not None:
            return 1
    return array.size


@register("glow-constant-fold")
def constant_fold(module: ir.Module) -> None:
    """Evaluate ops whose operands are all constants or splats and replace them by constants or splats."""
    for function in ops.functions(module):
        fold_function(function)
