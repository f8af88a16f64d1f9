"""ONNX Attention (opsets 23 to 25) composed from glow ops, with the semantics of its ONNX function body.

The composition keeps the shape a fused-attention kernel can recognise:

    scores = batch_matmul(Q * sqrt(scale), K^T * sqrt(scale))     [batch * kv heads, group * q length, total]
    scores = softcap * tanh(scores / softcap)        (softcap > 0 only)
    probs  = softmax(scores + bias)                  over the last axis
    Y      = batch_matmul(probs, V)

Grouped-query attention (q_num_heads a multiple of kv_num_heads) batches the `group` query heads that share
a kv head as one matrix of group * q-length rows, so K and V are never repeated. The additive bias gathers
what masks the scores: attn_mask (bool masks become 0 / -inf; a mask shorter than the total length is padded
with -inf), is_causal and the sliding window (bottom-right aligned after past_key, constant tables), and the
padding and frontiers that nonpad_kv_seqlen sets per batch at run time. A query row whose bias is -inf
everywhere attends nothing and gets 0, as the spec says; where the bias is a compile-time constant, only
such rows are selected away, and a bias without them adds no op.

Float16 and bfloat16 matmuls multiply in float32 and round their results once, as the spec's reference
computes them (node.float16_in_float32); softmax_precision runs the softmax in that type.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from glow_mlir.errors import UnsupportedTypeError
from glow_mlir.frontends.onnx.node import (
    ONNX_TO_NUMPY,
    NodeContext,
    Value,
    dtype,
    is_float,
    rank,
    shape,
)
from glow_mlir.frontends.onnx.ops_nn import softmax_last
from glow_mlir.frontends.onnx.registry import handles

_LOW_PRECISION = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))
_SOFTMAX_PRECISIONS = (1, 10, 11, 16)  # FLOAT, FLOAT16, DOUBLE, BFLOAT16


@handles("Attention")
def attention(ctx: NodeContext) -> list[Value]:
    q, k, v = ctx.input(0), ctx.input(1), ctx.input(2)
    mask, past_k, past_v, nonpad = (ctx.optional(i) for i in range(3, 7))
    t = dtype(q)
    if not (is_float(q) or t == ml_dtypes.bfloat16) or dtype(k) != t or dtype(v) != t:
        raise UnsupportedTypeError(f"node '{ctx.name}' (Attention) Q, K, V",
                                   f"{dtype(q).name}, {dtype(k).name}, {dtype(v).name}")
    q, k, v = _heads(ctx, q, k, v)
    batch, q_heads, length, head = shape(q)
    kv_heads = shape(k)[1]
    if (past_k is None) != (past_v is None):
        raise ctx.invalid("past_key and past_value must be given together")
    if past_k is not None:
        if nonpad is not None:
            raise ctx.invalid("nonpad_kv_seqlen cannot be combined with past_key and past_value")
        k, v = _append(ctx, past_k, k, "past_key"), _append(ctx, past_v, v, "past_value")
    present_k, present_v = k, v
    total = shape(k)[2]
    if q_heads % kv_heads or shape(k)[3] != head or shape(v)[:3] != shape(k)[:3] or shape(k)[0] != batch:
        raise ctx.invalid(f"Q {list(shape(q))}, K {list(shape(k))} and V {list(shape(v))} (as [batch, heads, "
                          "length, head size], after any past) do not fit: kv heads must divide q heads")
    group = q_heads // kv_heads
    scores_shape = [batch, q_heads, length, total]

    # Q and K^T are each scaled by sqrt(scale), in their type, before the matmul, as the spec advises
    # against overflow (and as its reference rounds them).
    root = math.sqrt(ctx.attr("scale", 1 / math.sqrt(head)))
    kt = ctx.transpose(k, [0, 1, 3, 2])
    if root != 1:
        q, kt = ctx.g.mul(q, ctx.scalar_like(q, root)), ctx.g.mul(kt, ctx.scalar_like(kt, root))
    # [batch * kv heads, group * length, head] @ [batch * kv heads, head, total]
    qg = ctx.reshape(q, [batch * kv_heads, group * length, head])
    scores = ctx.reshape(_matmul(ctx, qg, ctx.reshape(kt, [batch * kv_heads, head, total])), scores_shape)
    softcap = ctx.attr("softcap", 0.0)
    capped = scores
    if softcap > 0:
        capped = ctx.g.mul(ctx.g.tanh(ctx.g.div(scores, ctx.scalar_like(scores, softcap))),
                           ctx.scalar_like(scores, softcap))
    past = shape(past_k)[2] if past_k is not None else 0
    bias, masked_rows = _bias(ctx, q, mask, nonpad, past, total)
    logits = capped if bias is None else ctx.g.add(capped, ctx.broadcast_to(bias, scores_shape))

    precision = ctx.attr("softmax_precision", None)
    if precision is not None and precision not in _SOFTMAX_PRECISIONS:
        raise ctx.invalid(f"softmax_precision {precision} is not one of {list(_SOFTMAX_PRECISIONS)}")
    softmax_type = ONNX_TO_NUMPY[precision] if precision is not None else t
    probs = ctx.convert(softmax_last(ctx, ctx.convert(logits, softmax_type)), t)
    if masked_rows is not None:
        rows = ctx.broadcast_to(masked_rows, scores_shape)
        probs = ctx.g.select(rows, ctx.scalar_like(probs, 0), probs)

    pg = ctx.reshape(probs, [batch * kv_heads, group * length, total])
    y = ctx.reshape(_matmul(ctx, pg, ctx.reshape(v, [batch * kv_heads, total, shape(v)[3]])),
                    [batch, q_heads, length, shape(v)[3]])
    if rank(ctx.input(0)) == 3:
        y = ctx.reshape(ctx.transpose(y, [0, 2, 1, 3]), [batch, length, q_heads * shape(v)[3]])
    outputs = [y, present_k, present_v]
    if ctx.outputs_wanted() > 3:
        mode = ctx.attr("qk_matmul_output_mode", 0)
        if mode not in (0, 1, 2, 3):
            raise ctx.invalid(f"qk_matmul_output_mode {mode} is not 0, 1, 2 or 3")
        outputs.append([scores, capped, logits, probs][mode])
    return outputs[: max(1, ctx.outputs_wanted())]


def _heads(ctx: NodeContext, q: Value, k: Value, v: Value) -> tuple[Value, Value, Value]:
    """Q, K, V as [batch, heads, length, head size]; 3-D inputs [batch, length, heads * head size] are split
    into q_num_heads / kv_num_heads heads."""
    ranks = {rank(q), rank(k), rank(v)}
    if ranks == {4}:
        return q, k, v
    if ranks != {3}:
        raise ctx.invalid(f"Q {list(shape(q))}, K {list(shape(k))} and V {list(shape(v))} must all be 3-D or "
                          "all 4-D")
    q_heads, kv_heads = ctx.attr("q_num_heads", 0), ctx.attr("kv_num_heads", 0)
    if q_heads < 1 or kv_heads < 1:
        raise ctx.invalid("3-D Q, K and V need the attributes q_num_heads and kv_num_heads")

    def split(x: Value, heads: int, what: str) -> Value:
        batch, length, hidden = shape(x)
        if hidden % heads:
            raise ctx.invalid(f"{what} {list(shape(x))}: hidden size {hidden} is not a multiple of {heads} heads")
        return ctx.transpose(ctx.reshape(x, [batch, length, heads, hidden // heads]), [0, 2, 1, 3])

    return split(q, q_heads, "Q"), split(k, kv_heads, "K"), split(v, kv_heads, "V")


def _append(ctx: NodeContext, past: Value, new: Value, what: str) -> Value:
    """The cache `past` [batch, kv heads, past length, size] with `new` appended along the length."""
    if rank(past) != 4 or [shape(past)[i] for i in (0, 1, 3)] != [shape(new)[i] for i in (0, 1, 3)]:
        raise ctx.invalid(f"{what} {list(shape(past))} does not extend {list(shape(new))} along its third dim")
    return ctx.g.concat([past, new], 2)


def _matmul(ctx: NodeContext, a: Value, b: Value) -> Value:
    """A batched matmul; float16 and bfloat16 multiply in float32, rounded once."""
    t = dtype(a)
    if t not in _LOW_PRECISION:
        return ctx.g.batch_matmul(a, b)
    return ctx.convert(ctx.g.batch_matmul(ctx.convert(a, np.float32), ctx.convert(b, np.float32)), t)


def _bias(
    ctx: NodeContext, q: Value, mask: Value | None, nonpad: Value | None, past: int, total: int
) -> tuple[Value | None, Value | None]:
    """The additive bias of the scores (broadcastable to [batch, q heads, length, total]; None when nothing
    masks) and the i1 rows it masks entirely (None when there are none), broadcastable likewise."""
    batch, _, length, _ = shape(q)
    t = dtype(q)
    static = _static_allowed(ctx, length, total, past if nonpad is None else None)
    parts: list[Value] = []
    if mask is not None:
        parts.append(_mask_bias(ctx, mask, total, t))
    if nonpad is not None:
        parts.append(_where(ctx, _frontiers(ctx, nonpad, batch, length, total), t))
    if static is not None and not static.all():
        parts.append(np.where(static, 0, -np.inf).astype(t))
    if not parts:
        return None, None
    bias = parts[0]
    for part in parts[1:]:
        a, b = ctx.broadcast_all([bias, part])
        bias = ctx.g.add(a, b)
    if isinstance(bias, np.ndarray):
        # Known at compile time: guard only the rows it masks entirely, if any.
        rows = np.isneginf(bias.max(axis=-1, keepdims=True))
        return ctx.constant_beside(bias, q), ctx.constant_beside(rows, q) if rows.any() else None
    peak = ctx.keep_dims(ctx.g.batched_reduce_max(bias, [rank(bias) - 1]), shape(bias), [rank(bias) - 1])
    return bias, ctx.g.cmp_eq(peak, ctx.scalar_like(peak, -np.inf))


def _mask_bias(ctx: NodeContext, mask: Value, total: int, t: np.dtype) -> Value:
    """attn_mask as an additive bias of type `t`: a bool mask is 0 where True, -inf where False; a mask
    shorter than `total` keys is padded with -inf."""
    if rank(mask) > 4:
        raise ctx.invalid(f"attn_mask {list(shape(mask))} has more than 4 dims")
    keys = shape(mask)[-1]
    if keys > total:
        raise ctx.invalid(f"attn_mask {list(shape(mask))} covers {keys} keys, more than the {total} attended")
    if dtype(mask) == np.bool_:
        bias = _where(ctx, mask, t)
    elif is_float(mask) or dtype(mask) == ml_dtypes.bfloat16:
        bias = ctx.convert(mask, t)
    else:
        raise UnsupportedTypeError(f"node '{ctx.name}' (Attention) attn_mask", dtype(mask).name)
    if keys == total:
        return bias
    dims = [*shape(bias)[:-1], total]
    return ctx.g.insert_tensor(ctx.full(dims, -np.inf, t), bias, [0] * len(dims))


def _where(ctx: NodeContext, allowed: Value, t: np.dtype) -> Value:
    """0 where `allowed`, -inf elsewhere, of type `t`."""
    return ctx.g.select(allowed, ctx.full(shape(allowed), 0, t), ctx.full(shape(allowed), -np.inf, t))


def _windows(ctx: NodeContext) -> list[tuple[int, int]]:
    """The frontiers of is_causal and the sliding window as (sign, bound): query i may attend key j where
    sign * (j - i - offset) <= bound, offset being the count of keys before the query block."""
    left, right = ctx.attr("left_window_size", -1), ctx.attr("right_window_size", -1)
    if left < -1 or right < -1:
        raise ctx.invalid(f"left_window_size {left} and right_window_size {right} must be -1 or more")
    rules = [(1, 0)] if ctx.attr("is_causal", 0) else []
    if left >= 0:
        rules.append((-1, left))
    if right >= 0:
        rules.append((1, right))
    return rules


def _static_allowed(ctx: NodeContext, length: int, total: int, offset: int | None) -> np.ndarray | None:
    """The [length, total] keys each query may attend under the frontiers, for a compile-time offset (None
    when nonpad_kv_seqlen sets the offset at run time, or when there are no frontiers)."""
    rules = _windows(ctx)
    if offset is None or not rules:
        return None
    distance = np.arange(total)[None, :] - np.arange(length)[:, None] - offset
    return np.logical_and.reduce([sign * distance <= bound for sign, bound in rules])


def _frontiers(ctx: NodeContext, nonpad: Value, batch: int, length: int, total: int) -> Value:
    """The i1 [batch, 1, length, total] keys each query may attend when nonpad_kv_seqlen (n per batch)
    sets the offset n - length and hides the keys from n on. Every rule compares a constant table with n:
    j + 1 <= n, and per frontier (j - i + length) - bound <= n (sign 1) or n <= (j - i + length) + bound."""
    if shape(nonpad) != (batch,) or dtype(nonpad) not in (np.int32, np.int64):
        raise ctx.invalid(f"nonpad_kv_seqlen {list(shape(nonpad))} ({dtype(nonpad).name}) must be [{batch}] "
                          "integers")
    dims = [batch, 1, length, total]
    n = ctx.broadcast_to(ctx.reshape(nonpad, [batch, 1, 1, 1]), dims)
    keys = np.broadcast_to(np.arange(total), (length, total))
    shifted = keys - np.arange(length)[:, None] + length
    tests = [(keys + 1, 1), *((shifted - sign * bound, sign) for sign, bound in _windows(ctx))]
    allowed: Value | None = None
    for table, sign in tests:
        limit = ctx.broadcast_to(ctx.constant_beside(table.astype(dtype(nonpad)), nonpad), dims)
        test = ctx.g.cmp_lte(limit, n) if sign > 0 else ctx.g.cmp_lte(n, limit)
        allowed = test if allowed is None else ctx.g.logical_and(allowed, test)
    assert allowed is not None
    return allowed
