"""ONNX's quantization ops (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger,
ConvInteger, QLinearMatMul, QLinearConv) as glow compositions, against onnxruntime; against onnx's reference
where onnxruntime takes no such tensors from Python (int4/int2, float8, float4). Every quantized tensor is a
graph input, so the generated code computes it (an initializer would fold at import).

Then whole models (a small CNN, a one-layer BERT-like encoder) quantized by onnxruntime.quantization, static
QDQ and dynamic, imported and compared with onnxruntime running the same quantized model."""

from __future__ import annotations

from collections.abc import Sequence

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import onnxruntime.quantization as ort_quant
import pytest
import torch
from onnx import TensorProto as TP
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from onnx_check import IR_VERSION

import glow_mlir
from glow_mlir.backends.cpu import int8_rewrite
from glow_mlir.errors import InvalidNodeError
from glow_mlir.frontends.onnx import import_model
from glow_mlir.frontends.onnx.node import ONNX_TO_NUMPY

NUMPY_TO_ONNX = {d: t for t, d in ONNX_TO_NUMPY.items()}
rng = np.random.default_rng(11)
U8, I8, U16, I16, I32 = (np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16, np.int32))


def run(
    op: str,
    feeds: dict[str, np.ndarray | None],
    attrs: dict[str, object] | None = None,
    opset: int = 21,
    spec: bool = False,
    outputs: int = 1,
    expected: list[np.ndarray] | None = None,
) -> None:
    """One `op` node on graph inputs `feeds` (None: an omitted optional input), run by glow-mlir and by
    onnxruntime (onnx's reference with `spec`, or the `expected` results where neither implements the spec);
    the results must be equal (floats to 1 ulp of float32)."""
    names = [n if a is not None else "" for n, a in feeds.items()]
    given = {n: a for n, a in feeds.items() if a is not None}
    out_names = [f"y{i}" for i in range(outputs)]
    node = helper.make_node(op, names, out_names, name=f"{op}_node", **(attrs or {}))
    graph = helper.make_graph(
        [node],
        "quant",
        [helper.make_tensor_value_info(n, NUMPY_TO_ONNX[a.dtype], a.shape) for n, a in given.items()],
        [helper.make_empty_tensor_value_info(n) for n in out_names],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_VERSION)
    if expected is not None:
        pass
    elif spec:
        expected = [np.asarray(v) for v in ReferenceEvaluator(m).run(None, given)]
    else:
        expected = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, given)
    with glow_mlir.compile(import_model(m)) as compiled:
        got = compiled.run(given)
    for name, e in zip(out_names, expected, strict=True):
        g = got[name]
        assert g.dtype == e.dtype and g.shape == e.shape, f"{name}: {g.dtype}{g.shape} vs {e.dtype}{e.shape}"
        if e.dtype.kind in "iub" or e.dtype in (np.dtype(ml_dtypes.int4), np.dtype(ml_dtypes.uint4)):
            np.testing.assert_array_equal(g.astype(np.int64), e.astype(np.int64), err_msg=name)
        else:
            np.testing.assert_allclose(g.astype(np.float32), e.astype(np.float32), rtol=1.2e-7, atol=0, err_msg=name)


def ints(dt: np.dtype, *dims: int) -> np.ndarray:
    info = ml_dtypes.iinfo(dt)
    return rng.integers(info.min, info.max + 1, dims).astype(dt)


def halfway(scale: np.ndarray | float, *dims: int, spread: int = 300) -> np.ndarray:
    """float32 x whose x / scale lands on integers, exact halves (the ties round_half_even decides), and
    random points, over a range that saturates the narrow types."""
    k = rng.integers(-spread, spread, dims).astype(np.float32)
    kind = rng.integers(0, 3, dims)
    offsets = np.where(kind == 0, 0.0, np.where(kind == 1, 0.5, rng.uniform(-0.5, 0.5, dims))).astype(np.float32)
    return ((k + offsets) * np.asarray(scale, np.float32)).astype(np.float32)


# ----------------------------------------------------------------------------------------------------------
# QuantizeLinear / DequantizeLinear


@pytest.mark.parametrize("out", [U8, I8, U16, I16])
def test_quantize_per_tensor(out: np.dtype) -> None:
    x = halfway(0.25, 4, 50, spread=40000 if out.itemsize == 2 else 300)
    run("QuantizeLinear", {"x": x, "s": np.array(0.25, np.float32), "z": np.array(3, out)})


@pytest.mark.parametrize("opset", [10, 13, 19, 21, 23])
@pytest.mark.parametrize("t", [U8, I8])
def test_quantize_dequantize_round_trip_across_opsets(opset: int, t: np.dtype) -> None:
    """QuantizeLinear then DequantizeLinear, per tensor, in every opset that changed them (10: the first;
    13: per axis; 19: saturate and float8; 21: int16 and int4; 23: float4 and blocked scales)."""
    x = halfway(0.125, 3, 40)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])]  # fmt: skip
    feeds = {"x": x, "s": np.array(0.125, np.float32), "z": np.array(7, t)}
    graph = helper.make_graph(
        nodes, "qdq", [helper.make_tensor_value_info(n, NUMPY_TO_ONNX[a.dtype], a.shape) for n, a in feeds.items()],
        [helper.make_empty_tensor_value_info("q"), helper.make_empty_tensor_value_info("y")],
    )  # fmt: skip
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_VERSION)
    expected = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    with glow_mlir.compile(import_model(m)) as compiled:
        got = compiled.run(feeds)
    np.testing.assert_array_equal(got["q"], expected[0])
    np.testing.assert_array_equal(got["y"], expected[1])


def test_quantize_default_uint8_without_zero_point() -> None:
    run("QuantizeLinear", {"x": halfway(0.5, 3, 40), "s": np.array(0.5, np.float32)}, opset=13)


@pytest.mark.parametrize("axis", [1, -1, 0])
def test_quantize_per_axis(axis: int) -> None:
    x = rng.uniform(-40, 40, (3, 4, 5)).astype(np.float32)
    n = x.shape[axis]
    scale = rng.uniform(0.05, 0.5, n).astype(np.float32)
    run("QuantizeLinear", {"x": x, "s": scale, "z": ints(I8, n)}, {"axis": axis}, opset=13)


@pytest.mark.parametrize("block_size,axis", [(2, 1), (3, 1), (4, 0)])
def test_quantize_blocked(block_size: int, axis: int) -> None:
    x = rng.uniform(-20, 20, (8, 7)).astype(np.float32)
    dims = list(x.shape)
    dims[axis] = -(-dims[axis] // block_size)
    scale = rng.uniform(0.05, 0.5, dims).astype(np.float32)
    run("QuantizeLinear", {"x": x, "s": scale, "z": ints(U8, *dims)}, {"axis": axis, "block_size": block_size})


def test_quantize_float16() -> None:
    x = halfway(0.125, 4, 30).astype(np.float16)
    run("QuantizeLinear", {"x": x, "s": np.array(0.125, np.float16), "z": np.array(-5, I8)})


def test_quantize_precision() -> None:
    """opset 25's `precision`: x / scale computed in float32 for float16 operands."""
    x = rng.uniform(-30, 30, (3, 16)).astype(np.float16)
    run("QuantizeLinear", {"x": x, "s": np.array(0.3, np.float16)}, {"precision": TP.FLOAT, "output_dtype": TP.INT8},
        opset=25, spec=True)


@pytest.mark.parametrize("out", [ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2, ml_dtypes.uint2])
def test_quantize_sub_byte(out: type) -> None:
    x = halfway(0.5, 4, 20, spread=12)
    run("QuantizeLinear", {"x": x, "s": np.array(0.5, np.float32), "z": np.array(1, out)}, opset=25, spec=True)


@pytest.mark.parametrize("saturate", [1, 0])
@pytest.mark.parametrize("out", ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"])
def test_quantize_float8(out: str, saturate: int) -> None:
    x = np.concatenate([rng.uniform(-500, 500, 60), [1e6, -1e6, 0.0, np.inf]]).astype(np.float32)
    zero = np.zeros((), ml_dtypes.finfo(out).dtype)
    feeds = {"x": x, "s": np.array(2.0, np.float32), "z": zero}
    run("QuantizeLinear", feeds, {"saturate": saturate}, opset=21, spec=True)


def test_quantize_float4() -> None:
    x = rng.uniform(-10, 10, 64).astype(np.float32)
    feeds = {"x": x, "s": np.array(0.75, np.float32)}
    run("QuantizeLinear", feeds, {"output_dtype": TP.FLOAT4E2M1}, opset=23, spec=True)


@pytest.mark.parametrize("x_type", [U8, I8, U16, I16, I32])
def test_dequantize_per_tensor(x_type: np.dtype) -> None:
    zero = None if x_type == I32 else ints(x_type)
    run("DequantizeLinear", {"x": ints(x_type, 5, 6), "s": np.array(0.037, np.float32), "z": zero})


@pytest.mark.parametrize("axis", [1, -1])
def test_dequantize_per_axis(axis: int) -> None:
    x = ints(U8, 2, 4, 3)
    n = x.shape[axis]
    feeds = {"x": x, "s": rng.uniform(0.01, 1, n).astype(np.float32), "z": ints(U8, n)}
    run("DequantizeLinear", feeds, {"axis": axis}, opset=13)


def test_dequantize_blocked_float16() -> None:
    x = ints(I8, 6, 5)
    run("DequantizeLinear", {"x": x, "s": rng.uniform(0.01, 1, (6, 2)).astype(np.float16), "z": ints(I8, 6, 2)},
        {"axis": 1, "block_size": 3})


@pytest.mark.parametrize("x_type", [ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2, ml_dtypes.uint2])
def test_dequantize_sub_byte(x_type: type) -> None:
    x = ints(np.dtype(x_type), 3, 8)
    feeds = {"x": x, "s": np.array(0.7, np.float32), "z": ints(np.dtype(x_type))}
    run("DequantizeLinear", feeds, opset=25, spec=True)


@pytest.mark.parametrize("x_type", ["float8_e4m3fn", "float8_e5m2fnuz", "float4_e2m1fn"])
def test_dequantize_low_precision_floats(x_type: str) -> None:
    bits = 16 if x_type == "float4_e2m1fn" else 256
    x = np.arange(bits, dtype=np.uint8).view(getattr(ml_dtypes, x_type))
    feeds = {"x": x, "s": np.array(1.5, np.float32)}
    run("DequantizeLinear", feeds, {"output_dtype": TP.FLOAT16}, opset=25, spec=True)


def test_dynamic_quantize_linear() -> None:
    run("DynamicQuantizeLinear", {"x": rng.uniform(-3, 7, (4, 9)).astype(np.float32)}, opset=11, outputs=3)


def test_bad_scale_shape_is_a_typed_error() -> None:
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"], name="quantize_node")
    graph = helper.make_graph(
        [node], "quant",
        [helper.make_tensor_value_info("x", TP.FLOAT, [3, 4]), helper.make_tensor_value_info("s", TP.FLOAT, [5])],
        [helper.make_empty_tensor_value_info("y")],
    )  # fmt: skip
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=IR_VERSION)
    with pytest.raises(InvalidNodeError, match=r"quantize_node.*y_scale of shape \[5\]"):
        import_model(m)


# ----------------------------------------------------------------------------------------------------------
# Integer matmuls and convolutions


@pytest.mark.parametrize("types", [(U8, U8), (U8, I8), (I8, I8)])
@pytest.mark.parametrize("zeros", [False, True])
def test_matmul_integer(types: tuple[np.dtype, np.dtype], zeros: bool) -> None:
    a, b = ints(types[0], 2, 5, 7), ints(types[1], 7, 3)
    za, zb = (ints(types[0]), ints(types[1])) if zeros else (None, None)
    run("MatMulInteger", {"a": a, "b": b, "za": za, "zb": zb}, opset=10)


def test_matmul_integer_per_row_and_column_zero_points() -> None:
    """The spec's per-row zero point of A and per-column one of B, which neither onnxruntime nor onnx's
    reference implements (the reference broadcasts A's along its columns): checked against int64 numpy."""
    a, b, za, zb = ints(U8, 2, 5, 7), ints(I8, 7, 3), ints(U8, 5), ints(I8, 3)
    wide = (a.astype(np.int64) - za[:, None]) @ (b.astype(np.int64) - zb)
    run("MatMulInteger", {"a": a, "b": b, "za": za, "zb": zb}, opset=10, expected=[wide.astype(np.int32)])


@pytest.mark.parametrize(
    "attrs", [{}, {"pads": [1, 1, 1, 1]}, {"strides": [2, 2], "pads": [1, 0, 1, 0]}, {"group": 2}]
)
def test_conv_integer(attrs: dict[str, object]) -> None:
    x, w = ints(U8, 1, 4, 6, 6), ints(U8, 6, 4 // attrs.get("group", 1), 3, 3)  # type: ignore[operator]
    run("ConvInteger", {"x": x, "w": w, "zx": ints(U8), "zw": ints(U8)}, attrs, opset=10)


@pytest.mark.parametrize(
    ("w_dims", "attrs", "high", "wide"),
    [
        ((8, 3, 16, 16), {"strides": [16, 16]}, 127, "f32"),  # a ViT's patch embedding: 255 x 768 x 64 < 2^24
        ((8, 3, 16, 16), {"strides": [16, 16]}, 255, "f64"),  # w - w_zero of 255 everywhere: 255 x 768 x 255
        ((8, 16, 3, 3), {"pads": [1, 1, 1, 1]}, 127, "f64"),  # 3x3 stride 1 (Winograd's): 255 x 144 x 127 >= 2^16
        ((8, 16, 3, 3), {"pads": [1, 1, 1, 1]}, 1, "f32"),  # ... 255 x 144 x 1 < 2^16
        ((8, 16, 3, 3), {"strides": [2, 2]}, 127, "f32"),  # stride 2: no Winograd
        ((16, 1, 3, 3), {"pads": [1, 1, 1, 1], "group": 16}, 127, "f32"),  # depthwise: Winograd runs group 1 only
    ],
)
def test_conv_integer_with_constant_weights(w_dims: tuple[int, ...], attrs: dict[str, object], high: int,
                                            wide: str) -> None:  # fmt: skip
    """quantize_dynamic's ConvInteger: the weights are an initializer, so the importer bounds every sum of the
    convolution and computes it in float32 (the backend's kernels) where float32 holds them exactly, else in
    float64; either way the int32 result is onnxruntime's, exactly."""
    # |w - w_zero| up to `high`: random int8 weights about 0, or (255) all -128 against a zero point of 127.
    w = rng.integers(-high, high + 1, w_dims).astype(I8) if high <= 127 else np.full(w_dims, -128, I8)
    x, zx = ints(U8, 1, w_dims[1] * attrs.get("group", 1), 32, 32), ints(U8)  # type: ignore[operator]
    zw = np.array([127 if high > 127 else 0], I8)
    node = helper.make_node("ConvInteger", ["x", "w", "zx", "zw"], ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TP.UINT8, x.shape)],
                              [helper.make_tensor_value_info("y", TP.INT32, None)],
                              [numpy_helper.from_array(a, n) for a, n in ((w, "w"), (zx, "zx"), (zw, "zw"))])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 10)], ir_version=IR_VERSION)
    assert f"x{wide}>" in str(import_model(model).module)
    with glow_mlir.compile(import_model(model), cache=False) as compiled:
        got = compiled.run({"x": x})["y"]
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_array_equal(got, want)


def test_conv_integer_1d_without_zero_points() -> None:
    run("ConvInteger", {"x": ints(U8, 2, 3, 9), "w": ints(U8, 4, 3, 2)}, opset=10)


def _requant_inputs(
    t: np.dtype, a_dims: Sequence[int], b_dims: Sequence[int], per_column: bool
) -> dict[str, np.ndarray]:
    n = b_dims[-1]
    return {
        "a": ints(t, *a_dims), "sa": np.array(0.02, np.float32), "za": ints(t),
        "b": ints(t, *b_dims), "sb": rng.uniform(0.01, 0.05, n if per_column else ()).astype(np.float32),
        "zb": ints(t, n) if per_column else ints(t), "sy": np.array(0.9, np.float32), "zy": ints(t),
    }  # fmt: skip


@pytest.mark.parametrize("t", [U8, I8])
@pytest.mark.parametrize("dims", [((4, 16), (16, 5)), ((2, 3, 16), (16, 5)), ((2, 3, 16), (2, 16, 5))])
def test_qlinear_matmul(t: np.dtype, dims: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    run("QLinearMatMul", _requant_inputs(t, *dims, per_column=False), opset=10)


def test_qlinear_matmul_per_column_scale() -> None:
    run("QLinearMatMul", _requant_inputs(U8, (6, 16), (16, 4), per_column=True), opset=21)


@pytest.mark.parametrize(("k", "in_float"), [(64, True), (258, True), (259, False)])
def test_product_of_two_activations_is_float_where_exact(k: int, in_float: bool) -> None:
    """Attention's QLinearMatMul of two run-time operands: in float32 (the backend's vectorized batched product)
    while 255 x 255 x K < 2^24 keeps every sum exact, else int32; equal to onnxruntime either way (extremes
    included: the largest sums)."""
    feeds = _requant_inputs(U8, (2, 3, k), (2, k, 5), per_column=False)
    feeds["a"][0, 0], feeds["b"][0, :, 0], feeds["za"], feeds["zb"] = 255, 255, np.array(0, U8), np.array(0, U8)
    run("QLinearMatMul", feeds, opset=10)
    graph = import_model(helper.make_model(helper.make_graph(
        [helper.make_node("QLinearMatMul", list(feeds), ["y"])], "q",
        [helper.make_tensor_value_info(n, NUMPY_TO_ONNX[a.dtype], a.shape) for n, a in feeds.items()],
        [helper.make_empty_tensor_value_info("y")]), opset_imports=[helper.make_opsetid("", 10)]))  # fmt: skip
    products = [line for line in str(graph.module).splitlines() if "glow.batch_matmul" in line]
    assert len(products) == 1 and ("-> tensor<2x3x5xf32>" in products[0]) == in_float


@pytest.mark.parametrize("t", [U8, I8])
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_qlinear_conv(t: np.dtype, per_channel: bool, bias: bool) -> None:
    m = 6
    feeds = {
        "x": ints(t, 1, 3, 7, 7), "sx": np.array(0.05, np.float32), "zx": ints(t),
        "w": ints(I8 if t == I8 else U8, m, 3, 3, 3),
        "sw": rng.uniform(0.005, 0.02, m if per_channel else ()).astype(np.float32),
        "zw": np.zeros(m if per_channel else (), I8 if t == I8 else U8),
        "sy": np.array(0.7, np.float32), "zy": ints(t),
        "bias": rng.integers(-2000, 2000, m).astype(np.int32) if bias else None,
    }  # fmt: skip
    run("QLinearConv", feeds, {"pads": [1, 1, 1, 1], "strides": [1, 2]}, opset=10)


def test_conv_integer_per_channel_weight_zero_point() -> None:
    """A zero point per output channel, which onnxruntime does not take (onnx's reference does)."""
    feeds = {"x": ints(U8, 1, 2, 5, 5), "w": ints(U8, 3, 2, 2, 2), "zx": ints(U8), "zw": ints(U8, 3)}
    run("ConvInteger", feeds, opset=10, spec=True)


def test_qlinear_conv_per_channel_weight_zero_point() -> None:
    feeds = {
        "x": ints(U8, 1, 2, 6, 6), "sx": np.array(0.05, np.float32), "zx": ints(U8),
        "w": ints(U8, 4, 2, 3, 3), "sw": rng.uniform(0.005, 0.02, 4).astype(np.float32), "zw": ints(U8, 4),
        "sy": np.array(2.5, np.float32), "zy": ints(U8),
    }  # fmt: skip
    run("QLinearConv", feeds, opset=10, spec=True)


# ----------------------------------------------------------------------------------------------------------
# Whole models quantized by onnxruntime.quantization: QDQ (quantize_static) and dynamic (quantize_dynamic)

CNN_SHAPE, ENCODER_SHAPE = (1, 3, 16, 16), (1, 8, 32)


class SmallCNN(torch.nn.Module):
    """Two convolutions with relu, a max pool, a global average pool and a linear layer."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.nn.functional.max_pool2d(torch.relu(self.c1(x)), 2)
        return self.fc(torch.relu(self.c2(x)).mean((2, 3)))


class SmallEncoder(torch.nn.Module):
    """One BERT-like encoder layer: 4-head self-attention and a GELU feed-forward, each with a residual and
    a layer norm."""

    def __init__(self, d: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.qkv, self.out = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.ff1, self.ff2 = torch.nn.Linear(d, 64), torch.nn.Linear(64, d)
        self.norm1, self.norm2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, -1)

        def heads(z: torch.Tensor) -> torch.Tensor:
            return z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2)

        scores = heads(q) @ heads(k).transpose(-1, -2) / (d // self.heads) ** 0.5
        attended = (torch.softmax(scores, -1) @ heads(v)).transpose(1, 2).reshape(b, t, d)
        x = self.norm1(x + self.out(attended))
        return self.norm2(x + self.ff2(torch.nn.functional.gelu(self.ff1(x))))


class RandomReader(ort_quant.CalibrationDataReader):
    """Calibration data: `count` standard-normal inputs."""

    def __init__(self, shape: tuple[int, ...], count: int = 8) -> None:
        r = np.random.default_rng(1)
        self.samples = iter([{"x": r.standard_normal(shape).astype(np.float32)} for _ in range(count)])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self.samples, None)


@pytest.fixture(scope="module")
def float_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, tuple[int, ...]]]:
    """The two float models exported to ONNX: name -> (path, input shape)."""
    folder = tmp_path_factory.mktemp("quant_models")
    torch.manual_seed(0)
    found = {}
    for name, net, dims in (("cnn", SmallCNN(), CNN_SHAPE), ("encoder", SmallEncoder(), ENCODER_SHAPE)):
        path = str(folder / f"{name}.onnx")
        torch.onnx.export(net.eval(), (torch.randn(*dims),), path, input_names=["x"], output_names=["y"],
                          dynamo=False, opset_version=17)  # fmt: skip
        found[name] = (path, dims)
    return found


def _quantized(float_models: dict[str, tuple[str, tuple[int, ...]]], name: str, how: str) -> tuple[str, tuple]:
    """`name` quantized by onnxruntime: "static" (QDQ, uint8 activations for the CNN, int8 for the encoder,
    per-channel int8 weights) or "dynamic" (uint8 weights for the CNN, int8 for the encoder)."""
    path, dims = float_models[name]
    out = path.replace(".onnx", f".{how}.onnx")
    act = ort_quant.QuantType.QUInt8 if name == "cnn" else ort_quant.QuantType.QInt8
    if how == "static":
        ort_quant.quantize_static(path, out, RandomReader(dims), quant_format=ort_quant.QuantFormat.QDQ,
                                  activation_type=act, weight_type=ort_quant.QuantType.QInt8,
                                  per_channel=True)  # fmt: skip
    else:
        ort_quant.quantize_dynamic(path, out, weight_type=act)
    return out, dims


def _onnxruntime(path: str, level: ort.GraphOptimizationLevel) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.graph_optimization_level = level
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def _output_step(path: str) -> float:
    """The scale of the DequantizeLinear that yields output y: one quantization step of the result."""
    m = onnx.load(path)
    initializers = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    [last] = [n for n in m.graph.node if "y" in n.output]
    assert last.op_type == "DequantizeLinear"
    return float(initializers[last.input[1]])


@pytest.mark.parametrize("name", ["cnn", "encoder"])
def test_qdq_static_model_matches_onnxruntime(float_models, name: str) -> None:  # noqa: ANN001
    """A QDQ model means its Q/DQ nodes literally (onnxruntime without its QDQ fusions): glow-mlir computes
    the same integers, so the outputs are equal."""
    path, dims = _quantized(float_models, name, "static")
    ops = {n.op_type for n in onnx.load(path).graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= ops
    session = glow_mlir.InferenceSession(path)
    expected = _onnxruntime(path, ort.GraphOptimizationLevel.ORT_ENABLE_BASIC)
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal(dims).astype(np.float32)
        np.testing.assert_array_equal(session.run(None, {"x": x})[0], expected.run(None, {"x": x})[0])


@pytest.mark.parametrize("name,steps", [("cnn", 0), ("encoder", 4)])
def test_qdq_static_model_near_fused_onnxruntime(float_models, name: str, steps: int) -> None:  # noqa: ANN001
    """onnxruntime's full optimization fuses DQ -> op -> Q into QLinearConv / QLinearMatMul (requantizing
    float32(int32 acc) * multiplier) and softmax into QLinearSoftmax (an exp lookup table): each rounds
    differently by at most one step, and the encoder's two layer norms carry that to a few output steps."""
    path, dims = _quantized(float_models, name, "static")
    session = glow_mlir.InferenceSession(path)
    fused = _onnxruntime(path, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    step = _output_step(path)
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal(dims).astype(np.float32)
        diff = np.abs(session.run(None, {"x": x})[0] - fused.run(None, {"x": x})[0]).max()
        assert diff <= steps * step * (1 + 1e-5), f"seed {seed}: {diff / step:.2f} output steps"


@pytest.mark.parametrize("name", ["cnn", "encoder"])
def test_dynamic_model_matches_onnxruntime(float_models, name: str) -> None:  # noqa: ANN001
    """quantize_dynamic's DynamicQuantizeLinear -> MatMulInteger / ConvInteger -> scale multiply: equal
    integers, then float32 products onnxruntime may order differently (a rounding of the scales)."""
    path, dims = _quantized(float_models, name, "dynamic")
    ops = {n.op_type for n in onnx.load(path).graph.node}
    assert "DynamicQuantizeLinear" in ops and ("ConvInteger" in ops or "MatMulInteger" in ops)
    session = glow_mlir.InferenceSession(path)
    expected = _onnxruntime(path, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal(dims).astype(np.float32)
        want = expected.run(None, {"x": x})[0]
        np.testing.assert_allclose(session.run(None, {"x": x})[0], want, rtol=1e-5, atol=1e-6 * np.abs(want).max())


@pytest.mark.skipif(not int8_rewrite.host_has_vnni(), reason="the host CPU has no avx512_vnni")
def test_dynamic_encoder_runs_the_dynamic_int8_kernel(float_models) -> None:  # noqa: ANN001
    """Every MatMulInteger of the quantize_dynamic encoder (int8 weights, run-time activation scale and zero
    point) becomes glow.cpu_int8_matmul_dynamic on vpdpbusd, and the result still matches onnxruntime."""
    path, dims = _quantized(float_models, "encoder", "dynamic")
    products = sum(n.op_type == "MatMulInteger" for n in onnx.load(path).graph.node)
    expected = _onnxruntime(path, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    with glow_mlir.compile(glow_mlir.import_onnx(path), keep_ir=True, cache=False) as compiled:
        text = compiled.ir("glow-cpu-int8")
        assert text.count('"glow.cpu_int8_matmul_dynamic"') == products > 0
        for seed in range(3):
            x = np.random.default_rng(seed).standard_normal(dims).astype(np.float32)
            want = expected.run(None, {"x": x})[0]
            got = next(iter(compiled.run({"x": x}).values()))
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * np.abs(want).max())


@pytest.mark.parametrize("op", ["MatMul", "Conv"])
def test_qdq_single_layer_within_one_step_of_fused_onnxruntime(op: str) -> None:
    """DQ -> MatMul/Conv -> Q, which onnxruntime fuses into QLinearMatMul/QLinearConv: every output within one
    quantization step of it (the requantization rounds float32(acc) * multiplier, glow-mlir the float sum of
    dequantized products divided by the scale), and most equal."""
    r = np.random.default_rng(3)
    if op == "MatMul":
        x_dims, w = (4, 64), r.integers(-127, 128, (64, 16)).astype(np.int8)
        w_scale, w_zero, axis_attrs = np.array(0.004, np.float32), np.array(0, np.int8), {}
        core = helper.make_node("MatMul", ["xf", "wf"], ["yf"])
    else:
        x_dims, w = (1, 8, 10, 10), r.integers(-127, 128, (12, 8, 3, 3)).astype(np.int8)
        w_scale, w_zero = r.uniform(0.002, 0.006, 12).astype(np.float32), np.zeros(12, np.int8)
        axis_attrs = {"axis": 0}
        core = helper.make_node("Conv", ["xf", "wf"], ["yf"], pads=[1, 1, 1, 1])
    inits = {"w": w, "ws": w_scale, "wz": w_zero, "xs": np.array(0.02, np.float32), "xz": np.array(3, np.uint8),
             "ys": np.array(0.05, np.float32), "yz": np.array(120, np.uint8)}  # fmt: skip
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xf"]),
        helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], **axis_attrs),
        core,
        helper.make_node("QuantizeLinear", ["yf", "ys", "yz"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "qdq", [helper.make_tensor_value_info("x", TP.FLOAT, x_dims)],
        [helper.make_tensor_value_info("y", TP.UINT8, None)],
        initializer=[numpy_helper.from_array(a, n) for n, a in inits.items()],
    )  # fmt: skip
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=IR_VERSION)
    data = m.SerializeToString()
    x = r.uniform(-2.5, 2.5, x_dims).astype(np.float32)
    fused = _onnxruntime(data, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)  # type: ignore[arg-type]
    with glow_mlir.compile(import_model(m)) as compiled:
        got = compiled.run({"x": x})["y"].astype(np.int64)
    want = fused.run(None, {"x": x})[0].astype(np.int64)
    assert np.abs(got - want).max() <= 1
    assert np.mean(got == want) > 0.95


def test_fold_qdq_on_the_encoder_keeps_every_number(float_models) -> None:  # noqa: ANN001
    """glow-quant-fold-qdq on the imported QDQ encoder: the DQ -> reshape/transpose -> Q chains become int8
    moves, and the outputs (interpreted and compiled) stay equal to the unfolded model's."""
    from glow_mlir.context import copy_module
    from glow_mlir.passes.graph.quant_fold_qdq import fold_qdq

    path, dims = _quantized(float_models, "encoder", "static")
    graph = import_model(path)
    folded = copy_module(graph.module)
    with folded.context:
        fold_qdq(folded)
    before, after = str(graph.module).count("glow.convert_to"), str(folded).count("glow.convert_to")
    assert after <= before - 8, (before, after)
    x = {"x": np.random.default_rng(4).standard_normal(dims).astype(np.float32)}
    expected = glow_mlir.interpret(graph.module, x)["y"]
    np.testing.assert_array_equal(glow_mlir.interpret(folded, x)["y"], expected)
    with glow_mlir.compile(folded) as compiled:
        np.testing.assert_array_equal(compiled.run(x)["y"], expected)
