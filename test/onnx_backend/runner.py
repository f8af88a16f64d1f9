"""Runs many backend-test cases in worker processes, so that no case can stop the run.

`CaseRunner` runs cases one at a time in a worker process (`onnx_backend.worker`); `run_cases(ids,
workers=2, timeout=...)` keeps `workers` of them busy. A case that takes longer than `timeout` seconds gets
the status `timeout`, and one whose worker dies (a segfault in generated code, an abort in MLIR, the OOM
killer) gets `crash` with the signal and the end of what the worker wrote to stderr; either way the worker
is replaced and the run goes on.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from onnx_backend.cases import Outcome

DEFAULT_TIMEOUT = 180.0
# Starting a worker includes generating every node case; two starting at once on a loaded machine can be slow.
STARTUP_TIMEOUT = 300.0
STDERR_TAIL = 2000
TEST_DIR = Path(__file__).resolve().parent.parent


class WorkerDied(Exception):
    """The worker process ended (crashed) or stopped answering in time."""


class _Worker:
    """One worker process and the unread part of its answers."""

    def __init__(self) -> None:
        self.stderr = tempfile.TemporaryFile()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(TEST_DIR), env.get("PYTHONPATH", "")) if p)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "onnx_backend.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=env,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self._stdin = self.process.stdin
        self._stdout = self.process.stdout.fileno()
        self._buffer = b""
        try:
            started = self._read_line(time.monotonic() + STARTUP_TIMEOUT) == b"ready"
        except (TimeoutError, WorkerDied):
            started = False
        if not started:
            reason = f"the worker did not start; its stderr ended with:\n{self.stderr_since(0)}"
            self.stop()
            raise WorkerDied(reason)

    def run(self, case_id: str, timeout: float) -> Outcome:
        """Runs one case; raises WorkerDied (the worker is then unusable) on a crash or a timeout."""
        try:
            self._stdin.write(case_id.encode() + b"\n")
            self._stdin.flush()
        except BrokenPipeError:
            raise WorkerDied(self._exit_reason()) from None
        line = self._read_line(time.monotonic() + timeout)
        return Outcome(**json.loads(line))

    def stderr_offset(self) -> int:
        return os.fstat(self.stderr.fileno()).st_size

    def stderr_since(self, offset: int) -> str:
        self.stderr.seek(offset)
        text = self.stderr.read().decode(errors="replace")
        return text[-STDERR_TAIL:]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self._stdin, self.process.stdout):
            with contextlib.suppress(OSError):
                stream.close()
        self.stderr.close()

    def _read_line(self, deadline: float) -> bytes:
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self._stdout], [], [], remaining)
            if ready:
                chunk = os.read(self._stdout, 1 << 16)
                if not chunk:
                    raise WorkerDied(self._exit_reason())
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _exit_reason(self) -> str:
        code = self.process.wait()
        if code < 0:
            return f"the worker died of {signal.Signals(-code).name}"
        return f"the worker exited with status {code}"


class CaseRunner:
    """Runs cases one at a time in a worker process, replacing the worker after a crash or a timeout."""

    def __init__(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.timeout = timeout
        self._worker: _Worker | None = None

    def run(self, case_id: str) -> Outcome:
        start = time.perf_counter()
        if self._worker is None:
            try:
                self._worker = _Worker()
            except WorkerDied as e:
                return Outcome(case_id, "crash", str(e), time.perf_counter() - start)
        offset = self._worker.stderr_offset()
        try:
            return self._worker.run(case_id, self.timeout)
        except TimeoutError:
            result = Outcome(case_id, "timeout", f"no result in {self.timeout:.0f} s", time.perf_counter() - start)
        except WorkerDied as e:
            message = f"{e}; its stderr ended with:\n{self._worker.stderr_since(offset)}"
            result = Outcome(case_id, "crash", message, time.perf_counter() - start)
        self.close()
        return result

    def close(self) -> None:
        """Stops the worker process (a later run starts a new one)."""
        if self._worker is not None:
            self._worker.stop()
            self._worker = None


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
