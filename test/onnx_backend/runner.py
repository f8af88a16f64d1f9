"""Runs many backend-test cases in worker processes, so that no case can stop the run.

`CaseRunner` runs cases one at a time in a worker process (`onnx_backend.worker`); `run_cases(ids,
workers=2, timeout=...)` keeps `workers` of them busy. A case that takes longer than `timeout` seconds gets
the status `timeout`, and one whose worker dies (a segfault in generated code, an abort in MLIR, the OOM
killer) gets `crash` with the signal and the end of what the worker wrote to stderr; either way the worker
is replaced and the run goes on.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from glow_mlir.tools.workers import Failure, Worker
from onnx_backend.cases import Outcome

DEFAULT_TIMEOUT = 180.0
# Starting a worker includes generating every node case; two starting at once on a loaded machine can be slow.
STARTUP_TIMEOUT = 300.0
TEST_DIR = Path(__file__).resolve().parent.parent


class CaseRunner:
    """Runs cases one at a time in a worker process (onnx_backend.worker), replacing the worker after a crash
    or a timeout. A request is the case id on a line; the answer a JSON `Outcome`."""

    def __init__(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.timeout = timeout
        self._worker = Worker("onnx_backend.worker", pythonpath=TEST_DIR, startup_timeout=STARTUP_TIMEOUT,
                              stderr_tail=2000)

    def run(self, case_id: str) -> Outcome:
        start = time.perf_counter()
        answer = self._worker.ask(case_id.encode() + b"\n", self.timeout)
        if isinstance(answer, Failure):
            status = "timeout" if answer.kind == "hang" else "crash"
            return Outcome(case_id, status, answer.message, time.perf_counter() - start)
        return Outcome(**json.loads(answer))

    def close(self) -> None:
        """Stops the worker process (a later run starts a new one)."""
        self._worker.close()


def run_cases(
    ids: Sequence[str],
    *,
    workers: int = 2,
    timeout: float = DEFAULT_TIMEOUT,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> dict[str, Outcome]:
    """Runs every case of `ids` in `workers` processes; returns an Outcome per id.

    `on_outcome` is called (from the worker threads, one at a time) as each case finishes.
    """
    pending: queue.SimpleQueue[str] = queue.SimpleQueue()
    for case_id in ids:
        pending.put(case_id)
    results: dict[str, Outcome] = {}
    lock = threading.Lock()

    def serve() -> None:
        case_runner = CaseRunner(timeout)
        try:
            while True:
                try:
                    case_id = pending.get_nowait()
                except queue.Empty:
                    return
                result = case_runner.run(case_id)
                with lock:
                    results[case_id] = result
                    if on_outcome is not None:
                        on_outcome(result)
        finally:
            case_runner.close()

    threads = [threading.Thread(target=serve) for _ in range(min(workers, len(ids)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {case_id: results[case_id] for case_id in ids}
