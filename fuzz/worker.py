"""A worker process of the fuzzer: reads cases from stdin, each a 4-byte big-endian length and a pickled
`(target, payload)`, and answers each with one JSON line (a `targets.Result`) on the stdout it started with.

As in test/onnx_backend/worker.py, fd 1 is pointed at stderr before any case runs, so that whatever a
library or generated code prints cannot corrupt an answer. The first line, `ready`, says glow-mlir is
loaded. The address space is capped (`MEMORY_LIMIT`): a mutated model that asks for terabytes fails in
this process instead of taking the shared machine's memory.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import resource
import sys

MEMORY_LIMIT = 8 << 30


def main() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    # Only the cache target turns the compile cache on, in a folder of its own.
    os.environ["GLOW_MLIR_CACHE"] = "0"
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    from fuzz import targets

    protocol.write("ready\n")
    stdin = sys.stdin.buffer
    while header := stdin.read(4):
        target, payload = pickle.loads(stdin.read(int.from_bytes(header, "big")))
        protocol.write(json.dumps(dataclasses.asdict(targets.run(target, payload))) + "\n")


if __name__ == "__main__":
    main()
