"""Models split at data-dependent ops (frontends/onnx/stages.py): the split itself, and sessions running the stages
against onnxruntime, counts of zero included."""

from __future__ import annotations

import io
import json
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
from glow_mlir.errors import UnsupportedModelError
from glow_mlir.frontends.onnx import import_model
from glow_mlir.frontends.onnx.loading import load
from glow_mlir.frontends.onnx.registry import GLOW_DOMAIN
from glow_mlir.frontends.onnx.stages import COUNT, PADDED, split


def _model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto], outputs: list[str],
           initializers: dict[str, np.ndarray] | None = None, opset: int = 17) -> onnx.ModelProto:  # fmt: skip
    graph = helper.make_graph(nodes, "staged", inputs, [helper.make_empty_tensor_value_info(o) for o in outputs],
                              [numpy_helper.from_array(v, k) for k, v in (initializers or {}).items()])  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _masked_sum() -> onnx.ModelProto:
    """x -> the values of x where relu(x) - 0.5 > 0 (NonZero, GatherND), their doubled sum, and exp(x), which
    does not depend on the NonZero."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Sub", ["r", "half"], ["s"]),
        helper.make_node("NonZero", ["s_pos"], ["nz"]),
        helper.make_node("Relu", ["s"], ["s_pos"]),
        helper.make_node("Transpose", ["nz"], ["idx"], perm=[1, 0]),
        helper.make_node("GatherND", ["x", "idx"], ["vals"]),
        helper.make_node("Mul", ["vals", "two"], ["doubled"]),
        helper.make_node("ReduceSum", ["doubled"], ["total"], keepdims=1),
        helper.make_node("Exp", ["x"], ["ex"]),
    ]
    nodes[2], nodes[3] = nodes[3], nodes[2]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                  ["total", "ex", "vals", "nz"],
                  {"half": np.array(0.5, np.float32), "two": np.array(2, np.float32)})  # fmt: skip


def _compare(model: onnx.ModelProto, feeds: list[dict[str, np.ndarray]],
             **session: object) -> glow_mlir.InferenceSession:  # fmt: skip
    """Runs `model` on each feed in a glow session and in onnxruntime; outputs equal in shape and value."""
    glow = glow_mlir.InferenceSession(model.SerializeToString(), **session)
    ort = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for feed in feeds:
        got, want = glow.run(None, feed), ort.run(None, feed)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    return glow


def test_split_cuts_at_the_first_run_time_nonzero() -> None:
    parts = split(load(_masked_sum()), {})
    assert parts is not None and parts.suffix is not None
    [cut] = parts.cuts
    bounded = [n for n in parts.prefix.graph.node if n.domain == GLOW_DOMAIN]
    assert [n.op_type for n in bounded] == ["NonZeroBounded"]
    assert list(bounded[0].output) == [f"nz{PADDED}", f"{cut.node}{COUNT}"]
    # Exp does not depend on the NonZero: the prefix computes it; the suffix reads the cut result and x.
    assert "Exp" in [n.op_type for n in parts.prefix.graph.node]
    assert sorted(n.op_type for n in parts.suffix.graph.node) == ["GatherND", "Mul", "ReduceSum", "Transpose"]
    assert parts.passed == ("x",) and [i.name for i in parts.suffix.graph.input][-1] == "nz"
    assert split(load(_model([helper.make_node("Relu", ["x"], ["y"])],
                             [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])], ["y"])), {}) is None


def test_session_runs_the_stages_per_count() -> None:
    rng = np.random.default_rng(0)
    feeds = [{"x": (rng.standard_normal((3, 4)) * scale).astype(np.float32)} for scale in (0.1, 2.0, 3.0, 2.0)]
    session = _compare(_masked_sum(), feeds)
    # The first feed keeps nothing (count 0: empty results, nothing computed on them); one suffix per count.
    assert session.run(["vals"], feeds[0])[0].shape == (0,)
    suffix = session._stages[1]  # noqa: SLF001  (the stage sessions are the split's own)
    assert suffix is not None and len(suffix.compiled_shapes()) == len({int((np.maximum(f["x"], 0) > 0.5).sum())
                                                                        for f in feeds})  # fmt: skip


def test_the_data_dependent_result_as_the_output() -> None:
    model = _model([helper.make_node("NonZero", ["x"], ["y"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])], ["y"])  # fmt: skip
    assert split(load(model), {}).suffix is None
    _compare(model, [{"x": np.array([[1, 0, 2], [0, 0, 3]], np.float32)}, {"x": np.zeros((2, 3), np.float32)}])


def test_nested_data_dependent_ops_split_again() -> None:
    """The second NonZero reads the first one's gathered values: the suffix is split in turn."""
    nodes = [
        helper.make_node("NonZero", ["x"], ["nz"]),
        helper.make_node("Transpose", ["nz"], ["idx"], perm=[1, 0]),
        helper.make_node("GatherND", ["x", "idx"], ["vals"]),
        helper.make_node("Greater", ["vals", "zero"], ["positive"]),
        helper.make_node("NonZero", ["positive"], ["kept"]),
        helper.make_node("Squeeze", ["kept", "axes"], ["kept_flat"]),
        helper.make_node("Gather", ["vals", "kept_flat"], ["out"]),
    ]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 5])], ["out"],
                   {"zero": np.array(0, np.float32), "axes": np.array([0], np.int64)})  # fmt: skip
    parts = split(load(model), {})
    assert parts is not None and parts.suffix is not None and split(load(parts.suffix), {}) is not None
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    x[rng.random((4, 5)) < 0.4] = 0
    _compare(model, [{"x": x}, {"x": -np.abs(x)}, {"x": np.abs(x)}])


def test_compile_time_values_of_the_prefix_are_copied_into_the_suffix() -> None:
    """The suffix reshapes by a shape the prefix computes from x's Shape: it must know it at compile time."""
    nodes = [
        helper.make_node("NonZero", ["x"], ["nz"]),
        helper.make_node("Shape", ["x"], ["xs"]),
        helper.make_node("Gather", ["xs", "zero"], ["rows"]),
        helper.make_node("Unsqueeze", ["rows", "axes"], ["rows1"]),
        helper.make_node("Concat", ["rows1", "minus1"], ["target"], axis=0),
        helper.make_node("Cast", ["nz"], ["nzf"], to=TensorProto.FLOAT),
        helper.make_node("Reshape", ["nzf", "target"], ["out"]),
    ]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6])], ["out"],
                   {"zero": np.array(0, np.int64), "axes": np.array([0], np.int64),
                    "minus1": np.array([-1], np.int64)})  # fmt: skip
    x = np.array([[1, 0, 2, 0, 3, 4], [0, 5, 0, 6, 0, 7]], np.float32)
    _compare(model, [{"x": x}, {"x": np.ones((2, 6), np.float32)}])


def test_a_subgraph_reading_a_data_dependent_value() -> None:
    """An If in the suffix whose branch reads the NonZero's result from the outer scope."""
    then = helper.make_graph([helper.make_node("Identity", ["nz"], ["branch"])], "then", [],
                             [helper.make_tensor_value_info("branch", TensorProto.INT64, None)])  # fmt: skip
    other = helper.make_graph([helper.make_node("Neg", ["nz"], ["branch"])], "else", [],
                              [helper.make_tensor_value_info("branch", TensorProto.INT64, None)])  # fmt: skip
    nodes = [helper.make_node("NonZero", ["x"], ["nz"]),
             helper.make_node("If", ["flag"], ["out"], then_branch=then, else_branch=other)]  # fmt: skip
    flag = helper.make_tensor_value_info("flag", TensorProto.BOOL, [])
    flag.type.tensor_type.shape.SetInParent()  # rank 0 (an empty dim list alone leaves the shape unset)
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5]), flag], ["out"])
    x = np.array([0, 1, 0, 2, 3], np.float32)
    _compare(model, [{"x": x, "flag": np.array(True)}, {"x": x, "flag": np.array(False)}])


def test_a_node_listing_fewer_results_than_its_op_has() -> None:
    """Unique with its values only (torch.unique's dynamo export): the bounded form's count still follows all
    four of Unique's results."""
    model = _model([helper.make_node("Unique", ["x"], ["values"], sorted=1)],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])], ["values"])  # fmt: skip
    parts = split(load(model), {})
    assert parts is not None and len([o for o in parts.prefix.graph.node[0].output]) == 5
    _compare(model, [{"x": np.array([3, 1, 3, 2, 1, 3], np.float32)}, {"x": np.ones(6, np.float32)}])


def test_a_model_with_dynamic_axes_and_a_nonzero() -> None:
    nodes = [helper.make_node("NonZero", ["x"], ["nz"]), helper.make_node("Transpose", ["nz"], ["idx"], perm=[1, 0]),
             helper.make_node("GatherND", ["x", "idx"], ["vals"])]  # fmt: skip
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])], ["vals"])
    rng = np.random.default_rng(2)
    feeds = []
    for rows in (1, 4, 4):
        x = rng.standard_normal((rows, 3)).astype(np.float32)
        x[x < 0] = 0
        feeds.append({"x": x})
    session = _compare(model, feeds)
    assert session.get_inputs()[0].shape == ["batch", 3]


def test_compile_refuses_a_run_time_nonzero_and_names_the_stages() -> None:
    with pytest.raises(UnsupportedModelError, match="InferenceSession runs such a model in stages"):
        import_model(_masked_sum())


class _Masked(torch.nn.Module):
    """Boolean mask indexing, as PyTorch users write it (NonZero, GatherND in the export)."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = x.relu() * 2
        kept = y[y > 0.5]
        return kept.sum(0, keepdim=True) + kept.shape[0], kept


class _TopKByCount(torch.nn.Module):
    """TopK whose K is counted from the values (the positive ones, largest first)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.flatten().topk((x > 0).sum())[0]


class _Unique(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        values, inverse, counts = x.unique(return_inverse=True, return_counts=True)
        return values * 2, inverse, counts


@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
@pytest.mark.parametrize("module", [_Masked, _TopKByCount, _Unique], ids=lambda m: m.__name__.strip("_"))
def test_torch_exports_with_data_dependent_shapes(module: type, dynamo: bool) -> None:
    """Both exporters: TorchScript at opset 17, dynamo at its own (it lists only the Unique results used)."""
    if dynamo:
        model = torch.onnx.export(module(), (torch.randn(4, 5),), dynamo=True, verbose=False).model_proto
    else:
        buffer = io.BytesIO()
        torch.onnx.export(module(), (torch.randn(4, 5),), buffer, opset_version=17, dynamo=False)
        model = onnx.load_from_string(buffer.getvalue())
    rng = np.random.default_rng(3)
    feeds = [{model.graph.input[0].name: np.round(rng.standard_normal((4, 5)) * 2).astype(np.float32) / 2 - shift}
             for shift in (0.0, 0.0, 10.0)]  # fmt: skip
    _compare(model, feeds)


def test_a_split_session_reports_and_profiles_its_stages(tmp_path: object) -> None:
    options = glow_mlir.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(tmp_path) + "/staged"
    session = glow_mlir.InferenceSession(_masked_sum().SerializeToString(), options)
    session.run(None, {"x": np.full((3, 4), 2.0, np.float32)})
    assert len(session.report["stages"]) == 2 and session.compiled_shapes() == []
    assert session.end_profiling().startswith(str(tmp_path) + "/staged")


def _detector() -> onnx.ModelProto:
    """A detection head's post-processing as exporters write it: per-anchor boxes and class scores (a 1x1
    convolution's), NonMaxSuppression per class, then the kept boxes, scores and classes gathered by the selected
    (batch, class, box) triples."""
    rng = np.random.default_rng(4)
    anchors, classes = 64, 3
    nodes = [
        helper.make_node("Conv", ["features", "w"], ["head"]),  # [1, 4 + classes, 8, 8]
        helper.make_node("Reshape", ["head", "flat"], ["rows"]),  # [1, 4 + classes, anchors]
        helper.make_node("Split", ["rows", "split"], ["box_rows", "logits"], axis=1),
        helper.make_node("Transpose", ["box_rows"], ["boxes"], perm=[0, 2, 1]),  # [1, anchors, 4]
        helper.make_node("Sigmoid", ["logits"], ["scores"]),  # [1, classes, anchors]
        helper.make_node("NonMaxSuppression", ["boxes", "scores", "most", "iou", "least"], ["selected"]),
        helper.make_node("Gather", ["selected", "one"], ["class_of"], axis=1),
        helper.make_node("Gather", ["selected", "two"], ["box_of"], axis=1),
        helper.make_node("Gather", ["boxes", "box_of"], ["kept_boxes"], axis=1),
        helper.make_node("GatherND", ["scores", "selected"], ["kept_scores"]),
    ]
    initializers = {
        "w": rng.standard_normal((4 + classes, 16, 1, 1)).astype(np.float32) * 0.5,
        "flat": np.array([1, 4 + classes, anchors], np.int64), "split": np.array([4, classes], np.int64),
        "most": np.array([5], np.int64), "iou": np.array([0.3], np.float32), "least": np.array([0.6], np.float32),
        "one": np.array(1, np.int64), "two": np.array(2, np.int64),
    }
    return _model(nodes, [helper.make_tensor_value_info("features", TensorProto.FLOAT, [1, 16, 8, 8])],
                  ["kept_boxes", "kept_scores", "class_of"], initializers)  # fmt: skip


def test_a_detector_with_non_max_suppression() -> None:
    rng = np.random.default_rng(5)
    feeds = [{"features": rng.standard_normal((1, 16, 8, 8)).astype(np.float32) * scale} for scale in (1.0, 2.0)]
    # Every score below the threshold: no box kept, three empty outputs.
    feeds.append({"features": np.zeros((1, 16, 8, 8), np.float32)})
    session = _compare(_detector(), feeds)
    assert [a.shape for a in session.run(None, feeds[-1])] == [(1, 0, 4), (0,), (0,)]


@pytest.mark.parametrize("elem", [TensorProto.BFLOAT16, TensorProto.FLOAT8E4M3FN, TensorProto.INT4])
def test_nonzero_of_narrow_element_types(elem: int) -> None:
    """The mask of bfloat16, float8 and int4 values is taken in float32, which holds each exactly."""
    model = _model([helper.make_node("NonZero", ["x"], ["y"])], [helper.make_tensor_value_info("x", elem, [2, 5])],
                   ["y"])  # fmt: skip
    dt = onnx.helper.tensor_dtype_to_np_dtype(elem)
    x = np.array([[0, 1, 0, 2, 3], [0, 0, 4, 0, 5]], np.float32).astype(dt)
    [got] = glow_mlir.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    np.testing.assert_array_equal(got, np.array(np.nonzero(x.astype(np.float32))))


def test_a_specialization_with_only_empty_outputs_is_kept_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counts of zero again and again: the specialization that computes nothing is imported once."""
    imports = []
    real = glow_mlir.session.import_loaded
    monkeypatch.setattr(glow_mlir.session, "import_loaded", lambda *a, **k: imports.append(1) or real(*a, **k))
    model = _model([helper.make_node("NonZero", ["x"], ["nz"]), helper.make_node("Transpose", ["nz"], ["y"],
                                                                                  perm=[1, 0])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])], ["y"])  # fmt: skip
    session = glow_mlir.InferenceSession(model.SerializeToString())
    suffix = session._stages[1]  # noqa: SLF001  (the stage sessions are the split's own)
    assert suffix is not None
    before = len(imports)
    for _ in range(3):
        assert session.run(None, {"x": np.zeros(4, np.float32)})[0].shape == (0, 1)
    assert suffix.compiled_shapes() == [{"nz": (1, 0)}] and len(imports) == before + 1


def _detector_tail(boxes_static: bool) -> onnx.ModelProto:
    """torchvision's batched NMS as its detectors export it: If(no box left, then none kept, else
    NonMaxSuppression), on boxes of a count the data decides (the scores above 0.5: NonZero) or a fixed one,
    then the kept boxes gathered. The If's condition is a shape's, known once the count is."""
    empty_keep = helper.make_graph(
        [helper.make_node("Constant", [], ["none"], value=numpy_helper.from_array(np.zeros([0], np.int64)))],
        "then", [], [helper.make_tensor_value_info("none", TensorProto.INT64, [0])])  # fmt: skip
    nms = helper.make_graph([
        helper.make_node("Unsqueeze", ["cand", "zero"], ["b3"]),
        helper.make_node("Unsqueeze", ["cand_s", "zero01"], ["s3"]),
        helper.make_node("NonMaxSuppression", ["b3", "s3", "max_out", "iou"], ["sel"]),
        helper.make_node("Gather", ["sel", "two"], ["idx"], axis=1),
    ], "else", [], [helper.make_tensor_value_info("idx", TensorProto.INT64, None)])  # fmt: skip
    nodes = []
    if boxes_static:
        nodes += [helper.make_node("Identity", ["boxes"], ["cand"]), helper.make_node("Identity", ["scores"], ["cand_s"])]
    else:
        nodes += [
            helper.make_node("Greater", ["scores", "half"], ["mask"]),
            helper.make_node("NonZero", ["mask"], ["nz"]),
            helper.make_node("Squeeze", ["nz", "zero"], ["picked"]),
            helper.make_node("Gather", ["boxes", "picked"], ["cand"], axis=0),
            helper.make_node("Gather", ["scores", "picked"], ["cand_s"], axis=0),
        ]
    nodes += [
        helper.make_node("Shape", ["cand"], ["dims"]),
        helper.make_node("ReduceProd", ["dims"], ["size"], keepdims=0),
        helper.make_node("Equal", ["size", "zero_i"], ["empty"]),
        helper.make_node("If", ["empty"], ["keep"], then_branch=empty_keep, else_branch=nms),
        helper.make_node("Gather", ["cand", "keep"], ["kept"], axis=0),
    ]
    initializers = {
        "half": np.array(0.5, np.float32), "zero": np.array([0], np.int64), "zero01": np.array([0, 1], np.int64),
        "max_out": np.array([10], np.int64), "iou": np.array([0.5], np.float32), "two": np.array(2, np.int64),
        "zero_i": np.array(0, np.int64),
    }  # fmt: skip
    inputs = [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [6, 4]),
              helper.make_tensor_value_info("scores", TensorProto.FLOAT, [6])]  # fmt: skip
    return _model(nodes, inputs, ["kept"], initializers)


def _boxes(seed: int) -> np.ndarray:
    corners = np.random.default_rng(seed).uniform(0, 10, (6, 2)).astype(np.float32)
    return np.concatenate([corners, corners + 3], axis=1)


@pytest.mark.parametrize("boxes_static", [False, True])
def test_an_if_whose_taken_branch_holds_non_max_suppression(boxes_static: bool) -> None:
    """The import takes the If's branch by the boxes' count; the session inlines that branch and splits at the
    NonMaxSuppression in it: no box above the threshold (the then branch), some, all."""
    scores = [np.float32([0.9, 0.1, 0.8, 0.7, 0.2, 0.95]), np.full(6, 0.1, np.float32), np.full(6, 0.9, np.float32)]
    _compare(_detector_tail(boxes_static), [{"boxes": _boxes(k), "scores": s} for k, s in enumerate(scores)])


def test_a_taken_branch_split_is_profiled_and_its_trace_written(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The session that runs the inlined branch in stages profiles them: profiled_models() lists both stages'
    models with their runs, and end_profiling() writes their traces too."""
    monkeypatch.chdir(tmp_path)
    options = glow_mlir.SessionOptions()
    options.enable_profiling = True
    session = glow_mlir.InferenceSession(_detector_tail(True).SerializeToString(), options)
    session.run(None, {"boxes": _boxes(0), "scores": np.float32([0.9, 0.1, 0.8, 0.7, 0.2, 0.95])})
    models = session.profiled_models()
    assert len(models) == 2 and all(len(m.runs) == 1 for m in models)
    session.end_profiling()
    # The session's own (it compiled no model: the branch's session did) and one per stage of the branch's
    # session, ending in the same millisecond more often than not: each file keeps a name of its own.
    traces = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    assert len(traces) == 3
    assert any(e["cat"] == "Node" and "NonMaxSuppression" in e["args"]["nodes"][0] for t in traces for e in t)


def test_glow_run_runs_a_model_with_non_max_suppression_in_a_taken_branch(tmp_path: Path) -> None:
    path = tmp_path / "detector.onnx"
    onnx.save(_detector_tail(True), path)
    command = [sys.executable, "-m", "glow_mlir.tools.glow_run", str(path), "--random-inputs", "--compare-onnxruntime"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "kept: max abs 0 " in result.stdout and "runs in stages" in result.stderr
