"""bench/quant.py still runs, static and dynamic, and writes one table row per model: LeNet and the MLP with a
handful of inputs. No timing is asserted (a quick run on a busy machine means nothing). It runs in a fresh
process from the repository's root, as the user runs the harness: importing `bench` pins the BLAS and OpenMP
thread counts of the process (bench/__init__.py), which must not leak into the other tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

CHECK = """
from bench import quant
static = quant.bench("lenet", calibration=2, heldout=3, rounds=1, budget=0.05)
assert set(static["ms"]) == {"ort_qdq", "glow_fp32", "glow_int8", "glow_qdq"}, static["ms"]
assert set(static["top1_agreement_with_fp32"]) == {"ort_qdq", "glow_int8", "glow_qdq"}, static
dynamic = quant.bench_dynamic("mlp", heldout=3, rounds=1, budget=0.05)
assert set(dynamic["ms"]) == {"ort_dyn", "glow_fp32", "glow_dyn", "glow_ort_dyn"}, dynamic["ms"]
assert all(sqnr > 20 for sqnr in dynamic["sqnr_db"].values()), dynamic["sqnr_db"]
for row, columns in ((static, quant.STATIC_COLUMNS), (dynamic, quant.DYNAMIC_COLUMNS)):
    header, rule, line = quant.markdown([row], columns).splitlines()
    assert header.count("|") == rule.count("|") == line.count("|") == len(columns) + 1, (header, line)
    assert line.startswith(f"| {row['model']} | "), line
"""


def test_static_and_dynamic_benchmarks_write_their_tables() -> None:
    result = subprocess.run([sys.executable, "-c", CHECK], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
