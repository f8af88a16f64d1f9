"""glow-mlir and onnxruntime at 1 and 2 threads: `python -m bench.threads [--models a,b] [--threads 1,2] [--profile]`.

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

`--profile` times glow-mlir's kernels instead (per-kernel scaling): each model is compiled in the profiling
variant (glow_mlir/profiling.py: every kernel site timed by wall clock from the calling thread, a split
kernel's fork and join included) at each thread count, and the variants run in alternating blocks as above;
a kernel's figure at a thread count is the best over blocks of its median time per run. For each thread count
after the first it prints every kernel's time at both counts, its speedup, the time it loses against perfect
scaling (t(n) - t(first) x first / n; the table is sorted by it), its forks per run and what it splits: the
trip count of each collapsed loop, the dimension it walks, and the iterations each thread gets (static blocks:
7 rows over 2 threads show as 4/3), or "serial".

Bundles time the models on another machine, one without the compiler (MLIR's wheels, the models' torch):
`--write-bundle DIR` compiles each model here for every thread count into a compile cache folder of its own
and writes its ONNX file and inputs beside it, with libiomp5; `--bundle DIR` times them there (numpy,
onnxruntime and glow_mlir's sources are all it needs: glow_mlir/library.py runs the cache entries). The
machine must have the CPU features of the one that compiled. The bundle's weights repeat a slice of the
model's own values (WEIGHT_PERIOD), so that the libraries and ONNX files, which hold the weights, compress
from hundreds of MB to a few: the kernels' speed does not depend on the values (all finite and normal).
"""

from __future__ import annotations

import argparse
import ctypes
import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime
from onnx import numpy_helper

DEFAULT_MODELS = ("resnet50", "resnet18", "mobilenetv2", "squeezenet1_1", "bert")
ROOT = Path(__file__).resolve().parents[1]
# A prime, so that the repeated slice does not line up with channels or rows.
WEIGHT_PERIOD = 4093
RUNTIME = "libiomp5.so"

Runner = Callable[[dict[str, np.ndarray]], list[np.ndarray]]


def _glow(path: str, threads: int) -> Runner:
    import glow_mlir

    options = glow_mlir.SessionOptions()
    options.intra_op_num_threads = threads
    session = glow_mlir.InferenceSession(path, options)
    assert session.report["threads"] == threads, session.report["threads"]
    return lambda feeds: session.run(None, feeds)


def _ort(path: str, threads: int) -> Runner:
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
    """Times model `name` of bench/models.py, compiled here."""
    from bench import models

    path = str(models.onnx_path(name))
    sessions: dict[tuple[str, int], Runner] = {}
    for threads in counts:
        sessions["glow", threads] = _glow(path, threads)
        sessions["ort", threads] = _ort(path, threads)
    return time_sessions(name, sessions, models.spec(name).inputs(), counts, blocks, block_seconds, idle)


def time_sessions(
    name: str,
    sessions: dict[tuple[str, int], Runner],
    feeds: dict[str, np.ndarray],
    counts: Sequence[int],
    blocks: int,
    block_seconds: float,
    idle: float,
) -> dict[str, Any]:
    """Checks the outputs of the ("glow" | "ort", threads) sessions, then times them in alternating blocks."""
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


def profile_model(
    name: str, counts: Sequence[int], blocks: int, block_seconds: float, idle: float
) -> dict[str, Any]:
    """Per-kernel times of model `name` at each thread count, from profiled runs in alternating blocks."""
    import glow_mlir
    from bench import models
    from glow_mlir.backends.cpu.profile import CALLS_ROW, NS_ROW
    from glow_mlir.frontends.onnx import import_model

    model = onnx.load(models.onnx_path(name))
    graph = import_model(model)
    feeds = models.spec(name).inputs()
    compiled = {n: glow_mlir.compile(graph, profile=True, threads=n, progress=False) for n in counts}
    outputs = {n: m.run(feeds) for n, m in compiled.items()}
    bitwise = all(
        np.array_equal(outputs[n][key], outputs[counts[0]][key]) for n in counts[1:] for key in outputs[n]
    )
    kernel_medians: dict[int, list[np.ndarray]] = {n: [] for n in counts}
    run_medians: dict[int, list[float]] = {n: [] for n in counts}
    outside_medians: dict[int, list[float]] = {n: [] for n in counts}
    for b in range(blocks):
        for n in counts[b % len(counts) :] + counts[: b % len(counts)]:
            time.sleep(idle)
            m = compiled[n]
            m.run(feeds)  # warm-up
            m.runs.clear()
            deadline = time.perf_counter() + block_seconds
            while len(m.runs) < 3 or time.perf_counter() < deadline:
                m.run(feeds)
            kernel_medians[n].append(np.median([r.counters[NS_ROW] for r in m.runs], axis=0))
            run_medians[n].append(statistics.median(r.duration_ns for r in m.runs))
            outside_medians[n].append(statistics.median(r.duration_ns - r.counters[NS_ROW].sum() for r in m.runs))
    known = {node.name: node.op_type for node in model.graph.node}
    sites: dict[tuple[str, tuple[str, ...], int], dict[str, Any]] = {}
    for n in counts:
        m = compiled[n]
        best = np.min(kernel_medians[n], axis=0)
        calls = m.runs[-1].counters[CALLS_ROW]
        seen: dict[tuple[str, tuple[str, ...]], int] = {}
        for i, kernel in enumerate(m.kernels):
            # The same site at every thread count: its kernel, its nodes, and which of its kind it is.
            occurrence = seen[kernel.symbol, kernel.nodes] = seen.get((kernel.symbol, kernel.nodes), -1) + 1
            site = sites.setdefault((kernel.symbol, kernel.nodes, occurrence), {
                "kernel": kernel.symbol, "nodes": kernel.label(known), "ms": {}, "calls": {}, "splits": {},
            })  # fmt: skip
            site["ms"][n] = best[i] / 1e6
            site["calls"][n] = int(calls[i])
            site["splits"][n] = [
                {"trips": list(s.trips), "dims": list(s.dims), "blocks": s.blocks(n)} for s in kernel.splits
            ]
    for m in compiled.values():
        m.close()
    return {
        "model": name, "bitwise_across_threads": bitwise, "kernels": list(sites.values()),
        "run_ms": {n: min(run_medians[n]) / 1e6 for n in counts},
        "outside_ms": {n: min(outside_medians[n]) / 1e6 for n in counts},
    }  # fmt: skip


def _split_text(splits: list[dict[str, Any]]) -> str:
    """What a kernel's regions split: 'trips [dims] -> per-thread iterations', or 'serial'."""
    texts = [
        f"{'x'.join(map(str, s['trips']))} [{', '.join(s['dims'])}] -> {'/'.join(map(str, s['blocks']))}"
        for s in splits
    ]
    return "; ".join(texts) or "serial"


def profile_table(result: dict[str, Any], base: int, threads: int, top: int) -> str:
    """The kernels of `result` (profile_model) at `base` and `threads` threads, the most time lost against
    perfect scaling first (the module doc), then the totals."""
    kernels = [k for k in result["kernels"] if base in k["ms"] and threads in k["ms"]]
    lost = {id(k): k["ms"][threads] - k["ms"][base] * base / threads for k in kernels}
    kernels.sort(key=lambda k: -lost[id(k)])
    head = ["kernel", "nodes", f"{base}T ms", f"{threads}T ms", "speedup", "lost ms", "forks", f"split ({threads}T)"]
    lines = [f"{result['model']}: per-kernel scaling from {base} to {threads} threads (best block medians)",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]  # fmt: skip
    for k in kernels[:top]:
        nodes = k["nodes"] if len(k["nodes"]) <= 40 else k["nodes"][:37] + "..."
        t1, tn = k["ms"][base], k["ms"][threads]
        forks = k["calls"][threads] * len(k["splits"][threads])
        cells = [k["kernel"], nodes, f"{t1:.3f}", f"{tn:.3f}", f"{t1 / tn:.2f}x" if tn else "-", f"{lost[id(k)]:.3f}",
                 str(forks), _split_text(k["splits"][threads])]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    split = [k for k in kernels if k["splits"][threads]]
    serial = [k for k in kernels if not k["splits"][threads]]
    outside = {n: result["outside_ms"][n] for n in (base, threads)}
    # The run as its parts' best figures add up: the least disturbed time of each kernel, and of the rest.
    parts = {n: sum(k["ms"][n] for k in kernels) + outside[n] for n in (base, threads)}
    run = result["run_ms"]
    lines += [
        f"run, kernels' figures + outside: {parts[base]:.3f} ms at {base}T, {parts[threads]:.3f} ms at {threads}T "
        f"({parts[base] / parts[threads]:.2f}x); best block median of whole runs: {run[base]:.3f} and "
        f"{run[threads]:.3f} ms ({run[base] / run[threads]:.2f}x)",
        f"lost against perfect scaling: {parts[threads] - parts[base] * base / threads:.3f} ms: split kernels "
        f"{sum(lost[id(k)] for k in split):.3f} ({len(split)} sites, {sum(k['ms'][base] for k in split):.3f} ms "
        f"at {base}T), serial kernels {sum(lost[id(k)] for k in serial):.3f} ({len(serial)} sites, "
        f"{sum(k['ms'][base] for k in serial):.3f} ms at {base}T), outside kernels "
        f"{outside[threads] - outside[base] * base / threads:.3f}; "
        f"forks per run: {sum(k['calls'][threads] * len(k['splits'][threads]) for k in kernels)}",
        f"outputs bitwise equal across thread counts: {'yes' if result['bitwise_across_threads'] else 'NO'}",
    ]
    return "\n".join(lines)


def repeat_weights(model: onnx.ModelProto) -> None:
    """Replaces every initializer's values by its first WEIGHT_PERIOD values, repeated (module docstring)."""
    for index, tensor in enumerate(model.graph.initializer):
        array = numpy_helper.to_array(tensor)
        if array.size > WEIGHT_PERIOD and array.dtype.kind == "f":
            repeated = np.resize(array.reshape(-1)[:WEIGHT_PERIOD], array.size).reshape(array.shape)
            model.graph.initializer[index].CopyFrom(numpy_helper.from_array(repeated, tensor.name))


def write_bundle(folder: Path, names: Sequence[str], counts: Sequence[int]) -> None:
    """Compiles each model for each thread count into `folder` (module docstring)."""
    from bench import models
    from glow_mlir.backends.cpu import openmp

    folder.mkdir(parents=True, exist_ok=True)
    runtime = openmp.runtime_library()
    assert runtime is not None, "threads > 1 needs intel-openmp"
    shutil.copy(runtime, folder / RUNTIME)
    for name in names:
        model = onnx.load(models.onnx_path(name))
        repeat_weights(model)
        target = folder / name
        target.mkdir(exist_ok=True)
        onnx.save(model, target / "model.onnx")
        np.savez(target / "feeds.npz", **models.spec(name).inputs())
        for threads in counts:
            entry = target / f"glow-{threads}"
            shutil.rmtree(entry, ignore_errors=True)
            os.environ.update(GLOW_MLIR_CACHE="1", GLOW_MLIR_CACHE_DIR=str(entry))
            _glow(str(target / "model.onnx"), threads)
            assert len(list(entry.glob("*.so"))) == 1, f"{name} at {threads} threads was not stored in {entry}"
        print(f"bundled {name}", flush=True)
    os.environ.pop("GLOW_MLIR_CACHE_DIR")
    revision = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True, text=True)
    manifest = {"models": list(names), "threads": list(counts), "compiled_by": f"glow-mlir {revision.stdout.strip()}"}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2))


def _library_module() -> types.ModuleType:
    """glow_mlir.library, also where MLIR is not installed: the package's __init__ imports the compiler, so
    there `glow_mlir` is first registered as a bare package of its folder, which imports only what is asked."""
    try:
        importlib.import_module("mlir")
    except ImportError:
        package = types.ModuleType("glow_mlir")
        package.__path__ = [str(ROOT / "glow_mlir")]
        sys.modules.setdefault("glow_mlir", package)
    from glow_mlir import library

    return library


def bundle_model(
    folder: Path, name: str, counts: Sequence[int], blocks: int, block_seconds: float, idle: float
) -> dict[str, Any]:
    """Times model `name` of the bundle in `folder` (written by write_bundle)."""
    library = _library_module()
    path = folder / name
    sessions: dict[tuple[str, int], Runner] = {}
    for threads in counts:
        model, _ = library.open_entry(path / f"glow-{threads}")
        sessions["glow", threads] = lambda feeds, model=model: list(model.run(feeds).values())
        sessions["ort", threads] = _ort(str(path / "model.onnx"), threads)
    with np.load(path / "feeds.npz") as data:
        feeds = {key: data[key] for key in data.files}
    return time_sessions(name, sessions, feeds, counts, blocks, block_seconds, idle)


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
    parser.add_argument("--top", type=int, default=30, help="kernels listed per table with --profile (default 30)")
    bundles = parser.add_mutually_exclusive_group()
    bundles.add_argument("--profile", action="store_true", help="per-kernel scaling of glow-mlir's kernels instead")
    bundles.add_argument("--write-bundle", type=Path, metavar="DIR", help="compile the models into DIR and stop")
    bundles.add_argument("--bundle", type=Path, metavar="DIR", help="time the models compiled into DIR")
    args = parser.parse_args(argv)
    # bench/__init__.py sets it to keep numpy's and torch's BLAS on one thread; libiomp5 would take it as its
    # default team size (nthreads-var), which a user of glow-mlir has not set.
    os.environ.pop("OMP_NUM_THREADS", None)
    counts = [int(n) for n in args.threads.split(",")]
    names = args.models.split(",")
    if args.write_bundle:
        write_bundle(args.write_bundle, names, counts)
        return 0
    if args.bundle:
        manifest = json.loads((args.bundle / "manifest.json").read_text())
        counts, names = manifest["threads"], manifest["models"]
        # Bound before any model loads, so that the libraries' `__kmpc_*` calls resolve to it.
        ctypes.CDLL(str(args.bundle / RUNTIME), mode=ctypes.RTLD_GLOBAL)
        print(f"bundle compiled by {manifest['compiled_by']}; onnxruntime {onnxruntime.__version__}", flush=True)
    if args.profile:
        results = []
        for name in names:
            results.append(profile_model(name, counts, args.blocks, args.block_seconds, args.idle))
            for threads in counts[1:]:
                print(profile_table(results[-1], counts[0], threads, args.top) + "\n", flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=2)
        return 0
    rows = []
    for name in names:
        if args.bundle:
            rows.append(bundle_model(args.bundle, name, counts, args.blocks, args.block_seconds, args.idle))
        else:
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
