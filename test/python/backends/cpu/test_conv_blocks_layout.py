"""Mobile-CNN blocks (HardSwish, SiLU, squeeze-and-excite between convolutions) compile with no layout
transpose between their NHWC convolutions, and compute what onnxruntime computes.

glow-cpu-layout puts each convolution between NCHW <-> NHWC transposes; glow-sink-transpose must carry them
through activations that read the convolution's output twice (x * hardsigmoid(x), x * sigmoid(x)) and through
the squeeze-and-excite pool and broadcast scale, or every such block keeps two full-size transposes and runs
its activations in NCHW (MobileNetV3-small: 38 transposes, 0.53x onnxruntime's speed before)."""

from __future__ import annotations

import re

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import glow_mlir
from glow_mlir.frontends.onnx import import_model
from glow_mlir.passes.graph import sink_transpose

rng = np.random.default_rng(0)


Nodes = tuple[list[onnx.NodeProto], list[onnx.TensorProto]]


def _conv(name: str, x: str, c: int, f: int, k: int, group: int = 1) -> Nodes:
    w = (rng.standard_normal((f, c // group, k, k)) / np.sqrt(c // group * k * k)).astype(np.float32)
    b = rng.uniform(-0.2, 0.2, f).astype(np.float32)
    inits = [numpy_helper.from_array(w, f"{name}_w"), numpy_helper.from_array(b, f"{name}_b")]
    node = helper.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [name], kernel_shape=[k, k], pads=[k // 2] * 4,
                            group=group)
    return [node], inits


def _activation(kind: str, x: str) -> list[onnx.NodeProto]:
    if kind == "hardswish":
        return [helper.make_node("HardSwish", [x], [f"{x}_act"])]
    return [helper.make_node("Sigmoid", [x], [f"{x}_sig"]), helper.make_node("Mul", [x, f"{x}_sig"], [f"{x}_act"])]


def _block(kind: str, channels: int = 24, size: int = 7) -> onnx.ModelProto:
    """1x1 expand conv -> activation -> depthwise 3x3 -> activation -> squeeze-and-excite -> 1x1 project."""
    nodes, inits = _conv("expand", "x", 8, channels, 1)
    nodes += _activation(kind, "expand")
    more, w = _conv("dw", "expand_act", channels, channels, 3, group=channels)
    nodes += more + _activation(kind, "dw")
    inits += w
    nodes.append(helper.make_node("GlobalAveragePool", ["dw_act"], ["pool"]))
    more, w = _conv("reduce", "pool", channels, 8, 1)
    nodes += more + [helper.make_node("Relu", ["reduce"], ["reduce_act"])]
    inits += w
    more, w = _conv("excite", "reduce_act", 8, channels, 1)
    nodes += more + [helper.make_node("HardSigmoid", ["excite"], ["gate"], alpha=1 / 6, beta=0.5)]
    inits += w
    nodes.append(helper.make_node("Mul", ["dw_act", "gate"], ["scaled"]))
    more, w = _conv("project", "scaled", channels, 8, 1)
    nodes += more
    inits += w
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, size, size])
    graph = helper.make_graph(nodes, "block", [x],
                              [helper.make_tensor_value_info("project", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model


@pytest.mark.parametrize("kind", ["hardswish", "silu"])
def test_block_keeps_nhwc_and_matches_onnxruntime(kind: str, tmp_path) -> None:
    model = _block(kind)
    optimized = tmp_path / "optimized.mlir"
    x = rng.standard_normal((1, 8, 7, 7)).astype(np.float32)
    with glow_mlir.compile(import_model(model), optimized_model_path=optimized) as compiled:
        [got] = compiled.run({"x": x}).values()
    text = optimized.read_text()
    # Only the graph's own boundary conversions remain: NCHW -> NHWC of the input, NHWC -> NCHW of the output.
    assert len(re.findall(r'"glow\.transpose"', text)) == 2, text
    assert len(re.findall(r'"glow\.cpu_conv_nhwc"', text)) == 5
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    [want] = session.run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def _batch_norm(name: str, x: str, channels: int) -> Nodes:
    params = [rng.uniform(0.5, 1.5, channels), rng.uniform(-0.2, 0.2, channels), rng.uniform(-0.2, 0.2, channels),
              rng.uniform(0.5, 1.5, channels)]
    names = [f"{name}_{p}" for p in ("scale", "bias", "mean", "var")]
    inits = [numpy_helper.from_array(p.astype(np.float32), n) for p, n in zip(params, names, strict=True)]
    nodes = [helper.make_node("BatchNormalization", [x, *names], [name]),
             helper.make_node("Relu", [name], [f"{name}_act"])]
    return nodes, inits


def _dense_block(layers: int) -> onnx.ModelProto:
    """A DenseNet block: every layer concatenates the block input and all earlier layers' outputs, then batch
    norm, ReLU and a convolution (3x3 and 1x1 in turn)."""
    # The block's input is a layer's output (a stem convolution here), as in DenseNet.
    nodes, inits = _conv("stem", "x", 3, 8, 3)
    more, w = _conv("f1", "stem", 8, 4, 1)
    nodes += more
    inits += w
    features = ["stem", "f1"]
    for i in range(layers):
        cat = f"cat{i}"
        nodes.append(helper.make_node("Concat", list(features), [cat], axis=1))
        more, w = _batch_norm(f"bn{i}", cat, 8 + 4 * (i + 1))
        nodes += more
        inits += w
        more, w = _conv(f"f{i + 2}", f"bn{i}_act", 8 + 4 * (i + 1), 4, 3 if i % 2 == 0 else 1)
        nodes += more
        inits += w
        features.append(f"f{i + 2}")
    nodes.append(helper.make_node("Concat", list(features), ["y"], axis=1))
    graph = helper.make_graph(nodes, "dense", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model


def test_dense_block_keeps_nhwc_and_matches_onnxruntime(tmp_path) -> None:
    """The concats and batch norms of a dense block must run on the NHWC values (each output feeds several
    concats; the batch norm's per-channel vectors are broadcast along the last dim)."""
    model = _dense_block(2)
    optimized = tmp_path / "optimized.mlir"
    x = rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
    with glow_mlir.compile(import_model(model), optimized_model_path=optimized) as compiled:
        [got] = compiled.run({"x": x}).values()
    text = optimized.read_text()
    assert len(re.findall(r'"glow\.transpose"', text)) == 2, text
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    [want] = session.run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_sink_transpose_asks_about_each_transpose_of_a_deep_dense_block_once(monkeypatch) -> None:
    """In a dense block every layer's transpose reaches those of all later layers; asked about once per path,
    a 16-layer block took exponentially many questions (DenseNet-121 compiled for over 25 minutes). Each
    question answers each transpose once, and keeps what it found for the next questions until the graph
    changes: the transposes examined stay within (layers + 2)^2 (272 at 16 layers; 2584 when every concat's
    question started afresh, and 2^16 and more once per path)."""
    layers = 16
    calls = 0
    original = sink_transpose._users_sink

    def counting(*args: object) -> bool:
        nonlocal calls
        calls += 1
        return original(*args)

    monkeypatch.setattr(sink_transpose, "_users_sink", counting)
    x = rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
    model = _dense_block(layers)
    with glow_mlir.compile(import_model(model), cache=False) as compiled:
        [got] = compiled.run({"x": x}).values()
    assert 0 < calls <= (layers + 2) ** 2, calls
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    [want] = session.run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
