"""The benchmark harness (bench/run.py) still runs: MLP and LeNet and one small GEMM with --quick.

No timing is asserted (figures from a quick run on a busy test machine mean nothing); the test checks that
the command succeeds, writes the markdown tables and the JSON, and that glow-mlir's outputs match
onnxruntime's and numpy's. It runs the harness as the user does, `python -m bench.run` in a fresh process,
because the harness must pin numpy's BLAS to one thread before numpy is first imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
