"""glow-split-gather: a gather of constant indices with runs of consecutive ones as slices and a concat.

A gather copies through its index (the CPU backend's gather kernel: a row or a vector gather per index), while
a slice is a view that the memory passes keep in place and a concat's inputs are written into its buffer by their
producers. ONNX's reflect, edge and wrap pads are gathers along each padded axis (the importer's `_pad_indices`):
a style transfer network's 9x9 reflection pad of a 128x128 map gathers [4, 3, 2, 1, 0, 1, ..., 127, 126, ...,
123], and its pads took 1.7 of its 5.9 ms. Each run of at least MIN_RUN consecutive ascending indices becomes a
slice of the data, the indices between runs stay gathers of their own (a reflection's mirrored border), and the
pieces are concatenated along the axis: the bulk of the map is then the data itself, written once, in place.
Split only where the runs hold at least half of the indices (a permutation with a pair in order, a channel
shuffle, is left whole) in at most MAX_PIECES pieces; a gather of one run is a slice already (the importer);
1-D constant indices only.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.registry import register

# The shortest run of consecutive indices taken as a slice.
MIN_RUN = 2
# The most pieces a gather splits into: a pad's are at most 3 (border, map, border); more are a reordering
# (a nearest-neighbour resize's repeated indices), left as it is.
MAX_PIECES = 4


def pieces(indices: np.ndarray) -> list[tuple[bool, list[int]]]:
    """The indices split into (is_run, indices) pieces in order: runs of at least MIN_RUN consecutive
    ascending indices, and the indices between them."""
    out: list[tuple[bool, list[int]]] = []
    start = 0
    values = [int(i) for i in indices]
    while start < len(values):
        end = start + 1
        while end < len(values) and values[end] == values[end - 1] + 1:
            end += 1
        run = end - start >= MIN_RUN
        if not run and out and not out[-1][0]:
            out[-1][1].extend(values[start:end])
        else:
            out.append((run, values[start:end]))
        start = end
    return out


def _split(op: ir.Operation) -> ir.Value | None:
    data, index = op.operands
    found = g.constant_array(index)
    if found is None or found.ndim != 1:
        return None
    dims = list(ops.shape(data))
    axis = ops.integer(op, "axis") % len(dims)
    indices = np.where(found < 0, found + dims[axis], found)
    parts = pieces(indices)
    covered = sum(len(part) for run, part in parts if run)
    if not 2 <= len(parts) <= MAX_PIECES or 2 * covered < len(indices):
        return None
    elt, index_elt = ops.element_type(data), ops.element_type(index)
    values = []
    with ir.InsertionPoint(op), op.location:
        for run, part in parts:
            result = ops.tensor_type(dims[:axis] + [len(part)] + dims[axis + 1 :], elt)
            if run:
                start = [0] * len(dims)
                start[axis] = part[0]
                values.append(g.make("glow.slice", [data], result, {"start": ops.i64_array(start)}))
            else:
                where = g.materialize(np.array(part), ops.tensor_type([len(part)], index_elt), prefer_splat=False)
                values.append(g.make("glow.gather", [data, where], result, {"axis": ops.i64(axis)}))
        return g.concat(values, axis)


def split_function(function: ir.Operation) -> bool:
    return g.rewrite_ops(function, lambda op: _split(op) if op.name == "glow.gather" else None)


@register("glow-split-gather")
def split_gather(module: ir.Module) -> None:
    """Split a gather of constant indices into slices of its runs of consecutive indices, gathers of the rest,
    and a concat (reflect, edge and wrap pads)."""
    g.run_on_functions(module, split_function, fixed_point=False)
