"""Scalar bodies of glow-ir-to-linalg: what elementwise instructions and fused activations compute on one
element, as arith and math ops.

Each picks its arith op from the element type (addf/addi, divf/divsi, maximumf/maxsi, ...), so that one
instruction serves f16/f32/f64 and i8..i64 alike (docs/ARCHITECTURE.md). erf, which LLVM has no intrinsic
for, is generated arithmetic (`erf`). The logical instructions, whose checks are all there is to them besides
their body, are here too. The per-instruction entries that use these bodies are in codegen/math.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import factorial, pi, sqrt

from mlir import ir
from mlir.dialects import arith, math

from glow_mlir import ops
from glow_mlir.codegen.builders import binary, elementwise, is_bool, is_float, lowest, scalar, width
from glow_mlir.codegen.table import Lowering, fail


# A binary scalar op: two elements in, their result out.
Scalar2 = Callable[[ir.Value, ir.Value], ir.Value]


def _by_type(on_float: Scalar2, on_int: Scalar2) -> Scalar2:
    """A binary scalar op that picks the float or the (signed) integer arith op from its operands' type."""

    def build(a: ir.Value, b: ir.Value) -> ir.Value:
        return on_float(a, b) if is_float(a.type) else on_int(a, b)

    return build


add = _by_type(arith.addf, arith.addi)
sub = _by_type(arith.subf, arith.subi)
mul = _by_type(arith.mulf, arith.muli)


def _divide_integers(a: ir.Value, b: ir.Value) -> ir.Value:
    """a / b truncating toward zero (C, ONNX), total like the interpreter: a / 0 = 0, MIN / -1 wraps to MIN.

    x86's idiv traps on both, which would kill the process from user data; dividing by 1 instead makes
    the quotient exact for MIN / -1 (MIN) and is discarded for a zero divisor.
    """
    elt = a.type
    zero, one = scalar(elt, 0), scalar(elt, 1)
    by_zero = arith.cmpi(arith.CmpIPredicate.eq, b, zero)
    overflow = arith.andi(
        arith.cmpi(arith.CmpIPredicate.eq, a, lowest(elt)),
        arith.cmpi(arith.CmpIPredicate.eq, b, scalar(elt, -1)),
    )
    quotient = arith.divsi(a, arith.select(arith.ori(by_zero, overflow), one, b))
    return arith.select(by_zero, zero, quotient)


div = _by_type(arith.divf, _divide_integers)
maximum = _by_type(arith.maximumf, arith.maxsi)
minimum = _by_type(arith.minimumf, arith.minsi)


def compare(on_float: arith.CmpFPredicate, on_int: arith.CmpIPredicate) -> Scalar2:
    """An i1 comparison: ordered float predicates are false on NaN, except une, which is true (ONNX)."""

    def build(a: ir.Value, b: ir.Value) -> ir.Value:
        return arith.cmpf(on_float, a, b) if is_float(a.type) else arith.cmpi(on_int, a, b)

    return build


def sigmoid(x: ir.Value) -> ir.Value:
    # 1 / (1 + exp(-x)) saturates cleanly: exp overflows to inf for very negative x and the result is 0.
    one = scalar(x.type, 1.0)
    return arith.divf(one, arith.addf(one, math.exp(arith.negf(x))))


def absolute(x: ir.Value) -> ir.Value:
    return math.absf(x) if is_float(x.type) else math.absi(x)


def negate(x: ir.Value) -> ir.Value:
    return arith.negf(x) if is_float(x.type) else arith.subi(scalar(x.type, 0), x)


def _narrow_float(x: ir.Value, to: ir.Type) -> ir.Value:
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
    one = scalar(i32, 1)
    inexact = arith.cmpf(arith.CmpFPredicate.ONE, back, x)
    even = arith.cmpi(arith.CmpIPredicate.eq, arith.andi(bits, one), scalar(i32, 0))
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
        zero = scalar(frm, 0)
        if is_float(frm):
            return arith.cmpf(arith.CmpFPredicate.UNE, x, zero)
        return arith.cmpi(arith.CmpIPredicate.ne, x, zero)
    if is_float(frm) and is_float(to):
        return arith.extf(to, x) if width(to) > width(frm) else _narrow_float(x, to)
    if is_float(frm):
        return arith.fptosi(to, x)
    if is_bool(frm):
        # A bool is unsigned: true is 1, not the -1 a signed extension of i1 would give.
        return arith.uitofp(to, x) if is_float(to) else arith.extui(to, x)
    if is_float(to):
        return arith.sitofp(to, x)
    return arith.extsi(to, x) if width(to) > width(frm) else arith.trunci(to, x)


def logical(build: Scalar2) -> Lowering:
    def lower(op: ir.Operation) -> None:
        for i, value in enumerate(op.operands):
            if not is_bool(ops.element_type(value)):
                raise fail(op, f"takes i1 buffers only, operand {i} has element type {ops.element_type(value)}")
        binary(build)(op)

    return lower


def logical_not(op: ir.Operation) -> None:
    dest, src = op.operands
    if not (is_bool(ops.element_type(dest)) and is_bool(ops.element_type(src))):
        raise fail(op, "takes i1 buffers only")
    elementwise([src], dest, lambda a: arith.xori(a[0], scalar(a[0].type, 1)))


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


def _horner(coefficients: Sequence[float], x: ir.Value) -> ir.Value:
    """sum_i coefficients[i] * x^i."""
    total = scalar(x.type, coefficients[-1])
    for c in reversed(coefficients[:-1]):
        total = arith.addf(arith.mulf(total, x), scalar(x.type, c))
    return total


def erf(x: ir.Value) -> ir.Value:
    """The error function as generated arithmetic (LLVM has no erf intrinsic), in f64 whatever x's float type,
    accurate to about 1e-10: a series near 0, 1 - erfc beyond. NaN stays NaN, erf(+-inf) = +-1."""
    f64 = ir.F64Type.get()
    wide = x if x.type == f64 else arith.extf(f64, x)
    a = math.absf(wide)
    square = arith.mulf(a, a)
    series = arith.mulf(a, _horner(ERF_SERIES, square))
    one = scalar(f64, 1.0)
    t = arith.divf(one, arith.addf(one, arith.mulf(scalar(f64, 0.5), a)))
    erfc = arith.mulf(t, math.exp(arith.addf(arith.negf(square), _horner(ERFC_FIT, t))))
    near = arith.cmpf(arith.CmpFPredicate.OLT, a, scalar(f64, ERF_SERIES_LIMIT))
    result = math.copysign(arith.select(near, series, arith.subf(one, erfc)), wide)
    return result if x.type == f64 else _narrow_float(result, x.type)


def _leaky_relu(x: ir.Value, alpha: float) -> ir.Value:
    negative = arith.cmpf(arith.CmpFPredicate.OLT, x, scalar(x.type, 0.0))
    return arith.select(negative, arith.mulf(x, scalar(x.type, alpha)), x)


# A fused activation's scalar body, from the element and the op's activationArgs; None for "none".
# relu and clip use maximumf/minimumf, which propagate NaN as numpy's maximum/minimum do.
ACTIVATIONS: dict[str, Callable[[ir.Value, list[float]], ir.Value] | None] = {
    "none": None,
    "relu": lambda x, _: arith.maximumf(x, scalar(x.type, 0.0)),
    "clip": lambda x, a: arith.minimumf(arith.maximumf(x, scalar(x.type, a[0])), scalar(x.type, a[1])),
    "sigmoid": lambda x, _: sigmoid(x),
    "tanh": lambda x, _: math.tanh(x),
    "leaky_relu": lambda x, a: _leaky_relu(x, a[0]),
}
