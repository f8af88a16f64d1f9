"""glow-lower computes bfloat16 ops in f32 and rounds a chain of them once (passes/lowering/lower.py:
widen_bf16)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

import glow_mlir
from glow_mlir.pipeline.runner import run_pipeline

RNG = np.random.default_rng(3)


def bf16_matmul() -> tuple[glow_mlir.Graph, np.ndarray]:
    w = RNG.standard_normal((512, 4)).astype(ml_dtypes.bfloat16)
    g = glow_mlir.Graph("widen")
    g.output("y", g.matmul(g.input("x", (2, 512), "bf16"), g.constant(w)))
    return g, w


def test_a_bf16_matmul_runs_in_f32_between_conversions() -> None:
    g, _ = bf16_matmul()
    module = g.module
    with module.context:
        run_pipeline(module, "builtin.module(glow-lower)")
    text = str(module)
    assert "glow.matmul" in text and "-> tensor<2x4xf32>" in text
    assert text.count("glow.convert_to") == 3  # both operands up, the result down


def test_the_sum_is_rounded_once() -> None:
    g, w = bf16_matmul()
    x = RNG.standard_normal((2, 512)).astype(ml_dtypes.bfloat16)
    with glow_mlir.compile(g, cache=False) as model:
        y = model.run({"x": x})["y"]
    exact = (x.astype(np.float64) @ w.astype(np.float64)).astype(np.float32).astype(ml_dtypes.bfloat16)
    # Rounded once from f32 sums: within one bf16 step of the exactly rounded result. Rounding each of the 512
    # partial sums to bf16 drifts by many steps.
    step = np.abs(exact.astype(np.float32)) * 2.0**-7
    assert np.all(np.abs(y.astype(np.float32) - exact.astype(np.float32)) <= step + 1e-6)


def test_a_chain_of_bf16_ops_is_rounded_once() -> None:
    """exp, mul, add on bf16 round once, at the output, as ONNX's reference computes Celu in bf16: rounding
    after each op differs by a bf16 step on these inputs."""
    x = np.array([-3.0, -0.5, -0.3, 0.7, 1.9], ml_dtypes.bfloat16)
    g = glow_mlir.Graph("chain")
    inp = g.input("x", x.shape, "bf16")
    two = g.constant(np.full(x.shape, 2.0, ml_dtypes.bfloat16))
    g.output("y", g.add(g.mul(g.exp(g.div(inp, two)), two), inp))
    with glow_mlir.compile(g, cache=False) as model:
        y = model.run({"x": x})["y"]
    wide = x.astype(np.float32)
    once = (np.exp(wide / 2) * 2 + wide).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(y, once)
