"""A worker process of the runner: reads case ids from stdin, one a line, and answers each with one JSON
line (an `Outcome`) on the stdout it started with.

The protocol keeps the original stdout to itself: fd 1 is pointed at stderr before any case runs, so
whatever a library or generated code prints cannot corrupt an answer. The first line, `ready`, says the
case lists are loaded (generating the node cases takes a few seconds).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys

from onnx_backend import cases


def main() -> None:
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    cases.case_ids()
    protocol.write("ready\n")
    for line in sys.stdin:
        protocol.write(json.dumps(dataclasses.asdict(cases.outcome(line.strip()))) + "\n")


if __name__ == "__main__":
    main()
