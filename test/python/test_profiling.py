"""Per-kernel profiling (glow_mlir/profiling.py, backends/cpu/profile.py): the profiling compile variant computes
the same numbers, times every kernel once per run, at any thread count, names each after the ONNX nodes it
computes (fused ones whole), and writes onnxruntime's chrome-trace JSON; the normal variant has none of the
timing code. Also the compile report's time per stage."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import glow_mlir
from glow_mlir.backends.cpu import openmp
from glow_mlir.frontends.onnx.importer import import_model
from glow_mlir.profiling import Kernel, ProfiledModel, profile_table, summarize
from glow_mlir.runtime import STAGES
from glow_mlir.tools import glow_run

# The ONNX nodes of `_model`: a convolution whose relu fuses into it, a pool, a large matmul that takes most of
# the run, and a softmax, whose loops stay in the entry function (timed as sites of their own).
NODES = {
    "conv1": "Conv", "relu1": "Relu", "pool1": "MaxPool", "flat": "Flatten", "fc": "MatMul", "act": "Tanh",
    "sm": "Softmax",
}


def _model(path: Path) -> Path:
    rng = np.random.default_rng(0)
    weights = [
        numpy_helper.from_array(rng.standard_normal((16, 3, 3, 3)).astype(np.float32), "W"),
        numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "B"),
        numpy_helper.from_array((rng.standard_normal((16 * 16 * 16, 512)) / 64).astype(np.float32), "W2"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu1"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], name="flat"),
        helper.make_node("MatMul", ["f", "W2"], ["m"], name="fc"),
        helper.make_node("Tanh", ["m"], ["t"], name="act"),
        helper.make_node("Softmax", ["t"], ["y"], name="sm"),
    ]
    graph = helper.make_graph(
        nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 512])], weights,
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _feeds() -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype(np.float32)}


def test_the_profiling_variant_computes_the_same_and_times_every_kernel_once_per_run(tmp_path: Path) -> None:
    graph = import_model(onnx.load(_model(tmp_path / "net.onnx")))
    feeds = _feeds()
    plain = glow_mlir.compile(graph, progress=False)
    with plain, glow_mlir.compile(graph, profile=True, progress=False) as model:
        assert isinstance(model, ProfiledModel) and not isinstance(plain, ProfiledModel)
        expected = glow_mlir.interpret(graph.module, feeds)["y"]
        runs = 5
        for _ in range(runs):
            got = model.run(feeds)["y"]
            # The same kernels, only timed: bitwise the same outputs as the normal variant.
            np.testing.assert_array_equal(got, plain.run(feeds)["y"])
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
        assert len(model.runs) == runs and model.kernels
        for run in model.runs:
            ns, calls, starts = run.counters
            assert (calls == 1).all() and (ns >= 0).all()
            # Each kernel ran inside its run, and all of them took less than the run as Python saw it.
            assert ns.sum() <= run.duration_ns
            assert (starts >= run.start_ns).all() and (starts + ns <= run.start_ns + run.duration_ns).all()
        # The fused convolution lists both nodes; every node of the model is computed by some kernel.
        assert any({"conv1", "relu1"} <= set(k.nodes) for k in model.kernels)
        assert {"conv1", "relu1", "pool1", "fc", "act", "sm"} <= {n for k in model.kernels for n in k.nodes}
        rows, total_ms = summarize(model.kernels, model.runs, NODES)
        assert sum(r.calls for r in rows) == runs * len(model.kernels)
        assert 0 < sum(r.total_ms for r in rows) <= total_ms
        # 2 x 4096 x 512 multiply-adds against a few thousand elementwise ones: the matmul's kernel (its Tanh
        # fused into it) is the slowest in the median run (wall-clock times: a run preempted on this shared
        # machine is an outlier).
        medians = np.median([run.counters[0] for run in model.runs], axis=0)
        slowest = model.kernels[int(np.argmax(medians))]
        assert slowest.nodes == ("fc", "act"), profile_table(rows, total_ms, runs)
        assert np.sort(medians)[-1] > 5 * np.sort(medians)[-2], profile_table(rows, total_ms, runs)


def _threaded_model() -> onnx.ModelProto:
    """A convolution large enough to split its own rows across 2 threads, a pool, and a strided convolution with
    many channels on a small image, whose loop of channel-tile calls in the entry function splits instead."""
    rng = np.random.default_rng(3)

    def weight(name: str, *shape: int) -> onnx.TensorProto:
        values = rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))
        return numpy_helper.from_array(values.astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p", "w2", "b2"], ["y"], name="conv2", pads=[1, 1, 1, 1], strides=[2, 2]),
    ]
    graph = helper.make_graph(
        nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 256, 8, 8])],
        [weight("w1", 64, 16, 3, 3), weight("b1", 64), weight("w2", 256, 64, 3, 3), weight("b2", 256)],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.skipif(openmp.runtime_library() is None, reason="intel-openmp is not installed")
def test_a_two_thread_profile_times_every_kernel_from_the_calling_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """compile(profile=True, threads=2): the same sites as the 1-thread profile, each timed once per run around
    its fork and join (a parallel region of the entry function whole, where one thread calls its kernel once
    per channel tile), with what it splits; the outputs are bitwise those of the unprofiled 2-thread code."""
    graph = import_model(_threaded_model())
    x = np.random.default_rng(4).standard_normal((1, 16, 32, 32)).astype(np.float32)
    with (
        glow_mlir.compile(graph, threads=2, cache=False, progress=False) as plain,
        glow_mlir.compile(graph, threads=2, profile=True, cache=False, progress=False) as model,
        glow_mlir.compile(graph, profile=True, cache=False, progress=False) as single,
    ):
        assert isinstance(model, ProfiledModel) and model.report["threads"] == 2
        runs = 3
        for _ in range(runs):
            np.testing.assert_array_equal(model.run({"x": x})["y"], plain.run({"x": x})["y"])
        single.run({"x": x})
        # Every kernel of the model, named as at one thread.
        assert [(k.symbol, k.nodes) for k in model.kernels] == [(k.symbol, k.nodes) for k in single.kernels]
        assert {"conv1", "relu1", "pool1", "conv2"} <= {n for k in model.kernels for n in k.nodes}
        assert len(model.runs) == runs
        for run in model.runs:
            ns, calls, starts = run.counters
            assert (calls >= 1).all() and (ns >= 0).all() and ns.sum() <= run.duration_ns
            assert (starts >= run.start_ns).all()
        [one_thread] = single.runs
        split = [i for i, k in enumerate(model.kernels) if k.splits]
        assert split and all(not k.splits for k in single.kernels)
        for i in split:
            for s in model.kernels[i].splits:
                assert sum(s.blocks(2)) == math.prod(s.trips) and "?" not in s.dims, s
        # conv2's loop of channel-tile calls is one region: timed once per run where one thread calls its kernel
        # once per tile.
        regions = [i for i in split if one_thread.counters[1, i] > model.runs[0].counters[1, i]]
        assert [model.kernels[i].nodes for i in regions] == [("conv2",)], [model.kernels[i] for i in split]
        [region] = regions
        assert one_thread.counters[1, region] == math.prod(model.kernels[region].splits[0].trips)
        assert model.kernels[region].splits[0].dims == ("d3 of 1x8x8x256",)
    # The compile cache keeps the variants apart: profiled or not, at 1 or 2 threads.
    monkeypatch.setenv("GLOW_MLIR_CACHE", "1")
    monkeypatch.setenv("GLOW_MLIR_CACHE_DIR", str(tmp_path / "cache"))
    variants = [(2, True), (2, False), (1, True)]
    for threads, profile in variants:
        with glow_mlir.compile(graph, threads=threads, profile=profile, progress=False) as stored:
            assert stored.report["cache"] == "stored", (threads, profile)
    with glow_mlir.compile(graph, threads=2, profile=True, progress=False) as hit:
        assert hit.report["cache"] == "hit" and isinstance(hit, ProfiledModel) and hit.report["threads"] == 2
        assert [k.splits for k in hit.kernels] == [k.splits for k in model.kernels]
        np.testing.assert_array_equal(hit.run({"x": x})["y"], plain_outputs(graph, x))


def plain_outputs(graph: glow_mlir.Graph, x: np.ndarray) -> np.ndarray:
    with glow_mlir.compile(graph, threads=2, cache=False, progress=False) as model:
        return model.run({"x": x})["y"]


def test_loops_left_in_the_entry_function_are_timed_too() -> None:
    """A softmax over 10 values keeps its scf loops in the entry function (today; were it outlined, its kernels
    would name it just the same): what computes it is timed and named after it, and the outputs stay those of
    the normal variant."""
    graph = glow_mlir.Graph("small")
    graph.output("y", graph.softmax(graph.input("x", (1, 10)), name="sm"))
    x = np.random.default_rng(2).standard_normal((1, 10)).astype(np.float32)
    with glow_mlir.compile(graph, profile=True, progress=False) as model, glow_mlir.compile(graph) as plain:
        got = model.run({"x": x})["y"]
        np.testing.assert_array_equal(got, plain.run({"x": x})["y"])
        np.testing.assert_allclose(got, plain_softmax(x), rtol=1e-5, atol=1e-7)
        assert model.kernels and all(k.nodes == ("sm",) for k in model.kernels), model.kernels
        assert all(re.fullmatch(r"__glow_\w+|small:scf\.for:\d+", k.symbol) for k in model.kernels), model.kernels
        [run] = model.runs
        assert (run.counters[1] == 1).all() and run.counters[0].sum() <= run.duration_ns


def plain_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


def test_the_normal_variant_has_no_timing_code_and_the_cache_keeps_the_variants_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = import_model(onnx.load(_model(tmp_path / "net.onnx")))
    with glow_mlir.compile(graph, keep_ir=True, progress=False) as plain:
        assert "clock_gettime" not in plain.ir("glow-to-llvm") and "glow_profile" not in plain.ir("glow-to-llvm")
    with glow_mlir.compile(graph, keep_ir=True, profile=True, progress=False) as model:
        assert "llvm.call @clock_gettime" in model.ir("glow-to-llvm")
    monkeypatch.setenv("GLOW_MLIR_CACHE", "1")
    monkeypatch.setenv("GLOW_MLIR_CACHE_DIR", str(tmp_path / "cache"))
    feeds = _feeds()
    with glow_mlir.compile(graph, profile=True, progress=False) as stored:
        assert stored.report["cache"] == "stored"
    with glow_mlir.compile(graph, progress=False) as normal:
        assert normal.report["cache"] == "stored" and not isinstance(normal, ProfiledModel)
    with glow_mlir.compile(graph, profile=True, progress=False) as hit:
        assert hit.report["cache"] == "hit" and isinstance(hit, ProfiledModel)
        np.testing.assert_array_equal(hit.run(feeds)["y"], normal_outputs(graph, feeds))
        [run] = hit.runs
        assert (run.counters[1] == 1).all() and [k.symbol for k in hit.kernels] == [k.symbol for k in stored.kernels]


def normal_outputs(graph: glow_mlir.Graph, feeds: dict[str, np.ndarray]) -> np.ndarray:
    with glow_mlir.compile(graph, cache=False, progress=False) as model:
        return model.run(feeds)["y"]


def test_session_profiling_writes_onnxruntimes_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _model(tmp_path / "net.onnx")
    monkeypatch.chdir(tmp_path)
    feeds = _feeds()
    options = glow_mlir.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = "glow_trace"
    session = glow_mlir.InferenceSession(path, options)
    runs = 3
    for _ in range(runs):
        [got] = session.run(None, feeds)
    [model] = session.profiled_models()
    theirs = onnxruntime.SessionOptions()
    theirs.enable_profiling = True
    theirs.profile_file_prefix = "ort_trace"
    reference = onnxruntime.InferenceSession(str(path), theirs, providers=["CPUExecutionProvider"])
    [expected] = reference.run(None, feeds)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)

    name, ort_name = session.end_profiling(), reference.end_profiling()
    # onnxruntime's file name: the prefix, the date, time and milliseconds, .json, in the working directory.
    stamp = r"_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d_\d{3}\.json"
    assert re.fullmatch("glow_trace" + stamp, name) and re.fullmatch("ort_trace" + stamp, ort_name), (name, ort_name)
    events, ort_events = json.loads(Path(name).read_text()), json.loads(Path(ort_name).read_text())
    assert {tuple(sorted(e)) for e in events} == {tuple(sorted(e)) for e in ort_events}
    nodes = [e for e in events if e["cat"] == "Node"]
    # One event per kernel call per run (a kernel function may serve several calls: outline.py).
    assert len(nodes) == runs * len(model.kernels)
    assert {e["args"]["kernel"] for e in nodes} == {k.symbol for k in model.kernels}
    assert sum(e["name"] == "model_run" for e in events) == runs
    for event in nodes:
        assert event["name"].endswith("_kernel_time") and event["ph"] == "X" and event["dur"] >= 0
        assert set(event["args"]["nodes"]) <= set(NODES), event
        assert event["args"]["op_name"] == "+".join(NODES[n] for n in event["args"]["nodes"])
    assert any(e["name"] == "conv1+relu1_kernel_time" and e["args"]["op_name"] == "Conv+Relu" for e in nodes)
    # Ended: no second file, and later runs are not recorded.
    assert session.end_profiling() == ""
    session.run(None, feeds)
    assert sorted(p.name for p in tmp_path.glob("glow_trace_*")) == [name]


def test_the_report_times_each_compile_stage(tmp_path: Path) -> None:
    graph = import_model(onnx.load(_model(tmp_path / "net.onnx")))
    with glow_mlir.compile(graph, progress=False) as model:
        stages = model.report["stage_seconds"]
        assert list(stages) == [name for name, _ in STAGES]
        assert all(seconds > 0 for seconds in stages.values()), stages
        passes = sum(seconds for _, seconds in model.report["pass_seconds"])
        # Every pass counts toward one stage; LLVM also gets the JIT, which the compile time includes.
        assert passes < sum(stages.values()) <= model.report["compile_seconds"]


def test_glow_run_prints_the_slowest_kernels_and_the_stages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _model(tmp_path / "net.onnx")
    argv = [str(path), "--random-inputs", "--iterations", "3", "--stats", "--profile", "3"]
    assert glow_run.main(argv) == 0
    out = capsys.readouterr().out
    stages = r"import [\d.]+ s, graph passes [\d.]+ s, IR passes [\d.]+ s, schedule [\d.]+ s, LLVM [\d.]+ s"
    assert re.search(stages, out)
    table = out[out.index("profile: 3 run(s)") :].splitlines()
    assert "the 3 slowest of" in table[0]
    assert table[1].split() == ["kernel", "ONNX", "nodes", "calls", "total", "ms", "%"]
    rows = table[2:5]
    assert all(re.fullmatch(r"__glow_\w+|net:[\w.]+:\d+", row.split()[0]) for row in rows), rows
    assert table[5].strip().startswith("(outside kernels)")


def test_location_names_map_to_the_onnx_nodes_they_come_from() -> None:
    """An importer-expanded node's ops are `<node>/<k>`, weights keep their own names: only nodes are listed, once."""
    kernel = Kernel("__glow_kernel3", ("/enc/MatMul_1/2", "/enc/MatMul_1", "W2", "/enc/Add", "/enc/Add/1"))
    known = {"/enc/MatMul_1": "MatMul", "/enc/Add": "Add"}
    assert kernel.model_nodes(known) == ("/enc/MatMul_1", "/enc/Add")
    assert kernel.label(known) == "/enc/MatMul_1+/enc/Add"
    assert kernel.model_nodes() == kernel.nodes
    assert Kernel("__glow_loops_f_0", ("x",)).model_nodes(known) == ("x",)
    assert Kernel("__glow_loops_f_1", ()).label(known) == "__glow_loops_f_1"
