"""glow-run's import stage (glow_mlir/tools/glow_run.py): the model is loaded, and shape-inferred, once."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx_check import model, rand

from glow_mlir.tools import glow_run

# More elements than inference.py's threshold: shape inference must get this weight without its data.
WEIGHT = (64, 512)


def _mlp(batch: int | str) -> onnx.ModelProto:
    """x[batch, 64] @ w[64, 512] -> Relu; `batch` a size or a symbolic dim."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"), helper.make_node("Relu", ["m"], ["y"])]
    return model(nodes, {"x": rand(2, 64)}, ["y"], {"w": rand(*WEIGHT)}, input_shapes={"x": [batch, 64]})


def _glow_run(
    path: Path, flags: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, list[onnx.ModelProto], str]:
    """glow-run's exit status on `path`, the models onnx's shape inference got, and its stderr."""
    seen: list[onnx.ModelProto] = []
    infer = onnx.shape_inference.infer_shapes

    def spy(proto: onnx.ModelProto, *args: object, **kwargs: object) -> onnx.ModelProto:
        seen.append(proto)
        return infer(proto, *args, **kwargs)

    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", spy)
    status = glow_run.main([str(path), "--random-inputs", *flags])
    return status, seen, capsys.readouterr().err


def test_a_static_model_is_shape_inferred_once_without_its_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mlp.onnx"
    onnx.save(_mlp(2), path)
    status, seen, err = _glow_run(path, [], monkeypatch, capsys)
    assert status == 0, err
    weight_bytes = 4 * int(np.prod(WEIGHT))
    assert len(seen) == 1 and seen[0].ByteSize() < weight_bytes


def test_a_dynamic_model_is_inferred_when_loaded_and_specialized_both_without_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mlp.onnx"
    onnx.save(_mlp("batch"), path)
    status, seen, err = _glow_run(path, ["--shape", "x=3x64"], monkeypatch, capsys)
    assert status == 0, err
    weight_bytes = 4 * int(np.prod(WEIGHT))
    assert len(seen) == 2 and all(proto.ByteSize() < weight_bytes for proto in seen)
    # The second is the specialization's: its input has the shape given.
    assert [d.dim_value for d in seen[1].graph.input[0].type.tensor_type.shape.dim] == [3, 64]


def test_a_bad_model_is_named_by_node_op_and_shapes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.onnx"
    # w's 65 rows do not meet x's 64 columns once x is specialized to [3, 64].
    bad = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], {"x": rand(2, 64)}, ["y"],
                {"w": rand(65, 8)}, input_shapes={"x": ["batch", 64]})
    onnx.save(bad, path)
    status, _, err = _glow_run(path, ["--shape", "x=3x64"], monkeypatch, capsys)
    assert status == 1
    assert "glow-run: error:" in err and "'mm' (MatMul)" in err and "[3, 64]" in err, err
