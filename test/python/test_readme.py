"""Every code block of README.md runs as written: the Python blocks in order in one namespace, the shell
blocks line by line, in a scratch folder (so the files one block writes, the next reads). The set-up
commands (make, cmake) are not run here: they are what runs this test."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.S | re.M)
SET_UP = ("make ", "cmake ")


def blocks() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer((ROOT / "README.md").read_text())]


def test_readme_has_python_and_shell_blocks() -> None:
    kinds = [kind for kind, _ in blocks()]
    assert kinds.count("python") >= 3 and kinds.count("sh") >= 3


def test_every_readme_block_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GLOW_MLIR_CACHE_DIR", str(tmp_path / "cache"))
    # The console scripts (glow-run, glow-opt, glow-mlir) sit beside this interpreter.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    namespace: dict[str, object] = {}
    ran = 0
    for kind, code in blocks():
        if kind == "python":
            exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 - the README's own code
            ran += 1
        elif kind == "sh":
            for line in code.splitlines():
                command = line.split("  #")[0].strip()
                if not command or command.startswith(SET_UP):
                    continue
                done = subprocess.run(shlex.split(command), env=env, capture_output=True, text=True, timeout=600)
                assert done.returncode == 0, f"{command}\n{done.stderr[-3000:]}"
                ran += 1
    assert ran >= 8
