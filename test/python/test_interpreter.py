"""The numpy interpreter against straightforward loop references, and its checks on feeds."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from mlir import ir

from glow_mlir import ops
from glow_mlir.builder import Graph
from glow_mlir.context import make_context
from glow_mlir.errors import UnsupportedError
from glow_mlir.interpreter import evaluate, interpret

RNG = np.random.default_rng(1)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def run_unary(build, x: np.ndarray) -> np.ndarray:
    """Builds y = build(g, x) with x as the one input and interprets it."""
    g = Graph("t")
    g.output("y", build(g, g.input("x", x.shape)))
    return interpret(g.module, {"x": x})["y"]


# Loop references: written index by index, independent of the interpreter's strided views and einsum.


def ref_conv(x, w, b, strides, pads, dilation, group):
    n_, c_, h_, w_ = x.shape
    o_, i_, kh, kw = w.shape
    top, left, bottom, right = pads
    oh = (h_ + top + bottom - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (w_ + left + right - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    per_group = o_ // group
    out = np.zeros((n_, o_, oh, ow))
    for n, o, y, xx in itertools.product(range(n_), range(o_), range(oh), range(ow)):
        g = o // per_group
        acc = float(b[o])
        for i, ky, kx in itertools.product(range(i_), range(kh), range(kw)):
            iy = y * strides[0] + ky * dilation[0] - top
            ix = xx * strides[1] + kx * dilation[1] - left
            if 0 <= iy < h_ and 0 <= ix < w_:
                acc += float(x[n, g * i_ + i, iy, ix]) * float(w[o, i, ky, kx])
        out[n, o, y, xx] = acc
    return out


def ref_pool(x, kernels, strides, pads, mode, count_include_pads=True):
    n_, c_, h_, w_ = x.shape
    top, left, bottom, right = pads
    oh = (h_ + top + bottom - kernels[0]) // strides[0] + 1
    ow = (w_ + left + right - kernels[1]) // strides[1] + 1
    out = np.zeros((n_, c_, oh, ow))
    for n, c, y, xx in itertools.product(range(n_), range(c_), range(oh), range(ow)):
        values = []
        for ky, kx in itertools.product(range(kernels[0]), range(kernels[1])):
            iy, ix = y * strides[0] + ky - top, xx * strides[1] + kx - left
            if 0 <= iy < h_ and 0 <= ix < w_:
                values.append(float(x[n, c, iy, ix]))
        if mode == "max":
            out[n, c, y, xx] = max(values)
        else:
            count = kernels[0] * kernels[1] if count_include_pads else len(values)
            out[n, c, y, xx] = sum(values) / count
    return out


@pytest.mark.parametrize(
    "shape, filter_shape, strides, pads, dilation, group",
    [
        ((1, 3, 7, 7), (4, 3, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1),
        ((2, 4, 8, 7), (6, 2, 3, 2), (2, 1), (1, 0, 2, 1), (1, 1), 2),
        ((1, 4, 9, 9), (4, 1, 3, 3), (1, 2), (1, 1, 1, 1), (2, 2), 4),  # depthwise, dilated
        ((1, 6, 10, 8), (6, 2, 2, 3), (3, 2), (0, 2, 1, 0), (2, 1), 3),
        ((1, 2, 5, 5), (3, 2, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    ],
)
def test_convolution(shape, filter_shape, strides, pads, dilation, group) -> None:
    x, w, b = rand(*shape), rand(*filter_shape), rand(filter_shape[0])
    out = run_unary(lambda g, v: g.convolution(v, w, b, strides, pads, dilation, group), x)
    np.testing.assert_allclose(out, ref_conv(x, w, b, strides, pads, dilation, group), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "kernels, strides, pads",
    [((2, 2), (2, 2), (0, 0, 0, 0)), ((3, 3), (1, 1), (1, 1, 1, 1)), ((3, 2), (2, 1), (2, 0, 1, 1))],
)
def test_max_pool(kernels, strides, pads) -> None:
    # All negative, so a zero-valued padding would win any window that touches it.
    x = -np.abs(rand(2, 3, 7, 6)) - 1
    out = run_unary(lambda g, v: g.max_pool(v, kernels, strides, pads), x)
    np.testing.assert_allclose(out, ref_pool(x, kernels, strides, pads, "max"), rtol=1e-6)


@pytest.mark.parametrize("count_include_pads", [True, False])
@pytest.mark.parametrize(
    "kernels, strides, pads",
    [((2, 2), (2, 2), (0, 0, 0, 0)), ((3, 3), (1, 1), (1, 1, 1, 1)), ((3, 2), (2, 3), (2, 1, 1, 0))],
)
def test_avg_pool(kernels, strides, pads, count_include_pads) -> None:
    x = rand(1, 2, 7, 8)
    out = run_unary(lambda g, v: g.avg_pool(v, kernels, strides, pads, count_include_pads), x)
    expected = ref_pool(x, kernels, strides, pads, "avg", count_include_pads)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape, channel_idx", [((2, 3, 4, 5), 1), ((4, 3), 1), ((2, 5, 3), 2), ((3,), 0)])
def test_batch_normalization(shape, channel_idx) -> None:
    x = rand(*shape)
    c = shape[channel_idx]
    scale, bias, mean, var = rand(c), rand(c), rand(c), np.abs(rand(c)) + 0.5
    out = run_unary(lambda g, v: g.batch_normalization(v, scale, bias, mean, var, 1e-3, 0.9, channel_idx), x)
    expected = np.zeros(shape)
    for index in itertools.product(*(range(d) for d in shape)):
        k = index[channel_idx]
        expected[index] = (x[index] - mean[k]) / math.sqrt(var[k] + 1e-3) * scale[k] + bias[k]
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4)])
def test_softmax_over_last_dim(shape) -> None:
    x = rand(*shape) * 10
    x.flat[0] = 1000.0  # a naive exp would overflow
    out = run_unary(lambda g, v: g.softmax(v), x)
    expected = np.zeros(shape)
    for prefix in itertools.product(*(range(d) for d in shape[:-1])):
        row = [float(v) for v in x[prefix]]
        top = max(row)
        exps = [math.exp(v - top) for v in row]
        expected[prefix] = [e / sum(exps) for e in exps]
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-7)
    assert np.isfinite(out).all()


def test_concat_of_mixed_shapes() -> None:
    a, b, c = rand(2, 1, 3), rand(2, 4, 3), rand(2, 2, 3)
    g = Graph("cat")
    g.output("y", g.concat([g.input("a", a.shape), g.input("b", b.shape), g.input("c", c.shape), b], dim=1))
    out = interpret(g.module, {"a": a, "b": b, "c": c})["y"]
    expected = np.zeros((2, 11, 3), np.float32)
    offset = 0
    for part in (a, b, c, b):
        for i, j, k in itertools.product(range(2), range(part.shape[1]), range(3)):
            expected[i, offset + j, k] = part[i, j, k]
        offset += part.shape[1]
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize(
    "in_shape, target, axis", [((3,), (2, 3), 1), ((3, 1), (3, 4), 0), ((1, 4), (2, 3, 4), 1), ((2, 1), (2, 5, 3), 0)]
)
def test_broadcast_aligns_at_axis(in_shape, target, axis) -> None:
    x = rand(*in_shape)
    out = run_unary(lambda g, v: g.broadcast(v, target, axis), x)
    expected = np.zeros(target, np.float32)
    for index in itertools.product(*(range(d) for d in target)):
        source = tuple(0 if d == 1 else index[axis + i] for i, d in enumerate(in_shape))
        expected[index] = x[source]
    np.testing.assert_array_equal(out, expected)


def test_slice_and_insert_tensor() -> None:
    big, small = rand(4, 5), rand(2, 3)
    g = Graph("s")
    b = g.input("big", big.shape)
    g.output("slice", g.slice(b, (1, 2), (3, 2)))
    g.output("insert", g.insert_tensor(b, g.input("small", small.shape), (2, 1)))
    out = interpret(g.module, {"big": big, "small": small})
    expected_slice = np.array([[big[1 + i, 2 + j] for j in range(2)] for i in range(3)])
    np.testing.assert_array_equal(out["slice"], expected_slice)
    expected_insert = big.copy()
    for i, j in itertools.product(range(2), range(3)):
        expected_insert[2 + i, 1 + j] = small[i, j]
    np.testing.assert_array_equal(out["insert"], expected_insert)


def test_linear_algebra_and_elementwise() -> None:
    x, w, b, s = rand(3, 4), rand(4, 5), rand(5), rand(5)
    g = Graph("la")
    xi = g.input("x", x.shape)
    fc = g.fully_connected(xi, w, b)
    g.output("fc", fc)
    g.output("bmm", g.batched_add(g.matmul(xi, w), s))
    g.output("ew", g.div(g.sub(g.max(fc, g.splat((3, 5), 0.25)), g.min(fc, fc)), g.add(g.mul(fc, fc), g.splat((3, 5), 1))))
    g.output("un", g.sqrt(g.add(g.exp(g.tanh(g.sigmoid(g.relu(fc)))), g.splat((3, 5), 0))))
    g.output("t", g.transpose(g.reshape(fc, (5, 3)), (1, 0)))
    out = interpret(g.module, {"x": x})
    fc_ref = np.array([[sum(float(x[n, k]) * float(w[k, j]) for k in range(4)) + b[j] for j in range(5)] for n in range(3)])
    np.testing.assert_allclose(out["fc"], fc_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["bmm"], fc_ref - b + s, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["ew"], (np.maximum(fc_ref, 0.25) - fc_ref) / (fc_ref**2 + 1), rtol=1e-5, atol=1e-6)
    relu = np.maximum(fc_ref, 0)
    np.testing.assert_allclose(out["un"], np.sqrt(np.exp(np.tanh(1 / (1 + np.exp(-relu))))), rtol=1e-5)
    np.testing.assert_array_equal(out["t"], out["fc"].reshape(5, 3).T)
    assert all(v.dtype == np.float32 for v in out.values())


def test_ieee_results_without_warnings() -> None:
    with np.errstate(all="raise"):
        out = run_unary(lambda g, v: g.sqrt(g.div(v, g.splat((2,), 0))), np.array([1.0, -1.0], np.float32))
    assert np.isinf(out[0]) and np.isnan(out[1])


MODULE = """
func.func @first(%a: tensor<2xf32> {glow.name = "a"}) -> (tensor<2xf32> {glow.name = "out"}) {
  %0 = "glow.relu"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func @second(%a: tensor<2xf32> {glow.name = "a"}) -> (tensor<2xf32> {glow.name = "out"}) {
  %c = "glow.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %0 = "glow.add"(%a, %c) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
"""


def test_function_selects_among_several() -> None:
    with make_context():
        module = ir.Module.parse(MODULE)
        feed = {"a": np.array([-1.0, 3.0], np.float32)}
        np.testing.assert_array_equal(interpret(module, feed, function="first")["out"], [0.0, 3.0])
        np.testing.assert_array_equal(interpret(module, feed, function="second")["out"], [0.0, 5.0])
        with pytest.raises(ValueError, match="expected one func.func, found 2"):
            interpret(module, feed)
        with pytest.raises(ValueError, match="no function 'third'"):
            interpret(module, feed, function="third")


def test_evaluate_one_op() -> None:
    with make_context():
        module = ir.Module.parse(MODULE)
        ops_ = ops.walk_ops(ops.functions(module)[1])
        np.testing.assert_array_equal(evaluate(ops_[0], []), [1.0, 2.0])
        result = evaluate(ops_[1], [np.array([1.0, 1.0], np.float32), np.array([2.0, 3.0], np.float32)])
        assert result.dtype == np.float32
        np.testing.assert_array_equal(result, [3.0, 4.0])
        with pytest.raises(UnsupportedError, match="func.return"):
            evaluate(ops_[2], [])


def test_feeds_are_checked() -> None:
    g = Graph("f")
    g.output("y", g.relu(g.input("x", (2, 3))))
    good = rand(2, 3)
    with pytest.raises(ValueError, match="missing input 'x'"):
        interpret(g.module, {})
    with pytest.raises(ValueError, match=r"unknown inputs \['z'\]"):
        interpret(g.module, {"x": good, "z": good})
    with pytest.raises(ValueError, match=r"input 'x': expected shape \[2, 3\], given \[3, 2\]"):
        interpret(g.module, {"x": good.T})
    with pytest.raises(ValueError, match="input 'x': expected dtype float32, given float64"):
        interpret(g.module, {"x": good.astype(np.float64)})
