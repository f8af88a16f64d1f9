"""Scalar bodies: the arith/math ops that compute one element, which the op definitions state for their
elementwise ops and activations and codegen emits inside each linalg.generic.

Integer and float variants are picked from the operand type (`by_type`); signless integers are signed, the
builtin unsigned types (ui8..ui64) unsigned, i1 is the boolean. arith takes signless integers only, so an
unsigned operand is read through `signless` and the result given its type back with `typed`: casts that
glow-ir-to-linalg removes when it makes every buffer signless (`signless_types`, codegen/builders.py).
Semantics match the reference evaluators: integer division truncates toward zero and never traps,
max/min propagate NaN, comparisons are ordered (false on NaN) except `!=`, which is true on NaN.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import factorial, pi, sqrt

from mlir import ir
from mlir.dialects import arith, builtin, math

from glow_mlir.errors import UnsupportedError
from glow_mlir.opdefs import types


def is_float(elt: ir.Type) -> bool:
    return isinstance(elt, ir.FloatType)


def width(elt: ir.Type) -> int:
    return ir.FloatType(elt).width if is_float(elt) else ir.IntegerType(elt).width


def is_bool(elt: ir.Type) -> bool:
    return isinstance(elt, ir.IntegerType) and ir.IntegerType(elt).width == 1


def is_unsigned(elt: ir.Type) -> bool:
    return isinstance(elt, ir.IntegerType) and types.is_unsigned(str(elt))


def signless_type(elt: ir.Type) -> ir.Type:
    """The signless integer of an unsigned type's width; any other type as it is."""
    return ir.IntegerType.get_signless(width(elt)) if is_unsigned(elt) else elt


def signless(x: ir.Value) -> ir.Value:
    """An unsigned value as the signless integer arith computes on (the same bits)."""
    return builtin.unrealized_conversion_cast([signless_type(x.type)], [x]) if is_unsigned(x.type) else x


def typed(x: ir.Value, elt: ir.Type) -> ir.Value:
    """A signless result given the unsigned type `elt` back (inverse of `signless`)."""
    return builtin.unrealized_conversion_cast([elt], [x]) if x.type != elt else x


def constant(elt: ir.Type, value: float) -> ir.Value:
    """A constant of `elt`; integer types take int(value) (an i1 true may come in as -1, its signed value)."""
    if isinstance(elt, ir.IntegerType):
        bits = signless_type(elt)
        # Two's complement of the value: an unsigned 255 is the signless i8 -1.
        whole = int(value) % (1 << width(elt)) if width(elt) > 1 else int(value) & 1
        signed = whole - (1 << width(elt)) if whole >> (width(elt) - 1) else whole
        return typed(arith.ConstantOp(bits, ir.IntegerAttr.get(bits, signed)).result, elt)
    return arith.ConstantOp(elt, ir.FloatAttr.get(elt, value)).result


def lowest(elt: ir.Type) -> ir.Value:
    """The identity of max: -inf, or the smallest integer."""
    return constant(elt, float("-inf") if is_float(elt) else types.integer_range(str(elt))[0])


def highest(elt: ir.Type) -> ir.Value:
    """The identity of min: +inf, or the largest integer."""
    return constant(elt, float("inf") if is_float(elt) else types.integer_range(str(elt))[1])


Scalar2 = Callable[[ir.Value, ir.Value], ir.Value]


def by_type(on_float: Scalar2, on_int: Scalar2, on_unsigned: Scalar2 | None = None) -> Scalar2:
    """A binary scalar op that picks the float, signed or unsigned integer arith op from its operands' type
    (`on_int` serves unsigned operands too where two's complement makes no difference: add, and, shl)."""

    def build(a: ir.Value, b: ir.Value) -> ir.Value:
        if is_float(a.type):
            return on_float(a, b)
        if is_unsigned(a.type):
            return typed((on_unsigned or on_int)(signless(a), signless(b)), a.type)
        return on_int(a, b)

    return build


def _no_float(a: ir.Value, _: ir.Value) -> ir.Value:
    raise ValueError(f"no float variant for element type {a.type}")


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


def divide_unsigned(a: ir.Value, b: ir.Value) -> ir.Value:
    """a / b of unsigned integers (signless operands), a / 0 = 0 as numpy's: divui traps on 0 as idiv does."""
    zero, one = constant(a.type, 0), constant(a.type, 1)
    by_zero = arith.cmpi(arith.CmpIPredicate.eq, b, zero)
    return arith.select(by_zero, zero, arith.divui(a, arith.select(by_zero, one, b)))


div = by_type(arith.divf, divide_integers, divide_unsigned)


maximum = by_type(arith.maximumf, arith.maxsi, arith.maxui)


minimum = by_type(arith.minimumf, arith.minsi, arith.minui)


# Bitwise logic and shifts, on integers only (ONNX's BitwiseAnd/Or/Xor/Not, BitShift).
bitwise_and = by_type(_no_float, arith.andi)
bitwise_or = by_type(_no_float, arith.ori)
bitwise_xor = by_type(_no_float, arith.xori)


def _shift(shift: Scalar2) -> Scalar2:
    """`shift` by an amount that may reach the width: LLVM's shifts are poison there, ONNX's give 0 (numpy's
    too, for unsigned; a signed right shift by the width or more gives the sign, as numpy's does)."""

    def build(a: ir.Value, b: ir.Value) -> ir.Value:
        bits = constant(a.type, width(a.type))
        too_far = arith.cmpi(arith.CmpIPredicate.uge, b, bits)
        if shift is arith.shrsi:
            return shift(a, arith.select(too_far, constant(a.type, width(a.type) - 1), b))
        return arith.select(too_far, constant(a.type, 0), shift(a, b))

    return build


shift_left = by_type(_no_float, _shift(arith.shli))
shift_right = by_type(_no_float, _shift(arith.shrsi), _shift(arith.shrui))


def bitwise_not(x: ir.Value) -> ir.Value:
    return typed(arith.xori(signless(x), constant(signless_type(x.type), -1)), x.type)


_UNSIGNED_PREDICATES = {
    arith.CmpIPredicate.slt: arith.CmpIPredicate.ult,
    arith.CmpIPredicate.sle: arith.CmpIPredicate.ule,
    arith.CmpIPredicate.sgt: arith.CmpIPredicate.ugt,
    arith.CmpIPredicate.sge: arith.CmpIPredicate.uge,
}


def compare(on_float: arith.CmpFPredicate, on_int: arith.CmpIPredicate) -> Scalar2:
    """An i1 comparison: ordered float predicates are false on NaN, except une, which is true (ONNX); `on_int`
    is the signed predicate, which unsigned operands compare with its unsigned twin."""

    def build(a: ir.Value, b: ir.Value) -> ir.Value:
        if is_float(a.type):
            return arith.cmpf(on_float, a, b)
        if is_unsigned(a.type):
            return arith.cmpi(_UNSIGNED_PREDICATES.get(on_int, on_int), signless(a), signless(b))
        return arith.cmpi(on_int, a, b)

    return build


def sigmoid(x: ir.Value) -> ir.Value:
    # 1 / (1 + exp(-x)) saturates cleanly: exp overflows to inf for very negative x and the result is 0.
    one = constant(x.type, 1.0)
    return arith.divf(one, arith.addf(one, math.exp(arith.negf(x))))


def leaky_relu(x: ir.Value, alpha: float) -> ir.Value:
    negative = arith.cmpf(arith.CmpFPredicate.OLT, x, constant(x.type, 0.0))
    return arith.select(negative, arith.mulf(x, constant(x.type, alpha)), x)


def absolute(x: ir.Value) -> ir.Value:
    if is_unsigned(x.type):
        return x
    return math.absf(x) if is_float(x.type) else math.absi(x)


def negate(x: ir.Value) -> ir.Value:
    """-x; an unsigned x wraps (2^n - x), as numpy's negative does."""
    return arith.negf(x) if is_float(x.type) else typed(arith.subi(constant(signless_type(x.type), 0), signless(x)), x.type)


def narrow_float(x: ir.Value, to: ir.Type) -> ir.Value:
    """`x` rounded (to nearest even) to the narrower float type `to`.

    LLVM turns f64 -> f16 into a call of __truncdfhf2, which the JIT cannot resolve (and arith-expand rounds
    f64 -> bf16 through f32). Rounding to f32 first would round twice, wrongly for values just off a tie;
    rounding to f32 *to odd* (keeping the inexact bit in the last place) makes the second rounding exact, as
    f32 has more than 11 + 2 (f16) and 8 + 2 (bf16) significant bits.
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
    i1->x is 0 or 1, integers widen by their own signedness and narrow by dropping high bits."""
    frm = x.type
    if frm == to:
        return x
    if str(frm) in types.LOW_PRECISION or str(to) in types.LOW_PRECISION:
        raise UnsupportedError(f"no generated conversion from {frm} to {to} yet (the interpreter has it)")
    if is_bool(to):
        if is_float(frm):
            return arith.cmpf(arith.CmpFPredicate.UNE, x, constant(frm, 0))
        return arith.cmpi(arith.CmpIPredicate.ne, signless(x), constant(signless_type(frm), 0))
    if is_float(frm) and is_float(to):
        if width(to) == width(frm):  # f16 <-> bf16: exact in f32, rounded once from there
            x, frm = arith.extf(ir.F32Type.get(), x), ir.F32Type.get()
        return arith.extf(to, x) if width(to) > width(frm) else narrow_float(x, to)
    return typed(_convert_number(signless(x), signless_type(to), is_unsigned(frm) or is_bool(frm), is_unsigned(to)), to)


def _convert_number(x: ir.Value, to: ir.Type, from_unsigned: bool, to_unsigned: bool) -> ir.Value:
    """An integer <-> float or integer <-> integer conversion of signless values; a bool is unsigned (true is
    1, not the -1 a signed extension of i1 would give)."""
    frm = x.type
    if is_float(frm):
        return arith.fptoui(to, x) if to_unsigned else arith.fptosi(to, x)
    if is_float(to):
        return arith.uitofp(to, x) if from_unsigned else arith.sitofp(to, x)
    if width(to) == width(frm):
        return x
    if width(to) > width(frm):
        return arith.extui(to, x) if from_unsigned else arith.extsi(to, x)
    return arith.trunci(to, x)


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
    return maximum(x, constant(x.type, 0.0))


def clip(x: ir.Value, low: float, high: float) -> ir.Value:
    return arith.minimumf(arith.maximumf(x, constant(x.type, low)), constant(x.type, high))
