"""ONNX control flow: If, Loop, Scan and SequenceMap, imported through their subgraphs.

- `If` with a condition known at compile time imports only the branch taken. With a run-time condition both
  branches are imported and each output is a `glow.select` between them, so the branches' outputs must have
  equal shapes and types (else UnsupportedAttributeError naming the node and the shapes); sequence or
  optional outputs need a compile-time condition.
- `Loop`, `Scan` and `SequenceMap` are **unrolled at import**: the body is imported once per iteration, the
  loop-carried values of one iteration bound to the body inputs of the next. glow has no loop op whose body
  is an arbitrary graph (the pipeline's bufferization and static memory planning work on flat functions), so
  this is the design, and its limitation: the generated code is straight-line, as long as the trip count times
  the body. The trip count must be known at compile time (a trip count or condition that depends on graph
  inputs raises StaticInputRequired naming the node, so a backend can bind them and specialize), a Loop
  whose condition the body computes from run-time data is refused, and more than UNROLL_BOUND body nodes in
  all (trip count x nodes of the body, nested subgraphs included) is refused with UnsupportedAttributeError
  naming the node, the trip count and the bound.
"""

from __future__ import annotations

import numpy as np
import onnx

from glow_mlir.builder import Tensor
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

# The most body nodes one unrolled Loop, Scan, SequenceMap or recurrent op (ops_rnn.py) may import in all.
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
    nested = sum(
        count_nodes(sub)
        for node in graph.node for a in node.attribute for sub in ([a.g] if a.HasField("g") else list(a.graphs))
    )
    return len(graph.node) + nested


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


@handles("If")
def if_(ctx: NodeContext) -> list[Value | SequenceValue]:
    cond = tensor_input(ctx, 0)
    if int(np.prod(shape(cond))) != 1:
        raise ctx.invalid(f"the condition must hold one element, got shape {list(shape(cond))}")
    branches = {"then": ctx.attr("then_branch"), "else": ctx.attr("else_branch")}
    if isinstance(cond, np.ndarray):
        taken = "then" if bool(cond.reshape(-1)[0]) else "else"
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
    if ctx.opset >= 9:
        inputs = [tensor_input(ctx, i) for i in range(len(ctx.inputs))]
        return _scan(ctx, body, inputs[:len(inputs) - n_scan], inputs[len(inputs) - n_scan:], ctx.name)
    # Scan-8: a leading batch axis on every input and output, the scan axis next, optional sequence_lens.
    inputs = [tensor_input(ctx, i) for i in range(1, len(ctx.inputs))]
    states, scanned = inputs[:len(inputs) - n_scan], inputs[len(inputs) - n_scan:]
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
    check_unroll(ctx, steps, count_nodes(body), "sequence length")
    outputs: list[list[Value]] = [[] for _ in range(n_outs)]
    for t in range(steps):
        elements = [take(ctx, x, a, steps - 1 - t if d else t) for x, a, d in zip(scanned, in_axes, in_dirs)]
        outs = ctx.importer.import_subgraph(body, [*states, *elements], f"{where}/step{t}", ctx.node)
        states = [tensor_value(ctx, v) for v in outs[:n_states]]
        for values, value in zip(outputs, outs[n_states:]):
            values.append(tensor_value(ctx, value))
    out_dirs = ctx.attr("scan_output_directions", [0] * n_outs)
    out_axes = ctx.attr("scan_output_axes", [0] * n_outs)
    results = list(states)
    for values, d, a in zip(outputs, out_dirs, out_axes):
        # A reverse scan output prepends each step's value, so it holds the last step first.
        ordered = values[::-1] if d else values
        results.append(stack(ctx, ordered, normalize_axis(a, rank(values[0]) + 1, ctx, "scan output axis")))
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
