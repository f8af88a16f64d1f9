"""bench/layers.py, the per-class comparison of glow-mlir's kernels with onnxruntime's: the class rule on its own,
and a quick run on LeNet-5 (convolutions, max pools, an FC) as the user runs it, in a fresh process. No timing
is asserted; every class that both compute must have time on both sides, and the convolutions' FLOPs
per run their hand counts. Both run in fresh processes from the
repository's root: importing `bench` pins the BLAS and OpenMP thread counts of the process (bench/__init__.py),
which must not leak into the other tests (and `bench` is importable from the root only)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


# (filter [F, C / groups, KH, KW], input NCHW, output NCHW)
CLASSES = """
from bench.layers import conv_class
assert conv_class([64, 64, 3, 3], [1, 64, 56, 56], [1, 64, 56, 56]) == "conv 3x3/s1 -> 56x56"
assert conv_class([2048, 1024, 1, 1], [8, 1024, 14, 14], [8, 2048, 7, 7]) == "conv 1x1/s2 -> 7x7"
assert conv_class([64, 3, 7, 7], [1, 3, 224, 224], [1, 64, 112, 112]) == "conv 7x7/s2 -> 112x112"
assert conv_class([96, 1, 3, 3], [1, 96, 28, 28], [1, 96, 14, 14]) == "conv 3x3/s2 dw -> 14x14"
assert conv_class([128, 16, 3, 3], [1, 128, 7, 7], [1, 128, 7, 7]) == "conv 3x3/s1 g8 -> 7x7"

from bench.layers import merged_classes
classes = {"e": "conv 1x1/s1 -> 56x56", "d": "conv 3x3/s2 dw -> 28x28", "e2": "conv 1x1/s1 -> 28x28",
           "d2": "conv 3x3/s1 dw -> 28x28", "p": "conv 1x1/s1 -> 28x28", "r": "Relu"}
op_types = {n: "Conv" for n in classes} | {"r": "Relu"}
# An expansion + depthwise kernel joins its two classes into one row; a kernel of one product (and a Relu)
# joins nothing, but its class lands in the row of the third kernel, which joins that class with another.
merged = merged_classes([["e", "r", "d"], ["p", "r"], ["e2", "d2"]], classes, op_types)
assert merged == {"conv 1x1/s1 -> 56x56": "conv 1x1/s1 -> 56x56 + conv 3x3/s2 dw -> 28x28",
                  "conv 3x3/s2 dw -> 28x28": "conv 1x1/s1 -> 56x56 + conv 3x3/s2 dw -> 28x28",
                  "conv 1x1/s1 -> 28x28": "conv 1x1/s1 -> 28x28 + conv 3x3/s1 dw -> 28x28",
                  "conv 3x3/s1 dw -> 28x28": "conv 1x1/s1 -> 28x28 + conv 3x3/s1 dw -> 28x28"}, merged
"""


def test_conv_classes() -> None:
    result = subprocess.run([sys.executable, "-c", CLASSES], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]


def test_layers_on_lenet(tmp_path: Path) -> None:
    json_path = tmp_path / "layers.json"
    command = [sys.executable, "-m", "bench.layers", "--model", "lenet", "--seconds", "0.2", "--json", str(json_path)]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    rows = {row["class"]: row for row in json.loads(json_path.read_text())}
    convs = [name for name in rows if name.startswith("conv ")]
    assert len(convs) == 2 and "fc" in rows, rows
    for name in [*convs, "fc"]:
        assert rows[name]["ort_ms"] > 0 and rows[name]["glow_ms"] > 0, rows[name]
        assert 0 < rows[name]["peak_percent"] < 150, rows[name]
    # GFLOP/s x ms gives back each class's FLOPs per run: LeNet-5's convolutions' hand counts (bench/flops.py).
    for name, macs in (("conv 5x5/s1 -> 28x28", 117_600), ("conv 5x5/s1 -> 10x10", 240_000)):
        assert abs(rows[name]["gflops"] * rows[name]["glow_ms"] * 1e6 - 2 * macs) < 1, rows[name]
    assert "| class | ort ms | glow ms | ort/glow | GFLOP/s | % peak |" in result.stdout, result.stdout
    assert "| total |" in result.stdout and "measured peak:" in result.stdout
