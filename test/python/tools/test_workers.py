"""glow_mlir.tools.workers: a worker answers, and one that hangs or dies is reported and replaced."""

from __future__ import annotations

from pathlib import Path

import pytest

from glow_mlir.tools.workers import Failure, Worker

# Echoes each line; "die" kills it with SIGSEGV after a word on stderr, "hang" never answers, "env" answers
# with the scratch folder it was given and whether that folder exists.
WORKER = '''
import os, signal, sys, time
print("ready", flush=True)
for line in sys.stdin:
    word = line.strip()
    if word == "die":
        print("about to die", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGSEGV)
    if word == "hang":
        time.sleep(60)
    if word == "env":
        scratch = os.environ["TEST_SCRATCH"]
        print(f"{scratch} {os.path.isdir(scratch)}", flush=True)
        continue
    print(word.upper(), flush=True)
'''


@pytest.fixture
def worker(tmp_path: Path):
    (tmp_path / "echo_worker.py").write_text(WORKER)
    worker = Worker("echo_worker", pythonpath=tmp_path, scratch="TEST_SCRATCH", startup_timeout=60)
    yield worker
    worker.close()


def test_answers_and_survives_failures(worker: Worker) -> None:
    assert worker.ask(b"hello\n", 30) == b"HELLO"
    crash = worker.ask(b"die\n", 30)
    assert isinstance(crash, Failure) and crash.kind == "crash"
    assert crash.signature == "crash the worker died of SIGSEGV"
    assert "about to die" in crash.message
    hang = worker.ask(b"hang\n", 0.5)
    assert isinstance(hang, Failure) and hang.kind == "hang" and hang.signature == "hang"
    # A new process answers after each failure.
    assert worker.ask(b"again\n", 30) == b"AGAIN"


def test_scratch_folder_is_removed_with_the_process(worker: Worker) -> None:
    answer = worker.ask(b"env\n", 30)
    assert isinstance(answer, bytes)
    folder, exists = answer.decode().split()
    assert exists == "True"
    worker.close()
    assert not Path(folder).exists()


def test_a_worker_that_cannot_start_is_a_crash(tmp_path: Path) -> None:
    worker = Worker("no_such_module_here", pythonpath=tmp_path, startup_timeout=60)
    failure = worker.ask(b"x\n", 30)
    assert isinstance(failure, Failure) and failure.signature == "crash at worker start"
    assert "No module named" in failure.message
