"""ONNX's quantization ops, composed from glow ops as their definitions state them (there is no quantized glow
type: a quantized tensor is a plain integer or low-precision float tensor beside its scale and zero point).

- DequantizeLinear: y = (float32(x) - zero_point) * scale, rounded to the scale's type (or output_dtype).
- QuantizeLinear: y = saturate(round_half_even(x / scale) + zero_point) for integer outputs; a float8 output
  is Cast(x / scale) (saturating by `saturate`), a float4 one Cast(x / scale + zero_point).
- MatMulInteger, ConvInteger: inputs widened and their zero points subtracted, then glow's matmul (in int32)
  or convolution (in float32 where its constant filter bounds every sum below what float32 holds exactly, else
  float64: every product and sum of 8-bit values is an integer float64 holds exactly; either equals the int32
  accumulation), the result int32.
- QLinearMatMul, QLinearConv: that int32 accumulation (plus QLinearConv's int32 bias), requantized as
  onnxruntime does: float32(acc) * float32(a_scale * b_scale / y_scale), rounded half to even, plus the
  output zero point, clamped to the output type. onnx's reference computes the multiplier and product in
  float64, so a result lying within a float32 rounding of a .5 may round the other way there.

DynamicQuantizeLinear is imported as its ONNX function body (functions.py), which uses QuantizeLinear.
Scales and zero points are per tensor (a scalar or one element), per axis (1-D, along `axis`) or blocked
(x's rank, `block_size` elements of x per element along `axis`), as onnx's reference reshapes them.
"""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np
import onnx

from glow_mlir.frontends.onnx import ops_nn
from glow_mlir.frontends.onnx.node import (
    ONNX_TO_NUMPY,
    NodeContext,
    Value,
    dtype,
    normalize_axis,
    rank,
    shape,
)
from glow_mlir.frontends.onnx.ops_tensor import cast_to
from glow_mlir.frontends.onnx.registry import handles

F32, F64, I32 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32)
# The integer types a quantized tensor may have, with their ranges (ml_dtypes' iinfo knows the sub-byte ones).
QUANT_INTEGERS = tuple(
    np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2,
                          ml_dtypes.uint2)
)  # fmt: skip
FLOAT8 = tuple(np.dtype(t) for t in ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"))
FLOAT4 = np.dtype(ml_dtypes.float4_e2m1fn)
# The 8-bit inputs of the integer matmuls and convolutions.
BYTES = (np.dtype(np.int8), np.dtype(np.uint8))


def _spread(ctx: NodeContext, v: Value, dims: tuple[int, ...], axis: int, block_size: int, what: str) -> Value:
    """Scale or zero point `v` broadcast to x's `dims`: per tensor, per axis or blocked (onnx's
    _quant_utils.reshape_input)."""
    if rank(v) == 0 or (int(np.prod(shape(v))) == 1 and not block_size):
        return ctx.broadcast_to(ctx.reshape(v, []), dims)
    axis = normalize_axis(axis, len(dims), ctx)
    if not block_size:
        if rank(v) != 1 or shape(v)[0] != dims[axis]:
            raise ctx.invalid(
                f"{what} of shape {list(shape(v))} is neither per tensor nor per axis {axis} of x {list(dims)}"
            )
        aligned = [1] * len(dims)
        aligned[axis] = dims[axis]
        return ctx.broadcast_to(ctx.reshape(v, aligned), dims)
    if block_size < 0:
        raise ctx.invalid(f"block_size {block_size} is negative")
    blocks = -(-dims[axis] // block_size)
    expected = (*dims[:axis], blocks, *dims[axis + 1 :])
    if shape(v) != expected:
        raise ctx.invalid(
            f"{what} of shape {list(shape(v))} does not block x {list(dims)} by {block_size} along axis {axis}"
        )
    # Each element repeated block_size times along the axis, the last block cut to what x has.
    repeated = ctx.broadcast_to(
        ctx.reshape(v, [*expected[: axis + 1], 1, *expected[axis + 1 :]]),
        [*expected[: axis + 1], block_size, *expected[axis + 1 :]],
    )
    whole = ctx.reshape(repeated, [*dims[:axis], blocks * block_size, *dims[axis + 1 :]])
    if blocks * block_size == dims[axis]:
        return whole
    return ctx.g.slice(whole, [0] * len(dims), list(dims))


def _type_attr(ctx: NodeContext, name: str) -> np.dtype | None:
    """The element type an attribute names (output_dtype, precision), None when absent or 0."""
    asked = ctx.attr(name, 0)
    if not asked:
        return None
    if asked not in ONNX_TO_NUMPY:
        known = asked in onnx.TensorProto.DataType.values()
        raise ctx.unsupported(name, onnx.TensorProto.DataType.Name(asked) if known else str(asked))
    return ONNX_TO_NUMPY[asked]


def _layout(ctx: NodeContext) -> tuple[int, int]:
    """(axis, block_size) of a QuantizeLinear/DequantizeLinear node (the axis matters, and is checked, only
    for scales that are not per tensor)."""
    return ctx.attr("axis", 1), ctx.attr("block_size", 0)


@handles("DequantizeLinear")
def dequantize_linear(ctx: NodeContext) -> list[Value]:
    x, scale, zero = ctx.input(0), ctx.input(1), ctx.optional(2)
    if not np.issubdtype(dtype(scale), np.floating) and dtype(scale) != np.dtype(ml_dtypes.bfloat16):
        raise ctx.invalid(f"x_scale must be a float tensor, got {dtype(scale)}")
    axis, block_size = _layout(ctx)
    asked = _type_attr(ctx, "output_dtype")
    out = dtype(scale) if asked is None else asked
    dx = ctx.convert(x, F32)
    # A float8/float4 x has no zero point to subtract (the spec requires it to be 0).
    if zero is not None and dtype(x) not in (*FLOAT8, FLOAT4):
        if dtype(zero) != dtype(x):
            raise ctx.invalid(f"x_zero_point has type {dtype(zero)}, x has {dtype(x)}")
        dx = ctx.g.sub(dx, _spread(ctx, ctx.convert(zero, F32), shape(x), axis, block_size, "x_zero_point"))
    y = ctx.g.mul(dx, _spread(ctx, ctx.convert(scale, F32), shape(x), axis, block_size, "x_scale"))
    return [ctx.convert(y, out)]


def _output_type(ctx: NodeContext, zero: Value | None) -> np.dtype:
    """QuantizeLinear's output type: the zero point's, else output_dtype, else uint8."""
    asked = _type_attr(ctx, "output_dtype")
    if zero is not None:
        if asked is not None and asked != dtype(zero):
            raise ctx.invalid(f"output_dtype {asked} disagrees with y_zero_point's type {dtype(zero)}")
        return dtype(zero)
    return np.dtype(np.uint8) if asked is None else asked


def requantize(ctx: NodeContext, scaled: Value, zero: Value | None, out: np.dtype) -> Value:
    """round_half_even(scaled) + zero (already x's shape, or None), clamped to integer type `out`, as `out`.
    The sum and clamp are exact in float32 for 16-bit zero points (the rounded value is an integer float,
    and past 2^24 any value clamps anyway); float64 stays float64."""
    wide = dtype(scaled) if dtype(scaled) == F64 else F32
    y = ctx.convert(ctx.g.round(scaled), wide)
    if zero is not None:
        y = ctx.g.add(y, ctx.convert(zero, wide))
    info = ml_dtypes.iinfo(out)
    y = ctx.g.min(ctx.g.max(y, ctx.scalar_like(y, info.min)), ctx.scalar_like(y, info.max))
    return ctx.convert(y, out)


@handles("QuantizeLinear")
def quantize_linear(ctx: NodeContext) -> list[Value]:
    x, scale, zero = ctx.input(0), ctx.input(1), ctx.optional(2)
    axis, block_size = _layout(ctx)
    out = _output_type(ctx, zero)
    # x / scale in x's type (both in float32 when they differ), or in `precision`'s (opset 25).
    precision = _type_attr(ctx, "precision")
    common = precision if precision is not None else dtype(x) if dtype(x) == dtype(scale) else F32
    spread = _spread(ctx, ctx.convert(scale, common), shape(x), axis, block_size, "y_scale")
    scaled = ctx.g.div(ctx.convert(x, common), spread)
    zero_spread = None if zero is None else _spread(ctx, zero, shape(x), axis, block_size, "y_zero_point")
    if out in QUANT_INTEGERS:
        return [requantize(ctx, scaled, zero_spread, out)]
    if out in FLOAT8:
        return [cast_to(ctx, scaled, out)]
    if out == FLOAT4:
        if zero_spread is not None:
            scaled = ctx.g.add(scaled, ctx.convert(zero_spread, dtype(scaled)))
        return [ctx.convert(scaled, out)]
    raise ctx.unsupported("output_dtype", f"{out} is not a quantized type")


def _centered(ctx: NodeContext, v: Value, zero: Value | None, axis: int, what: str, wide: np.dtype) -> Value:
    """8-bit `v` in type `wide` minus its zero point: a scalar, or 1-D along `axis` of v."""
    if dtype(v) not in BYTES:
        raise ctx.invalid(f"{what} must be int8 or uint8, got {dtype(v)}")
    v_wide = ctx.convert(v, wide)
    if zero is None:
        return v_wide
    if dtype(zero) != dtype(v):
        raise ctx.invalid(f"the zero point of {what} has type {dtype(zero)}, {what} has {dtype(v)}")
    return ctx.g.sub(v_wide, _spread(ctx, ctx.convert(zero, wide), shape(v), axis, 0, f"{what}'s zero point"))


# float32 holds every integer below 2^24 exactly, and every multiple of 1/4 below 2^22.
F32_INTEGERS = 2**24


def _integer_matmul(ctx: NodeContext, a: Value, a_zero: Value | None, b: Value, b_zero: Value | None) -> Value:
    """(a - a_zero) x (b - b_zero) in int32 with MatMul's batching; a's zero point is per row (of a's last
    two dims), b's per column. A product of two run-time operands (attention's Q K^T and P V in a QOperator
    model) whose every sum is an integer below 2^24 (255 x 255 per term, K terms: K <= 258) is computed in
    float32, exactly, by the backend's float kernels (the int32 batched product ran as a loop nest: ViT-tiny's
    attention took half its time); one with constant weights stays int32, the form glow-cpu-int8 takes."""
    exact = not isinstance(b, np.ndarray) and 255 * 255 * shape(a)[-1] < F32_INTEGERS
    wide = F32 if exact else I32
    lhs = _centered(ctx, a, a_zero, -2 if rank(a) > 1 else 0, "A", wide)
    rhs = _centered(ctx, b, b_zero, -1, "B", wide)
    product = ops_nn.matmul(dataclasses.replace(ctx, inputs=[lhs, rhs]))[0]
    return ctx.convert(product, I32) if exact else product


def _accumulator(ctx: NodeContext, w: Value, w_zero: Value | None, bias: Value | None) -> np.dtype:
    """The float type in which conv(x - x_zero, w - w_zero) + bias is exact: float32 where every sum it forms is
    an integer below 2^24 whatever the input and the order of the sums (255, the most |x - x_zero| of 8-bit x,
    times the largest sum of |w - w_zero| over a filter, plus the largest |bias|; for a 3x3 stride-1 window,
    which the CPU backend may run as Winograd F(2x2, 3x3), whose transforms make sums of quarters up to 36 times
    larger, below 2^16: only a group-1 convolution, the only one it runs so), so that the backend's float32 kernels
    compute it; else float64, exact for any 8-bit convolution but a loop nest no recipe takes (ViTs' patch
    embeddings after onnxruntime's quantize_dynamic; a QOperator MobileNet's 3x3 depthwise layers, 5x its time,
    until the Winograd bound was kept to group 1)."""
    known = [v for v in (w, w_zero, bias) if v is not None]
    if not all(isinstance(v, np.ndarray) for v in known):
        return F64
    centred = np.asarray(w, np.int64)
    if w_zero is not None:
        centred = centred - np.asarray(w_zero, np.int64).reshape(-1, *[1] * (centred.ndim - 1))
    bound = 255 * int(np.abs(centred).reshape(centred.shape[0], -1).sum(axis=1).max(initial=0))
    bound += int(np.abs(np.asarray(bias, np.int64)).max(initial=0)) if bias is not None else 0
    kernel = list(centred.shape[2:])
    strides, dilations = ops_nn.window_attrs(ctx, len(kernel), kernel)
    winograd = kernel == [3, 3] and strides == [1, 1] and dilations == [1, 1] and ctx.attr("group", 1) == 1
    return F32 if bound < (2**16 if winograd else F32_INTEGERS) else F64


def _integer_conv(
    ctx: NodeContext, x: Value, x_zero: Value | None, w: Value, w_zero: Value | None, bias: Value | None
) -> Value:
    """conv(x - x_zero, w - w_zero) + bias, exact, in float32 where that is (`_accumulator`), else float64 (ONNX
    pads the centred x with 0, i.e. x with its zero point). w's zero point is per output channel."""
    if x_zero is not None and int(np.prod(shape(x_zero))) != 1:
        raise ctx.invalid(f"x_zero_point must be a scalar, got shape {list(shape(x_zero))}")
    if bias is not None and dtype(bias) != I32:
        raise ctx.invalid(f"the bias must be int32, got {dtype(bias)}")
    wide = _accumulator(ctx, w, w_zero, bias)
    lhs = _centered(ctx, x, x_zero, 0, "x", wide)
    rhs = _centered(ctx, w, w_zero, 0, "w", wide)
    b = None if bias is None else ctx.convert(bias, wide)
    return ops_nn.conv(dataclasses.replace(ctx, inputs=[lhs, rhs, b]))[0]


@handles("MatMulInteger")
def matmul_integer(ctx: NodeContext) -> list[Value]:
    return [_integer_matmul(ctx, ctx.input(0), ctx.optional(2), ctx.input(1), ctx.optional(3))]


@handles("ConvInteger")
def conv_integer(ctx: NodeContext) -> list[Value]:
    y = _integer_conv(ctx, ctx.input(0), ctx.optional(2), ctx.input(1), ctx.optional(3), None)
    return [ctx.convert(y, I32)]


def _multiplier(ctx: NodeContext, scales: list[Value], y_dims: tuple[int, ...], axis: int) -> Value:
    """float32(a_scale) * float32(b_scale) / float32(y_scale), broadcast to the result's dims; one scale
    (b's or w's) may be 1-D along `axis` of the result."""
    a, b, y = (ctx.convert(s, F32) for s in scales)
    for s, what in ((a, "the input scale"), (y, "y_scale")):
        if int(np.prod(shape(s))) != 1:
            raise ctx.invalid(f"{what} must be a scalar, got shape {list(shape(s))}")
    a, y = (ctx.reshape(s, []) for s in (a, y))
    if int(np.prod(shape(b))) == 1:
        return ctx.broadcast_to(ctx.g.div(ctx.g.mul(a, ctx.reshape(b, [])), y), y_dims)
    b = _spread(ctx, b, y_dims, axis, 0, "the weight scale")
    return ctx.g.div(ctx.g.mul(ctx.broadcast_to(a, y_dims), b), ctx.broadcast_to(y, y_dims))


def _zero_like(ctx: NodeContext, zero: Value | None, fallback: np.dtype) -> tuple[Value | None, np.dtype]:
    """The output zero point (None: 0) and the output type: the zero point's, else the input's."""
    if zero is None:
        return None, fallback
    if int(np.prod(shape(zero))) != 1:
        raise ctx.invalid(f"y_zero_point must be a scalar, got shape {list(shape(zero))}")
    return ctx.reshape(zero, []), dtype(zero)


@handles("QLinearMatMul")
def qlinear_matmul(ctx: NodeContext) -> list[Value]:
    a, b = ctx.input(0), ctx.input(3)
    acc = _integer_matmul(ctx, a, ctx.optional(2), b, ctx.optional(5))
    zero, out = _zero_like(ctx, ctx.optional(7), dtype(a))
    multiplier = _multiplier(ctx, [ctx.input(1), ctx.input(4), ctx.input(6)], shape(acc), -1)
    scaled = ctx.g.mul(ctx.convert(acc, F32), multiplier)
    return [requantize(ctx, scaled, None if zero is None else ctx.broadcast_to(zero, shape(acc)), out)]


@handles("QLinearConv")
def qlinear_conv(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    acc = _integer_conv(ctx, x, ctx.optional(2), ctx.input(3), ctx.optional(5), ctx.optional(8))
    zero, out = _zero_like(ctx, ctx.optional(7), dtype(x))
    multiplier = _multiplier(ctx, [ctx.input(1), ctx.input(4), ctx.input(6)], shape(acc), 1)
    # float64 -> float32 rounds the exact sum once, as onnxruntime's int32 -> float32 does.
    scaled = ctx.g.mul(ctx.convert(acc, F32), multiplier)
    return [requantize(ctx, scaled, None if zero is None else ctx.broadcast_to(zero, shape(acc)), out)]
