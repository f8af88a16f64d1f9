"""Mutations of ONNX models: on the serialized bytes (truncations, bit flips, spliced chunks) and on the graph
(attribute values, lengths and types; dropped, duplicated or retyped initializers; absurd dims; element
types; cycles and dangling names; unknown domains, op types and opsets; dropped or duplicated nodes).

Each mutator takes the model (a ModelProto it may change in place, or bytes) and a random generator and
returns a short description of what it did, which the report shows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto

T = TypeVar("T")
# Values that break arithmetic on attributes and dims: signs, zero, off-by-one, int32/int64 limits, huge.
INTERESTING_INTS = (0, 1, -1, 2, -2, 3, 7, 255, 2**31 - 1, -(2**31), 2**40, 2**62, -(2**62))
INTERESTING_FLOATS = (0.0, -0.0, 1.0, -1.0, float("nan"), float("inf"), float("-inf"), 1e30, -1e-30)
# Attribute names the ops read: adding one where it is unexpected or with a wrong value tests the handlers.
ATTRIBUTE_NAMES = (
    "axis", "axes", "perm", "kernel_shape", "strides", "pads", "dilations", "group", "auto_pad", "ceil_mode",
    "keepdims", "epsilon", "alpha", "beta", "transA", "transB", "mode", "to", "value", "split", "starts",
    "ends", "count_include_pad", "storage_order", "output_padding", "output_shape", "allowzero", "largest",
    "sorted", "batch_dims", "blocksize", "direction", "noop_with_empty_axes", "select_last_index",
)
ELEMENT_TYPES = tuple(int(v) for v in TensorProto.DataType.values()) + (99, -3)
OPSETS = (0, 1, 6, 7, 11, 13, 18, 22, 23, 99, 10**6, -1)


def _pick(rng: np.random.Generator, items: Sequence[T]) -> T:
    return items[int(rng.integers(len(items)))]


def _int(rng: np.random.Generator) -> int:
    return int(_pick(rng, INTERESTING_INTS)) if rng.random() < 0.7 else int(rng.integers(-8, 9))


def _ints(rng: np.random.Generator, length: int | None = None) -> list[int]:
    n = int(rng.integers(0, 7)) if length is None else length
    return [_int(rng) if rng.random() < 0.3 else int(rng.integers(0, 4)) for _ in range(n)]


def _graphs(graph: onnx.GraphProto) -> list[onnx.GraphProto]:
    """`graph` and its subgraphs (If branches, Loop and Scan bodies)."""
    found = [graph]
    for node in graph.node:
        for a in node.attribute:
            for sub in [a.g] if a.HasField("g") else list(a.graphs):
                found.extend(_graphs(sub))
    return found


def _node(model: onnx.ModelProto, rng: np.random.Generator) -> onnx.NodeProto | None:
    nodes = [n for g in _graphs(model.graph) for n in g.node]
    return _pick(rng, nodes) if nodes else None


def _name(node: onnx.NodeProto) -> str:
    return node.name or node.op_type


# Graph-level mutators.


def attribute_value(model: onnx.ModelProto, rng: np.random.Generator) -> str:
    """A new value for an attribute, of its own type: ints, lists of other lengths, NaN floats, odd strings."""
    nodes = [n for g in _graphs(model.graph) for n in g.node if n.attribute]
    if not nodes:
        return add_attribute(model, rng)
    node = _pick(rng, nodes)
    a = _pick(rng, list(node.attribute))
    if a.type == AttributeProto.INT:
        a.i = _int(rng)
    elif a.type == AttributeProto.FLOAT:
        a.f = float(_pick(rng, INTERESTING_FLOATS))
    elif a.type == AttributeProto.STRING:
        a.s = _pick(rng, [b"", b"SAME_UPPER", b"VALID", b"bogus", b"\xff\xfe", b"NOTSET", b"constant"])
    elif a.type == AttributeProto.INTS:
        values = list(a.ints)
        choice = int(rng.integers(4))
        if choice == 0 and values:
            values.pop(int(rng.integers(len(values))))  # fewer entries than the op's rank asks
        elif choice == 1:
            values.append(_pick(rng, values) if values else _int(rng))
        elif choice == 2 and values:
            values[int(rng.integers(len(values)))] = _int(rng)
        else:
            values = _ints(rng)
        del a.ints[:]
        a.ints.extend(values)
    elif a.type == AttributeProto.FLOATS:
        del a.floats[:]
        a.floats.extend(float(_pick(rng, INTERESTING_FLOATS)) for _ in range(int(rng.integers(0, 4))))
    elif a.type == AttributeProto.TENSOR:
        retype_tensor(a.t, rng)
    else:
        node.attribute.remove(a)
        return f"dropped attribute '{a.name}' of node '{_name(node)}'"
    return f"attribute '{a.name}' of node '{_name(node)}' set to {onnx.helper.get_attribute_value(a)!r}"[:200]


def add_attribute(model: onnx.ModelProto, rng: np.random.Generator) -> str:
    node = _node(model, rng)
    if node is None:
        return "no node"
    name = _pick(rng, ATTRIBUTE_NAMES)
    kept = [a for a in node.attribute if a.name != name]
    del node.attribute[:]
    node.attribute.extend(kept)
    value = _pick(rng, [_int(rng), _ints(rng), float(_pick(rng, INTERESTING_FLOATS)), "bogus", b"SAME_LOWER"])
    kind = AttributeProto.INTS if isinstance(value, list) else None  # an empty list has no type of its own
    node.attribute.append(onnx.helper.make_attribute(name, value, attr_type=kind))
    return f"attribute '{name}' = {value!r} added to node '{_name(node)}'"


def drop_attribute(model: onnx.ModelProto, rng: np.random.Generator) -> str:
    nodes = [n for g in _graphs(model.graph) for n in g.node if n.attribute]
    if not nodes:
        return add_attribute(model, rng)
    node = _pick(rng, nodes)
    a = _pick(rng, list(node.attribute))
    node.attribute.remove(a)
    return f"dropped attribute '{a.name}' of node '{_name(node)}'"


def attribute_type(model: onnx.ModelProto, rng: np.random.Generator) -> str:
    """An attribute of another type than the op expects (a float where an int is read, ints for an int)."""
    nodes = [n for g in _graphs(model.graph) for n in g.node if n.attribute]
    if not nodes:
        return add_attribute(model, rng)
    node = _pick(rng, nodes)
    a = _pick(rng, list(node.attribute))
    value = _pick(rng, [1.5, [1, 2], "x", 3, [0.5, 2.0], ["a", "b"]])
    new = onnx.helper.make_attribute(a.name, value)
    a.CopyFrom(new)
    return f"attribute '{a.name}' of node '{_name(node)}' retyped to {value!r}"


def drop_initializer(model: onnx.ModelProto, rng: np.random.Generator) -> str:
    graph = model.graph
    if not graph.initializer:
        return drop_node(model, rng)
    t = _pick(rng, list(graph.initializer))
    graph.initializer.remove(t)
    return f"dropped initializer '{t.name}'"


def duplicate_initializer(model: onnx.ModelProto, rng: np.random.Generator) -> str:
    graph = model.graph
    if not graph.initializer:
        return duplicate_node(model, rng)
    t = _pick(rng, list(graph.initializer))
    copy = graph.initializer.add()
    copy.CopyFrom(t)
    if rng.random() < 0.5:
        retype_tensor(copy, rng)
    return f"duplicated initializer '{t.name}'"


def retype_tensor(t: TensorProto, rng: np.random.Generator) -> None:
    """A tensor whose element type, dims or data no longer agree."""
    choice = int(rng.integers(4))
    if choice == 0:
        t.data_type = int(_pick(rng, ELEMENT_TYPES))
    elif choice == 1:
        dims = list(t.dims)
        if dims and rng.random() < 0.6:
            dims[int(rng.integers(len(dims)))] = _int(rng)
        else:
            dims = _ints(rng)
        del t.dims[:]
        t.dims.extend(dims)
    elif choice == 2:
        t.raw_data = t.raw_data[: len(t.raw_data) // 2] if t.raw_data else b"\x00" * int(rng.integers(1, 9))
    else:
        t.data_location = TensorProto.EXTERNAL
        t.external_data.add(key="location", value=_pick(rng, ["missing.bin", "../../etc/passwd", ""]))


def retype_initializer(model: onnx.ModelProto, rng: np.random.Generator) -> str:
    if not model.graph.initializer:
        return element_type(model, rng)
    t = _pick(rng, list(model.graph.initializer))
    retype_tensor(t, rng)
    return f"initializer '{t.name}' now of element type {t.data_type}, dims {list(t.dims)}"


def element_type(model: onnx.ModelProto, rng: np.random.Generator) -> str:
    """A graph input, output or value_info of another element type (strings, complex, unknown numbers)."""
    infos = [*model.graph.input, *model.graph.output, *model.graph.value_info]
    if not infos:
        return "no value info"
    info = _pick(rng, infos)
    info.type.tensor_type.elem_type = int(_pick(rng, ELEMENT_TYPES))
    return f"value '{info.name}' now of element type {info.type.tensor_type.elem_type}"


def dims(model: onnx.ModelProto, rng: np.random.Generator) -> str:
    """Absurd, negative, zero or symbolic dims on a graph input or output, or a rank change."""
    infos = [*model.graph.input, *model.graph.output]
    if not infos:
        return "no value info"
    info = _pick(rng, infos)
    shape = info.type.tensor_type.shape
    choice = int(rng.integers(4))
    if choice == 0 and shape.dim:
        d = shape.dim[int(rng.integers(len(shape.dim)))]
        if rng.random() < 0.3:
            d.dim_param = _pick(rng, ["n", "", "batch"])
        else:
            d.dim_value = _int(rng)
    elif choice == 1 and shape.dim:
        del shape.dim[int(rng.integers(len(shape.dim)))]
    elif choice == 2:
        shape.dim.add().dim_value = int(rng.integers(0, 4))
    else:
        info.type.tensor_type.ClearField("shape")
    dims = [d.dim_param or d.dim_value for d in shape.dim] if info.type.tensor_type.HasField("shape") else None
    # printable_type would name the element type, which another mutation may have made no type's (-3).
    return f"value '{info.name}' now of shape {dims}"


def cycle(model: onnx.ModelProto, rng: np.random.Generator) -> str:
    """A node that reads the output of itself or of a later node (a cycle, or a use before definition)."""
    nodes = list(model.graph.node)
    if not nodes:
        return "no node"
    i = int(rng.integers(len(nodes)))
    j = int(rng.integers(i, len(nodes)))
    if not nodes[i].input or not nodes[j].output:
        return dangling(model, rng)
    k = int(rng.integers(len(nodes[i].input)))
    nodes[i].input[k] = nodes[j].output[0]
    return f"node '{_name(nodes[i])}' input {k} now reads '{nodes[j].output[0]}' of node '{_name(nodes[j])}'"


def dangling(model: onnx.ModelProto, rng: np.random.Generator) -> str:
    """A name nothing produces as a node input, or a node output or graph output renamed."""
    node = _node(model, rng)
    if node is None:
        return "no node"
    choice = int(rng.integers(3))
    if choice == 0 and node.input:
        k = int(rng.integers(len(node.input)))
        node.input[k] = "dangling"
        return f"node '{_name(node)}' input {k} renamed 'dangling'"
    if choice == 1 and node.output:
        node.output[0] = node.output[0] + "_renamed"
        return f"node '{_name(node)}' output 0 renamed"
    if model.graph.output:
        model.graph.output[0].name = "nowhere"
        return "graph output 0 renamed 'nowhere'"
    return "no change"


def domain(model: onnx.ModelProto, rng: np.random.Generator) -> str:
    """An unknown domain or op type on a node, or another (possibly absurd) opset for the model."""
    choice = int(rng.integers(4))
    node = _node(model, rng)
    if choice == 0 and node is not None:
        node.domain = _pick(rng, ["com.example", "ai.onnx.ml", "com.microsoft", "ai.onnx"])
        return f"node '{_name(node)}' now in domain '{node.domain}'"
    if choice == 1 and node is not None:
        node.op_type = _pick(rng, ["Bogus", "", node.op_type.lower(), "If", "Loop", "Scan", "Identity", "Conv"])
        return f"node '{_name(node)}' now of op type '{node.op_type}'"
    if choice == 2 and model.opset_import:
        o = _pick(rng, list(model.opset_import))
        o.version = int(_pick(rng, OPSETS))
        return f"opset of domain '{o.domain}' set to {o.version}"
    if rng.random() < 0.5 and model.opset_import:
        del model.opset_import[:]
        return "no opset imported"
    model.opset_import.add(domain=_pick(rng, ["com.example", "", "ai.onnx"]), version=int(_pick(rng, OPSETS)))
    return "an extra opset imported"


def drop_node(model: onnx.ModelProto, rng: np.random.Generator) -> str:
    nodes = model.graph.node
    if not nodes:
        return "no node"
    i = int(rng.integers(len(nodes)))
    name = _name(nodes[i])
    del nodes[i]
    return f"dropped node '{name}'"


def duplicate_node(model: onnx.ModelProto, rng: np.random.Generator) -> str:
    nodes = model.graph.node
    if not nodes:
        return "no node"
    i = int(rng.integers(len(nodes)))
    nodes.add().CopyFrom(nodes[i])
    return f"duplicated node '{_name(nodes[i])}' (its outputs now produced twice)"


def node_inputs(model: onnx.ModelProto, rng: np.random.Generator) -> str:
    """Too few or too many inputs or outputs on a node, or an empty (absent) input name."""
    node = _node(model, rng)
    if node is None:
        return "no node"
    choice = int(rng.integers(4))
    if choice == 0 and node.input:
        del node.input[-1]
        return f"node '{_name(node)}' lost its last input"
    if choice == 1:
        node.input.append(_pick(rng, [*node.input, ""]) if node.input else "")
        return f"node '{_name(node)}' got an extra input"
    if choice == 2 and node.input:
        node.input[int(rng.integers(len(node.input)))] = ""
        return f"node '{_name(node)}' got an absent input"
    node.output.append(f"extra_{int(rng.integers(100))}")
    return f"node '{_name(node)}' got an extra output"


GRAPH_MUTATORS: dict[str, Callable[[onnx.ModelProto, np.random.Generator], str]] = {
    "attribute_value": attribute_value,
    "add_attribute": add_attribute,
    "drop_attribute": drop_attribute,
    "attribute_type": attribute_type,
    "drop_initializer": drop_initializer,
    "duplicate_initializer": duplicate_initializer,
    "retype_initializer": retype_initializer,
    "element_type": element_type,
    "dims": dims,
    "cycle": cycle,
    "dangling": dangling,
    "domain": domain,
    "drop_node": drop_node,
    "duplicate_node": duplicate_node,
    "node_inputs": node_inputs,
}


# Protobuf-level mutators: the bytes no longer need to parse.


def truncate(data: bytes, rng: np.random.Generator) -> tuple[bytes, str]:
    cut = int(rng.integers(0, max(1, len(data))))
    return data[:cut], f"truncated to {cut} of {len(data)} bytes"


def flip_bits(data: bytes, rng: np.random.Generator) -> tuple[bytes, str]:
    buffer = bytearray(data)
    count = int(rng.integers(1, 9))
    for _ in range(count):
        i = int(rng.integers(len(buffer)))
        buffer[i] ^= 1 << int(rng.integers(8))
    return bytes(buffer), f"{count} bit(s) flipped"


def splice(data: bytes, rng: np.random.Generator) -> tuple[bytes, str]:
    """A chunk of the bytes deleted, duplicated, or overwritten with an interesting byte."""
    n = len(data)
    start = int(rng.integers(n))
    end = min(n, start + int(rng.integers(1, 17)))
    choice = int(rng.integers(3))
    if choice == 0:
        return data[:start] + data[end:], f"bytes {start}:{end} deleted"
    if choice == 1:
        return data[:end] + data[start:end] + data[end:], f"bytes {start}:{end} duplicated"
    fill = bytes([int(_pick(rng, [0x00, 0xFF, 0x7F, 0x80, 0x01]))]) * (end - start)
    return data[:start] + fill + data[end:], f"bytes {start}:{end} overwritten"


def _nonempty(mutator: Callable[[bytes, np.random.Generator], tuple[bytes, str]]
              ) -> Callable[[bytes, np.random.Generator], tuple[bytes, str]]:
    """`mutator` applied to bytes that a truncation left empty: they stay empty."""
    return lambda data, rng: mutator(data, rng) if data else (data, "empty bytes kept")


BYTE_MUTATORS: dict[str, Callable[[bytes, np.random.Generator], tuple[bytes, str]]] = {
    "truncate": truncate,
    "flip_bits": _nonempty(flip_bits),
    "splice": _nonempty(splice),
}
