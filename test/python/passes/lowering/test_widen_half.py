"""glow-lower computes bfloat16 and float16 ops in f32 and rounds a chain of them once (passes/lowering/lower.py:
widen_half), but the products the backend computes natively on bf16 factors (the CPU backend's, where
vdpbf16ps pays: backends/cpu/bf16_host.py), which give f32."""

from __future__ import annotations

from collections.abc import Callable
from unittest import mock

import ml_dtypes
import numpy as np
import pytest

import glow_mlir
from glow_mlir.backends.cpu import bf16_host
from glow_mlir.context import copy_module
from glow_mlir.opdefs import types
from glow_mlir.opdefs.shapes import ShapeError
from glow_mlir.pipeline.runner import run_pipeline

RNG = np.random.default_rng(3)


def bf16_matmul() -> tuple[glow_mlir.Graph, np.ndarray]:
    w = RNG.standard_normal((512, 4)).astype(ml_dtypes.bfloat16)
    g = glow_mlir.Graph("widen")
    g.output("y", g.matmul(g.input("x", (2, 512), "bf16"), g.constant(w)))
    return g, w


@pytest.fixture(params=[False, True], ids=["widened", "native"])
def native(request: pytest.FixtureRequest) -> bool:
    """Runs a test with the CPU backend's native bf16 products off and on, whatever this host's probe says
    (on, where the host has avx512_bf16: the tests run the code)."""
    if request.param and not bf16_host.has_avx512_bf16():
        pytest.skip("the host CPU has no avx512_bf16")
    with mock.patch.object(bf16_host, "dot_pays", lambda: request.param):
        yield request.param


def test_a_bf16_matmul_runs_in_f32_between_conversions(native: bool) -> None:
    g, _ = bf16_matmul()
    module = g.module
    with module.context:
        run_pipeline(module, "builtin.module(glow-lower)")
    text = str(module)
    if native:  # the bf16 factors as they are, the f32 result down
        assert "(tensor<2x512xbf16>, tensor<512x4xbf16>) -> tensor<2x4xf32>" in text
        assert text.count("glow.convert_to") == 1
    else:  # both operands up, the result down
        assert "(tensor<2x512xf32>, tensor<512x4xf32>) -> tensor<2x4xf32>" in text
        assert text.count("glow.convert_to") == 3


@pytest.mark.skipif(not bf16_host.has_avx512_bf16(), reason="the host CPU has no avx512_bf16")
def test_a_native_product_rounds_the_chain_before_it_and_starts_one_after_it() -> None:
    """exp -> matmul -> exp in bf16: the first exp's f32 result is rounded to bf16 once, as the matmul's
    factor; the matmul's f32 sums go on into the second exp unrounded; the output is rounded once."""
    w = RNG.standard_normal((8, 4)).astype(ml_dtypes.bfloat16) / 4
    g = glow_mlir.Graph("chain")
    g.output("y", g.exp(g.matmul(g.exp(g.input("x", (3, 8), "bf16")), g.constant(w))))
    x = (RNG.standard_normal((3, 8)) / 2).astype(ml_dtypes.bfloat16)
    with mock.patch.object(bf16_host, "dot_pays", lambda: True):
        module = copy_module(g.module)
        with module.context:
            run_pipeline(module, "builtin.module(glow-lower,glow-dce)")
        text = str(module)
        assert text.count("glow.convert_to") == 3  # x up, exp's result down (the factor), the output down
        assert '"glow.matmul"(%2, %3) : (tensor<3x8xbf16>, tensor<8x4xbf16>) -> tensor<3x4xf32>' in text
        with glow_mlir.compile(g, cache=False) as model:
            y = model.run({"x": x})["y"]
    factor = np.exp(x.astype(np.float32)).astype(ml_dtypes.bfloat16).astype(np.float32)
    want = np.exp(factor @ w.astype(np.float32)).astype(ml_dtypes.bfloat16).astype(np.float32)
    # One bf16 step where the f32 sums (another order) straddle a rounding boundary, exact elsewhere.
    assert np.all(np.abs(y.astype(np.float32) - want) <= np.abs(want) * 2.0**-7)
    assert np.mean(y.astype(np.float32) == want) > 0.9


def test_the_sum_is_rounded_once(native: bool) -> None:
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


def test_f16_ops_run_in_f32_each_result_rounded() -> None:
    """An f16 chain (conv, max pool, softmax) computes in f32: no f16 op is left after glow-lower, and each op's
    result is rounded to f16 as the model states it (the f32 computation with a rounding after every op)."""
    x = RNG.standard_normal((1, 3, 9, 9)).astype(np.float16)
    w = (RNG.standard_normal((8, 3, 3, 3)) / 5).astype(np.float16)
    b = np.zeros(8, np.float16)

    def build(dtype: str, rounded: Callable[[glow_mlir.Tensor], glow_mlir.Tensor]) -> glow_mlir.Graph:
        g, np_type = glow_mlir.Graph(dtype), {"f16": np.float16, "f32": np.float32}[dtype]
        conv = rounded(g.convolution(g.input("x", x.shape, dtype), g.constant(w.astype(np_type)),
                                     g.constant(b.astype(np_type)), pads=[1, 1, 1, 1]))  # fmt: skip
        pooled = rounded(g.max_pool(conv, kernels=[2, 2], strides=[2, 2]))
        g.output("y", g.softmax(g.reshape(pooled, (8, 16))))
        return g

    g = build("f16", lambda t: t)
    module = copy_module(g.module)
    with module.context:
        run_pipeline(module, "builtin.module(glow-lower,glow-dce)")
    computing = [line for line in str(module).splitlines() if " = glow." in line and "convert_to" not in line
                 and "glow.constant" not in line and "f16>" in line.split("->")[-1]]  # fmt: skip
    assert computing == [], computing
    with glow_mlir.compile(g, cache=False) as model:
        y = model.run({"x": x})["y"]
    assert y.dtype == np.float16
    wide = build("f32", lambda t: t.graph.convert_to(t.graph.convert_to(t, "f16"), "f32"))
    with glow_mlir.compile(wide, cache=False) as model:
        each = model.run({"x": x.astype(np.float32)})["y"].astype(np.float16)
    np.testing.assert_array_equal(y, each)


def test_round_f16_is_an_f16_store_and_load() -> None:
    """glow.round_f16, compiled and interpreted: ties to even, overflow to inf, subnormals, NaN, signed zeros."""
    x = np.concatenate([
        RNG.standard_normal(200) * 10.0 ** RNG.integers(-8, 6, 200),
        [1 + 2.0**-11, 1 + 3 * 2.0**-11, 65504.0, 65520.0, 7e4, -7e4, 2.0**-25, 2.0**-24 * 1.5, -0.0, np.inf, np.nan],
    ]).astype(np.float32)  # fmt: skip
    g = glow_mlir.Graph("round")
    g.output("y", g.round_f16(g.input("x", x.shape)))
    expected = x.astype(np.float16).astype(np.float32)
    with glow_mlir.compile(g, cache=False) as model:
        np.testing.assert_array_equal(model.run({"x": x})["y"], expected)
    np.testing.assert_array_equal(glow_mlir.interpret(g.module, {"x": x})["y"], expected)


def test_an_f16_silu_fuses_into_its_convolution_rounding_as_each_op() -> None:
    """conv -> Sigmoid -> Mul in f16 (EfficientNet's SiLU, fp16): glow-lower reads each result through round_f16,
    glow-fuse-activations makes the three one convolution ("silu_f16"), and its results are the unfused
    kernels' (a rounding after each op) bit for bit; a convolution's lone rounding fuses as "round_f16"."""
    x = RNG.standard_normal((1, 16, 9, 9)).astype(np.float16)
    w = (RNG.standard_normal((16, 16, 3, 3)) / 5).astype(np.float16)
    b = (RNG.standard_normal(16) / 5).astype(np.float16)
    g = glow_mlir.Graph("f16_silu")
    c = g.convolution(g.input("x", x.shape, "f16"), g.constant(w), g.constant(b), pads=[1, 1, 1, 1])
    silu = g.mul(c, g.sigmoid(c))
    g.output("y", g.convolution(silu, g.constant(w), g.constant(b), pads=[1, 1, 1, 1]))
    results = {}
    for level in (glow_mlir.GraphOptimizationLevel.ORT_ENABLE_ALL, glow_mlir.GraphOptimizationLevel.ORT_ENABLE_BASIC):
        with glow_mlir.compile(g, cache=False, keep_ir=True, optimization_level=level) as model:
            results[level] = model.run({"x": x})["y"]
            if level == glow_mlir.GraphOptimizationLevel.ORT_ENABLE_ALL:
                fused = model.ir("glow-fuse-activations")
    assert 'activation = "silu_f16"' in fused and 'activation = "round_f16"' in fused, fused
    assert "glow.sigmoid" not in fused and "glow.round_f16" not in fused, fused
    fast, unfused = results.values()
    assert fast.dtype == np.float16
    np.testing.assert_array_equal(fast, unfused)


def test_the_product_type_rule_admits_bf16_factors_with_an_f32_result_only() -> None:
    """opdefs/types.py `product`: what glow-verify accepts of matmul / fused_matmul / cpu_conv_nhwc."""
    assert types.NUMBER_PRODUCT(["bf16", "bf16"], "f32") == "f32"
    assert types.FLOAT_PRODUCT(["bf16", "bf16", "f32"], "f32") == "f32"  # a bias in f32
    assert types.NUMBER_PRODUCT(["bf16", "bf16"], None) == "bf16"  # the builder's inference is unchanged
    # glow-verify rejects a result type other than the rule's
    assert types.FLOAT_PRODUCT(["f16", "f16"], "f32") == "f16"
    assert types.FLOAT_PRODUCT(["f32", "f32"], "bf16") == "f32"
    with pytest.raises(ShapeError):
        types.FLOAT_PRODUCT(["bf16", "f32"], "f32")  # factors of two types


def test_only_products_with_constant_weights_are_native() -> None:
    """Attention's batch_matmul and a matmul of two activations stay widened; grouped convolutions too."""
    g = glow_mlir.Graph("products")
    a, b = g.input("a", (4, 8), "bf16"), g.input("b", (8, 4), "bf16")
    w = g.constant(RNG.standard_normal((8, 4)).astype(ml_dtypes.bfloat16))
    g.output("ab", g.matmul(a, b))
    g.output("aw", g.matmul(a, w))
    g.output("batch", g.batch_matmul(g.reshape(a, (1, 4, 8)), g.reshape(b, (1, 8, 4))))
    with mock.patch.object(bf16_host, "dot_pays", lambda: True):
        module = copy_module(g.module)
        with module.context:
            run_pipeline(module, "builtin.module(glow-lower)")
    text = str(module)
    assert text.count("bf16>) -> tensor<4x4xf32>") == 1  # a x w only
    assert "(tensor<1x4x8xf32>, tensor<1x8x4xf32>) -> tensor<1x4x4xf32>" in text


@pytest.mark.parametrize(
    "rows,k,n,native", [(1, 1024, 1024, True), (4, 1024, 1024, True), (8, 1024, 1024, False), (1, 512, 256, False)]
)
def test_products_streaming_their_weights_are_native_where_vdpbf16ps_does_not_pay(
    rows: int, k: int, n: int, native: bool
) -> None:
    """A GEMV-like product (few rows, weights beyond L2) reads its weights in half the bytes in bf16."""
    g = glow_mlir.Graph("gemv")
    w = g.constant(np.zeros((k, n), ml_dtypes.bfloat16))
    g.output("y", g.matmul(g.input("x", (rows, k), "bf16"), w))
    slow_dot = mock.patch.object(bf16_host, "dot_pays", lambda: False)
    with slow_dot, mock.patch.object(bf16_host, "has_avx512_bf16", lambda: True):
        module = copy_module(g.module)
        with module.context:
            run_pipeline(module, "builtin.module(glow-lower)")
    assert (f"tensor<{k}x{n}xbf16>) -> tensor<{rows}x{n}xf32>" in str(module)) == native
