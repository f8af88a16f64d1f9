"""One-process A/B of two glow-mlir trees: `python -m bench.ab --base REV [--models resnet50,bert,model.onnx]`.

Separate processes on this shared machine differ by up to 10 %, so a decision between two versions of the
compiler is taken in one process. For each model, each tree (the git revision `--base`, extracted with
`git archive`, and the working tree) compiles the model in a child process with the compile cache on, into a
cache folder of its own. This process then loads both cache entries' shared libraries and times them
alternately, round by round, on the same inputs, reporting each median and the ratio base/new (> 1: the
working tree is faster), whether the outputs agree bitwise, and whether the two libraries are the same bytes
(their cache entries' SHA-256): identical code cannot differ in speed but by noise, which the ratio then
measures. A model is one of bench.broad's set by name, or any ONNX file by its path (`.onnx`: random inputs
of its declared shapes, seeded, as `glow-run --random-inputs` makes them), for the models nobody tuned for.
(Until the twelfth session the child also compiled with keep_ir to compare the LLVM modules' text,
which holds the weights once per pipeline stage: VGG-19's child ran out of memory.)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench import broad
from glow_mlir.library import LoadedModel, open_entry
from glow_mlir.tools.glow_run import random_feed

ROOT = Path(__file__).resolve().parents[1]

# Run in the child, with the tree to measure first on sys.path: compile with the cache on, report the entry.
CHILD = """
import json, sys
import onnx
import glow_mlir
from glow_mlir.frontends.onnx import import_model
graph = import_model(onnx.load(sys.argv[1]))
module = graph.module
with glow_mlir.compile(module, cache=True) as model:
    assert model.report.get("cache") == "stored", model.report.get("cache")
print(json.dumps({"file": glow_mlir.__file__}))
"""


def compile_in(tree: Path, onnx_file: Path, cache_dir: Path) -> dict[str, str]:
    env = os.environ | {"PYTHONPATH": str(tree), "GLOW_MLIR_CACHE_DIR": str(cache_dir), "GLOW_MLIR_CACHE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(onnx_file)], env=env, capture_output=True, text=True, check=False,
        # `python -c` puts the working directory first on sys.path, before PYTHONPATH and the editable install.
        cwd=tree,
    )
    if out.returncode != 0:
        raise RuntimeError(f"compiling {onnx_file.name} in {tree} failed:\n{out.stderr[-4000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if not result["file"].startswith(str(tree)):
        raise RuntimeError(f"the child imported glow_mlir from {result['file']}, not from {tree}")
    return result


def per_call(model: LoadedModel, feeds: dict[str, np.ndarray], calls: int) -> float:
    start = time.process_time()
    for _ in range(calls):
        model.run(feeds)
    return (time.process_time() - start) / calls


def ab(name: str, base_tree: Path, work: Path, rounds: int, budget: float) -> dict[str, object]:
    """`name`: a model of bench.broad's set (bench models and the zoo's, `zoo.<name>`) or a path to an .onnx file."""
    if name.endswith(".onnx"):
        onnx_file, entry = Path(name).resolve(), None
    else:
        entry = broad.entries()[name]
        onnx_file = entry.path()
    built = {}
    for label, tree in (("base", base_tree), ("new", ROOT)):
        folder = work / label / onnx_file.stem
        built[label] = (folder, compile_in(tree, onnx_file, folder))
    base, base_meta = open_entry(built["base"][0])
    new, new_meta = open_entry(built["new"][0])
    rng = np.random.default_rng(0)
    feeds = entry.feeds() if entry is not None else {b.name: random_feed(b, rng) for b in base.abi.inputs}
    outputs_equal = all(
        np.array_equal(a, b, equal_nan=True)
        for a, b in zip(base.run(feeds).values(), new.run(feeds).values(), strict=True)
    )
    first = per_call(base, feeds, 1)
    calls = max(3, int(budget / rounds / 2 / max(first, 1e-6)))
    times: dict[str, list[float]] = {"base": [], "new": []}
    for _ in range(rounds):
        times["base"].append(per_call(base, feeds, calls))
        times["new"].append(per_call(new, feeds, calls))
    base_ms, new_ms = (statistics.median(times[k]) * 1e3 for k in ("base", "new"))
    return {
        "model": name,
        "base_ms": base_ms,
        "new_ms": new_ms,
        "base_over_new": base_ms / new_ms,
        "outputs_bitwise_equal": outputs_equal,
        "code_identical": base_meta["library_sha256"] == new_meta["library_sha256"],
        "rounds": rounds,
        "calls_per_round": calls,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="git revision to compare the working tree with")
    parser.add_argument(
        "--models", default="resnet50,mobilenetv2,bert",
        help="comma-separated models of bench.broad's set (zoo.*) or paths to .onnx files",
    )
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--budget", type=float, default=20.0, help="seconds of timed calls per model")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="glow-ab-") as tmp:
        work = Path(tmp)
        base_tree = work / "base-tree"
        base_tree.mkdir()
        archive = subprocess.run(["git", "archive", args.base], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(base_tree)], input=archive, check=True)
        results = []
        print(f"{'model':<26} {'base ms':>9} {'new ms':>9} {'base/new':>9}  outputs  code")
        for name in args.models.split(","):
            row = ab(name, base_tree, work, args.rounds, args.budget)
            results.append(row)
            label = Path(name).stem if name.endswith(".onnx") else name
            print(
                f"{label:<26} {row['base_ms']:9.3f} {row['new_ms']:9.3f} {row['base_over_new']:9.3f}  "
                f"{'equal' if row['outputs_bitwise_equal'] else 'DIFFER':<7}  "
                f"{'identical' if row['code_identical'] else 'different'}"
            )
    if args.json:
        args.json.write_text(json.dumps({"base": args.base, "results": results}, indent=2))


if __name__ == "__main__":
    main()
