"""The ops for ONNX coverage and every element type, end to end: built with the builder API, compiled through
the whole pipeline and run by the JIT, against the reference interpreter.

Integer and bool results must match exactly; float results to 1e-5 (erf to 1e-6), f16 to a few f16 ulps
(1e-3), since numpy and the JIT may round an f16 result computed in f32 on either side of a tie.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import glow_mlir
from glow_mlir import ops

rng = np.random.default_rng(7)

FLOATS = ["f32", "f64", "f16"]
INTS = ["i8", "i16", "i32", "i64"]
ALL_TYPES = [*FLOATS, *INTS, "i1"]
TOLERANCE = {"f16": 1e-3}


def dtype(elt: str) -> np.dtype:
    return ops.MLIR_TO_NUMPY[elt]


def sample(elt: str, *shape: int, low: float = -10.0, high: float = 10.0) -> np.ndarray:
    """Random values of element type `elt`: floats in [low, high), integers in [low, high], bools."""
    if elt == "i1":
        return rng.integers(0, 2, shape).astype(np.bool_)
    if elt in INTS:
        return rng.integers(int(low), int(high) + 1, shape).astype(dtype(elt))
    return rng.uniform(low, high, shape).astype(dtype(elt))


def check(graph: glow_mlir.Graph, feeds: dict[str, np.ndarray], tol: float = 1e-5) -> None:
    """Compiles and runs `graph` and compares every output with the interpreter's."""
    expected = glow_mlir.interpret(graph.module, feeds)
    with glow_mlir.compile(graph) as model:
        got = model.run(feeds)
    assert got.keys() == expected.keys()
    for name, want in expected.items():
        assert got[name].shape == want.shape and got[name].dtype == want.dtype, name
        if np.issubdtype(want.dtype, np.floating):
            t = TOLERANCE.get(ops.NUMPY_TO_MLIR[want.dtype], tol)
            np.testing.assert_allclose(got[name], want, rtol=t, atol=t, err_msg=name)
        else:
            np.testing.assert_array_equal(got[name], want, err_msg=name)


def graph_of(build: Callable[[glow_mlir.Graph], object], **inputs: np.ndarray) -> glow_mlir.Graph:
    """A graph with one input per keyword (named so, of the array's shape and dtype) and output `y`."""
    g = glow_mlir.Graph("ops")
    tensors = {name: g.input(name, a.shape, a.dtype) for name, a in inputs.items()}
    g.output("y", build(g, **tensors))  # type: ignore[call-arg]
    return g


def run(build: Callable[..., object], tol: float = 1e-5, **inputs: np.ndarray) -> None:
    check(graph_of(build, **inputs), inputs, tol)


@pytest.mark.parametrize("elt", ["f64", "f16", *INTS])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "max", "min"])
def test_binary(op: str, elt: str) -> None:
    a, b = sample(elt, 3, 4), sample(elt, 3, 4)
    if op == "div":
        b = np.where(b == 0, -3, b).astype(b.dtype)
    run(lambda g, a, b: getattr(g, op)(a, b), a=a, b=b)


@pytest.mark.parametrize("elt", ["f32", "f64", *INTS])
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("exclusive,reverse", [(False, False), (True, False), (False, True), (True, True)])
def test_cumsum(elt: str, axis: int, exclusive: bool, reverse: bool) -> None:
    """Scans along a leading axis (a slice at a time), a middle one and the last (a register per row); i8
    sums wrap as the interpreter's int64 sums cast back do."""
    x = sample(elt, 3, 37, 20)
    run(lambda g, x: g.cumsum(x, axis, exclusive, reverse), x=x)


def test_cumsum_refuses_narrow_floats() -> None:
    g = glow_mlir.Graph("narrow")
    with pytest.raises(ValueError, match="cumsum.*f32, f64 or an integer"):
        g.cumsum(g.input("x", (4,), "f16"), 0)


@pytest.mark.parametrize("elt", ["i32", "i64", "f64"])
def test_matmul_batched_add_and_splat(elt: str) -> None:
    def build(g: glow_mlir.Graph, a: object, b: object) -> object:
        product = g.matmul(a, b)
        return g.max(g.batched_add(product, g.constant(sample(elt, 5, low=-3, high=3))), g.splat((2, 5), 1, elt))

    run(build, a=sample(elt, 2, 3, low=-3, high=3), b=sample(elt, 3, 5, low=-3, high=3))


@pytest.mark.parametrize("dest", ALL_TYPES)
@pytest.mark.parametrize("src", ALL_TYPES)
def test_convert_to(src: str, dest: str) -> None:
    x = sample(src, 4, 5, low=-100, high=100)
    run(lambda g, x: g.convert_to(x, dest), x=x)


@pytest.mark.parametrize("elt", ["f32", "f64", "f16", "i32", "i64", "i1"])
def test_select(elt: str) -> None:
    run(lambda g, c, a, b: g.select(c, a, b), c=sample("i1", 3, 4), a=sample(elt, 3, 4), b=sample(elt, 3, 4))


COMPARISON_CASES = [
    (op, elt)
    for op in ("cmp_eq", "cmp_neq", "cmp_lt", "cmp_lte")
    for elt in ["f32", "f64", "f16", "i8", "i32", "i64", "i1"]
    if elt != "i1" or op in ("cmp_eq", "cmp_neq")
]


@pytest.mark.parametrize("op,elt", COMPARISON_CASES)
def test_comparisons(op: str, elt: str) -> None:
    a, b = sample(elt, 4, 6, low=-2, high=2), sample(elt, 4, 6, low=-2, high=2)
    b[0] = a[0]
    if elt in FLOATS:
        a[1, :2], b[1, 1:3] = np.nan, np.nan
    run(lambda g, a, b: getattr(g, op)(a, b), a=a, b=b)


@pytest.mark.parametrize("op", ["logical_and", "logical_or", "logical_xor"])
def test_logical(op: str) -> None:
    run(lambda g, a, b: getattr(g, op)(a, b), a=sample("i1", 5, 3), b=sample("i1", 5, 3))


def test_logical_not_of_a_comparison() -> None:
    run(lambda g, a, b: g.logical_not(g.cmp_lt(a, b)), a=sample("i32", 6), b=sample("i32", 6))


FLOAT_UNARY = {
    "log": (0.01, 20.0),
    "floor": (-10.0, 10.0),
    "ceil": (-10.0, 10.0),
    "round": (-10.0, 10.0),
    "sin": (-7.0, 7.0),
    "cos": (-7.0, 7.0),
    "abs": (-10.0, 10.0),
    "neg": (-10.0, 10.0),
}


@pytest.mark.parametrize("elt", FLOATS)
@pytest.mark.parametrize("op", sorted(FLOAT_UNARY))
def test_float_unary(op: str, elt: str) -> None:
    x = sample(elt, 3, 8, low=FLOAT_UNARY[op][0], high=FLOAT_UNARY[op][1])
    if op in ("floor", "ceil", "round"):
        x[0] = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, -0.0, 1000.5], dtype(elt))
    run(lambda g, x: getattr(g, op)(x), x=x)


@pytest.mark.parametrize("elt", INTS)
@pytest.mark.parametrize("op", ["abs", "neg"])
def test_integer_unary(op: str, elt: str) -> None:
    run(lambda g, x: getattr(g, op)(x), x=sample(elt, 4, 5, low=-100, high=100))


@pytest.mark.parametrize("elt", FLOATS)
def test_erf(elt: str) -> None:
    x = np.concatenate([[0.0, -0.0, 1e-8, 0.5, -1.0, 2.4999, 2.5, 2.5001, -3.0, 6.0], rng.uniform(-5, 5, 90)])
    run(lambda g, x: g.erf(x), tol=1e-6, x=x.astype(dtype(elt)))


@pytest.mark.parametrize("elt", FLOATS)
def test_is_nan(elt: str) -> None:
    x = sample(elt, 4, 6)
    x[0, :5] = [np.nan, np.inf, -np.inf, 0.0, -np.nan]
    x[2, 3] = np.nan
    run(lambda g, x: g.is_nan(x), x=x)


def test_is_nan_refuses_integers() -> None:
    g = glow_mlir.Graph("bad")
    with pytest.raises(ValueError, match="glow.is_nan .*must be a float"):
        g.is_nan(g.input("x", (3,), "i32"))


@pytest.mark.parametrize("elt", FLOATS)
def test_pow(elt: str) -> None:
    base, exponent = sample(elt, 3, 5, low=0.5, high=2.0), sample(elt, 3, 5, low=-2.0, high=2.0)
    base[0, :2], exponent[0, :2] = [-2.0, -0.5], [3.0, 2.0]
    run(lambda g, a, b: g.pow(a, b), a=base, b=exponent)


@pytest.mark.parametrize(
    "data,indices,axis", [((5, 3), (4,), 0), ((5, 3), (2, 2), -1), ((2, 3, 4), (), 1), ((2, 3, 4), (3, 2), 2)]
)
@pytest.mark.parametrize("index_elt", ["i32", "i64"])
@pytest.mark.parametrize("elt", ["f32", "i64", "i1", "f16"])
def test_gather(data: tuple[int, ...], indices: tuple[int, ...], axis: int, index_elt: str, elt: str) -> None:
    size = data[axis]
    # Negative indices count from the end.
    idx = rng.integers(-size, size, indices).astype(dtype(index_elt))
    run(lambda g, x, i: g.gather(x, i, axis), x=sample(elt, *data), i=idx)


@pytest.mark.parametrize("axes", [(0,), (-1,), (0, 2), (0, 1, 2)])
@pytest.mark.parametrize("elt", ["f32", "f64", "i32", "i64"])
@pytest.mark.parametrize("kind", ["add", "max", "min", "prod"])
def test_batched_reduce(kind: str, elt: str, axes: tuple[int, ...]) -> None:
    low, high = ((0.5, 1.5) if elt in FLOATS else (-2, 2)) if kind == "prod" else (-50.0, 50.0)
    run(lambda g, x: getattr(g, f"batched_reduce_{kind}")(x, axes), x=sample(elt, 2, 3, 4, low=low, high=high))


@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("axis", [0, -1])
@pytest.mark.parametrize("elt", ["f32", "f16", "i32", "i64"])
@pytest.mark.parametrize("op", ["arg_max", "arg_min"])
def test_arg_max_min(op: str, elt: str, axis: int, keep: bool) -> None:
    # Integers in [-3, 3] make ties; the first must win on both sides.
    run(lambda g, x: getattr(g, op)(x, axis, keep), x=sample(elt, 3, 4, 5, low=-3, high=3))


@pytest.mark.parametrize("elt", ["f32", "f64", "i32", "i64"])
def test_batch_matmul(elt: str) -> None:
    run(lambda g, a, b: g.batch_matmul(a, b), a=sample(elt, 3, 4, 5, low=-5, high=5),
        b=sample(elt, 3, 5, 2, low=-5, high=5))  # fmt: skip


CONV_TRANSPOSES = [
    # (input NCHW, outputs, kernel, strides, pads, dilation, group)
    ((1, 1, 3, 3), 1, (3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    ((2, 3, 4, 5), 2, (3, 2), (2, 2), (1, 0, 1, 1), (1, 1), 1),
    ((1, 2, 3, 3), 4, (2, 3), (2, 1), (0, 1, 0, 0), (2, 2), 1),
    ((1, 4, 3, 4), 6, (3, 3), (1, 2), (1, 1, 1, 1), (1, 1), 2),
    ((2, 3, 4, 4), 3, (3, 3), (2, 2), (1, 1, 0, 0), (1, 1), 3),  # depthwise
]


@pytest.mark.parametrize("elt", ["f32", "f64"])
@pytest.mark.parametrize("src,outputs,kernel,strides,pads,dilation,group", CONV_TRANSPOSES)
def test_conv_transpose(
    src: tuple[int, ...], outputs: int, kernel: tuple[int, int], strides: tuple[int, int],
    pads: tuple[int, int, int, int], dilation: tuple[int, int], group: int, elt: str,
) -> None:  # fmt: skip
    w = sample(elt, src[1], outputs // group, *kernel, low=-1, high=1)
    b = sample(elt, outputs, low=-1, high=1)

    def build(g: glow_mlir.Graph, x: object) -> object:
        return g.conv_transpose(x, g.constant(w), g.constant(b), strides, pads, dilation, group)

    run(build, x=sample(elt, *src, low=-1, high=1))


def test_mixed_types_in_one_graph() -> None:
    """A ONNX-like tail: argmax of a softmax, a mask from a comparison, a gather by the argmax, a masked sum."""

    def build(g: glow_mlir.Graph, x: object, limit: object) -> object:
        best = g.arg_max(g.softmax(x), 1, False)
        picked = g.gather(x, best, 1)
        mask = g.cmp_lt(picked, limit)
        masked = g.select(mask, picked, g.splat((4, 4), 0.0))
        total = g.batched_reduce_add(g.convert_to(masked, "f64"), (1,))
        return g.convert_to(g.round(total), "i32")

    run(build, x=sample("f32", 4, 6, low=-3, high=3), limit=sample("f32", 4, 4, low=-3, high=3))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
def test_integer_division_never_traps(dtype: type) -> None:
    """x86's idiv traps on x / 0 and MIN / -1; the generated code must match the interpreter instead."""
    lowest = np.iinfo(dtype).min
    a = np.array([7, -7, 5, lowest, lowest, 0], dtype)
    b = np.array([2, 2, 0, -1, 0, 0], dtype)
    g = glow_mlir.Graph("div")
    g.output("y", g.div(g.input("a", a.shape, a.dtype), g.input("b", b.shape, b.dtype)))
    got = glow_mlir.compile(g).run({"a": a, "b": b})["y"]
    expected = glow_mlir.interpret(g.module, {"a": a, "b": b})["y"]
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, np.array([3, -3, 0, lowest, 0, 0], dtype))


@pytest.mark.parametrize("elt", ["f32", "f64"])
@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("ratio", [0, 2])
def test_roi_align(elt: str, mode: str, ratio: int) -> None:
    """Boxes inside, across the edges, far outside, degenerate and inverted, in two images; an adaptive grid
    (ratio 0) takes 1 to 5 samples a cell. 20 channels: one vector of them (two of f64) and the rest one by
    one."""
    boxes = np.array([[0, 0, 9, 9], [1.3, 2.7, 7.1, 8.4], [-3, -2, 15, 13], [5, 5, 5.2, 5.1], [8, 2, 3, 9],
                      [-30, -30, -20, -25], [2.5, 3.5, 4.5, 19]], dtype(elt))  # fmt: skip
    batch = np.int64([0, 1, 1, 0, 1, 0, 1])
    run(lambda g, x, rois, bi: g.roi_align(x, rois, bi, (3, 2), ratio, 0.75, True, mode),
        x=sample(elt, 2, 20, 10, 12), rois=boxes, bi=batch)  # fmt: skip


@pytest.mark.parametrize("elt", ["f32", "f64"])
def test_det(elt: str) -> None:
    """Random matrices, one with a zero leading entry (a row swap) and a singular one (a zero pivot)."""
    x = sample(elt, 4, 5, 5, low=-2, high=2)
    x[1, 0, 0] = 0
    x[2, 3] = x[2, 1]
    run(lambda g, x: g.det(x), x=x)
