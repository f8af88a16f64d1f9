"""Scalar bodies: the arith/math ops that compute one element, which the op definitions state for their
elementwise ops and activations and codegen emits inside each linalg.generic.

Integer and float variants are picked from the operand type (`by_type`); integers are signed, i1 is the
boolean. Semantics match the reference evaluators: integer division truncates toward zero and never traps,
max/min propagate NaN, comparisons are ordered (false on NaN) except `!=`, which is true on NaN.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import factorial, pi, sqrt

from mlir import ir
from mlir.dialects import arith, math


def is_float(elt: ir.Type) -> bool:
    return isinstance(elt, ir.FloatType)


def width(elt: ir.Type) -> int:
    return ir.FloatType(elt).width if is_float(elt) else ir.IntegerType(elt).width


def is_bool(elt: ir.Type) -> bool:
    return isinstance(elt, ir.IntegerType) and ir.IntegerType(elt).width == 1


def constant(elt: ir.Type, value: float) -> ir.Value:
    """A constant of `elt`; integer types take int(value) (an i1 true may come in as -1, its signed value)."""
    if isinstance(elt, ir.IntegerType):
        return arith.ConstantOp(elt, ir.IntegerAttr.get(elt, int(value))).result
    return arith.ConstantOp(elt, ir.FloatAttr.get(elt, value)).result


def lowest(elt: ir.Type) -> ir.Value:
    """The identity of max: -inf, or the most negative integer."""
    return constant(elt, float("-inf") if is_float(elt) else -(1 << (width(elt) - 1)))


def highest(elt: ir.Type) -> ir.Value:
    """The identity of min: +inf, or the largest integer."""
    return constant(elt, float("inf") if is_float(elt) else (1 << (width(elt) - 1)) - 1)


Scalar2 = Callable[[ir.Value, ir.Value], ir.Value]


def by_type(on_float: Scalar2, on_int: Scalar2) -> Scalar2:
    """A binary scalar op that picks the float or the (signed) integer arith op from its operands' type."""

    def build(a: ir.Value, b: ir.Value) -> ir.Value:
        return on_float(a, b) if is_float(a.type) else on_int(a, b)

    return build


add = by_type(arith.addf, arith.addi)


sub = by_type(arith.subf, arith.subi)


mul = by_type(arith.mulf, arith.muli)


def divide_integers(a: ir.Value, b: ir.Value) -> ir.Value:
    """a / b truncating toward zero (C, ONNX), total like the interpreter: a / 0 = 0, MIN / -1 wraps to MIN.

    x86's idiv traps on both, which would kill the process from user data; dividing by 1 instead makes
    the quotient exact for MIN / -1 (MIN) and is discarded for a zero divisor.
    """
    elt = a.type
    zero, one = constant(elt, 0), constant(elt, 1)
    by_zero = arith.cmpi(arith.CmpIPredicate.eq, b, zero)
    overflow = arith.andi(
        arith.cmpi(arith.CmpIPredicate.eq, a, lowest(elt)),
        arith.cmpi(arith.CmpIPredicate.eq, b, constant(elt, -1)),
    )
    quotient = arith.divsi(a, arith.select(arith.ori(by_zero, overflow), one, b))
    return arith.select(by_zero, zero, quotient)


div = by_type(arith.divf, divide_integers)


maximum = by_type(arith.maximumf, arith.maxsi)


minimum = by_type(arith.minimumf, arith.minsi)


def compare(on_float: arith.CmpFPredicate, on_int: arith.CmpIPredicate) -> Scalar2:
    """An i1 comparison: ordered float predicates are false on NaN, except une, which is true (ONNX)."""

    def build(a: ir.Value, b: ir.Value) -> ir.Value:
        return arith.cmpf(on_float, a, b) if is_float(a.type) else arith.cmpi(on_int, a, b)

    return build


def sigmoid(x: ir.Value) -> ir.Value:
    # 1 / (1 + exp(-x)) saturates cleanly: exp overflows to inf for very negative x and the result is 0.
    one = constant(x.type, 1.0)
    return arith.divf(one, arith.addf(one, math.exp(arith.negf(x))))


def leaky_relu(x: ir.Value, alpha: float) -> ir.Value:
    negative = arith.cmpf(arith.CmpFPredicate.OLT, x, constant(x.type, 0.0))
    return arith.select(negative, arith.mulf(x, constant(x.type, alpha)), x)


def absolute(x: ir.Value) -> ir.Value:
    return math.absf(x) if is_float(x.type) else math.absi(x)


def negate(x: ir.Value) -> ir.Value:
    return arith.negf(x) if is_float(x.type) else arith.subi(constant(x.type, 0), x)


def narrow_float(x: ir.Value, to: ir.Type) -> ir.Value:
    """`x` rounded (to nearest even) to the narrower float type `to`.

    LLVM turns f64 -> f16 into a call of __truncdfhf2, which the JIT cannot resolve. Rounding to f32 first
    would round twice, wrongly for values just off an f16 tie; rounding to f32 *to odd* (keeping the inexact
    bit in the last place) makes the second rounding exact, as f32 has more than 11 + 2 significant bits.
    """
    if not (width(x.type) == 64 and width(to) == 16):
        return arith.truncf(to, x)
    f32, i32 = ir.F32Type.get(), ir.IntegerType.get_signless(32)
    nearest = arith.truncf(f32, x)
    back = arith.extf(x.type, nearest)
    bits = arith.bitcast(i32, nearest)
    one = constant(i32, 1)
    inexact = arith.cmpf(arith.CmpFPredicate.ONE, back, x)
    even = arith.cmpi(arith.CmpIPredicate.eq, arith.andi(bits, one), constant(i32, 0))
    # The other f32 neighbour of x is one ulp back toward x; f32 bits order magnitudes like integers.
    away = arith.cmpf(arith.CmpFPredicate.OGT, math.absf(back), math.absf(x))
    neighbour = arith.select(away, arith.subi(bits, one), arith.addi(bits, one))
    odd = arith.select(arith.andi(inexact, even), neighbour, bits)
    return arith.truncf(to, arith.bitcast(f32, odd))


def convert(x: ir.Value, to: ir.Type) -> ir.Value:
    """`x` converted to element type `to`: float->int truncates toward zero, x->i1 is x != 0 (NaN included),
    i1->x is 0 or 1."""
    frm = x.type
    if frm == to:
        return x
    if is_bool(to):
        zero = constant(frm, 0)
        if is_float(frm):
            return arith.cmpf(arith.CmpFPredicate.UNE, x, zero)
        return arith.cmpi(arith.CmpIPredicate.ne, x, zero)
    if is_float(frm) and is_float(to):
        return arith.extf(to, x) if width(to) > width(frm) else narrow_float(x, to)
    if is_float(frm):
        return arith.fptosi(to, x)
    if is_bool(frm):
        # A bool is unsigned: true is 1, not the -1 a signed extension of i1 would give.
        return arith.uitofp(to, x) if is_float(to) else arith.extui(to, x)
    if is_float(to):
        return arith.sitofp(to, x)
    return arith.extsi(to, x) if width(to) > width(frm) else arith.trunci(to, x)


# erf(x) for |x| < ERF_SERIES_LIMIT: its Maclaurin series, x * sum_n c_n x^(2n), with
# c_n = 2/sqrt(pi) * (-1)^n / (n! (2n + 1)). At |x| = 2.5 the 40th term is below 1e-17 and the largest about
# 20, so in f64 the sum is good to about 1e-14.
ERF_SERIES_LIMIT = 2.5


ERF_SERIES = tuple(2.0 / sqrt(pi) * (-1) ** n / (factorial(n) * (2 * n + 1)) for n in range(40))


# Beyond it, erf = 1 - erfc with Numerical Recipes' Chebyshev fit erfc(a) = t * exp(-a^2 + P(t)),
# t = 1 / (1 + a/2), whose relative error is below 1.2e-7; there erfc < 4.1e-4, so erf is off by < 5e-11.
ERFC_FIT = (
    -1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806,
    0.27886807, -1.13520398, 1.48851587, -0.82215223, 0.17087277,
)  # fmt: skip


def horner(coefficients: Sequence[float], x: ir.Value) -> ir.Value:
    """sum_i coefficients[i] * x^i."""
    total = constant(x.type, coefficients[-1])
    for c in reversed(coefficients[:-1]):
        total = arith.addf(arith.mulf(total, x), constant(x.type, c))
    return total


def erf(x: ir.Value) -> ir.Value:
    """The error function as generated arithmetic (LLVM has no erf intrinsic), in f64 whatever x's float type,
    accurate to about 1e-10: a series near 0, 1 - erfc beyond. NaN stays NaN, erf(+-inf) = +-1."""
    f64 = ir.F64Type.get()
    wide = x if x.type == f64 else arith.extf(f64, x)
    a = math.absf(wide)
    square = arith.mulf(a, a)
    series = arith.mulf(a, horner(ERF_SERIES, square))
    one = constant(f64, 1.0)
    t = arith.divf(one, arith.addf(one, arith.mulf(constant(f64, 0.5), a)))
    erfc = arith.mulf(t, math.exp(arith.addf(arith.negf(square), horner(ERFC_FIT, t))))
    near = arith.cmpf(arith.CmpFPredicate.OLT, a, constant(f64, ERF_SERIES_LIMIT))
    result = math.copysign(arith.select(near, series, arith.subf(one, erfc)), wide)
    return result if x.type == f64 else narrow_float(result, x.type)



def logical_not(x: ir.Value) -> ir.Value:
    return arith.xori(x, constant(x.type, 1))


def relu(x: ir.Value) -> ir.Value:
    """max(x, 0); maximumf propagates NaN as numpy's maximum does."""
    return arith.maximumf(x, constant(x.type, 0.0)) if is_float(x.type) else arith.maxsi(x, constant(x.type, 0))


def clip(x: ir.Value, low: float, high: float) -> ir.Value:
    return arith.minimumf(arith.maximumf(x, constant(x.type, low)), constant(x.type, high))
