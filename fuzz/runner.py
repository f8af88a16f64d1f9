"""Runs cases in reusable worker processes (fuzz/worker.py), so that no case can stop the campaign.

Each case runs in a `glow_mlir.tools.workers.Worker`: a case that gives no answer within the time limit is a `hang`,
one whose worker dies (a signal from generated code, an abort in MLIR, the memory cap) a `crash` with the
signal and the end of the worker's stderr; either way the worker is killed and the next case starts a new one.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

from fuzz.targets import SCRATCH_VARIABLE, Result
from glow_mlir.tools.workers import Failure, Worker

ROOT = Path(__file__).resolve().parents[1]
# Starting a worker imports glow-mlir and MLIR; on a loaded machine that can take a while.
STARTUP_TIMEOUT = 120.0


class CaseRunner:
    """Runs cases one at a time in a worker process (fuzz.worker), replacing the worker after a crash or a hang.

    A request is the pickled (target, payload), length-prefixed; the answer a JSON `Result`. The worker's files
    (cache entries, glow-opt inputs) go to a scratch folder of its own, removed with it even if it crashed.
    """

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._worker = Worker("fuzz.worker", pythonpath=ROOT, cwd=ROOT, scratch=SCRATCH_VARIABLE,
                              startup_timeout=STARTUP_TIMEOUT)

    def run(self, target: str, payload: dict[str, Any]) -> Result:
        data = pickle.dumps((target, payload))
        answer = self._worker.ask(len(data).to_bytes(4, "big") + data, self.timeout)
        if isinstance(answer, Failure):
            return Result(answer.kind, answer.message, signature=answer.signature)
        return Result(**json.loads(answer))

    def close(self) -> None:
        self._worker.close()
