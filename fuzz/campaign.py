"""A campaign: cases 0..N-1 of a seed, run in worker processes, failures minimized and saved.

Each failure goes to `<out>/<target>-<index>/`: `case.json` (seed, mutations, status, message, and the
command that runs that case again), `traceback.txt`, and the minimized input beside the original one
(`model.onnx` / `original.onnx`, `input.mlir` / `original.mlir`; for feed and cache cases the seed model).
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fuzz import cases
from fuzz.minimize import minimize
from fuzz.runner import CaseRunner
from fuzz.targets import FAILING, Result

DEFAULT_TIMEOUT = 60.0


@dataclass
class Summary:
    """Counts of outcomes by target, the failures, and the wall-clock time."""

    counts: dict[str, Counter[str]] = field(default_factory=dict)
    failures: list[tuple[cases.Case, Result]] = field(default_factory=list)
    seconds: float = 0.0

    def add(self, case: cases.Case, result: Result) -> None:
        self.counts.setdefault(case.target, Counter())[result.status] += 1
        if result.status in FAILING:
            self.failures.append((case, result))

    def table(self) -> str:
        statuses = ["ok", "refused", *FAILING]
        rows = ["| target | cases | " + " | ".join(statuses) + " |", "|---" * (len(statuses) + 2) + "|"]
        total: Counter[str] = Counter()
        for target, counts in sorted(self.counts.items()):
            total.update(counts)
            rows.append(f"| {target} | {sum(counts.values())} | " + " | ".join(str(counts[s]) for s in statuses) + " |")
        rows.append(f"| all | {sum(total.values())} | " + " | ".join(str(total[s]) for s in statuses) + " |")
        return "\n".join(rows)


def run(
    indices: Sequence[int],
    seed: int,
    targets: tuple[str, ...],
    *,
    workers: int = 1,
    out: Path | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    minimize_failures: bool = True,
    on_result: Callable[[cases.Case, Result, Summary], None] | None = None,
) -> Summary:
    """Runs the cases `indices` of `seed` over `targets`; saves each failure under `out` (minimized)."""
    start = time.monotonic()
    summary = Summary()
    lock = threading.Lock()
    next_index = iter(indices)
    # An exception of the harness itself (not of a case) stops the campaign rather than shortening it.
    broken: list[BaseException] = []

    def serve() -> None:
        runner = CaseRunner(timeout)
        try:
            while True:
                with lock:
                    index = next(next_index, None)
                if index is None:
                    return
                case = cases.make(seed, index, targets)
                result = runner.run(case.target, case.payload)
                with lock:
                    summary.add(case, result)
                    if on_result is not None:
                        on_result(case, result, summary)
        except BaseException as e:
            broken.append(e)
            raise
        finally:
            runner.close()

    threads = [threading.Thread(target=serve) for _ in range(max(1, min(workers, len(indices))))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if broken:
        raise RuntimeError("the fuzzer itself failed") from broken[0]
    summary.failures.sort(key=lambda f: f[0].index)
    if out is not None:
        runner = CaseRunner(timeout)
        try:
            for case, result in summary.failures:
                small = minimize(case.target, case.payload, result.signature, runner) if minimize_failures else None
                save(out, seed, targets, case, result, small)
        finally:
            runner.close()
    summary.seconds = time.monotonic() - start
    return summary


def save(
    out: Path, seed: int, targets: tuple[str, ...], case: cases.Case, result: Result, small: dict[str, Any] | None
) -> Path:
    folder = out / case.id
    folder.mkdir(parents=True, exist_ok=True)
    info = {
        "target": case.target, "index": case.index, "seed": case.seed, "mutations": case.mutations,
        "status": result.status, "message": result.message, "signature": result.signature,
        "reproduce": f".venv/bin/python -m fuzz --seed {seed} --targets {' '.join(targets)} --only {case.index}",
    }
    (folder / "traceback.txt").write_text(result.traceback or result.message)
    payload = case.payload
    if case.target == "mlir":
        (folder / "original.mlir").write_text(payload["text"])
        (folder / "input.mlir").write_text((small or payload)["text"])
        info["glow_opt_args"] = list(payload["args"])
    else:
        (folder / "original.onnx").write_bytes(payload["model"])
        (folder / "model.onnx").write_bytes((small or payload)["model"])
        if case.target in ("feed", "cache"):
            info["mutation"], info["rng"] = payload["mutation"], payload["rng"]
    (folder / "case.json").write_text(json.dumps(info, indent=2) + "\n")
    return folder
