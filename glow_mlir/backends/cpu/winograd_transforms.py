"""Winograd's minimal filtering F(m x m, r x r) (Lavin and Gray 2016, arXiv 1509.09308): its matrices, the
filter transform done at compile time, and the input and output transforms emitted on vectors, for
winograd_recipes.py's kernel.

An m x m tile of a correlation's outputs from an a x a tile of inputs d (a = m + r - 1) is

    Y = A^T [ (G g G^T) (.) (B^T d B) ] A

with (.) the elementwise product. The transforms of a tile are sums of whole vectors (16 channels of one
pixel each) with the matrices' coefficients: zeros skipped, +-1 as additions and subtractions.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from mlir import ir
from mlir.dialects import arith, vector


@dataclasses.dataclass(frozen=True)
class Minimal:
    """The matrices of F(m x m, r x r): input transform B^T (a x a), filter transform G (a x r), output
    transform A^T (m x a), a = m + r - 1."""

    m: int
    r: int
    bt: tuple[tuple[float, ...], ...]
    g: tuple[tuple[float, ...], ...]
    at: tuple[tuple[float, ...], ...]

    @property
    def a(self) -> int:
        return self.m + self.r - 1


# Lavin and Gray's F(2 x 2, 3 x 3) (interpolation points 0, 1, -1, infinity).
F2X3 = Minimal(
    m=2,
    r=3,
    bt=((1, 0, -1, 0), (0, 1, 1, 0), (0, -1, 1, 0), (0, 1, 0, -1)),
    g=((1, 0, 0), (0.5, 0.5, 0.5), (0.5, -0.5, 0.5), (0, 0, 1)),
    at=((1, 1, 1, 0), (0, 1, -1, -1)),
)
def transformed_filter(weights: np.ndarray, minimal: Minimal = F2X3) -> np.ndarray:
    """U = G g G^T of HWCF `weights` (r, r, C, F), as [a * a, C, F] f32 (position xi = row * a + column)."""
    g = np.asarray(minimal.g, np.float64)
    u = np.einsum("ik,klcf,jl->ijcf", g, np.asarray(weights, np.float64), g)
    return u.reshape(minimal.a * minimal.a, *u.shape[2:]).astype(np.float32)


def sandwich(matrix: tuple[tuple[float, ...], ...], d: list[list[ir.Value | None]]) -> list[ir.Value | None]:
    """T d T^T for T = `matrix` (rows x a) on an a x a grid of vectors (None: zero), as rows * rows vectors in
    row-major order: first each column's T d, then each row's (T d) T^T."""
    a = len(d)
    columns = [[_combine(row, [d[i][j] for i in range(a)]) for row in matrix] for j in range(a)]
    return [_combine(row, [columns[j][i] for j in range(a)]) for i in range(len(matrix)) for row in matrix]


def _combine(coefficients: tuple[float, ...], values: list[ir.Value | None]) -> ir.Value | None:
    """sum_k coefficients[k] * values[k] on vectors, skipping zero coefficients and values (None: zero), with
    additions and subtractions for +-1 (None if every term is zero)."""
    terms = sorted(((c, v) for c, v in zip(coefficients, values, strict=True) if c != 0 and v is not None),
                   key=lambda term: term[0] != 1)  # fmt: skip
    total: ir.Value | None = None
    for coefficient, value in terms:
        if total is None:
            total = value if coefficient == 1 else arith.mulf(value, _splat(coefficient, value.type))
        elif coefficient == 1:
            total = arith.addf(total, value)
        elif coefficient == -1:
            total = arith.subf(total, value)
        else:
            total = vector.fma(_splat(coefficient, value.type), value, total)
    return total


def _splat(value: float, t: ir.Type) -> ir.Value:
    return arith.constant(t, ir.DenseElementsAttr.get_splat(t, ir.FloatAttr.get(ir.F32Type.get(), value)))
