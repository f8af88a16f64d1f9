"""glow-run --dump-profile / --load-profile: Glow's two-step quantization flow from the shell."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

from glow_mlir import quantization as quant

GLOW_RUN = [sys.executable, "-m", "glow_mlir.tools.glow_run"]


def glow_run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GLOW_RUN, *args], capture_output=True, text=True, timeout=300)


def export(path: Path, scale: float = 1.0) -> None:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(12, 20), torch.nn.ReLU(), torch.nn.Linear(20, 3)).eval()
    with torch.no_grad():
        net[0].weight.mul_(scale)
    torch.onnx.export(net, (torch.randn(2, 12),), str(path), input_names=["x"], output_names=["y"], dynamo=False)


def test_dump_then_load_profile(tmp_path: Path) -> None:
    model, profile = tmp_path / "mlp.onnx", tmp_path / "mlp.profile.json"
    export(model)
    x = tmp_path / "x.npy"
    np.save(x, np.random.default_rng(0).standard_normal((2, 12)).astype(np.float32))
    dumped = glow_run(str(model), "--input", f"x={x}", "--dump-profile", str(profile))
    assert dumped.returncode == 0, dumped.stderr
    data = json.loads(profile.read_text())
    assert data["graph_hash"] == quant.graph_hash(str(model)) and "x" in data["nodes"]

    ir_file = tmp_path / "quantized.mlir"
    loaded = glow_run(str(model), "--input", f"x={x}", "--load-profile", str(profile), "--compare-onnxruntime",
                      "--dump-ir", "import", "--ir-file", str(ir_file))  # fmt: skip
    assert loaded.returncode == 0, loaded.stderr
    assert "xi8>" in ir_file.read_text() and "difference to onnxruntime" in loaded.stdout

    other = tmp_path / "other.onnx"
    export(other, scale=2.0)
    refused = glow_run(str(other), "--random-inputs", "--load-profile", str(profile))
    assert refused.returncode == 1 and "profile the model again" in refused.stderr
