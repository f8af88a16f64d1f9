"""glow-fuse-activations on transformer layers (glow_mlir/passes/graph/activation_regions.py and the matmul rewrites
of fuse_activations.py): the f32 GELU body against math.erf through the JIT, a Linear layer on 3-D activations
(MatMul, Add) with GELU in the forms PyTorch and ONNX write it and attention's query scaling, through the
importer and the whole pipeline against onnxruntime, and the fused graph against the interpreter."""

from __future__ import annotations

import math

import numpy as np
import onnx
import onnxruntime
import pytest
from mlir import ir
from onnx import TensorProto, helper

from glow_mlir import ops, runtime
from glow_mlir.builder import Graph
from glow_mlir.context import copy_module
from glow_mlir.frontends.onnx.importer import import_model, load
from glow_mlir.interpreter import interpret
from glow_mlir.passes.graph.activation_regions import gelu_reference, gelu_tanh_reference
from glow_mlir.pipeline.runner import COMPILE_PIPELINE, run_pipeline
from glow_mlir.session import InferenceSession

RNG = np.random.default_rng(5)
GRAPH_PASSES = list(COMPILE_PIPELINE[: COMPILE_PIPELINE.index("glow-schedule")])


def _random(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def _fused(module: ir.Module) -> list[tuple[str, str]]:
    """(op, activation) of every glow.fused_matmul, and the other ops' names, of a module after the graph passes."""
    copy = copy_module(module)
    with copy.context:
        run_pipeline(copy, GRAPH_PASSES)
    return [
        (op.name, ir.StringAttr(op.attributes["activation"]).value) if op.name == "glow.fused_matmul" else (op.name, "")
        for op in ops.walk_ops(copy.operation)
    ]


@pytest.mark.parametrize(
    ("activation", "reference"), [("gelu_erf", gelu_reference), ("gelu_tanh", gelu_tanh_reference)]
)
def test_gelu_bodies_match_the_definition_over_the_f32_range(activation: str, reference: object) -> None:
    """The JIT's vectorized GELU (rational erf in f32, fastmath tanh) within 1e-6 of the float64 definition,
    from -12 to 12 and at the extremes (rows of 16: whole vectors; the product with the identity keeps them),
    computed in f32 vectors."""
    x = np.concatenate([np.linspace(-12.0, 12.0, 4000), [-3e38, 3e38, 0.0, -0.0, 1e-30]]).astype(np.float32)
    x = np.concatenate([x, np.zeros(-len(x) % 16, np.float32)]).reshape(-1, 16)
    g = Graph("gelu")
    inp = g.input("x", x.shape)
    g.output("y", g.fused_matmul(inp, np.eye(16, dtype=np.float32), np.zeros(16, np.float32), activation))
    with runtime.compile(g, keep_ir=True) as model:
        got = model.run({"x": x})["y"].astype(np.float64)
        llvm = model.ir("glow-to-llvm")
    # All in f32 vectors: no f64 erf, whose exp LLVM would call from libm one element at a time.
    assert "f64" not in llvm and "vector<16xf32>" in llvm
    want = reference(x.astype(np.float64))  # type: ignore[operator]
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-6, atol=1e-6)


def _linear_gelu_onnx(path: str, form: str, seq: int = 6, hidden: int = 16, inner: int = 32) -> None:
    """x [1, seq, hidden] -> MatMul + Add (bias) -> GELU spelled as `form` -> MatMul + Add -> + x; and a query
    projection reshaped to heads and scaled by 1/sqrt(head_dim) (a second output)."""
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["m1"]),
        helper.make_node("Add", ["b1", "m1"], ["h"]),
    ]
    if form == "erf":  # nn.GELU(): x * (1 + erf(x / sqrt 2)) * 0.5
        nodes += [
            helper.make_node("Div", ["h", "sqrt2"], ["d"]),
            helper.make_node("Erf", ["d"], ["e"]),
            helper.make_node("Add", ["e", "one"], ["e1"]),
            helper.make_node("Mul", ["h", "e1"], ["he"]),
            helper.make_node("Mul", ["he", "half"], ["a"]),
        ]
    elif form == "tanh":  # GPT-2's gelu_new: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
        nodes += [
            helper.make_node("Mul", ["half", "h"], ["hh"]),
            helper.make_node("Pow", ["h", "three"], ["c"]),
            helper.make_node("Mul", ["k", "c"], ["kc"]),
            helper.make_node("Add", ["h", "kc"], ["s"]),
            helper.make_node("Mul", ["s", "g"], ["gs"]),
            helper.make_node("Tanh", ["gs"], ["t"]),
            helper.make_node("Add", ["one", "t"], ["t1"]),
            helper.make_node("Mul", ["hh", "t1"], ["a"]),
        ]
    else:  # opset 20's Gelu op, which the importer writes as arithmetic
        nodes.append(helper.make_node("Gelu", ["h"], ["a"], approximate="tanh" if form == "onnx_tanh" else "none"))
    nodes += [
        helper.make_node("MatMul", ["a", "w2"], ["m2"]),
        helper.make_node("Add", ["m2", "b2"], ["o"]),
        helper.make_node("Add", ["o", "x"], ["y"]),
        helper.make_node("MatMul", ["x", "wq"], ["mq"]),
        helper.make_node("Add", ["mq", "bq"], ["q"]),
        helper.make_node("Reshape", ["q", "heads"], ["qh"]),
        helper.make_node("Mul", ["qh", "scale"], ["qs"]),
    ]
    scalars = {"sqrt2": math.sqrt(2.0), "one": 1.0, "half": 0.5, "three": 3.0, "k": 0.044715,
               "g": math.sqrt(2 / math.pi), "scale": 0.25}
    inits = [
        onnx.numpy_helper.from_array(_random(hidden, inner, scale=hidden**-0.5), "w1"),
        onnx.numpy_helper.from_array(_random(inner), "b1"),
        onnx.numpy_helper.from_array(_random(inner, hidden, scale=inner**-0.5), "w2"),
        onnx.numpy_helper.from_array(_random(hidden), "b2"),
        onnx.numpy_helper.from_array(_random(hidden, hidden, scale=hidden**-0.5), "wq"),
        onnx.numpy_helper.from_array(_random(hidden), "bq"),
        onnx.numpy_helper.from_array(np.array([1, seq, 4, hidden // 4], np.int64), "heads"),
        *(onnx.numpy_helper.from_array(np.array(v, np.float32), k) for k, v in scalars.items()),
    ]
    graph = helper.make_graph(
        nodes, "ffn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, hidden])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, hidden]),
         helper.make_tensor_value_info("qs", TensorProto.FLOAT, [1, seq, 4, hidden // 4])], inits,
    )
    opset = 20 if form.startswith("onnx") else 17
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=9), path)


@pytest.mark.parametrize(
    ("form", "activation"),
    [("erf", "gelu_erf"), ("tanh", "gelu_tanh"), ("onnx_erf", "gelu_erf"), ("onnx_tanh", "gelu_tanh")],
)
def test_linear_layers_fuse_bias_gelu_and_scale(tmp_path: object, form: str, activation: str) -> None:
    """Three MatMul + Add become fused_matmuls (one with the GELU, none left as erf/tanh, the query scale gone
    into its weights); the compiled model matches onnxruntime and the fused graph the interpreter."""
    path = str(tmp_path / f"ffn_{form}.onnx")  # type: ignore[operator]
    _linear_gelu_onnx(path, form)
    graph = import_model(load(path))
    found = _fused(graph.module)
    fused = sorted(kind for name, kind in found if name == "glow.fused_matmul")
    assert fused == sorted([activation, "none", "none"])
    names = [name for name, _ in found]
    assert "glow.erf" not in names and "glow.tanh" not in names and "glow.matmul" not in names
    # What is left outside the products: the residual add, and no multiply (GELU's and the query scale's).
    assert names.count("glow.add") == 1 and "glow.mul" not in names
    feeds = {"x": _random(1, 6, 16, scale=2.0)}
    expected = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    for want, have in zip(expected, InferenceSession(path).run(None, feeds), strict=True):
        np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-5)
    copy = copy_module(graph.module)
    with copy.context:
        run_pipeline(copy, GRAPH_PASSES)
    for want, have in zip(interpret(graph.module, feeds).values(), interpret(copy, feeds).values(), strict=True):
        np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-5)


def test_near_gelu_forms_are_left_alone() -> None:
    """x * 0.5 * (1 + erf(x / 2)) (a wrong constant) and a GELU whose inner value is also returned stay
    arithmetic: the region must compute GELU and nothing else may read into it."""
    for variant in ("constant", "shared"):
        g = Graph(variant)
        x = g.input("x", (4, 8))
        h = g.fused_matmul(x, _random(8, 8), _random(8))
        shape = (4, 8)
        divisor = 2.0 if variant == "constant" else math.sqrt(2.0)
        e = g.erf(g.div(h, g.splat(shape, divisor)))
        y = g.mul(g.mul(h, g.splat(shape, 0.5)), g.add(e, g.splat(shape, 1.0)))
        g.output("y", y)
        if variant == "shared":
            g.output("e", e)
        found = _fused(g.module)
        assert ("glow.fused_matmul", "none") in found and ("glow.erf", "") in found
