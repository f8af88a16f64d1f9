"""glow-merge-conv-branches: parallel convolutions of one input whose results are added become one convolution
(the structural re-parameterization of RepVGG, ACNet, MobileOne, PP-LCNetV3's learnable blocks).

Such models are trained with several branches over one input, say a 5x5, a 1x1 and a batch-normalized identity,
summed; exported without the merge their authors do for inference, each branch is a convolution of its own
(PP-OCRv5's recognizer: 5.2 of its 5.2 GFLOP, four 5x5 and a 1x1 depthwise branch per layer). Convolution is
linear in its filter, so where both operands of a `glow.add` are

- convolutions of the same input with the same strides, dilations and groups, constant filters and biases,
  and windows that fit one grid (a 1x1 centered in a 5x5 with pads 0 and 2, a 1x3 with pads (0, 1) and a 3x1
  with pads (1, 0) in a 3x3), or
- one such convolution and the input itself, or its inference batch normalization (`glow.batch_normalization`
  with constant parameters: x * k + shift per channel), each output channel reading its own input channel,

the sum is one convolution: each filter placed in the larger window at its offset (the difference of the begin
pads, in dilation steps), added tap by tap, the biases (and the normalization's shift) added, the identity one
tap of weight k at the window's origin. The window's end pad is chosen so that the output keeps its size; taps
outside the input read zero padding in both forms, so the result is the same sums. The pass runs after
glow-fold-batchnorm (each branch's own normalization is in its filter by then) and to a fixed point, so a
chain of adds over five branches becomes one convolution; it applies only where the branch's result has no
other user.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.graph.fold_batchnorm import Fold
from glow_mlir.passes.registry import register

CONV = "glow.convolution"
BN = "glow.batch_normalization"


@dataclasses.dataclass(frozen=True)
class Branch:
    """A convolution's filter [O, I / group, KH, KW] and bias [O] (float64), with its begin and end pads."""

    weights: np.ndarray
    bias: np.ndarray
    begin: tuple[int, int]
    end: tuple[int, int]


def merge_function(function: ir.Operation) -> bool:
    changed = False
    for op in g.graph_ops(function):
        if op.name == "glow.add" and _merge(op):
            changed = True
    return changed


def _merge(add: ir.Operation) -> bool:
    """Replaces `add` of a mergeable pair (module docstring) by one convolution; returns whether it did."""
    for this, other in (add.operands, reversed(list(add.operands))):
        conv = g.producer_named(this, CONV)
        if conv is None or not g.has_one_use(this) or this.type != add.results[0].type:
            continue
        ours = _branch(conv)
        theirs = _other_branch(conv, other) if ours is not None else None
        if ours is None or theirs is None:
            continue
        merged = _sum(ours, theirs, ops.ints(conv, "dilation"))
        if merged is None:
            continue
        attrs = g.attributes(conv)
        attrs["kernels"] = ops.i64_array(merged.weights.shape[2:])
        attrs["pads"] = ops.i64_array([*merged.begin, *merged.end])
        elt = ops.element_type(conv.operands[1])
        with ir.InsertionPoint(add), add.location:
            w = g.materialize(merged.weights, ops.tensor_type(merged.weights.shape, elt), prefer_splat=False)
            b = g.materialize(merged.bias, conv.operands[2].type, prefer_splat=False)
            g.replace(add, g.make(CONV, [conv.operands[0], w, b], add.results[0].type, attrs))
        return True
    return False


def _branch(conv: ir.Operation) -> Branch | None:
    weights, bias = g.constant_array(conv.operands[1]), g.constant_array(conv.operands[2])
    if weights is None or bias is None:
        return None
    pads = ops.ints(conv, "pads")
    return Branch(weights.astype(np.float64), bias.astype(np.float64), (pads[0], pads[1]), (pads[2], pads[3]))


def _other_branch(conv: ir.Operation, other: ir.Value) -> Branch | None:
    """The add's other operand as a branch over `conv`'s input: a convolution like `conv`'s, or the input
    itself or its batch normalization as a 1x1 identity."""
    x = conv.operands[0]
    producer = g.producer(other)
    if producer is not None and producer.name == CONV:
        theirs, ours = g.attributes(producer), g.attributes(conv)
        same = all(theirs[a] == ours[a] for a in ("strides", "dilation", "group"))
        if producer.operands[0] != x or not same or not g.has_one_use(other):
            return None
        return _branch(producer)
    k, shift = None, None
    if other == x:
        channels = ops.shape(x)[1]
        k, shift = np.ones(channels), np.zeros(channels)
    elif producer is not None and producer.name == BN and producer.operands[0] == x and g.has_one_use(other):
        fold = Fold.of(producer)
        if fold is None:
            return None
        k, shift = fold.k, fold.shift
    if k is None or shift is None or other.type != conv.results[0].type or set(ops.ints(conv, "strides")) != {1}:
        return None
    # Output channel o reads input channel o: as many of each per group.
    out, per_group = ops.shape(conv.operands[1])[:2]
    if out != ops.shape(x)[1] or per_group != out // ops.integer(conv, "group"):
        return None
    weights = np.zeros((out, per_group, 1, 1))
    weights[np.arange(out), np.arange(out) % per_group, 0, 0] = k
    return Branch(weights, shift, (0, 0), (0, 0))


def _sum(a: Branch, b: Branch, dilation: list[int]) -> Branch | None:
    """One branch computing a + b over the same input and output grid, or None where the two windows' taps do
    not fall on one grid (begin pads differing by no multiple of the dilation)."""
    begin, end, offsets_a, offsets_b, window = [], [], [], [], []
    for d in range(2):
        first = max(a.begin[d], b.begin[d])
        if (first - a.begin[d]) % dilation[d] or (first - b.begin[d]) % dilation[d]:
            return None
        oa, ob = (first - a.begin[d]) // dilation[d], (first - b.begin[d]) // dilation[d]
        size = max(oa + a.weights.shape[2 + d], ob + b.weights.shape[2 + d])
        begin.append(first)
        # a's output count: its end pad grows by the taps the window gained after a's own.
        end.append(a.end[d] + (size - oa - a.weights.shape[2 + d]) * dilation[d])
        offsets_a.append(oa)
        offsets_b.append(ob)
        window.append(size)
    weights = np.zeros((*a.weights.shape[:2], *window))
    for branch, (r, c) in ((a, offsets_a), (b, offsets_b)):
        kh, kw = branch.weights.shape[2:]
        weights[:, :, r : r + kh, c : c + kw] += branch.weights
    return Branch(weights, a.bias + b.bias, (begin[0], begin[1]), (end[0], end[1]))


@register("glow-merge-conv-branches", fixed_point=True)
def merge_conv_branches(module: ir.Module) -> None:
    """Merge parallel convolutions of one input (and its identity or batch norm) that are added into one."""
    g.run_on_functions(module, merge_function, fixed_point=True)
