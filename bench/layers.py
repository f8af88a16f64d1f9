"""Per-layer time of glow-mlir against onnxruntime, grouped by kernel class: `python -m bench.layers --model resnet50`.

Both run one thread: onnxruntime with its own profiler (`SessionOptions.enable_profiling`, ORT_ENABLE_ALL, one
intra-op thread), glow-mlir's profiling variant (`compile(profile=True)`, glow_mlir/profiling.py). Each timed
kernel is put into a class by the first convolution or matmul it computes, else by its op type:
`conv 3x3/s2 -> 28x28` (window, stride, output map; `dw` for depthwise, `g<groups>` for grouped), `fc`, `Add`...
onnxruntime names its events after node outputs (NCHWc convolutions with fused activations and residual adds)
and records the input and output shapes, which give the window and stride; glow-mlir's kernels carry the ONNX
node names, whose shapes come from onnx's shape inference. The table gives ms per run per class for each, and
their ratio ort/glow (> 1: glow-mlir is faster on that class), and for classes of convolutions and matmuls
glow-mlir's GFLOP/s (their FLOPs per run, bench/flops.py, over its time) and percent of the core's FMA peak
(bench/peak.py, measured at the start): how a kernel class runs inside a network, fed by its producers. Fused work lands in its convolution's class on
both sides when both fuse it, so read classes such as `Add` together with the convolutions. A glow-mlir kernel
that computes products of several classes (an inverted residual's expansion and depthwise convolution, one
kernel since glow-cpu-fuse-expansion) merges them into one row on both sides, `conv 1x1/s1 -> 56x56 + conv
3x3/s2 dw -> 28x28`, so that each row still compares the same nodes' work.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime

import glow_mlir
from bench import broad
from bench.flops import node_macs
from bench.peak import measure_peak
from glow_mlir.frontends.onnx.importer import import_model
from glow_mlir.profiling import summarize

# Ops whose time goes with the product that feeds them when a kernel computes both.
_PRODUCTS = ("Conv", "Gemm", "MatMul")
MIN_RUNS = 3
# The class of a run's time outside every timed kernel (the call, the framework's own work between kernels).
OUTSIDE = "(outside kernels)"


def conv_class(filter_shape: Sequence[int], x_shape: Sequence[int], y_shape: Sequence[int]) -> str:
    """The class of a convolution: window, stride (input rows per output row, rounded), output map, groups
    (from the filter's input channels against the input's)."""
    f, c_per_group, kh, kw = filter_shape[:4]
    in_h, in_w = x_shape[2:4]
    out_h, out_w = y_shape[2:4]
    stride = max(1, round(in_h / out_h)) if out_h else 1
    groups = x_shape[1] // c_per_group if c_per_group else 1
    kind = "" if groups == 1 else " dw" if groups == x_shape[1] == f else f" g{groups}"
    return f"conv {kh}x{kw}/s{stride}{kind} -> {out_h}x{out_w}"


def specialized(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> onnx.ModelProto:
    """A copy of `model` whose inputs have the shapes of `feeds`."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    for value in model.graph.input:
        if value.name in feeds:
            dims = value.type.tensor_type.shape.dim
            for dim, size in zip(dims, feeds[value.name].shape, strict=True):
                dim.dim_value = size
    return model


def _shapes(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, list[int]]:
    """Every tensor's static shape in `model` run on `feeds` (inputs, initializers, inferred values)."""
    model = specialized(model, feeds)
    inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    shapes = {t.name: list(t.dims) for t in model.graph.initializer}
    for info in [*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output]:
        shapes[info.name] = [d.dim_value for d in info.type.tensor_type.shape.dim]
    return shapes


def node_classes(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, str]:
    """The class of each named node of `model` run on `feeds`."""
    shapes = _shapes(model, feeds)
    classes = {}
    for node in model.graph.node:
        if node.op_type == "Conv" and all(shapes.get(v) for v in (node.input[0], node.input[1], node.output[0])):
            classes[node.name] = conv_class(shapes[node.input[1]], shapes[node.input[0]], shapes[node.output[0]])
        elif node.op_type in ("Gemm", "MatMul"):
            classes[node.name] = "fc"
        else:
            classes[node.name] = node.op_type
    return classes


def kernel_class(nodes: Sequence[str], classes: dict[str, str], op_types: dict[str, str]) -> str:
    """The class of a kernel computing `nodes`: its first product's, else its first node's."""
    known = [n for n in nodes if n in classes]
    products = [n for n in known if op_types.get(n) in _PRODUCTS]
    return classes[(products or known)[0]] if known else "other"


def merged_classes(kernels: Sequence[Sequence[str]], classes: dict[str, str],
                   op_types: dict[str, str]) -> dict[str, str]:  # fmt: skip
    """Each class that some kernel computes together with products of other classes -> the row of all the
    classes so joined (transitively), named by them in order with " + "; other classes are left out."""
    group: dict[str, set[str]] = {}
    for nodes in kernels:
        joined = {classes[n] for n in nodes if n in classes and op_types.get(n) in _PRODUCTS}
        if len(joined) < 2:
            continue
        for name in list(joined):
            joined |= group.get(name, set())
        for name in joined:
            group[name] = joined
    return {name: " + ".join(sorted(members)) for name, members in group.items()}


def _ort_classes(events: list[dict[str, Any]], skip: int) -> dict[str, float]:
    """ms per class summed over onnxruntime's profiled runs after the first `skip`, and outside its kernels."""
    nodes = [e for e in events if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")]
    model_runs = [e for e in events if e.get("cat") == "Session" and e["name"] == "model_run"]
    start = model_runs[skip]["ts"]
    totals: dict[str, float] = defaultdict(float)
    totals[OUTSIDE] = sum(e["dur"] for e in model_runs[skip:]) / 1000
    for event in (e for e in nodes if e["ts"] >= start):
        args = event["args"]
        op = args.get("op_name", "other")
        shapes = [next(iter(s.values())) for s in args.get("input_type_shape", [])]
        outputs = [next(iter(s.values())) for s in args.get("output_type_shape", [])]
        if op in ("Conv", "FusedConv", "NchwcConv") and len(shapes) >= 2 and outputs:
            name = conv_class(shapes[1], shapes[0], outputs[0])
        else:
            name = "fc" if op in ("Gemm", "MatMul", "FusedGemm", "FusedMatMul") else op
        totals[name] += event["dur"] / 1000
        totals[OUTSIDE] -= event["dur"] / 1000
    return dict(totals)


def compare(name: str, seconds: float, peak: float | None = None) -> list[dict[str, Any]]:
    """Per class: ms per run of onnxruntime and glow-mlir, slowest (for glow-mlir) first, and the class's
    convolution and matmul FLOPs per run (bench/flops.py), with glow-mlir's GFLOP/s and, given the core's
    `peak` GFLOP/s, its percent of it. The two run in turns, so that both see the same load on a shared
    machine; the first run of each is left out."""
    entry = broad.entries()[name]
    path, feeds = entry.path(), entry.feeds()
    proto = onnx.load(path)
    op_types = {node.name: node.op_type for node in proto.graph.node}
    classes = node_classes(proto, feeds)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    with tempfile.TemporaryDirectory() as folder, glow_mlir.compile(
        import_model(proto), profile=True, cache=False, progress=False, threads=1
    ) as model:
        options.enable_profiling = True
        options.profile_file_prefix = str(Path(folder) / "ort")
        session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        session.run(None, feeds)
        model.run(feeds)
        model.runs.clear()
        start = time.perf_counter()
        while len(model.runs) < MIN_RUNS or time.perf_counter() - start < seconds:
            session.run(None, feeds)
            model.run(feeds)
        rows, run_ms = summarize(model.kernels, model.runs, op_types)
        runs = len(model.runs)
        ort = _ort_classes(json.loads(Path(session.end_profiling()).read_text()), skip=1)
    glow: dict[str, float] = defaultdict(float)
    glow[OUTSIDE] = run_ms - sum(row.total_ms for row in rows)
    for row in rows:
        glow[kernel_class(row.nodes, classes, op_types)] += row.total_ms
    merged = merged_classes([row.nodes for row in rows], classes, op_types)
    sides = []
    for side in (ort, glow):
        totals: dict[str, float] = defaultdict(float)
        for name, ms in side.items():
            totals[merged.get(name, name)] += ms
        sides.append(totals)
    ort, glow = sides
    flops: dict[str, float] = defaultdict(float)
    for node, macs in node_macs(specialized(proto, feeds)).items():
        if node in classes:
            flops[merged.get(classes[node], classes[node])] += 2 * macs
    result = []
    for c in sorted(set(ort) | set(glow)):
        row = {"class": c, "ort_ms": ort.get(c, 0.0) / runs, "glow_ms": glow.get(c, 0.0) / runs}
        if flops.get(c) and row["glow_ms"]:
            row["gflops"] = flops[c] / row["glow_ms"] / 1e6
            if peak:
                row["peak_percent"] = 100 * row["gflops"] / peak
        result.append(row)
    result.sort(key=lambda r: -max(r["glow_ms"], r["ort_ms"]))
    return result


def table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as a markdown table with a total line."""
    lines = ["| class | ort ms | glow ms | ort/glow | GFLOP/s | % peak |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for row in [*rows, {"class": "total", **{k: sum(r[k] for r in rows) for k in ("ort_ms", "glow_ms")}}]:
        ratio = f"{row['ort_ms'] / row['glow_ms']:.2f}" if row["glow_ms"] else "-"
        gflops = f"{row['gflops']:.1f}" if "gflops" in row else "-"
        percent = f"{row['peak_percent']:.0f}" if "peak_percent" in row else "-"
        lines.append(f"| {row['class']} | {row['ort_ms']:.3f} | {row['glow_ms']:.3f} | {ratio} | {gflops} | {percent} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a model of bench.broad's set (zoo.<name> for the zoo's)")
    parser.add_argument("--seconds", type=float, default=3.0, help="profiled seconds per framework")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    parser.add_argument("--no-peak", action="store_true", help="leave out the %% of peak (and its measurement)")
    args = parser.parse_args(argv)
    peak = None if args.no_peak else measure_peak(repeats=3)
    rows = compare(args.model, args.seconds, peak)
    if peak:
        print(f"measured peak: {peak:.1f} GFLOP/s (bench/peak.py)")
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
