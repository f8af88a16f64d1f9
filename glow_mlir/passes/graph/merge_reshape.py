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


def merge_function(function: ir.Operation) -> bool:
    changed = False
    for op in g.graph_ops(function):
        if op.name != RESHAPE:
            continue
        source = op.operands[0]
        result = op.results[0]
        inner = g.producer(source)
        if inner is None:
            continue
        with ir.InsertionPoint(op), op.location:
            if inner.name == RESHAPE:
                original = inner.operands[0]
                replacement = (
                    original
                    if original.type == result.type
                    else g.make(RESHAPE, [original], result.type, g.attributes(op))
                )
            elif inner.name == g.SPLAT:
                replacement = g.make(g.SPLAT, [], result.type, {"value": inner.attributes["value"]})
            elif inner.name == g.CONSTANT and g.has_one_use(source):
                array = g.constant_array(source)
                if array is None:
                    continue
                replacement = g.materialize(array.reshape(ops.shape(result)), result.type, prefer_splat=False)
            else:
                continue
        g.replace(op, replacement)
        changed = True
    return changed


@register("glow-merge-reshape")
def merge_reshape(module: ir.Module) -> None:
    """Collapse reshape(reshape(x)) into one reshape (or x) and fold reshapes of constants and splats."""
    for function in ops.functions(module):
        merge_function(function)
