"""glow-fuse-activations on SiLU and HardSwish (glow_mlir/passes/graph/activation_regions.py): the fused bodies
against their float64 definitions through the JIT, and convolutions and linear layers followed by them as
PyTorch exports them, fused into the producer, through the importer and the whole pipeline against
onnxruntime."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import helper
from onnx_check import model

from glow_mlir import runtime
from glow_mlir.builder import Graph
from glow_mlir.frontends.onnx import import_model
from glow_mlir.passes.graph.activation_regions import hard_swish_reference, silu_reference

RNG = np.random.default_rng(11)


@pytest.mark.parametrize(("activation", "reference"), [("silu", silu_reference), ("hard_swish", hard_swish_reference)])
def test_bodies_match_the_definition(activation: str, reference: object) -> None:
    """The JIT's vectorized body within 1e-6 (relative, or absolute near 0) of the float64 definition from -100
    to 100, at the kinks and the extremes (the product with the identity keeps each value)."""
    x = np.concatenate([np.linspace(-100.0, 100.0, 4000), [-3.0, 3.0, -3e38, 3e38, 0.0, -0.0, 1e-30]])
    x = x.astype(np.float32)
    x = np.concatenate([x, np.zeros(-len(x) % 16, np.float32)]).reshape(-1, 16)
    g = Graph(activation)
    inp = g.input("x", x.shape)
    g.output("y", g.fused_matmul(inp, np.eye(16, dtype=np.float32), np.zeros(16, np.float32), activation))
    with runtime.compile(g) as compiled:
        got = compiled.run({"x": x})["y"].astype(np.float64)
    want = reference(x.astype(np.float64))  # type: ignore[operator]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def _silu(source: str, out: str) -> list:
    return [helper.make_node("Sigmoid", [source], ["sig"]), helper.make_node("Mul", [source, "sig"], [out])]


@pytest.mark.parametrize("activation", ["silu", "hard_swish"])
@pytest.mark.parametrize("producer", ["conv", "depthwise", "linear", "projection"])
def test_fused_into_the_producer(producer: str, activation: str) -> None:
    """Conv (dense or depthwise), MatMul + Add or a MatMul alone (SwiGLU's bias-free gate), then SiLU (Sigmoid
    and Mul) or HardSwish: one fused op with the activation, no sigmoid or clamp left, outputs within 1e-5 of
    onnxruntime's."""
    if producer in ("linear", "projection"):
        x = RNG.standard_normal((2, 5, 24)).astype(np.float32) * 3
        weights = {"w": (RNG.standard_normal((24, 40)) / 5).astype(np.float32)}
        nodes = [helper.make_node("MatMul", ["x", "w"], ["m" if producer == "linear" else "p"])]
        if producer == "linear":
            weights["b"] = RNG.standard_normal(40).astype(np.float32)
            nodes.append(helper.make_node("Add", ["m", "b"], ["p"]))
    else:
        c, group = (16, 16) if producer == "depthwise" else (8, 1)
        x = RNG.standard_normal((1, c, 11, 9)).astype(np.float32) * 3
        weights = {"w": (RNG.standard_normal((16, c // group, 3, 3)) / 4).astype(np.float32),
                   "b": RNG.standard_normal(16).astype(np.float32)}  # fmt: skip
        nodes = [helper.make_node("Conv", ["x", "w", "b"], ["p"], pads=[1, 1, 1, 1], group=group)]
    nodes += _silu("p", "y") if activation == "silu" else [helper.make_node("HardSwish", ["p"], ["y"])]
    onnx_model = model(nodes, {"x": x}, ["y"], weights)
    with runtime.compile(import_model(onnx_model), keep_ir=True) as compiled:
        got = compiled.run({"x": x})["y"]
        graph = compiled.ir("glow-fuse-activations")
    [want] = onnxruntime.InferenceSession(onnx_model.SerializeToString()).run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert f'activation = "{activation}"' in graph
    assert not any(name in graph for name in ("glow.sigmoid", "glow.max", "glow.min"))
