"""The CPU backend's int8 GEMM (glow.cpu_int8_matmul, vpdpbusd): weight packing, the op's definition against
numpy's integer arithmetic, glow-cpu-int8 on the quantizer's output, and compiled code bit-identical to the
reference interpreter over shapes whose M, N and K are not multiples of the register tile."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
import torch

import glow_mlir
from glow_mlir import quantization as quant
from glow_mlir.backends.cpu import int8_ops, int8_rewrite
from glow_mlir.backends.cpu.int8_gemm import MAX_ACCUMULATORS, OutputSteps, register_tile
from qdq_models import quantize_static

needs_vnni = pytest.mark.skipif(not int8_rewrite.host_has_vnni(), reason="the host CPU has no avx512_vnni")
rng = np.random.default_rng(14)


@pytest.mark.parametrize(("k", "n"), [(1, 1), (4, 16), (5, 17), (13, 40), (64, 64)])
def test_packing_round_trips_and_pads_with_zeros(k: int, n: int) -> None:
    w = rng.integers(-128, 128, (k, n), dtype=np.int8)
    packed = int8_ops.pack_weights(w)
    assert packed.shape == (-(-n // 16), -(-k // 4), 64)
    np.testing.assert_array_equal(int8_ops.unpack_weights(packed, k, n), w)
    # Block 0, step 0: lane c holds W[0..3, c], four bytes each.
    np.testing.assert_array_equal(packed[0, 0].reshape(16, 4)[: min(n, 16), : min(k, 4)], w[:4, :16].T)
    assert np.abs(packed.astype(np.int64)).sum() == np.abs(w.astype(np.int64)).sum()


@pytest.mark.parametrize("zero", [0, -11, 127, -128])
def test_definition_is_the_centred_integer_product(zero: int) -> None:
    """sum (q + 128) W - (128 + z) colsum(W) = sum (q - z) W, then the two float32 operations."""
    m, k, n = 5, 37, 21
    q = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-127, 128, (k, n), dtype=np.int8)
    multiplier = rng.uniform(1e-5, 1e-3, n).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    got = int8_ops.product(q, int8_ops.pack_weights(w), int8_ops.correction(w, zero), multiplier, bias)
    acc = (q.astype(np.int32) - zero) @ w.astype(np.int32)
    np.testing.assert_array_equal(got, acc.astype(np.float32) * multiplier + bias)


@pytest.mark.parametrize(("m", "blocks"), [(1, 1), (1, 63), (3, 5), (6, 4), (100, 4), (100, 2), (7, 3)])
def test_register_tile_rule(m: int, blocks: int) -> None:
    rows, cols = register_tile(m, blocks)
    assert 1 <= rows <= m and 1 <= cols <= blocks and rows * cols <= MAX_ACCUMULATORS


def _layer(m: int, k: int, n: int, kind: str) -> glow_mlir.Graph:
    g = glow_mlir.Graph("layer")
    x = g.input("x", (m, k))
    w = g.constant(rng.standard_normal((k, n)).astype(np.float32))
    if kind == "fully_connected":
        y = g.fully_connected(x, w, g.constant(rng.standard_normal(n).astype(np.float32)), name="p")
    else:
        y = g.matmul(x, w, name="p")
    g.output("y", y)
    return g


# (M, K, N): one row, one column, K below and not a multiple of 4, N below, at and across 16-column blocks and
# the 4-block groups, M across the 6- and 8-row tiles with remainders.
SHAPES = [(1, 1, 1), (1, 64, 1000), (3, 5, 17), (7, 13, 33), (13, 64, 70), (6, 256, 64), (25, 37, 130), (50, 3, 16)]


@needs_vnni
@pytest.mark.parametrize(("m", "k", "n"), SHAPES)
@pytest.mark.parametrize(("kind", "schema"), [("fully_connected", "asymmetric"), ("matmul", "symmetric")])
def test_compiled_int8_gemm_equals_the_interpreter(m: int, k: int, n: int, kind: str, schema: str) -> None:
    g = _layer(m, k, n, kind)
    feeds = [{"x": rng.standard_normal((m, k)).astype(np.float32)} for _ in range(3)]
    q = quant.quantize(g, quant.profile(g, feeds[:2]), schema=schema)
    with glow_mlir.compile(q, keep_ir=True, cache=False) as compiled:
        assert "glow.cpu_int8_matmul" in compiled.ir("glow-cpu-int8")
        assert '"llvm.x86.avx512.vpdpbusd.512"' in compiled.ir("glow-to-llvm")
        for feed in feeds:
            np.testing.assert_array_equal(compiled.run(feed)["y"], glow_mlir.interpret(q, feed)["y"])


@needs_vnni
@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump is not installed")
def test_object_code_runs_vpdpbusd(tmp_path) -> None:  # noqa: ANN001
    g = _layer(8, 64, 48, "fully_connected")
    feeds = [{"x": rng.standard_normal((8, 64)).astype(np.float32)}]
    q = quant.quantize(g, quant.profile(g, feeds))
    with glow_mlir.compile(q, cache=False) as compiled:
        compiled.save_object(tmp_path / "model.o")
    listing = subprocess.run(["objdump", "-d", str(tmp_path / "model.o")], capture_output=True, text=True,
                             check=True).stdout  # fmt: skip
    assert "vpdpbusd" in listing and "zmm" in listing


def _conv(n: int, c: int, hw: int, o: int, kernel: int, stride: int, pad: int, dilation: int = 1) -> glow_mlir.Graph:
    g = glow_mlir.Graph("conv")
    x = g.input("x", (n, c, hw, hw))
    w = g.constant(rng.standard_normal((o, c, kernel, kernel)).astype(np.float32))
    b = g.constant(rng.standard_normal(o).astype(np.float32))
    y = g.relu(g.convolution(x, w, b, strides=(stride, stride), pads=(pad,) * 4, dilation=(dilation,) * 2, name="c"))
    g.output("y", y)
    return g


# (N, C, H = W, O, kernel, stride, pad): 1x1 as a GEMM (stride 1) or strided; 3x3 and 7x7 windows, strided and
# padded (the padding is the zero point); C not a multiple of 4 (ResNet's first layer has 3); O across blocks.
CONVS = [(1, 8, 6, 16, 1, 1, 0), (2, 5, 7, 20, 1, 2, 0), (1, 3, 9, 33, 3, 1, 1), (1, 12, 8, 16, 3, 2, 1),
         (1, 3, 15, 8, 7, 2, 3), (1, 64, 5, 70, 3, 1, 1)]  # fmt: skip


@needs_vnni
@pytest.mark.parametrize(("n", "c", "hw", "o", "kernel", "stride", "pad"), CONVS)
@pytest.mark.parametrize("schema", ["asymmetric", "symmetric"])
def test_compiled_int8_convolution_equals_the_interpreter(n: int, c: int, hw: int, o: int, kernel: int, stride: int,
                                                          pad: int, schema: str) -> None:  # fmt: skip
    g = _conv(n, c, hw, o, kernel, stride, pad)
    feeds = [{"x": rng.standard_normal((n, c, hw, hw)).astype(np.float32) + 0.5} for _ in range(3)]
    q = quant.quantize(g, quant.profile(g, feeds[:2]), schema=schema)
    with glow_mlir.compile(q, keep_ir=True, cache=False) as compiled:
        assert "glow.cpu_int8_conv_nhwc" in compiled.ir("glow-cpu-int8")
        assert "glow.convolution" not in compiled.ir("glow-cpu-int8")
        for feed in feeds:
            np.testing.assert_array_equal(compiled.run(feed)["y"], glow_mlir.interpret(q, feed)["y"])


@needs_vnni
@pytest.mark.parametrize(("kernel", "stride", "dilation"), [(3, 1, 2), (3, 2, 2), (2, 1, 2), (3, 1, 4), (5, 2, 3)])
def test_dilated_int8_convolution_equals_the_interpreter(kernel: int, stride: int, dilation: int) -> None:
    """A dilated convolution (SK-ResNet's 3x3 at dilation 2, DeepLab's wider ones) runs the int8 kernel, which
    reads its taps `dilation` apart, bit for bit as the interpreter."""
    pad = (kernel - 1) * dilation // 2
    g = _conv(1, 12, 13, 20, kernel, stride, pad, dilation)
    feeds = [{"x": rng.standard_normal((1, 12, 13, 13)).astype(np.float32) + 0.5} for _ in range(3)]
    q = quant.quantize(g, quant.profile(g, feeds[:2]))
    with glow_mlir.compile(q, keep_ir=True, cache=False) as compiled:
        rewritten = compiled.ir("glow-cpu-int8")
        assert "glow.cpu_int8_conv_nhwc" in rewritten and "glow.convolution" not in rewritten
        assert f"dilation = array<i64: {dilation}, {dilation}>" in rewritten
        for feed in feeds:
            np.testing.assert_array_equal(compiled.run(feed)["y"], glow_mlir.interpret(q, feed)["y"])


@needs_vnni
@pytest.mark.parametrize("dynamic", [False, True])
def test_dilated_integer_convolutions_run_the_int8_kernel(dynamic: bool) -> None:
    """QLinearConv and DynamicQuantizeLinear + ConvInteger with a 5x5 window at dilation 3 (UVDoc's): their
    exact form is a float64 convolution, scalar loops (5 to 180 times onnxruntime's time); the int8 kernel reads
    the 25 taps 3 apart; bit for bit as onnxruntime."""
    from onnx import TensorProto, helper, numpy_helper
    import onnxruntime

    c, o, hw = 64, 24, 12  # 1600 products a sum: past float32's exact integers, so a float64 convolution
    w = numpy_helper.from_array(rng.integers(-127, 128, (o, c, 5, 5)).astype(np.int8), "w")
    attrs = {"kernel_shape": [5, 5], "dilations": [3, 3], "pads": [6, 6, 6, 6]}
    if dynamic:
        nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"]),
                 helper.make_node("ConvInteger", ["q", "w", "z"], ["acc"], **attrs),
                 helper.make_node("Cast", ["acc"], ["f"], to=TensorProto.FLOAT),
                 helper.make_node("Mul", ["s", "ws"], ["scale"]), helper.make_node("Mul", ["f", "scale"], ["y"])]  # fmt: skip
        inits = [w, numpy_helper.from_array(np.array(0.003, np.float32), "ws")]
    else:
        inits = [w, *(numpy_helper.from_array(np.array(v, t), n) for n, v, t in (
            ("xs", 0.02, np.float32), ("xz", 128, np.uint8), ("ws", 0.003, np.float32), ("wz", 0, np.int8),
            ("ys", 0.5, np.float32), ("yz", 100, np.uint8)))]  # fmt: skip
        nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["q"]),
                 helper.make_node("QLinearConv", ["q", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["yq"], **attrs),
                 helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]  # fmt: skip
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, hw, hw])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, o, hw, hw])], inits)  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    with glow_mlir.compile(glow_mlir.import_onnx(model), keep_ir=True, cache=False) as compiled:
        assert "glow.cpu_int8_conv_nhwc" in compiled.ir("glow-cpu-int8")
        for seed in range(3):
            x = np.random.default_rng(seed).standard_normal((1, c, hw, hw)).astype(np.float32)
            np.testing.assert_array_equal(compiled.run({"x": x})["y"], session.run(None, {"x": x})[0])


def test_integer_weights_recover_per_channel_int8_steps() -> None:
    q = rng.integers(-127, 128, (12, 8, 3, 3)).astype(np.int8)
    q[:, 0, 0, 0] = 127
    scales = rng.uniform(0.002, 0.006, 12).astype(np.float32)
    folded = q.astype(np.float32) * scales[:, None, None, None]  # DequantizeLinear, folded at import
    recovered = int8_rewrite.integer_weights(folded, 0)
    assert recovered is not None
    np.testing.assert_array_equal(recovered[0], q)
    np.testing.assert_array_equal(recovered[1], scales)
    assert int8_rewrite.integer_weights(rng.standard_normal((4, 5)).astype(np.float32), 1) is None
    # Per-tensor weights: one scale, reached by the largest channel only (a channel may be recovered at half the
    # scale, twice the steps: the same products, exactly).
    shared = (q.astype(np.float32) // 2 * scales[0]).astype(np.float32)
    shared[0, 0, 0, 0] = 127 * scales[0]
    recovered = int8_rewrite.integer_weights(shared, 0)
    assert recovered is not None and recovered[1][0] == scales[0]
    np.testing.assert_array_equal(recovered[0].astype(np.float32) * recovered[1][:, None, None, None], shared)


def test_integer_weights_try_each_candidate_scale_on_all_channels_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A model's weights are hundreds of thousands of channels: tried one at a time, recovering their steps was
    most of glow-cpu-int8's time (1.3 s of EfficientNet-B0 QDQ's compile). Each candidate scale is tried on every
    channel still without one: 512 channels of per-channel int8 steps take a few roundings, not 512."""
    q = rng.integers(-127, 128, (512, 27)).astype(np.float32)
    q[:, 0] = 127
    folded = q * rng.uniform(0.002, 0.006, (512, 1)).astype(np.float32)
    folded[7] = 0  # a channel of zeros keeps scale 1
    rounding = np.round
    calls: list[int] = []
    monkeypatch.setattr(np, "round", lambda x: calls.append(len(x)) or rounding(x))
    recovered = int8_rewrite.integer_weights(folded, 0)
    assert recovered is not None and len(calls) < 8 and calls[0] == 511  # a few ulps off the first estimate
    np.testing.assert_array_equal(recovered[0].astype(np.float32) * recovered[1][:, None], folded)
    assert recovered[1][7] == 1


@pytest.mark.parametrize("symmetric", [False, True])
def test_integer_weights_recover_uint8_steps_less_their_zero_point(symmetric: bool) -> None:
    """onnxruntime's uint8 weights: asymmetric (the range with 0 over 255 steps, a zero point per channel), or
    symmetric (zero point 128, the largest magnitude 127.5 steps); recovered as steps spanning 255 at most."""
    scales = rng.uniform(0.002, 0.006, 6).astype(np.float32)
    zero = np.full(6, 128) if symmetric else rng.integers(10, 250, 6)
    steps = rng.integers(0, 256, (6, 40)) - zero[:, None]
    steps[:, 0], steps[:, 1] = -zero, 255 - zero  # the channel's range is quantized to 0 and 255
    folded = steps.astype(np.float32) * scales[:, None]
    recovered = int8_rewrite.integer_weights(folded, 0)
    assert recovered is not None
    np.testing.assert_array_equal(recovered[0], steps)
    np.testing.assert_array_equal(recovered[1], scales)


class _QdqNet(torch.nn.Module):
    """conv 3x3 -> relu -> conv 3x3 stride 2 -> relu -> global mean -> linear: what quantize_static makes QDQ."""

    def __init__(self) -> None:
        super().__init__()
        self.c1, self.c2 = torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.Conv2d(8, 20, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(20, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(self.c2(torch.relu(self.c1(x)))).mean((2, 3)))


@needs_vnni
@pytest.mark.parametrize(("activations", "weights", "per_channel"), [
    ("QUInt8", "QInt8", True), ("QInt8", "QInt8", True), ("QUInt8", "QUInt8", True), ("QUInt8", "QUInt8", False)])
def test_imported_qdq_model_runs_the_int8_kernels(tmp_path, activations: str, weights: str,  # noqa: ANN001
                                                  per_channel: bool) -> None:  # fmt: skip
    """onnxruntime's quantize_static QDQ model: the importer folds each DequantizeLinear of int8 weights (or
    uint8 ones with a zero point) into a float constant, glow-cpu-int8 recovers the integer steps and runs
    vpdpbusd; the output stays within one output quantization step of onnxruntime (which requantizes its fused
    QLinearConv differently)."""
    import onnxruntime as ort

    torch.manual_seed(0)
    shape = (1, 3, 12, 12)
    quantized, step = quantize_static(_QdqNet(), shape, tmp_path, rng, activations, weights=weights,
                                      per_channel=per_channel)  # fmt: skip
    session = ort.InferenceSession(quantized, providers=["CPUExecutionProvider"])
    with glow_mlir.compile(glow_mlir.import_onnx(quantized), keep_ir=True, cache=False) as compiled:
        text = compiled.ir("glow-cpu-int8")
        assert text.count("glow.cpu_int8_conv_nhwc") == 2 and "glow.cpu_int8_matmul" in text
        for seed in range(3):
            x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
            diff = np.abs(compiled.run({"x": x})["y"] - session.run(None, {"x": x})[0]).max()
            assert diff <= step * (1 + 1e-5), f"seed {seed}: {diff / step:.2f} output steps"


class _TokenMlp(torch.nn.Module):
    """Linear -> relu -> linear over [1, S, K] tokens: a transformer's MLP, whose matmuls read their activation's
    rows through a reshape."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(32, 48), torch.nn.Linear(48, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


@needs_vnni
def test_imported_qdq_token_matmuls_run_the_int8_kernel(tmp_path) -> None:  # noqa: ANN001
    """quantize_static's QDQ MLP over [1, 6, 32] tokens: both matmuls run vpdpbusd (their dequantized input
    reaches them through a reshape), within one output step of onnxruntime."""
    import onnxruntime as ort

    torch.manual_seed(0)
    shape = (1, 6, 32)
    quantized, step = quantize_static(_TokenMlp(), shape, tmp_path, rng)
    session = ort.InferenceSession(quantized, providers=["CPUExecutionProvider"])
    with glow_mlir.compile(glow_mlir.import_onnx(quantized), keep_ir=True, cache=False) as compiled:
        text = compiled.ir("glow-cpu-int8")
        assert text.count("glow.cpu_int8_matmul") == 2 and "glow.matmul" not in text
        for seed in range(3):
            x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
            diff = np.abs(compiled.run({"x": x})["y"] - session.run(None, {"x": x})[0]).max()
            assert diff <= step * (1 + 1e-5), f"seed {seed}: {diff / step:.2f} output steps"


@needs_vnni
@pytest.mark.parametrize("schema", ["asymmetric", "symmetric"])
def test_relu_and_next_quantization_fuse_into_the_epilogue(schema: str) -> None:
    """conv -> relu -> conv -> relu -> reshape -> fully connected, quantized: a product whose result only feeds
    a relu and the next product's quantization writes that uint8 activation itself, one whose relu feeds
    something else computes the relu; bit-identical to the interpreter's chain of float ops."""
    g = glow_mlir.Graph("chain")
    x = g.input("x", (1, 5, 9, 9))
    w1, b1 = rng.standard_normal((12, 5, 3, 3)).astype(np.float32), rng.standard_normal(12).astype(np.float32)
    w2, b2 = rng.standard_normal((20, 12, 3, 3)).astype(np.float32), rng.standard_normal(20).astype(np.float32)
    h = g.relu(g.convolution(x, g.constant(w1), g.constant(b1), pads=(1, 1, 1, 1), name="c1"), name="r1")
    h = g.relu(g.convolution(h, g.constant(w2), g.constant(b2), strides=(2, 2), pads=(1, 1, 1, 1), name="c2"))
    flat = g.reshape(h, (1, 20 * 5 * 5))
    w3 = rng.standard_normal((500, 7)).astype(np.float32)
    g.output("y", g.fully_connected(flat, g.constant(w3), g.constant(np.zeros(7, np.float32)), name="fc"))
    feeds = [{"x": rng.standard_normal((1, 5, 9, 9)).astype(np.float32)} for _ in range(3)]
    q = quant.quantize(g, quant.profile(g, feeds[:2]), schema=schema)
    with glow_mlir.compile(q, keep_ir=True, cache=False) as compiled:
        text = compiled.ir("glow-cpu-int8")
        # c1 writes uint8 for c2; c2's relu reaches fc's quantization through a reshape: c2 computes the relu
        # only, in f32.
        first, second = [line for line in text.splitlines() if "relu = true" in line]
        assert "glow.cpu_int8_conv_nhwc" in first and first.endswith("-> tensor<1x9x9x12xui8>")
        assert "glow.cpu_int8_conv_nhwc" in second and second.endswith("-> tensor<1x5x5x20xf32>")
        assert "glow.relu" not in text
        for feed in feeds:
            np.testing.assert_array_equal(compiled.run(feed)["y"], glow_mlir.interpret(q, feed)["y"])


@needs_vnni
@pytest.mark.parametrize("channels", [17, 33])
def test_a_uint8_result_with_one_channel_past_a_block(channels: int) -> None:
    """A convolution writing uint8 with 16k + 1 output channels: its last block stores one byte per pixel (LLVM
    made the one-lane masked store of the truncated vector a 4-byte store, overwriting the next pixel's first 3
    channels: int8_gemm.store_lanes)."""
    g = glow_mlir.Graph("narrow")
    x = g.input("x", (1, 8, 6, 6))
    w1 = rng.standard_normal((channels, 8, 1, 1)).astype(np.float32)
    h = g.relu(g.convolution(x, g.constant(w1), g.constant(rng.standard_normal(channels).astype(np.float32)),
                             name="a"))  # fmt: skip
    w2 = rng.standard_normal((5, channels, 1, 1)).astype(np.float32)
    g.output("y", g.convolution(h, g.constant(w2), g.constant(np.zeros(5, np.float32)), name="b"))
    feeds = [{"x": rng.standard_normal((1, 8, 6, 6)).astype(np.float32)} for _ in range(3)]
    q = quant.quantize(g, quant.profile(g, feeds[:2]))
    with glow_mlir.compile(q, keep_ir=True, cache=False) as compiled:
        [first, _] = [line for line in compiled.ir("glow-cpu-int8").splitlines() if "glow.cpu_int8_conv_nhwc" in line]
        assert first.endswith(f"-> tensor<1x6x6x{channels}xui8>")
        for feed in feeds:
            np.testing.assert_array_equal(compiled.run(feed)["y"], glow_mlir.interpret(q, feed)["y"])


# (cap, scale, zero point): relu6 quantized over [0, 6] (onnxruntime's), over less (quantize()'s profile), over more
# (the cap changes bytes), symmetric (zero point 128: the relu changes bytes), relu alone.
EPILOGUES = [(6.0, 6 / 255, 0), (6.0, 0.02, 0), (6.0, 0.05, 0), (6.0, 6 / 127, 128), (0.0, 0.1, 0), (0.0, 0.1, 7),
             (6.0, 0.05, 3)]  # fmt: skip


@pytest.mark.parametrize(("clip", "scale", "zero"), EPILOGUES)
def test_the_epilogue_drops_only_a_relu_or_cap_that_changes_no_byte(clip: float, scale: float, zero: int) -> None:
    """OutputSteps.needed: a relu before a quantization with zero point 0, and a cap whose own byte saturates,
    give the bytes of the quantization alone (relu6 quantized over [0, 6]); otherwise they are kept."""
    steps = OutputSteps(True, clip, scale, zero)
    relu, cap = steps.needed()
    assert relu == (zero != 0) and cap == (clip != 0 and round(clip / scale) + zero < 255)
    y = np.concatenate([rng.uniform(-10, 10, 100000), [-0.0, 0.0, clip, -clip, 1e30, -1e30]]).astype(np.float32)
    y = np.concatenate([y, np.nextafter(y, np.float32(np.inf)), np.nextafter(y, np.float32(-np.inf))])
    full = np.maximum(y, np.float32(0))
    if clip:
        full = np.minimum(full, np.float32(clip))
    kept = np.maximum(y, np.float32(0)) if relu else y
    kept = np.minimum(kept, np.float32(clip)) if cap else kept
    np.testing.assert_array_equal(int8_ops.quantized(kept, scale, zero), int8_ops.quantized(full, scale, zero))


@needs_vnni
def test_onnx_qlinear_ops_run_the_int8_kernels() -> None:
    """ONNX's QLinearConv (an int32 bias, filters whose sums need float64 to be exact in a float convolution) and
    QLinearMatMul of a [B, S, K] activation, as onnxruntime's QOperator format writes them: vpdpbusd kernels, the
    outputs onnxruntime's bit for bit."""
    import onnxruntime as ort
    from onnx import helper, numpy_helper

    local = np.random.default_rng(3)
    inits = {
        "xs": np.float32(0.02), "xz": np.array(128, np.uint8),
        "w": local.integers(-127, 128, (16, 32, 3, 3)).astype(np.int8),
        "ws": (local.random(16) * 0.002 + 0.001).astype(np.float32), "wz": np.zeros(16, np.int8),
        "cs": np.float32(0.5), "cz": np.array(100, np.uint8), "bias": local.integers(-3000, 3000, 16).astype(np.int32),
        "ms": np.float32(0.01), "m": local.integers(-127, 128, (16, 24)).astype(np.int8), "mz": np.array(0, np.int8),
        "ys": np.float32(0.3), "yz": np.array(90, np.uint8), "shape": np.array([1, 25, 16], np.int64),
        "perm_shape": np.array([1, 16, 25], np.int64),
    }  # fmt: skip
    nodes = [
        helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "cs", "cz", "bias"], ["c"],
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Reshape", ["c", "perm_shape"], ["flat"]),
        helper.make_node("Transpose", ["flat"], ["rows"], perm=[0, 2, 1]),  # [1, 25 tokens, 16]
        helper.make_node("QLinearMatMul", ["rows", "cs", "cz", "m", "ms", "mz", "ys", "yz"], ["y"]),
    ]  # fmt: skip
    graph = helper.make_graph(nodes, "qlinear", [helper.make_tensor_value_info("x", 2, [1, 32, 5, 5])],
                              [helper.make_empty_tensor_value_info("y")],
                              [numpy_helper.from_array(v, k) for k, v in inits.items() if k != "shape"])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = local.integers(0, 256, (1, 32, 5, 5)).astype(np.uint8)
    [want] = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    with glow_mlir.compile(glow_mlir.import_onnx(model), keep_ir=True, cache=False) as compiled:
        text = compiled.ir("glow-cpu-int8")
        assert "glow.cpu_int8_conv_nhwc" in text and "glow.cpu_int8_matmul" in text and "glow.matmul" not in text
        np.testing.assert_array_equal(compiled.run({"x": x})["y"], want)
