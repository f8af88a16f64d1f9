"""FLOPs of an ONNX model: 2 x the multiply-accumulates of its Conv, ConvTranspose, Gemm and MatMul nodes.

The benchmark's GFLOP/s and % of peak divide this count by the measured time. Only the dense products are
counted, as is customary (and as the published GMAC figures below count them): elementwise ops, pooling,
softmax and normalization add a few percent of memory-bound work that no FMA peak applies to. Shapes come
from `onnx.shape_inference` (with data propagation, so shapes computed by Shape/Concat chains are known).

MACs per node, with every shape static:
- Conv: |output| x (C_in / group) x prod(kernel); e.g. a 3x3 64->64 conv on 1x64x56x56 (ResNet's stage 1)
  is 56*56*64 * 64 * 9 = 115,605,504 MACs.
- ConvTranspose: |input| x (C_out / group) x prod(kernel) (every input pixel scatters one kernel).
- Gemm: M x N x K after transA/transB; MatMul: |output| x K (numpy broadcasting of batch dimensions).

Hand-computed totals, checked by `python -m bench.flops` against the models of bench/models.py:
- MLP 784-512-256-10, batch 1: 784*512 + 512*256 + 256*10 = 535,040 MACs.
- LeNet-5 on 1x1x28x28: conv 1->6 5x5 pad 2: 28*28*6*25 = 117,600; conv 6->16 5x5: 10*10*16*6*25 =
  240,000; FC 400*120 + 120*84 + 84*10 = 58,920; total 416,520 MACs.
- BERT-style encoder (2 layers, hidden 128, 4 heads, FFN 512, sequence 16), per layer: Q/K/V/output
  projections 4*16*128*128 = 1,048,576; scores and context 2*4*16*16*32 = 65,536; FFN 2*16*128*512 =
  2,097,152; total 2 * 3,211,264 = 6,422,528 MACs.
- The performance issue's BERT encoder (hidden 256, 4 heads of 64, FFN 1024, 2 layers), per layer at sequence
  S: projections 4*S*256*256, scores and context 2*4*S*S*64, FFN 2*S*256*1024; at S = 64: 2 * 52,428,800 =
  104,857,600 MACs; at S = 128: 2 * 109,051,904 = 218,103,808.
- ResNet-50 on 1x3x224x224: 4.09 GMACs in the literature (torchvision lists 4.09 GFLOPS meaning MACs),
  of which the 2048x1000 classifier is 2,048,000. ResNet-18: 1.81 GMACs; VGG-19: 19.6 GMACs;
  MobileNetV2: 0.30 GMACs; SqueezeNet 1.1: 0.35 GMACs.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator

import onnx
from onnx import shape_inference
from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

DENSE_OPS = ("Conv", "ConvTranspose", "Gemm", "MatMul")


def count_macs(model: onnx.ModelProto | str | os.PathLike[str]) -> int:
    """The multiply-accumulates of the model's Conv/ConvTranspose/Gemm/MatMul nodes (static shapes)."""
    return sum(macs for _, macs in _dense_macs(model))


def node_macs(model: onnx.ModelProto | str | os.PathLike[str]) -> dict[str, int]:
    """The multiply-accumulates of the model's Conv/ConvTranspose/Gemm/MatMul nodes by node name (summed over
    nodes of one name): what a kernel computing those nodes does."""
    by_name: dict[str, int] = {}
    for node, macs in _dense_macs(model):
        by_name[node.name] = by_name.get(node.name, 0) + macs
    return by_name


def _dense_macs(model: onnx.ModelProto | str | os.PathLike[str]) -> Iterator[tuple[onnx.NodeProto, int]]:
    """Each Conv/ConvTranspose/Gemm/MatMul node of the model and its multiply-accumulates (static shapes)."""
    loaded = model if isinstance(model, onnx.ModelProto) else onnx.load(str(model), load_external_data=False)
    shapes = _shapes(shape_inference.infer_shapes(loaded, data_prop=True))
    if any(_unknown(node, shapes) for node in loaded.graph.node if node.op_type in DENSE_OPS):
        # onnx's data propagation stops at shape chains such as transformers' Expand(Where(Equal(...))) token
        # type ids; onnxruntime's symbolic shape inference evaluates them.
        shapes = _shapes(SymbolicShapeInference.infer_shapes(loaded, auto_merge=True))
    for node in loaded.graph.node:
        if node.op_type in DENSE_OPS:
            if _unknown(node, shapes):
                raise ValueError(f"node '{node.name}' ({node.op_type}) has operands without a static shape")
            static = [shapes[name] for name in _operands(node)]
            yield node, _node_macs(node, static[:-1], static[-1])


def _shapes(inferred: onnx.ModelProto) -> dict[str, tuple[int, ...] | None]:
    """Every value's shape in a shape-inferred model: None where not static."""
    values = (*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output)
    shapes: dict[str, tuple[int, ...] | None] = {v.name: _shape(v) for v in values}
    shapes.update({t.name: tuple(t.dims) for t in inferred.graph.initializer})
    return shapes


def _operands(node: onnx.NodeProto) -> list[str]:
    """A dense node's inputs, then its output."""
    return [name for name in (*node.input, node.output[0]) if name]


def _unknown(node: onnx.NodeProto, shapes: dict[str, tuple[int, ...] | None]) -> bool:
    return any(shapes.get(name) is None for name in _operands(node))


def count_flops(model: onnx.ModelProto | str | os.PathLike[str]) -> int:
    """2 x `count_macs(model)`: one multiply and one add per multiply-accumulate."""
    return 2 * count_macs(model)


def _node_macs(node: onnx.NodeProto, inputs: list[tuple[int, ...]], output: tuple[int, ...]) -> int:
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    if node.op_type == "Conv":
        weight = inputs[1]  # (C_out, C_in / group, k...)
        return math.prod(output) * math.prod(weight[1:])
    if node.op_type == "ConvTranspose":
        weight = inputs[1]  # (C_in, C_out / group, k...)
        return math.prod(inputs[0]) * math.prod(weight[1:])
    if node.op_type == "Gemm":
        a = inputs[0][::-1] if attrs.get("transA", 0) else inputs[0]
        return math.prod(output) * a[1]
    # MatMul: a vector operand is promoted to a matrix, so K is the last dimension of the first input.
    return math.prod(output) * inputs[0][-1]


def _shape(value: onnx.ValueInfoProto) -> tuple[int, ...] | None:
    """The static shape of `value`, or None where shape inference left a dimension unknown."""
    dims = value.type.tensor_type.shape.dim
    if not all(d.HasField("dim_value") for d in dims):
        return None
    return tuple(d.dim_value for d in dims)


if __name__ == "__main__":
    from bench import models

    HAND = {"mlp": 535_040, "lenet": 416_520, "bert": 6_422_528, "bert_s64": 104_857_600, "bert_s128": 218_103_808}
    for name in models.MODELS:
        macs = count_macs(models.onnx_path(name))
        check = "" if name not in HAND else (" = hand count" if macs == HAND[name] else f" != {HAND[name]:,}")
        print(f"{name:>14}: {macs / 1e9:8.4f} GMACs ({macs:,}){check}")
