"""Runs cases in reusable worker processes (fuzz/worker.py), so that no case can stop the campaign.

The pattern of test/onnx_backend/runner.py: a case that gives no answer within the time limit is a `hang`,
one whose worker dies (a signal from generated code, an abort in MLIR, the memory cap) a `crash` with the
signal and the end of the worker's stderr; either way the worker is killed and the next case starts a new one.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from fuzz.targets import SCRATCH_VARIABLE, Result

ROOT = Path(__file__).resolve().parents[1]
# Starting a worker imports glow-mlir and MLIR; on a loaded machine that can take a while.
STARTUP_TIMEOUT = 120.0
STDERR_TAIL = 3000


class WorkerDied(Exception):
    """The worker process ended or did not answer in time."""


class _Worker:
    def __init__(self) -> None:
        self.stderr = tempfile.TemporaryFile()
        # The worker's files (cache entries, glow-opt inputs) go here, removed with the worker even if it crashed.
        self.scratch = tempfile.mkdtemp(prefix="glow-fuzz-")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
        env[SCRATCH_VARIABLE] = self.scratch
        self.process = subprocess.Popen(
            [sys.executable, "-m", "fuzz.worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.stderr, env=env, cwd=ROOT,
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

    def run(self, target: str, payload: dict[str, Any], timeout: float) -> Result:
        data = pickle.dumps((target, payload))
        try:
            self._stdin.write(len(data).to_bytes(4, "big") + data)
            self._stdin.flush()
        except BrokenPipeError:
            raise WorkerDied(self._exit_reason()) from None
        return Result(**json.loads(self._read_line(time.monotonic() + timeout)))

    def stderr_offset(self) -> int:
        return os.fstat(self.stderr.fileno()).st_size

    def stderr_since(self, offset: int) -> str:
        self.stderr.seek(offset)
        return self.stderr.read().decode(errors="replace")[-STDERR_TAIL:]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self._stdin, self.process.stdout):
            with contextlib.suppress(OSError):
                stream.close()
        self.stderr.close()
        shutil.rmtree(self.scratch, ignore_errors=True)

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
    """Runs cases one at a time in a worker process, replacing the worker after a crash or a hang."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._worker: _Worker | None = None

    def run(self, target: str, payload: dict[str, Any]) -> Result:
        if self._worker is None:
            try:
                self._worker = _Worker()
            except WorkerDied as e:
                return Result("crash", str(e), signature="crash at worker start")
        offset = self._worker.stderr_offset()
        try:
            return self._worker.run(target, payload, self.timeout)
        except TimeoutError:
            result = Result("hang", f"no answer in {self.timeout:.0f} s", signature="hang")
        except WorkerDied as e:
            tail = self._worker.stderr_since(offset)
            result = Result("crash", f"{e}; its stderr ended with:\n{tail}", signature=f"crash {e}")
        self.close()
        return result

    def close(self) -> None:
        if self._worker is not None:
            self._worker.stop()
            self._worker = None
