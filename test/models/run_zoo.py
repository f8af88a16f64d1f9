"""Runs the model zoo (zoo.py) through glow-mlir and onnxruntime and writes docs/Models.md (`make models`).

    .venv/bin/python test/models/run_zoo.py [--models a,b] [--workers 1] [--timeout 600]

One row per model x exporter x axes (static, or dynamic batch/sequence checked at several shapes). Each row runs
in a child process of its own (this script with `--row`) under a time limit, with the compile cache off, so that
a crash or a hang costs that row only, and compile times are cold. A row's status is one of: pass, wrong result
(outside the tolerance), refused (glow-mlir raised one of its own errors: the message follows), crash (any
other exception, or the child died), timeout, or export failed (PyTorch could not export the model: not
glow-mlir's to fix, but kept as a row). Rows of models not run this time are kept from the existing table, so a
run of a few models updates their rows only.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path

import zoo  # this folder is on sys.path when the script runs

from glow_mlir.errors import GlowError

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "Models.md"
MARKER = "ZOO-ROW "
AXES = ("static", "dynamic")
COLUMNS = ("model", "source", "family", "exporter", "axes", "status", "max diff", "tolerance", "compile s",
           "glow-mlir ms", "onnxruntime ms", "shapes checked")
MESSAGE_CHARS = 300
HEADER = """# Model zoo

Architectures from timm and Hugging Face transformers, chosen before any tuning and never pruned
(test/models/zoo.py: configs, sizes, inputs), built with random weights from fixed seeds, exported with both
PyTorch exporters (TorchScript, `dynamo=False`, opset 17; dynamo, opset 18), with static shapes and with dynamic
axes (batch; batch and sequence for text and audio), and run through `glow_mlir.InferenceSession` against
onnxruntime on seeded feeds. A dynamic export is checked at each shape listed, in one session (a specialization
compiled per new shape).

Regenerate with `make models` (`.venv/bin/python test/models/run_zoo.py [--models a,b] [--workers 1]`: one child
process per row with a time limit, the compile cache off). A CI subset runs in test/python/test_model_zoo.py.

- **pass**: every output within the tolerance of onnxruntime (ORT_ENABLE_ALL), as rtol and atol: 1e-4, or twice
  onnxruntime's own difference between ORT_ENABLE_ALL and ORT_DISABLE_ALL on the same feeds where that is larger.
  **wrong result**: outside it. **refused**: glow-mlir raised one of its own errors (message shown). **crash**:
  any other exception, or the child process died. **timeout**. **export failed**: PyTorch could not export it.
- max diff: the largest abs(glow-mlir - onnxruntime) over outputs and shapes. compile s: creating the session plus
  the first run at each shape (cold, no disk cache). ms: median of 3 runs at the last shape, one thread each, on
  a shared 2-core machine (indicative only).
"""


@dataclass
class Row:
    """One line of the table; numbers are empty where the row did not get that far."""

    model: str
    source: str
    family: str
    exporter: str
    axes: str
    status: str
    max_diff: str = ""
    tolerance: str = ""
    compile_seconds: str = ""
    glow_ms: str = ""
    onnxruntime_ms: str = ""
    shapes: str = ""

    def cells(self) -> list[str]:
        return list(asdict(self).values())


def _one_line(error: BaseException) -> str:
    """The error's type and message on one line (a refusal listing several nodes keeps them all, joined by ';'),
    cut at MESSAGE_CHARS, with '|' escaped for the table."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    # "uses 2 unsupported node(s):" then one line per node: the colon already joins the first.
    text = "".join(f"{a}{' ' if a.endswith(':') else '; '}" for a in lines[:-1]) + (lines[-1] if lines else "")
    text = f"{type(error).__name__}: {text}"
    if len(text) > MESSAGE_CHARS:
        text = text[: MESSAGE_CHARS - 3] + "..."
    return text.replace("|", "\\|")


def _shapes_text(shapes: tuple[tuple[tuple[int, ...], ...], ...]) -> str:
    # The first input's shape stands for each checked shape (the others share its batch and sequence).
    return ", ".join("x".join(map(str, each[0])) for each in shapes)


def run_row(name: str, exporter: str, axes: str) -> Row:
    """The row of one model, exporter and axes: exports (cached), checks, classifies. Runs in the child."""
    spec = zoo.MODELS[name]
    row = Row(name, spec.source, spec.family, exporter, axes, "")
    dynamic = axes == "dynamic"
    try:
        zoo.exported(name, exporter, dynamic)
    except Exception as error:  # noqa: BLE001 - any exporter failure is this row's result
        row.status = f"export failed: {_one_line(error)}"
        return row
    try:
        outcome = zoo.check(name, exporter, dynamic)
    except GlowError as error:
        row.status = f"refused: {_one_line(error)}"
        return row
    except Exception as error:  # noqa: BLE001 - anything else glow-mlir (or onnxruntime) raised is a crash
        frame = traceback.extract_tb(error.__traceback__)[-1]
        row.status = f"crash: {_one_line(error)} ({Path(frame.filename).name}:{frame.lineno})"
        return row
    row.status = "pass" if outcome.within else "wrong result"
    row.max_diff = f"{outcome.max_diff:.1e}"
    row.tolerance = f"{outcome.tolerance:.0e}" if outcome.tolerance == zoo.TOLERANCE else f"{outcome.tolerance:.1e}"
    row.compile_seconds = f"{outcome.compile_seconds:.1f}"
    row.glow_ms = f"{outcome.glow_ms:.2f}"
    row.onnxruntime_ms = f"{outcome.onnxruntime_ms:.2f}"
    row.shapes = _shapes_text(outcome.shapes)
    return row


def spawn_row(name: str, exporter: str, axes: str, info: tuple[str, str], timeout: float) -> Row:
    """`run_row` in a child process under `timeout` seconds; a child that dies or hangs still gives its row."""
    source, family = info
    command = [sys.executable, __file__, "--row", name, exporter, axes]
    # Cold compiles (no disk cache), and no progress bar in the captured output.
    env = os.environ | {"GLOW_MLIR_CACHE": "0", "GLOW_MLIR_PROGRESS": "0"}
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, check=False)
    except subprocess.TimeoutExpired:
        row = Row(name, source, family, exporter, axes, f"timeout (over {timeout:.0f} s)")
    else:
        lines = [line for line in done.stdout.splitlines() if line.startswith(MARKER)]
        if lines:
            row = Row(**json.loads(lines[-1][len(MARKER):]))
        else:
            died = f"signal {signal.Signals(-done.returncode).name}" if done.returncode < 0 else f"exit {done.returncode}"
            last = [line for line in done.stderr.splitlines() if line.strip()][-1:] or [""]
            message = last[0][:MESSAGE_CHARS].replace("|", "\\|")
            row = Row(name, source, family, exporter, axes, f"crash: {died} {message}".strip())
    print(f"{name:24} {exporter:12} {axes:8} {time.perf_counter() - start:6.1f} s  {row.status[:100]}", flush=True)
    return row


def read_rows(path: Path) -> list[Row]:
    """The rows of an existing table (empty if there is none)."""
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if line.startswith("| ") and len(cells) == len(COLUMNS) and cells[0] not in ("model", "---"):
            rows.append(Row(*cells))
    return rows


def markdown(rows: list[Row], order: list[str]) -> str:
    key = {name: i for i, name in enumerate(order)}
    rows = sorted(rows, key=lambda r: (key.get(r.model, len(key)), r.exporter != "torchscript", r.axes != "static"))
    counts: dict[str, int] = {}
    for row in rows:
        word = row.status.split(":")[0].split(" (")[0]
        counts[word] = counts.get(word, 0) + 1
    versions = ", ".join(f"{p} {metadata.version(p)}" for p in ("torch", "timm", "transformers", "onnxscript",
                                                                 "onnxruntime"))
    lines = [
        HEADER,
        f"Versions: {versions}. Summary: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) + ".",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "| " + " | ".join("---" for _ in COLUMNS) + " |",
    ]
    lines += ["| " + " | ".join(row.cells()) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", help="comma-separated model names (default: all)")
    parser.add_argument("--workers", type=int, default=1, help="rows run at once (default 1)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per row (default 600)")
    parser.add_argument("--output", type=Path, default=DOC, help=f"the table (default {DOC.relative_to(REPO)})")
    parser.add_argument("--row", nargs=3, metavar=("MODEL", "EXPORTER", "AXES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.row:
        print(MARKER + json.dumps(asdict(run_row(*args.row))), flush=True)
        return
    names = args.models.split(",") if args.models else list(zoo.MODELS)
    unknown = [n for n in names if n not in zoo.MODELS]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)} (known: {', '.join(zoo.MODELS)})")
    jobs = [(n, e, a) for n in names for e in zoo.EXPORTERS for a in AXES]
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        rows = list(pool.map(
            lambda job: spawn_row(*job, (zoo.MODELS[job[0]].source, zoo.MODELS[job[0]].family), args.timeout), jobs))
    kept = [r for r in read_rows(args.output) if r.model not in names and r.model in zoo.MODELS]
    args.output.write_text(markdown(kept + rows, list(zoo.MODELS)))
    print(f"wrote {args.output} ({len(rows)} rows run in {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
