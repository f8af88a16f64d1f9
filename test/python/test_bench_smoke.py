"""The benchmark harness (bench/run.py) still runs: MLP and LeNet and one small GEMM with --quick.

No timing is asserted (figures from a quick run on a busy test machine mean nothing); the test checks that
the command succeeds, writes the markdown tables and the JSON, and that glow-mlir's outputs match
onnxruntime's and numpy's. It runs the harness as the user does, `python -m bench.run` in a fresh process,
because the harness must pin numpy's BLAS to one thread before numpy is first imported.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_quick_benchmark_writes_tables_and_matching_results(tmp_path: Path) -> None:
    json_path, markdown_path = tmp_path / "bench.json", tmp_path / "bench.md"
    command = [sys.executable, "-m", "bench.run", "--models", "mlp,lenet", "--gemm", "bert-ffn", "--quick"]
    result = subprocess.run(
        [*command, "--json", str(json_path), "--markdown", str(markdown_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]

    report = json.loads(json_path.read_text())
    assert [row["model"] for row in report["models"]] == ["mlp", "lenet"]
    for row in report["models"]:
        assert row["errors"] == {}, row["errors"]
        assert row["glow_vs_ort"]["match"], row["glow_vs_ort"]
        assert row["torch_vs_ort"]["match"], row["torch_vs_ort"]
        for framework in ("glow", "ort", "torch"):
            assert row[framework]["iterations"] >= 3
    [gemm] = report["gemm"]
    assert gemm["errors"] == {} and gemm["glow_vs_numpy"]["match"], gemm
    assert report["machine"]["blas_threads"] == 1 and report["machine"]["peak_gflops"] > 0

    table = markdown_path.read_text()
    assert table in result.stdout
    assert "| model | glow ms | ort ms | torch ms |" in table and "| mlp |" in table and "| lenet |" in table
    assert "| GEMM (M x N x K) |" in table and "| bert-ffn (16 x 512 x 128) |" in table
    assert "Machine: " in table


def test_broad_benchmark_writes_the_table_the_plot_and_kernel_profiles(tmp_path: Path) -> None:
    """bench/broad.py on one bench model and one zoo model: ort/glow, the cold compile time by stage, matching
    outputs, and the slowest kernels named after ONNX nodes of the model with their op types."""
    json_path, markdown_path, plot_path = tmp_path / "broad.json", tmp_path / "broad.md", tmp_path / "broad.png"
    command = [sys.executable, "-m", "bench.broad", "--models", "mlp,zoo.bert", "--quick", "--top", "2"]
    result = subprocess.run(
        [*command, "--json", str(json_path), "--markdown", str(markdown_path), "--plot", str(plot_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    report = json.loads(json_path.read_text())
    assert [row["model"] for row in report["models"]] == ["mlp", "zoo.bert"]
    for row in report["models"]:
        assert row["errors"] == {}, row["errors"]
        assert row["glow_vs_ort"]["match"] and row["ort_over_glow"] > 0 and row["compile_s"] > 0, row
        assert list(row["stage_seconds"]) == ["import", "graph passes", "IR passes", "schedule", "LLVM"]
        profile = row["profile"]
        assert profile["runs"] >= 3 and 0 < profile["in_kernels_ms"] <= profile["run_ms"]
        assert len(profile["top"]) == 2 and profile["top"][0]["ms"] >= profile["top"][1]["ms"]
        for kernel in profile["top"]:
            assert kernel["kernel"].startswith("__glow_") and kernel["nodes"] and kernel["op_types"], kernel
    # The MLP's slowest kernel is its first layer's GEMM, with the ReLU fused into it.
    assert report["models"][0]["profile"]["top"][0]["op_types"] == ["Gemm", "Relu"]
    table = markdown_path.read_text()
    assert table in result.stdout and "| mlp | bench |" in table and "| zoo.bert | zoo |" in table
    assert plot_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# Run as `python -c`: bench/threads.py's bundle runner in a process where MLIR and torch cannot be imported,
# as on a machine with neither.
WITHOUT_COMPILER = """
import importlib.abc, sys
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("mlir", "torch"):
            raise ImportError(f"{name} is not installed here")
sys.meta_path.insert(0, Refuse())
from bench import threads
sys.exit(threads.main(sys.argv[1:]))
"""


def test_threads_bundle_runs_without_the_compiler(tmp_path: Path) -> None:
    """bench/threads.py compiles a bundle here, then times it in a process that cannot import MLIR or torch:
    the libraries load from their cache folders through glow_mlir/library.py, and the weights repeat."""
    bundle, json_path = tmp_path / "bundle", tmp_path / "threads.json"
    write = [sys.executable, "-m", "bench.threads", "--models", "mlp", "--threads", "1,2", "--write-bundle", str(bundle)]
    result = subprocess.run(write, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    import numpy as np
    import onnx
    from onnx import numpy_helper

    weights = [numpy_helper.to_array(t) for t in onnx.load(bundle / "mlp" / "model.onnx").graph.initializer]
    largest = max(weights, key=lambda w: w.size).reshape(-1)
    assert np.array_equal(largest[4093 : 2 * 4093], largest[:4093]) and len(np.unique(largest[:4093])) > 1000

    run = [sys.executable, "-c", WITHOUT_COMPILER, "--bundle", str(bundle), "--blocks", "1", "--block-seconds", "0.05"]
    result = subprocess.run([*run, "--json", str(json_path)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    [row] = json.loads(json_path.read_text())
    assert row["model"] == "mlp" and row["bitwise_across_threads"] and row["close_to_onnxruntime"], row
    assert row["glow_ms_1"] > 0 and row["glow_ms_2"] > 0


def test_threads_profile_prints_per_kernel_scaling(tmp_path: Path) -> None:
    """`bench.threads --profile` on the MLP with one short block: per kernel its time at 1 and 2 threads, the time
    lost against perfect scaling (the rows sorted by it), forks and what it splits; no timing is asserted. (LeNet's
    kernels are now all too small to pay for a fork.)"""
    json_path = tmp_path / "profile.json"
    command = [sys.executable, "-m", "bench.threads", "--profile", "--models", "mlp", "--blocks", "1",
               "--block-seconds", "0.05", "--idle", "0", "--json", str(json_path)]  # fmt: skip
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    [row] = json.loads(json_path.read_text())
    assert row["model"] == "mlp" and row["bitwise_across_threads"], row
    kernels = row["kernels"]
    assert kernels and all(set(k["ms"]) == {"1", "2"} and min(k["ms"].values()) >= 0 for k in kernels)
    assert any(k["splits"]["2"] for k in kernels) and all(not k["splits"]["1"] for k in kernels)
    lines = result.stdout.splitlines()
    head = lines.index("| kernel | nodes | 1T ms | 2T ms | speedup | lost ms | forks | split (2T) |")
    rows = [line.split(" | ") for line in lines[head + 2 :] if line.startswith("| __glow")]
    assert len(rows) == len(kernels)
    lost = [float(r[5]) for r in rows]
    assert lost == sorted(lost, reverse=True)
    assert any(re.fullmatch(r"[\dx]+ \[d\d.*\] -> \d+/\d+ \|", r[-1]) for r in rows), rows
    assert any(r[-1] == "serial |" for r in rows)
    assert any(line.startswith("lost against perfect scaling:") for line in lines)


def test_convs_benchmark_times_depthwise_and_grouped_layers(tmp_path: Path) -> None:
    """bench/convs.py --quick: a depthwise layer with a channel remainder and a ResNeXt grouped layer, glow-mlir
    on the NCHW and the NHWC model against onnxruntime, the layer's kernel time, and the roofline bound of each."""
    json_path, markdown_path = tmp_path / "convs.json", tmp_path / "convs.md"
    command = [sys.executable, "-m", "bench.convs", "--quick"]
    result = subprocess.run(
        [*command, "--json", str(json_path), "--markdown", str(markdown_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    report = json.loads(json_path.read_text())
    assert [row["shape"] for row in report["shapes"]] == ["dw3x3-s1-88@28", "g32x8-3x3-s1-256>256@28"]
    for row in report["shapes"]:
        assert row["errors"] == {}, row["errors"]
        assert row["glow_vs_ort"]["match"] and row["glow_nhwc_vs_ort"]["match"], row
        # The bound is at least the FMA peak's time, so its percentage is at least the peak's (equal, up to
        # rounding, where the FMAs bound the layer).
        assert row["ort_over_glow"] > 0
        # The kernel's own time (profiled) leaves out the call from Python. The two are timed apart, so a loaded
        # machine (a test run beside this one) moves them by up to 2x: the bound catches a kernel time counted
        # over all runs, not that noise.
        assert 0 < row["kernel_ms"] <= row["glow nhwc"]["ms"] * 3
        assert 0 < row["glow_nhwc_peak_percent"] <= row["glow_nhwc_bound_percent"] * (1 + 1e-9)
        assert row["level"] in ("L1", "L2", "L3", "DRAM") and row["bandwidth_gbs"] > 0
    table = markdown_path.read_text()
    assert table in result.stdout and "| dw3x3-s1-88@28 | MobileNetV3-small block 3 |" in table


SHAPES_BY_NAME = """
import pytest
from bench import convs

assert all(convs.shape_of(name) is shape for name, shape in convs.SHAPES.items())
dw = convs.shape_of("dw5x5-s2-64@28")
assert (dw.c, dw.f, dw.group, dw.k, dw.stride, dw.size, dw.source) == (64, 64, 64, 5, 2, 28, "--shapes")
grouped = convs.shape_of("g16x8-1x1-s1-128>128@28")
assert (grouped.c, grouped.f, grouped.group, grouped.k, grouped.stride) == (128, 128, 16, 1, 1)
block = convs.shape_of("e24>dw3x3-s2-96@28")
assert (block.expansion, block.c, block.k, block.stride) == (24, 96, 3, 2)
dense = convs.shape_of("conv1x1-s1-64>20@14")
assert (dense.c, dense.f, dense.group, dense.k) == (64, 20, 1, 1)
# Odd windows pad k // 2 ("same"); even ones are patchify layers with no padding (ConvNeXt's 2x2/s2: 28 -> 14).
patchify = convs.shape_of("conv2x2-s2-384>768@28")
assert (patchify.pad, patchify.out_size, convs.shape_of("dw7x7-s1-96@56").out_size) == (0, 14, 56)
for bad in ("g16x7-1x1-s1-128>128@28", "dw3x5-s1-8@8", "resnet"):
    with pytest.raises(SystemExit, match="unknown shape"):
        convs.shape_of(bad)
"""


def test_convs_shapes_by_name() -> None:
    """bench/convs.py's --shapes takes the table's names and any other layer named as the table names its
    shapes; a name of no form is refused with the known ones. In a fresh process from the repository's root, as
    importing `bench` pins the process's thread counts (test_bench_flops.py)."""
    result = subprocess.run([sys.executable, "-c", SHAPES_BY_NAME], cwd=ROOT, capture_output=True, text=True,
                            timeout=600)  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]


def test_ab_takes_any_onnx_file(tmp_path: Path) -> None:
    """bench/ab.py compares two trees on an ONNX file outside the broad set (a model nobody tuned for): both
    compile it in child processes, its random inputs come from its declared shapes, and the outputs agree
    (the base is HEAD; the working tree may differ from it only in code that does not touch this model)."""
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np
    import onnx

    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])]
    graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])  # fmt: skip
    path, json_path = tmp_path / "tiny.onnx", tmp_path / "ab.json"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    command = [sys.executable, "-m", "bench.ab", "--base", "HEAD", "--models", str(path), "--rounds", "2",
               "--budget", "0.1", "--json", str(json_path)]  # fmt: skip
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    [row] = json.loads(json_path.read_text())["results"]
    assert row["model"] == str(path) and row["outputs_bitwise_equal"] and row["base_over_new"] > 0
    assert "tiny" in result.stdout


BENCH_COMMANDS = sorted(p.stem for p in (ROOT / "bench").glob("*.py") if "def main(" in p.read_text())


@pytest.mark.parametrize("module", BENCH_COMMANDS)
def test_every_bench_command_prints_its_help(module: str) -> None:
    """`--help` formats every option's help string: a bare % in one (bench.layers' "% of peak") made argparse
    raise a TypeError instead of printing the usage."""
    result = subprocess.run(
        [sys.executable, "-m", f"bench.{module}", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("usage:")
