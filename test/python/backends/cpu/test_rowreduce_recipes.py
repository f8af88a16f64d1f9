"""glow-cpu-schedule's row-reduction kernel (rowreduce_recipes.py): sums, maxima, minima and products along the
last dim of f32 rows in vector accumulators, one tree reduction per row. Rows of every length from one vector
up, with whole vectors, a masked rest, or both; NaN and infinities as numpy gives them; shorter rows keep
the vector recipe."""

from __future__ import annotations

import numpy as np
import pytest

import glow_mlir
from glow_mlir.backends.cpu.rowreduce_recipes import LANES

RNG = np.random.default_rng(11)
REDUCTIONS = {"add": np.sum, "max": np.max, "min": np.min, "prod": np.prod}


def _reduce(kind: str, x: np.ndarray) -> tuple[np.ndarray, str]:
    """The JIT's reduction of x over its last axis, and the scheduled IR."""
    g = glow_mlir.Graph("reduce")
    g.output("y", getattr(g, f"batched_reduce_{kind}")(g.input("x", x.shape), axes=[x.ndim - 1]))
    with glow_mlir.compile(g, keep_ir=True) as model:
        return model.run({"x": x})["y"], model.ir("glow-cpu-schedule")


@pytest.mark.parametrize("kind", ["add", "max", "min", "prod"])
@pytest.mark.parametrize("shape", [(3, 16), (4, 17), (2, 5, 64), (3, 100), (1, 32, 799), (2, 1000), (5, 47)])
def test_row_reductions_match_numpy(kind: str, shape: tuple[int, ...]) -> None:
    # Products of values near 1 stay finite over 1000 elements.
    x = RNG.uniform(0.9, 1.1, shape) if kind == "prod" else RNG.standard_normal(shape)
    x = x.astype(np.float32)
    got, scheduled = _reduce(kind, x)
    want = REDUCTIONS[kind](x.astype(np.float64), axis=-1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.sqrt(shape[-1]))
    # One tree reduction per row: the row's vectors are combined lane by lane first.
    assert "vector.reduction" in scheduled and "fastmath<reassoc" in scheduled
    assert ("vector.maskedload" in scheduled) == bool(shape[-1] % LANES)


@pytest.mark.parametrize("kind", ["max", "min"])
@pytest.mark.parametrize("n", [16, 37, 200, 1000])
def test_nan_and_infinities(kind: str, n: int) -> None:
    """A NaN anywhere in a row (the loop's vectors, the whole vectors after it, the masked rest) makes its max
    or min NaN; rows of -inf or +inf keep them. Max and min combine as maxps / minps with NaN flags beside
    (`_ORDERED`): the lanes reduce as maxnumf / minnumf, the flags decide."""
    x = RNG.standard_normal((8, n)).astype(np.float32)
    for row, column in enumerate((0, n // 3, n - 1, n - LANES - 1 if n > LANES else 1, n // 2)):
        x[row, column] = np.nan
    x[5, :] = -np.inf
    x[6, :] = np.inf
    x[7, n // 2] = np.inf if kind == "max" else -np.inf
    got, scheduled = _reduce(kind, x)
    want = REDUCTIONS[kind](x, axis=-1)
    np.testing.assert_array_equal(got, want)
    assert f"vector.reduction <{kind}numf>" in scheduled


def test_short_rows_keep_the_vector_recipe() -> None:
    x = RNG.standard_normal((6, LANES - 4)).astype(np.float32)
    got, scheduled = _reduce("add", x)
    np.testing.assert_allclose(got, x.sum(-1), rtol=1e-5, atol=1e-5)
    assert "fastmath<reassoc>" not in scheduled
