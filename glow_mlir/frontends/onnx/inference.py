"""ONNX shape inference of a model without its weights (`infer_shapes`), for `importer.load` and
`signature.specialize`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import onnx
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

# Initializers of more elements than this go to shape inference without their data: no shape computation
# reads a tensor that large (shapes, axes, pads and scales are a few integers).
_INFERENCE_DATA_ELEMENTS = 1 << 14


def infer_shapes(proto: onnx.ModelProto, owned: bool) -> onnx.ModelProto:
    """`onnx.shape_inference.infer_shapes(proto, data_prop=True)`, with the weights left out of it: it copies
    the model into C++ as bytes and parses the result back, which took 4 of VGG-19's 6 s of import for its
    548 MB of weights (notes: "Where compile time goes"). It gets a copy of the model whose large initializers
    have their name, type and dims only; the result gets the initializers back. An `owned` model (parsed by
    `load`, or specialize's copy) becomes the result itself."""
    light = onnx.ModelProto()
    for field, value in proto.ListFields():
        if field.name != "graph":
            _copy_field(light, field, value)
    for field, value in proto.graph.ListFields():
        if field.name == "initializer":
            light.graph.initializer.extend(_without_data(t) for t in value)
        else:
            _copy_field(light.graph, field, value)
    inferred = onnx.shape_inference.infer_shapes(light, data_prop=True)
    if not owned:
        del inferred.graph.initializer[:]
        inferred.graph.initializer.extend(proto.graph.initializer)
        return inferred
    # An owned model is nobody else's: it takes the inferred fields instead, which spares copying the
    # weights back (VGG-19: 1 s).
    _take_fields(proto, inferred, keep=("graph",))
    _take_fields(proto.graph, inferred.graph, keep=("initializer",))
    return proto


def _take_fields(target: Message, source: Message, keep: Sequence[str]) -> None:
    """Makes every field of `target` but those named in `keep` what it is in `source`."""
    for field in target.DESCRIPTOR.fields:
        if field.name not in keep:
            target.ClearField(field.name)
    for field, value in source.ListFields():
        if field.name not in keep:
            _copy_field(target, field, value)


def _copy_field(message: Message, field: FieldDescriptor, value: Any) -> None:
    if field.is_repeated:
        getattr(message, field.name).extend(value)
    elif field.type == field.TYPE_MESSAGE:
        getattr(message, field.name).CopyFrom(value)
    else:
        setattr(message, field.name, value)


def _without_data(tensor: onnx.TensorProto) -> onnx.TensorProto:
    """`tensor`, or when it is large, a tensor of its name, type and dims without data."""
    if tensor.data_location == onnx.TensorProto.EXTERNAL or math.prod(tensor.dims) <= _INFERENCE_DATA_ELEMENTS:
        return tensor
    return onnx.TensorProto(name=tensor.name, data_type=tensor.data_type, dims=tensor.dims)
