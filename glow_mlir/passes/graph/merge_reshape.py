"""glow-merge-reshape: collapses chains of reshapes and reshapes of constants (Glow's OptimizeReshape).

A reshape only renames the row-major layout of its elements, so:

- reshape(reshape(x)) -> reshape(x), or x itself when the final dims are x's shape;
- reshape(constant) -> a constant of the new shape holding the same elements, when the reshape is the
  constant's only user (otherwise both copies of the data would be kept);
- reshape(splat) -> a splat of the new shape.

Reshape chains come from importers (Flatten after Reshape) and from other rewrites; one reshape is one view at
the IR level and one fewer node for every pattern that looks through reshapes. A forward sweep sees each
reshape after its input was already rewritten, so one run collapses a whole chain.
"""

from __future__ import annotations

from mlir import ir

from glow_mlir import ops
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.registry import register

RESHAPE = "glow.reshape"


def _merged(op: ir.Operation) -> ir.Value | None:
    """Reshape `op` of a reshape, splat or single-use constant as one reshape (or its input), splat or
    constant."""
    inner = g.producer_named(op.operands[0], RESHAPE)
    if inner is None:
        return g.fold_into_leaf(op, lambda array: array.reshape(ops.shape(op.results[0])), only_user=True)
    original = inner.operands[0]
    if original.type == op.results[0].type:
        return original
    with ir.InsertionPoint(op), op.location:
        return g.make(RESHAPE, [original], op.results[0].type, g.attributes(op))


@register("glow-merge-reshape")
def merge_reshape(module: ir.Module) -> None:
    """Collapse reshape(reshape(x)) into one reshape (or x) and fold reshapes of constants and splats."""
    g.rewrite_functions(module, g.by_name({RESHAPE: _merged}), fixed_point=False)
