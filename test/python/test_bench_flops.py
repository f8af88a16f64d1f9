"""bench/flops.py's MAC counts against the hand counts in its docstring, in a fresh process from the repository's
root: importing `bench` pins the BLAS and OpenMP thread counts of the process (bench/__init__.py), which must not
leak into the other tests (and `bench` is importable from the root only)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# bert_s64 is transformers' export: onnx's shape inference leaves the embeddings' batch dimension unknown, so its
# count goes through the symbolic fallback.
CHECK = """
from bench import flops, models
hand = {"mlp": 535_040, "lenet": 416_520, "bert": 6_422_528, "bert_s64": 104_857_600}
counted = {name: flops.count_macs(models.onnx_path(name)) for name in hand}
assert counted == hand, counted
"""


def test_hand_counts() -> None:
    result = subprocess.run([sys.executable, "-c", CHECK], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
