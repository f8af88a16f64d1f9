"""gather_elements, gather_nd, scatter_elements, scatter_nd and top_k built with the builder API, compiled and
run by the JIT for every element type they take, against the reference interpreter; and what the generated
code does with out-of-range indices, which the interpreter refuses: gathers clamp, scatters skip."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import glow_mlir
from glow_mlir import ops
from glow_mlir.codegen import top_k as top_k_lowering

rng = np.random.default_rng(11)

NUMBERS = ["f32", "f64", "f16", "bf16", "i8", "i16", "i32", "i64", "ui8", "ui32", "ui64"]


def sample(elt: str, *shape: int) -> np.ndarray:
    dtype = ops.MLIR_TO_NUMPY[elt]
    if elt == "i1":
        return rng.integers(0, 2, shape).astype(np.bool_)
    if elt.startswith("ui"):
        return rng.integers(0, 6, shape).astype(dtype)
    # Few distinct values: top_k meets many ties.
    return rng.integers(-5, 6, shape).astype(dtype)


def compiled(build: Callable[..., glow_mlir.Tensor], **inputs: np.ndarray) -> tuple[glow_mlir.Graph, np.ndarray]:
    g = glow_mlir.Graph("index_ops")
    tensors = {name: g.input(name, a.shape, a.dtype) for name, a in inputs.items()}
    g.output("y", build(g, **tensors))
    with glow_mlir.compile(g) as model:
        return g, model.run(inputs)["y"]


def check(build: Callable[..., glow_mlir.Tensor], **inputs: np.ndarray) -> None:
    g, got = compiled(build, **inputs)
    want = glow_mlir.interpret(g.module, inputs)["y"]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("elt", [*NUMBERS, "i1"])
def test_gathers(elt: str) -> None:
    x = sample(elt, 4, 5, 3)
    check(lambda g, x, i: g.gather_elements(x, i, 1), x=x, i=rng.integers(-5, 5, (4, 7, 2)).astype(np.int32))
    check(lambda g, x, i: g.gather_nd(x, i, 1), x=x, i=rng.integers(-3, 3, (4, 6, 2)).astype(np.int64))


@pytest.mark.parametrize("elt", NUMBERS)
@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatters(elt: str, reduction: str) -> None:
    x = sample(elt, 4, 5)
    # Duplicate indices on purpose: none keeps the last update, the reductions combine all of them.
    i = rng.integers(-5, 5, (3, 4)).astype(np.int64)
    check(lambda g, x, i, u: g.scatter_elements(x, i, u, -1, reduction), x=x, i=i, u=sample(elt, 3, 4))
    rows = np.array([[1], [-1], [1], [0]], np.int64)
    check(lambda g, x, i, u: g.scatter_nd(x, i, u, reduction), x=x, i=rows, u=sample(elt, 4, 5))


def test_scatter_of_bool() -> None:
    x, i = sample("i1", 3, 4), np.array([[0, 2], [1, 1]], np.int64)
    check(lambda g, x, i, u: g.scatter_nd(x, i, u), x=x, i=i, u=sample("i1", 2))


@pytest.fixture(params=["ranks", "heap"])
def top_k_by(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each top_k test on both of the lowering's ways: counting ranks and the heap."""
    monkeypatch.setattr(top_k_lowering, "RANK_COST", 10**9 if request.param == "ranks" else 0)
    return request.param


@pytest.mark.parametrize("elt", NUMBERS)
@pytest.mark.parametrize("largest", [True, False])
def test_top_k(elt: str, largest: bool, top_k_by: str) -> None:
    x = sample(elt, 3, 9, 2)
    check(lambda g, x: g.top_k(x, 4, 1, largest), x=x)
    check(lambda g, x: g.top_k(x, 9, 1, largest), x=x)


@pytest.mark.parametrize("largest", [True, False])
def test_top_k_extremes(largest: bool, top_k_by: str) -> None:
    """The type's own extremes and infinities rank like any value: no sentinel value stands in for 'none'."""
    low, high = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    check(lambda g, x: g.top_k(x, 4, 0, largest), x=np.array([low, high, 0, low, high], np.int64))
    floats = np.array([np.inf, -np.inf, np.nan, 0, -np.inf, np.nan, np.inf], np.float32)
    check(lambda g, x: g.top_k(x, 7, 0, largest), x=floats)
    check(lambda g, x: g.top_k(x, 3, 0, largest), x=floats)


@pytest.mark.parametrize("order", ["ascending", "descending", "ties", "random"])
@pytest.mark.parametrize("k", [1, 2, 37, 300])
def test_top_k_row_orders(order: str, k: int, top_k_by: str) -> None:
    """Rows that exercise the heap: every element entering (ascending rows for the largest), none entering
    after the first k (descending), runs of equal values (ties by index through sift-up, sift-down and the
    final sort), and k = the whole row (a sort)."""
    n = 300
    rows = {
        "ascending": np.arange(n, dtype=np.float32),
        "descending": np.arange(n, 0, -1, dtype=np.float32),
        "ties": rng.integers(0, 4, n).astype(np.float32),
        "random": rng.standard_normal(n, dtype=np.float32),
    }
    x = np.stack([rows[order], rows[order][::-1].copy()])
    for largest in (True, False):
        check(lambda g, x: g.top_k(x, k, 1, largest), x=x)


@pytest.mark.parametrize("elt", ["f32", "f64", "f16", "i32", "i64", "ui32"])
def test_top_k_long_rows_in_blocks(elt: str, top_k_by: str) -> None:
    """A contiguous row (f32, f64, i32, i64) is compared a vector at a time, by the heap's scan and by the
    counting: a block holding a NaN, an infinity or a late best must still be seen, the last block masked;
    f16 and unsigned rows and rows along another axis go one element at a time."""
    x = sample(elt, 3, 200)
    if elt.startswith("f"):
        x[0, [40, 41, 150]] = np.nan
        x[1, [17, 180]] = [np.inf, -np.inf]
    x[2, 199] = 100  # the best, in the tail after the last whole block
    for largest in (True, False):
        check(lambda g, x: g.top_k(x, 5, 1, largest), x=x)
        check(lambda g, x: g.top_k(x, 2, 0, largest), x=x)


@pytest.mark.parametrize("constant", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("axis", [0, 1])
def test_a_gather_clamps_out_of_range_indices(dtype: type, axis: int, constant: bool) -> None:
    # A token id past an embedding table's rows read memory past it (a segfault, or NaNs) in the CPU backend's
    # row copies and vector gathers (f32) and in the generic loops (other types): the nearest row now. Constant
    # indices skip the clamp only where all are in range.
    x = np.arange(6 * 40, dtype=dtype).reshape(6, 40)
    i = np.array([[1, 100000], [-3, -100000], [6, 2**40]], np.int64)
    if constant:
        _, got = compiled(lambda g, x: g.gather(x, g.constant(i), axis), x=x)
    else:
        _, got = compiled(lambda g, x, i: g.gather(x, i, axis), x=x, i=i)
    size = x.shape[axis]
    expected = np.take(x, np.clip(np.where(i < 0, i + size, i), 0, size - 1), axis=axis)
    np.testing.assert_array_equal(got, expected)


def test_gathers_clamp_out_of_range_indices() -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    i = np.array([[9, -9], [3, -1], [4, -5]], np.int64)
    _, got = compiled(lambda g, x, i: g.gather_elements(x, i, 1), x=x, i=i)
    np.testing.assert_array_equal(got, np.take_along_axis(x, np.array([[3, 0], [3, 3], [3, 0]]), 1))
    _, got = compiled(lambda g, x, i: g.gather_nd(x, i), x=x, i=np.array([[7, -8], [1, 2]], np.int64))
    np.testing.assert_array_equal(got, [x[2, 0], x[1, 2]])


def test_scatters_skip_out_of_range_indices() -> None:
    x = np.zeros((2, 3), np.float32)
    i = np.array([[5, -4, 1], [-1, 3, 0]], np.int64)
    u = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    _, got = compiled(lambda g, x, i, u: g.scatter_elements(x, i, u, 1), x=x, i=i, u=u)
    np.testing.assert_array_equal(got, [[0, 3, 0], [6, 0, 4]])
    rows = np.array([[2], [-3], [-2]], np.int64)
    _, got = compiled(lambda g, x, i, u: g.scatter_nd(x, i, u, "add"), x=x, i=rows, u=np.ones((3, 3), np.float32))
    np.testing.assert_array_equal(got, [[1, 1, 1], [0, 0, 0]])


def test_builder_refuses_an_unknown_reduction() -> None:
    g = glow_mlir.Graph("bad")
    x = g.input("x", (3,), "f32")
    with pytest.raises(ValueError, match="scatter_nd.*reduction 'sum'"):
        g.scatter_nd(x, np.zeros((1, 1), np.int64), np.ones(1, np.float32), "sum")

