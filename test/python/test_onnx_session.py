"""glow_mlir.InferenceSession (onnxruntime's API) and the glow-run command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper
from onnx_check import model, rand

from glow_mlir.errors import FeedError
from glow_mlir.session import InferenceSession


def mlp() -> onnx.ModelProto:
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1"),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("MatMul", ["r", "w2"], ["logits"], name="fc2"),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1, name="softmax"),
        helper.make_node("ArgMax", ["logits"], ["label"], axis=1, keepdims=0, name="argmax"),
    ]
    init = {"w1": rand(6, 8), "b1": rand(8), "w2": rand(8, 3)}
    return model(nodes, {"x": rand(2, 6)}, ["probs", "label"], init, opset=13)


def test_session_matches_onnxruntime() -> None:
    m = mlp()
    session = InferenceSession(m)
    reference = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    x = rand(2, 6)
    got = session.run(None, {"x": x})
    expected = reference.run(None, {"x": x})
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[1], expected[1])
    [label] = session.run(["label"], {"x": x})
    np.testing.assert_array_equal(label, expected[1])


def test_session_inputs_outputs_and_report(tmp_path: Path) -> None:
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp(), path)
    session = InferenceSession(str(path))
    [x] = session.get_inputs()
    assert (x.name, x.shape, x.type) == ("x", [2, 6], "tensor(float)")
    outputs = session.get_outputs()
    assert [(o.name, o.shape, o.type) for o in outputs] == [("probs", [2, 3], "tensor(float)"),
                                                             ("label", [2], "tensor(int64)")]
    assert session.report["arena_bytes"] >= 0
    assert session.report["compile_seconds"] > 0 and "pass_seconds" in session.report


def test_session_errors() -> None:
    with pytest.raises(ValueError, match="intra_op_num_threads=-1"):
        InferenceSession(mlp(), threads=-1)
    session = InferenceSession(mlp())
    with pytest.raises(ValueError, match="no output named 'nope'"):
        session.run(["nope"], {"x": rand(2, 6)})
    with pytest.raises(ValueError, match="'x'"):
        session.run(None, {"x": rand(3, 6)})


def test_feeding_an_initializer_recompiles_with_it_as_input() -> None:
    w = rand(3, 4)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "old",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("w", onnx.TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 4])],
        initializer=[numpy_helper.from_array(w, "w")],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    session = InferenceSession(m)
    assert [i.name for i in session.get_inputs()] == ["x"]
    assert [i.name for i in session.get_overridable_initializers()] == ["w"]
    x, other = rand(2, 3), rand(3, 4)
    np.testing.assert_allclose(session.run(None, {"x": x})[0], x @ w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(session.run(None, {"x": x, "w": other})[0], x @ other, rtol=1e-5, atol=1e-6)
    # Both variants stay compiled.
    np.testing.assert_allclose(session.run(None, {"x": x})[0], x @ w, rtol=1e-5, atol=1e-6)
    # Before IR version 4 every initializer is listed as an input (opset 7/8 exports): none is overridable, and
    # a feed of one is refused, as onnxruntime refuses it.
    m.ir_version = 3
    session = InferenceSession(m)
    assert [i.name for i in session.get_inputs()] == ["x"] and session.get_overridable_initializers() == []
    with pytest.raises(FeedError, match="input 'w': expected no such input"):
        session.run(None, {"x": x, "w": other})


def test_session_static_inputs() -> None:
    m = model([helper.make_node("Reshape", ["x", "shape"], ["y"])], {"x": rand(2, 6), "shape": np.zeros(2, np.int64)},
              ["y"])
    session = InferenceSession(m, static_inputs={"shape": np.array([3, 4], np.int64)})
    x = rand(2, 6)
    np.testing.assert_array_equal(session.run(None, {"x": x})[0], x.reshape(3, 4))


# glow-run.

GLOW_RUN = [sys.executable, "-m", "glow_mlir.tools.glow_run"]


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GLOW_RUN, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def test_glow_run_random_inputs_compare_and_timing(tmp_path: Path) -> None:
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp(), path)
    result = run_cli(str(path), "--random-inputs", "--compare-onnxruntime", "--iterations", "3")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "probs: float32[2, 3]" in out and "label: int64[2]" in out
    assert "difference to onnxruntime" in out and "probs: max abs" in out
    assert "compile time" in out and "median" in out and "3 run(s)" in out
    assert "glow-irgen" in result.stderr and "compiled in" in result.stderr
    # Every reported difference is small.
    diffs = [float(line.split("max abs")[1].split()[0]) for line in out.splitlines() if "max abs" in line]
    assert diffs and max(diffs) < 1e-4


def test_glow_run_input_files_and_dump_ir(tmp_path: Path) -> None:
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp(), path)
    x_path = tmp_path / "x.npy"
    np.save(x_path, rand(2, 6))
    result = run_cli(str(path), "--input", f"x={x_path}", "--dump-ir", "glow-lower", "--ir-file",
                     str(tmp_path / "lowered.mlir"))
    assert result.returncode == 0, result.stderr
    lowered = (tmp_path / "lowered.mlir").read_text()
    assert "func.func" in lowered and "glow." in lowered and "outputs:" not in lowered
    # The file is MLIR glow-opt reads back.
    again = subprocess.run([sys.executable, "-m", "glow_mlir.tools.glow_opt", str(tmp_path / "lowered.mlir"),
                            "--pass-pipeline=builtin.module(glow-verify)"], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    imported = run_cli(str(path), "--input", f"x={x_path}", "--dump-ir", "import", cwd=tmp_path)
    assert "glow.fully_connected" in (tmp_path / "mlp.import.mlir").read_text()
    assert "wrote the IR after import to mlp.import.mlir" in imported.stderr


def test_glow_run_reads_onnx_test_data_and_checks_inputs_before_compiling(tmp_path: Path) -> None:
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp(), path)
    x = rand(2, 6)
    onnx.save_tensor(numpy_helper.from_array(x, "x"), tmp_path / "input_0.pb")
    result = run_cli(str(path), "--input", f"x={tmp_path / 'input_0.pb'}")
    assert result.returncode == 0, result.stderr
    np.save(tmp_path / "x64.npy", x.astype(np.float64))
    wrong = run_cli(str(path), "--input", f"x={tmp_path / 'x64.npy'}")
    assert wrong.returncode == 1 and "importing" in wrong.stderr and "compiling" not in wrong.stderr
    assert "--input x: the model takes float32[2, 6], the file holds float64[2, 6]" in wrong.stderr
    np.save(tmp_path / "x35.npy", rand(3, 5))
    shape = run_cli(str(path), "--input", f"x={tmp_path / 'x35.npy'}")
    assert shape.returncode == 1 and "compiling" not in shape.stderr and "input 'x': dim 0 is 2" in shape.stderr


def test_missing_external_data_is_one_line_naming_the_file(tmp_path: Path) -> None:
    m = mlp()
    onnx.save(m, tmp_path / "big.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
              location="weights.bin", size_threshold=0)
    (tmp_path / "weights.bin").unlink()
    result = run_cli(str(tmp_path / "big.onnx"), "--random-inputs")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    [line] = [x for x in result.stderr.splitlines() if x.startswith("glow-run: error:")]
    assert "weights.bin" in line


def test_glow_run_unsupported_model_is_a_clean_error(tmp_path: Path) -> None:
    nodes = [helper.make_node("Custom", ["x"], ["a"], name="custom", domain="com.example"),
             helper.make_node("MaxRoiPool", ["x", "x"], ["b"], name="pool", pooled_shape=[2, 2])]  # fmt: skip
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [3, 3])],
                              [helper.make_tensor_value_info("a", onnx.TensorProto.FLOAT, None)])
    path = tmp_path / "bad.onnx"
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)]
    onnx.save(helper.make_model(graph, opset_imports=opsets, ir_version=8), path)
    result = run_cli(str(path), "--random-inputs")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "glow-run: error:" in result.stderr
    assert "com.example.Custom" in result.stderr and "MaxRoiPool" in result.stderr


def test_glow_run_runs_a_model_with_data_dependent_ops_in_stages(tmp_path: Path) -> None:
    nodes = [helper.make_node("NonZero", ["x"], ["nz"]), helper.make_node("Transpose", ["nz"], ["idx"], perm=[1, 0]),
             helper.make_node("GatherND", ["x", "idx"], ["vals"])]  # fmt: skip
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [3, 3])],
                              [helper.make_tensor_value_info("vals", onnx.TensorProto.FLOAT, None)])
    path = tmp_path / "masked.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    result = run_cli(str(path), "--random-inputs", "--compare-onnxruntime", "--stats")
    assert result.returncode == 0, result.stderr
    assert "vals: float32[9]" in result.stdout and "vals: max abs 0 " in result.stdout
    assert "stage 2:" in result.stdout
    # --profile: a table per compiled stage (the prefix computes NonZero's bounded form, the suffix the gather).
    profiled = run_cli(str(path), "--random-inputs", "--profile", "--iterations", "3")
    assert profiled.returncode == 0, profiled.stderr
    assert "compiled stage 1 (x -> " in profiled.stdout and "compiled stage 2 (" in profiled.stdout
    assert profiled.stdout.count("profile: 3 run(s)") == 2, profiled.stdout
    refused = run_cli(str(path), "--random-inputs", "--graph", str(tmp_path / "g.svg"))
    assert refused.returncode == 1 and "--graph: the model's shapes depend on run-time values" in refused.stderr


@pytest.mark.parametrize("args,message", [
    (["--iterations", "0"], "--iterations"),
    (["--dump-ir", "nowhere"], "no stage 'nowhere'"),
    ([], "is not given"),
    (["--input", "y=missing.npy"], "cannot read"),
])
def test_glow_run_usage_errors(tmp_path: Path, args: list[str], message: str) -> None:
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp(), path)
    result = run_cli(str(path), *args)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and message in result.stderr


def test_glow_run_malformed_file(tmp_path: Path) -> None:
    path = tmp_path / "truncated.onnx"
    path.write_bytes(mlp().SerializeToString()[:50])
    result = run_cli(str(path), "--random-inputs")
    assert result.returncode == 1 and "Traceback" not in result.stderr and "glow-run: error:" in result.stderr


def test_glow_run_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "glow-run"
    result = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "MODEL" in result.stdout.upper()
