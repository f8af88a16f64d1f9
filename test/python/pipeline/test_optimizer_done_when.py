"""The optimizer's acceptance test on ResNet-50 and MobileNetV2 exported from PyTorch with their batch norms
kept as BatchNormalization nodes: after the compile pipeline no batch norm is left, every Conv followed by
its activation (Relu, or Clip for ReLU6) is one fused op, the arena is within 10% of the lower bound (the
peak of simultaneously live bytes) and at most a quarter of the activations' bytes without sharing, and the
outputs still match onnxruntime."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import onnx
import onnxruntime
import pytest
from models import torch_models
from mlir import ir

from glow_mlir import ops
from glow_mlir.frontends.onnx.importer import import_model, load
from glow_mlir.pipeline.runner import COMPILE_PIPELINE, run_pipeline
from glow_mlir.session import InferenceSession

# The graph part of the compile pipeline: what the optimizer leaves for IRGen.
GRAPH_PIPELINE = list(COMPILE_PIPELINE[: COMPILE_PIPELINE.index("glow-schedule")])
# A convolution with its activation, in the graph's layout or the CPU backend's.
FUSED_CONVOLUTIONS = ("glow.fused_convolution", "glow.cpu_conv_nhwc")
CONVOLUTIONS = ("glow.convolution", *FUSED_CONVOLUTIONS)


def conv_activation_pairs(model: onnx.ModelProto) -> int:
    """The Convs whose result, through at most a BatchNormalization, only a Relu or a Clip reads."""
    readers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
    for node in model.graph.node:
        for name in node.input:
            readers[name].append(node)
    count = 0
    for node in model.graph.node:
        if node.op_type != "Conv":
            continue
        after = readers[node.output[0]]
        if len(after) == 1 and after[0].op_type == "BatchNormalization":
            after = readers[after[0].output[0]]
        count += len(after) == 1 and after[0].op_type in ("Relu", "Clip")
    return count


def _activation(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["activation"]).value if "activation" in op.attributes else "none"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet50", "mobilenetv2"])
def test_optimizer_done_when(name: str) -> None:
    path = str(torch_models.exported(name, keep_batch_norm=True))
    model = onnx.load(path)
    node_kinds = [node.op_type for node in model.graph.node]
    assert "BatchNormalization" in node_kinds
    pairs = conv_activation_pairs(model)
    assert pairs > 0

    graph = import_model(load(path)).module
    with graph.context:
        run_pipeline(graph, GRAPH_PIPELINE)
    graph_ops = [op for op in ops.walk_ops(graph.operation) if op.name.startswith(ops.GLOW)]
    assert not [op for op in graph_ops if op.name == "glow.batch_normalization"]
    convolutions = [op for op in graph_ops if op.name in CONVOLUTIONS]
    fused = [op for op in convolutions if op.name in FUSED_CONVOLUTIONS and _activation(op) != "none"]
    # One op per Conv, and each activation after one is in it.
    assert len(convolutions) == node_kinds.count("Conv")
    assert len(fused) == pairs

    session = InferenceSession(path)
    report = session.report
    arena, peak, naive = report["arena_bytes"], report["peak_live_bytes"], report["naive_activation_bytes"]
    print(f"\n{name}: arena {arena}, peak live {peak}, naive {naive} bytes; {len(fused)} fused convolutions "
          f"with activation = {pairs} Conv -> Relu/Clip pairs")
    assert arena <= 1.1 * peak
    assert arena <= 0.25 * naive

    feeds = torch_models.example_inputs(name)
    expected = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = session.run(None, feeds)
    for want, have in zip(expected, got, strict=True):
        np.testing.assert_allclose(have, want, rtol=1e-4, atol=1e-4)
