"""glow-fold-transpose-into-weights: moves transposes off the activations of matrix products and into their
constant weights, computed once at compile time (Glow's TransposeConstants and MergeTransposeIntoMatMulOrFC).

- transpose(constant) and transpose(splat) -> the transposed constant or splat, whatever reads it. This is
  the Gemm form `matmul(x, transpose(W))` that importers emit for transB = 1 and PyTorch's Linear: the model
  then multiplies by a constant in the layout the product reads, instead of transposing W on every run. If
  W has other readers they keep the original.
- matmul / fully_connected(reshape(transpose(x, s)) to [N, K], W) with s[0] = 0 and W constant: the flatten
  of a layout change before a dense layer (NHWC -> NCHW -> flatten). Flattening x directly only reorders the
  K entries of each row, so the rows of W are permuted the same way once: the product becomes
  matmul(reshape(x, [N, K]), W') and the transpose disappears. It applies when the transpose and the
  reshape have no other user.
"""

from __future__ import annotations

import math

from mlir import ir

from glow_mlir import ops
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.registry import register

TRANSPOSE = "glow.transpose"
PRODUCTS = ("glow.matmul", "glow.fully_connected")


def _fold_transposed_leaf(op: ir.Operation) -> ir.Value | None:
    # Whatever else reads the constant: a model's weights are transposed once at compile time, not per run.
    return g.fold_into_leaf(op, lambda array: array.transpose(ops.ints(op, "shuffle")), only_user=False)


def _merge_into_product(op: ir.Operation) -> ir.Value | None:
    """The product reading x flattened directly, with W's rows permuted, or None."""
    flat, weights_value = op.operands[0], op.operands[1]
    reshape = g.producer_named(flat, "glow.reshape")
    if reshape is None or not g.has_one_use(flat):
        return None
    transposed = reshape.operands[0]
    transpose = g.producer_named(transposed, TRANSPOSE)
    if transpose is None or not g.has_one_use(transposed):
        return None
    weights = g.constant_array(weights_value)
    shuffle = ops.ints(transpose, "shuffle")
    x = transpose.operands[0]
    n = ops.shape(x)[0]
    if weights is None or shuffle[0] != 0 or ops.shape(flat)[0] != n:
        return None
    # Row r of W multiplies element r of the flattened transposed row: view W's rows as the transposed dims,
    # then put those dims back in x's order.
    transposed_dims = ops.shape(transposed)[1:]
    m = ops.shape(weights_value)[1]
    by_dims = weights.reshape(*transposed_dims, m)
    inverse = g.inverse_permutation(shuffle)
    order = [inverse[a] - 1 for a in range(1, len(shuffle))] + [len(shuffle) - 1]
    permuted = by_dims.transpose(order).reshape(math.prod(transposed_dims), m)
    with ir.InsertionPoint(op), op.location:
        direct = g.make("glow.reshape", [x], flat.type, {"dims": ops.i64_array(ops.shape(flat))})
        new_weights = g.materialize(permuted, weights_value.type, prefer_splat=False)
        return g.make(op.name, [direct, new_weights, *list(op.operands)[2:]], op.results[0].type, g.attributes(op))


_REWRITES: dict[str, g.Rewrite] = {TRANSPOSE: _fold_transposed_leaf, **{p: _merge_into_product for p in PRODUCTS}}


@register("glow-fold-transpose-into-weights")
def fold_transpose_into_weights(module: ir.Module) -> None:
    """Fold transposes of constants (Gemm's transposed weights) and flatten-of-transpose into dense weights."""
    g.rewrite_functions(module, g.by_name(_REWRITES), fixed_point=False)
