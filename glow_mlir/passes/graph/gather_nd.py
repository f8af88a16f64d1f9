"""glow-gather-nd-to-gather: a gather_nd as a gather of rows of its data seen flat over the dims it indexes.

ONNX GatherND picks, per index tuple (i0, ..., ik-1) of its indices' last dim, the slice data[b..., i0, ...,
ik-1, :] within its batch (the first `batch_dims` dims). PyTorch's dynamo exporter writes advanced indexing that
way (`w[idx]` as GatherND with indices [n, 1]; a MoE layer's per-token expert weights), where TorchScript wrote
Gather. The gather_nd kernel is a scalar loop nest over every element; a gather copies each picked row as a
whole and is what the rest of the compiler knows (the CPU backend's row and vector gathers, its products of
gathered experts). So the pass writes

    gather_nd(data [B..., D0, ..., Dk-1, R...], indices [B..., M..., k], batch_dims = len(B))
        = gather(reshape(data, [prod(B) * prod(D), R...]), row, axis 0)

with row = batch * prod(D) + sum over j of wrap(indices[..., j]) * stride_j (row-major over D), the batch
offsets a constant, each index column counted from the end when negative and clamped into its dim as the
gather_nd kernel does. An index depth of 1 without batch dims is the gather itself (which wraps and clamps its
index the same way).
"""

from __future__ import annotations

import math

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.registry import register


def _column(indices: ir.Value, j: int, size: int) -> ir.Value:
    """Index column j of `indices` ([..., k] -> [...]), counted from the end when negative and clamped into
    [0, size)."""
    dims = list(ops.shape(indices))
    start = [0] * len(dims)
    start[-1] = j
    elt = ops.element_type(indices)
    typed = ops.tensor_type(dims[:-1], elt)
    column = g.reshape(g.make("glow.slice", [indices], ops.tensor_type([*dims[:-1], 1], elt),
                              {"start": ops.i64_array(start)}), dims[:-1])  # fmt: skip

    def splat(value: int) -> ir.Value:
        return g.make("glow.splat", [], typed, {"value": ops.i64(value)})

    negative = g.make("glow.cmp_lt", [column, splat(0)], ops.tensor_type(dims[:-1], ir.IntegerType.get_signless(1)))
    wrapped = g.make("glow.select", [negative, g.make("glow.add", [column, splat(size)], typed), column], typed)
    return g.make("glow.min", [g.make("glow.max", [wrapped, splat(0)], typed), splat(size - 1)], typed)


def _as_gather(op: ir.Operation) -> ir.Value | None:
    """gather_nd `op` as a gather (module docstring), built before it; None for an index depth of 0 or an empty
    result."""
    data, indices = op.operands
    batch_dims = ops.integer(op, "batch_dims")
    data_dims, index_dims = list(ops.shape(data)), list(ops.shape(indices))
    k = index_dims[-1]
    result = op.results[0].type
    if k == 0 or 0 in ops.shape(op.results[0]) or 0 in data_dims:
        return None
    if k == 1 and batch_dims == 0:
        rows = g.reshape(indices, index_dims[:-1])
        return g.make("glow.gather", [data, rows], result, {"axis": ops.i64(0)})
    indexed = data_dims[batch_dims : batch_dims + k]
    cells = math.prod(indexed)
    elt = ops.element_type(indices)
    typed = ops.tensor_type(index_dims[:-1], elt)
    strides = [math.prod(indexed[j + 1 :]) for j in range(k)]
    row: ir.Value | None = None
    for j, (size, stride) in enumerate(zip(indexed, strides, strict=True)):
        term = _column(indices, j, size)
        if stride != 1:
            term = g.make("glow.mul", [term, g.make("glow.splat", [], typed, {"value": ops.i64(stride)})], typed)
        row = term if row is None else g.make("glow.add", [row, term], typed)
    assert row is not None
    if batch_dims:
        # Each batch entry's rows start at its index (row-major over the batch dims) times the cells it holds.
        batch = np.arange(math.prod(data_dims[:batch_dims]), dtype=g.dtype(indices)) * cells
        shape = [*index_dims[:batch_dims], *[1] * (len(index_dims) - 1 - batch_dims)]
        offsets = np.broadcast_to(batch.reshape(shape), index_dims[:-1])
        offset = g.make("glow.constant", [], typed, {"value": ir.DenseElementsAttr.get(np.ascontiguousarray(offsets),
                                                                                       type=typed)})  # fmt: skip
        row = g.make("glow.add", [row, offset], typed)
    flat = g.reshape(data, [math.prod(data_dims[:batch_dims]) * cells, *data_dims[batch_dims + k :]])
    # The rows of the flat data picked in the indices' order: gather_nd's result, indices[:-1] + data[b + k:].
    return g.make("glow.gather", [flat, row], result, {"axis": ops.i64(0)})


def _rewrite(op: ir.Operation) -> ir.Value | None:
    if op.name != "glow.gather_nd":
        return None
    with ir.InsertionPoint(op), op.location:
        return _as_gather(op)


@register("glow-gather-nd-to-gather")
def gather_nd_to_gather(module: ir.Module) -> None:
    """Rewrite gather_nd as a gather of rows of its data seen flat over the dims it indexes."""
    g.rewrite_functions(module, _rewrite, fixed_point=False)
