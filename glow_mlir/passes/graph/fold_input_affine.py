"""A constant per-channel affine map before an unpadded convolution, folded into its filter and bias (part of
glow-fuse-activations).

A normalization's learned scale and shift (GroupNorm's, LayerNorm's over channels, an inference batch norm
after a residual add) is `u * k[c] + s[c]`, two passes over the activation; when the convolution that reads it
has no padding (after glow-lower a padded convolution reads an `insert_tensor`, so every convolution that
reads the affine result directly has none), every window cell is a real input cell and

    conv(u * k + s, W, b) = conv(u, W * k[c], b + sum over (kh, kw, c) of W[kh, kw, c, o] * s[c]),

with c the input channel of filter column o's group. The map may be a mul, an add, or several in any order,
with constants (splats, broadcasts) that depend on the channel only, and transposes between it and the
convolution (glow-cpu-layout's NCHW -> NHWC); every intermediate result must have no other user. New weights
are computed in float64 and stored in the op's element type.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.opdefs.base import Producer
from glow_mlir.passes.graph import utils as g

AFFINE = ("glow.mul", "glow.add")


def fold_input_affine(op: ir.Operation, producer: Producer) -> ir.Operation | None:
    """`op` (a convolution with constant filter and bias, no padding) reading the affine map of another value
    -> the convolution of that value with the map folded in; returns the new op, or None when nothing folds."""
    axis, in_axis, out_axis = producer.channel_axis, producer.filter_input_axis, producer.filter_channel_axis
    if axis is None or in_axis is None or out_axis is None or any(ops.ints(op, "pads")):
        return None
    if not isinstance(ops.element_type(op.operands[0]), ir.FloatType):
        return None
    constants = (g.CONSTANT, g.SPLAT)
    if g.producer_name(op.operands[1]) not in constants or g.producer_name(op.operands[2]) not in constants:
        return None
    value, views = op.operands[0], []
    # Back through the transposes before the convolution: the channel dim moves with each.
    while (view := g.producer(value)) is not None and view.name == "glow.transpose" and g.has_one_use(value):
        axis = ops.ints(view, "shuffle")[axis]
        views.insert(0, view)
        value = view.operands[0]
    channels = ops.shape(value)[axis]
    scale, shift = np.ones(channels), np.zeros(channels)
    steps: list[ir.Operation] = []
    # Back through the affine ops: the convolution reads value = u * scale + shift.
    while (step := g.producer(value)) is not None and step.name in AFFINE and g.has_one_use(value):
        lhs, rhs = step.operands
        if lhs == rhs or step.results[0].type != lhs.type or lhs.type != rhs.type:
            break
        vector, read = g.channel_vector(rhs, axis), lhs
        if vector is None:
            vector, read = g.channel_vector(lhs, axis), rhs
        if vector is None:
            break
        vector = vector.astype(np.float64)
        if step.name == "glow.mul":
            scale = scale * vector
        else:
            shift = shift + vector * scale
        value = read
        steps.append(step)
    if not steps:
        return None
    # Read once something folds, the filter as a view: GB-scale weights cost seconds per copy (page faults).
    weights, bias = g.constant_array(op.operands[1], copy=False), g.constant_array(op.operands[2])
    if weights is None or bias is None:
        return None
    new_weights, new_bias = _folded(weights, bias.astype(np.float64), scale, shift, op, in_axis, out_axis)
    # The new op computes the affine ops too: its location names them all (profiles list them).
    with ir.InsertionPoint(op), ir.Location.fused([op.location, *(s.location for s in steps)]):
        for view in views:
            value = g.make(view.name, [value], view.results[0].type, g.attributes(view))
        w = g.materialize(new_weights, op.operands[1].type, prefer_splat=False)
        b = g.materialize(new_bias, op.operands[2].type, prefer_splat=False)
        new = g.make(op.name, [value, w, b], op.results[0].type, g.attributes(op))
    g.replace(op, new)
    return g.producer(new)


def _folded(
    weights: np.ndarray, bias: np.ndarray, scale: np.ndarray, shift: np.ndarray, op: ir.Operation,
    in_axis: int, out_axis: int,
) -> tuple[np.ndarray, np.ndarray]:
    """W * scale[c] and b + sum W * shift[c], where filter column o of group j reads input channel
    j * (C / group) + i at filter index i along `in_axis`. The filter is read in its own layout, never copied
    to float64 (each copy of GB-scale weights is fresh memory, whose page faults made this fold 2 s of
    MobileNetV5-300M's compile): the bias from its float64 sums over the window, the new filter one product
    by the scale rounded to the filter's type (within an ulp of the float64 product's rounding)."""
    group = ops.integer(op, "group")
    per_group, filters = weights.shape[in_axis], weights.shape[out_axis]
    window = tuple(d for d in range(weights.ndim) if d not in (in_axis, out_axis))
    # The filter summed over its window, [i, o] or [o, i] as the two axes lie (a 1x1 filter is its own sum).
    if any(weights.shape[d] > 1 for d in window):
        sums = weights.sum(axis=window, dtype=np.float64)
    else:
        sums = weights.reshape((per_group, filters) if in_axis < out_axis else (filters, per_group))
    sums = sums.T if in_axis > out_axis else sums
    if group == 1:
        added = np.einsum("io,i->o", sums, shift, dtype=np.float64)
    else:
        added = np.einsum("io,io->o", sums, _per_entry(shift, group, per_group, filters), dtype=np.float64)
    new_bias = bias + added
    # The scale of each entry laid along the filter's two axes, 1 along the others, to broadcast in place.
    factor = _per_entry(scale, group, per_group, filters).astype(weights.dtype)
    along = [1] * weights.ndim
    along[in_axis], along[out_axis] = factor.shape
    new_weights = np.multiply(weights, (factor if in_axis < out_axis else factor.T).reshape(along))
    return new_weights, new_bias


def _per_entry(values: np.ndarray, group: int, per_group: int, filters: int) -> np.ndarray:
    """values[c] for filter entry i of column o, c the input channel it reads, as [per_group, filters], or
    [per_group, 1] (to broadcast) without groups: a table as large as a 1x1 filter is built only for groups."""
    if group == 1:
        return values[:, None]
    return values.reshape(group, per_group)[np.arange(filters) // (filters // group)].T
