"""Reading an ONNX model: parsing it, loading its external data, and checking what the importer and onnx's shape
inference rely on before shape inference runs (`load`), and walking its graphs' nodes by name.

onnx.checker is not run (it refuses models onnxruntime runs); instead what shape inference would fail on without
naming the node, or crash on, is refused here with a typed error: text fields that are not UTF-8, nodes breaking
their schema's attribute and arity rules, unnamed or doubly defined values.
"""

from __future__ import annotations

import heapq
import math
import os
from collections.abc import Iterator

import onnx
from google.protobuf.message import DecodeError, Message

from glow_mlir.errors import InvalidNodeError, MalformedModelError, ModelImportError
from glow_mlir.frontends.onnx.inference import infer_shapes
from glow_mlir.frontends.onnx.node import op_schema

DEFAULT_DOMAINS = ("", "ai.onnx")


def load(model: onnx.ModelProto | bytes | str | os.PathLike[str]) -> onnx.ModelProto:
    """The model, parsed and shape-inferred; MalformedModelError when it is not a model.

    onnx.checker is not run: it refuses models onnxruntime runs (a graph output without a shape, say);
    the import itself checks what it relies on, and what onnx's shape inference would fail on without naming
    the node, or crash on, is checked before it runs (names that are not UTF-8, node schemas, initializers
    defined twice).
    """
    if isinstance(model, onnx.ModelProto):
        proto = model
    elif isinstance(model, (bytes, bytearray)):
        proto = _parse(bytes(model), "the model bytes")
    elif isinstance(model, (str, os.PathLike)):
        try:
            with open(model, "rb") as f:
                data = f.read()
        except OSError as e:
            raise ModelImportError(f"cannot read model file '{os.fspath(model)}': {e.strerror}") from None
        proto = _parse(data, f"'{os.fspath(model)}'")
        # Weights stored beside the model (external data) are read relative to its folder.
        try:
            onnx.load_external_data_for_model(proto, os.path.dirname(os.path.abspath(model)))
        except (OSError, ValueError, onnx.checker.ValidationError) as e:
            # onnx names the tensor and the file it looked for.
            raise MalformedModelError(f"'{os.fspath(model)}': cannot load external data: {_first_line(e)}") from None
    else:
        raise TypeError(f"expected an onnx.ModelProto, bytes or a path, got {type(model).__name__}")
    _check_text(proto, "model")
    if not _in_order(proto.graph):
        if proto is model:  # the caller's: sorted in a copy
            proto = onnx.ModelProto()
            proto.CopyFrom(model)
        _sort(proto.graph)
    _check_schemas(proto)
    _check_values(proto.graph)
    try:
        return infer_shapes(proto, owned=proto is not model)
    except (onnx.shape_inference.InferenceError, ValueError) as e:
        raise MalformedModelError(f"the model fails ONNX shape inference: {_first_line(e)}") from None
    except MemoryError:
        # onnx's data propagation materializes the values of shape-like tensors: a graph input of 2^31 int64
        # elements read as a shape (fuzz seed 2441) exhausts memory in its C++ library.
        sizes = {v.name: math.prod(d.dim_value for d in v.type.tensor_type.shape.dim) for v in proto.graph.input}
        largest = max(sizes, key=sizes.__getitem__, default=None)
        detail = f"; its largest graph input '{largest}' has {sizes[largest]} elements" if largest else ""
        raise ModelImportError(f"ONNX shape inference ran out of memory{detail}") from None


def subgraphs(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    """The graphs of `node`'s attributes (If branches, Loop and Scan bodies)."""
    return [g for a in node.attribute for g in ([a.g] if a.HasField("g") else list(a.graphs))]


def uses(node: onnx.NodeProto) -> list[str]:
    """The values `node` reads: its inputs, and the outer-scope values its subgraphs read (If branches, Loop and
    Scan bodies)."""
    found = [v for v in node.input if v]
    for sub in subgraphs(node):
        found += _outer_values(sub)
    return found


def _outer_values(graph: onnx.GraphProto) -> list[str]:
    """The values a subgraph reads from enclosing scopes: read by its nodes (or theirs) and not defined in it."""
    defined = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    found = []
    for node in graph.node:
        found += [v for v in uses(node) if v not in defined]
        defined.update(o for o in node.output if o)
    found += [o.name for o in graph.output if o.name not in defined]
    return found


def _order(graph: onnx.GraphProto) -> list[int] | None:
    """The order of `graph`'s nodes in which each comes after the nodes producing what it reads, keeping the
    given order among nodes ready together (Kahn's algorithm); None where some node waits forever (a cycle)."""
    producer: dict[str, int] = {}
    for i, node in enumerate(graph.node):
        for name in filter(None, node.output):
            producer.setdefault(name, i)
    # What each node waits for: the producers of what it reads, but itself (graph inputs have none).
    waits = [{producer[v] for v in uses(n) if producer.get(v, i) != i} for i, n in enumerate(graph.node)]
    readers: dict[int, list[int]] = {}
    for i, deps in enumerate(waits):
        for d in deps:
            readers.setdefault(d, []).append(i)
    left = [len(deps) for deps in waits]
    ready = [i for i, count in enumerate(left) if not count]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for r in readers.get(i, []):
            left[r] -= 1
            if not left[r]:
                heapq.heappush(ready, r)
    return order if len(order) == len(graph.node) else None


def _in_order(graph: onnx.GraphProto) -> bool:
    """Whether sorting would leave `graph` and its subgraphs as they are (`_order`: sorted, or a cycle)."""
    order = _order(graph)
    return (order is None or order == list(range(len(graph.node)))) and all(
        _in_order(sub) for node in graph.node for sub in subgraphs(node))


def _sort(graph: onnx.GraphProto) -> None:
    """Sorts `graph`'s nodes and its subgraphs' (`_order`): converters append nodes after those that read
    them (onnxruntime's float16 converter, keep_io_types: the input casts after the first convolution), and
    onnxruntime sorts such a graph and runs it. A graph with a cycle keeps its order: the import names the
    node whose input is never produced."""
    order = _order(graph)
    if order is not None and order != list(range(len(graph.node))):
        # An unnamed node keeps the name its place in the file gives it (`node_names`), which errors quote.
        for i, node in enumerate(graph.node):
            node.name = node.name or f"{node.op_type}_{i}"
        nodes = [graph.node[i] for i in order]
        copies = [onnx.NodeProto() for _ in nodes]
        for copy, node in zip(copies, nodes, strict=True):
            copy.CopyFrom(node)
        del graph.node[:]
        graph.node.extend(copies)
    for node in graph.node:
        for sub in subgraphs(node):
            _sort(sub)


# The text fields of a tensor, and those holding messages that may have text.
_TENSOR_TEXT = [f for f in onnx.TensorProto.DESCRIPTOR.fields if f.type in (f.TYPE_STRING, f.TYPE_MESSAGE)]


def _check_text(message: Message, path: str) -> None:
    """Refuses a string field that is not UTF-8: protobuf's upb parser keeps such a field as bytes, which
    no name handling expects. `path` locates the field in the model (`model.graph.node[3].name`)."""
    if isinstance(message, onnx.TensorProto):
        # ListFields would copy a tensor's data (raw_data: the weights) out of the message; it is not text.
        fields = [(f, getattr(message, f.name)) for f in _TENSOR_TEXT if f.is_repeated or message.HasField(f.name)]
    else:
        fields = message.ListFields()
    for field, value in fields:
        if field.type not in (field.TYPE_STRING, field.TYPE_MESSAGE):
            continue
        for i, item in enumerate(value if field.is_repeated else [value]):
            where = f"{path}.{field.name}" + (f"[{i}]" if field.is_repeated else "")
            if isinstance(item, bytes):
                raise MalformedModelError(f"{where} of the model is not valid UTF-8 text")
            if field.type == field.TYPE_MESSAGE:
                _check_text(item, where)


def _check_values(graph: onnx.GraphProto) -> None:
    """Refuses a graph without outputs, a graph input, output or initializer without a name, and two
    initializers of one name: which one a node reads is undefined, and shape inference fails on them naming
    neither (it merges the types of an unnamed initializer and an unnamed output)."""
    if not graph.output:
        raise MalformedModelError(f"the model's graph '{graph.name}' has no outputs: there is nothing to compute")
    for what, values in (("input", graph.input), ("output", graph.output), ("initializer", graph.initializer)):
        for index, value in enumerate(values):
            if not value.name:
                raise MalformedModelError(f"graph {what} {index} of the model has no name")
    seen: set[str] = set()
    for tensor in graph.initializer:
        if tensor.name in seen:
            raise MalformedModelError(f"initializer '{tensor.name}' is defined more than once in graph '{graph.name}'")
        seen.add(tensor.name)
    _check_defined(graph, set(), node_names(graph))


def _check_defined(graph: onnx.GraphProto, outer: set[str], names: list[str]) -> None:
    """Refuses a node that reads a value nothing defines (no graph input, initializer or node output of its graph
    or an enclosing one): onnx's shape inference reads such an input's type unchecked for some ops (EyeLike: a
    segmentation fault, fuzz seed 2462). Refuses a value that two nodes of a graph output, as onnxruntime does:
    which one a reader means is undefined (a ReduceSum reading its own output as its axes, with another node
    defining it too, reached the staged session's split as a graph input, fuzz seed 2485)."""
    defined = outer | {v.name for v in graph.input} | {t.name for t in graph.initializer}
    producers: dict[str, str] = {}
    for node, name in zip(graph.node, names, strict=True):
        for value in node.output:
            if value in producers:
                raise MalformedModelError(f"value '{value}' is the output of two nodes, '{producers[value]}' and "
                                          f"'{name}' ({node.op_type}), of graph '{graph.name}'")
            if value:
                producers[value] = name
    defined |= producers.keys()
    for node, name in zip(graph.node, names, strict=True):
        for value in node.input:
            if value and value not in defined:
                raise MalformedModelError(f"node '{name}' ({node.op_type}) reads '{value}', which no graph input, "
                                          f"initializer or node of graph '{graph.name}' defines")
        for sub in subgraphs(node):
            _check_defined(sub, defined, node_names(sub, f"{name}/"))


def _check_schemas(proto: onnx.ModelProto) -> None:
    """Refuses, naming it, a node that breaks its schema where onnx's shape inference cannot be trusted to:
    a required attribute missing (a Loop without its body: inference fails with its C++ library's
    `vector::reserve`), more or fewer inputs or outputs than the op has, a Split whose outputs differ from its
    `num_outputs` (inference aborts the process), or a GatherND of negative batch_dims (a segmentation fault)."""
    opset = default_opset(proto)
    if opset is None:
        return
    for node, name in walk(proto.graph, node_names(proto.graph)):
        schema = op_schema(node.op_type, opset) if node.domain in DEFAULT_DOMAINS else None
        if schema is None:
            continue
        present = {a.name: a for a in node.attribute}
        missing = [a for a, spec in schema.attributes.items() if spec.required and a not in present]
        if missing:
            raise InvalidNodeError(f"node '{name}' ({node.op_type}): attribute '{missing[0]}' is required")
        for what, count, least, most in (
            ("inputs", len(node.input), schema.min_input, schema.max_input),
            ("outputs", len(node.output), schema.min_output, schema.max_output),
        ):
            if not least <= count <= most:
                bounds = f"{least}" if least == most else f"{least} to {most}"
                raise InvalidNodeError(f"node '{name}' ({node.op_type}): has {count} {what}, the op takes {bounds}")
        parts = present.get("num_outputs")
        if node.op_type == "Split" and parts is not None and parts.i != len(node.output):
            raise InvalidNodeError(f"node '{name}' (Split): num_outputs is {parts.i} but the node has "
                                   f"{len(node.output)} outputs")
        batch_dims = present.get("batch_dims")
        if node.op_type == "GatherND" and batch_dims is not None and batch_dims.i < 0:
            # onnx's shape inference indexes the shapes by it unchecked: a segmentation fault (fuzz seed 2456).
            raise InvalidNodeError(f"node '{name}' (GatherND): batch_dims {batch_dims.i} must be 0 or more")


def _parse(data: bytes, what: str) -> onnx.ModelProto:
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except DecodeError as e:
        raise MalformedModelError(f"{what} is not an ONNX model (truncated or corrupt): {e}") from None
    if not proto.HasField("graph") or not proto.opset_import:
        raise MalformedModelError(f"{what} is not an ONNX model (truncated or corrupt): no graph or opset")
    return proto


def _first_line(e: Exception) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def default_opset(model: onnx.ModelProto) -> int | None:
    """The default domain's opset the model imports; None when it imports none (see _check_ops)."""
    for o in model.opset_import:
        if o.domain in DEFAULT_DOMAINS:
            return o.version
    return None


def node_names(graph: onnx.GraphProto, prefix: str = "") -> list[str]:
    return [prefix + (n.name or f"{n.op_type}_{i}") for i, n in enumerate(graph.node)]


def walk(graph: onnx.GraphProto, names: list[str]) -> Iterator[tuple[onnx.NodeProto, str]]:
    """Every node of `graph` with its name, and those of its subgraphs (If branches, Loop bodies, ...)."""
    for node, name in zip(graph.node, names):
        yield node, name
        for sub in subgraphs(node):
            yield from walk(sub, node_names(sub, f"{name}/"))


def last_reads(graph: onnx.GraphProto, kept: set[str]) -> dict[int, list[str]]:
    """The names each node of `graph` is the last reader of (by index, `uses`: its subgraphs' reads of outer
    values included), those in `kept` left out."""
    last: dict[str, int] = {}
    for index, node in enumerate(graph.node):
        for value_name in uses(node):
            last[value_name] = index
    dead: dict[int, list[str]] = {}
    for value_name, index in last.items():
        if value_name and value_name not in kept:
            dead.setdefault(index, []).append(value_name)
    return dead
