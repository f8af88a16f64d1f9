"""An If whose condition the model computes at run time and whose branches hold costly ops (stages.COSTLY) is cut
at its condition, so that each run computes the taken branch only (an early-exit network); cheap branches and
conditions fed as graph inputs keep the import's select of both branches. Each against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

import glow_mlir
from glow_mlir.frontends.onnx.loading import load
from glow_mlir.frontends.onnx.stages import split

RNG = np.random.default_rng(0)
W = {k: RNG.standard_normal(s).astype(np.float32) for k, s in
     (("w0", (8, 16)), ("w1", (16, 4)), ("w2", (16, 16)), ("w3", (16, 4)))}


def _branch(name: str, nodes: list[onnx.NodeProto], out: str) -> onnx.GraphProto:
    return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(out, TensorProto.FLOAT, [1, 4])])


def _early_exit(costly: bool = True, cond_input: bool = False) -> onnx.ModelProto:
    """h = x @ w0; if max(h) > thr: h @ w1 (an early exit), else relu(h @ w2) @ w3. Without `costly` the
    branches are elementwise; with `cond_input` the condition is a graph input."""
    if costly:
        then = _branch("exit", [helper.make_node("MatMul", ["h", "w1"], ["a"])], "a")
        other = _branch("deeper", [helper.make_node("MatMul", ["h", "w2"], ["b0"]),
                                   helper.make_node("Relu", ["b0"], ["b1"]),
                                   helper.make_node("MatMul", ["b1", "w3"], ["b"])], "b")  # fmt: skip
    else:
        then = _branch("exit", [helper.make_node("Slice", ["h", "s0", "s1", "ax"], ["a"])], "a")
        other = _branch("deeper", [helper.make_node("Slice", ["h", "s1", "s2", "ax"], ["b0"]),
                                   helper.make_node("Relu", ["b0"], ["b"])], "b")  # fmt: skip
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["h"])]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])]
    if cond_input:
        inputs.append(helper.make_tensor_value_info("cond", TensorProto.BOOL, []))
    else:
        nodes += [helper.make_node("ReduceMax", ["h"], ["m"], keepdims=0),
                  helper.make_node("Greater", ["m", "thr"], ["cond"])]  # fmt: skip
        inputs.append(helper.make_tensor_value_info("thr", TensorProto.FLOAT, []))
    nodes.append(helper.make_node("If", ["cond"], ["y"], then_branch=then, else_branch=other, name="exit_if"))
    consts = {**W, "s0": np.array([0]), "s1": np.array([4]), "s2": np.array([8]), "ax": np.array([1])}
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])]
    graph = helper.make_graph(nodes, "early_exit", inputs, outputs,
                              [numpy_helper.from_array(v, k) for k, v in consts.items()])  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _feeds(cond_input: bool) -> list[dict[str, np.ndarray]]:
    x = RNG.standard_normal((1, 8)).astype(np.float32)
    if cond_input:
        return [{"x": x, "cond": np.array(v)} for v in (True, False, True)]
    return [{"x": x, "thr": np.array(t, np.float32)} for t in (-1e9, 1e9, -1e9, 1e9)]


def _compare(model: onnx.ModelProto, feeds: list[dict[str, np.ndarray]]) -> None:
    glow = glow_mlir.InferenceSession(model.SerializeToString(), threads=1)
    ort = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for feed in feeds:
        [got], [want] = glow.run(None, feed), ort.run(None, feed)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_an_if_on_a_computed_condition_with_costly_branches_is_cut_at_it() -> None:
    """The If opens the suffix, compiled per value of its condition; the prefix computes h and the condition
    (before the cut, both branches' matmuls ran on every run and a select kept one)."""
    model = _early_exit()
    parts = split(load(model), {})
    assert parts is not None and parts.suffix is not None
    assert [n.op_type for n in parts.suffix.graph.node] == ["If"]
    assert "If" not in [n.op_type for n in parts.prefix.graph.node]
    assert parts.by_value == ("cond",)
    _compare(model, _feeds(cond_input=False))


def test_cheap_branches_and_input_conditions_keep_the_select() -> None:
    for model, cond_input in ((_early_exit(costly=False), False), (_early_exit(cond_input=True), True)):
        assert split(load(model), {}) is None
        _compare(model, _feeds(cond_input))
