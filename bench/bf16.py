"""bf16 against f32 in one process: `python -m bench.bf16 --models bert,resnet50`.

For each model (bench/models.py), four compiles of the same network: f32, and `quantization.convert_to(model,
"bf16")` with all its products native (vdpbf16ps kernels, backends/cpu/bf16_recipes.py), with the products the
CPU backend makes native on this host (`bf16 default`: bf16_recipes.native_product), and with none (every op
widened to f32, the compiler before those kernels). They run alternately, round by round, on one thread, and
the report gives each median of thread CPU time per run, the ratios to f32, and the accuracy of the bf16
variants against f32 on `--inputs` random inputs: the largest absolute error, that error over the largest
|f32 output|, and the top-1 agreement (the argmax over the last axis, for the classifiers).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from unittest import mock

import numpy as np
import onnx

import glow_mlir
from bench import models
from glow_mlir import quantization
from glow_mlir.backends.cpu import bf16_host
from glow_mlir.compiled import CompiledModel
from glow_mlir.frontends.onnx import import_model


# Which products run natively: all of them, what the CPU backend decides on this host, or none (every op widened
# to f32, as before the bf16 kernels).
CHOICES = {"bf16 native": (True, True), "bf16 default": (None, None), "bf16 widened": (False, False)}


def _compile(module: object, choice: tuple[bool | None, bool | None]) -> tuple[CompiledModel, float]:
    """`module` compiled with bf16_host's answers (dot_pays, has_avx512_bf16) forced to `choice` (None: the
    host's own), and the compile time."""
    start = time.perf_counter()
    with contextlib.ExitStack() as stack:
        for name, value in zip(("dot_pays", "has_avx512_bf16"), choice, strict=True):
            if value is not None:
                stack.enter_context(mock.patch.object(bf16_host, name, lambda v=value: v))
        compiled = glow_mlir.compile(module, cache=False)
    return compiled, time.perf_counter() - start


def _time(model: CompiledModel, feeds: dict[str, np.ndarray]) -> float:
    start = time.thread_time()
    model.run(feeds)
    return time.thread_time() - start


def measure(name: str, rounds: int, inputs: int) -> None:
    spec = models.spec(name)
    graph = import_model(onnx.load(models.onnx_path(name)))
    half = quantization.convert_to(graph.module, "bf16")
    variants = {"f32": _compile(graph.module, (None, None))} | {v: _compile(half, c) for v, c in CHOICES.items()}
    feeds = spec.inputs()
    times: dict[str, list[float]] = {v: [] for v in variants}
    for v, (model, _) in variants.items():
        model.run(feeds)  # warm up
    for _ in range(rounds):
        for v, (model, _) in variants.items():
            times[v].append(_time(model, feeds))
    base = statistics.median(times["f32"])
    print(f"\n{spec.description}: {rounds} rounds, one thread, median thread CPU time per run")
    print(f"{'variant':<14} {'ms':>9} {'f32 / this':>11} {'compile s':>10}")
    for v, (_, seconds) in variants.items():
        median = statistics.median(times[v])
        print(f"{v:<14} {median * 1e3:9.2f} {base / median:11.2f} {seconds:10.1f}")
    rng = np.random.default_rng(1)
    errors: dict[str, list[tuple[float, float, bool]]] = {v: [] for v in variants if v != "f32"}
    for i in range(inputs):
        sample = feeds if i == 0 else {k: rng.standard_normal(a.shape).astype(a.dtype) for k, a in feeds.items()}
        want = next(iter(variants["f32"][0].run(sample).values())).astype(np.float64)
        for v in errors:
            got = next(iter(variants[v][0].run(sample).values())).astype(np.float64)
            err = float(np.abs(got - want).max())
            same = bool(np.all(got.argmax(axis=-1) == want.argmax(axis=-1)))
            errors[v].append((err, err / float(np.abs(want).max()), same))
    print(f"accuracy against f32 over {inputs} inputs: max |err|, max |err| / max |f32|, top-1 agreement")
    for v, rows in errors.items():
        print(f"{v:<14} {max(r[0] for r in rows):10.4g} {max(r[1] for r in rows):10.4g} "
              f"{sum(r[2] for r in rows)}/{len(rows)}")
    for model, _ in variants.values():
        model.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="bert,resnet50")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--inputs", type=int, default=20)
    args = parser.parse_args()
    for name in args.models.split(","):
        measure(name, args.rounds, args.inputs)


if __name__ == "__main__":
    main()
