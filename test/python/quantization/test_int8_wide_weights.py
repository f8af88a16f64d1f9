"""Integer products whose weights leave int8's range: uint8 weights minus a zero point other than 128 (onnxruntime's
quantize_dynamic with QUInt8 weights, QOperator models with uint8 filters) span [-z, 255 - z]. The int8 kernels take
them as int8 W - c plus a per-column offset c, adding c times each row's byte sum (int8_ops.column_offsets); before,
such products were float64 or i32 loop nests, 30 to 150 times onnxruntime's time."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import glow_mlir
from glow_mlir.backends.cpu import int8_ops, int8_rewrite

needs_vnni = pytest.mark.skipif(not int8_rewrite.host_has_vnni(), reason="the host CPU has no avx512_vnni")
rng = np.random.default_rng(29)


def test_column_offsets_keep_int8_columns_and_centre_wider_ones() -> None:
    w = np.array([[-128, 0, -119, 0, 0], [127, 255, 136, -200, -201], [0, 3, 0, 55, 55]])
    np.testing.assert_array_equal(int8_ops.column_offsets(w[:, :4]), [0, 128, 9, -72])
    assert int8_ops.column_offsets(w) is None  # the last column spans 256 steps
    assert int8_ops.column_offsets(np.array([[256], [1]])) is None  # with 0: 257


@pytest.mark.parametrize(("k", "n"), [(1, 1), (5, 17), (70, 40)])
def test_wide_weights_pack_with_a_row_of_offsets(k: int, n: int) -> None:
    zero = rng.integers(0, 256, n)
    w = rng.integers(0, 256, (k, n)) - zero
    packed = int8_ops.pack_weights(w)
    plain, with_offsets = int8_ops.packed_rows(k, n)
    assert packed.shape == (with_offsets if int8_ops.column_offsets(w).any() else plain)
    np.testing.assert_array_equal(int8_ops.unpack_weights(packed, k, n), w)
    assert int8_ops.pack_weights(np.clip(w, -128, 127)).shape == plain


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_definition_with_offsets_is_the_centred_integer_product(dtype: type) -> None:
    m, k, n, zero = 5, 37, 21, 3
    info = np.iinfo(dtype)
    q = rng.integers(info.min, info.max + 1, (m, k)).astype(dtype)
    w = rng.integers(0, 256, (k, n)) - 119
    multiplier = rng.uniform(1e-5, 1e-3, n).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    got = int8_ops.product(q, int8_ops.pack_weights(w), int8_ops.correction(w, zero, int8_ops.offset(q.dtype)),
                           multiplier, bias)  # fmt: skip
    acc = (q.astype(np.int64) - zero) @ w
    np.testing.assert_array_equal(got, acc.astype(np.int32).astype(np.float32) * multiplier + bias)


def _model(nodes: list, inits: dict, x: tuple[int, ...], x_type: int = TensorProto.FLOAT) -> bytes:
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", x_type, x)],
                              [helper.make_empty_tensor_value_info("y")],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def _same_as_onnxruntime(model: bytes, feeds: list[np.ndarray], op: str) -> None:
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    with glow_mlir.compile(glow_mlir.import_onnx(model), keep_ir=True, cache=False) as compiled:
        text = compiled.ir("glow-cpu-int8")
        assert f"glow.{op}" in text and "glow.matmul" not in text and "glow.convolution" not in text
        for x in feeds:
            np.testing.assert_array_equal(compiled.run({"x": x})["y"], session.run(None, {"x": x})[0])


def _uint8_weight_product(op: str, w: np.ndarray, channels: int, dynamic: bool,
                          attrs: dict[str, object]) -> tuple[list, dict]:  # fmt: skip
    """(nodes, initializers) of x -> `op` (MatMul or Conv) with uint8 weights `w` -> y: DynamicQuantizeLinear and
    the Integer op (quantize_dynamic's QUInt8 weights, one zero point), or QuantizeLinear, the QLinear op with a
    zero point per output channel, DequantizeLinear."""
    if dynamic:
        inits = {"w": w, "wz": np.array(119, np.uint8), "ws": np.float32(0.003)}
        nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"]),
                 helper.make_node(f"{op}Integer", ["q", "w", "z", "wz"], ["acc"], **attrs),
                 helper.make_node("Cast", ["acc"], ["f"], to=TensorProto.FLOAT),
                 helper.make_node("Mul", ["s", "ws"], ["scale"]),
                 helper.make_node("Mul", ["f", "scale"], ["y"])]  # fmt: skip
        return nodes, inits
    inits = {"xs": np.float32(0.02), "xz": np.array(131, np.uint8), "w": w,
             "wz": rng.integers(0, 256, channels).astype(np.uint8),
             "ws": (rng.random(channels) * 0.002 + 0.001).astype(np.float32),
             "ys": np.float32(0.4), "yz": np.array(90, np.uint8)}  # fmt: skip
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["q"]),
             helper.make_node(f"QLinear{op}", ["q", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["yq"], **attrs),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]  # fmt: skip
    return nodes, inits


# (M, K, N): K with a masked tail of its 64-byte row sums and of its 4-byte steps, N with a partial 16-column block,
# M across row tiles.
@needs_vnni
@pytest.mark.parametrize(("m", "k", "n"), [(1, 3, 5), (7, 70, 20), (13, 256, 48)])
@pytest.mark.parametrize("dynamic", [False, True])
def test_uint8_weight_products_run_the_int8_kernel(m: int, k: int, n: int, dynamic: bool) -> None:
    """MatMulInteger after DynamicQuantizeLinear and QLinearMatMul, bit for bit as onnxruntime."""
    nodes, inits = _uint8_weight_product("MatMul", rng.integers(0, 256, (k, n)).astype(np.uint8), n, dynamic, {})
    feeds = [np.random.default_rng(seed).standard_normal((m, k)).astype(np.float32) for seed in range(2)]
    op = "cpu_int8_matmul_dynamic" if dynamic else "cpu_int8_matmul"
    _same_as_onnxruntime(_model(nodes, inits, (m, k)), feeds, op)


# (channels, kernel, stride, pad, dilation): channels not a multiple of 4 (the masked bytes of each tap), a window row
# over 64 bytes, a 1x1 GEMM, a dilated window (runs of C bytes 2 pixels apart).
CONVS = [(3, 3, 1, 1, 1), (30, 3, 2, 1, 1), (16, 1, 1, 0, 1), (8, 3, 1, 2, 2)]


@needs_vnni
@pytest.mark.parametrize(("c", "kernel", "stride", "pad", "dilation"), CONVS)
@pytest.mark.parametrize("dynamic", [False, True])
def test_uint8_weight_convolutions_run_the_int8_kernel(c: int, kernel: int, stride: int, pad: int, dilation: int,
                                                       dynamic: bool) -> None:  # fmt: skip
    """ConvInteger after DynamicQuantizeLinear and QLinearConv with uint8 filters, bit for bit as onnxruntime."""
    o, hw = 20, 9
    w = rng.integers(0, 256, (o, c, kernel, kernel)).astype(np.uint8)
    attrs = {"kernel_shape": [kernel, kernel], "strides": [stride] * 2, "pads": [pad] * 4, "dilations": [dilation] * 2}
    nodes, inits = _uint8_weight_product("Conv", w, o, dynamic, attrs)
    feeds = [np.random.default_rng(seed).standard_normal((1, c, hw, hw)).astype(np.float32) for seed in range(2)]
    _same_as_onnxruntime(_model(nodes, inits, (1, c, hw, hw)), feeds, "cpu_int8_conv_nhwc")


@needs_vnni
def test_int8_activations_with_uint8_weights_equal_the_interpreter() -> None:
    """An int8 activation (offset 128: the masked bytes of each tap are 0x80 before the kernel makes them 0) times a
    uint8 filter, which onnxruntime does not implement: bit for bit as the reference interpreter."""
    c, o = 6, 20
    inits = {"xs": np.float32(0.02), "xz": np.array(-3, np.int8),
             "w": rng.integers(0, 256, (o, c, 3, 3)).astype(np.uint8), "wz": np.array(60, np.uint8),
             "ws": np.float32(0.002), "ys": np.float32(0.4), "yz": np.array(90, np.uint8)}  # fmt: skip
    nodes = [helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1])]  # fmt: skip
    graph = glow_mlir.import_onnx(_model(nodes, inits, (1, c, 7, 7), TensorProto.INT8))
    with glow_mlir.compile(graph, keep_ir=True, cache=False) as compiled:
        assert "glow.cpu_int8_conv_nhwc" in compiled.ir("glow-cpu-int8")
        for seed in range(2):
            x = {"x": np.random.default_rng(seed).integers(-128, 128, (1, c, 7, 7)).astype(np.int8)}
            np.testing.assert_array_equal(compiled.run(x)["y"], glow_mlir.interpret(graph.module, x)["y"])


@needs_vnni
@pytest.mark.parametrize(("kernel", "stride"), [(3, 1), (5, 2)])
def test_uint8_depthwise_filters_run_the_depthwise_kernel(kernel: int, stride: int) -> None:
    """A depthwise QLinearConv with uint8 weights less a per-tensor zero point of 77 ([-77, 178]: past int8) and
    an int32 bias: the depthwise kernel on an int16 filter, bit for bit as onnxruntime (a float convolution,
    then a requantization, before)."""
    c, hw = 24, 10
    attrs = {"kernel_shape": [kernel, kernel], "strides": [stride] * 2, "pads": [kernel // 2] * 4, "group": c}
    nodes, inits = _uint8_weight_product("Conv", rng.integers(0, 256, (c, 1, kernel, kernel)).astype(np.uint8), c,
                                         False, attrs)  # fmt: skip
    inits["wz"] = np.array(77, np.uint8)
    inits["b"] = rng.integers(-5000, 5000, c).astype(np.int32)
    nodes[1].input.append("b")
    feeds = [np.random.default_rng(seed).standard_normal((1, c, hw, hw)).astype(np.float32) for seed in range(2)]
    model = _model(nodes, inits, (1, c, hw, hw))
    _same_as_onnxruntime(model, feeds, "cpu_int8_depthwise_nhwc")
    with glow_mlir.compile(glow_mlir.import_onnx(model), keep_ir=True, cache=False) as compiled:
        [line] = [line for line in compiled.ir("glow-cpu-int8").splitlines() if "cpu_int8_depthwise_nhwc" in line]
        assert f"tensor<{kernel}x{kernel}x{c}xi16>" in line
