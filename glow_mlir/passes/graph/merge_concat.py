""""glow-merge-concat: flattens nested concats and slices through concats (Glow's OptimizeConcatNodes and
EliminateConcatSlice).

- concat(..., concat(a, b; dim d), ...; dim d) -> concat(..., a, b, ...; dim d) when the inner concat has no
  other user: concatenation is associative, and IRGen then writes every piece straight into one buffer
  instead of building the inner concat in a buffer of its own and copying it. A `glow.concat` holds at most
  8 runs of equal-typed inputs (`ops.concat_attributes`), so an inner concat whose inputs would break that
  limit is left nested.
- slice(concat(x0, x1, ...; dim d)) whose block lies within one input xj along d -> xj itself when the
  slice is all of xj, else a slice of xj (the start moved by xj's offset along d): the slice no longer
  keeps the whole concat alive.
"""

from __future__ import annotations

from mlir import ir

from glow_mlir import ops
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.registry import register

CONCAT = "glow.concat"


def _flattened(op: ir.Operation) -> ir.Value | None:
    dim = ops.integer(op, "dim")
    inputs: list[ir.Value] = []
    spliced = False
    operands = list(op.operands)
    for i, value in enumerate(operands):
        inner = g.producer(value)
        if inner is not None and inner.name == CONCAT and ops.integer(inner, "dim") == dim and g.has_one_use(value):
            candidate = [*inputs, *inner.operands, *operands[i + 1 :]]
            if len(ops.concat_segments([v.type for v in candidate])) <= ops.CONCAT_GROUPS:
                inputs.extend(inner.operands)
                spliced = True
                continue
        inputs.append(value)
    if not spliced:
        return None
    with ir.InsertionPoint(op), op.location:
        attrs = ops.concat_attributes([v.type for v in inputs], dim)
        return g.make(CONCAT, inputs, op.results[0].type, attrs)


def _slice_of_concat(op: ir.Operation) -> ir.Value | None:
    concat = g.producer_named(op.operands[0], CONCAT)
    if concat is None:
        return None
    dim = ops.integer(concat, "dim")
    start = ops.ints(op, "start")
    size = ops.shape(op.results[0])[dim]
    offset = 0
    for part in concat.operands:
        extent = ops.shape(part)[dim]
        if offset <= start[dim] and start[dim] + size <= offset + extent:
            if part.type == op.results[0].type:
                return part
            moved = list(start)
            moved[dim] -= offset
            with ir.InsertionPoint(op), op.location:
                return g.make("glow.slice", [part], op.results[0].type, {"start": ops.i64_array(moved)})
        offset += extent
    return None


@register("glow-merge-concat")
def merge_concat(module: ir.Module) -> None:
    """Flatten concats of concats on one dim (within the 8-run limit) and slice through concats."""
    g.rewrite_functions(module, g.by_name({CONCAT: _flattened, "glow.slice": _slice_of_concat}), fixed_point=False)
