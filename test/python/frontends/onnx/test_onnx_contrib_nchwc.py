"""onnxruntime's NCHWc ops (frontends/onnx/contrib_nchwc.py): small networks saved by an onnxruntime session at
its ORT_ENABLE_ALL level (a SessionOptions' default), whose convolutions and pools it rewrote for MLAS's blocked
layout, against onnxruntime running the original model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

import glow_mlir
from glow_mlir.frontends.onnx import import_model
from glow_mlir.frontends.onnx.contrib_nchwc import NCHWC_DOMAIN

rng = np.random.default_rng(0)


def _saved(nodes: list[onnx.NodeProto], shape: list[int], weights: dict[str, np.ndarray],
           folder: Path) -> tuple[onnx.ModelProto, onnx.ModelProto]:  # fmt: skip
    """(the model, onnxruntime's save of it at ORT_ENABLE_ALL)."""
    graph = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, n) for n, w in weights.items()])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    options = ort.SessionOptions()
    options.optimized_model_filepath = str(folder / "saved.onnx")
    ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return model, onnx.load(folder / "saved.onnx")


def _check(nodes: list[onnx.NodeProto], shape: list[int], weights: dict[str, np.ndarray], folder: Path,
           expected: set[str]) -> None:  # fmt: skip
    model, saved = _saved(nodes, shape, weights, folder)
    ops = {n.op_type for n in saved.graph.node if n.domain == NCHWC_DOMAIN}
    assert expected <= ops, ops
    x = rng.standard_normal(shape).astype(np.float32)
    [want] = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    with glow_mlir.compile(import_model(saved)) as compiled:
        np.testing.assert_allclose(compiled.run({"x": x})["y"], want, rtol=1e-4, atol=1e-4)


def w(*dims: int) -> np.ndarray:
    return (rng.standard_normal(dims) / np.sqrt(np.prod(dims[1:]))).astype(np.float32)


@pytest.mark.parametrize("channels", [32, 40])  # 40: padded to the block, the filters' dims padded too
def test_convolutions(tmp_path, channels: int) -> None:  # noqa: ANN001
    """A first layer on 3 NCHW channels (OIHWBo), a depthwise layer (OIHWBo, group padded), a 1x1 layer on the
    blocked channels (OIHWBiBo) with a bias, their fused ReLUs, and a ReorderOutput of 20 channels."""
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["a"], pads=[1] * 4, strides=[2, 2]),
             helper.make_node("Relu", ["a"], ["ar"]),
             helper.make_node("Conv", ["ar", "wd"], ["d"], pads=[1] * 4, group=channels),
             helper.make_node("Clip", ["d", "lo", "hi"], ["dc"]),
             helper.make_node("Conv", ["dc", "w2", "b2"], ["y"])]  # fmt: skip
    weights = {"w1": w(channels, 3, 3, 3), "b1": w(channels), "wd": w(channels, 1, 3, 3), "w2": w(20, channels, 1, 1),
               "b2": w(20), "lo": np.array(0, np.float32), "hi": np.array(6, np.float32)}  # fmt: skip
    _check(nodes, [1, 3, 16, 16], weights, tmp_path, {"Conv", "ReorderOutput"})


def test_grouped_residual_and_pools(tmp_path) -> None:  # noqa: ANN001
    """A grouped 3x3 layer (2 groups of 16), a 1x1 layer whose residual add and ReLU onnxruntime fuses (Sum),
    max and average pools, a global average pool."""
    nodes = [helper.make_node("Conv", ["x", "wa"], ["a"], pads=[1] * 4), helper.make_node("Relu", ["a"], ["ar"]),
             helper.make_node("Conv", ["ar", "wg"], ["g"], pads=[1] * 4, group=2),
             helper.make_node("Conv", ["g", "wb", "bb"], ["c"]), helper.make_node("Add", ["c", "ar"], ["s"]),
             helper.make_node("Relu", ["s"], ["sr"]),
             helper.make_node("MaxPool", ["sr"], ["mp"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("AveragePool", ["mp"], ["ap"], kernel_shape=[3, 3], pads=[1] * 4, count_include_pad=0),
             helper.make_node("GlobalAveragePool", ["ap"], ["y"])]  # fmt: skip
    weights = {"wa": w(32, 3, 3, 3), "wg": w(32, 16, 3, 3), "wb": w(32, 32, 1, 1), "bb": w(32)}
    _check(nodes, [1, 3, 12, 12], weights, tmp_path, {"Conv", "MaxPool", "AveragePool", "GlobalAveragePool"})


def test_reorder_input(tmp_path) -> None:  # noqa: ANN001
    """A 1x1 layer on a graph input of 24 channels: ReorderInput pads them to the block."""
    nodes = [helper.make_node("Conv", ["x", "w1"], ["y"], pads=[1] * 4, kernel_shape=[3, 3])]
    _check(nodes, [1, 24, 9, 9], {"w1": w(40, 24, 3, 3)}, tmp_path, {"Conv", "ReorderInput", "ReorderOutput"})


@pytest.mark.parametrize("activation", ["HardSwish", "Sigmoid", "LeakyRelu"])
def test_fused_activations(tmp_path, activation: str) -> None:  # noqa: ANN001
    """Each activation onnxruntime fuses into an NCHWc Conv (MobileNetV3's and LeViT's HardSwish)."""
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["a"], pads=[1] * 4), helper.make_node(activation, ["a"], ["h"]),
             helper.make_node("Conv", ["h", "w2"], ["y"])]  # fmt: skip
    weights = {"w1": w(16, 3, 3, 3), "b1": w(16), "w2": w(16, 16, 1, 1)}
    _, saved = _saved(nodes, [1, 3, 8, 8], weights, tmp_path)
    [first] = [n for n in saved.graph.node if n.domain == NCHWC_DOMAIN and n.input[0] == "x"]
    assert helper.get_attribute_value(next(a for a in first.attribute if a.name == "activation")) == activation.encode()
    _check(nodes, [1, 3, 8, 8], weights, tmp_path, {"Conv"})


def test_global_max_pool(tmp_path) -> None:  # noqa: ANN001
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1] * 4), helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("GlobalMaxPool", ["r"], ["y"])]  # fmt: skip
    _check(nodes, [1, 3, 8, 8], {"w1": w(16, 3, 3, 3)}, tmp_path, {"Conv", "GlobalMaxPool"})


def test_channels_last_reorders(tmp_path) -> None:  # noqa: ANN001
    """An NHWC input transposed into a layer, and its output transposed back: onnxruntime folds both transposes
    into the reorders (channels_last=1)."""
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 3, 1, 2]),
             helper.make_node("Conv", ["t", "w1"], ["a"], pads=[1] * 4), helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("Transpose", ["r"], ["y"], perm=[0, 2, 3, 1])]  # fmt: skip
    _, saved = _saved(nodes, [1, 9, 9, 24], {"w1": w(40, 24, 3, 3)}, tmp_path)
    layouts = {n.op_type: helper.get_attribute_value(a) for n in saved.graph.node if n.domain == NCHWC_DOMAIN
               for a in n.attribute if a.name == "channels_last"}  # fmt: skip
    assert layouts == {"ReorderInput": 1, "ReorderOutput": 1}, layouts
    _check(nodes, [1, 9, 9, 24], {"w1": w(40, 24, 3, 3)}, tmp_path, {"Conv", "ReorderInput", "ReorderOutput"})
