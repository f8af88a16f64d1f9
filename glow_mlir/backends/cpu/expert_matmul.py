"""Products with gathered experts' weights, computed against every expert instead: part of glow-cpu-layout
(layout.py).

A mixture-of-experts layer exported with per-pair weights (transformers' `batched_mm` experts: each of S
token-expert pairs gathers its expert's [K, N] weight matrix, then a batched product) copies S matrices out of
the E experts' weights and reads them again: out[s] = X[s] @ W[e_s], a gather of S x K x N floats written and
read back, where W itself, E x K x N, is read once by a product against all experts. So a batch_matmul one of
whose operands is a gather along axis 0 of a constant [E, ...] by the batch's expert ids becomes one matmul of
the batch against every expert, X [S M, K] x W [K, E N], and a gather_elements of each pair's expert from the
[S, M, E, N] result: E / 1 times the multiply-adds, in one dense kernel, and no copy.

That pays while the experts' weights, read once, are no more than the copies (E <= 3 S: the gathered form
writes and reads S matrices besides reading them) and the E-fold multiply-adds stay cheap against the copies'
traffic (E <= MAX_EXPERTS). A decode step of a large model (S = 2 pairs of 8 experts) keeps the gather: it
reads 2 experts, the dense form all 8.
"""

from __future__ import annotations

from mlir import ir

from glow_mlir import ops
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.graph.sink_transpose import transpose_to

# The most experts whose dense product replaces the gathered one: 32 experts for 64 pairs ran 0.55x the gathered
# form, 16 for 8 or 32 pairs 1.22x and 1.82x (docs/OPTIMIZATIONS.md, "Products with gathered experts").
MAX_EXPERTS = 16
# The dense form reads E matrices once; the gathered form writes and reads S copies and reads S: 3 S.
COPY_FACTOR = 3


def rewrite(op: ir.Operation) -> ir.Value | None:
    """The dense product replacing batch_matmul `op` whose lhs or rhs is a gather of a constant's experts, or None
    where the rule does not take it."""
    if op.name != "glow.batch_matmul":
        return None
    lhs, rhs = op.operands[0], op.operands[1]
    if (experts := _experts(rhs)) is not None:
        weights, ids = experts
        with ir.InsertionPoint(op), op.location:
            return _dense(lhs, weights, ids, op.results[0].type) if _pays(weights, ids) else None
    if (experts := _experts(lhs)) is not None:
        # W[e] @ X[s] = (X[s]^T @ W[e]^T)^T, the transposed weights a constant that glow-constant-fold folds.
        weights, ids = experts
        if not _pays(weights, ids):
            return None
        with ir.InsertionPoint(op), op.location:
            s, n, m = ops.shape(op.results[0])
            product = _dense(transpose_to(rhs, [0, 2, 1]), transpose_to(weights, [0, 2, 1]), ids,
                             ops.tensor_type([s, m, n], ops.element_type(op.results[0])))  # fmt: skip
            return transpose_to(product, [0, 2, 1])
    return None


def _experts(value: ir.Value) -> tuple[ir.Value, ir.Value] | None:
    """(weights [E, ...], ids [S]) when `value` is a gather along axis 0 of a constant by 1-D indices."""
    gather = g.producer_named(value, "glow.gather")
    if gather is None or ops.integer(gather, "axis") != 0:
        return None
    weights, ids = gather.operands[0], gather.operands[1]
    constant = g.producer_name(weights) in (g.CONSTANT, g.SPLAT)
    if not constant or len(ops.shape(ids)) != 1 or len(ops.shape(weights)) != 3:
        return None
    return weights, ids


def _pays(weights: ir.Value, ids: ir.Value) -> bool:
    experts, pairs = ops.shape(weights)[0], ops.shape(ids)[0]
    return experts <= min(MAX_EXPERTS, COPY_FACTOR * pairs)


def _dense(x: ir.Value, weights: ir.Value, ids: ir.Value, result: ir.Type) -> ir.Value:
    """out[s] = x[s] @ weights[ids[s]] for x [S, M, K], weights [E, K, N]: every pair against every expert, then
    each pair's own expert."""
    s, m, k = ops.shape(x)
    e, _, n = ops.shape(weights)
    elt = ops.element_type(result)
    flat = g.reshape(transpose_to(weights, [1, 0, 2]), [k, e * n])
    every = g.make("glow.matmul", [g.reshape(x, [s * m, k]), flat], ops.tensor_type([s * m, e * n], elt))
    every = g.reshape(every, [s, m, e, n])
    index_type = ops.element_type(ids)
    at = g.reshape(ids, [s, 1, 1, 1])
    at = g.make("glow.broadcast", [at], ops.tensor_type([s, m, 1, n], index_type), {"axis": ops.i64(0)})
    chosen = g.make("glow.gather_elements", [every, at], ops.tensor_type([s, m, 1, n], elt), {"axis": ops.i64(2)})
    return g.reshape(chosen, [s, m, n])
