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
from typing import NamedTuple

import ml_dtypes
import numpy as np
from mlir import ir
from mlir.dialects import arith, builtin, math

from glow_mlir import ops
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
    """A constant of `elt`; integer types take int(value) (an i1 true may come in as -1, its signed value). A
    low-precision one is its storage byte (as ml_dtypes' astype gives it) cast to `elt`: glow-ir-to-linalg's
    `signless_types` retypes results to their storage type, which a constant's own attribute would contradict."""
    if str(elt) in types.LOW_PRECISION:
        stored = np.array([value]).astype(ops.numpy_dtype(elt)).view(np.int8)[0]
        i8 = ir.IntegerType.get_signless(8)
        return typed(arith.ConstantOp(i8, ir.IntegerAttr.get(i8, int(stored))).result, elt)
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


def round_f16(x: ir.Value) -> ir.Value:
    """x rounded to the nearest f16 (ties to even), kept in x's type: an f16 store and load."""
    return arith.extf(x.type, arith.truncf(ir.F16Type.get(), x))


def sigmoid(x: ir.Value) -> ir.Value:
    """1 / (1 + e) for x >= 0 and e / (1 + e) below, with e = e^-|x| in [0, 1]: e never overflows, so its exp
    may be the approximate one (`afn`: results under 2^-126 are 0, no subnormal path); that took SiLU's
    x * sigmoid(x) from 28 to 23 vector instructions. Both quotients keep f32's relative accuracy; NaN stays NaN."""
    one = constant(x.type, 1.0)
    e = math.exp(arith.negf(math.absf(x)), fastmath=ir.Attribute.parse("#arith.fastmath<afn>"))
    negative = arith.cmpf(arith.CmpFPredicate.OLT, x, constant(x.type, 0.0))
    return arith.divf(arith.select(negative, e, one), arith.addf(one, e))


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
    i1->x is 0 or 1, integers widen by their own signedness and narrow by dropping high bits. The
    low-precision formats convert as ml_dtypes' astype does (see "Low-precision formats" below)."""
    frm = x.type
    if frm == to:
        return x
    if str(frm) in types.LOW_PRECISION or str(to) in types.LOW_PRECISION:
        return _convert_low_precision(x, to)
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


# ----------------------------------------------------------------------------------------------------------
# Low-precision formats
#
# Scalar conversions to and from the low-precision formats (types.LOW_PRECISION), as integer arithmetic on the
# byte each element is stored in: LLVM has no float8/float4 types, and arith's own expansions cover only
# f8E8M0FNU and f4E2M1FN.
#
# In memory every element takes one byte, as ml_dtypes' numpy arrays hold them (the runtime ABI): a float8 is
# its bit pattern, a float4/int4/int2 sits in the low bits with the high bits zero (int4 -3 is 0x0D). A
# scalar body reads such a value through an unrealized cast to i8 and casts its i8 result back to the format,
# casts that glow-ir-to-linalg's `signless_types` drops when it makes every buffer its storage type.
#
# A value leaving a format is decoded exactly: a float format to f32, an integer format to i8 or ui8, then
# converted on by `convert`. A value entering a float format goes to f32 first (rounded to nearest from
# f64 and the wide integers), then to the format's grid to nearest even: f64 rounds twice, as ml_dtypes'
# astype (onnx's reference) does; floats entering an integer format truncate, and integers wrap. Where a result
# leaves the format's range it follows ml_dtypes' astype (overflow to NaN, Inf or the 0x80 NaN of the fnuz
# formats; float4 saturates), except f8E8M0FNU, which follows ONNX's Cast (saturate, round up: the exponent of
# |x|, one more if any fraction bit is set); ONNX's saturating float8 casts clamp in the importer first.


class _FloatFormat(NamedTuple):
    """A float format with a sign bit: its `exponent` and `mantissa` bits, exponent `bias`, the magnitude bits
    of its `largest` finite value, and how it spells what does not fit: `nan` is the magnitude bits of its NaN
    (None: it has none, and a NaN becomes the zero of the opposite sign, as ml_dtypes gives), `overflow` those
    an out-of-range value becomes, `fnuz` whether 0x80 is its one NaN (no -0 nor signed NaN; then the two
    before are unused)."""

    exponent: int
    mantissa: int
    bias: int
    largest: int
    nan: int | None
    overflow: int
    fnuz: bool


_FLOAT_FORMATS = {
    "f8E4M3FN": _FloatFormat(4, 3, 7, 0x7E, 0x7F, 0x7F, False),
    "f8E4M3FNUZ": _FloatFormat(4, 3, 8, 0x7F, 0x00, 0x00, True),
    "f8E5M2": _FloatFormat(5, 2, 15, 0x7B, 0x7E, 0x7C, False),
    "f8E5M2FNUZ": _FloatFormat(5, 2, 16, 0x7F, 0x00, 0x00, True),
    "f4E2M1FN": _FloatFormat(2, 1, 1, 0x07, None, 0x07, False),
}
_E8M0 = "f8E8M0FNU"
# Integer formats: bits, signed.
_INTEGER_FORMATS = {"i4": (4, True), "ui4": (4, False), "i2": (2, True), "ui2": (2, False)}


def _int(bits: int) -> ir.Type:
    return ir.IntegerType.get_signless(bits)


def _eq(a: ir.Value, b: int) -> ir.Value:
    return arith.cmpi(arith.CmpIPredicate.eq, a, constant(a.type, b))


def _byte(x: ir.Value) -> ir.Value:
    """The storage byte of a low-precision value."""
    return builtin.unrealized_conversion_cast([_int(8)], [x])


def _convert_low_precision(x: ir.Value, to: ir.Type) -> ir.Value:
    """`x` converted to `to`, one of them (or both) a low-precision format."""
    if str(x.type) in types.LOW_PRECISION:
        x = _decode(x)
    if str(to) in _INTEGER_FORMATS:
        return typed(_encode_int(x, _INTEGER_FORMATS[str(to)][0]), to)
    if str(to) in _FLOAT_FORMATS or str(to) == _E8M0:
        f32 = convert(x, ir.F32Type.get())
        bits = _encode_e8m0(f32) if str(to) == _E8M0 else _encode_float(f32, _FLOAT_FORMATS[str(to)])
        return typed(arith.trunci(_int(8), bits), to)
    return convert(x, to)


def _decode(x: ir.Value) -> ir.Value:
    """A low-precision value exactly: a float format's as f32, an integer format's as i8 (signed) or ui8."""
    name = str(x.type)
    if name in _INTEGER_FORMATS:
        bits, signed = _INTEGER_FORMATS[name]
        low = arith.andi(_byte(x), constant(_int(8), (1 << bits) - 1))
        if not signed:
            return typed(low, ir.IntegerType.get_unsigned(8))
        spare = constant(_int(8), 8 - bits)
        return arith.shrsi(arith.shli(low, spare), spare)
    i32, f32 = _int(32), ir.F32Type.get()
    byte = arith.extui(i32, _byte(x))
    nan = constant(f32, float("nan"))
    if name == _E8M0:
        # 2^(byte - 127); byte 0 is 2^-127, an f32 subnormal.
        exponent = arith.shli(byte, constant(i32, 23))
        value = arith.bitcast(f32, arith.select(_eq(byte, 0), constant(i32, 0x400000), exponent))
        return arith.select(_eq(byte, 0xFF), nan, value)
    fmt = _FLOAT_FORMATS[name]
    field = fmt.exponent + fmt.mantissa
    magnitude = arith.andi(byte, constant(i32, (1 << field) - 1))
    negative = arith.cmpi(arith.CmpIPredicate.ne, arith.andi(byte, constant(i32, 1 << field)), constant(i32, 0))
    # A normal number's f32 bits: its fields shifted to f32's places, the exponent rebiased.
    normal = arith.addi(
        arith.shli(magnitude, constant(i32, 23 - fmt.mantissa)), constant(i32, (127 - fmt.bias) << 23)
    )
    # A subnormal is mantissa * 2^(1 - bias - mantissa bits), exact in f32.
    mantissa = arith.andi(magnitude, constant(i32, (1 << fmt.mantissa) - 1))
    subnormal = arith.mulf(arith.sitofp(f32, mantissa), constant(f32, 2.0 ** (1 - fmt.bias - fmt.mantissa)))
    is_subnormal = arith.cmpi(arith.CmpIPredicate.ult, magnitude, constant(i32, 1 << fmt.mantissa))
    value = arith.select(is_subnormal, subnormal, arith.bitcast(f32, normal))
    if fmt.fnuz:
        # ml_dtypes reads 0x80 as a NaN with the sign bit set, which a cast to float4 shows (its +0).
        return arith.select(_eq(byte, 0x80), arith.negf(nan), arith.select(negative, arith.negf(value), value))
    if name == "f8E5M2":  # IEEE-like: exponent all ones is Inf (mantissa 0) or NaN
        infinite = arith.cmpi(arith.CmpIPredicate.uge, magnitude, constant(i32, 0x7C))
        special = arith.select(_eq(magnitude, 0x7C), constant(f32, float("inf")), nan)
        value = arith.select(infinite, special, value)
    elif fmt.nan is not None:
        value = arith.select(_eq(magnitude, fmt.nan), nan, value)
    return arith.select(negative, arith.negf(value), value)


def _encode_float(x: ir.Value, fmt: _FloatFormat) -> ir.Value:
    """f32 `x` rounded to nearest even in format `fmt`: its bits in the low byte of an i32."""
    i32, f32 = _int(32), ir.F32Type.get()
    bits = arith.bitcast(i32, x)
    magnitude = arith.andi(bits, constant(i32, 0x7FFFFFFF))
    drop = 23 - fmt.mantissa
    # Normal results: drop f32's low mantissa bits rounding to nearest even (a carry runs into the exponent,
    # as it should), then rebias the exponent.
    tie_even = arith.andi(arith.shrui(magnitude, constant(i32, drop)), constant(i32, 1))
    rounded = arith.addi(magnitude, arith.addi(constant(i32, (1 << (drop - 1)) - 1), tie_even))
    normal = arith.subi(arith.shrui(rounded, constant(i32, drop)), constant(i32, (127 - fmt.bias) << fmt.mantissa))
    # Below the smallest normal the result counts in steps of the smallest subnormal (up to the smallest normal,
    # 1 << mantissa, which has the same bits); scaling by a power of two is exact.
    steps = arith.mulf(math.absf(x), constant(f32, 2.0 ** (fmt.bias + fmt.mantissa - 1)))
    subnormal = arith.fptosi(i32, math.roundeven(steps))
    small = arith.cmpi(arith.CmpIPredicate.ult, magnitude, constant(i32, (128 - fmt.bias) << 23))
    result = arith.select(small, subnormal, normal)
    too_big = arith.cmpi(arith.CmpIPredicate.ugt, result, constant(i32, fmt.largest))
    result = arith.select(too_big, constant(i32, fmt.overflow), result)
    is_nan = arith.cmpi(arith.CmpIPredicate.ugt, magnitude, constant(i32, 0x7F800000))
    sign = arith.shli(arith.shrui(bits, constant(i32, 31)), constant(i32, fmt.exponent + fmt.mantissa))
    if fmt.fnuz:
        # One zero and one NaN, 0x80, which is also where a value out of range goes.
        lost = arith.ori(is_nan, too_big)
        signed = arith.select(_eq(result, 0), result, arith.ori(result, sign))
        return arith.select(lost, constant(i32, 0x80), signed)
    if fmt.nan is None:
        # No NaN: ml_dtypes gives the zero of the opposite sign.
        flipped = arith.xori(sign, constant(i32, 1 << (fmt.exponent + fmt.mantissa)))
        return arith.select(is_nan, flipped, arith.ori(result, sign))
    return arith.ori(arith.select(is_nan, constant(i32, fmt.nan), result), sign)


def _encode_e8m0(x: ir.Value) -> ir.Value:
    """f32 `x` as f8E8M0FNU by ONNX's rule (numpy_helper.to_float8e8m0, saturate, round up): the exponent
    field of x (its sign ignored, 0 and the f32 subnormals at 2^-127), plus one if any mantissa bit is set,
    short of the NaN 0xFF; Inf and NaN become 0xFF."""
    i32 = _int(32)
    bits = arith.bitcast(i32, x)
    exponent = arith.andi(arith.shrui(bits, constant(i32, 23)), constant(i32, 0xFF))
    fraction = arith.cmpi(arith.CmpIPredicate.ne, arith.andi(bits, constant(i32, 0x7FFFFF)), constant(i32, 0))
    up = arith.andi(fraction, arith.cmpi(arith.CmpIPredicate.ult, exponent, constant(i32, 0xFE)))
    return arith.addi(exponent, arith.extui(i32, up))


def e8m0_reference(x: np.ndarray) -> np.ndarray:
    """`_encode_e8m0` in numpy, for the interpreter (ml_dtypes' astype rounds to nearest and makes 0 NaN)."""
    bits = np.asarray(x, np.float32).view(np.uint32)
    exponent = (bits >> 23) & 0xFF
    up = ((bits & 0x7FFFFF) != 0) & (exponent < 0xFE)
    return (exponent + up).astype(np.uint8).view(ml_dtypes.float8_e8m0fnu)


def _encode_int(x: ir.Value, bits: int) -> ir.Value:
    """`x` as a `bits`-bit integer in the low bits of an i8, as ml_dtypes' astype: floats truncate toward zero
    (NaN, Inf and beyond int32 give 0), everything wraps modulo 2^bits (the same low bits for either
    signedness)."""
    i8 = _int(8)
    if is_float(x.type):
        f = x if width(x.type) >= 32 else arith.extf(ir.F32Type.get(), x)
        # ml_dtypes truncates to int32, where x86 gives INT_MIN (low bits 0) for NaN and beyond the range.
        inside = arith.cmpf(arith.CmpFPredicate.OLT, math.absf(f), constant(f.type, 2.0**31))
        whole = arith.trunci(i8, arith.fptosi(_int(32), arith.select(inside, f, constant(f.type, 0.0))))
    elif is_bool(x.type):
        whole = arith.extui(i8, x)
    else:
        value = signless(x)
        whole = value if width(value.type) == 8 else arith.trunci(i8, value)
    return arith.andi(whole, constant(i8, (1 << bits) - 1))


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


# f32 erf: Eigen's and XLA's generic_fast_erf_float, erf(x) = x * P(x^2) / Q(x^2) on x clamped to [-4, 4]
# (erf(4) rounds to 1 in f32), coefficients from the lowest degree up; within 5e-7 of erf over all f32.
ERF_F32_P = (
    -1.60960333262415e-02, -2.95459980854025e-03, -7.34990630326855e-04, -5.69250639462346e-05,
    -2.10102402082508e-06, 2.77068142495902e-08, -2.72614225801306e-10,
)  # fmt: skip
ERF_F32_Q = (-1.42647390514189e-02, -7.37332916720468e-03, -1.68282697438203e-03, -2.13374055278905e-04,
             -1.45660718464996e-05)  # fmt: skip
ERF_F32_CLAMP = 4.0


def fma_horner(coefficients: Sequence[float], x: ir.Value) -> ir.Value:
    """sum_i coefficients[i] * x^i by Horner's rule with fused multiply-adds."""
    total = constant(x.type, coefficients[-1])
    for c in reversed(coefficients[:-1]):
        total = math.fma(total, x, constant(x.type, c))
    return total


def erf_f32(x: ir.Value) -> ir.Value:
    """erf of an f32 value in f32 arithmetic that vectorizes (no f64, no libm call: the f64 form below ran at
    about 14 ns per element, half of wav2vec2's run time), within 5e-7 of erf (it reaches 1 + 2e-7 near
    x = 3, and exactly 1 at the clamp); NaN stays NaN and -0 stays -0 (the clamp keeps x itself within it)."""
    bound = constant(x.type, ERF_F32_CLAMP)
    clamped = at_least(at_most(x, bound), arith.negf(bound))
    square = arith.mulf(clamped, clamped)
    return arith.divf(arith.mulf(clamped, fma_horner(ERF_F32_P, square)), fma_horner(ERF_F32_Q, square))


def erf(x: ir.Value) -> ir.Value:
    """The error function as generated arithmetic (LLVM has no erf intrinsic): f32 by `erf_f32`; other float
    types in f64, accurate to about 1e-10: a series near 0, 1 - erfc beyond. NaN stays NaN, erf(+-inf) =
    +-1."""
    if x.type == ir.F32Type.get():
        return erf_f32(x)
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


def at_least(x: ir.Value, low: ir.Value) -> ir.Value:
    """max(x, low) keeping a NaN x, as x86's maxps(low, x) does: one instruction on a vector, where maximumf
    (which also orders -0 below +0) is a compare and a masked move (a 28x28x192 depthwise layer's kernel with
    a ReLU ran 1.1x faster so). max(-0, +0) may be either zero, as in numpy's maximum."""
    if not is_float(x.type):
        return maximum(x, low)
    return arith.select(arith.cmpf(arith.CmpFPredicate.UGE, x, low), x, low)


def at_most(x: ir.Value, high: ir.Value) -> ir.Value:
    """min(x, high) keeping a NaN x: x86's minps(high, x), as `at_least`."""
    if not is_float(x.type):
        return minimum(x, high)
    return arith.select(arith.cmpf(arith.CmpFPredicate.ULE, x, high), x, high)


def relu(x: ir.Value) -> ir.Value:
    """max(x, 0), NaN kept as numpy's maximum keeps it."""
    return at_least(x, constant(x.type, 0.0))


def clip(x: ir.Value, low: float, high: float) -> ir.Value:
    return at_most(at_least(x, constant(x.type, low)), constant(x.type, high))
