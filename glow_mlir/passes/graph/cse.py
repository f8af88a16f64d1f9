"""glow-cse: common subexpression elimination on `glow` graphs (Glow's CSE pass).

Upstream `cse` leaves IRDL ops alone (they declare no side-effect interface), yet every `glow` op is pure:
two ops of one kind with the same operands, the same attributes and the same result types compute the same
value, so the later one is replaced by the earlier. Operand order is part of the key (sub(a, b) is not
sub(b, a)) except for commutative ops (add, mul, max, min, the equality comparisons and the logic ops),
whose operands are put in one canonical order first. Constants are keyed by their value attribute, which
MLIR uniques, so two constants with equal values and types merge, as do two equal splats.

A function body is one block in SSA order, so the first op of a key dominates every later one; a single
forward sweep also merges whole duplicated chains, because by the time an op is keyed its operands have
already been replaced by their representatives.
"""

from __future__ import annotations

from collections.abc import Hashable

from mlir import ir

from glow_mlir import opdefs, ops
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.registry import register

COMMUTATIVE = opdefs.with_trait(opdefs.Trait.COMMUTATIVE)


def cse_function(function: ir.Operation) -> bool:
    """Merges the duplicate glow ops of one function; returns whether anything changed."""
    # The position of each value's definition gives commutative operands a canonical order.
    rank: dict[ir.Value, int] = {arg: i for i, arg in enumerate(g.body(function).arguments)}
    seen: dict[Hashable, ir.Value] = {}
    changed = False
    for op in g.graph_ops(function):
        key = _key(op, rank)
        if key in seen:
            g.replace(op, seen[key])
            changed = True
            continue
        seen[key] = op.results[0]
        for result in op.results:
            rank[result] = len(rank)
    return changed


def _key(op: ir.Operation, rank: dict[ir.Value, int]) -> Hashable:
    operands = list(op.operands)
    if op.name in COMMUTATIVE:
        operands.sort(key=rank.__getitem__)
    attrs = frozenset(g.attributes(op).items())
    return (op.name, tuple(operands), tuple(r.type for r in op.results), attrs)


@register("glow-cse")
def cse(module: ir.Module) -> None:
    """Merge glow ops of one kind with equal operands, attributes and result types (constants by value)."""
    for function in ops.functions(module):
        cse_function(function)
