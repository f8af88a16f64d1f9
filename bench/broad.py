"""The broad benchmark: glow-mlir against onnxruntime on the bench models and the whole model zoo, with the
compile time and a per-kernel profile of each: `python -m bench.broad [--models a,b] [--quick]`.

The set: bench/models.py's eleven networks (the nine of the first benchmark and the performance issue's BERT
encoder at sequence 64 and 128) and every model of test/models/zoo.py (22 timm and transformers architectures built from configs with random weights, TorchScript export, static shapes), named `zoo.<name>`.
None is left out for being slow or large: a model that fails shows its error in its row.

For each model, in this one process: a glow-mlir `InferenceSession(threads=1)` with the compile cache off (so
"compile s" is a cold compile: ONNX import, passes, LLVM), an onnxruntime session (one intra-op and one
inter-op thread, ORT_ENABLE_ALL), their outputs compared, then the two timed in alternating rounds
(bench/run.py's `measure`: whatever else the machine does falls on both alike) and the ratio of the medians,
ort/glow (> 1: glow-mlir is faster). Then the profiling variant of the model (`compile(profile=True)`,
glow_mlir/profiling.py) runs for `--profile-seconds`, and the row keeps its slowest kernels, each with the
ONNX nodes it computes and its share of the run.

`--json` keeps every figure (written after each model, so an interrupted run keeps what it measured),
`--markdown` the table, `--plot` a PNG of ort/glow and compile time per model (matplotlib).
"""

from __future__ import annotations

import argparse
import ast
import gc
import json
import os
import shlex
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime

import glow_mlir
from bench import models
from bench.run import CLOCKS, _error_text, _list, compare, machine, measure, provenance
from glow_mlir.frontends.onnx.importer import import_model
from glow_mlir.profiling import summarize

ZOO_PREFIX = "zoo."
BUDGET_SECONDS = 6.0
QUICK_BUDGET_SECONDS = 0.5
WARMUP_SECONDS = 0.3
PROFILE_SECONDS = 2.0
QUICK_PROFILE_SECONDS = 0.2
# Profiled runs at least: each kernel's figure is a sum over them.
MIN_PROFILE_RUNS = 3


@dataclass(frozen=True)
class Entry:
    """One model of the broad set: where it comes from, its ONNX file and its seeded inputs."""

    name: str
    source: str
    path: Callable[[], Path]
    feeds: Callable[[], dict[str, np.ndarray]]


def _zoo_names() -> list[str]:
    """The zoo's model names, read without importing it (which takes timm and transformers)."""
    tree = ast.parse(models.ZOO_PATH.read_text())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "MODELS":
            assert isinstance(node.value, ast.Dict)
            return [ast.literal_eval(key) for key in node.value.keys if key is not None]
    raise RuntimeError(f"no MODELS table in {models.ZOO_PATH}")


def entries() -> dict[str, Entry]:
    """The broad set: the bench models, then the zoo's."""
    found = {
        name: Entry(
            name, "bench", lambda name=name: models.onnx_path(name), lambda name=name: models.spec(name).inputs()
        )
        for name in models.MODELS
    }
    for name in _zoo_names():
        found[ZOO_PREFIX + name] = Entry(
            ZOO_PREFIX + name,
            "zoo",
            lambda name=name: models.zoo().exported(name, "torchscript", False),
            lambda name=name: models.zoo().feeds(name, models.zoo().MODELS[name].shape),
        )
    return found


def profile(path: Path, feeds: dict[str, np.ndarray], seconds: float, top: int) -> dict[str, Any]:
    """Runs the profiling variant of the model for about `seconds` (MIN_PROFILE_RUNS at least) and returns
    the per-run time in kernels and the `top` slowest kernels with their ONNX nodes and op types."""
    proto = onnx.load(path)
    op_types = {node.name: node.op_type for node in proto.graph.node}
    with glow_mlir.compile(import_model(proto), profile=True, cache=False, progress=False) as model:
        start = time.perf_counter()
        while len(model.runs) < MIN_PROFILE_RUNS or time.perf_counter() - start < seconds:
            model.run(feeds)
        rows, total_ms = summarize(model.kernels, model.runs, op_types)
        runs = len(model.runs)
    return {
        "runs": runs,
        "kernels": len(rows),
        "run_ms": total_ms / runs,
        "in_kernels_ms": sum(r.total_ms for r in rows) / runs,
        "top": [
            {
                "kernel": r.kernel,
                "nodes": list(r.nodes),
                "op_types": [op_types[n] for n in r.nodes if n in op_types],
                "ms": r.total_ms / runs,
                "percent": r.percent,
            }
            for r in rows[:top]
        ],
    }


def bench_entry(
    entry: Entry, budget: float, warmup: float, clock: str, profile_seconds: float, top: int
) -> dict[str, Any]:
    path = entry.path()
    feeds = entry.feeds()
    row: dict[str, Any] = {"model": entry.name, "source": entry.source, "errors": {}}
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    ort = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    runners = {}
    try:
        start = time.perf_counter()
        glow = glow_mlir.InferenceSession(path, threads=1)
        row["compile_s"] = time.perf_counter() - start
        report = glow.report
        row["stage_seconds"] = {"import": report.get("import_seconds", 0.0), **report.get("stage_seconds", {})}
        runners["glow"] = lambda: glow.run(None, feeds)
    except Exception as e:  # noqa: BLE001  (reported in the row)
        row["errors"]["glow"] = _error_text(e)
    runners["ort"] = lambda: ort.run(None, feeds)
    outputs, timings, errors = measure(runners, budget, warmup)
    row["errors"].update(errors)
    for framework, timing in timings.items():
        row[framework] = timing.summary(clock)
    if "glow" in outputs and "ort" in outputs:
        row["glow_vs_ort"] = compare(outputs["glow"], outputs["ort"])
    if "glow" in row and "ort" in row:
        row["ort_over_glow"] = row["ort"]["ms"] / row["glow"]["ms"]
    if "glow" in row and profile_seconds > 0:
        try:
            row["profile"] = profile(path, feeds, profile_seconds, top)
        except Exception as e:  # noqa: BLE001  (reported in the row)
            row["errors"]["profile"] = _error_text(e)
    return row


def _kernels(row: dict[str, Any]) -> str:
    """The slowest kernels of a row: each one's op types, its first ONNX node (and how many more it computes),
    and its share of a run."""
    if "profile" not in row:
        return "-"
    parts = []
    for kernel in row["profile"]["top"]:
        ops = "+".join(dict.fromkeys(kernel["op_types"])) or kernel["kernel"]
        nodes = kernel["nodes"]
        where = f" `{nodes[0]}`{f' +{len(nodes) - 1}' if len(nodes) > 1 else ''}" if nodes else ""
        parts.append(f"{ops}{where} {kernel['percent']:.0f} %")
    return "; ".join(parts)


def markdown(report: dict[str, Any]) -> str:
    m = report["machine"]
    lines = [
        "| model | source | glow ms | ort ms | ort/glow | compile s | max diff vs ort "
        "| slowest kernels (ONNX nodes, share of a run) |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    notes = []
    for row in report["models"]:
        diff = row.get("glow_vs_ort")
        lines.append(
            "| "
            + " | ".join(
                [
                    row["model"],
                    row.get("source", "-"),
                    f"{row['glow']['ms']:.3g}" if "glow" in row else "-",
                    f"{row['ort']['ms']:.3g}" if "ort" in row else "-",
                    f"{row['ort_over_glow']:.3g}" if "ort_over_glow" in row else "-",
                    f"{row['compile_s']:.2f}" if "compile_s" in row else "-",
                    f"{diff['max_abs_diff']:.1e}{'' if diff['match'] else ' (> 1e-4)'}" if diff else "-",
                    _kernels(row),
                ]
            )
            + " |"
        )
        notes += [f"- {row['model']}, {fw}: {err.splitlines()[0][:300]}" for fw, err in row["errors"].items()]
    clock = "thread CPU time" if m["clock"] == "cpu" else "wall-clock time"
    lines += [
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores. Times are medians of {clock}, one thread each, glow-mlir and "
        f"onnxruntime alternating in one process. glow-mlir {m['glow_mlir']}, onnxruntime {m['onnxruntime']}; "
        + provenance(m),
    ]
    if notes:
        lines += ["", "Errors:", *notes]
    return "\n".join(lines) + "\n"


def plot(report: dict[str, Any], path: Path) -> None:
    """Two bar charts side by side, one bar per model in table order: ort/glow (log scale, 1 marked) and the
    cold compile time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in report["models"] if "ort_over_glow" in r]
    names = [r["model"] for r in rows]
    positions = np.arange(len(rows))
    figure, (speed, compile_axis) = plt.subplots(1, 2, figsize=(12, 0.32 * len(rows) + 1.6), sharey=True)
    ratios = [r["ort_over_glow"] for r in rows]
    speed.barh(positions, ratios, color=["tab:green" if x >= 1 else "tab:red" for x in ratios])
    speed.axvline(1.0, color="black", linewidth=0.8)
    speed.set_xscale("log")
    # Plain numbers on the log axis, each bar labelled with its ratio.
    ticks = [t for t in (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0) if min(ratios) / 1.2 <= t <= max(ratios) * 1.2]
    speed.set_xticks(ticks, [f"{t:g}" for t in ticks])
    speed.minorticks_off()
    for position, ratio in zip(positions, ratios, strict=True):
        speed.text(ratio, position, f" {ratio:.2f}", va="center", fontsize=8)
    speed.set_xlabel("onnxruntime time / glow-mlir time (> 1: glow-mlir faster)")
    speed.set_yticks(positions, names)
    speed.invert_yaxis()
    seconds = [r["compile_s"] for r in rows]
    compile_axis.barh(positions, seconds, color="tab:blue")
    for position, value in zip(positions, seconds, strict=True):
        compile_axis.text(value, position, f" {value:.1f}", va="center", fontsize=8)
    compile_axis.set_xlabel("glow-mlir cold compile, s (import included)")
    for axis in (speed, compile_axis):
        axis.grid(axis="x", alpha=0.3)
    figure.suptitle(f"Broad set, one thread each ({report['machine']['date']})")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def main(argv: Sequence[str] | None = None) -> int:
    known = entries()
    parser = argparse.ArgumentParser(prog="python -m bench.broad", description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="all", help=f"comma-separated, 'all' ({', '.join(known)})")
    parser.add_argument("--quick", action="store_true", help="short time boxes (a smoke run; figures are rough)")
    parser.add_argument("--budget", type=float, help="seconds of timed calls per model")
    parser.add_argument("--profile-seconds", type=float, help="seconds of profiled runs per model (0: no profile)")
    parser.add_argument("--top", type=int, default=3, help="slowest kernels kept per model (default 3)")
    parser.add_argument("--clock", choices=list(CLOCKS), default="cpu", help="thread CPU time (default) or wall")
    parser.add_argument("--json", type=Path, help="write the results as JSON here (after every model)")
    parser.add_argument("--markdown", type=Path, help="write the table here")
    parser.add_argument("--plot", type=Path, help="draw ort/glow and compile time per model into this PNG")
    parser.add_argument("--render", type=Path, metavar="JSON",
                        help="measure nothing: write --markdown and --plot from the JSON of an earlier run")
    args = parser.parse_args(argv)
    if args.render is not None:
        return _write(json.loads(args.render.read_text()), args.markdown, args.plot)
    names = _list(args.models, list(known), "models")
    budget = args.budget or (QUICK_BUDGET_SECONDS if args.quick else BUDGET_SECONDS)
    warmup = WARMUP_SECONDS / 5 if args.quick else WARMUP_SECONDS
    profile_seconds = args.profile_seconds
    if profile_seconds is None:
        profile_seconds = QUICK_PROFILE_SECONDS if args.quick else PROFILE_SECONDS
    # Cold compiles: "compile s" is what a first session of the model costs.
    os.environ["GLOW_MLIR_CACHE"] = "0"
    command = shlex.join(["python", "-m", "bench.broad", *(argv if argv is not None else sys.argv[1:])])
    report: dict[str, Any] = {"machine": machine(float("nan"), args.clock, command, ("-", None)), "models": []}
    for name in names:
        print(f"model {name} ...", file=sys.stderr, flush=True)
        try:
            row = bench_entry(known[name], budget, warmup, args.clock, profile_seconds, args.top)
        except Exception as e:  # noqa: BLE001  (e.g. an export failure: reported, the run goes on)
            traceback.print_exc()
            row = {"model": name, "source": known[name].source, "errors": {"bench": _error_text(e)}}
        report["models"].append(row)
        print(f"  {json.dumps(row, default=str)}", file=sys.stderr, flush=True)
        report["machine"]["load_average_end"] = os.getloadavg()[0]
        report["machine"]["end"] = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        if args.json:
            args.json.write_text(json.dumps(report, indent=2, default=str) + "\n")
        gc.collect()
    return _write(report, args.markdown, args.plot)


def _write(report: dict[str, Any], markdown_path: Path | None, plot_path: Path | None) -> int:
    table = markdown(report)
    print(table)
    if markdown_path:
        markdown_path.write_text(table)
    if plot_path:
        plot(report, plot_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
