"""f32 exp, log, tanh, sin, cos and pow as plain arithmetic, so that the vectorizer can vectorize them.

LLVM's x86 backend turns `math.exp`/`log`/`tanh`/`sin`/`cos` into calls of the C library's expf/logf/...,
one element at a time, even inside vector code; these MLIR bindings have neither upstream's
polynomial-approximation pass nor its transform op. glow-cpu-schedule therefore replaces every f32 one with
the Cephes single-precision algorithms (range reduction plus a minimax polynomial), which are within about 2
ulp over the whole range (checked against numpy in test/python/backends/cpu/test_schedule_codegen.py) and
handle the special values as C does: exp overflows to inf and underflows through the subnormals to 0,
log(0) = -inf, log(x < 0) = NaN, log(inf) = inf, tanh saturates at +-1, NaN stays NaN, sin and cos of an
infinity are NaN.

sin and cos reduce x by the nearest multiple of pi/2 in f64 (x - k pi/2 with pi/2 in two parts, by fused
multiply-adds: exact to about 1e-16 for |x| < 2^52, where k is exact), then take Cephes' polynomials on
[-pi/4, pi/4] in f32 and pick sin or cos, and the sign, by k mod 4. An f32 x of 2^52 or more (its neighbours
2^29 and more apart) has no k that f64 resolves: those give NaN rather than a wrong number.

pow (`pow_`) computes |a|^b = e^(b ln|a|) in f64, whose ln and exp (an atanh series, a Taylor polynomial) are
good to about 1e-16, so the f32 result is rounded once from a far more precise value: within an ulp of the
exact power, where an f32 ln and exp would lose |b ln a| ulps (LRN's x^-0.75 took 3.3 ns an element through
libm's powf, 38 % of that model; 1.35 ns so). powf's special cases (negative bases with integer exponents,
zeros, infinities, NaN, pow(x, 0) = pow(1, y) = 1) are selects after it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import factorial

from mlir import ir
from mlir.dialects import arith, math

from glow_mlir import ops
from glow_mlir.opdefs.scalar import at_least, at_most, logical_not

LOG2E = 1.44269504088896341
# x + ROUNDING rounds x (|x| < 2^22) to an integer held in the sum's low mantissa bits; ROUNDING_BITS are its own.
ROUNDING = 12582912.0
ROUNDING_BITS = 0x4B400000
# ln 2 = LN2_HI + LN2_LO, with LN2_HI exact in few bits so that n * LN2_HI is exact (Cody-Waite).
LN2_HI = 0.693359375
LN2_LO = -2.12194440e-4
EXP_POLY = (5.0000001201e-1, 1.6666665459e-1, 4.1665795894e-2, 8.3334519073e-3, 1.3981999507e-3, 1.9875691500e-4)
LOG_POLY = (
    3.3333331174e-1, -2.4999993993e-1, 2.0000714765e-1, -1.6668057665e-1, 1.4249322787e-1,
    -1.2420140846e-1, 1.1676998740e-1, -1.1514610310e-1, 7.0376836292e-2,
)  # fmt: skip
TANH_POLY = (-3.33332819422e-1, 1.33314422036e-1, -5.37397155531e-2, 2.06390887954e-2, -5.70498872745e-3)
TANH_SMALL = 0.625
# sin r = r + r^3 SIN_POLY(r^2), cos r = 1 - r^2 / 2 + r^4 COS_POLY(r^2) on |r| <= pi/4 (Cephes sinf, cosf).
SIN_POLY = (-1.6666654611e-1, 8.3321608736e-3, -1.9515295891e-4)
COS_POLY = (4.166664568298827e-2, -1.388731625493765e-3, 2.443315711809948e-5)
# pi/2 = PIO2_HI + PIO2_LO to about 2^-107; k PIO2_HI is exact in a fused multiply-add for |k| < 2^53.
PIO2_HI = 1.5707963267948966
PIO2_LO = 6.123233995736766e-17
TWO_OVER_PI = 0.6366197723675814
TRIG_LIMIT = 2.0**52
SQRT_HALF = 0.707106781186547524
# pow's f64 ln and exp (`pow_`): ln 2, and ln 2 = LN2_HI_F64 + LN2_LO_F64 with n LN2_HI_F64 exact for |n| < 2^20.
LN2 = 0.6931471805599453
LN2_HI_F64 = 0.6931471803691238
LN2_LO_F64 = 1.9082149292705877e-10
POW_LOG_TERMS = 10
POW_EXP_TERMS = 14
# e^t for |t| beyond this is 0 or inf in f32 (and 2^n stays an f64 normal).
POW_EXP_LIMIT = 200.0


def _f(x: ir.Value, value: float) -> ir.Value:
    return arith.ConstantOp(x.type, ir.FloatAttr.get(x.type, value)).result


def _i(value: int, bits: int = 32) -> ir.Value:
    signless = ir.IntegerType.get_signless(bits)
    return arith.ConstantOp(signless, ir.IntegerAttr.get(signless, value)).result


def _poly(coefficients: Sequence[float], x: ir.Value) -> ir.Value:
    """sum_i coefficients[i] * x^i (Horner, with fused multiply-adds)."""
    total = _f(x, coefficients[-1])
    for c in reversed(coefficients[:-1]):
        total = math.fma(total, x, _f(x, c))
    return total


def _power_of_two(n: ir.Value) -> ir.Value:
    """2^n as an f32, for an i32 n in [-126, 127]: the exponent field built directly."""
    bits = arith.shli(arith.addi(n, _i(127)), _i(23))
    return arith.bitcast(ir.F32Type.get(), bits)


def _reduced(x: ir.Value, low: float) -> tuple[ir.Value, ir.Value]:
    """(x log2 e + ROUNDING, e^r) for x clamped to [low, 88.8], n = round(x / ln 2) and r = x - n ln 2.

    n is rounded by adding ROUNDING (1.5 x 2^23): the sum's low mantissa bits are n itself, so that n as an
    integer is a bitcast and a subtraction; floor and a float-to-int conversion took 11 cycles a 16-lane vector
    where onnxruntime's exp took 8. NaN stays NaN (at_least/at_most keep a NaN x)."""
    clamped = at_most(at_least(x, _f(x, low)), _f(x, 88.8))
    shifted = math.fma(clamped, _f(x, LOG2E), _f(x, ROUNDING))
    n = arith.subf(shifted, _f(x, ROUNDING))
    r = math.fma(n, _f(x, -LN2_HI), clamped)
    r = math.fma(n, _f(x, -LN2_LO), r)
    return shifted, arith.addf(math.fma(arith.mulf(r, r), _poly(EXP_POLY, r), r), _f(x, 1.0))


def exp(x: ir.Value) -> ir.Value:
    """e^x = 2^n * e^r with |r| <= ln 2 / 2 (`_reduced`); 2^n applied in two halves so that results in the
    subnormal range round once and results past the f32 range overflow to inf: the first half goes into e^r's
    exponent field (e^r is in [0.7, 1.42] and that half at least -76: a normal number)."""
    i32 = ir.IntegerType.get_signless(32)
    # The clamp keeps n in [-151, 128].
    shifted, p = _reduced(x, -104.0)
    k = arith.subi(arith.bitcast(i32, shifted), _i(ROUNDING_BITS))
    half = arith.shrsi(k, _i(1))
    scaled = arith.bitcast(x.type, arith.addi(arith.bitcast(i32, p), arith.shli(half, _i(23))))
    return arith.mulf(scaled, _power_of_two(arith.subi(k, half)))


def exp_approximate(x: ir.Value) -> ir.Value:
    """e^x for a math.exp marked `afn` (approximate functions): `exp`'s reduction and polynomial, 2^n applied
    once, so that results under 2^-126 flush to zero (n = -127 builds a zero scale) and n = 128 (x > 88.37)
    overflows to inf. Sigmoid's e^-|x| takes it: 5 vector instructions fewer than `exp`."""
    i32 = ir.IntegerType.get_signless(32)
    shifted, p = _reduced(x, -88.0)
    # The sum's bits are ROUNDING_BITS + n, whose ROUNDING_BITS part the shift by 23 pushes out: (n + 127) << 23.
    scale = arith.bitcast(x.type, arith.shli(arith.addi(arith.bitcast(i32, shifted), _i(127)), _i(23)))
    return arith.mulf(p, scale)


def log(x: ir.Value) -> ir.Value:
    """ln x = e ln 2 + ln m, with x = m 2^e and m in [sqrt(1/2), sqrt(2)); subnormal x scaled up first."""
    i32 = ir.IntegerType.get_signless(32)
    f32 = ir.F32Type.get()
    tiny = arith.cmpf(arith.CmpFPredicate.OLT, x, _f(x, 1.1754943508222875e-38))
    scaled = arith.select(tiny, arith.mulf(x, _f(x, 8388608.0)), x)
    bits = arith.bitcast(i32, scaled)
    exponent = arith.subi(arith.shrui(bits, _i(23)), _i(127))
    exponent = arith.select(tiny, arith.subi(exponent, _i(23)), exponent)
    # m in [1, 2): the mantissa bits with a zero exponent; above sqrt(2), halve m and bump the exponent.
    m = arith.bitcast(f32, arith.ori(arith.andi(bits, _i(0x007FFFFF)), _i(0x3F800000)))
    big = arith.cmpf(arith.CmpFPredicate.OGT, m, _f(x, 2 * SQRT_HALF))
    m = arith.select(big, arith.mulf(m, _f(x, 0.5)), m)
    e = arith.sitofp(f32, arith.select(big, arith.addi(exponent, _i(1)), exponent))
    f = arith.subf(m, _f(x, 1.0))
    z = arith.mulf(f, f)
    y = arith.mulf(arith.mulf(f, z), _poly(LOG_POLY, f))
    y = math.fma(e, _f(x, LN2_LO), y)
    y = math.fma(z, _f(x, -0.5), y)
    result = math.fma(e, _f(x, LN2_HI), arith.addf(f, y))
    # log(0) = -inf, log(inf) = inf, log(x < 0) = log(NaN) = NaN.
    result = arith.select(arith.cmpf(arith.CmpFPredicate.OEQ, x, _f(x, 0.0)), _f(x, float("-inf")), result)
    result = arith.select(arith.cmpf(arith.CmpFPredicate.OEQ, x, _f(x, float("inf"))), x, result)
    nan = arith.cmpf(arith.CmpFPredicate.ULT, x, _f(x, 0.0))
    return arith.select(nan, _f(x, float("nan")), result)


def tanh(x: ir.Value) -> ir.Value:
    """An odd polynomial for |x| < 0.625 (no cancellation near 0), 1 - 2 / (e^2|x| + 1) beyond, sign copied."""
    a = math.absf(x)
    z = arith.mulf(x, x)
    small = math.fma(arith.mulf(z, x), _poly(TANH_POLY, z), x)
    large = arith.subf(_f(x, 1.0), arith.divf(_f(x, 2.0), arith.addf(exp_approximate(arith.addf(a, a)), _f(x, 1.0))))
    near = arith.cmpf(arith.CmpFPredicate.OLT, a, _f(x, TANH_SMALL))
    return arith.select(near, small, math.copysign(large, x))


def _quadrant(x: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value]:
    """(sin r, cos r, k mod 4, in range) for x = k pi/2 + r, |r| <= pi/4; k mod 4 as an f64 in {0, 1, 2, 3}."""
    f32, f64 = ir.F32Type.get(), ir.F64Type.get()
    wide = arith.extf(f64, x)
    k = math.roundeven(arith.mulf(wide, _f(wide, TWO_OVER_PI)))
    minus_k = arith.negf(k)
    r = arith.truncf(f32, math.fma(minus_k, _f(wide, PIO2_LO), math.fma(minus_k, _f(wide, PIO2_HI), wide)))
    quarter = math.fma(math.floor(arith.mulf(k, _f(wide, 0.25))), _f(wide, -4.0), k)
    in_range = arith.cmpf(arith.CmpFPredicate.OLT, math.absf(wide), _f(wide, TRIG_LIMIT))
    z = arith.mulf(r, r)
    sin_r = math.fma(arith.mulf(z, r), _poly(SIN_POLY, z), r)
    cos_r = math.fma(arith.mulf(z, z), _poly(COS_POLY, z), math.fma(z, _f(x, -0.5), _f(x, 1.0)))
    return sin_r, cos_r, quarter, in_range


def _trig(x: ir.Value, odd_takes_sin: bool, negative: Sequence[int]) -> ir.Value:
    """sin or cos from x's quadrant: the odd quadrants take the other polynomial; `negative` quadrants flip
    the sign; NaN out of range (an infinity's k is too: NaN)."""
    sin_r, cos_r, quarter, in_range = _quadrant(x)

    def quadrant_is(q: int) -> ir.Value:
        return arith.cmpf(arith.CmpFPredicate.OEQ, quarter, _f(quarter, float(q)))

    odd = arith.ori(quadrant_is(1), quadrant_is(3))
    value = arith.select(odd, sin_r, cos_r) if odd_takes_sin else arith.select(odd, cos_r, sin_r)
    flip = arith.ori(quadrant_is(negative[0]), quadrant_is(negative[1]))
    value = arith.select(flip, arith.negf(value), value)
    return arith.select(in_range, value, _f(x, float("nan")))


def sin(x: ir.Value) -> ir.Value:
    """sin x: sin r, cos r, -sin r, -cos r in quadrants 0-3; sin(-0) = -0."""
    value = _trig(x, False, (2, 3))
    return arith.select(arith.cmpf(arith.CmpFPredicate.OEQ, x, _f(x, 0.0)), x, value)


def cos(x: ir.Value) -> ir.Value:
    """cos x: cos r, -sin r, -cos r, sin r in quadrants 0-3."""
    return _trig(x, True, (1, 2))


def _log_f64(x: ir.Value) -> ir.Value:
    """ln x for an f64 x > 0 that is a widened f32 (normal in f64): x = m 2^e, m in [sqrt(1/2), sqrt(2)),
    ln m = 2 atanh(s) with s = (m - 1) / (m + 1), |s| <= 0.1716: POW_LOG_TERMS odd powers of s, about 1e-16
    relative."""
    i64 = ir.IntegerType.get_signless(64)
    bits = arith.bitcast(i64, x)
    exponent = arith.subi(arith.shrui(bits, _i(52, 64)), _i(1023, 64))
    mantissa = arith.andi(bits, _i(0x000FFFFFFFFFFFFF, 64))
    m = arith.bitcast(x.type, arith.ori(mantissa, _i(0x3FF0000000000000, 64)))
    big = arith.cmpf(arith.CmpFPredicate.OGT, m, _f(x, 2 * SQRT_HALF))
    m = arith.select(big, arith.mulf(m, _f(x, 0.5)), m)
    e = arith.sitofp(x.type, arith.select(big, arith.addi(exponent, _i(1, 64)), exponent))
    s = arith.divf(arith.subf(m, _f(x, 1.0)), arith.addf(m, _f(x, 1.0)))
    series = _poly([1.0 / (2 * k + 1) for k in range(POW_LOG_TERMS)], arith.mulf(s, s))
    return math.fma(e, _f(x, LN2), arith.mulf(arith.mulf(s, _f(x, 2.0)), series))


def _exp_f64(t: ir.Value) -> ir.Value:
    """e^t for an f64 t in [-POW_EXP_LIMIT, POW_EXP_LIMIT]: 2^n e^r, |r| <= ln 2 / 2, a Taylor polynomial of
    POW_EXP_TERMS terms (about 1e-16), 2^n built in the exponent field."""
    i64 = ir.IntegerType.get_signless(64)
    n = math.roundeven(arith.mulf(t, _f(t, LOG2E)))
    r = math.fma(n, _f(t, -LN2_HI_F64), t)
    r = math.fma(n, _f(t, -LN2_LO_F64), r)
    taylor = _poly([1.0 / factorial(k) for k in range(POW_EXP_TERMS)], r)
    scale = arith.bitcast(t.type, arith.shli(arith.addi(arith.fptosi(i64, n), _i(1023, 64)), _i(52, 64)))
    return arith.mulf(taylor, scale)


def pow_(a: ir.Value, b: ir.Value) -> ir.Value:
    """a^b as C's powf: |a|^b = e^(b ln|a|) in f64 (ln and exp to about 1e-16, so the f32 result is rounded
    once from a value about 2^29 times more precise), then the cases powf states: a negative a takes b's parity
    where b is an integer and is NaN otherwise; b = 0 or a = 1 give 1 (a NaN other operand included); a = -1
    with an infinite b gives 1; a = +-0 gives 0 or inf by b's sign (an odd integer b keeping a's sign); an
    infinite a gives inf or 0 by b's sign (likewise signed); otherwise a NaN operand gives NaN."""
    f32, f64 = ir.F32Type.get(), ir.F64Type.get()
    magnitude = math.absf(a)
    wide_a, wide_b = arith.extf(f64, magnitude), arith.extf(f64, b)
    t = arith.mulf(wide_b, _log_f64(wide_a))
    t = at_most(at_least(t, _f(t, -POW_EXP_LIMIT)), _f(t, POW_EXP_LIMIT))
    value = arith.truncf(f32, _exp_f64(t))

    def cmp(predicate: arith.CmpFPredicate, x: ir.Value, y: float) -> ir.Value:
        return arith.cmpf(predicate, x, _f(x, y))

    # An infinite b counts as an (even) integer, as in powf.
    integer = arith.cmpf(arith.CmpFPredicate.OEQ, b, math.floor(b))
    # An f32 of magnitude 2^24 or more is an even integer; below, its parity is its i32's.
    small = cmp(arith.CmpFPredicate.OLT, math.absf(b), 16777216.0)
    i32 = ir.IntegerType.get_signless(32)
    odd_bit = arith.trunci(ir.IntegerType.get_signless(1), arith.fptosi(i32, arith.select(small, b, _f(b, 0.0))))
    odd = arith.andi(arith.andi(integer, small), odd_bit)
    negative = cmp(arith.CmpFPredicate.OLT, a, 0.0)
    signed = arith.select(arith.andi(negative, odd), arith.negf(value), value)
    value = arith.select(arith.andi(negative, logical_not(integer)), _f(a, float("nan")), signed)
    # |a| = 0 or inf: 0 or inf by b's sign (and |a|'s size), the sign of a where b is an odd integer.
    positive_b = cmp(arith.CmpFPredicate.OGT, b, 0.0)
    zero = cmp(arith.CmpFPredicate.OEQ, magnitude, 0.0)
    infinite = cmp(arith.CmpFPredicate.OEQ, magnitude, float("inf"))
    extreme = arith.select(arith.xori(zero, positive_b), _f(a, float("inf")), _f(a, 0.0))
    extreme = arith.select(odd, math.copysign(extreme, a), extreme)
    value = arith.select(arith.ori(zero, infinite), extreme, value)
    one = arith.ori(cmp(arith.CmpFPredicate.OEQ, b, 0.0), cmp(arith.CmpFPredicate.OEQ, a, 1.0))
    one = arith.ori(one, arith.andi(cmp(arith.CmpFPredicate.OEQ, a, -1.0),
                                    cmp(arith.CmpFPredicate.OEQ, math.absf(b), float("inf"))))  # fmt: skip
    value = arith.select(one, _f(a, 1.0), value)
    nan = arith.ori(cmp(arith.CmpFPredicate.UNO, a, 0.0), cmp(arith.CmpFPredicate.UNO, b, 0.0))
    return arith.select(arith.andi(nan, logical_not(one)), _f(a, float("nan")), value)


APPROXIMATIONS: dict[str, Callable[..., ir.Value]] = {
    "math.exp": exp, "math.log": log, "math.tanh": tanh, "math.sin": sin, "math.cos": cos, "math.powf": pow_,
}  # fmt: skip


def approximate(root: ir.Operation) -> None:
    """Replaces every scalar f32 math op of APPROXIMATIONS under `root` with its arithmetic."""
    f32 = ir.F32Type.get()
    for op in ops.walk_ops(root):
        build = APPROXIMATIONS.get(op.name)
        if build is None or op.results[0].type != f32:
            continue
        if build is exp and "afn" in str(op.attributes["fastmath"]):
            build = exp_approximate
        with op.location, ir.InsertionPoint(op):
            op.results[0].replace_all_uses_with(build(*op.operands))
        op.erase()
