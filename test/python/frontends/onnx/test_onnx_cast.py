"""Cast and CastLike to and from the low-precision formats (float8, float8e8m0, float4, int4/int2) on run-time
values, as generated code, bit for bit against onnx's reference implementation (onnxruntime lacks most of
them): every bit pattern of each format as the source, and dense sweeps of float32 (and other types) around
each format's values, midpoints, range ends and specials as the source of a cast to it; and the ops that fill
a tensor of a format with a value (Pad, ConstantOfShape)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper
from onnx.reference import ReferenceEvaluator
from onnx_check import IR_VERSION

import glow_mlir
from glow_mlir.errors import UnsupportedAttributeError
from glow_mlir.frontends.onnx import import_model
from glow_mlir.frontends.onnx.node import ONNX_TO_NUMPY

FLOAT8 = (TP.FLOAT8E4M3FN, TP.FLOAT8E4M3FNUZ, TP.FLOAT8E5M2, TP.FLOAT8E5M2FNUZ)
# Each low-precision format with the number of bits of its patterns.
FORMATS = {
    **{t: 8 for t in FLOAT8}, TP.FLOAT8E8M0: 8, TP.FLOAT4E2M1: 4, TP.INT4: 4, TP.UINT4: 4, TP.INT2: 2, TP.UINT2: 2
}  # fmt: skip
FLOATS = (TP.FLOAT, TP.DOUBLE, TP.FLOAT16, TP.BFLOAT16)
INTEGERS = (TP.INT8, TP.INT16, TP.INT32, TP.INT64, TP.UINT8, TP.UINT16, TP.UINT32, TP.UINT64)
NUMPY_TO_ONNX = {d: t for t, d in ONNX_TO_NUMPY.items()}
rng = np.random.default_rng(7)


def name(t: int) -> str:
    return TP.DataType.Name(t)


def is_float_format(t: int) -> bool:
    return t in FLOAT8 or t in (TP.FLOAT8E8M0, TP.FLOAT4E2M1)


def run(nodes: list[onnx.NodeProto], feeds: dict[str, np.ndarray], outputs: list[tuple[str, int]]) -> None:
    """Runs the model of `nodes` through glow-mlir and onnx's reference; every output must match bit for bit
    (a NaN anywhere in a NaN's place)."""
    graph = helper.make_graph(
        nodes,
        "cast",
        [helper.make_tensor_value_info(n, NUMPY_TO_ONNX[a.dtype], a.shape) for n, a in feeds.items()],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)], ir_version=IR_VERSION)
    expected = ReferenceEvaluator(m).run(None, feeds)
    with glow_mlir.compile(import_model(m)) as compiled:
        got = compiled.run(feeds)
    for (out, _), e in zip(outputs, expected, strict=True):
        same(got[out], np.asarray(e), out, feeds)


def same(got: np.ndarray, expected: np.ndarray, what: str, feeds: dict[str, np.ndarray]) -> None:
    assert got.dtype == expected.dtype and got.shape == expected.shape, what
    if expected.dtype.kind in "biu":
        bad = got != expected
    else:
        nan = np.isnan(expected.astype(np.float64))
        bits = np.dtype(f"uint{8 * expected.dtype.itemsize}")
        bad = np.where(nan, ~np.isnan(got.astype(np.float64)), got.view(bits) != expected.view(bits))
    if bad.any():
        where = np.flatnonzero(bad)[:8]
        source = next(iter(feeds.values())).reshape(-1) if len(feeds) == 1 else None
        raise AssertionError(
            f"{what}: {bad.sum()} of {bad.size} differ; got {got.reshape(-1)[where]}, expected "
            f"{expected.reshape(-1)[where]}" + (f" for {source[where]}" if source is not None else "")
        )


def reference_casts(x: np.ndarray, to: int) -> bool:
    """Whether ml_dtypes (which onnx's reference uses) casts `x`'s dtype to `to` directly: it has no casts
    between some pairs of its own types (float8e8m0 to float4, ...)."""
    try:
        x[:1].astype(ONNX_TO_NUMPY[to])
    except TypeError:
        return False
    return True


def patterns(t: int) -> np.ndarray:
    """Every value of format `t`, by bit pattern (one per byte, in the low bits, as ml_dtypes holds them)."""
    return np.arange(1 << FORMATS[t], dtype=np.uint8).view(ONNX_TO_NUMPY[t])


@pytest.mark.parametrize("source", list(FORMATS), ids=name)
def test_from_format(source: int) -> None:
    """Every pattern of `source` cast to every other type glow has; to an integer only the values it holds
    (the others are undefined, as a float to int cast is), to int4/int2 the finite ones."""
    x = patterns(source)
    values = x.astype(np.float64)
    feeds, nodes, outputs = {"x": x}, [], []
    for to in (*FLOATS, TP.BOOL, *INTEGERS, *FORMATS):
        if to == source or not reference_casts(x, to):
            continue
        given = "x"
        if to in INTEGERS:
            info = np.iinfo(ONNX_TO_NUMPY[to])
            given = f"x_{name(to)}"
            feeds[given] = x[np.isfinite(values) & (values >= info.min) & (values < float(info.max) + 1)]
        elif to in FORMATS and not is_float_format(to) and is_float_format(source):
            # Wrapping into int4/int2 is defined (ml_dtypes' astype), Inf and NaN are not: ml_dtypes gives 0
            # from float32 but -1 from float8e5m2's Inf.
            given = f"x_{name(to)}"
            feeds[given] = x[np.isfinite(values)]
        nodes.append(helper.make_node("Cast", [given], [f"y_{name(to)}"], to=to))
        outputs.append((f"y_{name(to)}", to))
    run(nodes, feeds, outputs)


def sweep(t: int) -> np.ndarray:
    """float64 values around everything that matters to rounding into format `t`: its values, the midpoints
    between neighbours and the float32 values next to them, past its largest value, subnormals of its own and
    of float32, zeros, infinities, NaN, and random magnitudes."""
    values = np.unique(np.abs(patterns(t).astype(np.float64)))
    values = values[np.isfinite(values)]
    gaps = np.diff(values)
    points = [values, values[:-1] + gaps / 2, values[-1:] + gaps[-1:] / 2, values[-1:] * 1.5, values[-1:] * 2]
    if t in (TP.INT4, TP.UINT4, TP.INT2, TP.UINT2):
        points += [np.arange(-40, 40, 0.25), [300, 1e10, 1e30]]
    edges = np.concatenate(points).astype(np.float32)
    near = [np.nextafter(edges, np.float32(np.inf)), np.nextafter(edges, np.float32(0))]
    tiny = np.array([1e-45, 1e-40, 2.0**-126, 2.0**-127 * 3, 1e-38], np.float32)
    random = (2.0 ** rng.uniform(-30, 20, 3000)).astype(np.float32)
    magnitudes = np.concatenate([edges, *near, tiny, random, [0.0, np.inf]]).astype(np.float32)
    return np.concatenate([magnitudes, -magnitudes, [np.nan, -np.nan]]).astype(np.float32)


# float8e8m0 converts by ONNX's default, saturate 1, only (test_e8m0_modes_refused).
@pytest.mark.parametrize("to,saturate", [(t, s) for t in FORMATS for s in (1, 0) if s or t != TP.FLOAT8E8M0])
def test_to_format(to: int, saturate: int) -> None:
    """A dense float32 sweep (and its float16, bfloat16 and float64 versions) cast to `to`; `saturate` says
    for the float8 formats whether out-of-range values clamp (1) or become NaN/Inf (0)."""
    x = sweep(to)
    feeds = {
        "f32": x,
        "f16": x.astype(np.float16),
        "bf16": x.astype(ml_dtypes.bfloat16),
        # float64 values just off float32's: rounding through float32 to nearest would round twice.
        "f64": np.concatenate([x, x.astype(np.float64) * (1 + 2.0**-30), x.astype(np.float64) * (1 - 2.0**-30)]),
    }
    attrs = {"saturate": saturate} if to in FLOAT8 else {}
    nodes = [helper.make_node("Cast", [n], [f"y_{n}"], to=to, **attrs) for n in feeds]
    run(nodes, feeds, [(f"y_{n}", to) for n in feeds])


@pytest.mark.parametrize("to", list(FORMATS), ids=name)
def test_integers_to_format(to: int) -> None:
    """Integers cast to `to`: exact, or rounded once (ONNX's saturation clamps them too)."""
    feeds = {
        "i32": np.concatenate([np.arange(-1000, 1000), [2**31 - 1, -(2**31), 2**24 + 1, 123456789]]).astype(np.int32),
        "u8": np.arange(256, dtype=np.uint8),
        "i64": np.array([0, 1, -1, 7, -8, 9, 2**40 + 3, -(2**62), 2**63 - 1], np.int64),
        "u16": np.arange(0, 65536, 97, dtype=np.uint16),
        "i8": np.arange(-128, 128, dtype=np.int8),
        "i16": np.arange(-32768, 32768, 61, dtype=np.int16),
        "u32": np.array([0, 1, 7, 8, 448, 449, 2**31, 2**32 - 1], np.uint32),
        "u64": np.array([0, 1, 15, 16, 57344, 2**63, 2**64 - 1], np.uint64),
        "b": np.array([True, False]),
    }
    nodes = [helper.make_node("Cast", [n], [f"y_{n}"], to=to) for n in feeds]
    run(nodes, feeds, [(f"y_{n}", to) for n in feeds])


@pytest.mark.parametrize("saturate", [1, 0])
def test_cast_like(saturate: int) -> None:
    like = np.zeros(1, ml_dtypes.float8_e4m3fn)
    x = sweep(TP.FLOAT8E4M3FN)
    node = helper.make_node("CastLike", ["x", "like"], ["y"], saturate=saturate)
    run([node], {"x": x, "like": like}, [("y", TP.FLOAT8E4M3FN)])


def test_constant_to_e8m0() -> None:
    """A cast of a constant is folded by the interpreter, which must round as the generated code does."""
    x = sweep(TP.FLOAT8E8M0)
    const = helper.make_node("Constant", [], ["c"], value=onnx.numpy_helper.from_array(x))
    cast = helper.make_node("Cast", ["c"], ["y"], to=TP.FLOAT8E8M0)
    nodes = [const, cast, helper.make_node("Add", ["c", "z"], ["w"])]
    run(nodes, {"z": np.zeros(x.shape, np.float32)}, [("y", TP.FLOAT8E8M0), ("w", TP.FLOAT)])


@pytest.mark.parametrize("attrs", [{"round_mode": "nearest"}, {"round_mode": "down"}, {"saturate": 0}])
def test_e8m0_modes_refused(attrs: dict[str, object]) -> None:
    node = helper.make_node("Cast", ["x"], ["y"], to=TP.FLOAT8E8M0, name="to_e8m0", **attrs)
    graph = helper.make_graph(
        [node], "cast",
        [helper.make_tensor_value_info("x", TP.FLOAT, [3])], [helper.make_tensor_value_info("y", TP.FLOAT8E8M0, [3])],
    )  # fmt: skip
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)], ir_version=IR_VERSION)
    with pytest.raises(UnsupportedAttributeError, match="to_e8m0"):
        import_model(m)


@pytest.mark.parametrize("t", list(FORMATS), ids=name)
def test_fills_of_format(t: int) -> None:
    """Ops that write a value of the format where no input element goes: Pad's constant (zero, and a value
    given), ConstantOfShape; the fill is the format's byte in the generated code (fuzz seed 2465: a uint2 Pad
    failed to compile)."""
    x = patterns(t)[: min(6, 1 << FORMATS[t])].reshape(2, -1)
    value = onnx.numpy_helper.from_array(x[:1, 1].reshape(1), "value")
    nodes = [
        helper.make_node("Pad", ["x", "pads"], ["zeros"]),
        helper.make_node("Pad", ["x", "pads", "value"], ["given"]),
        helper.make_node("ConstantOfShape", ["dims"], ["filled"], value=value),
    ]
    feeds = {"x": x, "pads": np.array([1, 0, 0, 2], np.int64), "value": x[1, 1:2].copy(), "dims": np.array([2, 3])}
    graph = helper.make_graph(
        nodes, "fills", [helper.make_tensor_value_info(n, NUMPY_TO_ONNX[a.dtype], a.shape) for n, a in feeds.items()],
        [helper.make_tensor_value_info(n, t, None) for n in ("zeros", "given", "filled")],
    )  # fmt: skip
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)], ir_version=IR_VERSION)
    expected = ReferenceEvaluator(m).run(None, feeds)
    static = {n: feeds.pop(n) for n in ("pads", "dims")}
    with glow_mlir.compile(import_model(m, static_inputs=static)) as compiled:
        got = compiled.run(feeds)
    for out, e in zip(("zeros", "given", "filled"), expected, strict=True):
        same(got[out], np.asarray(e), out, feeds)
