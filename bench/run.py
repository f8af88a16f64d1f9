"""glow-mlir against onnxruntime and PyTorch on one core: `python -m bench.run [--models a,b] [--quick]`.

For each model of bench/models.py it creates a glow-mlir `InferenceSession` (timing the construction:
ONNX import and compile), an onnxruntime session (one intra-op and one inter-op thread, ORT_ENABLE_ALL) and
the PyTorch module (eager, `torch.inference_mode()`, one thread), checks glow-mlir's outputs against
onnxruntime's (rtol = atol = 1e-4, the criterion of test/python/test_real_models.py) and times the three in
round-robin rounds, so that whatever else the machine does hits all three alike. A GEMM micro-benchmark
times a glow-mlir graph of one matmul by a constant matrix against numpy's single-threaded BLAS the same
way, and compares its product with numpy's normwise (max abs difference <= 1e-4 x the largest element).
GFLOP/s count 2 x the multiply-accumulates of the dense ops (bench/flops.py); % of peak divides by the
single-core FMA throughput measured at the start of the run (bench/peak.py).

Run it as a module, from the repository root: the package's __init__ pins the BLAS and OpenMP libraries to
one thread before numpy and torch load, and `blas_threads` checks that numpy's OpenBLAS took it.

Time is the calling thread's CPU time by default (`--clock cpu`): every library runs single-threaded on the
calling thread, so that is the time the computation took, while wall-clock time also counts the time other
processes held the core. Each framework's process CPU time is compared with its thread CPU time to show that
no helper thread did work unseen. `--clock wall` reports wall-clock medians instead (both are in the JSON).

Each model (and GEMM shape) is time-boxed: warm-up calls, then 3 to 5 rounds sized so the measurement takes
about `--budget` seconds, but never fewer than 3 timed calls per framework; the figure is the median call.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import importlib.metadata
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
import torch

import glow_mlir
from bench import models
from bench.flops import count_flops
from bench.peak import measure_peak

ROOT = Path(__file__).resolve().parents[1]
TOLERANCE = 1e-4
MIN_ROUNDS = 3
MAX_ROUNDS = 5
BUDGET_SECONDS = 25.0
QUICK_BUDGET_SECONDS = 1.0
WARMUP_SECONDS = 0.5
QUICK_WARMUP_SECONDS = 0.05
# OpenBLAS's thread-count query under the names its builds export (numpy's wheels: scipy-openblas, ILP64).
BLAS_THREAD_QUERIES = ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_", "openblas_get_num_threads")
CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.thread_time, "wall": time.perf_counter}


@dataclass(frozen=True)
class GemmShape:
    name: str
    m: int
    n: int
    k: int


GEMM_SHAPES = {
    s.name: s
    for s in (
        GemmShape("512^3", 512, 512, 512),
        GemmShape("1024^3", 1024, 1024, 1024),
        GemmShape("2048^3", 2048, 2048, 2048),
        GemmShape("resnet50-conv3x3", 3136, 64, 576),
        GemmShape("resnet50-1x1-stage4", 49, 2048, 512),
        GemmShape("resnet50-fc", 1, 1000, 2048),
        GemmShape("bert-ffn", 16, 512, 128),
    )
}


@dataclass
class Timing:
    """The timed calls of one framework on one model."""

    iterations: int = 0
    cpu_seconds: list[float] = field(default_factory=list)
    wall_seconds: list[float] = field(default_factory=list)
    process_cpu: float = 0.0
    thread_cpu: float = 0.0

    def summary(self, clock: str) -> dict[str, float | int]:
        times = self.cpu_seconds if clock == "cpu" else self.wall_seconds
        return {
            "ms": 1e3 * statistics.median(times),
            "min_ms": 1e3 * min(times),
            "cpu_ms": 1e3 * statistics.median(self.cpu_seconds),
            "wall_ms": 1e3 * statistics.median(self.wall_seconds),
            "iterations": self.iterations,
            # Above 1: threads other than the calling one used CPU while it ran.
            "process_cpu_over_thread_cpu": self.process_cpu / self.thread_cpu if self.thread_cpu else float("nan"),
        }


Runner = Callable[[], list[np.ndarray]]


def measure(
    runners: dict[str, Runner], budget: float, warmup: float
) -> tuple[dict[str, list[np.ndarray]], dict[str, Timing], dict[str, str]]:
    """Warms up and times `runners` in round-robin rounds; returns first outputs, timings and errors.

    Warm-up calls each runner for `warmup` seconds (at least once) and takes its fastest call as the estimate
    that sizes the rounds: MIN_ROUNDS to MAX_ROUNDS of them, each runner's share of a round being about
    budget / (runners x rounds) seconds and at least one call. Every call is timed by both clocks.
    """
    outputs: dict[str, list[np.ndarray]] = {}
    estimates: dict[str, float] = {}
    errors: dict[str, str] = {}
    for name, run in runners.items():
        try:
            start = time.perf_counter()
            outputs[name] = run()
            estimates[name] = time.perf_counter() - start
            while time.perf_counter() - start < warmup:
                call = time.perf_counter()
                run()
                estimates[name] = min(estimates[name], time.perf_counter() - call)
        except Exception as e:  # noqa: BLE001  (a failing framework is reported in its row)
            errors[name] = _error_text(e)
            outputs.pop(name, None)
    live = {name: run for name, run in runners.items() if name not in errors}
    timings = {name: Timing() for name in live}
    if not live:
        return outputs, timings, errors
    rounds = min(MAX_ROUNDS, max(MIN_ROUNDS, int(budget / sum(estimates.values()))))
    per_round = {name: max(1, int(budget / (len(live) * rounds * estimates[name]))) for name in live}
    for _ in range(rounds):
        for name, run in live.items():
            timing = timings[name]
            process, thread = time.process_time(), time.thread_time()
            for _ in range(per_round[name]):
                wall, cpu = time.perf_counter(), time.thread_time()
                run()
                timing.cpu_seconds.append(time.thread_time() - cpu)
                timing.wall_seconds.append(time.perf_counter() - wall)
            timing.process_cpu += time.process_time() - process
            timing.thread_cpu += time.thread_time() - thread
            timing.iterations += per_round[name]
    return outputs, timings, errors


def compare(actual: list[np.ndarray], expected: list[np.ndarray]) -> dict[str, Any]:
    """Max abs difference, that over the reference's max magnitude, and allclose at TOLERANCE."""
    if [a.shape for a in actual] != [e.shape for e in expected]:
        return {"match": False, "max_abs_diff": float("nan"), "max_rel_diff": float("nan")}
    pairs = list(zip(actual, expected, strict=True))
    abs_diff = max(float(np.max(np.abs(a.astype(np.float64) - e), initial=0.0)) for a, e in pairs)
    scale = max(float(np.max(np.abs(e), initial=0.0)) for e in expected)
    match = all(np.allclose(a, e, rtol=TOLERANCE, atol=TOLERANCE) for a, e in pairs)
    return {"match": match, "max_abs_diff": abs_diff, "max_rel_diff": abs_diff / scale if scale else abs_diff}


def bench_model(name: str, budget: float, warmup: float, clock: str, peak: float) -> dict[str, Any]:
    spec = models.spec(name)
    path = models.onnx_path(name)
    flops = count_flops(path)
    feeds = spec.inputs()
    row: dict[str, Any] = {"model": name, "description": spec.description, "gflop": flops / 1e9, "errors": {}}

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    ort = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    module = spec.build()
    tensors = [torch.from_numpy(a) for a in feeds.values()]

    def run_torch() -> list[np.ndarray]:
        with torch.inference_mode():
            return [module(*tensors).numpy()]

    runners: dict[str, Runner] = {}
    try:
        start = time.perf_counter()
        glow = glow_mlir.InferenceSession(path, threads=1)
        row["compile_s"] = time.perf_counter() - start
        runners["glow"] = lambda: glow.run(None, feeds)
    except Exception as e:  # noqa: BLE001  (reported in the row; the other frameworks still run)
        row["errors"]["glow"] = _error_text(e)
    runners["ort"] = lambda: ort.run(None, feeds)
    runners["torch"] = run_torch

    outputs, timings, errors = measure(runners, budget, warmup)
    row["errors"].update(errors)
    for framework, timing in timings.items():
        row[framework] = timing.summary(clock)
    if "ort" in outputs:
        for framework in ("glow", "torch"):
            if framework in outputs:
                row[f"{framework}_vs_ort"] = compare(outputs[framework], outputs["ort"])
    if "glow" in row:
        glow_ms = row["glow"]["ms"]
        row["glow_gflops"] = flops / (glow_ms * 1e6)
        row["glow_peak_percent"] = 100 * row["glow_gflops"] / peak
        for framework in ("ort", "torch"):
            if framework in row:
                row[f"{framework}_over_glow"] = row[framework]["ms"] / glow_ms
    return row


def bench_gemm(shape: GemmShape, budget: float, warmup: float, clock: str, peak: float) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((shape.m, shape.k), dtype=np.float32)
    w = rng.standard_normal((shape.k, shape.n), dtype=np.float32)
    row: dict[str, Any] = {"shape": shape.name, "m": shape.m, "n": shape.n, "k": shape.k, "errors": {}}
    runners: dict[str, Runner] = {}
    try:
        graph = glow_mlir.Graph("gemm")
        graph.output("y", graph.matmul(graph.input("x", (shape.m, shape.k)), graph.constant(w)))
        start = time.perf_counter()
        compiled = glow_mlir.compile(graph)
        row["compile_s"] = time.perf_counter() - start
        runners["glow"] = lambda: [compiled.run({"x": x})["y"]]
    except Exception as e:  # noqa: BLE001  (reported in the row)
        row["errors"]["glow"] = _error_text(e)
    runners["numpy"] = lambda: [x @ w]
    outputs, timings, errors = measure(runners, budget, warmup)
    row["errors"].update(errors)
    flops = 2 * shape.m * shape.n * shape.k
    for framework, timing in timings.items():
        summary = timing.summary(clock)
        summary["gflops"] = flops / (summary["ms"] * 1e6)
        summary["peak_percent"] = 100 * summary["gflops"] / peak
        row[framework] = summary
    if "glow" in outputs and "numpy" in outputs:
        # Another summation order over K terms differs by up to ~K ulps of the largest partial sums, more than
        # allclose's 1e-4 allows on small elements at K = 2048; so products are compared normwise.
        result = compare(outputs["glow"], outputs["numpy"])
        result["match"] = result["max_rel_diff"] <= TOLERANCE
        row["glow_vs_numpy"] = result
    if "glow" in row and "numpy" in row:
        row["glow_over_numpy"] = row["glow"]["gflops"] / row["numpy"]["gflops"]
    return row


def blas_threads() -> tuple[str, int | None]:
    """numpy's OpenBLAS (found among the libraries numpy loaded) and the thread count it reports."""
    libraries = {line.split()[-1] for line in Path("/proc/self/maps").read_text().splitlines() if "/" in line}
    for library in sorted(libraries):
        if "openblas" in Path(library).name.lower():
            handle = ctypes.CDLL(library)
            for symbol in BLAS_THREAD_QUERIES:
                if hasattr(handle, symbol):
                    return Path(library).name, int(getattr(handle, symbol)())
    return "unknown BLAS", None


def machine(peak: float, clock: str, command: str, blas: tuple[str, int | None]) -> dict[str, Any]:
    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines()

    def field_of(key: str) -> str:
        pairs = (line.split(":", 1) for line in cpuinfo if ":" in line)
        return next((value.strip() for name, value in pairs if name.strip() == key), "?")

    try:
        commit = subprocess.run(
            ["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return {
        "cpu": f"{field_of('model name')} (family {field_of('cpu family')}, model {field_of('model')})",
        "cores": os.cpu_count(),
        "avx512": "avx512f" in field_of("flags").split(),
        "peak_gflops": peak,
        "clock": clock,
        "glow_mlir": f"{importlib.metadata.version('glow-mlir')} (git {commit})",
        "onnxruntime": onnxruntime.__version__,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "blas": blas[0],
        "blas_threads": blas[1],
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "command": command,
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "load_average_start": os.getloadavg()[0],
    }


def _error_text(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return f"{type(error).__name__}: {text}"


def _ms(value: float) -> str:
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"


def _percent(value: float) -> str:
    return f"{value:.1f}" if value >= 1 else f"{value:.2f}"


def _cell(row: dict[str, Any], key: str, fmt: Callable[[Any], str]) -> str:
    return fmt(row[key]) if key in row else "-"


def _diff(result: dict[str, Any] | None) -> str:
    if result is None:
        return "-"
    verdict = "ok" if result["match"] else "MISMATCH"
    return f"{result['max_abs_diff']:.1e} abs, {result['max_rel_diff']:.1e} rel ({verdict})"


def provenance(m: dict[str, Any]) -> str:
    """The end of a report's machine line (`machine`'s fields `m`): when, under what load, by what command."""
    end = m.get("load_average_end", float("nan"))
    return (f"{m['date']}, load average {m['load_average_start']:.1f} at start, {end:.1f} at end. "
            f"Command: `{m['command']}`.")  # fmt: skip


def markdown(report: dict[str, Any]) -> str:
    m = report["machine"]
    clock = "thread CPU time" if m["clock"] == "cpu" else "wall-clock time"
    lines = [
        "| model | glow ms | ort ms | torch ms | ort/glow | torch/glow | glow GFLOP/s | % peak | compile s "
        "| max diff vs ort |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    notes: list[str] = []
    for row in report["models"]:
        lines.append(
            "| "
            + " | ".join(
                [
                    row["model"],
                    _cell(row, "glow", lambda t: _ms(t["ms"])),
                    _cell(row, "ort", lambda t: _ms(t["ms"])),
                    _cell(row, "torch", lambda t: _ms(t["ms"])),
                    _cell(row, "ort_over_glow", lambda r: f"{r:.3g}"),
                    _cell(row, "torch_over_glow", lambda r: f"{r:.3g}"),
                    _cell(row, "glow_gflops", lambda g: f"{g:.3g}"),
                    _cell(row, "glow_peak_percent", _percent),
                    _cell(row, "compile_s", lambda s: f"{s:.2f}"),
                    _diff(row.get("glow_vs_ort")),
                ]
            )
            + " |"
        )
        notes += [f"- {row['model']}, {fw}: {err.splitlines()[0][:300]}" for fw, err in row["errors"].items()]
    if report["gemm"]:
        lines += [
            "",
            "| GEMM (M x N x K) | glow ms | numpy ms | glow GFLOP/s | numpy GFLOP/s | glow % peak | glow/numpy "
            "| max diff vs numpy |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
        ]
        for row in report["gemm"]:
            lines.append(
                "| "
                + " | ".join(
                    [
                        f"{row['shape']} ({row['m']} x {row['n']} x {row['k']})",
                        _cell(row, "glow", lambda t: _ms(t["ms"])),
                        _cell(row, "numpy", lambda t: _ms(t["ms"])),
                        _cell(row, "glow", lambda t: f"{t['gflops']:.3g}"),
                        _cell(row, "numpy", lambda t: f"{t['gflops']:.3g}"),
                        _cell(row, "glow", lambda t: _percent(t["peak_percent"])),
                        _cell(row, "glow_over_numpy", lambda r: f"{r:.3g}"),
                        _diff(row.get("glow_vs_numpy")),
                    ]
                )
                + " |"
            )
            notes += [f"- GEMM {row['shape']}, {fw}: {err.splitlines()[0][:300]}" for fw, err in row["errors"].items()]
    helpers = sorted(
        {
            fw
            for row in (*report["models"], *report["gemm"])
            for fw in ("glow", "ort", "torch", "numpy")
            if fw in row and row[fw]["process_cpu_over_thread_cpu"] > 1.05
        }
    )
    lines += [
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores{', AVX-512' if m['avx512'] else ''}; measured single-core peak "
        f"{m['peak_gflops']:.1f} GFLOP/s (fp32 FMA, bench/peak.py). Times are medians of {clock}, one thread each. "
        f"glow-mlir {m['glow_mlir']}, onnxruntime {m['onnxruntime']}, torch {m['torch']} ({m['torch_threads']} "
        f"thread), numpy {m['numpy']} ({m['blas']}, {m['blas_threads']} thread), Python {m['python']}; "
        + provenance(m),
    ]
    if helpers:
        lines.append(f"Helper threads used CPU (process/thread CPU time > 1.05) for: {', '.join(helpers)}.")
    if notes:
        lines += ["", "Errors:", *notes]
    return "\n".join(lines) + "\n"


def _list(value: str, known: Sequence[str], what: str) -> list[str]:
    if value == "none":
        return []
    if value == "all":
        return list(known)
    names = [v for v in value.split(",") if v]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)} (known: {', '.join(known)}, all, none)")
    return names


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--models", default="all", help=f"comma-separated, 'all' or 'none' ({', '.join(models.MODELS)})"
    )
    parser.add_argument("--gemm", default="all", help=f"comma-separated, 'all' or 'none' ({', '.join(GEMM_SHAPES)})")
    parser.add_argument("--quick", action="store_true", help="short time boxes (a smoke run; figures are rough)")
    parser.add_argument("--budget", type=float, help="seconds of measurement per model or GEMM shape")
    parser.add_argument("--clock", choices=list(CLOCKS), default="cpu", help="thread CPU time (default) or wall")
    parser.add_argument("--json", type=Path, help="write the full results as JSON here")
    parser.add_argument("--markdown", type=Path, help="write the tables here")
    args = parser.parse_args(argv)
    names = _list(args.models, list(models.MODELS), "models")
    shapes = _list(args.gemm, list(GEMM_SHAPES), "GEMM shapes")
    budget = args.budget or (QUICK_BUDGET_SECONDS if args.quick else BUDGET_SECONDS)
    warmup = QUICK_WARMUP_SECONDS if args.quick else WARMUP_SECONDS

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    blas = blas_threads()
    if blas[1] != 1:
        raise SystemExit(f"numpy's BLAS ({blas[0]}) reports {blas[1]} threads, not 1: run as `python -m bench.run`")
    clock = CLOCKS[args.clock]
    peak = measure_peak(clock, repeats=3 if args.quick else 5)
    print(f"measured peak: {peak:.1f} GFLOP/s", file=sys.stderr)
    command = shlex.join(["python", "-m", "bench.run", *(argv if argv is not None else sys.argv[1:])])
    report: dict[str, Any] = {"machine": machine(peak, args.clock, command, blas), "models": [], "gemm": []}

    for name in names:
        print(f"model {name} ...", file=sys.stderr, flush=True)
        try:
            row = bench_model(name, budget, warmup, args.clock, peak)
        except Exception as e:  # noqa: BLE001  (e.g. an export failure: reported, the run goes on)
            traceback.print_exc()
            row = {"model": name, "errors": {"bench": _error_text(e)}}
        report["models"].append(row)
        print(f"  {json.dumps(row, default=str)}", file=sys.stderr, flush=True)
        gc.collect()
    for shape in shapes:
        print(f"gemm {shape} ...", file=sys.stderr, flush=True)
        row = bench_gemm(GEMM_SHAPES[shape], budget, warmup, args.clock, peak)
        report["gemm"].append(row)
        print(f"  {json.dumps(row, default=str)}", file=sys.stderr, flush=True)
        gc.collect()
    return finish(report, markdown, args.markdown, args.json)


def finish(
    report: dict[str, Any], render: Callable[[dict[str, Any]], str], markdown_path: Path | None, json_path: Path | None
) -> int:
    """Records the load average at the end, prints the report's markdown tables (`render`) and writes them and
    the report where asked; the exit status."""
    report["machine"]["load_average_end"] = os.getloadavg()[0]
    table = render(report)
    print(table)
    if markdown_path:
        markdown_path.write_text(table)
    if json_path:
        json_path.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
