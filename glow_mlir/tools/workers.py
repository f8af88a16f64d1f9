"""Child processes that run one request at a time and may crash or hang without stopping their caller.

The ONNX backend-test runner (test/onnx_backend/runner.py) and the fuzzer (fuzz/runner.py) both run cases
that can kill the process running them: a signal from generated code, an abort inside MLIR, the memory cap, a
compile that never ends. Each case therefore runs in a reusable `python -m MODULE` worker that answers every
request with one line on stdout (and "ready" once, after its imports). `Worker.ask` sends a request and
returns the answer, or a `Failure` saying the worker hung or died (with the signal and the end of its
stderr); the worker is then replaced by a new one at the next request.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal


class WorkerDied(Exception):
    """The worker process ended or did not answer in time."""


@dataclass(frozen=True)
class Failure:
    """A request the worker gave no answer to: `hang` (no line within the time limit) or `crash`."""

    kind: Literal["hang", "crash"]
    message: str
    # What makes two failures the same one: "hang", or "crash " and how the process ended.
    signature: str


class _Process:
    """One worker process and the unread part of its answers."""

    def __init__(self, module: str, env: Mapping[str, str], cwd: Path | None, startup_timeout: float,
                 stderr_tail: int) -> None:
        self.stderr = tempfile.TemporaryFile()
        self.stderr_tail = stderr_tail
        self.process = subprocess.Popen(
            [sys.executable, "-m", module], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
            env=dict(env), cwd=cwd,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self._stdin = self.process.stdin
        self._stdout = self.process.stdout.fileno()
        self._buffer = b""
        try:
            started = self.read_line(time.monotonic() + startup_timeout) == b"ready"
        except (TimeoutError, WorkerDied):
            started = False
        if not started:
            reason = f"the worker did not start; its stderr ended with:\n{self.stderr_since(0)}"
            self.stop()
            raise WorkerDied(reason)

    def send(self, data: bytes) -> None:
        try:
            self._stdin.write(data)
            self._stdin.flush()
        except BrokenPipeError:
            raise WorkerDied(self.exit_reason()) from None

    def read_line(self, deadline: float) -> bytes:
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self._stdout], [], [], remaining)
            if ready:
                chunk = os.read(self._stdout, 1 << 16)
                if not chunk:
                    raise WorkerDied(self.exit_reason())
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def stderr_offset(self) -> int:
        return os.fstat(self.stderr.fileno()).st_size

    def stderr_since(self, offset: int) -> str:
        self.stderr.seek(offset)
        return self.stderr.read().decode(errors="replace")[-self.stderr_tail:]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self._stdin, self.process.stdout):
            with contextlib.suppress(OSError):
                stream.close()
        self.stderr.close()

    def exit_reason(self) -> str:
        code = self.process.wait()
        if code < 0:
            return f"the worker died of {signal.Signals(-code).name}"
        return f"the worker exited with status {code}"


class Worker:
    """Requests answered by a `python -m module` child, started on first use and replaced after a failure.

    `pythonpath` folders come first on the child's PYTHONPATH; `env` adds variables; `scratch` gives every
    child process a temporary folder of its own (its path in the variable named by `scratch`), removed with
    the process even when it crashed.
    """

    def __init__(self, module: str, *, pythonpath: Path, cwd: Path | None = None, env: Mapping[str, str] = {},
                 scratch: str | None = None, startup_timeout: float = 120.0, stderr_tail: int = 3000) -> None:
        self.module, self.pythonpath, self.cwd, self.env = module, pythonpath, cwd, dict(env)
        self.scratch, self.startup_timeout, self.stderr_tail = scratch, startup_timeout, stderr_tail
        self._process: _Process | None = None
        self._scratch_dir: tempfile.TemporaryDirectory[str] | None = None

    def ask(self, request: bytes, timeout: float) -> bytes | Failure:
        """The worker's answer line to `request` (bytes it reads from stdin), or why there is none."""
        if self._process is None:
            try:
                self._process = self._start()
            except WorkerDied as e:
                self.close()
                return Failure("crash", str(e), "crash at worker start")
        process = self._process
        offset = process.stderr_offset()
        try:
            process.send(request)
            return process.read_line(time.monotonic() + timeout)
        except TimeoutError:
            failure = Failure("hang", f"no answer in {timeout:.0f} s", "hang")
        except WorkerDied as e:
            failure = Failure("crash", f"{e}; its stderr ended with:\n{process.stderr_since(offset)}", f"crash {e}")
        self.close()
        return failure

    def close(self) -> None:
        """Stops the worker process (the next request starts a new one)."""
        if self._process is not None:
            self._process.stop()
            self._process = None
        if self._scratch_dir is not None:
            self._scratch_dir.cleanup()
            self._scratch_dir = None

    def _start(self) -> _Process:
        env = dict(os.environ) | self.env
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(self.pythonpath), env.get("PYTHONPATH", "")) if p)
        if self.scratch is not None:
            self._scratch_dir = tempfile.TemporaryDirectory(prefix="glow-worker-", ignore_cleanup_errors=True)
            env[self.scratch] = self._scratch_dir.name
        return _Process(self.module, env, self.cwd, self.startup_timeout, self.stderr_tail)
