"""glow-run: imports an ONNX model, compiles it, runs it, and reports outputs, accuracy and speed.

    glow-run MODEL.onnx [--input NAME=FILE.npy ...] [--static-input NAME=FILE.npy ...] [--random-inputs]
             [--shape NAME=1x3x224x224 ...] [--compare-onnxruntime] [--iterations N]
             [--dump-ir STAGE [--ir-file FILE]] [--stats] [--profile [TOP]] [--graph OUT.svg] [--memory-plan OUT.png]
             [--dump-profile FILE.json | --load-profile FILE.json]

Inputs are .npy files, or ONNX TensorProto .pb files (as in ONNX test-data folders). A model with symbolic
input dims is compiled for the shapes of the inputs given, and of `--shape`. Inputs are checked against the
model before anything compiles. `--dump-ir` writes the module after a stage to a file that glow-opt reads.
`--stats` adds the compile time per stage (import, graph passes, IR passes, schedule, LLVM) and per pass;
`--profile` compiles the profiling variant and prints the slowest kernels over the runs (glow_mlir/profiling.py).
`--graph` draws the optimized graph (the module after glow-schedule: fused activations, NHWC ops, node names;
needs Graphviz's `dot`) and `--memory-plan` the activation arena as glow-allocate planned it (needs
matplotlib: pip install 'glow-mlir[viz]'); docs/PICTURES.md shows both. `--dump-profile` and `--load-profile`
are Glow's quantization flow (docs/QUANTIZATION.md): profile on the inputs, then compile the int8 model.
A model with data-dependent ops on run-time values (NonZero, NonMaxSuppression, ...), or whose shapes depend on
values computed at run time (a length from predicted durations), runs in the stages of an InferenceSession
(frontends/onnx/stages.py), compiled per count or value; `--profile` prints a table per compiled stage, and
what needs one compiled model (`--dump-ir`, `--graph`, `--memory-plan`, the quantization flags) is refused.

Progress (import, then every pipeline stage with its time) goes to stderr; outputs, the comparison with
onnxruntime and the timings go to stdout. Bad input (an unsupported or malformed model, a missing input)
prints one `glow-run: error: ...` message and exits with status 1, without a traceback.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import numpy_helper

from glow_mlir import quantization
from glow_mlir.backends.cpu.openmp import default_threads
from glow_mlir.compiled import CompiledModel
from glow_mlir.library import Buffer
from glow_mlir.options import SessionOptions
from glow_mlir.errors import GlowError, StaticInputRequired, UnsupportedModelError
from glow_mlir.frontends.onnx.importer import import_loaded, load
from glow_mlir.frontends.onnx.signature import resolve, signature
from glow_mlir.frontends.onnx.stages import split
from glow_mlir.pipeline.runner import COMPILE_PIPELINE, stage_name
from glow_mlir.profiling import ProfiledModel, profile_table, summarize
from glow_mlir.runtime import compile
from glow_mlir.session import InferenceSession
from glow_mlir.tools.pictures import write_pictures

# --dump-ir also takes the module as imported, before the first pass.
IMPORT_STAGE = "import"


class UsageError(Exception):
    """A bad command line or input file."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="glow-run", description=__doc__.splitlines()[0])
    p.add_argument("model", help="the .onnx file")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy", help="feed an input")
    p.add_argument("--static-input", action="append", default=[], metavar="NAME=FILE.npy",
                   help="bind an input at compile time (inputs that decide shapes)")
    p.add_argument("--random-inputs", action="store_true", help="feed random values to inputs not given")
    p.add_argument("--shape", action="append", default=[], metavar="NAME=1x3x224x224",
                   help="the shape of an input with symbolic dims (default: the shape of its --input)")
    p.add_argument("--seed", type=int, default=0, help="seed of --random-inputs (default 0)")
    p.add_argument("--compare-onnxruntime", action="store_true", help="report the difference to onnxruntime")
    p.add_argument("--iterations", type=int, default=1, metavar="N", help="runs to time (median; default 1)")
    p.add_argument("--threads", type=int, default=0, metavar="N",
                   help="threads of the generated code (default 0: the physical cores; 1: single-threaded)")
    p.add_argument("--stats", action="store_true",
                   help="print the compile report: memory plan, time per compile stage, op counts and time per pass")
    p.add_argument("--profile", nargs="?", type=int, const=20, metavar="TOP",
                   help="compile the profiling variant and print the TOP (default 20) slowest kernels over the "
                        "--iterations runs, with the ONNX nodes each computes")
    stages = ", ".join(dict.fromkeys((IMPORT_STAGE, *map(stage_name, COMPILE_PIPELINE))))
    p.add_argument("--dump-ir", metavar="STAGE", help=f"write the IR after a pipeline stage ({stages})")
    p.add_argument("--ir-file", metavar="FILE", help="where --dump-ir writes (default: MODEL.STAGE.mlir)")
    p.add_argument("--graph", metavar="OUT.svg",
                   help="draw the optimized graph with Graphviz's dot (.svg, .png or .pdf)")
    p.add_argument("--memory-plan", metavar="OUT.png",
                   help="draw the activation arena's memory plan with matplotlib (.png, .svg or .pdf)")
    p.add_argument("--dump-profile", metavar="FILE.json",
                   help="record each node's range and histogram on the inputs (reference interpreter) into FILE")
    p.add_argument("--load-profile", metavar="FILE.json",
                   help="quantize the model to int8 with a profile --dump-profile wrote for it, then compile it")
    return p


def _arrays(pairs: Sequence[str], flag: str) -> dict[str, np.ndarray]:
    arrays = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            raise UsageError(f"{flag} expects NAME=FILE.npy or NAME=FILE.pb, got '{pair}'")
        try:
            if path.endswith(".pb"):
                arrays[name] = numpy_helper.to_array(onnx.load_tensor(path))
            else:
                arrays[name] = np.load(path, allow_pickle=False)
        except (OSError, ValueError, DecodeError) as e:
            raise UsageError(f"{flag} {name}: cannot read '{path}': {e}") from None
    return arrays


def _shapes(pairs: Sequence[str]) -> dict[str, tuple[int, ...]]:
    shapes = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        dims = text.split("x") if text else []
        if not sep or not name or not all(d.isdigit() for d in dims):
            raise UsageError(f"--shape expects NAME=DIMxDIMx... (e.g. x=1x3x224x224), got '{pair}'")
        shapes[name] = tuple(int(d) for d in dims)
    return shapes


def random_feed(buffer: Buffer, rng: np.random.Generator) -> np.ndarray:
    """A random array for input `buffer` (its dtype and shape): floats standard normal, booleans fair coins,
    integers 0 to 3 (integer inputs are often indices or lengths)."""
    if buffer.dtype == np.bool_:
        return rng.random(buffer.shape) < 0.5
    if np.issubdtype(buffer.dtype, np.integer):
        return rng.integers(0, 4, buffer.shape).astype(buffer.dtype)
    return rng.standard_normal(buffer.shape).astype(buffer.dtype)


def _feeds(inputs: Sequence[Buffer], given: dict[str, np.ndarray], random: bool, seed: int) -> dict[str, np.ndarray]:
    unknown = sorted(set(given) - {b.name for b in inputs})
    if unknown:
        raise UsageError(f"the model has no input {', '.join(map(repr, unknown))}; its inputs: "
                         f"{', '.join(b.name + ' ' + b.describe() for b in inputs)}")
    rng = np.random.default_rng(seed)
    feeds = dict(given)
    for buffer in inputs:
        if buffer.name not in feeds:
            if not random:
                raise UsageError(f"input '{buffer.name}' {buffer.describe()} is not given: pass --input "
                                 f"{buffer.name}=FILE.npy or --random-inputs")
            feeds[buffer.name] = random_feed(buffer, rng)
    return feeds


def _summary(array: np.ndarray) -> str:
    text = f"{array.dtype.name}{list(array.shape)}"
    if array.size and array.dtype != np.bool_:
        values = array.astype(np.float64)
        text += f"  min {values.min():.6g}  max {values.max():.6g}  mean {values.mean():.6g}"
    elif array.size:
        text += f"  {int(array.sum())} of {array.size} true"
    return text


def _compare(args: argparse.Namespace, feeds: dict[str, np.ndarray], static: dict[str, np.ndarray],
             outputs: dict[str, np.ndarray]) -> None:
    # onnxruntime is only the reference here, so it is imported only when asked for.
    try:
        import onnxruntime
    except ImportError:
        raise UsageError("--compare-onnxruntime needs onnxruntime (pip install onnxruntime)") from None
    session = onnxruntime.InferenceSession(args.model, providers=["CPUExecutionProvider"])
    expected = session.run(list(outputs), {**feeds, **static})
    print("difference to onnxruntime:")
    for (name, got), want in zip(outputs.items(), expected, strict=True):
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        scale = np.abs(want.astype(np.float64))
        max_abs = float(diff.max()) if diff.size else 0.0
        max_rel = float((diff / np.maximum(scale, np.finfo(np.float64).tiny)).max()) if diff.size else 0.0
        print(f"  {name}: max abs {max_abs:.3g}  max rel {max_rel:.3g}")


def stats_table(report: dict[str, Any]) -> str:
    """The compile report as text: the arena against its lower bound (the peak of simultaneously live bytes)
    and against no sharing at all, then one row per pipeline element."""
    lines = [
        "compile report:",
        f"  arena {report['arena_bytes']} bytes, peak live {report['peak_live_bytes']} bytes (lower bound), "
        f"without sharing {report['naive_activation_bytes']} bytes",
    ]
    # Time per compile stage (runtime.STAGES), the ONNX import first when known.
    stages = {"import": report["import_seconds"]} if "import_seconds" in report else {}
    stages |= report.get("stage_seconds", {})
    if stages:
        lines.append("  " + ", ".join(f"{name} {seconds:.3f} s" for name, seconds in stages.items()))
    lines.append(f"  {'pass':<32} {'ops before':>10} {'ops after':>10} {'ms':>9}")
    if report.get("cache") == "hit":
        lines.append("  (a cache hit: no pass ran)")
    for record in report["passes"]:
        lines.append(
            f"  {record['name']:<32} {record['ops_before']:>10} {record['ops_after']:>10} "
            f"{record['seconds'] * 1e3:>9.2f}"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> None:
    given = _arrays(args.input, "--input")
    static = _arrays(args.static_input, "--static-input")
    if args.iterations < 1:
        raise UsageError("--iterations must be at least 1")
    if args.threads < 0:
        raise UsageError(f"--threads {args.threads}: must be 0 (the physical cores) or more")
    stages = (IMPORT_STAGE, *map(stage_name, COMPILE_PIPELINE))
    if args.dump_ir is not None and args.dump_ir not in stages:
        raise UsageError(f"--dump-ir: no stage '{args.dump_ir}'; stages: {', '.join(dict.fromkeys(stages))}")

    start = time.perf_counter()
    print(f"importing {args.model} ...", file=sys.stderr, flush=True)
    proto = load(args.model)
    specs = signature(proto, exclude=static)
    # Every input's shape, from --input arrays then --shape: a model with symbolic dims is specialized to them.
    shapes = resolve(specs, {**{name: array.shape for name, array in given.items()}, **_shapes(args.shape)})
    for spec in specs:
        if spec.name in given and given[spec.name].dtype != spec.dtype:
            raise UsageError(f"--input {spec.name}: the model takes {spec.describe()}, the file holds "
                             f"{given[spec.name].dtype.name}{list(given[spec.name].shape)}")
    buffers = [Buffer(spec.name, shapes[spec.name], spec.dtype) for spec in specs]
    if split(proto, static) is not None:
        _run_stages(args, proto, buffers, given, static)
        return
    try:
        graph = import_loaded(proto, static_inputs=static, shapes=shapes)
    except StaticInputRequired as e:
        if e.value in (spec.name for spec in specs) and e.value not in given:
            raise  # a graph input deciding a shape: its value is needed (--input or --static-input)
        _run_stages(args, proto, buffers, given, static)
        return
    except UnsupportedModelError as e:
        if not e.taken_branches:
            raise
        # Perhaps a data-dependent op in an If branch a compile-time condition took: the session inlines the
        # branch and splits there (or raises the same error).
        _run_stages(args, proto, buffers, given, static)
        return
    float_graph = graph
    if args.load_profile is not None and args.dump_profile is not None:
        raise UsageError("--dump-profile profiles the float model: it does not go with --load-profile")
    if args.load_profile is not None:
        # Glow's -load-profile: every later step (pictures, --dump-ir, compile) sees the quantized graph.
        graph = SimpleNamespace(module=quantization.quantize(graph, quantization.Profile.load(args.load_profile)))
    imported = time.perf_counter()
    print(f"  imported in {imported - start:.3f} s; compiling ...", file=sys.stderr, flush=True)
    if args.graph is not None or args.memory_plan is not None:
        write_pictures(graph.module, graph=args.graph, plan=args.memory_plan, name=Path(args.model).name)
        drawn = " and ".join(path for path in (args.graph, args.memory_plan) if path is not None)
        print(f"  drew {drawn}", file=sys.stderr, flush=True)
    threads = args.threads or default_threads()
    # The import is glow-run's own: compiled in place (no copy of its weights into a context of the compile's,
    # MobileNetV5-300M's 1.2 GB: seconds) unless it is read again afterwards (--dump-ir import, --dump-profile).
    consume = args.dump_ir != IMPORT_STAGE and args.dump_profile is None
    model = compile(graph, keep_ir=args.dump_ir not in (None, IMPORT_STAGE), threads=threads,
                    profile=args.profile is not None, consume=consume)
    compiled = time.perf_counter()
    if model.report.get("cache") == "hit":
        print(f"  cache hit: loaded in {model.report['load_seconds']:.3f} s", file=sys.stderr, flush=True)
    else:
        for stage, seconds in model.report["pass_seconds"]:
            print(f"  {stage:<28} {seconds * 1e3:9.2f} ms", file=sys.stderr)
        print(f"  compiled in {compiled - imported:.3f} s", file=sys.stderr, flush=True)
    if args.dump_ir is not None:
        text = str(graph.module) if args.dump_ir == IMPORT_STAGE else model.ir(args.dump_ir)
        target = Path(args.ir_file or f"{Path(args.model).stem}.{args.dump_ir}.mlir")
        target.write_text(text if text.endswith("\n") else text + "\n")
        print(f"  wrote the IR after {args.dump_ir} to {target}", file=sys.stderr, flush=True)

    feeds = _feeds(model.abi.inputs, given, args.random_inputs, args.seed)
    if args.dump_profile is not None:
        quantization.profile(float_graph, [feeds]).save(args.dump_profile)
        print(f"  wrote the profile to {args.dump_profile}", file=sys.stderr, flush=True)
    latencies = _run_and_report(args, model.run, feeds, static)
    print(f"import time: {imported - start:.3f} s")
    hit = " (cache hit)" if model.report.get("cache") == "hit" else ""
    print(f"compile time: {compiled - imported:.3f} s{hit}")
    print(f"arena: {model.report['arena_bytes']} bytes")
    if args.stats:
        print(stats_table({**model.report, "import_seconds": imported - start}))
    if isinstance(model, ProfiledModel):
        print(_kernel_table(model, proto, args.profile))
    print(f"latency: median {statistics.median(latencies) * 1e3:.3f} ms over {args.iterations} run(s)")


def _kernel_table(model: ProfiledModel, proto: onnx.ModelProto, top: int) -> str:
    """The `top` slowest kernels of `model`'s profiled runs, named after `proto`'s nodes (--profile)."""
    rows, total_ms = summarize(model.kernels, model.runs, {node.name: node.op_type for node in proto.graph.node})
    return profile_table(rows, total_ms, len(model.runs), top=top)


def _run_and_report(args: argparse.Namespace, run: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]],
                    feeds: dict[str, np.ndarray], static: dict[str, np.ndarray]) -> list[float]:  # fmt: skip
    """Runs the model --iterations times, prints the last outputs (and their difference to onnxruntime's when
    asked); the latency of each run."""
    latencies = []
    outputs: dict[str, np.ndarray] = {}
    for _ in range(args.iterations):
        begin = time.perf_counter()
        outputs = run(feeds)
        latencies.append(time.perf_counter() - begin)
    print("outputs:")
    for name, array in outputs.items():
        print(f"  {name}: {_summary(array)}")
    if args.compare_onnxruntime:
        _compare(args, feeds, static, outputs)
    return latencies


def _run_stages(args: argparse.Namespace, proto: onnx.ModelProto, inputs: Sequence[Buffer],
                given: dict[str, np.ndarray], static: dict[str, np.ndarray]) -> None:  # fmt: skip
    """A model with data-dependent ops on run-time values, or shapes decided by values: run in the
    InferenceSession that splits it into stages (frontends/onnx/stages.py), the later stages compiled at the first
    run per count or value; `--profile` profiles every compiled stage. What needs one compiled model (its IR,
    pictures, quantization profiles) is refused."""
    one_model = {"--dump-ir": args.dump_ir, "--graph": args.graph, "--memory-plan": args.memory_plan,
                 "--load-profile": args.load_profile, "--dump-profile": args.dump_profile}
    refused = [flag for flag, value in one_model.items() if value is not None]
    if refused:
        raise UsageError(f"{', '.join(refused)}: the model's shapes depend on run-time values; it runs in stages "
                         "(one compiled model per stage and count or value), not as one compiled model")
    start = time.perf_counter()
    options = SessionOptions()
    options.enable_profiling = args.profile is not None
    session = InferenceSession(proto, options, threads=args.threads or default_threads(), static_inputs=static)
    built = time.perf_counter()
    print(f"  shapes depend on run-time values: runs in stages; built in {built - start:.3f} s", file=sys.stderr,
          flush=True)
    feeds = _feeds(inputs, given, args.random_inputs, args.seed)
    names = [o.name for o in proto.graph.output]
    latencies = _run_and_report(args, lambda fed: dict(zip(names, session.run(names, fed), strict=True)), feeds,
                                static)  # fmt: skip
    if args.stats:
        for index, report in enumerate(session.report["stages"]):
            print(f"stage {index + 1}:\n" + stats_table(report))
    for index, model in enumerate(session.profiled_models(), 1):
        print(f"compiled stage {index} ({', '.join(b.name for b in model.abi.inputs)} -> "
              f"{', '.join(b.name for b in model.abi.outputs)}):")
        print(_kernel_table(model, proto, args.profile))
    print(f"latency: median {statistics.median(latencies) * 1e3:.3f} ms over {args.iterations} run(s) (the first "
          "compiles the later stages)")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        run(args)
    except (GlowError, UsageError, ValueError) as e:
        # ValueError: CompiledModel.run's input checks. Every such message names what is wrong.
        print(f"glow-run: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
