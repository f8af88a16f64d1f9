"""Multi-threaded generated code (glow-cpu-parallelize, docs/THREADS.md): the same bits for every thread count,
one session run from several Python threads at once, and the options that choose the count."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

from glow_mlir import InferenceSession, SessionOptions, compile
from glow_mlir.backends.cpu import openmp, parallel
from glow_mlir.frontends.onnx import import_model
from glow_mlir.pipeline.runner import COMPILE_PIPELINE
from glow_mlir.tools import glow_run

pytestmark = pytest.mark.skipif(openmp.runtime_library() is None, reason="intel-openmp is not installed")


def cnn() -> onnx.ModelProto:
    """Convolutions (3x3, strided, 1x1 and depthwise), a max pool, a residual add and a Gemm, large enough that
    the convolutions and the Gemm are split across threads."""
    rng = np.random.default_rng(0)

    def weight(name: str, *shape: int) -> onnx.TensorProto:
        values = rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))
        return numpy_helper.from_array(values.astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Conv", ["r2", "w3"], ["c3"], pads=[1, 1, 1, 1], group=64),
        helper.make_node("Conv", ["c3", "w4", "b4"], ["c4"]),
        helper.make_node("Add", ["c4", "r2"], ["s"]),
        helper.make_node("MaxPool", ["s"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "wg", "bg"], ["y"], transB=1),
    ]
    initializers = [
        weight("w1", 32, 16, 3, 3), weight("b1", 32), weight("w2", 64, 32, 3, 3), weight("b2", 64),
        weight("w3", 64, 1, 3, 3), weight("w4", 64, 64, 1, 1), weight("b4", 64),
        weight("wg", 100, 64 * 8 * 8), weight("bg", 100),
    ]  # fmt: skip
    graph = helper.make_graph(
        nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 100])], initializers,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def image(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((1, 16, 32, 32)).astype(np.float32)


def test_outputs_are_bitwise_identical_for_1_2_and_3_threads() -> None:
    model = cnn()
    x = image(1)
    outputs = {}
    for threads in (1, 2, 3):
        with compile(import_model(model), cache=False, keep_ir=True, threads=threads) as compiled:
            outputs[threads] = compiled.run({"x": x})["y"]
            assert compiled.report["threads"] == threads
            if threads > 1:
                # The test means something only if kernels did run on several threads.
                text = compiled.ir(parallel.PASS_NAME)
                assert text.count("omp.parallel") >= 3
                assert f"llvm.mlir.constant({threads} : i32)" in text
    np.testing.assert_array_equal(outputs[2], outputs[1])
    np.testing.assert_array_equal(outputs[3], outputs[1])
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    [expected] = session.run(None, {"x": x})
    np.testing.assert_allclose(outputs[1], expected, rtol=1e-4, atol=1e-4)


def test_one_thread_is_the_single_threaded_pipeline() -> None:
    assert parallel.with_threads(COMPILE_PIPELINE, 1) == COMPILE_PIPELINE
    threaded = parallel.with_threads(COMPILE_PIPELINE, 4)
    at = threaded.index("glow-cpu-parallelize{threads=4}")
    assert threaded[at - 1] == parallel.SCHEDULE_STAGE and len(threaded) == len(COMPILE_PIPELINE) + 1
    with compile(import_model(cnn()), cache=False, keep_ir=True) as compiled:
        assert parallel.PASS_NAME not in [name for name, _ in compiled.report["pass_seconds"]]
        assert "omp." not in compiled.ir("glow-to-llvm")


def test_one_session_runs_from_4_python_threads() -> None:
    session = InferenceSession(cnn().SerializeToString(), threads=2)
    inputs = [image(seed) for seed in range(8)]
    expected = [session.run(None, {"x": x})[0] for x in inputs]
    failures: list[str] = []
    start = threading.Barrier(4)

    def work(worker: int) -> None:
        start.wait()
        for round in range(12):
            k = (worker + round) % len(inputs)
            [got] = session.run(None, {"x": inputs[k]})
            if not np.array_equal(got, expected[k]):
                failures.append(f"worker {worker} round {round}: input {k} differs")

    workers = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert failures == []
    # Runs overlapped, each with an arena of its own: the model holds more than one run slot now.
    compiled = session._default
    assert compiled is not None and len(compiled._free) > 1


def test_the_generated_code_runs_without_the_gil() -> None:
    """Another Python thread runs while the generated code does. With a switch interval far longer than the
    test, the main thread gives up the GIL only where it blocks or a C call releases it, and the counter thread
    only counts while it holds the GIL: a count that moves across `run` was made during the call."""
    compiled = compile(import_model(cnn()), cache=False, threads=1)
    x = image(0)
    ticks = 0
    done = threading.Event()

    def count() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            time.sleep(0)  # releases the GIL, so that the main thread gets it back at once

    interval = sys.getswitchinterval()
    sys.setswitchinterval(100.0)
    counter = threading.Thread(target=count)
    counter.start()
    try:
        # A short run on a loaded machine may end before the counter thread is scheduled on a core: try for up
        # to 10 s (the count never moves across a call that keeps the GIL, however long the test tries).
        moved, deadline = 0, time.monotonic() + 10.0
        while not moved and time.monotonic() < deadline:
            before = ticks
            compiled.run({"x": x})
            moved += ticks != before
    finally:
        done.set()
        counter.join()
        sys.setswitchinterval(interval)
        compiled.close()
    assert moved > 0


def test_the_thread_count_comes_from_the_options() -> None:
    options = SessionOptions()
    options.intra_op_num_threads = 3
    assert InferenceSession(cnn().SerializeToString(), options).report["threads"] == 3
    # threads= wins over the options, as before.
    assert InferenceSession(cnn().SerializeToString(), options, threads=1).report["threads"] == 1
    # 0, the default, is the physical cores.
    assert InferenceSession(cnn().SerializeToString()).report["threads"] == openmp.physical_cores()


def test_glow_run_threads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cnn.onnx"
    onnx.save(cnn(), path)
    assert glow_run.main([str(path), "--random-inputs", "--threads", "2", "--stats"]) == 0
    assert glow_run.main([str(path), "--random-inputs", "--threads", "-1"]) != 0
    assert "--threads -1" in capsys.readouterr().err


def test_the_threads_benchmark_runs(tmp_path: Path) -> None:
    """bench/threads.py as the user runs it (a fresh process: the bench package pins the libraries' threads
    before numpy loads), on LeNet-5 with one short block: it checks its own outputs, no timing is asserted."""
    root = Path(__file__).resolve().parents[4]
    out = tmp_path / "threads.json"
    command = [sys.executable, "-m", "bench.threads", "--models", "lenet", "--blocks", "1", "--block-seconds",
               "0.05", "--idle", "0", "--json", str(out)]  # fmt: skip
    result = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    [row] = json.loads(out.read_text())
    assert row["model"] == "lenet" and row["bitwise_across_threads"] and row["close_to_onnxruntime"], row
    assert {"glow_ms_1", "glow_ms_2", "ort_ms_1", "ort_ms_2", "glow_scaling_1_2", "ort_over_glow_2"} <= set(row)
    assert "| lenet |" in result.stdout


@pytest.mark.parametrize(
    ("c", "f", "size", "k", "split"),
    [
        # A 5x5 64 -> 64 on 56x56 (a 3x3 one is the Winograd kernel's, whose loops split: test_winograd.py):
        # its 2 channel tiles balance perfectly, as do its 56 rows, but every thread would read all of the input
        # for 2 tiles; the kernel's rows (56 x 4 pixel tiles) split instead.
        (64, 64, 56, 5, '{dims = ["d1 of 1x56x56x32", "d2 of 1x56x56x32"], trips = array<i64: 56, 4>}'),
        # A 5x5 512 -> 512 on 7x7: 26 MiB of weights outweigh the input; the 16 channel tiles split.
        (512, 512, 7, 5, '{dims = ["d3 of 1x7x7x512"], trips = array<i64: 16>}'),
    ],
)
def test_split_prices_arithmetic_and_bytes(c: int, f: int, size: int, k: int, split: str) -> None:
    """A convolution's channel-tile loop or its kernel's rows: the split whose busiest thread finishes first,
    its share of the arithmetic plus its bytes (parallel._kernel_split_pays), not the more even one outright."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((f, c, k, k)) / np.sqrt(k * k * c)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(f).astype(np.float32), "b")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k, k], pads=[k // 2] * 4),
             helper.make_node("Relu", ["c"], ["y"])]  # fmt: skip
    graph = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, size, size])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w, b])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    with compile(import_model(model), threads=2, keep_ir=True) as compiled:
        splits = compiled.ir(parallel.PASS_NAME)
    assert f"{parallel.SPLIT_ATTR} = {split}" in splits, splits
