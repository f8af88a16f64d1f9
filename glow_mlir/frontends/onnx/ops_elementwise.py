"""Elementwise ONNX ops: arithmetic, comparisons, logic and activations, composed from glow's elementwise ops.

ONNX broadcasts numpy-style; glow's binary ops take one shape, so operands go through `glow.broadcast` first.
Activations glow has no op for (LeakyRelu, Elu, HardSigmoid, Gelu, ...) are written with select, arithmetic
and the transcendental ops, as Glow lowers them.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from glow_mlir.frontends.onnx.node import NodeContext, Value, dtype, is_float, rank, shape
from glow_mlir.frontends.onnx.registry import handles

_BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow"}
_COMPARE = {"Equal": "cmp_eq", "Less": "cmp_lt", "LessOrEqual": "cmp_lte"}
_SWAPPED_COMPARE = {"Greater": "cmp_lt", "GreaterOrEqual": "cmp_lte"}
_LOGICAL = {
    "And": "logical_and", "Or": "logical_or", "Xor": "logical_xor",
    "BitwiseAnd": "bitwise_and", "BitwiseOr": "bitwise_or", "BitwiseXor": "bitwise_xor",
}  # fmt: skip
_UNARY = {
    "Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Exp": "exp", "Sqrt": "sqrt", "Log": "log",
    "Abs": "abs", "Neg": "neg", "Floor": "floor", "Ceil": "ceil", "Round": "round", "Erf": "erf", "Sin": "sin",
    "Cos": "cos", "Tan": "tan", "Asin": "asin", "Acos": "acos", "Atan": "atan", "Sinh": "sinh", "Cosh": "cosh",
    "Asinh": "asinh", "Acosh": "acosh", "Atanh": "atanh", "Not": "logical_not", "IsNaN": "is_nan",
    "BitwiseNot": "bitwise_not",
}


@handles(*_BINARY)
def binary(ctx: NodeContext) -> list[Value]:
    a, b = ctx.input(0), ctx.input(1)
    if ctx.op_type == "Pow":
        return [_pow(ctx, a, b)]
    a, b = ctx.broadcast_all([a, b])
    return [getattr(ctx.g, _BINARY[ctx.op_type])(a, b)]


def _pow(ctx: NodeContext, base: Value, exponent: Value) -> Value:
    """glow.pow is float-only with one type; ONNX allows any exponent type and integer bases."""
    base, exponent = ctx.broadcast_all([base, exponent])
    if is_float(base):
        return ctx.g.pow(base, ctx.convert(exponent, dtype(base)))
    wide = ctx.g.pow(ctx.convert(base, np.float64), ctx.convert(exponent, np.float64))
    # exp(y*log(x)) is not exact, so round before truncating back to the integer type.
    return ctx.convert(ctx.g.round(wide), dtype(base))


@handles(*_COMPARE, *_SWAPPED_COMPARE)
def compare(ctx: NodeContext) -> list[Value]:
    a, b = ctx.broadcast_all([ctx.input(0), ctx.input(1)])
    if ctx.op_type in _SWAPPED_COMPARE:
        return [getattr(ctx.g, _SWAPPED_COMPARE[ctx.op_type])(b, a)]
    return [getattr(ctx.g, _COMPARE[ctx.op_type])(a, b)]


@handles(*_LOGICAL)
def logical(ctx: NodeContext) -> list[Value]:
    a, b = ctx.broadcast_all([ctx.input(0), ctx.input(1)])
    return [getattr(ctx.g, _LOGICAL[ctx.op_type])(a, b)]


@handles("BitShift")
def bit_shift(ctx: NodeContext) -> list[Value]:
    a, b = ctx.broadcast_all([ctx.input(0), ctx.input(1)])
    direction = ctx.attr("direction")
    if direction not in ("LEFT", "RIGHT"):
        raise ctx.unsupported("direction", f"'{direction}' is neither 'LEFT' nor 'RIGHT'")
    return [ctx.g.shift_left(a, b) if direction == "LEFT" else ctx.g.shift_right(a, b)]


@handles("Max", "Min", "Sum", "Mean")
def variadic(ctx: NodeContext) -> list[Value]:
    given = [v for v in ctx.inputs if v is not None]
    if not given:
        raise ctx.invalid("takes at least one input, all are absent")
    values = ctx.broadcast_all(given)
    method = {"Max": "max", "Min": "min", "Sum": "add", "Mean": "add"}[ctx.op_type]
    result = values[0]
    for v in values[1:]:
        result = getattr(ctx.g, method)(result, v)
    if ctx.op_type == "Mean" and len(values) > 1:
        result = ctx.g.div(result, ctx.scalar_like(result, len(values)))
    return [result]


@handles(*_UNARY)
def unary(ctx: NodeContext) -> list[Value]:
    return [getattr(ctx.g, _UNARY[ctx.op_type])(ctx.input(0))]


@handles("IsInf")
def is_inf(ctx: NodeContext) -> list[Value]:
    """x == +inf where detect_positive, or x == -inf where detect_negative (ONNX's function body)."""
    x = ctx.input(0)
    if not is_float(x):
        raise ctx.invalid(f"IsInf takes a float input, got {dtype(x)}")
    tests = [
        ctx.g.cmp_eq(x, ctx.scalar_like(x, sign * np.inf))
        for sign, attr in ((1, "detect_positive"), (-1, "detect_negative"))
        if ctx.attr(attr, 1)
    ]
    if not tests:
        return [ctx.full(shape(x), 0, np.dtype(np.bool_))]
    return [tests[0] if len(tests) == 1 else ctx.g.logical_or(*tests)]


@handles("Identity")
def identity(ctx: NodeContext) -> list[Value]:
    return [ctx.input(0)]


@handles("Reciprocal")
def reciprocal(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    return [ctx.g.div(ctx.scalar_like(x, 1), x)]


@handles("Sign")
def sign(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    zero = ctx.scalar_like(x, 0)
    negative = ctx.g.select(ctx.g.cmp_lt(x, zero), ctx.scalar_like(x, -1), zero)
    return [ctx.g.select(ctx.g.cmp_lt(zero, x), ctx.scalar_like(x, 1), negative)]


@handles("Mod")
def mod(ctx: NodeContext) -> list[Value]:
    a, b = ctx.broadcast_all([ctx.input(0), ctx.input(1)])
    fmod = ctx.attr("fmod", 0)
    if is_float(a) and not fmod:
        raise ctx.unsupported("fmod", "must be 1 for floating-point inputs (as the ONNX spec requires)")
    # The truncated remainder a - trunc(a / b) * b; glow's integer div truncates already.
    quotient = ctx.g.div(a, b)
    if is_float(a):
        quotient = _trunc(ctx, quotient)
    remainder = ctx.g.sub(a, ctx.g.mul(quotient, b))
    if fmod:
        return [remainder]
    # Python's modulo takes the divisor's sign: shift a nonzero remainder whose sign differs by b.
    zero = ctx.scalar_like(a, 0)
    signs_differ = ctx.g.logical_xor(ctx.g.cmp_lt(remainder, zero), ctx.g.cmp_lt(b, zero))
    shift = ctx.g.logical_and(ctx.g.cmp_neq(remainder, zero), signs_differ)
    return [ctx.g.select(shift, ctx.g.add(remainder, b), remainder)]


def _trunc(ctx: NodeContext, x: Value) -> Value:
    return ctx.g.select(ctx.g.cmp_lt(x, ctx.scalar_like(x, 0)), ctx.g.ceil(x), ctx.g.floor(x))


@handles("Where")
def where(ctx: NodeContext) -> list[Value]:
    cond, a, b = ctx.broadcast_all([ctx.input(0), ctx.input(1), ctx.input(2)])
    return [ctx.g.select(cond, a, b)]


# Activations.


def _negative_branch(ctx: NodeContext, x: Value, negative: Callable[[], Value]) -> Value:
    """`negative()` where x < 0, x elsewhere."""
    return ctx.g.select(ctx.g.cmp_lt(x, ctx.scalar_like(x, 0)), negative(), x)


@handles("LeakyRelu")
def leaky_relu(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    alpha = ctx.attr("alpha", 0.01)
    return [_negative_branch(ctx, x, lambda: ctx.g.mul(x, ctx.scalar_like(x, alpha)))]


@handles("PRelu")
def prelu(ctx: NodeContext) -> list[Value]:
    """The slope broadcasts to x numpy-style (unidirectionally) since opset 7. Before, a slope of shape [C]
    held one value per channel (axis 1), and onnx's version converter upgrades such models to opset 7
    unchanged, so a [C] slope that does not broadcast numpy-style to an x of C channels is read the old way,
    along axis 1. A slope that broadcasts keeps the opset-7 meaning: no valid model changes meaning."""
    x, slope = ctx.input(0), ctx.input(1)
    if rank(slope) == 1 and rank(x) >= 2 and shape(slope)[0] == shape(x)[1] and not _broadcasts(slope, x):
        slope = ctx.g.broadcast(slope, shape(x), 1)
    else:
        slope = ctx.broadcast_to(slope, shape(x))
    return [_negative_branch(ctx, x, lambda: ctx.g.mul(x, slope))]


def _broadcasts(v: Value, target: Value) -> bool:
    """Whether `v` broadcasts numpy-style to the shape of `target`."""
    try:
        return np.broadcast_shapes(shape(v), shape(target)) == shape(target)
    except ValueError:
        return False


def _elu(ctx: NodeContext, x: Value, alpha: float) -> Value:
    expm1 = ctx.g.sub(ctx.g.exp(x), ctx.scalar_like(x, 1))
    return ctx.g.select(ctx.g.cmp_lte(x, ctx.scalar_like(x, 0)), ctx.g.mul(ctx.scalar_like(x, alpha), expm1), x)


@handles("Elu")
def elu(ctx: NodeContext) -> list[Value]:
    return [_elu(ctx, ctx.input(0), ctx.attr("alpha", 1.0))]


@handles("Selu")
def selu(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    alpha = ctx.attr("alpha", 1.67326319217681884765625)
    gamma = ctx.attr("gamma", 1.05070102214813232421875)
    return [ctx.g.mul(ctx.scalar_like(x, gamma), _elu(ctx, x, alpha))]


@handles("Celu")
def celu(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    alpha = ctx.attr("alpha", 1.0)
    scaled = ctx.g.div(x, ctx.scalar_like(x, alpha))
    negative = ctx.g.mul(ctx.scalar_like(x, alpha), ctx.g.sub(ctx.g.exp(scaled), ctx.scalar_like(x, 1)))
    return [ctx.g.select(ctx.g.cmp_lte(x, ctx.scalar_like(x, 0)), negative, x)]


def _hard_sigmoid(ctx: NodeContext, x: Value, alpha: float, beta: float) -> Value:
    linear = ctx.g.add(ctx.g.mul(x, ctx.scalar_like(x, alpha)), ctx.scalar_like(x, beta))
    return ctx.g.min(ctx.g.max(linear, ctx.scalar_like(x, 0)), ctx.scalar_like(x, 1))


@handles("HardSigmoid")
def hard_sigmoid(ctx: NodeContext) -> list[Value]:
    return [_hard_sigmoid(ctx, ctx.input(0), ctx.attr("alpha", 0.2), ctx.attr("beta", 0.5))]


@handles("HardSwish")
def hard_swish(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    return [ctx.g.mul(x, _hard_sigmoid(ctx, x, 1 / 6, 0.5))]


@handles("Softplus")
def softplus(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    return [ctx.g.log(ctx.g.add(ctx.g.exp(x), ctx.scalar_like(x, 1)))]


@handles("Mish")
def mish(ctx: NodeContext) -> list[Value]:
    """x * tanh(softplus(x)); where exp overflows, softplus is inf and tanh 1, so y = x as it should."""
    x = ctx.input(0)
    softplus_x = ctx.g.log(ctx.g.add(ctx.g.exp(x), ctx.scalar_like(x, 1)))
    return [ctx.g.mul(x, ctx.g.tanh(softplus_x))]


@handles("Swish")
def swish(ctx: NodeContext) -> list[Value]:
    """x * sigmoid(alpha * x)."""
    x = ctx.input(0)
    return [ctx.g.mul(x, ctx.g.sigmoid(ctx.g.mul(x, ctx.scalar_like(x, ctx.attr("alpha", 1.0)))))]


@handles("ThresholdedRelu")
def thresholded_relu(ctx: NodeContext) -> list[Value]:
    """x where x > alpha, else 0."""
    x = ctx.input(0)
    above = ctx.g.cmp_lt(ctx.scalar_like(x, ctx.attr("alpha", 1.0)), x)
    return [ctx.g.select(above, x, ctx.scalar_like(x, 0))]


@handles("Shrink")
def shrink(ctx: NodeContext) -> list[Value]:
    """x + bias below -lambd, x - bias above lambd, 0 between. Integer inputs are computed in float64 and
    converted back, as the spec's function does with its float attributes."""
    x = ctx.input(0)
    original = dtype(x)
    if not is_float(x):
        x = ctx.convert(x, np.dtype(np.float64))
    lambd, bias = ctx.attr("lambd", 0.5), ctx.attr("bias", 0.0)
    below = ctx.g.cmp_lt(x, ctx.scalar_like(x, -lambd))
    above = ctx.g.cmp_lt(ctx.scalar_like(x, lambd), x)
    shifted_up = ctx.g.add(x, ctx.scalar_like(x, bias))
    shifted_down = ctx.g.sub(x, ctx.scalar_like(x, bias))
    y = ctx.g.select(below, shifted_up, ctx.g.select(above, shifted_down, ctx.scalar_like(x, 0)))
    return [ctx.convert(y, original)]


@handles("Softsign")
def softsign(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    return [ctx.g.div(x, ctx.g.add(ctx.g.abs(x), ctx.scalar_like(x, 1)))]


@handles("Gelu")
def gelu(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    approximate = ctx.attr("approximate", "none")
    half_x = ctx.g.mul(x, ctx.scalar_like(x, 0.5))
    if approximate == "none":
        inner = ctx.g.erf(ctx.g.mul(x, ctx.scalar_like(x, 1 / math.sqrt(2))))
    elif approximate == "tanh":
        cube = ctx.g.mul(ctx.g.mul(x, x), x)
        poly = ctx.g.add(x, ctx.g.mul(cube, ctx.scalar_like(x, 0.044715)))
        inner = ctx.g.tanh(ctx.g.mul(poly, ctx.scalar_like(x, math.sqrt(2 / math.pi))))
    else:
        raise ctx.unsupported("approximate", f"'{approximate}' is neither 'none' nor 'tanh'")
    return [ctx.g.mul(half_x, ctx.g.add(inner, ctx.scalar_like(x, 1)))]


@handles("Clip")
def clip(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    if ctx.opset < 11:
        low = ctx.scalar_like(x, ctx.attr("min", -np.inf)) if ctx.has("min") else None
        high = ctx.scalar_like(x, ctx.attr("max", np.inf)) if ctx.has("max") else None
    else:
        # Bounds are scalar tensors, possibly computed at run time: broadcast them.
        low, high = (ctx.optional(i) for i in (1, 2))
        low = None if low is None else ctx.broadcast_to(ctx.reshape(low, []), shape(x))
        high = None if high is None else ctx.broadcast_to(ctx.reshape(high, []), shape(x))
    if low is not None:
        x = ctx.g.max(x, low)
    if high is not None:
        x = ctx.g.min(x, high)
    return [x]
