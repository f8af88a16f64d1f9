"""`convert_to(model, "bf16" | "fp16")`: Glow's -convert-to-fp16, the float ops of a model computed in half
precision.

Every op whose float operands and result are f32 gets those operands converted to the target type and
computes in it; its result converts back to f32 for its users, and glow-quant-fold-convert-pairs then removes
each back-and-forth between two converted ops, so conversions remain only at the boundaries of the
half-precision region (the inputs, the outputs, the kept ops). Constant operands are converted at once.
An op whose element-type rule does not take the target type keeps f32 (it has no half-precision form), as
do the ops `keep_float` names (node names or op kinds, e.g. "softmax" or "glow.layer_norm"). Inputs and
outputs keep their f32 types, so the converted model is fed and read as the original.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.context import copy_module
from glow_mlir.opdefs import glow_ops
from glow_mlir.opdefs.shapes import ShapeError
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.graph.quant_fold_converts import fold_convert_pairs
from glow_mlir.quantization.profile import Model, as_module, model_function, node_names

TARGETS = {"bf16": np.dtype(ml_dtypes.bfloat16), "fp16": np.dtype(np.float16)}
F32 = np.dtype(np.float32)
# Ops with nothing to compute, left as they are.
_LEAVES = ("glow.constant", "glow.splat")


def convert_to(model: Model, precision: str, *, keep_float: list[str] | tuple[str, ...] = ()) -> ir.Module:
    """A copy of `model` with its f32 ops computed in `precision` ("bf16" or "fp16"); see the module doc."""
    if precision not in TARGETS:
        raise ValueError(f"precision must be one of {', '.join(TARGETS)}, got {precision!r}")
    target = TARGETS[precision]
    module = copy_module(as_module(model))
    keep = frozenset(keep_float)
    with module.context, ir.Location.unknown():
        low = ops.mlir_type(target)
        for op, name in node_names(model_function(module)).items():
            kind = op.name
            if kind in _LEAVES or {name, kind, kind.removeprefix("glow.")} & keep or len(op.results) != 1:
                continue
            if g.dtype(op.results[0]) != F32 or not _takes(op, precision):
                continue
            _lower_precision(op, name, low, target)
        fold_convert_pairs(module)
    return module


def _takes(op: ir.Operation, precision: str) -> bool:
    """Whether `op`'s element-type rule accepts its f32 operands as `precision`."""
    definition = glow_ops()[op.name.removeprefix("glow.")]
    spelled = "f16" if precision == "fp16" else "bf16"
    operands = [spelled if g.dtype(v) == F32 else ops.NUMPY_TO_MLIR[g.dtype(v)] for v in op.operands]
    try:
        return definition.types(operands, spelled) == spelled
    except ShapeError:
        return False


def _lower_precision(op: ir.Operation, name: str, low: ir.Type, target: np.dtype) -> None:
    """Rebuilds `op` in type `low`, its f32 operands converted to it and its result back to f32. The new op
    keeps the node's name (the SQNR report compares its result); the conversions are `<name>/to_...`."""
    operands = []
    with ir.InsertionPoint(op), ir.Location.name(f"{name}/to_{ops.NUMPY_TO_MLIR[target]}"):
        for v in op.operands:
            if g.dtype(v) != F32:
                operands.append(v)
                continue
            kind = ops.tensor_type(ops.shape(v), low)
            constant = g.constant_array(v)
            converted = g.materialize(constant, kind) if constant is not None else g.make("glow.convert_to", [v], kind)
            operands.append(converted)
    result = op.results[0]
    with ir.InsertionPoint(op), op.location:
        new = g.make(op.name, operands, ops.tensor_type(ops.shape(result), low), g.attributes(op))
    with ir.InsertionPoint(op), ir.Location.name(f"{name}/to_f32"):
        back = g.make("glow.convert_to", [new], result.type)
    g.replace(op, back)
