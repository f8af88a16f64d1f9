"""glow-fold-batchnorm: folds inference batch normalization into the preceding linear op (Glow's
OptimizeBatchNorm).

In inference, `bn(y) = (y - mean) * k + bias` with `k = scale / sqrt(var + eps)` per channel is affine, and so
is the convolution or matrix product that computes `y`, so the two compose into one op with new constant
weights, saving a whole pass over the activation:

- convolution(x, W, b) -> bn on channel 1 (NCHW): W'[o] = W[o] * k[o], b' = (b - mean) * k + bias.
- conv_transpose(x, W, b), W [C, O / group, KH, KW] -> likewise, output channel g x O / group + o of group g
  being W[group g's input channels, o].
- fully_connected(x, W, b) -> bn on channel 1 (the last of [N, M]): W'[:, m] = W[:, m] * k[m], b' likewise.
- matmul(x, W) [-> batched_add(., b)] -> bn on channel 1: matmul(x, W') then batched_add with
  b' = (b - mean) * k + bias (b = 0 without the batched_add).

It applies only when the conv's (or product's, or batched_add's) result has no other user (otherwise both
forms would have to be computed), and when W, b and the four batch-norm vectors are constants or splats.
The new weights are computed in float64 and stored in the op's element type. The pass repeats until nothing
changes, so a chain of batch norms folds into one op (Glow runs it to a fixed point).
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.registry import register

BN = "glow.batch_normalization"


def fold_function(function: ir.Operation) -> bool:
    changed = False
    for op in g.graph_ops(function):
        if op.name == BN and _fold(op):
            changed = True
    return changed


def _fold(bn: ir.Operation) -> bool:
    """Folds `bn` into its producer when the rules allow; returns whether it did."""
    x = bn.operands[0]
    producer = g.producer(x)
    fold = Fold.of(bn)
    if producer is None or fold is None or not g.has_one_use(x):
        return False
    if producer.name in ("glow.convolution", "glow.conv_transpose", "glow.fully_connected"):
        new = _fold_into_weighted(producer, bn, fold)
    elif producer.name in ("glow.matmul", "glow.batched_add"):
        new = _fold_into_matmul(producer, bn, fold)
    else:
        return False
    if new is None:
        return False
    g.replace(bn, new)
    return True


class Fold:
    """The per-channel affine map of a batch norm, y -> y * k + shift, applied to weights and biases."""

    def __init__(self, k: np.ndarray, shift: np.ndarray) -> None:
        self.k = k
        self.shift = shift

    @staticmethod
    def of(bn: ir.Operation) -> Fold | None:
        """The map of batch norm `bn` over channel dim 1 with constant parameters (float64), else None."""
        params = [g.constant_array(v) for v in bn.operands[1:]]
        if any(p is None for p in params) or ops.integer(bn, "channelIdx") != 1:
            return None
        scale, bias, mean, var = (p.astype(np.float64) for p in params)  # type: ignore[union-attr]
        k = scale / np.sqrt(var + np.float64(ops.floating(bn, "epsilon")))
        return Fold(k, bias - mean * k)

    def bias(self, b: np.ndarray) -> np.ndarray:
        return b * self.k + self.shift

    def weights(self, w: np.ndarray, channel_axis: int) -> np.ndarray:
        shape = [1] * w.ndim
        shape[channel_axis] = -1
        return w * self.k.reshape(shape)


def _fold_into_weighted(op: ir.Operation, bn: ir.Operation, fold: Fold) -> ir.Value | None:
    """convolution (filter OIHW, channel axis 0), conv_transpose (filter [C, O / group, KH, KW]: per group,
    channel axis 1) or fully_connected (weights [K, M], channel axis 1)."""
    weights = g.constant_array(op.operands[1])
    bias = g.constant_array(op.operands[2])
    if weights is None or bias is None:
        return None
    if op.name == "glow.conv_transpose":
        group = ops.integer(op, "group")
        c, per_group, *window = weights.shape
        grouped = weights.astype(np.float64).reshape(group, c // group, per_group, *window)
        k = fold.k.reshape(group, 1, per_group, *[1] * len(window))
        new_weights = (grouped * k).reshape(weights.shape)
    else:
        new_weights = fold.weights(weights.astype(np.float64), 0 if op.name == "glow.convolution" else 1)
    new_bias = fold.bias(bias.astype(np.float64))
    with ir.InsertionPoint(bn), bn.location:
        w = g.materialize(new_weights, op.operands[1].type, prefer_splat=False)
        b = g.materialize(new_bias, op.operands[2].type, prefer_splat=False)
        return g.make(op.name, [op.operands[0], w, b], op.results[0].type, g.attributes(op))


def _fold_into_matmul(producer: ir.Operation, bn: ir.Operation, fold: Fold) -> ir.Value | None:
    """matmul(x, W) or batched_add(matmul(x, W), b) followed by `bn` -> batched_add(matmul(x, W'), b')."""
    if producer.name == "glow.batched_add":
        product, slice_ = producer.operands
        bias = g.constant_array(slice_)
        matmul = g.producer(product)
        if bias is None or matmul is None or matmul.name != "glow.matmul" or not g.has_one_use(product):
            return None
    else:
        matmul, bias = producer, None
    weights = g.constant_array(matmul.operands[1])
    if weights is None:
        return None
    result = bn.results[0].type
    channels = ops.shape(result)[1]
    new_bias = fold.bias(np.zeros(channels) if bias is None else bias.astype(np.float64))
    with ir.InsertionPoint(bn), bn.location:
        w = g.materialize(fold.weights(weights.astype(np.float64), 1), matmul.operands[1].type, prefer_splat=False)
        product = g.make("glow.matmul", [matmul.operands[0], w], matmul.results[0].type)
        bias_type = ops.tensor_type([channels], ops.element_type(result))
        b = g.materialize(new_bias, bias_type, prefer_splat=False)
        return g.make("glow.batched_add", [product, b], result)


@register("glow-fold-batchnorm", fixed_point=True)
def fold_batchnorm(module: ir.Module) -> None:
    """Fold inference batch normalization into the preceding convolution, FC or matmul (+ batched_add)."""
    g.run_on_functions(module, fold_function, fixed_point=True)
