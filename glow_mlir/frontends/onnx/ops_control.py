"""ONNX control flow: If, Loop, Scan and SequenceMap, imported through their subgraphs.

- `If` with a condition known at compile time imports only the branch taken. With a run-time condition both
  branches are imported and each output is a `glow.select` between them, so the branches' outputs must have
  equal shapes and types (else UnsupportedAttributeError naming the node and the shapes); sequence or
  optional outputs need a compile-time condition. InferenceSession cuts the model at a condition computed at
  run time whose branches hold costly ops, so that only the taken branch runs (stages.py).
- `Scan`, and `Loop` with a static trip count whose body's condition is constant, become one `glow.loop`
  (glow_mlir/opdefs/control.py): the body is imported once, into a private function, and the generated code
  runs it in an `scf.for`, so its size does not grow with the trip count. A `Loop` whose body computes its
  condition (from run-time data or not) and that has no scan outputs becomes a `glow.loop` with a condition,
  an `scf.while` bounded by the trip count (or by 2^63 - 1 without one). Values of the outer scope the body
  reads become the loop's invariants (constants are copied into the body, where they stay constants).
  Unrolling a short loop is not measurably faster (one-process A/Bs of LSTM/GRU/RNN/Scan models of 4 to 10
  steps: unrolled/loop 0.965 to 1.024, the noise of two runs; 25 and 100 LSTM steps: the loop 1.7x and 4.5x
  faster), so no rule unrolls them.
- A body that needs a value at compile time that the loop gives it only at run time (a Slice by the
  iteration number, a Reshape by a carried value, a carried value whose shape changes) is **unrolled at
  import** instead, as is a `Loop` with scan outputs whose body computes its condition: the body is
  imported once per iteration, the loop-carried values of one iteration bound to the body inputs of the
  next, its termination found at compile time. The trip count must then be known at compile time (a trip
  count or condition that depends on graph inputs raises StaticInputRequired naming the node), a condition
  computed from run-time data is refused, and more than UNROLL_BOUND body nodes in all (iterations x nodes
  of the body, nested subgraphs included) is refused with UnsupportedAttributeError naming the node, the
  trip count and the bound. `SequenceMap` is unrolled the same way.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

import numpy as np
import onnx
from mlir import ir
from mlir.dialects import func

from glow_mlir import ops
from glow_mlir.builder import Tensor
from glow_mlir.errors import StaticInputRequired, UnsupportedAttributeError
from glow_mlir.frontends.onnx.loading import subgraphs
from glow_mlir.frontends.onnx.node import (
    ONNX_TO_NUMPY,
    NodeContext,
    Value,
    dtype,
    normalize_axis,
    rank,
    shape,
)
from glow_mlir.frontends.onnx.ops_sequence import SequenceValue, tensor_input
from glow_mlir.frontends.onnx.registry import handles
from glow_mlir.opdefs import control

# The most body nodes one unrolled Loop or SequenceMap may import in all.
UNROLL_BOUND = 10_000


def check_unroll(ctx: NodeContext, count: int, body_nodes: int, what: str) -> None:
    """Refuses unrolling `count` iterations of `body_nodes` nodes each beyond UNROLL_BOUND."""
    if count * body_nodes > UNROLL_BOUND:
        raise ctx.unsupported(
            "body", f"{what} {count} x {body_nodes} body nodes = {count * body_nodes} exceeds the bound of "
            f"{UNROLL_BOUND} nodes that glow unrolls (loops are unrolled at import)"
        )


def count_nodes(graph: onnx.GraphProto) -> int:
    """The nodes of `graph`, those of its nested subgraphs included."""
    return len(graph.node) + sum(count_nodes(sub) for node in graph.node for sub in subgraphs(node))


def take(ctx: NodeContext, x: Value, axis: int, index: int) -> Value:
    """x[..., index, ...] along `axis`, which the result drops."""
    begin = [0] * rank(x)
    begin[axis] = index
    dims = list(shape(x))
    dims[axis] = 1
    part = x if shape(x)[axis] == 1 else ctx.g.slice(x, begin, dims)
    return ctx.reshape(part, dims[:axis] + dims[axis + 1:])


def stack(ctx: NodeContext, values: list[Value], axis: int) -> Value:
    """The values (of one shape) stacked along a new dim `axis`."""
    parts = [ctx.reshape(v, [*shape(v)[:axis], 1, *shape(v)[axis:]]) for v in values]
    return parts[0] if len(parts) == 1 else ctx.g.concat(parts, axis)


def loop_op(ctx: NodeContext, carried: list[Value], scanned: list[Value], spec: control.Loop,
            build: Callable[[list[Tensor]], list[Value | SequenceValue]]) -> list[Value]:
    """A `glow.loop` whose body `build` makes (once, into a private function named `spec.body`).

    `build(args)` gets the body's arguments (iteration, carried..., scan slices...) and returns the new
    carried values, then the scan output slices; the outer values it reads become the loop's invariants.
    """
    g = ctx.importer.graph
    carried = [_as_tensor(ctx, v) for v in carried]
    scanned = [_as_tensor(ctx, v) for v in scanned]
    with g._scope:
        slice_types = [ops.tensor_type([d for k, d in enumerate(x.shape) if k != a], ops.element_type(x.value))
                       for x, a in zip(scanned, spec.scan_input_axes)]
        before = ops.functions(g._module)
        with ir.InsertionPoint(g._module.body):
            fn = func.FuncOp(spec.body, ir.FunctionType.get([], []))
        fn.attributes["sym_visibility"] = ir.StringAttr.get("private")
        fn.attributes[control.BODY_ATTR] = ir.UnitAttr.get()
        block = fn.add_entry_block()
        iteration = block.add_argument(ops.tensor_type([], ir.IntegerType.get_signless(64)), ir.Location.name(ctx.name))
        args = [block.add_argument(t, ir.Location.name(ctx.name))
                for t in [*(c.value.type for c in carried), *slice_types]]
    outer_block, constants = g._block, dict(ctx.importer._constants)
    g._block = block
    try:
        results = build([Tensor(g, v) for v in (iteration, *args)])
        values = [_as_tensor(ctx, v).value for v in results]
        # The loop's results follow the body's condition, if it has one.
        outputs = values[spec.condition:]
        for k, (before_type, value) in enumerate(zip(args, outputs[:len(carried)])):
            if value.type != before_type.type:
                raise ctx.unsupported("body", f"carried value {k} changes type from {before_type.type} to "
                                      f"{value.type}: a loop's body keeps each carried value's shape")
        with g._scope, ir.Location.name(ctx.name), ir.InsertionPoint(block):
            func.ReturnOp(values)
    except BaseException:
        # A refused body leaves nothing behind: its function and those of the loops nested in it.
        for f in ops.functions(g._module):
            if f not in before:
                f.erase()
        raise
    finally:
        g._block = outer_block
        ctx.importer._constants = constants
    n_carried = len(carried)
    spec = dataclasses.replace(spec, scan_output_axes=tuple(
        normalize_axis(a, len(ops.shape(v)) + 1, ctx, "scan output axis")
        for a, v in zip(spec.scan_output_axes, outputs[n_carried:])))
    with g._scope, ir.Location.name(ctx.name):
        invariants = _capture(ctx, fn, block)
        fn.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get([a.type for a in block.arguments], [v.type for v in values]))
        result_types = [v.type for v in outputs[:n_carried]]
        for v, axis in zip(outputs[n_carried:], spec.scan_output_axes):
            dims = ops.shape(v)
            result_types.append(ops.tensor_type([*dims[:axis], spec.trip_count, *dims[axis:]], ops.element_type(v)))
        operands = [*(c.value for c in carried), *(x.value for x in scanned), *invariants]
        attributes = spec.attributes() | {
            "operandSegmentSizes": control.segments([v.type for v in operands], "operands"),
            "resultSegmentSizes": control.segments(result_types, "results"),
        }
        with g._at_end():
            op = ops.create(control.LOOP, operands, result_types, attributes)
    return [Tensor(g, r) for r in op.results]


def subgraph_body(ctx: NodeContext, body: onnx.GraphProto, bind: Callable[[list[Tensor]], list[Value | None]],
                  outputs: Callable[[list[Value | SequenceValue]], list[Value | SequenceValue]] = list
                  ) -> Callable[[list[Tensor]], list[Value | SequenceValue]]:
    """The body builder of a loop running ONNX subgraph `body`: `bind(args)` maps the body function's
    arguments to the subgraph's inputs, `outputs` picks the carried values and scan output slices from its
    outputs (raising where they are not loop-shaped)."""
    return lambda args: outputs(ctx.importer.import_subgraph(body, bind(args), f"{ctx.name}/body", ctx.node))


def _as_tensor(ctx: NodeContext, v: Value | SequenceValue) -> Tensor:
    """A graph tensor for a loop operand or body result: constants are made in the block being built."""
    v = tensor_value(ctx, v)
    return ctx.importer.graph.constant(v, name=f"{ctx.name}/constant") if isinstance(v, np.ndarray) else v


def _capture(ctx: NodeContext, fn: ir.Operation, block: ir.Block) -> list[ir.Value]:
    """Turns the outer values the body reads into body arguments (its invariants), which it returns; outer
    constants are copied into the body instead, where the graph passes can fold them."""
    inside: set[ir.Value] = set(block.arguments)
    invariants: list[ir.Value] = []
    bound: dict[ir.Value, ir.Value] = {}
    for op in ops.walk_ops(fn):
        for k, v in enumerate(op.operands):
            if v in inside:
                continue
            if v not in bound:
                owner = v.owner
                if not isinstance(owner, ir.Block) and owner.operation.name == "glow.constant":
                    bound[v] = owner.operation.clone(ir.InsertionPoint.at_block_begin(block)).results[0]
                else:
                    bound[v] = block.add_argument(v.type, ir.Location.name(ctx.name))
                    invariants.append(v)
            op.operands[k] = bound[v]
        inside.update(op.results)
    return invariants


def body_symbol(ctx: NodeContext) -> str:
    """A fresh private symbol for the body function of this node."""
    base = "body_" + re.sub(r"[^A-Za-z0-9_]", "_", ctx.name)
    taken = {ir.StringAttr(f.attributes["sym_name"]).value for f in ops.functions(ctx.importer.graph._module)}
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    return name


@handles("If")
def if_(ctx: NodeContext) -> list[Value | SequenceValue]:
    cond = tensor_input(ctx, 0)
    if int(np.prod(shape(cond))) != 1:
        raise ctx.invalid(f"the condition must hold one element, got shape {list(shape(cond))}")
    branches = {"then": ctx.attr("then_branch"), "else": ctx.attr("else_branch")}
    if isinstance(cond, np.ndarray):
        taken = "then" if bool(cond.reshape(-1)[0]) else "else"
        ctx.importer.taken[ctx.name] = f"{taken}_branch"
        return ctx.importer.import_subgraph(branches[taken], [], f"{ctx.name}/{taken}", ctx.node)
    then_out, else_out = (
        ctx.importer.import_subgraph(graph, [], f"{ctx.name}/{key}", ctx.node) for key, graph in branches.items()
    )
    if len(then_out) != len(else_out):
        raise ctx.invalid(f"the then branch has {len(then_out)} outputs, the else branch {len(else_out)}")
    results: list[Value | SequenceValue] = []
    for k, (a, b) in enumerate(zip(then_out, else_out)):
        if not all(isinstance(v, (np.ndarray, Tensor)) for v in (a, b)):
            raise ctx.unsupported("then_branch", f"output {k} is a sequence or optional, which a condition "
                                  "known only at run time cannot select")
        if shape(a) != shape(b) or dtype(a) != dtype(b):
            raise ctx.unsupported(
                "then_branch", f"output {k}: the branches give {dtype(a)} {list(shape(a))} and {dtype(b)} "
                f"{list(shape(b))}; with a condition known only at run time they must have one shape and type")
        results.append(ctx.g.select(ctx.broadcast_to(ctx.reshape(cond, []), shape(a)), a, b))
    return results


@handles("Loop")
def loop(ctx: NodeContext) -> list[Value | SequenceValue]:
    body: onnx.GraphProto = ctx.attr("body")
    trip = ctx.ints(0, "the trip count M") if ctx.optional(0) is not None else None
    keep_going = True if ctx.optional(1) is None else bool(np.asarray(ctx.const(1, "the loop condition")).all())
    carried = list(ctx.inputs[2:])
    # An empty carried value (a result grown by a Concat per iteration from nothing: Mask R-CNN's pasted masks)
    # cannot be loop state, since glow has no empty tensors: the loop is unrolled.
    tensors = all(isinstance(v, (np.ndarray, Tensor)) and 0 not in shape(v) for v in carried)
    if (trip is None or trip[0] >= 1) and keep_going and tensors:
        try:
            return _counted_loop(ctx, body, trip[0] if trip else None, carried)
        except NEEDS_UNROLLING:
            pass  # unrolled below, where the iteration number and each condition are known at compile time
    scans: list[list[Value]] = [[] for _ in body.output[1 + len(carried):]]
    nodes = count_nodes(body)
    i = 0
    if trip is not None and ctx.optional(1) is None:
        check_unroll(ctx, trip[0], nodes, "trip count")
    while keep_going and (trip is None or i < trip[0]):
        # The condition may stop the loop before M (or without one): count the iterations made so far.
        check_unroll(ctx, i + 1, nodes, f"trip count {trip[0] if trip else 'none'}, iterations so far")
        outs = ctx.importer.import_subgraph(
            body, [np.array(i, np.int64), np.array(True), *carried], f"{ctx.name}/iter{i}", ctx.node)
        if not isinstance(outs[0], np.ndarray):
            raise ctx.unsupported("body", "the loop condition the body computes depends on run-time data; glow "
                                  "unrolls loops at compile time, so their termination must be known then")
        keep_going = bool(outs[0].all())
        carried = outs[1:1 + len(carried)]
        for values, value in zip(scans, outs[1 + len(carried):]):
            values.append(tensor_value(ctx, value))
        i += 1
    stacked = [stack(ctx, values, 0) if values else _empty_scan(ctx, info) for values, info in
               zip(scans, body.output[1 + len(carried):])]
    return [*carried, *stacked]


class _ComputedCondition(Exception):
    """The body of a Loop computes a condition that is not constant true."""


# The iterations a Loop without a trip count may run (ONNX's own bound on M).
WHILE_BOUND = 2**63 - 1

# What stops a body from being imported once for all iterations: a condition it computes, a value it needs
# at compile time (a Slice by the iteration number, a shape from a carried value). Such a loop is unrolled.
NEEDS_UNROLLING = (_ComputedCondition, UnsupportedAttributeError, StaticInputRequired)


def _counted_loop(ctx: NodeContext, body: onnx.GraphProto, trip: int | None, carried: list[Value]) -> list[Value]:
    """A Loop as one glow.loop: a counted loop when the body's condition is constant true, else (without scan
    outputs, whose length would then be known only at run time) a while loop of at most `trip` iterations."""
    n_out = len(body.output) - 1 - len(carried)

    def constant_true(outs: list[Value | SequenceValue]) -> list[Value | SequenceValue]:
        if not (isinstance(outs[0], np.ndarray) and bool(outs[0].all())):
            raise _ComputedCondition
        return outs[1:]

    def computed(outs: list[Value | SequenceValue]) -> list[Value | SequenceValue]:
        if int(np.prod(shape(tensor_value(ctx, outs[0])))) != 1:
            raise ctx.invalid(f"the body's condition must hold one element, got shape {list(shape(outs[0]))}")
        return [ctx.reshape(outs[0], []), *outs[1:]]

    def loop_with(condition: int, outputs: Callable[[list[Value | SequenceValue]], list[Value | SequenceValue]],
                  trips: int) -> list[Value]:
        spec = control.Loop(body_symbol(ctx), trips, len(carried), 0, condition, (), (), (0,) * n_out, (0,) * n_out)
        bind = subgraph_body(ctx, body, lambda args: [args[0], np.array(True), *args[1:]], outputs)
        return loop_op(ctx, carried, [], spec, bind)

    if trip is not None:
        try:
            return loop_with(0, constant_true, trip)
        except _ComputedCondition:
            if n_out:
                raise
    elif n_out:
        raise _ComputedCondition
    return loop_with(1, computed, WHILE_BOUND if trip is None else trip)


def tensor_value(ctx: NodeContext, v: Value | SequenceValue) -> Value:
    if not isinstance(v, (np.ndarray, Tensor)):
        raise ctx.invalid("a scan output of the body must be a tensor")
    return v


def _empty_scan(ctx: NodeContext, info: onnx.ValueInfoProto) -> np.ndarray:
    """The scan output of a loop that ran no iteration: empty, its element shape from the body's type."""
    tensor = info.type.tensor_type
    dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
    if None in dims or tensor.elem_type not in ONNX_TO_NUMPY:
        raise ctx.unsupported("body", f"scan output '{info.name}' of a loop that runs no iteration needs a "
                              "static shape and a supported type")
    return np.empty([0, *dims], ONNX_TO_NUMPY[tensor.elem_type])


@handles("Scan")
def scan(ctx: NodeContext) -> list[Value]:
    body: onnx.GraphProto = ctx.attr("body")
    n_scan = ctx.attr("num_scan_inputs")
    # Scan-8: optional sequence_lens first.
    inputs = [tensor_input(ctx, i) for i in range(0 if ctx.opset >= 9 else 1, len(ctx.inputs))]
    if not 1 <= n_scan <= len(inputs):
        raise ctx.invalid(f"num_scan_inputs {n_scan} must be in [1, {len(inputs)}] (the node's state and scan inputs)")
    states, scanned = inputs[:len(inputs) - n_scan], inputs[len(inputs) - n_scan:]
    if ctx.opset >= 9:
        return _scan(ctx, body, states, scanned, ctx.name)
    # Scan-8: a leading batch axis on every input and output, the scan axis next.
    ranks = [rank(x) for x in states] + [rank(x) - 1 for x in scanned]
    if min(ranks) < 1:
        raise ctx.invalid(f"inputs of shapes {[list(shape(x)) for x in inputs]} must have a batch axis (and the "
                          "scan inputs a scan axis after it)")
    batch = shape(scanned[0])[0]
    lens = ctx.ints(0, "sequence_lens") if ctx.optional(0) is not None else None
    if lens is not None and any(n != shape(scanned[0])[1] for n in lens):
        raise ctx.unsupported("sequence_lens", f"{lens}: only full-length sequences are supported")
    per_batch = [
        _scan(ctx, body, [take(ctx, s, 0, b) for s in states], [take(ctx, x, 0, b) for x in scanned],
              f"{ctx.name}/batch{b}")
        for b in range(batch)
    ]
    return [stack(ctx, [outs[k] for outs in per_batch], 0) for k in range(len(per_batch[0]))]


def _scan(ctx: NodeContext, body: onnx.GraphProto, states: list[Value], scanned: list[Value], where: str
          ) -> list[Value]:
    n_states, n_scan = len(states), len(scanned)
    n_outs = len(body.output) - n_states
    directions = "scan_input_directions" if ctx.opset >= 9 else "directions"
    in_dirs = ctx.attr(directions, [0] * n_scan)
    in_axes = [normalize_axis(a, rank(x), ctx, "scan input axis")
               for a, x in zip(ctx.attr("scan_input_axes", [0] * n_scan), scanned)]
    lengths = {shape(x)[a] for x, a in zip(scanned, in_axes)}
    if len(lengths) != 1:
        raise ctx.invalid(f"the scan inputs have different lengths {sorted(lengths)} along their scan axes")
    (steps,) = lengths
    if steps == 0:
        raise ctx.unsupported("body", "a scan over 0 steps has empty scan outputs (glow has no empty tensors)")
    out_dirs = ctx.attr("scan_output_directions", [0] * n_outs)
    out_axes = ctx.attr("scan_output_axes", [0] * n_outs)
    spec = control.Loop(body_symbol(ctx), steps, n_states, n_scan, 0, tuple(in_axes), tuple(in_dirs),
                        tuple(out_axes), tuple(int(d) for d in out_dirs))
    try:
        return loop_op(ctx, states, scanned, spec, subgraph_body(ctx, body, lambda args: list(args[1:])))
    except NEEDS_UNROLLING:
        # The body needs a value at compile time (a shape computed from a state): unrolled, under the bound.
        return _unrolled_scan(ctx, body, states, scanned, spec, where)


def _unrolled_scan(ctx: NodeContext, body: onnx.GraphProto, states: list[Value], scanned: list[Value],
                   spec: control.Loop, where: str) -> list[Value]:
    """The scan `spec` describes with its body imported once per step."""
    check_unroll(ctx, spec.trip_count, count_nodes(body), "sequence length")
    outputs: list[list[Value]] = [[] for _ in body.output[len(states):]]
    for t in range(spec.trip_count):
        elements = [take(ctx, x, a, spec.slice_index(t, d))
                    for x, a, d in zip(scanned, spec.scan_input_axes, spec.scan_input_directions)]
        outs = ctx.importer.import_subgraph(body, [*states, *elements], f"{where}/step{t}", ctx.node)
        states = [tensor_value(ctx, v) for v in outs[:len(states)]]
        for values, value in zip(outputs, outs[len(states):]):
            values.append(tensor_value(ctx, value))
    results = list(states)
    for values, d, a in zip(outputs, spec.scan_output_directions, spec.scan_output_axes):
        # A reverse scan output prepends each step's value, so it holds the last step first.
        results.append(stack(ctx, values[::-1] if d else values,
                             normalize_axis(a, rank(values[0]) + 1, ctx, "scan output axis")))
    return results


@handles("SequenceMap")
def sequence_map(ctx: NodeContext) -> list[SequenceValue]:
    """The body imported once per element: element i of every sequence input, the tensor inputs as they are."""
    body: onnx.GraphProto = ctx.attr("body")
    inputs = list(ctx.inputs)
    lengths = {len(v.items) for v in inputs if isinstance(v, SequenceValue)}
    if not isinstance(inputs[0], SequenceValue) or len(lengths) != 1:
        raise ctx.invalid(f"the first input must be a sequence and all sequence inputs of one length, got "
                          f"lengths {sorted(lengths)}")
    (length,) = lengths
    check_unroll(ctx, length, count_nodes(body), "sequence length")
    results: list[list[Value]] = [[] for _ in body.output]
    for i in range(length):
        bound = [v.items[i] if isinstance(v, SequenceValue) else v for v in inputs]
        for values, value in zip(results, ctx.importer.import_subgraph(body, bound, f"{ctx.name}/item{i}", ctx.node)):
            values.append(tensor_value(ctx, value))
    return [
        SequenceValue(tuple(values), ONNX_TO_NUMPY.get(info.type.tensor_type.elem_type, np.dtype(np.float32)))
        for values, info in zip(results, body.output)
    ]
