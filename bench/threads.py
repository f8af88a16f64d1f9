"""glow-mlir and onnxruntime at 1 and 2 intra-op threads: `python -m bench.threads [--models a,b] [--threads 1,2]`.

For each model of bench/models.py it builds one glow-mlir `InferenceSession` per thread count
(`SessionOptions.intra_op_num_threads`) and one onnxruntime session per thread count (intra-op threads as
given, one inter-op thread, sequential execution, ORT_ENABLE_ALL). It checks that glow-mlir's outputs are
bitwise the same at every thread count and within rtol = atol = 1e-4 of onnxruntime's (the criterion of
test/python/test_real_models.py), then times the four sessions in alternating blocks, in one process: every
block visits every session, in an order rotated from block to block, so that whatever else the machine does
hits all of them alike. A block is one warm-up call and then calls for about `--block-seconds`; its figure
is the median wall-clock call. Each session's figure is the best (smallest) of its block medians over
`--blocks` blocks, the least disturbed block: on a shared machine the load only ever adds time.

Before each block the process sleeps `--idle` seconds (default 0.3): both runtimes keep their workers
spinning for a while after a parallel region (libiomp5's KMP_BLOCKTIME is 200 ms; onnxruntime spins too),
and a worker of the previous session still spinning would take a core from the next one.

Reported: milliseconds per call, ort/glow at each thread count (> 1: glow-mlir is faster), and each
runtime's scaling from the first thread count to the others (t(first) / t(n)).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import onnxruntime

import glow_mlir
from bench import models

DEFAULT_MODELS = ("resnet50", "resnet18", "mobilenetv2", "squeezenet1_1", "bert")


def _glow(path: str, threads: int) -> Callable[[dict[str, np.ndarray]], list[np.ndarray]]:
    options = glow_mlir.SessionOptions()
    options.intra_op_num_threads = threads
    session = glow_mlir.InferenceSession(path, options)
    assert session.report["threads"] == threads, session.report["threads"]
    return lambda feeds: session.run(None, feeds)


def _ort(path: str, threads: int) -> Callable[[dict[str, np.ndarray]], list[np.ndarray]]:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return lambda feeds: session.run(None, feeds)


def _block(run: Callable[[], object], seconds: float) -> float:
    """The median wall-clock time of one call over about `seconds` (at least 3 calls), after one warm-up."""
    run()
    times: list[float] = []
    deadline = time.perf_counter() + seconds
    while len(times) < 3 or time.perf_counter() < deadline:
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_model(name: str, counts: Sequence[int], blocks: int, block_seconds: float, idle: float) -> dict[str, Any]:
    path = str(models.onnx_path(name))
    feeds = models.spec(name).inputs()
    sessions: dict[tuple[str, int], Callable[[dict[str, np.ndarray]], list[np.ndarray]]] = {}
    for threads in counts:
        sessions["glow", threads] = _glow(path, threads)
        sessions["ort", threads] = _ort(path, threads)
    outputs = {key: run(feeds) for key, run in sessions.items()}
    first = outputs["glow", counts[0]]
    bitwise = all(
        all(np.array_equal(a, b) for a, b in zip(outputs["glow", n], first, strict=True)) for n in counts[1:]
    )
    close = all(
        np.allclose(a, b, rtol=1e-4, atol=1e-4) for a, b in zip(first, outputs["ort", counts[0]], strict=True)
    )
    medians: dict[tuple[str, int], list[float]] = {key: [] for key in sessions}
    keys = list(sessions)
    for b in range(blocks):
        for key in keys[b % len(keys) :] + keys[: b % len(keys)]:
            time.sleep(idle)
            run = sessions[key]
            medians[key].append(_block(lambda run=run: run(feeds), block_seconds))
    best = {key: min(values) for key, values in medians.items()}
    result: dict[str, Any] = {"model": name, "bitwise_across_threads": bitwise, "close_to_onnxruntime": close}
    for threads in counts:
        result[f"glow_ms_{threads}"] = best["glow", threads] * 1e3
        result[f"ort_ms_{threads}"] = best["ort", threads] * 1e3
        result[f"ort_over_glow_{threads}"] = best["ort", threads] / best["glow", threads]
    for threads in counts[1:]:
        result[f"glow_scaling_{counts[0]}_{threads}"] = best["glow", counts[0]] / best["glow", threads]
        result[f"ort_scaling_{counts[0]}_{threads}"] = best["ort", counts[0]] / best["ort", threads]
    result["block_medians_ms"] = {f"{k[0]}_{k[1]}": [v * 1e3 for v in values] for k, values in medians.items()}
    return result


def markdown(rows: list[dict[str, Any]], counts: Sequence[int]) -> str:
    head = ["model"]
    for n in counts:
        head += [f"glow {n}T ms", f"ort {n}T ms", f"ort/glow {n}T"]
    head += [f"glow {counts[0]}->{n}T" for n in counts[1:]] + [f"ort {counts[0]}->{n}T" for n in counts[1:]]
    head += ["bitwise across T", "close to ort"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["model"]]
        for n in counts:
            cells += [f"{r[f'glow_ms_{n}']:.2f}", f"{r[f'ort_ms_{n}']:.2f}", f"{r[f'ort_over_glow_{n}']:.2f}"]
        cells += [f"{r[f'glow_scaling_{counts[0]}_{n}']:.2f}x" for n in counts[1:]]
        cells += [f"{r[f'ort_scaling_{counts[0]}_{n}']:.2f}x" for n in counts[1:]]
        cells += ["yes" if r["bitwise_across_threads"] else "NO", "yes" if r["close_to_onnxruntime"] else "NO"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.threads", description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS), help="comma-separated bench/models.py names")
    parser.add_argument("--threads", default="1,2", help="intra-op thread counts, the baseline first (default 1,2)")
    parser.add_argument("--blocks", type=int, default=5, help="alternating blocks (default 5)")
    parser.add_argument("--block-seconds", type=float, default=1.0, help="timed seconds per block (default 1)")
    parser.add_argument("--idle", type=float, default=0.3, help="sleep before each block, seconds (default 0.3)")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.threads.split(",")]
    rows = []
    for name in args.models.split(","):
        rows.append(bench_model(name, counts, args.blocks, args.block_seconds, args.idle))
        print(markdown(rows[-1:], counts).splitlines()[-1], flush=True)
    print(f"\nBest of {args.blocks} alternating blocks of ~{args.block_seconds} s (median call per block), wall clock.")
    print(markdown(rows, counts))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
