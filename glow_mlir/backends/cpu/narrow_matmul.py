"""Matmuls to a few columns, padded to one vector, and to one column, as row reductions: part of
glow-cpu-layout (layout.py).

The matmul kernel vectorizes along the output's columns in blocks whose tiles are powers of two (LLVM scalarizes
other vector lengths: matmul_recipes.column_blocks), so 9 columns ran as a block of 8 and a block of 1 and 7 as
4, 2 and 1, each block reading all of A again with vectors of few lanes: a token-classification head, [128, 768]
x [768, 9], took 0.060 ms against onnxruntime's 0.018; a graph convolution's [200, 64] x [64, 7] 0.0115 against
0.0061. A matmul, batch_matmul or fully_connected (f32) of fewer than 16 columns, no power of two, over at least
MIN_ROWS rows now multiplies B (and the bias) padded with zero columns to 16, one vector, and slices the
columns it has: 16 / N times the multiply-adds in one kernel of whole vectors instead of N of them in several.

A product to one column (a `Linear(d, 1)` scoring rows: attention pooling, Bahdanau attention, a regression
head; a matrix times a vector) is a dot product per row, which the matmul kernel ran one lane wide and the
loop nest as scalar multiply-adds (LLVM keeps an f32 sum's order): [4096, 256] x [256, 1] took 0.45 ms, 2.3
GFLOP/s. It becomes sum(A * B^T broadcast, last axis), B^T a reshape of the column: the row-reduction kernel,
vectorized along k (0.11 ms; [1024, 64] 22 -> 7 us).
"""

from __future__ import annotations

from mlir import ir

from glow_mlir import ops
from glow_mlir.backends.cpu.conv_recipes import LANES
from glow_mlir.passes.graph import utils as g

MATMULS = ("glow.matmul", "glow.batch_matmul", "glow.fully_connected")
# The fewest output rows worth a padded product: a single row is a dot product per column either way.
MIN_ROWS = 8


def _widened(value: ir.Value) -> ir.Value:
    """`value` with its last dim zero-padded to LANES (a constant for glow-constant-fold to fold)."""
    dims = list(ops.shape(value))
    elt = ops.element_type(value)
    wide = ops.tensor_type([*dims[:-1], LANES], elt)
    zeros = g.make(g.SPLAT, [], wide, {"value": g.splat_attribute(elt, 0.0)})
    return g.make("glow.insert_tensor", [zeros, value], wide, {"start": ops.i64_array([0] * len(dims))})


def rewrite(op: ir.Operation) -> ir.Value | None:
    """The value replacing matmul `op` (`padded` or `column`), or None where neither rule takes it."""
    return padded(op) or column(op)


def column(op: ir.Operation) -> ir.Value | None:
    """The row reduction replacing a product of `op`'s f32 A [..., m, k] (m >= 2) with a column B [..., k, 1]."""
    result = op.results[0]
    dims = list(ops.shape(result))
    if not isinstance(ops.element_type(result), ir.F32Type) or dims[-1] != 1 or dims[-2] < 2:
        return None
    a, b = op.operands[0], op.operands[1]
    grid = ops.shape(a)
    f32 = ops.element_type(result)
    with ir.InsertionPoint(op), op.location:
        row = g.reshape(b, [*ops.shape(b)[:-2], 1, grid[-1]])
        spread = g.make("glow.broadcast", [row], ops.tensor_type(grid, f32), {"axis": ops.i64(0)})
        products = g.make("glow.mul", [a, spread], ops.tensor_type(grid, f32))
        sums = g.make("glow.batched_reduce_add", [products], ops.tensor_type(grid[:-1], f32),
                      {"axes": ops.i64_array([len(grid) - 1])})  # fmt: skip
        y = g.reshape(sums, dims)
        if op.name == "glow.fully_connected":
            bias = g.make("glow.broadcast", [op.operands[2]], result.type, {"axis": ops.i64(len(dims) - 1)})
            y = g.make("glow.add", [y, bias], result.type)
        return y


def padded(op: ir.Operation) -> ir.Value | None:
    """The padded product and its slice replacing matmul `op`, or None where the rule does not take it."""
    result = op.results[0]
    dims = list(ops.shape(result))
    n, m = dims[-1], dims[-2]
    # 3 columns at least: 1 and 2 are powers of two (and a dynamic dim is no count at all).
    if not isinstance(ops.element_type(result), ir.F32Type) or not 3 <= n < LANES or n & (n - 1) == 0 or m < MIN_ROWS:
        return None
    with ir.InsertionPoint(op), op.location:
        operands = [op.operands[0], *(_widened(v) for v in op.operands[1:])]
        wide = g.make(op.name, operands, ops.tensor_type([*dims[:-1], LANES], ops.element_type(result)),
                      g.attributes(op))  # fmt: skip
        return g.make("glow.slice", [wide], result.type, {"start": ops.i64_array([0] * len(dims))})
