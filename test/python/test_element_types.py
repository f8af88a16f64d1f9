"""Unsigned integers, bfloat16 and the low-precision formats through every stage: builder and type rules, the
reference interpreter, compiled code (compared with numpy / ml_dtypes, not only with the interpreter)."""

from __future__ import annotations

from collections.abc import Callable

import ml_dtypes
import numpy as np
import onnx.numpy_helper
import pytest
from mlir import ir

import glow_mlir
from glow_mlir import ops

UNSIGNED = [np.uint8, np.uint16, np.uint32, np.uint64]
rng = np.random.default_rng(0)


def _run(build: Callable[..., dict[str, glow_mlir.Tensor]], feeds: dict[str, np.ndarray]) -> tuple[dict, dict]:
    """The compiled model's and the interpreter's outputs of the graph `build(g, *inputs)` makes."""
    g = glow_mlir.Graph("types")
    inputs = [g.input(name, a.shape, a.dtype) for name, a in feeds.items()]
    for name, t in build(g, *inputs).items():
        g.output(name, t)
    return glow_mlir.compile(g, progress=False).run(feeds), glow_mlir.interpret(g.module, feeds)


def _same(got: dict[str, np.ndarray], expected: dict[str, np.ndarray]) -> None:
    for name, e in expected.items():
        assert got[name].dtype == e.dtype, name
        np.testing.assert_array_equal(got[name], e, err_msg=name)


@pytest.mark.parametrize("dt", UNSIGNED)
def test_unsigned_arithmetic_and_comparisons(dt: type) -> None:
    high = np.iinfo(dt).max
    x = rng.integers(0, high, (3, 16), dtype=dt, endpoint=True)
    y = rng.integers(0, high, (3, 16), dtype=dt, endpoint=True)
    x[0, :4] = [high, high, 0, 7]
    y[0, :4] = [0, 1, high, high]  # division by zero gives 0, as numpy's
    with np.errstate(all="ignore"):
        expected = {
            "add": x + y, "sub": x - y, "mul": x * y, "div": np.where(y == 0, 0, x // np.maximum(y, 1)).astype(dt),
            "max": np.maximum(x, y), "min": np.minimum(x, y), "lt": x < y, "lte": x <= y, "eq": x == y,
            "f32": x.astype(np.float32), "i64": x.astype(np.int64), "i8": x.astype(np.int8), "neg": -x,
            "back": (x >> dt(4)).astype(np.float64).astype(dt),
        }  # fmt: skip

    def build(g: glow_mlir.Graph, a: glow_mlir.Tensor, b: glow_mlir.Tensor, c: glow_mlir.Tensor) -> dict:
        return {
            "add": g.add(a, b), "sub": g.sub(a, b), "mul": g.mul(a, b), "div": g.div(a, b), "max": g.max(a, b),
            "min": g.min(a, b), "lt": g.cmp_lt(a, b), "lte": g.cmp_lte(a, b), "eq": g.cmp_eq(a, b),
            "f32": g.convert_to(a, "f32"), "i64": g.convert_to(a, "i64"), "i8": g.convert_to(a, "i8"),
            "neg": g.neg(a), "back": g.convert_to(g.convert_to(c, "f64"), np.dtype(dt)),
        }  # fmt: skip

    # (float -> unsigned is exact in range; 2^64 - 1 is not in float64's, so `back` converts x >> 4.)
    got, interpreted = _run(build, {"x": x, "y": y, "z": x >> dt(4)})
    _same(got, expected)
    _same(interpreted, expected)


def test_unsigned_constants_and_splats_keep_their_high_values() -> None:
    x = np.array([0, 1, 200, 255], np.uint8)
    expected = {"c": np.array([255, 2, 200, 255], np.uint8), "s": np.array([250, 250, 250, 250], np.uint8)}

    def build(g: glow_mlir.Graph, a: glow_mlir.Tensor) -> dict[str, glow_mlir.Tensor]:
        splat = g.splat([4], 250, "ui8")
        return {"c": g.max(a, g.constant(np.array([255, 2, 3, 4], np.uint8))), "s": g.min(g.max(a, splat), splat)}

    got, interpreted = _run(build, {"x": x})
    _same(got, expected)
    _same(interpreted, expected)


def _shift(x: np.ndarray, amount: np.ndarray, left: bool) -> np.ndarray:
    """ONNX's BitShift: 0 (or the sign, right-shifting a negative signed value) beyond the width."""
    bits = x.dtype.itemsize * 8
    inside = (amount >= 0) & (amount < bits)
    kept = np.where(inside, amount, 0)
    unsigned = x.view(np.dtype(f"u{x.dtype.itemsize}"))
    if left:
        shifted = (unsigned.astype(object) << kept.astype(object)) % (1 << bits)
        return np.where(inside, shifted.astype(unsigned.dtype).view(x.dtype), 0).astype(x.dtype)
    beyond = np.where(x < 0, x.dtype.type(-1) if x.dtype.kind == "i" else 0, 0).astype(x.dtype)
    return np.where(inside, x >> kept.astype(x.dtype), beyond)


@pytest.mark.parametrize("dt", [np.int8, np.int32, np.int64, np.uint8, np.uint16, np.uint64])
def test_bitwise_ops_and_shifts(dt: type) -> None:
    info = np.iinfo(dt)
    x = rng.integers(info.min, info.max, (2, 20), dtype=dt, endpoint=True)
    y = rng.integers(info.min, info.max, (2, 20), dtype=dt, endpoint=True)
    bits = info.bits
    amount = np.array([0, 1, bits - 1, bits, bits + 3, *range(15)] * 2, dt)[:40].reshape(2, 20)
    if info.min < 0:
        amount[1, :3] = [-1, -bits, info.min]
    expected = {
        "and": x & y, "or": x | y, "xor": x ^ y, "not": ~x,
        "shl": _shift(x, amount, True), "shr": _shift(x, amount, False),
    }  # fmt: skip

    def build(g: glow_mlir.Graph, a: glow_mlir.Tensor, b: glow_mlir.Tensor, n: glow_mlir.Tensor) -> dict:
        return {
            "and": g.bitwise_and(a, b), "or": g.bitwise_or(a, b), "xor": g.bitwise_xor(a, b), "not": g.bitwise_not(a),
            "shl": g.shift_left(a, n), "shr": g.shift_right(a, n),
        }  # fmt: skip

    got, interpreted = _run(build, {"x": x, "y": y, "n": amount})
    _same(got, expected)
    _same(interpreted, expected)


def test_bitwise_ops_refuse_floats() -> None:
    g = glow_mlir.Graph("f")
    x = g.input("x", (2,), "f32")
    with pytest.raises(ValueError, match="must be an integer"):
        g.bitwise_and(x, x)


def _f32_sweep() -> np.ndarray:
    """float32 values around every bf16 rounding case: ties (to even and odd), one ulp either side, subnormals,
    the largest values (overflow to inf), zeros, infinities and NaN."""
    bf16_bits = rng.integers(0, 1 << 16, 4000, dtype=np.uint32)
    base = (bf16_bits << 16).astype(np.uint32)
    near = np.concatenate([base, base | 0x8000, (base | 0x8000) + 1, (base | 0x8000) - 1, base | 0x7FFF, base + 1])
    specials = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F7FFFFF, 0x7F7F8000, 0x00000001,
                         0x00008000, 0x00018000, 0x007FFFFF], np.uint32)  # fmt: skip
    values = np.concatenate([near, specials]).view(np.float32)
    return np.resize(values, (len(values) + 7) // 8 * 8).reshape(-1, 8)


def test_float32_to_bfloat16_rounds_to_nearest_even() -> None:
    x = _f32_sweep()
    with np.errstate(all="ignore"):
        expected = x.astype(ml_dtypes.bfloat16)
    got, interpreted = _run(lambda g, a: {"y": g.convert_to(a, "bf16")}, {"x": x})
    for result in (got["y"], interpreted["y"]):
        assert result.dtype == expected.dtype
        nan = np.isnan(expected.astype(np.float32))
        assert np.array_equal(np.isnan(result.astype(np.float32)), nan)
        np.testing.assert_array_equal(result.view(np.uint16)[~nan], expected.view(np.uint16)[~nan])


def test_float64_to_bfloat16_rounds_once() -> None:
    # Just above a bf16 tie in float64, exactly on it after rounding to float32: must round up.
    tie = 1.0 + 2.0**-8
    # (ml_dtypes' astype rounds through float32, twice: it gives 1.0 for the first.)
    x = np.array([tie + 2.0**-40, tie - 2.0**-40, -(tie + 2.0**-40), 3.0, 1e300, np.nan, 1e-300, 0.1], np.float64)
    expected = np.array([1 + 2.0**-7, 1.0, -(1 + 2.0**-7), 3.0, np.inf, np.nan, 0.0, 0.10009765625])
    got, _ = _run(lambda g, a: {"y": g.convert_to(a, "bf16")}, {"x": x})
    np.testing.assert_array_equal(got["y"].astype(np.float64), expected)


def test_bfloat16_arithmetic_rounds_once_from_float32() -> None:
    x = rng.normal(0, 10, (4, 16)).astype(ml_dtypes.bfloat16)
    y = rng.normal(0, 10, (4, 16)).astype(ml_dtypes.bfloat16)
    x32, y32 = x.astype(np.float32), y.astype(np.float32)
    expected = {
        "add": (x32 + y32).astype(ml_dtypes.bfloat16), "mul": (x32 * y32).astype(ml_dtypes.bfloat16),
        "div": (x32 / y32).astype(ml_dtypes.bfloat16), "lt": x32 < y32, "f16": x32.astype(np.float16),
        "i32": np.trunc(x32).astype(np.int32),
    }  # fmt: skip

    def build(g: glow_mlir.Graph, a: glow_mlir.Tensor, b: glow_mlir.Tensor) -> dict[str, glow_mlir.Tensor]:
        return {
            "add": g.add(a, b), "mul": g.mul(a, b), "div": g.div(a, b), "lt": g.cmp_lt(a, b),
            "f16": g.convert_to(a, "f16"), "i32": g.convert_to(a, "i32"),
        }  # fmt: skip

    got, interpreted = _run(build, {"x": x, "y": y})
    _same(got, expected)
    _same(interpreted, expected)


LOW_PRECISION = {
    "f8E4M3FN": ml_dtypes.float8_e4m3fn, "f8E4M3FNUZ": ml_dtypes.float8_e4m3fnuz, "f8E5M2": ml_dtypes.float8_e5m2,
    "f8E5M2FNUZ": ml_dtypes.float8_e5m2fnuz, "f8E8M0FNU": ml_dtypes.float8_e8m0fnu,
    "f4E2M1FN": ml_dtypes.float4_e2m1fn, "i4": ml_dtypes.int4, "ui4": ml_dtypes.uint4, "i2": ml_dtypes.int2,
    "ui2": ml_dtypes.uint2, "bf16": ml_dtypes.bfloat16,
}  # fmt: skip


@pytest.mark.parametrize("spelling", sorted(LOW_PRECISION))
def test_dense_attributes_hold_every_bit_pattern(spelling: str) -> None:
    dt = np.dtype(LOW_PRECISION[spelling])
    bits = {"i4": 16, "ui4": 16, "f4E2M1FN": 16, "i2": 4, "ui2": 4}.get(spelling, 256)
    storage = np.uint16 if dt.itemsize == 2 else np.uint8
    patterns = (np.arange(bits) if dt.itemsize == 1 else rng.integers(0, 1 << 16, 500)).astype(storage)
    values = patterns.view(dt)
    with ir.Context(), ir.Location.unknown():
        assert ops.numpy_dtype(ir.Type.parse(spelling)) == dt
        for array in (values, values[:1], np.full(3, values[1], dt)):
            back = ops.dense_array(ops.dense_attr(array, ir.RankedTensorType.get([array.size], ir.Type.parse(spelling))))
            floats = array.astype(np.float32)
            same = (back.view(storage) == array.view(storage)) | (np.isnan(floats) & np.isnan(back.astype(np.float32)))
            assert same.all(), spelling


def test_low_precision_conversions_fold_like_onnx_reference() -> None:
    """The interpreter (constant folding) converts as onnx's reference does: ml_dtypes' astype, but to
    float8e8m0 by ONNX's default rule (numpy_helper.to_float8e8m0: saturate, round up)."""
    x = np.array([0.3, -2.5, 448.0, 1e6, -1e-9, np.nan, np.inf], np.float32)
    g = glow_mlir.Graph("fold")
    inp = g.input("x", x.shape, "f32")
    for spelling, dt in LOW_PRECISION.items():
        g.output(spelling, g.convert_to(g.convert_to(inp, spelling), "f32"))
    out = glow_mlir.interpret(g.module, {"x": x})
    for spelling, dt in LOW_PRECISION.items():
        expected = onnx.numpy_helper.to_float8e8m0(x) if spelling == "f8E8M0FNU" else x.astype(dt)
        np.testing.assert_array_equal(out[spelling], expected.astype(np.float32), err_msg=spelling)
