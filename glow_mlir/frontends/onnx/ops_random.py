"""ONNX's random-number ops: RandomUniform, RandomNormal, their Like forms, Bernoulli and Multinomial, on
glow's random_uniform / random_normal (glow_mlir/opdefs/random.py: Philox-4x32-10 of (seed, element, run)).

As onnxruntime's, every run of a compiled model draws new numbers, and a node with a `seed` repeats its
sequence of draws from one compiled model to the next (its first run, its second, ...); a node without one
draws a sequence of its own per compiled model (the session seed, drawn when the model is compiled or loaded;
GLOW_MLIR_RANDOM_SEED fixes it). Numbers are not onnxruntime's: its generator is another.

The draws are graph ops even when the Like ops' inputs are known at compile time: a random op is never folded.
Bernoulli is `uniform < p`; Multinomial picks, per batch row and sample, the class whose cumulative share of
exp(x - max x) first exceeds a uniform number times their total. Dropout is its input at inference, and in
training mode (opset 12's training_mode input true: a model exported with torch.onnx.TrainingMode.TRAINING)
the spec's draw: mask = uniform >= ratio, output = x * mask / (1 - ratio) (onnxruntime without graph
optimizations draws so; its optimizer removes the node, which a training-mode model states it does not mean).
"""

from __future__ import annotations

import numpy as np
import onnx

from glow_mlir.frontends.onnx.node import ONNX_TO_NUMPY, NodeContext, Value, dtype, shape
from glow_mlir.frontends.onnx.registry import handles

FLOAT_TYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
BERNOULLI_TYPES = (*FLOAT_TYPES, *(np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64)))


def _float_dtype(ctx: NodeContext, like: Value | None) -> np.dtype:
    """The result type: the `dtype` attribute, else the Like input's, else float; only floats draw."""
    if ctx.has("dtype"):
        code = int(ctx.attr("dtype"))
        chosen = ONNX_TO_NUMPY.get(code)
        if chosen not in FLOAT_TYPES:
            raise ctx.unsupported("dtype", f"{_type_name(code)}: glow draws float16, float and double only")
        return chosen
    if like is None:
        return np.dtype(np.float32)
    if dtype(like) not in FLOAT_TYPES:
        raise ctx.unsupported("dtype", f"absent, and the input is {dtype(like)}: glow draws float16, float and "
                                       "double only (give a float dtype)")
    return dtype(like)


def _type_name(code: int) -> str:
    try:
        return onnx.TensorProto.DataType.Name(code)
    except ValueError:
        return f"element type {code}"


def _draw(ctx: NodeContext, normal: bool, dims: tuple[int, ...], dt: np.dtype, name: str | None = None) -> Value:
    """The node's draw as a graph op (never folded, even when a Like input is a constant)."""
    if normal:
        params = (ctx.attr("mean", 0.0), ctx.attr("scale", 1.0))
    else:
        params = (ctx.attr("low", 0.0), ctx.attr("high", 1.0))
    seed = ctx.attr("seed", None)
    op = "random_normal" if normal else "random_uniform"
    return ctx.importer.graph.random(op, dims, params, dt, seed, name=name or ctx.name)


def _unit(ctx: NodeContext, dims: tuple[int, ...], of: np.dtype) -> Value:
    """The uniform numbers in [0, 1) that Bernoulli and Multinomial compare against values of type `of`: f64 for
    double, else f32 (f16 values compared at full resolution)."""
    wide = np.dtype(np.float64) if of == np.float64 else np.dtype(np.float32)
    return _draw(ctx, False, dims, wide, name=f"{ctx.name}/uniform")


@handles("RandomUniform", "RandomNormal")
def random(ctx: NodeContext) -> list[Value]:
    dims = tuple(int(d) for d in ctx.attr("shape"))
    if any(d < 0 for d in dims):
        raise ctx.invalid(f"shape {list(dims)} has a negative dim")
    if 0 in dims:
        return [np.empty(dims, _float_dtype(ctx, None))]
    return [_draw(ctx, ctx.op_type == "RandomNormal", dims, _float_dtype(ctx, None))]


@handles("RandomUniformLike", "RandomNormalLike")
def random_like(ctx: NodeContext) -> list[Value]:
    like = ctx.input(0)
    dt = _float_dtype(ctx, like)
    if 0 in shape(like):
        return [np.empty(shape(like), dt)]
    return [_draw(ctx, ctx.op_type == "RandomNormalLike", shape(like), dt)]


@handles("Bernoulli")
def bernoulli(ctx: NodeContext) -> list[Value]:
    """1 where a uniform number in [0, 1) is below p: probability p (`_unit`)."""
    p = ctx.input(0)
    if dtype(p) not in FLOAT_TYPES:
        raise ctx.unsupported("input", f"probabilities of type {dtype(p)}: float16, float or double only")
    out = dtype(p)
    if ctx.has("dtype"):
        code = int(ctx.attr("dtype"))
        if ONNX_TO_NUMPY.get(code) not in BERNOULLI_TYPES:
            raise ctx.unsupported("dtype", f"{_type_name(code)}: Bernoulli gives a float, bool or signed integer")
        out = ONNX_TO_NUMPY[code]
    if 0 in shape(p):
        return [np.empty(shape(p), out)]
    u = _unit(ctx, shape(p), dtype(p))
    return [ctx.convert(ctx.g.cmp_lt(u, ctx.convert(p, dtype(u))), out)]


@handles("Multinomial")
def multinomial(ctx: NodeContext) -> list[Value]:
    """Per row of x [batch, classes] (unnormalized log-probabilities), sample_size class indices: the count of
    classes whose running sum of exp(x - max) is at most a uniform number times the row's total."""
    x = ctx.input(0)
    if len(shape(x)) != 2 or dtype(x) not in FLOAT_TYPES:
        raise ctx.invalid(f"input must be a float matrix [batch, classes], got {dtype(x)}{list(shape(x))}")
    code = int(ctx.attr("dtype", onnx.TensorProto.INT32))
    if code not in (onnx.TensorProto.INT32, onnx.TensorProto.INT64):
        raise ctx.unsupported("dtype", f"{_type_name(code)}: Multinomial gives int32 or int64")
    samples = int(ctx.attr("sample_size", 1))
    batch, classes = shape(x)
    if samples <= 0 or batch == 0 or classes == 0:
        raise ctx.invalid(f"cannot draw {samples} samples of {classes} classes for {batch} rows")
    u = _unit(ctx, (batch, samples), dtype(x))
    x = ctx.convert(x, dtype(u))
    top = ctx.broadcast_to(ctx.reshape(ctx.g.batched_reduce_max(x, [1]), [batch, 1]), [batch, classes])
    weights = ctx.g.exp(ctx.g.sub(x, top))
    running = ctx.g.cumsum(weights, 1)
    total = ctx.reshape(ctx.g.batched_reduce_add(weights, [1]), [batch, 1])
    target = ctx.g.mul(u, ctx.broadcast_to(total, [batch, samples]))
    grid = (batch, samples, classes)
    below = ctx.g.cmp_lte(ctx.broadcast_to(ctx.reshape(running, [batch, 1, classes]), grid),
                          ctx.broadcast_to(ctx.reshape(target, [batch, samples, 1]), grid))
    counts = ctx.g.batched_reduce_add(ctx.convert(below, np.int64), [2])
    # A target rounded up to the total would count every class.
    last = ctx.full([batch, samples], classes - 1, np.dtype(np.int64))
    return [ctx.convert(ctx.g.min(counts, last), ONNX_TO_NUMPY[code])]


@handles("Dropout")
def dropout(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    training = ctx.const(2, "training_mode")
    if training is not None and bool(np.asarray(training)) and 0 not in shape(x):
        ratio = ctx.const(1, "ratio")
        ratio = 0.5 if ratio is None else float(np.asarray(ratio))
        if not 0 <= ratio < 1:
            raise ctx.invalid(f"ratio {ratio} must be in [0, 1)")
        if dtype(x) not in FLOAT_TYPES:
            raise ctx.unsupported("input", f"of type {dtype(x)}: dropout draws for float16, float and double")
        if ratio:
            u = _unit(ctx, shape(x), dtype(x))
            kept = ctx.g.cmp_lte(ctx.scalar_like(u, ratio), u)
            scale = ctx.scalar_like(x, 1 / (1 - ratio))
            y = ctx.g.mul(ctx.g.mul(x, ctx.convert(kept, dtype(x))), scale)
            return [y, kept] if ctx.outputs_wanted() > 1 else [y]
    if ctx.outputs_wanted() < 2:
        return [x]
    # Inference keeps every element (and so does a ratio of 0). Opset 12 defines the mask as all true; before
    # it the mask (of the input's type before opset 10) is all zeros, as onnxruntime gives it.
    mask_type = np.dtype(np.bool_) if ctx.opset >= 10 else dtype(x)
    return [x, ctx.full(shape(x), 1 if ctx.opset >= 12 else 0, mask_type)]
