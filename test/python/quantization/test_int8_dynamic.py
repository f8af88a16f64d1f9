"""Dynamic int8 (glow.cpu_int8_matmul_dynamic): the op's definition against numpy's integer arithmetic with
run-time zero points and scales, quantize(dynamic=True) compiled bit-identical to the reference interpreter
over shapes that are not multiples of the register tile, and quantize() leaving products without an int8
kernel (grouped convolutions other than depthwise ones, dilated ones) in float."""

from __future__ import annotations

import re

import numpy as np
import pytest
from mlir import ir

import glow_mlir
from glow_mlir import quantization as quant
from glow_mlir.backends.cpu import int8_ops, int8_rewrite
from glow_mlir.context import copy_module

needs_vnni = pytest.mark.skipif(not int8_rewrite.host_has_vnni(), reason="the host CPU has no avx512_vnni")
rng = np.random.default_rng(7)


@pytest.mark.parametrize(("dtype", "zero"), [(np.uint8, 0), (np.uint8, 131), (np.int8, -5), (np.int8, 127)])
def test_dynamic_definition_is_the_centred_integer_product(dtype: type, zero: int) -> None:
    """sum (q + offset) W - (offset + z) colsum(W) = sum (q - z) W, times float32(s * m), plus the bias."""
    m, k, n = 5, 37, 21
    info = np.iinfo(dtype)
    q = rng.integers(info.min, info.max + 1, (m, k)).astype(dtype)
    w = rng.integers(-127, 128, (k, n), dtype=np.int8)
    multiplier = rng.uniform(1e-3, 1e-2, n).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    scale = np.array(0.0371, np.float32)
    got = int8_ops.dynamic_product(q, int8_ops.pack_weights(w), int8_ops.colsum(w), multiplier, bias,
                                   np.array(zero, np.int32), scale)  # fmt: skip
    acc = (q.astype(np.int32) - zero) @ w.astype(np.int32)
    np.testing.assert_array_equal(got, acc.astype(np.float32) * (scale * multiplier) + bias)


def _mlp(m: int, k: int, n: int) -> glow_mlir.Graph:
    """fully_connected (k -> n), relu, then matmul (n -> 5): both products quantized dynamically."""
    g = glow_mlir.Graph("mlp")
    x = g.input("x", (m, k))
    w1 = g.constant(rng.standard_normal((k, n)).astype(np.float32))
    h = g.relu(g.fully_connected(x, w1, g.constant(rng.standard_normal(n).astype(np.float32)), name="fc"))
    g.output("y", g.matmul(h, g.constant(rng.standard_normal((n, 5)).astype(np.float32)), name="mm"))
    return g


# (M, K, N): one row, K not a multiple of 4, N below, at and across 16-column blocks, M across row tiles.
SHAPES = [(1, 1, 1), (3, 5, 17), (7, 13, 33), (16, 128, 70), (25, 37, 130)]


@needs_vnni
@pytest.mark.parametrize(("m", "k", "n"), SHAPES)
@pytest.mark.parametrize("per_channel", [True, False])
def test_compiled_dynamic_gemm_equals_the_interpreter(m: int, k: int, n: int, per_channel: bool) -> None:
    """Each run's own scale and zero point (inputs of different ranges and signs, and all zeros, whose scale
    is the smallest normal float) reach the kernel as run-time values, the relu between the products its
    epilogue: bit-identical to the interpreter."""
    g = _mlp(m, k, n)
    q = quant.quantize(g, dynamic=True, per_channel=per_channel)
    x = rng.standard_normal((m, k)).astype(np.float32)
    feeds = [x, 30 * x, np.abs(x) + 1, -np.abs(x), np.zeros_like(x)]
    # The op's evaluator (int8_ops.dynamic_product) on the rewritten graph is the same oracle.
    rewritten = copy_module(q)
    with rewritten.context, ir.Location.unknown():
        int8_rewrite.cpu_int8(rewritten)
    assert '"glow.cpu_int8_matmul_dynamic"' in str(rewritten)
    for feed in feeds:
        np.testing.assert_array_equal(glow_mlir.interpret(rewritten, {"x": feed})["y"],
                                      glow_mlir.interpret(q, {"x": feed})["y"])  # fmt: skip
    with glow_mlir.compile(q, keep_ir=True, cache=False) as compiled:
        text = compiled.ir("glow-cpu-int8")
        assert text.count('"glow.cpu_int8_matmul_dynamic"') == 2 and "glow.matmul" not in text
        # fc computes the relu in its epilogue.
        assert "relu = true" in text and "glow.relu" not in text
        for feed in feeds:
            np.testing.assert_array_equal(compiled.run({"x": feed})["y"], glow_mlir.interpret(q, {"x": feed})["y"])


def test_dynamic_quantization_is_accurate_and_needs_no_profile() -> None:
    g = _mlp(16, 128, 256)
    feed = {"x": rng.standard_normal((16, 128)).astype(np.float32)}
    want = glow_mlir.interpret(g.module, feed)["y"]
    got = glow_mlir.interpret(quant.quantize(g, dynamic=True), feed)["y"]
    assert 10 * np.log10((want**2).sum() / ((want - got) ** 2).sum()) > 30
    with pytest.raises(ValueError, match="needs a profile"):
        quant.quantize(g)


def test_grouped_convolutions_stay_float() -> None:
    """A grouped convolution (2 channels per group), a dilated depthwise one, or a depthwise one whose input no
    quantized product's epilogue writes (here the grouped one's float result) has no int8 kernel that pays:
    quantizing it would only add a quantization before a float convolution on centred integers, or a quantization
    pass. A depthwise convolution after a quantized product and its relu (cpu_int8_depthwise_nhwc) and the
    group-1 convolutions are quantized."""
    g = glow_mlir.Graph("dw")
    x = g.input("x", (1, 8, 6, 6))

    def conv(t: glow_mlir.Tensor, o: int, k: int, group: int, name: str, dilation: int = 1) -> glow_mlir.Tensor:
        w = rng.standard_normal((o, 8 // group, k, k)).astype(np.float32)
        return g.convolution(t, g.constant(w), g.constant(np.zeros(o, np.float32)), pads=(dilation * (k // 2),) * 4,
                             dilation=(dilation, dilation), group=group, name=name)  # fmt: skip

    h = conv(conv(x, 8, 3, 4, "grouped"), 8, 3, 8, "dw_after_grouped")
    h = conv(g.relu(conv(h, 8, 1, 1, "pw1")), 8, 3, 8, "dw_after_pw")
    g.output("y", conv(conv(h, 8, 3, 8, "dilated", dilation=2), 4, 1, 1, "pw2"))
    feeds = [{"x": rng.standard_normal((1, 8, 6, 6)).astype(np.float32)} for _ in range(2)]
    text = str(quant.quantize(g, quant.profile(g, feeds)))
    producers = dict(re.findall(r'(%\w+) = "glow\.(\w+)"', text))
    inputs = [producers.get(x, x) for x in re.findall(r'"glow\.convolution"\((%\w+),', text)]
    # The grouped one reads the float input itself, the first depthwise one the grouped one's float result and
    # the dilated one the second depthwise one's requantized result; the others read centred integers.
    assert inputs == ["%arg0", "convolution", "sub", "sub", "add", "sub"]
    assert "glow.round" in text


@needs_vnni
@pytest.mark.parametrize("weight_type", ["QInt8", "QUInt8"])
def test_onnxruntime_dynamic_cnn_runs_the_int8_convolution(tmp_path, weight_type: str) -> None:  # noqa: ANN001
    """onnxruntime's quantize_dynamic of a CNN (DynamicQuantizeLinear + ConvInteger, strided, padded and not):
    each convolution on vpdpbusd with its zero point's correction, multiplier and padding formed at run time,
    the output onnxruntime's bit for bit."""
    import onnx
    import onnxruntime as ort
    from onnx import helper, numpy_helper
    from onnxruntime.quantization import QuantType, quantize_dynamic

    local = np.random.default_rng(5)
    inits = {"w1": local.standard_normal((16, 3, 3, 3)).astype(np.float32),
             "b1": local.standard_normal(16).astype(np.float32),
             "w2": (local.standard_normal((8, 16, 1, 1)) * 0.3).astype(np.float32)}  # fmt: skip
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                              strides=[2, 2]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Conv", ["r", "w2"], ["y"], kernel_shape=[1, 1])]  # fmt: skip
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", 1, [1, 3, 9, 9])],
                              [helper.make_tensor_value_info("y", 1, None)],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])  # fmt: skip
    source, quantized = tmp_path / "float.onnx", tmp_path / "dynamic.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), source)
    quantize_dynamic(str(source), str(quantized), weight_type=getattr(QuantType, weight_type))
    session = ort.InferenceSession(str(quantized), providers=["CPUExecutionProvider"])
    with glow_mlir.compile(glow_mlir.import_onnx(str(quantized)), keep_ir=True, cache=False) as compiled:
        text = compiled.ir("glow-cpu-int8")
        # uint8 weights less their zero point leave int8's range: int8 plus column offsets (test_int8_wide_weights).
        assert text.count("glow.cpu_int8_conv_nhwc") == 2 and "glow.convolution" not in text
        for seed in range(2):
            x = np.random.default_rng(seed).standard_normal((1, 3, 9, 9)).astype(np.float32)
            np.testing.assert_array_equal(compiled.run({"x": x})["y"], session.run(None, {"x": x})[0])
