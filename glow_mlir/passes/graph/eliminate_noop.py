"""glow-eliminate-noop: removes ops that return their input unchanged (Glow's EliminateNoop).

Importers and other rewrites leave such ops behind (an ONNX Reshape to the same shape, a Transpose with the
identity permutation, a Concat of one input), and each costs a copy or blocks another pattern. Each of these
is replaced by its input:

- reshape whose dims are the input's shape
- transpose whose shuffle is the identity
- slice starting at 0 whose result has the input's shape
- concat of a single input
- convert_to to the input's own type
- broadcast whose input already has the result type
- insert_tensor whose small tensor covers all of big (it is the small tensor)
- max_pool / avg_pool with a 1x1 kernel, unit strides and no pads
- gather of constant indices 0, 1, ..., n - 1 along a dim of size n (a 3-D convolution's planes for a filter of
  depth 1)

Every case is exact on every element type, so the pass runs once.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.registry import register


def _noop_input(op: ir.Operation) -> ir.Value | None:
    """The operand `op` merely passes on, or None."""
    if len(op.results) != 1 or not op.operands:
        return None
    result = op.results[0]
    first = op.operands[0]
    match op.name.removeprefix(ops.GLOW):
        case "reshape" | "convert_to" | "broadcast":
            same = first.type == result.type
        case "transpose":
            same = ops.ints(op, "shuffle") == list(range(len(ops.shape(first))))
        case "slice":
            same = first.type == result.type and not any(ops.ints(op, "start"))
        case "concat":
            same = len(op.operands) == 1
        case "insert_tensor":
            small = op.operands[1]
            return small if small.type == result.type else None
        case "gather":
            indices = g.constant_array(op.operands[1])
            size = ops.shape(first)[ops.integer(op, "axis")] if ops.shape(first) else -1
            same = indices is not None and indices.ndim == 1 and np.array_equal(indices, np.arange(size))
        case "max_pool" | "avg_pool":
            same = (
                ops.ints(op, "kernels") == [1, 1]
                and ops.ints(op, "strides") == [1, 1]
                and not any(ops.ints(op, "pads"))
            )
        case _:
            same = False
    return first if same and first.type == result.type else None


def eliminate_function(function: ir.Operation) -> bool:
    return g.rewrite_ops(function, _noop_input)


@register("glow-eliminate-noop")
def eliminate_noop(module: ir.Module) -> None:
    """Replace ops that do nothing (identity reshape/transpose/slice/pool, one-input concat, ...) by their input."""
    g.run_on_functions(module, eliminate_function, fixed_point=False)
