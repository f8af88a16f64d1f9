"""The live progress of a compile (runtime._progress_bar): one step per pipeline element, then LLVM code
generation; shown on a terminal only, never when output is not a terminal or progress=False."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest

import glow_mlir
from glow_mlir import runtime
from glow_mlir.pipeline.runner import COMPILE_PIPELINE


def graph() -> glow_mlir.Graph:
    g = glow_mlir.Graph("progress")
    w = np.ones((8, 4), np.float32)
    g.output("y", g.relu(g.matmul(g.input("x", (2, 8)), g.constant(w))))
    return g


def test_progress_names_every_stage_then_code_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    shown: list[tuple[int, str, str]] = []
    stream = io.StringIO()

    class Recording(runtime.tqdm):  # type: ignore[misc]
        def __init__(self, **kwargs: Any) -> None:
            # No delay and an explicit stream, so that even this quick compile is drawn.
            super().__init__(**{**kwargs, "delay": 0, "file": stream})

        def update(self, n: float | None = 1) -> bool | None:
            result = super().update(n)
            shown.append((self.n, self.desc, self.postfix or ""))
            return result

    monkeypatch.setattr(runtime, "tqdm", Recording)
    glow_mlir.compile(graph(), cache=False, progress=True)
    assert len(shown) == len(COMPILE_PIPELINE) + 1
    assert shown[-1][0] == len(COMPILE_PIPELINE) + 1
    assert shown[-2][1] == "LLVM code generation" and "kernels" in shown[-2][2]
    assert shown[0][1] == runtime.stage_name(COMPILE_PIPELINE[1])
    assert "LLVM code generation" in stream.getvalue()


def test_no_progress_when_not_a_terminal_or_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    assert runtime._progress_bar(COMPILE_PIPELINE, None).disable  # pytest's stderr is not a terminal
    assert runtime._progress_bar(COMPILE_PIPELINE, False).disable
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    monkeypatch.setenv("GLOW_MLIR_PROGRESS", "0")
    assert runtime._progress_bar(COMPILE_PIPELINE, None).disable
