"""Models split at data-dependent ops: the stages a session runs one after the other.

glow compiles static shapes, but the result of NonZero, NonMaxSuppression, Unique, of Compress by a run-time
condition and of TopK by a run-time K is as long as the values make it. `split` cuts such a model in two where
these ops first take run-time values (the *frontier*):

- the **prefix** is every node that does not depend on a frontier op's results, and the frontier ops themselves
  in their bounded form (frontends/onnx/ops_bounded.py): each result padded to the longest it can be along its
  data-dependent axis, and a run-time count of how much of it is real;
- the **suffix** is the rest: a model whose inputs are the values it reads from the prefix (the frontier's
  results among them, their data-dependent dims symbolic), compiled per shape as any model with dynamic axes
  is, hence per count. It may hold data-dependent ops of its own, and is split in turn when it is loaded.

Values the suffix needs at compile time (a shape computed from the prefix's Shape ops, the initializers) are
not handed over at run time: the nodes computing them are copied into the suffix, where they fold again, and
the tensors whose Shape they read become suffix inputs (their shapes are then specialized). The session
(glow_mlir/session.py) runs the prefix, slices each padded result to its count, and feeds the suffix.

The cost model is that of dynamic axes: the first run at a new count compiles the suffix for it; the session
keeps the most recently used, the disk cache every one.

Such an op in a branch of an If whose condition the shapes decide (torchvision's detectors: NonMaxSuppression
unless no box is left) is seen once the import has taken the branch: the session inlines that branch in the
ONNX model (`inline_taken`, the import error naming the branches taken) and splits the result.

A model is also cut where an op needs at compile time a value computed at run time (a ConstantOfShape or
Range whose size is the sum of predicted durations, a Reshape to a computed shape: the import raises
StaticInputRequired naming the node and the value). Then the node itself opens the suffix, which takes the
value as an input compiled per value (InferenceSession's `value_inputs`), as a dynamic axis is per shape.

An If of the main graph whose condition is computed at run time and whose branches hold costly ops
(`COSTLY`: convolutions, matmuls, recurrences, loops) is cut the same way at its condition, where the model
has no data-dependent op: the import of a run-time condition computes both branches and selects (ops_control.py),
so an early-exit network ran every later stage after it had exited (BranchyNet-style, the thirtieth wave:
0.44x onnxruntime, which runs the taken branch only). Cut, the suffix is compiled per value of the
condition (two at most) and imports the taken branch alone. A condition that is a graph input is compiled per
value by the suffix and not cut again; an If nested in a branch still selects.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Collection, Iterable, Mapping

import numpy as np
import onnx

from glow_mlir.frontends.onnx.importer import compile_time_values
from glow_mlir.frontends.onnx.loading import DEFAULT_DOMAINS, load, node_names, subgraphs, uses
from glow_mlir.frontends.onnx.ops_bounded import BOUNDED, padded_axes
from glow_mlir.frontends.onnx.registry import GLOW_DOMAIN

# The suffix of the prefix's names for a bounded op's padded results and its count.
PADDED = "/glow_padded"
COUNT = "/glow_count"


@dataclasses.dataclass(frozen=True)
class Cut:
    """A frontier op: its node's name, per ONNX result (output name, the prefix's padded result, the padded
    axis or None) and the prefix's count."""

    node: str
    results: tuple[tuple[str, str, int | None], ...]
    count: str


@dataclasses.dataclass(frozen=True)
class Split:
    """A model cut at its frontier: the two models, the cuts, and which prefix results the suffix reads."""

    prefix: onnx.ModelProto
    suffix: onnx.ModelProto | None
    cuts: tuple[Cut, ...]
    # Suffix inputs the prefix computes, and those that are graph inputs of the model, fed as given.
    carried: tuple[str, ...]
    passed: tuple[str, ...]
    # Suffix inputs that decide its shapes: it is compiled per value of them.
    by_value: tuple[str, ...] = ()

    @functools.cached_property
    def prefix_inputs(self) -> frozenset[str]:
        return frozenset(i.name for i in self.prefix.graph.input)

    @functools.cached_property
    def prefix_outputs(self) -> list[str]:
        return [o.name for o in self.prefix.graph.output]

    @functools.cached_property
    def suffix_inputs(self) -> frozenset[str]:
        return frozenset(i.name for i in self.suffix.graph.input) if self.suffix is not None else frozenset()

    @functools.cached_property
    def suffix_outputs(self) -> list[str]:
        return [o.name for o in self.suffix.graph.output] if self.suffix is not None else []

    def cut_results(self, results: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The data-dependent ops' results from the prefix's: each padded result cut to its count along its
        axis (a view)."""
        cut_to = {}
        for cut in self.cuts:
            count = int(results[cut.count])
            for name, padded, axis in cut.results:
                if name:
                    value = results[padded]
                    cut_to[name] = value if axis is None else value[(slice(None),) * axis + (slice(0, count),)]
        return cut_to

    def suffix_feeds(self, feeds: Mapping[str, np.ndarray], results: Mapping[str, np.ndarray],
                     cut_to: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:  # fmt: skip
        """The suffix's inputs from the model's feeds, the prefix's results and the cut results."""
        given = {name: results[name] for name in self.carried}
        given.update({name: feeds[name] for name in self.passed})
        given.update({name: value for name, value in cut_to.items() if name in self.suffix_inputs})
        return given


def data_dependent(node: onnx.NodeProto, known: set[str]) -> bool:
    """Whether `node`'s result shape depends on values known only at run time: NonZero, Unique and
    NonMaxSuppression of run-time data, Compress by a run-time condition, TopK by a run-time K."""
    if node.domain not in DEFAULT_DOMAINS or node.op_type not in BOUNDED:
        return False
    if node.op_type in ("Compress", "TopK"):
        # TopK before opset 10 takes K as an attribute: one input.
        return len(node.input) > 1 and bool(node.input[1]) and node.input[1] not in known
    # As the importer refuses them: any input known only at run time (NonMaxSuppression's scalar limits must
    # then be static inputs, which its bounded form asks for by name).
    return any(v and v not in known for v in node.input)


def split(model: onnx.ModelProto, static_inputs: Mapping[str, np.ndarray],
          need: tuple[str, str] | None = None) -> Split | None:  # fmt: skip
    """`model` (loaded: shape-inferred) cut at its frontier, or None when it has no data-dependent op on
    run-time values in its main graph. With `need` (a node's name and the value it needs at compile time, which
    the model computes at run time), cut before that node instead, and before every node of its op that needs
    a value computed at run time at the same input (`_alike`); None where the node or its value is not of the
    main graph."""
    graph = model.graph
    known = compile_time_values(model, static_inputs, set())
    # One list of the nodes, held for the whole split: protobuf makes a new Python object for a node each time
    # the repeated field is read, so ids are only stable while these live.
    nodes = list(graph.node)
    names = dict(zip(map(id, nodes), node_names(graph)))
    producer = {o: n for n in nodes for o in n.output if o}
    needs: dict[int, str] = {}
    if need is not None:
        frontier_ops = []
        named = [n for n in nodes if names[id(n)] == need[0] and need[1] in n.input]
        if not named or need[1] not in producer:
            return None
        needs = _alike(nodes, named[0], need[1], known, producer)
        seeds = [n for n in nodes if id(n) in needs]
    else:
        frontier_ops = seeds = [n for n in nodes if data_dependent(n, known)]
        if not frontier_ops:
            costly = next((n for n in nodes if _costly_if(n, known, producer)), None)
            return None if costly is None else split(model, static_inputs, (names[id(costly)], costly.input[0]))
    # Nodes downstream of a data-dependent op or a node that needs a value (the node included).
    tainted, tainted_values = _downstream(nodes, {id(n) for n in seeds})
    frontier = [n for n in frontier_ops if not any(v in tainted_values for v in uses(n))]
    frontier_ids = {id(n) for n in frontier}
    suffix_nodes = [n for n in nodes if id(n) in tainted and id(n) not in frontier_ids]
    suffix_ids = {id(n) for n in suffix_nodes}
    # Compile-time values the suffix reads from prefix nodes: their nodes are copied into it (`_known_closure`).
    copied = _known_closure(suffix_nodes, producer, known, suffix_ids)
    suffix_all = [n for n in nodes if id(n) in suffix_ids or id(n) in copied]
    made = {o for n in suffix_all for o in n.output if o}
    initializers = {t.name for t in graph.initializer}
    inputs = {i.name for i in graph.input}
    cut_values = {o for n in frontier for o in n.output if o}
    read = _ordered(v for n in suffix_all for v in uses(n) if v not in made and v not in initializers)
    # Graph inputs bound at compile time are bound in the suffix too (the session hands it their values).
    passed = tuple(v for v in read if v in inputs and v not in cut_values and v not in static_inputs)
    carried = tuple(v for v in read if v not in inputs and v not in cut_values)
    bound = [v for v in read if v in static_inputs]
    outputs = [o.name for o in graph.output]
    prefix_outputs = [o for o in outputs if o not in made and o not in cut_values]
    cuts = []
    prefix_nodes = []
    ranks = _ranks(model)
    for node in nodes:
        if id(node) in frontier_ids:
            cut, bounded = _bounded(node, names[id(node)], ranks)
            prefix_nodes.append(bounded)
            cuts.append(cut)
        elif id(node) not in tainted:
            prefix_nodes.append(node)
    prefix_results = _ordered([*prefix_outputs, *carried, *(p for c in cuts for _, p, _ in c.results if p),
                               *(c.count for c in cuts)])  # fmt: skip
    # The graph inputs the prefix reads (a feed of one only the suffix reads goes there).
    prefix_read = {v for n in prefix_nodes for v in uses(n)} | set(prefix_results)
    prefix_inputs = [i for i in graph.input if i.name in prefix_read]
    prefix = _model(model, "prefix", prefix_nodes, prefix_inputs, prefix_results, extra_opset=True)
    suffix_inputs = [_value_info(model, v, cut_values) for v in (*carried, *passed, *bound)]
    suffix_inputs += [_value_info(model, o, cut_values) for c in cuts for o, _, _ in c.results if o and o in read]
    suffix_outputs = [o for o in outputs if o in made]
    # No suffix where the model's outputs are the prefix's and the data-dependent results themselves.
    suffix = _model(model, "suffix", suffix_all, suffix_inputs, suffix_outputs) if suffix_outputs else None
    return Split(prefix, suffix, tuple(cuts), carried, passed, tuple(_ordered(needs.values())))


def _alike(nodes: list[onnx.NodeProto], node: onnx.NodeProto, value: str, known: set[str],
           producer: Mapping[str, onnx.NodeProto]) -> dict[int, str]:  # fmt: skip
    """`node`, which needs `value` at compile time, and the nodes of its op that read a value computed at run
    time at the same input (which the import would ask for next: FastSpeech2's twelve Expands of one length
    each, cut one at a time, took twelve stages), by id -> that value; each taken in graph order where its value
    is not downstream of those taken, and takes no value of theirs downstream of it."""
    index = list(node.input).index(value)
    taken = {id(node): value}
    for other in nodes:
        read = other.input[index] if len(other.input) > index else ""
        if other.op_type != node.op_type or other.domain != node.domain or id(other) in taken or not read \
                or read in known or read not in producer:
            continue
        tried = {**taken, id(other): read}
        _, downstream = _downstream(nodes, set(tried))
        if not downstream & set(tried.values()):
            taken = tried
    return taken


def _downstream(nodes: list[onnx.NodeProto], seeds: set[int]) -> tuple[set[int], set[str]]:
    """The ids of the nodes of ids `seeds` and of the nodes that depend on them (`nodes` in graph order), and
    the values they compute."""
    ids: set[int] = set()
    values: set[str] = set()
    for node in nodes:
        if id(node) in seeds or any(v in values for v in uses(node)):
            ids.add(id(node))
            values.update(o for o in node.output if o)
    return ids, values


def inline_taken(model: onnx.ModelProto, taken: Mapping[str, str]) -> onnx.ModelProto | None:
    """`model` with each If of its main graph named in `taken` (the importer's name -> "then_branch" or
    "else_branch", the branch its condition took at compile time) that holds a data-dependent op replaced by
    that branch, shape-inferred again; None where there is none such. torchvision's detectors run
    NonMaxSuppression in the else branch of an If on whether any box is left: once the boxes' count is a
    specialized shape the import takes a branch, and inlined, the op is one `split` cuts at."""
    graph = model.graph
    nodes = list(graph.node)
    chosen = {id(n): next(a.g for a in n.attribute if a.name == taken[name])
              for n, name in zip(nodes, node_names(graph))
              if n.op_type == "If" and name in taken and _holds(n, BOUNDED)}  # fmt: skip
    if not chosen:
        return None
    inlined: list[onnx.NodeProto] = []
    initializers = list(graph.initializer)
    for node in nodes:
        branch = chosen.get(id(node))
        if branch is None:
            inlined.append(node)
            continue
        inlined.extend(branch.node)
        initializers.extend(branch.initializer)
        inlined.extend(onnx.helper.make_node("Identity", [out.name], [name], name=f"{node.name}/{name}")
                       for out, name in zip(branch.output, node.output, strict=True) if name)  # fmt: skip
    result = onnx.helper.make_model(
        onnx.helper.make_graph(inlined, graph.name, graph.input, graph.output, initializers),
        opset_imports=model.opset_import,
    )
    result.ir_version = model.ir_version
    return load(result)


# Ops whose work a run-time If should not do for the branch it does not take (see the module's docstring).
COSTLY = frozenset({"Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "MatMul", "MatMulInteger", "QLinearMatMul",
                    "Gemm", "Einsum", "LSTM", "GRU", "RNN", "Loop", "Scan", "Attention", "DeformConv"})


def _costly_if(node: onnx.NodeProto, known: set[str], producer: Mapping[str, onnx.NodeProto]) -> bool:
    """Whether `node` is an If whose condition a node computes at run time and whose branches hold costly ops."""
    return node.op_type == "If" and node.domain in DEFAULT_DOMAINS and bool(node.input) and \
        node.input[0] not in known and node.input[0] in producer and _holds(node, COSTLY)


def _holds(node: onnx.NodeProto, op_types: Collection[str]) -> bool:
    """Whether a subgraph of `node` (at any depth) holds an op of `op_types` (the default domain's): COSTLY ones,
    or ones that have a bounded form (BOUNDED)."""
    return any((n.op_type in op_types and n.domain in DEFAULT_DOMAINS) or _holds(n, op_types)
               for sub in subgraphs(node) for n in sub.node)  # fmt: skip


def _bounded(node: onnx.NodeProto, name: str, ranks: Mapping[str, int]) -> tuple[Cut, onnx.NodeProto]:
    """The cut at frontier op `node` (named `name`) and the node of its bounded form: the op's inputs and
    attributes, its results padded (every result of the op named, or "" where the model uses none, so that the
    count comes after them all), then the count."""
    axes = padded_axes(node, [ranks.get(v, 0) for v in node.input], name)
    listed = [*node.output, *[""] * (len(axes) - len(node.output))]
    results = tuple((o, f"{o}{PADDED}" if o else "", axis) for o, axis in zip(listed, axes, strict=True))
    cut = Cut(name, results, f"{name}{COUNT}")
    bounded = onnx.NodeProto()
    bounded.CopyFrom(node)
    bounded.domain, bounded.op_type = GLOW_DOMAIN, BOUNDED[node.op_type]
    bounded.name = name  # errors name the model's node (an unnamed one as the importer names it)
    del bounded.output[:]
    bounded.output.extend([padded for _, padded, _ in results] + [cut.count])
    return cut, bounded


def _known_closure(nodes: list[onnx.NodeProto], producer: Mapping[str, onnx.NodeProto], known: set[str],
                   inside: set[int]) -> set[int]:  # fmt: skip
    """The nodes outside `inside` that compute, from compile-time values alone, values that `nodes` read: the
    import folds them, so the suffix gets their nodes rather than their values at run time. A Shape or Size
    node's input comes along as a suffix input (its shape is specialized there)."""
    copied: set[int] = set()
    pending = [v for n in nodes for v in uses(n)]
    while pending:
        value = pending.pop()
        node = producer.get(value)
        if node is None or id(node) in inside or id(node) in copied or value not in known:
            continue
        copied.add(id(node))
        if node.op_type not in ("Shape", "Size"):
            pending += uses(node)
    return copied


def _ordered(values: Iterable[str]) -> list[str]:
    """`values` without repeats, first occurrence first."""
    return list(dict.fromkeys(values))


def _ranks(model: onnx.ModelProto) -> dict[str, int]:
    """The rank of every value shape inference gave a shape to."""
    infos = [*model.graph.input, *model.graph.value_info, *model.graph.output]
    ranks = {i.name: len(i.type.tensor_type.shape.dim) for i in infos if i.type.tensor_type.HasField("shape")}
    ranks.update({t.name: len(t.dims) for t in model.graph.initializer})
    return ranks


def _value_info(model: onnx.ModelProto, name: str, symbolic: set[str]) -> onnx.ValueInfoProto:
    """A suffix input's declaration: the value's inferred element type and dims, each dim that is not a
    known int a symbol of its own; every dim of a data-dependent op's result (in `symbolic`) a symbol."""
    graph = model.graph
    declared = next((i for i in graph.input if i.name == name), None)
    if declared is not None:  # a graph input as the model declares it (its named dims shared with the others)
        return declared
    info = next((i for i in (*graph.value_info, *graph.output) if i.name == name), None)
    tensor = info.type.tensor_type if info is not None else None
    elem = tensor.elem_type if tensor is not None and tensor.elem_type else onnx.TensorProto.INT64
    if tensor is None or not tensor.HasField("shape"):
        return onnx.helper.make_tensor_value_info(name, elem, None)
    dims: list[int | str] = [
        d.dim_value if d.HasField("dim_value") and name not in symbolic else f"{name}:{i}"
        for i, d in enumerate(tensor.shape.dim)
    ]
    return onnx.helper.make_tensor_value_info(name, elem, dims)


def _model(model: onnx.ModelProto, part: str, nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto],
           outputs: list[str], extra_opset: bool = False) -> onnx.ModelProto:  # fmt: skip
    """A model of `nodes` (with the initializers they read) of `model`, named after it and `part`."""
    graph = model.graph
    read = {v for n in nodes for v in uses(n)}
    initializers = [t for t in graph.initializer if t.name in read]
    infos = {i.name: i for i in (*graph.value_info, *graph.output)}
    declared = [infos[o] if o in infos else onnx.helper.make_empty_tensor_value_info(o) for o in outputs]
    sub = onnx.helper.make_graph(nodes, f"{graph.name or 'model'}_{part}", inputs, declared, initializers)
    opsets = [onnx.helper.make_opsetid(o.domain, o.version) for o in model.opset_import]
    if extra_opset and not any(o.domain == GLOW_DOMAIN for o in model.opset_import):
        opsets.append(onnx.helper.make_opsetid(GLOW_DOMAIN, 1))
    result = onnx.helper.make_model(sub, opset_imports=opsets)
    result.ir_version = model.ir_version
    return result
