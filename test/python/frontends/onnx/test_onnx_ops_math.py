"""ONNX elementwise ops, activations and reductions: glow-mlir (import, compile, JIT) against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper
from onnx_check import check, check_node, model, rand, run_both

import glow_mlir
from glow_mlir.errors import InvalidNodeError, UnsupportedAttributeError
from glow_mlir.frontends.onnx import import_model
from glow_mlir.onnx_backend import GlowBackend

UNARY = {
    "Relu": (-2, 2), "Sigmoid": (-4, 4), "Tanh": (-3, 3), "Exp": (-3, 3), "Sqrt": (0.01, 4), "Log": (0.01, 4),
    "Abs": (-2, 2), "Neg": (-2, 2), "Floor": (-3, 3), "Ceil": (-3, 3), "Round": (-3, 3), "Erf": (-2, 2),
    "Sin": (-3, 3), "Cos": (-3, 3), "Reciprocal": (0.5, 3), "Sign": (-2, 2), "Identity": (-1, 1),
    "Softplus": (-3, 3), "Softsign": (-3, 3), "HardSwish": (-4, 4),
    "Tan": (-1.5, 1.5), "Asin": (-0.99, 0.99), "Acos": (-0.99, 0.99), "Atan": (-4, 4), "Sinh": (-3, 3),
    "Cosh": (-3, 3), "Asinh": (-4, 4), "Acosh": (1.01, 5), "Atanh": (-0.99, 0.99),
}
# C library calls (convert-math-to-libm): f64 calls acos, f32 acosf, each element through the vector code.
LIBM = ("Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh")


@pytest.mark.parametrize("op", sorted(UNARY))
@pytest.mark.parametrize("shape", [(7,), (2, 3, 4)])
def test_unary(op: str, shape: tuple[int, ...]) -> None:
    low, high = UNARY[op]
    x = rand(*shape, low=low, high=high)
    if op == "Round":
        x[..., 0] = 2.5  # a tie: ONNX rounds half to even
    check_node(op, {"x": x})


@pytest.mark.parametrize("op", LIBM)
def test_unary_libm_float64(op: str) -> None:
    """In f64 (which onnxruntime does not implement for these ops), against onnx's reference: the C library
    and numpy agree to the last bits."""
    low, high = UNARY[op]
    check_node(op, {"x": rand(33, low=low, high=high, dtype=np.float64)}, rtol=1e-13, atol=1e-15, spec=True)


@pytest.mark.parametrize("op", ["Abs", "Neg", "Sign", "Identity"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_unary_integer(op: str, dtype: type) -> None:
    check_node(op, {"x": rand(3, 4, low=-5, high=5, dtype=dtype)})


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_is_nan(dtype: type) -> None:
    x = rand(3, 5, dtype=dtype)
    x[0] = [np.nan, np.inf, -np.inf, 0.0, -np.nan]
    check_node("IsNaN", {"x": x})


@pytest.mark.parametrize("detect", [(1, 1), (1, 0), (0, 1), (0, 0)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_is_inf(detect: tuple[int, int], dtype: type) -> None:
    x = rand(3, 5, dtype=dtype)
    x[0] = [np.nan, np.inf, -np.inf, 0.0, 65504.0]
    check_node("IsInf", {"x": x}, {"detect_positive": detect[0], "detect_negative": detect[1]}, opset=20)


def test_where_is_nan_of_softmax() -> None:
    """The exporters' spelling of sdpa attention's softmax: Where(IsNaN(softmax), 0, softmax)."""
    nodes = [
        helper.make_node("Softmax", ["x"], ["p"], axis=-1),
        helper.make_node("IsNaN", ["p"], ["nan"]),
        helper.make_node("Where", ["nan", "zero", "p"], ["y"]),
    ]
    x = rand(2, 4, 8)
    x[0, 1] = -np.inf  # a fully masked row: softmax is NaN there, and Where makes it 0
    m = model(nodes, {"x": x}, ["y"], initializers={"zero": np.zeros((), np.float32)})
    check(m, {"x": x})


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_clamps_keep_nan_and_infinities(dtype: type) -> None:
    """Relu, Clip and Erf (whose f32 form clamps) keep a NaN input NaN and clamp infinities, as numpy (onnx's
    reference) does; the clamps are one max or min instruction per vector (scalar.at_least/at_most)."""
    x = rand(4, 6, low=-8, high=8, dtype=dtype)
    x[0] = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0]
    x[1, :4] = [6.0, 1e-30, -1e-30, 5.9999]
    nodes = [
        helper.make_node("Relu", ["x"], ["relu"]),
        helper.make_node("Clip", ["x", "low", "high"], ["clip"]),
        helper.make_node("Erf", ["x"], ["erf"]),
    ]
    bounds = {"low": np.array(0.0, dtype), "high": np.array(6.0, dtype)}
    m = model(nodes, {"x": x}, ["relu", "clip", "erf"], initializers=bounds)
    tolerance = 1e-3 if dtype == np.float16 else 1e-6
    check(m, {"x": x}, rtol=tolerance, atol=tolerance, spec=True)


def test_not() -> None:
    check_node("Not", {"x": rand(3, 4, dtype=np.bool_)})


BROADCASTS = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((2, 1, 4), (3, 1)), ((1,), (2, 3)), ((), (2, 2))]


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("shapes", BROADCASTS)
def test_arithmetic(op: str, shapes: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    a, b = shapes
    check_node(op, {"a": rand(*a), "b": rand(*b, low=0.5, high=2)})


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_arithmetic_integer(op: str, dtype: type) -> None:
    b = rand(3, 4, low=1, high=7, dtype=dtype) * np.where(rand(3, 4) < 0, -1, 1).astype(dtype)
    check_node(op, {"a": rand(3, 4, low=-20, high=20, dtype=dtype), "b": b})


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_arithmetic_float_types(dtype: type) -> None:
    check_node("Mul", {"a": rand(2, 3, dtype=dtype), "b": rand(3, dtype=dtype)})


def test_pow() -> None:
    check_node("Pow", {"a": rand(2, 3, low=0.5, high=2), "b": rand(3, low=-2, high=2)})


@pytest.mark.parametrize("exponent", [1.0, 2.0, 3.0, 4.0])
def test_pow_constant_exponent(exponent: float) -> None:
    """A constant exponent of 2 to 4 multiplies (glow-simplify-arithmetic), 1 is the identity; the special
    values (signed zeros, infinities, NaN, overflow) come out as powf's."""
    a = rand(4, 5, low=-3, high=3)
    a.reshape(-1)[:7] = [0.0, -0.0, np.inf, -np.inf, np.nan, 3e10, -3e10]
    check_node("Pow", {"a": a}, consts={"b": np.array(exponent, np.float32)}, rtol=1e-6, atol=0)
    check_node("Pow", {"a": rand(2, 3, low=0.5, high=2)}, consts={"b": np.array(2, np.int64)})
    check_node("Pow", {"a": rand(2, 3, low=-4, high=4, dtype=np.int64)}, consts={"b": np.array(3, np.int64)})


@pytest.mark.parametrize("op", ["Max", "Min", "Sum", "Mean"])
@pytest.mark.parametrize("count", [1, 2, 3])
def test_variadic(op: str, count: int) -> None:
    shapes = [(2, 3, 4), (3, 1), (4,)][:count]
    check_node(op, {f"x{i}": rand(*s) for i, s in enumerate(shapes)})


@pytest.mark.parametrize("op", ["Max", "Min"])
def test_variadic_integer(op: str) -> None:
    check_node(op, {"a": rand(3, 4, low=-9, high=9, dtype=np.int32), "b": rand(4, low=-9, high=9, dtype=np.int32)})


@pytest.mark.parametrize("op", ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_compare(op: str, dtype: type) -> None:
    a = rand(3, 4, low=-3, high=3, dtype=dtype)
    b = rand(4, low=-3, high=3, dtype=dtype)
    if dtype is np.float32:
        a[0] = b  # equal elements, so == and <= are exercised
    check_node(op, {"a": a, "b": b})


def test_equal_bool() -> None:
    check_node("Equal", {"a": rand(3, 4, dtype=np.bool_), "b": rand(4, dtype=np.bool_)})


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logical(op: str) -> None:
    check_node(op, {"a": rand(2, 3, 4, dtype=np.bool_), "b": rand(3, 1, dtype=np.bool_)})


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_where(dtype: type) -> None:
    check_node("Where", {"c": rand(3, 1, dtype=np.bool_), "a": rand(2, 3, 4, dtype=dtype, high=9),
                         "b": rand(4, dtype=dtype, high=9)})


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("fmod", [0, 1])
def test_mod_integer(dtype: type, fmod: int) -> None:
    a = rand(4, 5, low=-20, high=20, dtype=dtype)
    b = rand(4, 5, low=1, high=6, dtype=dtype) * np.where(rand(4, 5) < 0, -1, 1).astype(dtype)
    check_node("Mod", {"a": a, "b": b}, {"fmod": fmod})


def test_mod_float() -> None:
    check_node("Mod", {"a": rand(4, 5, low=-9, high=9), "b": rand(5, low=0.5, high=3)}, {"fmod": 1})


# Activations with attributes.


@pytest.mark.parametrize("alpha", [None, 0.2])
def test_leaky_relu(alpha: float | None) -> None:
    check_node("LeakyRelu", {"x": rand(3, 4, low=-2, high=2)}, {} if alpha is None else {"alpha": alpha})


@pytest.mark.parametrize("slope_shape", [(1,), (4,), (3, 1, 1), ()])
def test_prelu(slope_shape: tuple[int, ...]) -> None:
    check_node("PRelu", {"x": rand(2, 3, 5, 4, low=-2, high=2)}, consts={"slope": rand(*slope_shape)})


@pytest.mark.parametrize("dims", [(2, 3, 4), (2, 3, 4, 5), (2, 3, 4, 5, 6)])
def test_prelu_legacy_per_channel_slope(dims: tuple[int, ...]) -> None:
    """An opset-6 PRelu with a [C] slope (pytorch-converted/test_PReLU_*_multiparam), upgraded to opset 7 by the
    backend, applies the slope per channel: as onnxruntime's opset-7 PRelu with the slope shaped [C, 1, ...]."""
    x, slope = rand(*dims, low=-2, high=2), rand(3)
    node = helper.make_node("PRelu", ["x", "slope"], ["y"])
    legacy = model([node], {"x": x}, ["y"], {"slope": slope}, opset=6)
    got = GlowBackend.run_model(legacy, [x])[0]
    channel_slope = slope.reshape(3, *[1] * (len(dims) - 2))
    reference = model([node], {"x": x}, ["y"], {"slope": channel_slope}, opset=7)
    session = ort.InferenceSession(reference.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got, session.run(None, {"x": x})[0], rtol=1e-6)


@pytest.mark.parametrize("op,attrs", [
    ("Elu", {}), ("Elu", {"alpha": 0.5}), ("Selu", {}), ("Selu", {"alpha": 1.5, "gamma": 2.0}),
    ("Celu", {}), ("Celu", {"alpha": 2.0}), ("HardSigmoid", {}), ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
])
def test_activation_attributes(op: str, attrs: dict[str, float]) -> None:
    check_node(op, {"x": rand(3, 4, low=-4, high=4)}, attrs)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate: str) -> None:
    check_node("Gelu", {"x": rand(3, 4, low=-4, high=4)}, {"approximate": approximate}, opset=20)


@pytest.mark.parametrize("bounds", [(-0.5, 0.5), (-0.5, None), (None, 0.3), (None, None)])
def test_clip_opset6_attributes(bounds: tuple[float | None, float | None]) -> None:
    attrs = {k: v for k, v in zip(("min", "max"), bounds) if v is not None}
    check_node("Clip", {"x": rand(3, 4, low=-2, high=2)}, attrs, opset=7)


@pytest.mark.parametrize("bounds", [(-0.5, 0.5), (-0.5, None), (None, 0.3)])
def test_clip_inputs(bounds: tuple[float | None, float | None]) -> None:
    consts = {k: None if v is None else np.array(v, np.float32) for k, v in zip(("lo", "hi"), bounds)}
    check_node("Clip", {"x": rand(3, 4, low=-2, high=2)}, consts=consts, opset=13)


def test_clip_runtime_bounds_and_integers() -> None:
    check_node("Clip", {"x": rand(3, 4, low=-2, high=2), "lo": np.array(-0.4, np.float32)}, opset=13)
    check_node("Clip", {"x": rand(3, 4, low=-9, high=9, dtype=np.int32)},
               consts={"lo": np.array(-3, np.int32), "hi": np.array(5, np.int32)}, opset=13)


# Softmax family: opset < 13 flattens to 2-D at axis, opset >= 13 normalizes along axis.


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, 2])
def test_softmax(op: str, opset: int, axis: int | None) -> None:
    attrs = {} if axis is None else {"axis": axis}
    check_node(op, {"x": rand(2, 3, 4, low=-3, high=3)}, attrs, opset=opset)


# Reductions.

REDUCE = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
          "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"]
AXES = [None, [1], [0, 2], [-1], [2, 0]]


@pytest.mark.parametrize("op", REDUCE)
@pytest.mark.parametrize("axes", AXES)
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_axes_attribute(op: str, axes: list[int] | None, keepdims: int) -> None:
    attrs: dict[str, object] = {"keepdims": keepdims}
    if axes is not None:
        attrs["axes"] = axes
    low = 0.2 if op == "ReduceLogSum" else -1.5
    check_node(op, {"x": rand(2, 3, 4, low=low, high=1.5)}, attrs, opset=11 if op != "ReduceSum" else 11)


@pytest.mark.parametrize("op", REDUCE)
@pytest.mark.parametrize("axes", [None, [1], [0, -1]])
def test_reduce_axes_input(op: str, axes: list[int] | None) -> None:
    opset = 13 if op == "ReduceSum" else 18
    consts = {"axes": None if axes is None else np.array(axes, np.int64)}
    low = 0.2 if op == "ReduceLogSum" else -1.5
    check_node(op, {"x": rand(2, 3, 4, low=low, high=1.5)}, {"keepdims": 0}, consts, opset=opset)


def test_reduce_noop_with_empty_axes() -> None:
    check_node("ReduceSum", {"x": rand(2, 3)}, {"noop_with_empty_axes": 1}, opset=13)
    check_node("ReduceMax", {"x": rand(2, 3)}, {"noop_with_empty_axes": 1}, {"axes": np.array([], np.int64)}, opset=18)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd"])
def test_reduce_integer(op: str) -> None:
    check_node(op, {"x": rand(2, 3, 4, low=-3, high=3, dtype=np.int64)}, {"axes": [1]}, opset=11)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
@pytest.mark.parametrize("axes,keepdims", [([1], 0), ([0, 2], 1), (None, 0)])
def test_reduce_bool(op: str, axes: list[int] | None, keepdims: int) -> None:
    """Opset 20's bool ReduceMax / ReduceMin (any / all); rows of all-true and all-false included."""
    x = rand(4, 5, 3, dtype=np.bool_)
    x[0], x[1] = True, False
    consts = {"axes": None if axes is None else np.array(axes, np.int64)}
    check_node(op, {"x": x}, {"keepdims": keepdims}, consts, opset=20)


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_reduce(op: str, axis: int, keepdims: int, last: int) -> None:
    # Few distinct values, so ties exist and select_last_index matters.
    x = rand(3, 4, 5, low=0, high=3, dtype=np.int32).astype(np.float32)
    check_node(op, {"x": x}, {"axis": axis, "keepdims": keepdims, "select_last_index": last}, opset=13)


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize(
    ("shape", "axis", "dtype"),
    [
        ((6, 40), 1, np.float32),  # rows of 2 vectors and a masked tail of 8 (codegen/arg_search.py)
        ((3, 128), -1, np.int64),  # rows of 16 vectors of 8 lanes
        ((4, 33), 1, np.float64),  # 4 vectors of 8 and a tail of 1
        ((5, 3, 37), 1, np.float32),  # along a middle axis: 2 full column blocks and a masked one of 5
        ((2, 21, 4, 16), 1, np.int32),  # a segmentation head's classes in NCHW: one column block
        ((40, 24), 0, np.float32),  # along the first axis
    ],
)
@pytest.mark.parametrize("keepdims", [0, 1])
def test_arg_reduce_vectors(op: str, shape: tuple[int, ...], axis: int, dtype: type, keepdims: int) -> None:
    """The vector searches: ties everywhere (few distinct values), so the lanes' merge must keep the first."""
    x = rand(*shape, low=-2, high=3, dtype=np.int32).astype(dtype)
    x[0] = x[0].max()  # a row or column of equal values
    check_node(op, {"x": x}, {"axis": axis, "keepdims": keepdims}, opset=13)


def test_arg_reduce_vectors_nan_and_infinity() -> None:
    """NaN beats any number (the first NaN wins, as in numpy); a row of -inf keeps its first element, though the
    masked tail pads with -inf. Against numpy: onnxruntime's NaN order is its own."""
    x = rand(4, 45, low=-1, high=1)
    x[1, [7, 30]] = np.nan
    x[2] = -np.inf
    x[3, 44] = np.nan
    y = rand(3, 45, 20)
    y[1, 9, 3] = y[1, 30, 3] = np.nan
    for data in (x, y):
        for op, want in (("ArgMax", np.argmax(data, 1)), ("ArgMin", np.argmin(data, 1))):
            node = helper.make_node(op, ["x"], ["y"], axis=1, keepdims=0)
            [got], _ = run_both(model([node], {"x": data}, ["y"], opset=13), {"x": data})
            np.testing.assert_array_equal(got, want)


def test_arg_max_opset11_integer() -> None:
    check_node("ArgMax", {"x": rand(3, 4, low=-9, high=9, dtype=np.int64)}, {"axis": 1}, opset=11)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("opset", [11, 13])
def test_hardmax(axis: int, opset: int) -> None:
    x = rand(3, 4, 5)
    x[0, 0, :2] = 1.5  # a tie: the first maximum wins
    check_node("Hardmax", {"x": x}, {"axis": axis}, opset=opset)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("axis", [0, -1])
def test_lp_normalization(p: int, axis: int) -> None:
    check_node("LpNormalization", {"x": rand(3, 4, low=0.5, high=2)}, {"p": p, "axis": axis})


def test_lp_normalization_of_a_zero_vector_is_zero() -> None:
    x = rand(2, 2, 3)
    x[:, 1, 2] = 0.0  # the norm along axis 0 is 0 there: the spec's function gives 0, not NaN
    check_node("LpNormalization", {"x": x}, {"p": 2, "axis": 0}, spec=True)


@pytest.mark.parametrize("alpha", [1.0, 0.25, -0.5])
def test_thresholded_relu(alpha: float) -> None:
    x = rand(3, 7, low=-2, high=2)
    x[0, :3] = [alpha, np.nextafter(alpha, 10, dtype=np.float32), np.nextafter(alpha, -10, dtype=np.float32)]
    check_node("ThresholdedRelu", {"x": x}, {"alpha": alpha}, opset=10)


@pytest.mark.parametrize("attrs", [{}, {"lambd": 1.5}, {"lambd": 1.5, "bias": 1.5}, {"lambd": 0.0, "bias": -0.5}])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_shrink(attrs: dict[str, float], dtype: type) -> None:
    x = rand(4, 5, low=-3, high=3, dtype=dtype)
    check_node("Shrink", {"x": x}, attrs, opset=9)


def test_mish() -> None:
    x = rand(3, 8, low=-6, high=6)
    x[0, :4] = [-100.0, 100.0, 0.0, 90.0]  # exp overflows at 90 and 100: y is x there
    check_node("Mish", {"x": x}, opset=18)


@pytest.mark.parametrize("alpha", [1.0, 1.702])
def test_swish(alpha: float) -> None:
    check_node("Swish", {"x": rand(2, 9, low=-6, high=6)}, {"alpha": alpha}, opset=24, spec=True)


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 4, 4), (2, 3, 6, 6)])
def test_det(shape: tuple[int, ...]) -> None:
    check_node("Det", {"x": rand(*shape)}, opset=11, rtol=1e-4)


def test_det_pivots_singular_and_double() -> None:
    """A zero leading entry needs a row swap (which flips the sign); a singular matrix is 0; f64 stays f64;
    f16 is computed in f32."""
    swap = np.float32([[0, 2, 1], [3, 1, 4], [1, 5, 9]])
    singular = np.float32([[1, 2, 3], [2, 4, 6], [0, 1, 1]])
    check_node("Det", {"x": np.stack([swap, singular])}, opset=11, rtol=1e-5, atol=1e-5)
    check_node("Det", {"x": rand(3, 5, 5, dtype=np.float64)}, opset=11, spec=True)  # onnxruntime: f32 only
    x = rand(2, 3, 3).astype(np.float16)  # neither onnxruntime nor numpy's linalg takes f16
    graph = import_model(model([helper.make_node("Det", ["x"], ["y"])], {"x": x}, ["y"], opset=11))
    with glow_mlir.compile(graph) as compiled:
        got = compiled.run({"x": x})["y"]
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, np.linalg.det(x.astype(np.float32)).astype(np.float16), rtol=2e-3, atol=2e-3)


def test_det_needs_square_matrices() -> None:
    node = helper.make_node("Det", ["x"], ["y"], name="det")
    with pytest.raises(InvalidNodeError, match=r"'det' \(Det\).*X \[2, 3, 4\] must be \[\*, N, N\]"):
        import_model(model([node], {"x": rand(2, 3, 4)}, ["y"], opset=11))


def test_det_of_large_matrices_is_refused() -> None:
    node = helper.make_node("Det", ["x"], ["y"], name="big")
    with pytest.raises(UnsupportedAttributeError, match=r"'big' \(Det\).*257 x 257 matrices"):
        import_model(model([node], {"x": rand(257, 257)}, ["y"], opset=11))
