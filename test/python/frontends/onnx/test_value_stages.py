"""Values that decide shapes (InferenceSession's `value_inputs`, stages.split's `needs`): a graph input that is a
Reshape's target or a Range's limit compiles per value; a model that computes such a value at run time (a length
regulator: repeats predicted from the data) runs in two stages cut before the node that needs it; a random op's
draws are run-time values. Each against onnxruntime, lengths of zero included."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

import glow_mlir
from glow_mlir.errors import FeedError, StaticInputRequired
from glow_mlir.frontends.onnx import import_model
from glow_mlir.frontends.onnx.loading import load, node_names
from glow_mlir.frontends.onnx.stages import split


def _model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto], outputs: list[str],
           initializers: dict[str, np.ndarray] | None = None) -> onnx.ModelProto:  # fmt: skip
    graph = helper.make_graph(nodes, "values", inputs, [helper.make_empty_tensor_value_info(o) for o in outputs],
                              [numpy_helper.from_array(v, k) for k, v in (initializers or {}).items()])  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _compare(model: onnx.ModelProto, feeds: list[dict[str, np.ndarray]],
             **session: object) -> glow_mlir.InferenceSession:  # fmt: skip
    """Runs `model` on each feed in a glow session and in onnxruntime; outputs equal in shape and value."""
    glow = glow_mlir.InferenceSession(model.SerializeToString(), threads=1, **session)
    ort = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for feed in feeds:
        got, want = glow.run(None, feed), ort.run(None, feed)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape)
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    return glow


def _reshape_to_input() -> onnx.ModelProto:
    """x [2, 6] reshaped to the graph input `shape`, then doubled."""
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["r"]), helper.make_node("Add", ["r", "r"], ["y"])]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6]),
                          helper.make_tensor_value_info("shape", TensorProto.INT64, [2])], ["y"])  # fmt: skip


def _length_regulator() -> onnx.ModelProto:
    """A length regulator as TTS models have: repeats = max(round(x * 2), 0) per token, total = their sum; the
    result is Range(0, total) scaled, and each output frame's token (a CumSum of the repeats compared with the
    frame positions), gathered from the token embeddings `e` [4, 3]."""
    nodes = [
        helper.make_node("Mul", ["x", "two"], ["scaled"]),
        helper.make_node("Round", ["scaled"], ["rounded"]),
        helper.make_node("Relu", ["rounded"], ["clamped"]),
        helper.make_node("Cast", ["clamped"], ["repeats"], to=TensorProto.INT64),
        helper.make_node("ReduceSum", ["repeats"], ["total"], keepdims=0),
        helper.make_node("Range", ["zero", "total", "one"], ["frames"]),
        helper.make_node("CumSum", ["repeats", "axis"], ["ends"]),
        helper.make_node("Unsqueeze", ["frames", "axis1"], ["column"]),
        helper.make_node("LessOrEqual", ["ends", "column"], ["passed"]),
        helper.make_node("Cast", ["passed"], ["passed_i"], to=TensorProto.INT64),
        helper.make_node("ReduceSum", ["passed_i", "axis1"], ["token"], keepdims=0),
        helper.make_node("Gather", ["e", "token"], ["frame_embeddings"], axis=0),
        helper.make_node("Cast", ["frames"], ["frames_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["frames_f", "two"], ["positions"]),
    ]
    initializers = {
        "two": np.array(2, np.float32), "zero": np.array(0, np.int64), "one": np.array(1, np.int64),
        "axis": np.array(0, np.int64), "axis1": np.array([1], np.int64),
    }  # fmt: skip
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
                          helper.make_tensor_value_info("e", TensorProto.FLOAT, [4, 3])],
                  ["positions", "frame_embeddings", "total"], initializers)  # fmt: skip


def test_a_graph_input_that_decides_a_shape_compiles_per_value(monkeypatch: pytest.MonkeyPatch) -> None:
    imports = []
    original = glow_mlir.session.import_loaded
    monkeypatch.setattr(glow_mlir.session, "import_loaded", lambda *a, **k: imports.append(1) or original(*a, **k))
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    shapes = [np.array(s, np.int64) for s in ([3, 4], [12, 1], [3, 4], [-1, 2])]
    session = _compare(_reshape_to_input(), [{"x": x, "shape": s} for s in shapes])
    # The first import met the Reshape and named `shape`; then one per distinct value, [3, 4] reused.
    assert len(imports) == 4
    with pytest.raises(FeedError, match="'shape' is not given"):
        session.run(None, {"x": x})
    # Bound by the caller instead, nothing is compiled per value.
    fixed = glow_mlir.InferenceSession(_reshape_to_input().SerializeToString(), threads=1,
                                       static_inputs={"shape": shapes[0]})  # fmt: skip
    np.testing.assert_array_equal(fixed.run(None, {"x": x})[0], 2 * x.reshape(3, 4))
    with pytest.raises(ValueError, match="value_inputs: no graph input named 'nope'"):
        glow_mlir.InferenceSession(_reshape_to_input().SerializeToString(), value_inputs=["nope"])


def test_split_before_a_node_that_needs_a_computed_value() -> None:
    model = load(_length_regulator())
    parts = split(model, {}, (_name_of(model, 5), "total"))  # the Range
    assert parts is not None and parts.suffix is not None and parts.by_value == ("total",)
    assert "total" in parts.carried and "total" in parts.prefix_outputs
    # The Range and everything after it run in the suffix; the repeats and their sum in the prefix.
    assert "Range" in [n.op_type for n in parts.suffix.graph.node]
    assert "ReduceSum" in [n.op_type for n in parts.prefix.graph.node]
    # Not the main graph's: no cut.
    assert split(model, {}, ("no such node", "total")) is None
    assert split(model, {}, (_name_of(model, 0), "x")) is None


def _name_of(model: onnx.ModelProto, index: int) -> str:
    """The name the importer gives node `index` of `model`'s graph."""
    return node_names(model.graph)[index]


def test_a_length_regulator_runs_in_stages_per_length() -> None:
    e = np.arange(12, dtype=np.float32).reshape(4, 3)
    # Totals 5, 0 (every output empty or a scalar), 5 again (other repeats), 9.
    xs = [[0.5, 1.0, 0.2, 0.4], [-1.0, 0.1, 0.0, -3.0], [1.1, 0.4, 0.1, 0.6], [1.0, 1.4, 0.6, 0.9]]
    session = _compare(_length_regulator(), [{"x": np.array(x, np.float32), "e": e} for x in xs])
    assert session._split is not None and session._split.by_value == ("total",)
    # compile() takes one static graph: the value is a run-time one.
    with pytest.raises(StaticInputRequired) as raised:
        import_model(_length_regulator())
    assert raised.value.value == "total" and raised.value.inputs == ["x"]


class _Regulator(torch.nn.Module):
    """Frames of `torch.arange` up to the sum of rounded, clamped durations, and the tokens repeated by them."""

    def forward(self, durations: torch.Tensor, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        repeats = torch.clamp(torch.round(durations), min=0).long()
        frames = torch.arange(repeats.sum(), dtype=torch.float32) * 0.5
        return frames, torch.repeat_interleave(tokens, repeats, dim=0)


def test_a_torch_length_regulator() -> None:
    buffer = io.BytesIO()
    durations, tokens = torch.tensor([1.2, 0.4, 2.6]), torch.arange(6, dtype=torch.float32).reshape(3, 2)
    torch.onnx.export(_Regulator(), (durations, tokens), buffer, dynamo=False, opset_version=17,
                      input_names=["durations", "tokens"])  # fmt: skip
    model = onnx.load_from_string(buffer.getvalue())
    feeds = [{"durations": np.array(d, np.float32), "tokens": tokens.numpy()}
             for d in ([1.2, 0.4, 2.6], [0.0, 0.1, 0.2], [3.0, 1.0, 1.0])]  # fmt: skip
    _compare(model, feeds)
    # The export computes the lengths at run time (4, 0 and 5 frames), not as traced.
    ort = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert [len(ort.run(None, feed)[0]) for feed in feeds] == [4, 0, 5]


def test_random_draws_are_run_time_values() -> None:
    """A NonZero of a mask drawn by RandomNormalLike over a constant tensor: the draws are never folded, so the
    model is split at the NonZero (it was refused as unsupported)."""
    nodes = [
        helper.make_node("ConstantOfShape", ["dims"], ["zeros"],
                         value=numpy_helper.from_array(np.array([0.0], np.float32))),
        helper.make_node("RandomNormalLike", ["zeros"], ["noise"], seed=3.0),
        helper.make_node("Add", ["noise", "x"], ["shifted"]),
        helper.make_node("Greater", ["shifted", "zero"], ["mask"]),
        helper.make_node("NonZero", ["mask"], ["where"]),
    ]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])], ["mask", "where"],
                   {"dims": np.array([2, 5], np.int64), "zero": np.array(0, np.float32)})  # fmt: skip
    assert split(load(model), {}) is not None
    session = glow_mlir.InferenceSession(model.SerializeToString(), threads=1)
    for x in (np.zeros((2, 5), np.float32), np.full((2, 5), -50, np.float32), np.full((2, 5), 50, np.float32)):
        mask, where = session.run(None, {"x": x})
        np.testing.assert_array_equal(where, np.array(np.nonzero(mask), np.int64))
    assert where.shape == (2, 10)


def test_glow_run_runs_a_length_regulator_in_stages(tmp_path: Path) -> None:
    path = tmp_path / "regulator.onnx"
    onnx.save(_length_regulator(), path)
    np.save(tmp_path / "x.npy", np.array([0.5, 1.0, 0.2, 0.4], np.float32))
    np.save(tmp_path / "e.npy", np.arange(12, dtype=np.float32).reshape(4, 3))
    command = [sys.executable, "-m", "glow_mlir.tools.glow_run", str(path), "--input", f"x={tmp_path / 'x.npy'}",
               "--input", f"e={tmp_path / 'e.npy'}", "--compare-onnxruntime"]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "positions: float32[4]" in result.stdout and "positions: max abs 0 " in result.stdout
    assert "runs in stages" in result.stderr


def test_the_nodes_of_one_op_that_need_computed_values_are_cut_together() -> None:
    """Two ConstantOfShapes of lengths computed from x: one split takes both (the import asked for the first)."""
    one, two = (numpy_helper.from_array(np.array([v], np.float32)) for v in (1.0, 2.0))
    nodes = [
        helper.make_node("Round", ["x"], ["rounded"]),
        helper.make_node("Relu", ["rounded"], ["clamped"]),
        helper.make_node("Cast", ["clamped"], ["lengths"], to=TensorProto.INT64),
        helper.make_node("Slice", ["lengths", "start0", "start1"], ["a"]),
        helper.make_node("Slice", ["lengths", "start1", "start2"], ["b"]),
        helper.make_node("ConstantOfShape", ["a"], ["ones"], value=one),
        helper.make_node("ConstantOfShape", ["b"], ["twos"], value=two),
        helper.make_node("Exp", ["x"], ["ex"]),
    ]
    starts = {f"start{i}": np.array([i], np.int64) for i in range(3)}
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])], ["ones", "twos", "ex"],
                   starts)  # fmt: skip
    parts = split(load(model), {}, (_name_of(model, 5), "a"))
    assert parts is not None and parts.by_value == ("a", "b")
    assert sorted(n.op_type for n in parts.suffix.graph.node) == ["ConstantOfShape", "ConstantOfShape"]
    xs = [[2.2, 3.9], [0.0, 1.0], [-2.0, -1.0]]
    session = _compare(model, [{"x": np.array(x, np.float32)} for x in xs])
    assert session._split is not None and session._split.by_value == ("a", "b")


def test_a_shape_computed_in_a_loop_body_binds_the_inputs_it_depends_on() -> None:
    """An unrolled Loop (its carried value grows from an empty one each iteration, as Mask R-CNN pastes its
    masks) whose body Expands to a length computed from the graph input `n`: the value is the body's, so no
    split reaches it; `n` is compiled per value instead. Before, the empty carried value was refused too."""
    body = helper.make_graph([
        helper.make_node("Add", ["n", "one"], ["length"]),
        helper.make_node("Expand", ["x", "length"], ["row"]),
        helper.make_node("Concat", ["grown_in", "row"], ["grown_out"], axis=0),
        helper.make_node("Identity", ["cond_in"], ["cond_out"]),
    ], "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                helper.make_tensor_value_info("grown_in", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("grown_out", TensorProto.FLOAT, None)])  # fmt: skip
    nodes = [helper.make_node("Loop", ["trips", "", "empty"], ["grown"], body=body)]
    initializers = {"trips": np.array(3, np.int64), "empty": np.zeros([0], np.float32), "one": np.array([1], np.int64)}
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1]),
                           helper.make_tensor_value_info("n", TensorProto.INT64, [1])], ["grown"], initializers)
    feeds = [{"x": np.float32([2.5]), "n": np.int64([k])} for k in (1, 4, 1)]
    session = _compare(model, feeds)
    assert session._by_value == ("n",)


def test_an_op_of_an_empty_compile_time_tensor_that_the_reference_fails_on() -> None:
    """A ConvTranspose of no box's features (Mask R-CNN's mask head with no detection, shapes known): onnx's
    reference fails on it; shape inference finds its result empty, which the Concat after it drops."""
    nodes = [
        helper.make_node("ConvTranspose", ["none", "w"], ["up_none"], strides=[2, 2]),
        helper.make_node("ConvTranspose", ["x", "w"], ["up_x"], strides=[2, 2]),
        helper.make_node("Concat", ["up_none", "up_x"], ["y"], axis=0),
    ]
    rng = np.random.default_rng(0)
    initializers = {"none": np.zeros([0, 2, 3, 3], np.float32),
                    "w": rng.standard_normal([2, 4, 2, 2]).astype(np.float32)}
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 3])], ["y"], initializers)
    _compare(model, [{"x": rng.standard_normal([1, 2, 3, 3]).astype(np.float32)}])
