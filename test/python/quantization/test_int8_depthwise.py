"""The CPU backend's depthwise int8 convolution (glow.cpu_int8_depthwise_nhwc, int8_depthwise.py): the op's
definition against numpy's integer arithmetic, compiled code bit-identical to the reference interpreter over the
shape class (3x3, 5x5 and 7x7 windows, strides 1 and 2, padding, channels not multiples of 16, zero points 0 and
not, no activation, relu and relu6, f32 and uint8 results), MobileNetV2's block passing uint8 tensors only, the
window bound past which the convolution stays float, and onnxruntime's quantize_static QDQ model of that block
matching onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from mlir import ir

import glow_mlir
from glow_mlir import quantization as quant
from glow_mlir.backends.cpu import int8_ops, int8_rewrite
from glow_mlir.context import make_context
from qdq_models import quantize_static

needs_vnni = pytest.mark.skipif(not int8_rewrite.host_has_vnni(), reason="the host CPU has no avx512_vnni")
rng = np.random.default_rng(1416)
DEPTHWISE = "glow.cpu_int8_depthwise_nhwc"


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize(("zero", "stride", "pads"), [(0, 1, (0,) * 4), (37, 2, (1,) * 4), (-5, 1, (2, 0, 1, 3))])
def test_definition_is_the_centred_integer_product(dtype: type, zero: int, stride: int, pads: tuple[int, ...]) -> None:
    """sum x * W - z * sum(W) per channel over the input padded with z = sum (x - z) * W over the input padded with
    0 (the float convolution's padding), then the two float32 operations."""
    info = np.iinfo(dtype)
    zero = int(np.clip(zero, info.min, info.max))
    x = rng.integers(info.min, info.max + 1, (2, 9, 8, 21)).astype(dtype)
    w = rng.integers(-128, 128, (21, 1, 3, 3)).astype(np.int8)
    multiplier = rng.uniform(1e-5, 1e-3, 21).astype(np.float32)
    bias = rng.standard_normal(21).astype(np.float32)
    taps = int8_ops.depthwise_weights(w)
    assert taps.shape == (3, 3, 21) and (taps[1, 2] == w[:, 0, 1, 2]).all()
    corr = int8_ops.depthwise_correction(taps, zero)
    got = int8_ops.depthwise_product([x, taps, corr, multiplier, bias], (3, 3), (stride, stride), pads, zero)
    top, left, bottom, right = pads
    centred = np.pad(x.astype(np.int64) - zero, ((0, 0), (top, bottom), (left, right), (0, 0)))
    oh, ow = (centred.shape[1] - 3) // stride + 1, (centred.shape[2] - 3) // stride + 1
    acc = np.zeros((2, oh, ow, 21), np.int64)
    for i in range(3):
        for j in range(3):
            window = centred[:, i : i + stride * (oh - 1) + 1 : stride, j : j + stride * (ow - 1) + 1 : stride]
            acc += window * w[:, 0, i, j]
    np.testing.assert_array_equal(got, acc.astype(np.float32) * multiplier + bias)


def test_the_window_bound() -> None:
    """float32 sums of uint8 x int8 products stay exact up to 514 taps: 7x7 windows are far inside."""
    assert int8_ops.depthwise_exact(49) and int8_ops.depthwise_exact(514)
    assert not int8_ops.depthwise_exact(515)
    assert 514 * 255 * 128 < 2**24 <= 515 * 255 * 128


def _relu6(g: glow_mlir.Graph, t: glow_mlir.Tensor) -> glow_mlir.Tensor:
    return g.min(g.max(t, g.splat(t.shape, 0.0)), g.splat(t.shape, 6.0))


def _depthwise(g: glow_mlir.Graph, x: glow_mlir.Tensor, kernel: int, stride: int, name: str) -> glow_mlir.Tensor:
    c = x.shape[1]
    w = (rng.standard_normal((c, 1, kernel, kernel)) / kernel).astype(np.float32)
    return g.convolution(x, g.constant(w), g.constant(rng.standard_normal(c).astype(np.float32)), strides=(stride,) * 2,
                         pads=(kernel // 2,) * 4, group=c, name=name)  # fmt: skip


def _pointwise(g: glow_mlir.Graph, t: glow_mlir.Tensor, o: int, name: str) -> glow_mlir.Tensor:
    w = (rng.standard_normal((o, t.shape[1], 1, 1)) / np.sqrt(t.shape[1])).astype(np.float32)
    return g.convolution(t, g.constant(w), g.constant(rng.standard_normal(o).astype(np.float32)), name=name)


def _layer(c: int, hw: int, kernel: int, stride: int, activation: str, uint8_out: bool) -> glow_mlir.Graph:
    """1x1 convolution (whose epilogue writes the depthwise input in uint8: quantize() quantizes a depthwise
    convolution so fed) -> depthwise -> activation, then (`uint8_out`) a 1x1 convolution, whose quantization the
    depthwise epilogue then writes as its uint8 result."""
    g = glow_mlir.Graph("dw")
    x = g.input("x", (1, c, hw, hw))
    y = _depthwise(g, _pointwise(g, x, c, "pw0"), kernel, stride, "dw")
    y = {"none": lambda t: t, "relu": g.relu, "relu6": lambda t: _relu6(g, t)}[activation](y)
    if uint8_out:
        y = _pointwise(g, y, 8, "pw")
    g.output("y", y)
    return g


def _check(g: glow_mlir.Graph, shape: tuple[int, ...], schema: str, result: str) -> None:
    """Quantize `g` (`schema`), compile it: one depthwise op with a `result` (f32 or ui8) element type and no float
    convolution; outputs bit-identical to the interpreter on the quantized graph."""
    feeds = [{"x": (2 * rng.standard_normal(shape) + 0.5).astype(np.float32)} for _ in range(3)]
    q = quant.quantize(g, quant.profile(g, feeds[:2]), schema=schema)
    with glow_mlir.compile(q, keep_ir=True, cache=False) as compiled:
        text = compiled.ir("glow-cpu-int8")
        [line] = [line for line in text.splitlines() if DEPTHWISE in line]
        # It reads the uint8 activation that the 1x1 convolution before writes.
        assert line.endswith(f"x{result}>") and "xui8>, tensor<" in line and "glow.convolution" not in text
        for feed in feeds:
            np.testing.assert_array_equal(compiled.run(feed)["y"], glow_mlir.interpret(q, feed)["y"])


# (C, H = W, kernel, stride), padded by kernel // 2: 3x3 to 9x9 windows; strides 1 and 2 with odd and even sizes;
# channels below, at and across 16 (the masked last block), MobileNetV2's 960 and 144; more and fewer output columns
# than a register tile; images smaller than the window (every pixel reads padding).
SHAPES = [(8, 9, 3, 1), (20, 10, 3, 2), (33, 7, 5, 1), (16, 12, 7, 2), (144, 11, 3, 2), (960, 5, 3, 1), (100, 6, 5, 2),
          (17, 19, 7, 1), (24, 3, 5, 1), (12, 4, 7, 2), (20, 10, 9, 1)]  # fmt: skip


@needs_vnni
@pytest.mark.parametrize(("c", "hw", "kernel", "stride"), SHAPES)
@pytest.mark.parametrize("schema", ["asymmetric", "symmetric"])
def test_compiled_depthwise_equals_the_interpreter(c: int, hw: int, kernel: int, stride: int, schema: str) -> None:
    """Over the shape class, with relu6 and a uint8 result (MobileNetV2's), and zero points not 0 (asymmetric)
    and 0 (symmetric)."""
    _check(_layer(c, hw, kernel, stride, "relu6", True), (1, c, hw, hw), schema, "ui8")


@needs_vnni
@pytest.mark.parametrize("activation", ["none", "relu", "relu6"])
@pytest.mark.parametrize("uint8_out", [False, True])
def test_epilogues(activation: str, uint8_out: bool) -> None:
    """No activation, relu and relu6, each with an f32 result (the graph's output) and a uint8 one."""
    _check(_layer(40, 9, 3, 1, activation, uint8_out), (1, 40, 9, 9), "asymmetric", "ui8" if uint8_out else "f32")


@needs_vnni
def test_large_windows_are_loops_not_copies() -> None:
    """MixNet's 9x9 window on 14x14: the rows at the top and bottom padding are one loop and the filter rows a loop
    in each tile, so the kernel's code stays small (the rows one by one with every tap unrolled were 47 000
    multiply-adds of code for this layer, most of a quantized MixNet's compile)."""
    g = _layer(32, 14, 9, 1, "relu6", True)
    feeds = [{"x": rng.standard_normal((1, 32, 14, 14)).astype(np.float32)} for _ in range(2)]
    q = quant.quantize(g, quant.profile(g, feeds))
    with glow_mlir.compile(q, keep_ir=True, cache=False) as compiled:
        assert compiled.ir("glow-ir-to-linalg").count("vector.fma") < 2000
        np.testing.assert_array_equal(compiled.run(feeds[0])["y"], glow_mlir.interpret(q, feeds[0])["y"])


@needs_vnni
def test_a_window_past_the_exact_bound_stays_float() -> None:
    """A 23x23 window (529 taps) could round in float32 sums: its convolution keeps the float kernel."""
    g = _layer(4, 23, 23, 1, "none", False)
    feeds = [{"x": rng.standard_normal((1, 4, 23, 23)).astype(np.float32)} for _ in range(2)]
    q = quant.quantize(g, quant.profile(g, feeds))
    with glow_mlir.compile(q, keep_ir=True, cache=False) as compiled:
        text = compiled.ir("glow-cpu-int8")
        assert DEPTHWISE not in text and "glow.convolution" in text
        np.testing.assert_array_equal(compiled.run(feeds[0])["y"], glow_mlir.interpret(q, feeds[0])["y"])


def _block(g: glow_mlir.Graph, x: glow_mlir.Tensor, expand: int, stride: int) -> glow_mlir.Tensor:
    """MobileNetV2's inverted residual body: 1x1 expand -> relu6 -> 3x3 depthwise -> relu6 -> 1x1 project."""
    h = _relu6(g, _pointwise(g, x, expand, "expand"))
    h = _relu6(g, _depthwise(g, h, 3, stride, "depthwise"))
    return _pointwise(g, h, 12, "project")


@needs_vnni
@pytest.mark.parametrize("schema", ["asymmetric", "symmetric"])
def test_mobilenet_block_passes_uint8(schema: str) -> None:
    """MobileNetV2's block, quantized: the expansion writes the uint8 activation (relu6 and the depthwise input's
    quantization in its epilogue), the depthwise convolution reads it and writes the projection's uint8 input;
    bit-identical to the interpreter's chain of float ops."""
    g = glow_mlir.Graph("block")
    g.output("y", _block(g, g.input("x", (1, 8, 7, 7)), 24, 1))
    feeds = [{"x": 2 * rng.standard_normal((1, 8, 7, 7)).astype(np.float32)} for _ in range(3)]
    q = quant.quantize(g, quant.profile(g, feeds[:2]), schema=schema)
    with glow_mlir.compile(q, keep_ir=True, cache=False) as compiled:
        text = compiled.ir("glow-cpu-int8")
        expand, depthwise = [line for line in text.splitlines() if "clip = 6.0" in line]
        assert "glow.cpu_int8_conv_nhwc" in expand and expand.endswith("-> tensor<1x7x7x24xui8>")
        assert DEPTHWISE in depthwise and "(tensor<1x7x7x24xui8>" in depthwise
        assert depthwise.endswith("-> tensor<1x7x7x24xui8>")
        assert "glow.min" not in text and "glow.div" not in text
        for feed in feeds:
            np.testing.assert_array_equal(compiled.run(feed)["y"], glow_mlir.interpret(q, feed)["y"])


def _mobilenet_blocks() -> torch.nn.Module:
    """Two MobileNetV2 blocks (the second strided) between a stem convolution and a classifier: what onnxruntime's
    quantize_static makes QDQ."""

    def block(c: int, expand: int, out: int, stride: int) -> torch.nn.Module:
        return torch.nn.Sequential(
            torch.nn.Conv2d(c, expand, 1), torch.nn.ReLU6(),
            torch.nn.Conv2d(expand, expand, 3, stride, 1, groups=expand), torch.nn.ReLU6(),
            torch.nn.Conv2d(expand, out, 1),
        )  # fmt: skip

    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, 2, 1), torch.nn.ReLU6(), block(16, 40, 24, 1), block(24, 72, 20, 2),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(20, 10),
    )  # fmt: skip


@needs_vnni
@pytest.mark.parametrize("activations", ["QUInt8", "QInt8"])
def test_imported_qdq_mobilenet_blocks_match_onnxruntime(tmp_path, activations: str) -> None:  # noqa: ANN001
    """onnxruntime's quantize_static QDQ model of MobileNetV2-style blocks: each depthwise convolution runs on
    cpu_int8_depthwise_nhwc reading the uint8 (int8) activation; the output stays within one output quantization
    step of onnxruntime (which requantizes its fused QLinearConv differently: docs/QUANTIZATION.md)."""
    import onnxruntime as ort

    torch.manual_seed(0)
    shape = (1, 3, 16, 16)
    quantized, step = quantize_static(_mobilenet_blocks(), shape, tmp_path, rng, activations)
    session = ort.InferenceSession(quantized, providers=["CPUExecutionProvider"])
    with glow_mlir.compile(glow_mlir.import_onnx(quantized), keep_ir=True, cache=False) as compiled:
        text = compiled.ir("glow-cpu-int8")
        # int8 activations too reach the kernel as uint8: their quantization is rebuilt so (`_unsigned`), and
        # written by the expansion's epilogue; the depthwise convolution writes the projection's input.
        depthwise = [line for line in text.splitlines() if DEPTHWISE in line]
        assert len(depthwise) == 2
        assert all("xui8>, tensor<3x3x" in line and line.endswith("xui8>") for line in depthwise)
        assert "glow.convolution" not in text
        rewritten = ir.Module.parse(text, make_context())
        for seed in range(3):
            feed = {"x": np.random.default_rng(seed).standard_normal(shape).astype(np.float32)}
            got = compiled.run(feed)["y"]
            np.testing.assert_array_equal(got, glow_mlir.interpret(rewritten, feed)["y"])
            diff = np.abs(got - session.run(None, feed)[0]).max()
            assert diff <= step * (1 + 1e-5), f"seed {seed}: {diff / step:.2f} output steps"


@needs_vnni
@pytest.mark.parametrize("dtype", ["i8", "ui8"])
@pytest.mark.parametrize(("channels", "pads"), [(17, (1, 1, 1, 1)), (40, (0, 1, 2, 0))])
def test_kernel_reads_int8_and_uint8(dtype: str, channels: int, pads: tuple[int, ...]) -> None:
    """A dequantized model input (int8 or uint8 with a zero point, as a QDQ model's DequantizeLinear) into a
    depthwise convolution with per-channel int8 weights: the kernel reads the bytes as they are, widened as signed
    or unsigned; bit-identical to the interpreter on the rewritten graph (16k + 1 channels: one-lane stores;
    uneven pads [top, left, bottom, right], as stride-2 "same" padding has)."""
    g = glow_mlir.Graph("dq")
    shape = (1, channels, 8, 8)
    q = g.input("q", shape, dtype=dtype)
    zero, scale = (-7, 0.05) if dtype == "i8" else (131, 0.03)
    x = g.mul(g.sub(g.convert_to(q, "f32"), g.splat(shape, zero)), g.splat(shape, scale))
    steps = rng.integers(-127, 128, (channels, 1, 3, 3))
    steps[:, 0, 0, 0] = 127
    # DequantizeLinear of int8 weights, folded: float32(steps * scale) per channel (int8_rewrite.integer_weights).
    w = steps.astype(np.float32) * rng.uniform(0.001, 0.01, (channels, 1, 1, 1)).astype(np.float32)
    y = g.convolution(x, g.constant(w), g.constant(rng.standard_normal(channels).astype(np.float32)),
                      strides=(2, 2), pads=pads, group=channels, name="dw")  # fmt: skip
    g.output("y", _relu6(g, y))
    info = np.iinfo(np.int8 if dtype == "i8" else np.uint8)
    feeds = [{"q": rng.integers(info.min, info.max + 1, shape).astype(info.dtype)} for _ in range(3)]
    with glow_mlir.compile(g, keep_ir=True, cache=False) as compiled:
        text = compiled.ir("glow-cpu-int8")
        [line] = [line for line in text.splitlines() if DEPTHWISE in line]
        assert f"(tensor<1x8x8x{channels}x{dtype}>" in line and "clip = 6.0" in line
        assert f"pads = array<i64: {', '.join(map(str, pads))}>" in line
        rewritten = ir.Module.parse(text, make_context())
        for feed in feeds:
            np.testing.assert_array_equal(compiled.run(feed)["y"], glow_mlir.interpret(rewritten, feed)["y"])


@needs_vnni
@pytest.mark.parametrize(("bias_high", "int8"), [(3000, True), (2**28, False)])
def test_qlinearconv_int32_bias_runs_the_kernel_where_exact(bias_high: int, int8: bool) -> None:
    """QOperator's depthwise QLinearConv with its int32 bias: the bias is taken off the correction, whose one
    float32 subtraction rounds the exact sum as onnxruntime's int32 -> float32 does, while float32 holds the
    correction; a bias past that keeps the (float64) convolution. Bit for bit as onnxruntime either way."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    c = 20
    bias = rng.integers(-bias_high, bias_high, c).astype(np.int32)
    bias[0] = bias_high - 1  # odd and past 2^24 in the second case: not a float32
    inits = {"xs": np.float32(0.02), "xz": np.array(120, np.uint8),
             "w": rng.integers(-127, 128, (c, 1, 3, 3)).astype(np.int8),
             "ws": (rng.random(c) * 0.002 + 0.001).astype(np.float32), "wz": np.zeros(c, np.int8),
             "ys": np.float32(0.3), "yz": np.array(100, np.uint8), "b": bias}  # fmt: skip
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["q"]),
             helper.make_node("QLinearConv", ["q", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["yq"],
                              kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=c),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]  # fmt: skip
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 9, 9])],
                              [helper.make_empty_tensor_value_info("y")],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    with glow_mlir.compile(glow_mlir.import_onnx(model), keep_ir=True, cache=False) as compiled:
        assert (DEPTHWISE in compiled.ir("glow-cpu-int8")) == int8
        for seed in range(3):
            x = np.random.default_rng(seed).standard_normal((1, c, 9, 9)).astype(np.float32)
            np.testing.assert_array_equal(compiled.run({"x": x})["y"], session.run(None, {"x": x})[0])
