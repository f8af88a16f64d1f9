"""Every glow-mlir pass has a lit test that fails when the pass is taken out of its pipeline: a lit test that
still passes without the pass it is about checks nothing of it."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from glow_mlir.pipeline import catalog

LIT_ROOT = Path(__file__).resolve().parents[1] / "lit"
PIPELINE = re.compile(r"pass-pipeline='([^']*)'")


def _elements(pipeline: str) -> list[str]:
    inner = pipeline.removeprefix("builtin.module(").removesuffix(")")
    return [e.strip() for e in re.split(r",(?![^{(]*[})])", inner) if e.strip()]


def _without(text: str, name: str) -> str:
    """`text` with pass `name` taken out of every RUN line's pipeline."""

    def drop(match: re.Match[str]) -> str:
        kept = [e for e in _elements(match.group(1)) if e.split("{", 1)[0] != name]
        return f"pass-pipeline='builtin.module({','.join(kept)})'"

    return "\n".join(PIPELINE.sub(drop, line) if line.startswith("// RUN:") else line for line in text.splitlines())


def _files_running(name: str) -> list[Path]:
    found = []
    for path in sorted(LIT_ROOT.rglob("*.mlir")):
        # Another xdist worker's mutated copy (below) may appear and vanish while this one globs.
        if "Output" in path.parts or ".without-" in path.name:
            continue
        pipelines = [m.group(1) for line in path.read_text().splitlines() if line.startswith("// RUN:")
                     for m in PIPELINE.finditer(line)]
        if any(e.split("{", 1)[0] == name for p in pipelines for e in _elements(p)):
            found.append(path)
    return found


@pytest.mark.parametrize("name", list(catalog.passes()))
def test_a_lit_test_fails_without_the_pass(name: str, tmp_path: Path) -> None:
    lit = shutil.which("lit", path=str(Path(sys.executable).parent))
    assert lit is not None
    files = _files_running(name)
    assert files, f"no lit test runs {name}"
    for path in files:
        # The mutated copy sits beside the original, under the same lit configuration, and is removed after.
        mutated = path.with_name(f"{path.stem}.without-{name}.mlir")
        try:
            mutated.write_text(_without(path.read_text(), name) + "\n")
            result = subprocess.run([lit, "-q", str(mutated)], capture_output=True, text=True, timeout=300)
        finally:
            mutated.unlink(missing_ok=True)
        # A test that ran and failed (not one lit could not find or run).
        if result.returncode != 0 and "Failed: 1" in result.stdout + result.stderr:
            return
    pytest.fail(f"every lit test running {name} still passes without it: {[str(f) for f in files]}")
