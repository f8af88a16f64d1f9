"""f32 exp, log and tanh as plain arithmetic, so that the vectorizer can vectorize them.

LLVM's x86 backend turns `math.exp`/`log`/`tanh` into calls of the C library's expf/logf/tanhf, one element at
a time, even inside vector code; these MLIR bindings have neither upstream's polynomial-approximation pass nor
its transform op. glow-cpu-schedule therefore replaces every f32 `math.exp`, `math.log` and `math.tanh` with
the Cephes single-precision algorithms (range reduction by powers of two plus a minimax polynomial), which are
within about 2 ulp over the whole range (checked against numpy in test/python/backends/cpu/test_schedule_codegen.py) and
handle the special values as C does: exp overflows to inf and underflows through the subnormals to 0,
log(0) = -inf, log(x < 0) = NaN, log(inf) = inf, tanh saturates at +-1, NaN stays NaN.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mlir import ir
from mlir.dialects import arith, math

from glow_mlir import ops
from glow_mlir.opdefs.scalar import at_least, at_most

LOG2E = 1.44269504088896341
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
SQRT_HALF = 0.707106781186547524


def _f(x: ir.Value, value: float) -> ir.Value:
    return arith.ConstantOp(x.type, ir.FloatAttr.get(x.type, value)).result


def _i(value: int) -> ir.Value:
    i32 = ir.IntegerType.get_signless(32)
    return arith.ConstantOp(i32, ir.IntegerAttr.get(i32, value)).result


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


def exp(x: ir.Value) -> ir.Value:
    """e^x = 2^n * e^r with n = round(x / ln 2), |r| <= ln 2 / 2; 2^n applied in two halves so that results
    in the subnormal range round once and results past the f32 range overflow to inf."""
    i32 = ir.IntegerType.get_signless(32)
    # The clamp keeps n in i32 range (and NaN stays NaN: at_least/at_most keep a NaN x).
    clamped = at_most(at_least(x, _f(x, -104.0)), _f(x, 88.8))
    n = math.floor(math.fma(clamped, _f(x, LOG2E), _f(x, 0.5)))
    r = math.fma(n, _f(x, -LN2_HI), clamped)
    r = math.fma(n, _f(x, -LN2_LO), r)
    p = arith.addf(arith.addf(arith.mulf(arith.mulf(r, r), _poly(EXP_POLY, r)), r), _f(x, 1.0))
    k = arith.fptosi(i32, n)
    half = arith.shrsi(k, _i(1))
    return arith.mulf(arith.mulf(p, _power_of_two(half)), _power_of_two(arith.subi(k, half)))


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
    large = arith.subf(_f(x, 1.0), arith.divf(_f(x, 2.0), arith.addf(exp(arith.addf(a, a)), _f(x, 1.0))))
    near = arith.cmpf(arith.CmpFPredicate.OLT, a, _f(x, TANH_SMALL))
    return arith.select(near, small, math.copysign(large, x))


APPROXIMATIONS: dict[str, Callable[[ir.Value], ir.Value]] = {"math.exp": exp, "math.log": log, "math.tanh": tanh}


def approximate(root: ir.Operation) -> None:
    """Replaces every scalar f32 math.exp, math.log and math.tanh under `root` with its arithmetic."""
    f32 = ir.F32Type.get()
    for op in ops.walk_ops(root):
        build = APPROXIMATIONS.get(op.name)
        if build is None or op.results[0].type != f32:
            continue
        with op.location, ir.InsertionPoint(op):
            op.results[0].replace_all_uses_with(build(op.operands[0]))
        op.erase()
