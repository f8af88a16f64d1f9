"""glow-sink-transpose: moves transposes down the graph until they cancel or meet a layout-sensitive op
(the transpose part of Glow's SinkCode).

Layout conversions (NHWC <-> NCHW around an imported subgraph, Transpose nodes in ONNX models) often come in
pairs separated by elementwise work. An elementwise op does not care about layout, so op(transpose(x, s))
equals transpose(op(x), s); sinking every transpose below such ops brings pairs together, where they compose
into one transpose or cancel. Rewrites:

- transpose(transpose(x, a), b) -> transpose(x, c) with c[i] = a[b[i]], or x when c is the identity
- transpose(splat) -> a splat of the transposed shape; transpose(constant) -> the transposed constant (when
  the transpose is the constant's only user, so the data is not stored twice)
- unary elementwise op(transpose(x, s)) -> transpose(op(x), s)
- binary elementwise op / select whose operands are all transposes with one shuffle s, splats, or constants
  used only there (at least one a transpose) -> transpose(op(inputs untransposed), s)

A transpose is sunk only when the op being crossed is its only user, so sinking never adds a transpose. The
pass repeats until nothing changes, as Glow runs SinkCode to a fixed point.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.passes import graph_utils as g
from glow_mlir.passes.registry import register

TRANSPOSE = "glow.transpose"


def transpose_to(value: ir.Value, shuffle: Sequence[int]) -> ir.Value:
    """transpose(value, shuffle) at the current insertion point and location."""
    dims = [ops.shape(value)[s] for s in shuffle]
    result = ops.tensor_type(dims, ops.element_type(value))
    return g.make(TRANSPOSE, [value], result, {"shuffle": ops.i64_array(shuffle)})


def fold_leaf_transpose(op: ir.Operation) -> ir.Value | None:
    """The splat or constant equal to transpose `op` of a splat or single-use constant, built before `op`."""
    source = op.operands[0]
    inner = g.producer(source)
    if inner is None:
        return None
    result = op.results[0]
    with ir.InsertionPoint(op), op.location:
        if inner.name == g.SPLAT:
            return g.make(g.SPLAT, [], result.type, {"value": inner.attributes["value"]})
        if inner.name == g.CONSTANT and g.has_one_use(source):
            array = g.constant_array(source)
            if array is not None:
                return g.materialize(array.transpose(ops.ints(op, "shuffle")), result.type, prefer_splat=False)
    return None


def _compose(op: ir.Operation) -> ir.Value | None:
    inner = g.producer(op.operands[0])
    if inner is None or inner.name != TRANSPOSE:
        return None
    a = ops.ints(inner, "shuffle")
    b = ops.ints(op, "shuffle")
    composed = [a[i] for i in b]
    x = inner.operands[0]
    if composed == list(range(len(composed))):
        return x
    with ir.InsertionPoint(op), op.location:
        return transpose_to(x, composed)


def _sink(op: ir.Operation) -> ir.Value | None:
    """transpose(op'(untransposed operands), s) for an elementwise `op`, or None when it does not apply."""
    operands = list(op.operands)
    transposes = {g.producer(v) for v in operands if g.producer_name(v) == TRANSPOSE}
    if not transposes:
        return None
    shuffles = {tuple(ops.ints(t, "shuffle")) for t in transposes}
    if len(shuffles) != 1:
        return None
    shuffle = list(shuffles.pop())
    inverse = g.inverse_permutation(shuffle)
    for t in transposes:
        # Every use of the transpose must be this op, or the transpose would stay and be computed twice.
        if len(list(t.results[0].uses)) != sum(1 for v in operands if v == t.results[0]):
            return None
    for v in operands:
        kind = g.producer_name(v)
        if kind == TRANSPOSE or kind == g.SPLAT:
            continue
        if kind != g.CONSTANT or not g.has_one_use(v) or g.constant_array(v) is None:
            return None
    with ir.InsertionPoint(op), op.location:
        inner_operands = [_untransposed(v, inverse) for v in operands]
        dims = ops.shape(inner_operands[0])
        inner_type = ops.tensor_type(dims, ops.element_type(op.results[0]))
        inner = g.make(op.name, inner_operands, inner_type, g.attributes(op))
        return transpose_to(inner, shuffle)


def _untransposed(value: ir.Value, inverse: Sequence[int]) -> ir.Value:
    """The operand that, transposed by the sunk shuffle, gives `value`."""
    op = g.producer(value)
    if op.name == TRANSPOSE:
        return op.operands[0]
    dims = [ops.shape(value)[i] for i in inverse]
    result = ops.tensor_type(dims, ops.element_type(value))
    if op.name == g.SPLAT:
        return g.make(g.SPLAT, [], result, {"value": op.attributes["value"]})
    array: np.ndarray = g.constant_array(value)
    return g.materialize(array.transpose(inverse), result, prefer_splat=False)


def sink_function(function: ir.Operation) -> bool:
    changed = False
    for op in g.graph_ops(function):
        if op.name == TRANSPOSE:
            replacement = _compose(op)
            if replacement is None:
                replacement = fold_leaf_transpose(op)
        elif op.name in g.ELEMENTWISE and len(op.results) == 1:
            replacement = _sink(op)
        else:
            replacement = None
        if replacement is not None:
            g.replace(op, replacement)
            changed = True
    return changed


@register("glow-sink-transpose", fixed_point=True)
def sink_transpose(module: ir.Module) -> None:
    """Sink transposes below elementwise ops, compose or cancel transpose pairs, fold transposed constants."""
    g.run_on_functions(module, sink_function, fixed_point=True)
