"""The interpreter on every element type and on the ops added for ONNX coverage, against references written
element by element in plain Python (C-style integer division, explicit wrapping, scatter-free loops)."""

from __future__ import annotations

import itertools
import math
import operator

import numpy as np
import pytest

from glow_mlir.builder import Graph
from glow_mlir.interpreter import interpret

RNG = np.random.default_rng(5)
INTS = [np.int8, np.int16, np.int32, np.int64]
FLOATS = [np.float16, np.float32, np.float64]


def run(build, **inputs: np.ndarray) -> np.ndarray:
    """Interprets y = build(g, *input tensors), the inputs taking the arrays' shapes and dtypes."""
    g = Graph("t")
    tensors = [g.input(name, a.shape, a.dtype) for name, a in inputs.items()]
    g.output("y", build(g, *tensors))
    return interpret(g.module, inputs)["y"]


def wrap(value: int, dtype: type) -> int:
    """`value` as a two's-complement integer of dtype's width."""
    bits = np.iinfo(dtype).bits
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >= 1 << (bits - 1) else value


def elementwise(fn, *arrays: np.ndarray) -> list:
    return [fn(*values) for values in zip(*(a.ravel().tolist() for a in arrays), strict=True)]


@pytest.mark.parametrize("dtype", INTS)
def test_integer_division_truncates_toward_zero(dtype: type) -> None:
    a = np.array([7, -7, 7, -7, 6, -6, 0, 5, np.iinfo(dtype).min], dtype)
    b = np.array([2, 2, -2, -2, 3, 4, 3, 0, -1], dtype)
    out = run(lambda g, x, y: g.div(x, y), a=a, b=b)
    assert out.dtype == dtype

    def c_div(x: int, y: int) -> int:
        if y == 0:
            return 0  # the interpreter's choice; compiled code leaves it undefined
        q = abs(x) // abs(y)
        return wrap(q if (x < 0) == (y < 0) else -q, dtype)

    assert out.tolist() == elementwise(c_div, a, b)


@pytest.mark.parametrize("dtype", INTS)
def test_integer_arithmetic_wraps(dtype: type) -> None:
    info = np.iinfo(dtype)
    a = np.array([info.max, info.min, 3, -5], dtype)
    b = np.array([1, -1, info.max, 7], dtype)
    for method, fn in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul)):
        out = run(lambda g, x, y, m=method: getattr(g, m)(x, y), a=a, b=b)
        assert out.dtype == dtype
        assert out.tolist() == elementwise(lambda x, y, f=fn: wrap(f(x, y), dtype), a, b), method
    out = run(lambda g, x, y: g.matmul(x, y), a=a.reshape(2, 2), b=b.reshape(2, 2))
    expected = [[wrap(sum(int(a.reshape(2, 2)[i, k]) * int(b.reshape(2, 2)[k, j]) for k in range(2)), dtype)
                 for j in range(2)] for i in range(2)]
    assert out.tolist() == expected


@pytest.mark.parametrize("dtype", INTS + FLOATS)
def test_abs_neg_max_min_relu_keep_the_type(dtype: type) -> None:
    a = np.array([-3, 0, 5, -1], dtype)
    b = np.array([2, -2, 5, -4], dtype)
    assert run(lambda g, x: g.abs(x), a=a).tolist() == [3, 0, 5, 1]
    assert run(lambda g, x: g.neg(x), a=a).tolist() == [3, 0, -5, 1]
    assert run(lambda g, x, y: g.max(x, y), a=a, b=b).tolist() == [2, 0, 5, -1]
    assert run(lambda g, x, y: g.min(x, y), a=a, b=b).tolist() == [-3, -2, 5, -4]
    out = run(lambda g, x: g.relu(x), a=a)
    assert out.dtype == dtype and out.tolist() == [0, 0, 5, 0]


@pytest.mark.parametrize("dtype", FLOATS)
def test_rounding(dtype: type) -> None:
    a = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, 2.6, -2.6, 3.0], dtype)
    assert run(lambda g, x: g.round(x), a=a).tolist() == [0, 2, 2, 0, -2, -2, 2, 3, -3, 3]
    assert run(lambda g, x: g.floor(x), a=a).tolist() == elementwise(math.floor, a)
    assert run(lambda g, x: g.ceil(x), a=a).tolist() == elementwise(math.ceil, a)
    # Half to even keeps the sign of zero, as IEEE roundeven does.
    assert math.copysign(1.0, run(lambda g, x: g.round(x), a=a)[3]) == -1.0


@pytest.mark.parametrize("dtype, tolerance", [(np.float32, 1e-7), (np.float64, 1e-15), (np.float16, 1e-3)])
def test_transcendental_functions_against_math(dtype: type, tolerance: float) -> None:
    a = np.concatenate([np.linspace(-4, 4, 41), [-0.0, 1e-4, 6.0]]).astype(dtype)
    positive = np.abs(a) + dtype(0.25)
    for method, fn, x in (
        ("erf", math.erf, a), ("sin", math.sin, a), ("cos", math.cos, a), ("log", math.log, positive),
        ("exp", math.exp, a), ("tanh", math.tanh, a),
    ):
        out = run(lambda g, v, m=method: getattr(g, m)(v), a=x)
        assert out.dtype == dtype
        expected = np.array(elementwise(fn, x), np.float64)
        # Rounded once from float64: within half an ulp of the result type, plus float64's own error.
        np.testing.assert_allclose(out.astype(np.float64), expected, rtol=tolerance, atol=tolerance, err_msg=method)
    base, exponent = positive, a
    out = run(lambda g, x, y: g.pow(x, y), a=base, b=exponent)
    expected = np.array(elementwise(math.pow, base, exponent), np.float64)
    np.testing.assert_allclose(out.astype(np.float64), expected, rtol=max(tolerance, 1e-7))


@pytest.mark.parametrize(
    "source, target, values, expected",
    [
        (np.float32, np.int32, [-2.7, 2.7, -0.5, 0.5, 100.9], [-2, 2, 0, 0, 100]),
        (np.float64, np.int8, [-1.9, 1.9, 127.5], [-1, 1, 127]),
        (np.float32, np.bool_, [0.0, -0.0, 0.1, -3.0, np.nan], [False, False, True, True, True]),
        (np.int32, np.bool_, [0, 5, -1], [False, True, True]),
        (np.bool_, np.float32, [True, False], [1.0, 0.0]),
        (np.bool_, np.int64, [True, False], [1, 0]),
        (np.int64, np.int8, [300, -129, 127], [44, 127, 127]),
        (np.int16, np.int64, [-300, 7], [-300, 7]),
        (np.int32, np.float16, [3, -2048], [3.0, -2048.0]),
        (np.float64, np.float32, [0.1, 1e39], [np.float32(0.1), np.inf]),
    ],
)
def test_convert_to(source: type, target: type, values: list, expected: list) -> None:
    out = run(lambda g, x: g.convert_to(x, target), a=np.array(values, source))
    assert out.dtype == target
    assert out.tolist() == np.array(expected, target).tolist()


@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.bool_])
def test_comparisons(dtype: type) -> None:
    a = np.array([1, 2, 3, 0, 1], dtype)
    b = np.array([1, 3, 2, 0, 0], dtype)
    for method, fn in (("cmp_eq", operator.eq), ("cmp_neq", operator.ne), ("cmp_lt", operator.lt),
                       ("cmp_lte", operator.le)):
        if dtype == np.bool_ and method in ("cmp_lt", "cmp_lte"):
            continue
        out = run(lambda g, x, y, m=method: getattr(g, m)(x, y), a=a, b=b)
        assert out.dtype == np.bool_ and out.tolist() == elementwise(fn, a, b), method


def test_comparisons_with_nan_are_unordered() -> None:
    a = np.array([np.nan, np.nan, 1.0], np.float32)
    b = np.array([np.nan, 1.0, np.nan], np.float32)
    assert run(lambda g, x, y: g.cmp_eq(x, y), a=a, b=b).tolist() == [False] * 3
    assert run(lambda g, x, y: g.cmp_neq(x, y), a=a, b=b).tolist() == [True] * 3
    assert run(lambda g, x, y: g.cmp_lte(x, y), a=a, b=b).tolist() == [False] * 3


def test_logic_truth_tables_and_select() -> None:
    a = np.array([False, False, True, True])
    b = np.array([False, True, False, True])
    assert run(lambda g, x, y: g.logical_and(x, y), a=a, b=b).tolist() == [False, False, False, True]
    assert run(lambda g, x, y: g.logical_or(x, y), a=a, b=b).tolist() == [False, True, True, True]
    assert run(lambda g, x, y: g.logical_xor(x, y), a=a, b=b).tolist() == [False, True, True, False]
    assert run(lambda g, x: g.logical_not(x), a=a).tolist() == [True, True, False, False]
    lhs = np.array([1, 2, 3, 4], np.int64)
    rhs = np.array([-1, -2, -3, -4], np.int64)
    assert run(lambda g, c, x, y: g.select(c, x, y), c=b, x=lhs, y=rhs).tolist() == [-1, 2, -3, 4]


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("data_shape, index_shape, axis", [((5,), (3,), 0), ((4, 3), (2, 2), 0), ((2, 5, 3), (4,), 1),
                                                            ((2, 3, 4), (), 2), ((3, 4), (1, 2, 2), -1)])
def test_gather(index_dtype: type, data_shape, index_shape, axis: int) -> None:
    data = RNG.integers(-100, 100, data_shape).astype(np.int32)
    size = data_shape[axis]
    indices = RNG.integers(-size, size, index_shape).astype(index_dtype)
    out = run(lambda g, d, i: g.gather(d, i, axis=axis), d=data, i=indices)
    axis %= len(data_shape)
    expected_shape = data_shape[:axis] + index_shape + data_shape[axis + 1 :]
    assert out.shape == expected_shape and out.dtype == np.int32
    for position in itertools.product(*(range(d) for d in expected_shape)):
        outer = position[:axis]
        index = int(indices[position[axis : axis + len(index_shape)]])
        inner = position[axis + len(index_shape) :]
        assert out[position] == data[outer + (index % size,) + inner]


def test_gather_out_of_range_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"gather_0: glow.gather indices must lie in \[-3, 2\]"):
        run(lambda g, d, i: g.gather(d, i), d=np.zeros(3, np.float32), i=np.array([3], np.int64))


REDUCERS = {
    "batched_reduce_add": operator.add,
    "batched_reduce_prod": operator.mul,
    "batched_reduce_max": max,
    "batched_reduce_min": min,
}


def reference_reduce(x: np.ndarray, axes: tuple[int, ...], method: str) -> tuple[dict, list[int]]:
    """Each output position's value (exact Python numbers) folded over the reduced axes, and the kept dims."""
    fn = REDUCERS[method]
    kept = [d for i, d in enumerate(x.shape) if i not in axes]
    out: dict = {}
    for position in itertools.product(*(range(d) for d in x.shape)):
        key = tuple(p for i, p in enumerate(position) if i not in axes)
        value = x[position].item()
        out[key] = value if key not in out else fn(out[key], value)
    return out, kept


@pytest.mark.parametrize("method", REDUCERS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.int64])
@pytest.mark.parametrize("axes", [(0,), (1,), (0, 2), (-1, 0), (0, 1, 2), ()])
def test_batched_reductions(method: str, dtype: type, axes: tuple[int, ...]) -> None:
    x = (RNG.standard_normal((2, 3, 4)) * 3).astype(dtype) if dtype in FLOATS else RNG.integers(-9, 9, (2, 3, 4)).astype(dtype)
    out = run(lambda g, v: getattr(g, method)(v, axes), x=x)
    normalized = tuple(sorted(a % 3 for a in axes))
    values, kept = reference_reduce(x, normalized, method)
    assert out.shape == tuple(kept) and out.dtype == dtype
    for key, value in values.items():
        if dtype in INTS:
            assert out[key] == wrap(value, dtype), key
        else:
            np.testing.assert_allclose(out[key], value, rtol=1e-5)


@pytest.mark.parametrize("method, pick", [("arg_max", max), ("arg_min", min)])
@pytest.mark.parametrize("keep_dims", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_arg_reductions_take_the_first_occurrence(method: str, pick, keep_dims: bool, axis: int) -> None:
    x = RNG.integers(0, 3, (3, 4, 5)).astype(np.float32)  # few values: many ties
    out = run(lambda g, v: getattr(g, method)(v, axis, keep_dims=keep_dims), x=x)
    axis %= 3
    assert out.dtype == np.int64
    expected_shape = tuple(1 if i == axis else d for i, d in enumerate(x.shape)) if keep_dims else \
        tuple(d for i, d in enumerate(x.shape) if i != axis)
    assert out.shape == expected_shape
    for position in itertools.product(*(range(d) for i, d in enumerate(x.shape) if i != axis)):
        line = [x[position[:axis] + (k,) + position[axis:]] for k in range(x.shape[axis])]
        first = line.index(pick(line))
        where = position[:axis] + (0,) + position[axis:] if keep_dims else position
        assert out[where] == first


def test_rank_zero_results() -> None:
    x = np.array([3, 9, 9, 1], np.int32)
    assert run(lambda g, v: g.arg_max(v, 0), x=x).shape == ()
    assert run(lambda g, v: g.arg_max(v, 0), x=x) == 1
    total = run(lambda g, v: g.batched_reduce_add(v, (0,)), x=x)
    assert total.shape == () and total == 22


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_batch_matmul(dtype: type) -> None:
    lhs = RNG.integers(-5, 5, (3, 2, 4)).astype(dtype)
    rhs = RNG.integers(-5, 5, (3, 4, 5)).astype(dtype)
    out = run(lambda g, a, b: g.batch_matmul(a, b), a=lhs, b=rhs)
    assert out.dtype == dtype and out.shape == (3, 2, 5)
    for b, i, j in itertools.product(range(3), range(2), range(5)):
        assert out[b, i, j] == sum(lhs[b, i, k].item() * rhs[b, k, j].item() for k in range(4))


def ref_conv_transpose(x, w, bias, strides, pads, dilation, group):
    """Each output element gathers the input elements whose kernel taps land on it."""
    n_, c_, h_, w_ = x.shape
    _, o_per_group, kh, kw = w.shape
    top, left, bottom, right = pads
    oh = (h_ - 1) * strides[0] + dilation[0] * (kh - 1) + 1 - top - bottom
    ow = (w_ - 1) * strides[1] + dilation[1] * (kw - 1) + 1 - left - right
    c_per_group = c_ // group
    out = np.zeros((n_, o_per_group * group, oh, ow))
    for n, o, y, xx in itertools.product(range(n_), range(o_per_group * group), range(oh), range(ow)):
        g, oo = divmod(o, o_per_group)
        acc = float(bias[o])
        for c, ky, kx in itertools.product(range(c_per_group), range(kh), range(kw)):
            sy, sx = y + top - ky * dilation[0], xx + left - kx * dilation[1]
            if sy % strides[0] or sx % strides[1]:
                continue
            iy, ix = sy // strides[0], sx // strides[1]
            if 0 <= iy < h_ and 0 <= ix < w_:
                acc += float(x[n, g * c_per_group + c, iy, ix]) * float(w[g * c_per_group + c, oo, ky, kx])
        out[n, o, y, xx] = acc
    return out


@pytest.mark.parametrize(
    "shape, filter_shape, strides, pads, dilation, group",
    [
        ((1, 2, 3, 3), (2, 3, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1),
        ((2, 3, 4, 3), (3, 2, 2, 2), (2, 2), (0, 0, 0, 0), (1, 1), 1),
        ((1, 4, 3, 4), (4, 2, 3, 2), (2, 3), (1, 0, 2, 1), (1, 1), 2),
        ((1, 3, 5, 4), (3, 1, 3, 3), (1, 2), (1, 1, 1, 1), (2, 1), 3),  # depthwise, dilated
        ((1, 2, 2, 2), (2, 2, 1, 1), (3, 3), (0, 0, 0, 0), (1, 1), 1),  # 1x1 kernel, strides leave gaps
    ],
)
def test_conv_transpose(shape, filter_shape, strides, pads, dilation, group) -> None:
    x = RNG.standard_normal(shape).astype(np.float32)
    w = RNG.standard_normal(filter_shape).astype(np.float32)
    b = RNG.standard_normal(filter_shape[1] * group).astype(np.float32)
    out = run(
        lambda g, v: g.conv_transpose(v, w, b, strides=strides, pads=pads, dilation=dilation, group=group), x=x
    )
    np.testing.assert_allclose(out, ref_conv_transpose(x, w, b, strides, pads, dilation, group), rtol=1e-5, atol=1e-5)


def test_float16_elementwise_rounds_in_float16() -> None:
    a = np.array([2048, 0.1, 4e4], np.float16)
    b = np.array([1, 0.2, 4e4], np.float16)
    out = run(lambda g, x, y: g.add(x, y), a=a, b=b)
    assert out.dtype == np.float16
    # 2048 + 1 is not representable in f16 (it rounds to even: 2048); 4e4 + 4e4 overflows to inf.
    assert out.tolist() == [2048.0, float(np.float16(np.float16(0.1) + np.float16(0.2))), math.inf]

