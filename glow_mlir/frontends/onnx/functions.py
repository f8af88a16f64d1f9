"""ONNX ops that the standard defines as a function of other ops, imported as that function body.

Many ONNX ops (Attention, RotaryEmbedding, CenterCropPad, AffineGrid, the loss ops, ...) come with a body in
their schema: a FunctionProto of simpler ops, fixed or built for the node's attributes and input types
(a "context-dependent" function). An op without a handler of its own (registry.py) but with such a body is
imported as that body, its nodes renamed into the node's scope, so the whole class is covered at once
and every op it expands to goes through the importer's usual checks. A handler, where one exists, wins:
it can map the op to fewer, larger glow ops than its body.

    if has_body(node, opset): nodes, body_opset = expand(node, opset, input_types)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import onnx
import onnx.defs

from glow_mlir.errors import UnsupportedModelError


def _schema(node: onnx.NodeProto, opset: int) -> onnx.defs.OpSchema | None:
    try:
        return onnx.defs.get_schema(node.op_type, opset, node.domain)
    except onnx.defs.SchemaError:
        return None


def _versions(schema: onnx.defs.OpSchema, opset: int) -> tuple[int | None, bool]:
    """The newest function version of `schema` usable at `opset`, and whether it is context-dependent."""
    fixed = [v for v in schema.function_opset_versions if v <= opset]
    dependent = [v for v in schema.context_dependent_function_opset_versions if v <= opset]
    best = max([*fixed, *dependent], default=None)
    return best, best is not None and best in dependent and best not in fixed


def has_body(node: onnx.NodeProto, opset: int) -> bool:
    """Whether the schema of `node`'s op at `opset` defines it as a function of other ops."""
    schema = _schema(node, opset)
    return schema is not None and _versions(schema, opset)[0] is not None


def expand(
    node: onnx.NodeProto, name: str, opset: int, input_types: Sequence[onnx.TypeProto | None]
) -> tuple[list[onnx.NodeProto], int]:
    """The body of `node` (named `name` in the model) as nodes of the model's graph, and the default-domain
    opset they are written for. Formal inputs and outputs become the node's; internal values are prefixed
    with `name/` so that two expansions never share a name; attribute references take the node's
    attributes, or the schema's defaults."""
    schema = _schema(node, opset)
    assert schema is not None
    version, dependent = _versions(schema, opset)
    assert version is not None
    full = onnx.NodeProto()
    full.CopyFrom(node)
    given = {a.name for a in node.attribute}
    for attr_name, attr in schema.attributes.items():
        if attr_name not in given and attr.default_value.name:
            full.attribute.append(attr.default_value)
    function = onnx.FunctionProto()
    if dependent:
        types = [t if t is not None else onnx.TypeProto() for t in input_types]
        text = schema.get_context_dependent_function_with_opset_version(
            version, full.SerializeToString(), [t.SerializeToString() for t in types]
        )
        if not text:
            raise UnsupportedModelError([(node.op_type, opset, name)], "ONNX builds no function body for this node")
    else:
        text = schema.get_function_with_opset_version(version)
    function.ParseFromString(text)
    names = {formal: (node.input[i] if i < len(node.input) else "") for i, formal in enumerate(function.input)}
    names.update({formal: node.output[i] for i, formal in enumerate(function.output)
                  if i < len(node.output) and node.output[i]})

    def rename(value: str) -> str:
        return "" if not value else names.get(value, f"{name}/{value}")

    attributes = {a.name: a for a in full.attribute}
    body_opset = next((o.version for o in function.opset_import if o.domain in ("", "ai.onnx")), opset)
    return [_renamed(n, rename, attributes) for n in function.node], body_opset


def _renamed(
    node: onnx.NodeProto, rename: Callable[[str], str], attributes: dict[str, onnx.AttributeProto]
) -> onnx.NodeProto:
    """`node` with its value names renamed and attribute references resolved (recursively in subgraphs,
    where only names not defined inside the subgraph are renamed)."""
    out = onnx.NodeProto()
    out.CopyFrom(node)
    out.ClearField("input")
    out.ClearField("output")
    out.ClearField("attribute")
    out.input.extend(rename(v) for v in node.input)
    out.output.extend(rename(v) for v in node.output)
    for attribute in node.attribute:
        if attribute.ref_attr_name:
            if attribute.ref_attr_name not in attributes:
                continue  # an optional attribute the node does not set: the body's op takes its default
            resolved = onnx.AttributeProto()
            resolved.CopyFrom(attributes[attribute.ref_attr_name])
            resolved.name = attribute.name
            out.attribute.append(resolved)
            continue
        copy = onnx.AttributeProto()
        copy.CopyFrom(attribute)
        if copy.HasField("g"):
            copy.g.CopyFrom(_renamed_graph(attribute.g, rename, attributes))
        for i, graph in enumerate(attribute.graphs):
            copy.graphs[i].CopyFrom(_renamed_graph(graph, rename, attributes))
        out.attribute.append(copy)
    return out


def _renamed_graph(
    graph: onnx.GraphProto, rename: Callable[[str], str], attributes: dict[str, onnx.AttributeProto]
) -> onnx.GraphProto:
    local = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    local |= {o for n in graph.node for o in n.output}

    def inner(value: str) -> str:
        return value if value in local else rename(value)

    out = onnx.GraphProto()
    out.CopyFrom(graph)
    del out.node[:]
    out.node.extend(_renamed(n, inner, attributes) for n in graph.node)
    return out
