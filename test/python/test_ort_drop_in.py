"""Code written for onnxruntime runs unchanged on glow-mlir: the same function, given `onnxruntime` or
`glow_mlir` as its `ort` module, gives the same answers (session options, providers, metadata, named
outputs with RunOptions, profiling calls, errors for bad feeds)."""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper
from onnx_check import IR_VERSION, rand

from mlir import ir

import glow_mlir
from glow_mlir.context import make_context
from glow_mlir.pipeline.runner import GraphOptimizationLevel


def classifier(path: Path) -> str:
    """x[batch, 8] -> Gemm -> Relu -> Gemm -> (logits, Softmax probabilities), with metadata."""
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1"),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("Gemm", ["r", "w2", "b2"], ["logits"], name="fc2"),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1, name="softmax"),
    ]
    inits = [helper.make_tensor(n, TensorProto.FLOAT, a.shape, a.ravel()) for n, a in
             {"w1": rand(8, 16), "b1": rand(16), "w2": rand(16, 3), "b2": rand(3)}.items()]
    graph = helper.make_graph(
        nodes, "classifier",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 3]),
         helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 3])],
        inits, doc_string="a two-layer classifier",
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=IR_VERSION,
                              producer_name="glow-mlir tests", doc_string="for the drop-in test")
    model.model_version = 3
    helper.set_model_props(model, {"author": "tests", "license": "none"})
    onnx.save(model, path)
    return str(path)


def ort_style(ort: types.ModuleType, path: str, x: np.ndarray) -> dict[str, Any]:
    """What a user's onnxruntime code does, written once."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    meta = session.get_modelmeta()
    run_options = ort.RunOptions()
    run_options.log_severity_level = 3
    [probs] = session.run(["probs"], {"x": x}, run_options)
    outputs = session.run(None, {session.get_inputs()[0].name: x})
    errors = []
    for bad in ({"x": x[:, :5]}, {}, {"x": x.astype(np.float64)}):
        try:
            session.run(None, bad)
        except Exception as e:  # noqa: BLE001 - the kind is what is compared
            errors.append(isinstance(e, ValueError) or type(e).__name__ == "InvalidArgument")
    return {
        "available": "CPUExecutionProvider" in ort.get_available_providers(),
        "providers": session.get_providers(),
        "inputs": [(i.name, i.shape, i.type) for i in session.get_inputs()],
        "outputs": [(o.name, o.shape, o.type) for o in session.get_outputs()],
        "meta": (meta.producer_name, meta.graph_name, meta.description, meta.graph_description, meta.version,
                 meta.custom_metadata_map),
        "options": session.get_session_options().graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
        "probs": probs,
        "all": outputs,
        "errors": errors,
        "profile": session.end_profiling(),
    }


def test_onnxruntime_code_runs_unchanged(tmp_path: Path) -> None:
    path = classifier(tmp_path / "classifier.onnx")
    x = rand(4, 8)
    ours = ort_style(glow_mlir, path, x)
    theirs = ort_style(onnxruntime, path, x)
    for key in ("available", "providers", "inputs", "outputs", "meta", "options", "errors", "profile"):
        assert ours[key] == theirs[key], key
    assert ours["errors"] == [True, True, True]
    np.testing.assert_allclose(ours["probs"], theirs["probs"], rtol=1e-5, atol=1e-6)
    for got, expected in zip(ours["all"], theirs["all"], strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_onnxruntime_session_options_are_read(tmp_path: Path) -> None:
    path = classifier(tmp_path / "classifier.onnx")
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    session = glow_mlir.InferenceSession(path, options)
    assert session.get_session_options().graph_optimization_level == GraphOptimizationLevel.ORT_ENABLE_BASIC
    with pytest.raises(TypeError, match="expected a SessionOptions, got int"):
        glow_mlir.InferenceSession(path, 1)


def test_other_providers_are_skipped_with_a_warning(tmp_path: Path) -> None:
    path = classifier(tmp_path / "classifier.onnx")
    with pytest.warns(UserWarning, match="CUDAExecutionProvider is not available in glow-mlir"):
        session = glow_mlir.InferenceSession(path, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    assert session.get_providers() == ["CPUExecutionProvider"]
    assert session.get_provider_options() == {"CPUExecutionProvider": {}}
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        glow_mlir.InferenceSession(path, sesion_options=None)


@pytest.mark.parametrize("level", list(GraphOptimizationLevel))
def test_every_optimization_level_computes_the_same(tmp_path: Path, level: GraphOptimizationLevel) -> None:
    path = classifier(tmp_path / "classifier.onnx")
    options = glow_mlir.SessionOptions()
    options.graph_optimization_level = level
    options.optimized_model_filepath = str(tmp_path / "optimized.mlir")
    x = rand(2, 8)
    got = glow_mlir.InferenceSession(path, options).run(None, {"x": x})
    expected = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
    # The optimized glow module is written (the dynamic model's first run compiles it) and parses again.
    text = (tmp_path / "optimized.mlir").read_text()
    assert "glow." in text and "glow_ir." not in text
    reparsed = glow_mlir.compile(ir.Module.parse(text, context=make_context()), cache=False)
    np.testing.assert_allclose(reparsed.run({"x": x})["probs"], expected[1], rtol=1e-5, atol=1e-6)


def test_free_dimension_override_fixes_a_symbolic_dim(tmp_path: Path) -> None:
    path = classifier(tmp_path / "classifier.onnx")
    options = glow_mlir.SessionOptions()
    options.add_free_dimension_override_by_name("batch", 5)
    session = glow_mlir.InferenceSession(path, options)
    assert session.get_inputs()[0].shape == [5, 8]
    assert session.report["arena_bytes"] >= 0  # compiled at construction
    with pytest.raises(glow_mlir.FeedError, match="input 'x'"):
        session.run(None, {"x": rand(4, 8)})


def ort_profiling(ort: types.ModuleType, path: str, x: np.ndarray, folder: Path) -> list[dict[str, Any]]:
    """onnxruntime's profiling, written once: the trace end_profiling() names, read back."""
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(folder / "trace")
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    for _ in range(2):
        session.run(None, {"x": x})
    name = session.end_profiling()
    assert Path(name).name.startswith("trace_") and name.endswith(".json"), name
    return json.loads(Path(name).read_text())


def test_onnxruntime_profiling_code_runs_unchanged(tmp_path: Path) -> None:
    """Both traces are chrome-trace events of the same fields, with one model_run per run and node events
    named after the model's nodes (ours per generated kernel, which may compute several nodes; onnxruntime
    names its fused nodes "fused fc1")."""
    path = classifier(tmp_path / "classifier.onnx")
    x = rand(4, 8)
    for name, module in (("ours", glow_mlir), ("theirs", onnxruntime)):
        (tmp_path / name).mkdir()
        events = ort_profiling(module, path, x, tmp_path / name)
        assert all({"cat", "pid", "tid", "dur", "ts", "ph", "name", "args"} <= e.keys() for e in events), name
        assert sum(e["name"] == "model_run" for e in events) == 2, name
        nodes = {e["name"].removesuffix("_kernel_time") for e in events if e["cat"] == "Node"}
        assert nodes and all(any(n in node for n in ("fc1", "relu", "fc2", "softmax")) for node in nodes), nodes
