"""Models with symbolic input dims (dynamic axes): InferenceSession compiles one specialization per concrete
input shape (frontends/onnx/signature.py), import_model takes `shapes=`, glow-run takes `--shape`."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper
from onnx_check import IR_VERSION, rand
from torch import nn

import glow_mlir
from glow_mlir.errors import DynamicShapeError, FeedError
from glow_mlir.frontends.onnx import import_model
from glow_mlir.session import InferenceSession


def dynamic_mlp() -> onnx.ModelProto:
    """x[batch, 6] -> Gemm -> Relu -> Softmax, batch symbolic."""
    nodes = [
        helper.make_node("Gemm", ["x", "w", "b"], ["h"], name="fc", transB=1),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("Softmax", ["r"], ["y"], axis=-1, name="softmax"),
    ]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor("w", TensorProto.FLOAT, [4, 6], rand(4, 6).ravel()),
         helper.make_tensor("b", TensorProto.FLOAT, [4], rand(4))],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=IR_VERSION)


def shared_dims() -> onnx.ModelProto:
    """a[batch, seq] + b[batch, seq], then reshaped through its own Shape (the exporters' shape subgraph)."""
    nodes = [
        helper.make_node("Add", ["a", "b"], ["s"], name="add"),
        helper.make_node("Shape", ["s"], ["shape"], name="shape"),
        helper.make_node("Constant", [], ["minus_one"], name="c",
                         value=helper.make_tensor("v", TensorProto.INT64, [1], [-1])),
        helper.make_node("Reshape", ["s", "minus_one"], ["flat"], name="flatten"),
        helper.make_node("Reshape", ["flat", "shape"], ["y"], name="restore"),
    ]
    graph = helper.make_graph(
        nodes, "shared",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["batch", "seq"]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, ["batch", "seq"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq"])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=IR_VERSION)


def test_get_inputs_reports_symbolic_dims_as_onnxruntime() -> None:
    m = dynamic_mlp()
    session = InferenceSession(m)
    reference = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    assert [(i.name, i.shape, i.type) for i in session.get_inputs()] == [
        (i.name, i.shape, i.type) for i in reference.get_inputs()] == [("x", ["batch", 6], "tensor(float)")]
    assert [(o.name, o.shape) for o in session.get_outputs()] == [("y", ["batch", 4])]
    assert session.compiled_shapes() == [] and session.report == {}


def test_one_specialization_per_shape_reused_later() -> None:
    m = dynamic_mlp()
    session = InferenceSession(m)
    reference = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    for batch in (1, 3, 7, 3, 1):
        x = rand(batch, 6)
        [got] = session.run(None, {"x": x})
        [expected] = reference.run(None, {"x": x})
        assert got.shape == (batch, 4)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    # Three distinct shapes, least recently used first: 7, then 3, then 1.
    assert session.compiled_shapes() == [{"x": (7, 6)}, {"x": (3, 6)}, {"x": (1, 6)}]
    assert session.report["arena_bytes"] >= 0


def test_least_recently_used_specialization_is_evicted() -> None:
    session = InferenceSession(dynamic_mlp(), max_specializations=2)
    for batch in (1, 2, 1, 3):
        session.run(None, {"x": rand(batch, 6)})
    assert session.compiled_shapes() == [{"x": (1, 6)}, {"x": (3, 6)}]
    with pytest.raises(ValueError, match="max_specializations"):
        InferenceSession(dynamic_mlp(), max_specializations=0)


def test_shapes_precompile_and_names_fill_the_other_inputs() -> None:
    m = shared_dims()
    session = InferenceSession(m, shapes=[{"a": (2, 5)}, {"a": (1, 3), "b": (1, 3)}])
    assert session.compiled_shapes() == [{"a": (2, 5), "b": (2, 5)}, {"a": (1, 3), "b": (1, 3)}]
    a, b = rand(2, 5), rand(2, 5)
    [y] = session.run(None, {"a": a, "b": b})
    np.testing.assert_allclose(y, a + b, rtol=1e-6)
    assert len(session.compiled_shapes()) == 2


def test_feed_contradicting_the_model_names_input_and_dim() -> None:
    session = InferenceSession(shared_dims())
    with pytest.raises(FeedError, match=r"input 'b': dim 1 \('seq'\) is 4, but input 'a' dim 1 \('seq'\) is 3"):
        session.run(None, {"a": rand(2, 3), "b": rand(2, 4)})
    with pytest.raises(FeedError, match=r"input 'a': expected rank 2 float32\[batch, seq\], got shape \[6\]"):
        session.run(None, {"a": rand(6), "b": rand(6)})
    with pytest.raises(FeedError, match="input 'b' float32\\[batch, seq\\] is not given"):
        session.run(None, {"a": rand(2, 3)})
    with pytest.raises(FeedError, match="no input named 'c'"):
        session.run(None, {"a": rand(2, 3), "b": rand(2, 3), "c": rand(1)})
    mlp = InferenceSession(dynamic_mlp())
    with pytest.raises(FeedError, match=r"input 'x': dim 1 is 6 in the model, got 5"):
        mlp.run(None, {"x": rand(2, 5)})
    with pytest.raises(FeedError, match="input 'x': expected float32"):
        mlp.run(None, {"x": rand(2, 6).astype(np.float64)})
    assert mlp.compiled_shapes() == [{"x": (2, 6)}]


def test_import_model_takes_shapes() -> None:
    m = dynamic_mlp()
    with pytest.raises(DynamicShapeError, match="dimension 0 is 'batch'.*shapes="):
        import_model(m)
    compiled = glow_mlir.compile(import_model(m, shapes={"x": (5, 6)}))
    assert compiled.inputs["x"].shape == (5, 6)
    with pytest.raises(FeedError, match="no input named 'x'"):
        import_model(shared_dims(), shapes={"a": (1, 2), "x": (3,)})
    with pytest.raises(FeedError, match="input 'b': dim 0 is 'other_batch'"):
        import_model(_drop_names(shared_dims()), shapes={"a": (1, 2)})


def _drop_names(m: onnx.ModelProto) -> onnx.ModelProto:
    """b's dims renamed, so that a's shape no longer decides it."""
    m = onnx.ModelProto.FromString(m.SerializeToString())
    for d in m.graph.input[1].type.tensor_type.shape.dim:
        d.dim_param = "other_" + d.dim_param
    return m


class SelfAttention(nn.Module):
    """One attention head block whose reshapes read the input's shape, as transformers' code does."""

    def __init__(self, hidden: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)
        self.norm = nn.LayerNorm(hidden)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        batch, seq, hidden = x.shape
        q, k, v = self.qkv(x).split(hidden, dim=-1)
        q, k, v = (t.reshape(batch, seq, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-1, -2) / (hidden // self.heads) ** 0.5 + (1.0 - mask[:, None, None, :]) * -1e4
        context = scores.softmax(-1) @ v
        return self.norm(x + self.out(context.transpose(1, 2).reshape(batch, seq, hidden)))


def test_torch_export_with_dynamic_axes_at_three_shapes(tmp_path: Path) -> None:
    torch.manual_seed(0)
    path = tmp_path / "attention.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            SelfAttention().eval(), (torch.randn(1, 8, 32), torch.ones(1, 8)), str(path),
            input_names=["x", "mask"], output_names=["y"], opset_version=17, dynamo=False,
            dynamic_axes={"x": {0: "batch", 1: "seq"}, "mask": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}},
        )
    session = InferenceSession(str(path))
    assert [i.shape for i in session.get_inputs()] == [["batch", "seq", 32], ["batch", "seq"]]
    reference = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for batch, seq in ((1, 8), (2, 5), (3, 16)):
        feeds = {"x": rand(batch, seq, 32), "mask": (rand(batch, seq) > -0.5).astype(np.float32)}
        [got] = session.run(None, feeds)
        [expected] = reference.run(None, feeds)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    assert len(session.compiled_shapes()) == 3


def test_specialization_comes_from_the_disk_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GLOW_MLIR_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("GLOW_MLIR_CACHE", "1")
    m = dynamic_mlp()
    first = InferenceSession(m, shapes={"x": (4, 6)})
    if first.report["cache"] != "stored":
        pytest.skip(f"no C compiler to link cache entries: {first.report['cache']}")
    second = InferenceSession(m)
    x = rand(4, 6)
    np.testing.assert_array_equal(second.run(None, {"x": x})[0], first.run(None, {"x": x})[0])
    assert second.report["cache"] == "hit"


def test_glow_run_shape_flag(tmp_path: Path) -> None:
    path = tmp_path / "mlp.onnx"
    onnx.save(dynamic_mlp(), path)
    run = [sys.executable, "-m", "glow_mlir.tools.glow_run", str(path), "--random-inputs"]
    done = subprocess.run([*run, "--shape", "x=3x6", "--compare-onnxruntime"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "y: float32[3, 4]" in done.stdout
    refused = subprocess.run(run, capture_output=True, text=True)
    assert refused.returncode == 1
    assert "glow-run: error: input 'x': dim 0 is 'batch'" in refused.stderr
    bad = subprocess.run([*run, "--shape", "x=3by6"], capture_output=True, text=True)
    assert bad.returncode == 1 and "--shape expects NAME=DIMxDIMx" in bad.stderr
