"""glow-scatter-to-insert: a scatter of constant indices that writes one box of its data as an insert_tensor.

PyTorch's in-place writes to a block of a tensor (`x[..., i, :j] = v`: slice_scatter, select_scatter, index_put
with constant positions) come out of its ONNX exporters as ScatterND and ScatterElements whose indices are
constants enumerating that block. A scatter is a kernel of its own that copies the data and then writes each
update at its index (the CPU backend's scatter loops); an insert_tensor writes the block in place of a copy
(glow-ir-optimize-inserts, glow-ir-copy-elim) and sinks transposes (glow-sink-transpose). Qwen3.5's chunked
gated-delta rule exports 63 such pairs per layer, each transposed to and from the scattered axis.

Rewritten, with `reduction = "none"` and every index within its dim (negative ones counted from the end):
- scatter_nd(data, indices [n1, ..., nq, k], updates) whose index tuples, in order, enumerate the box of data's
  first k dims from their smallest to their largest in row-major order: insert_tensor(data, updates reshaped to
  the box's sizes followed by data's other dims, start = the smallest tuple, zeros after);
- scatter_elements(data, indices, updates, axis) whose indices are p[axis] + c at every position p of updates,
  for one c: insert_tensor(data, updates, start = c along axis, zeros elsewhere).
Each update then lands exactly once, where the scatter would have written it.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.registry import register


def _in_range(indices: np.ndarray, dims: np.ndarray) -> np.ndarray | None:
    """`indices` with negative entries counted from the end of `dims` (broadcast along their last axis), or
    None when one lies outside its dim (the scatter skips it: not a box write)."""
    wrapped = np.where(indices < 0, indices + dims, indices)
    return wrapped if ((wrapped >= 0) & (wrapped < dims)).all() else None


def _nd_box(data: list[int], indices: np.ndarray) -> tuple[list[int], list[int]] | None:
    """(start, sizes) of the box of data's first k dims that the index tuples enumerate in row-major order."""
    k = indices.shape[-1]
    tuples = _in_range(indices.reshape(-1, k), np.array(data[:k]))
    if tuples is None or len(tuples) == 0:
        return None
    start, stop = tuples.min(axis=0), tuples.max(axis=0) + 1
    sizes = stop - start
    if int(np.prod(sizes)) != len(tuples):
        return None
    grid = np.stack(np.meshgrid(*[np.arange(a, b) for a, b in zip(start, stop)], indexing="ij"), axis=-1)
    if not np.array_equal(grid.reshape(-1, k), tuples):
        return None
    return [int(s) for s in start] + [0] * (len(data) - k), [int(s) for s in sizes]


def _elements_offset(data: list[int], indices: np.ndarray, axis: int) -> int | None:
    """c when every index is its position along `axis` plus c (and within the dim), else None."""
    wrapped = _in_range(indices, np.array(data[axis]))
    if wrapped is None:
        return None
    shape = [1] * indices.ndim
    shape[axis] = indices.shape[axis]
    offsets = wrapped - np.arange(indices.shape[axis]).reshape(shape)
    first = int(offsets.reshape(-1)[0])
    return first if (offsets == first).all() else None


def _insert(op: ir.Operation, small: ir.Value, start: list[int]) -> ir.Value:
    with ir.InsertionPoint(op), op.location:
        return g.make("glow.insert_tensor", [op.operands[0], small], op.results[0].type,
                      {"start": ops.i64_array(start)})  # fmt: skip


def _rewrite(op: ir.Operation) -> ir.Value | None:
    if op.name not in ("glow.scatter_nd", "glow.scatter_elements"):
        return None
    if ir.StringAttr(op.attributes["reduction"]).value != "none":
        return None
    data, index, updates = op.operands
    indices = g.constant_array(index)
    if indices is None or indices.size == 0:
        return None
    dims = list(ops.shape(data))
    if op.name == "glow.scatter_elements":
        axis = ops.integer(op, "axis") % len(dims)
        offset = _elements_offset(dims, indices.astype(np.int64), axis)
        if offset is None:
            return None
        start = [0] * len(dims)
        start[axis] = offset
        return _insert(op, updates, start)
    box = _nd_box(dims, indices.astype(np.int64))
    if box is None:
        return None
    start, sizes = box
    small = sizes + dims[len(sizes) :]
    with ir.InsertionPoint(op), op.location:
        block = g.reshape(updates, small) if list(ops.shape(updates)) != small else updates
    return _insert(op, block, start)


@register("glow-scatter-to-insert")
def scatter_to_insert(module: ir.Module) -> None:
    """Rewrite scatter_nd and scatter_elements of constant indices that write one box of their data (PyTorch's
    slice_scatter and select_scatter) as insert_tensor."""
    g.rewrite_functions(module, _rewrite, fixed_point=False)
