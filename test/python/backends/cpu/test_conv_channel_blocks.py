"""KxK convolutions on short output rows (OW <= BLOCKED_ROW) of an input within BLOCKED_INPUT_BYTES run with
their input channels in blocks of at most TAP_BLOCK_BYTES per filter tap, outermost (conv_recipes.py,
`_channel_block` / `_blocked_steps`), the bias and activation as passes of their own: the schedule has the
block loop where the rule says so, and every case computes what onnxruntime computes (channel counts with
remainders, strides, 5x5 windows, with and without bias and activation). A layer of few output pixels whose
filter streams from memory prefetches it."""

from __future__ import annotations

import re

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import glow_mlir
from glow_mlir.frontends.onnx import import_model
from onnx_check import conv_model

rng = np.random.default_rng(0)


# (C, H, F, K, stride, activation, bias) -> the channel block of the main channel tile (None: not blocked).
CASES = {
    # f tile 32 on 4 pixels: 1 KiB / (32 * 4 B) = 8 of 64 channels.
    "4x4_64_to_32_relu": ((64, 4, 32, 3, 1, "relu", True), 8),
    # 40 filters: a 32-channel main tile (blocks of 8 of 48 channels) and an 8-channel remainder.
    "5x5_48_to_40": ((48, 5, 40, 5, 1, None, True), 8),
    # Stride 2 onto 4x4, 4 pixels x 64 channels: blocks of 4 of 96 channels.
    "7x7_stride2_96_to_64_clip": ((96, 7, 64, 3, 2, "clip", True), 4),
    "6x6_5x5_window_no_bias": ((32, 6, 16, 5, 1, "relu", False), 16),
    "3x3_map_128_to_48": ((128, 3, 48, 3, 1, None, True), 16),
    # Rows of 7 and 14 (ResNet's last two stages; 5x5 here, a 3x3 stride-1 layer is the Winograd kernel's) are
    # blocked; rows of 16 keep the unblocked schedule, and so do channels that fit one block and inputs beyond
    # BLOCKED_INPUT_BYTES (18 x 18 x 1024 floats: 1.3 MiB).
    "7x7_rows": ((32, 7, 32, 5, 1, "relu", True), 8),
    "14x14_rows": ((64, 14, 32, 5, 1, "relu", True), 8),
    "16x16_rows": ((32, 16, 32, 5, 1, "relu", True), None),
    "few_channels": ((8, 4, 16, 3, 1, None, True), None),
    "large_input": ((1024, 16, 32, 3, 2, "relu", True), None),
    # A 1x1 window is not blocked, nor is one output row (the filter is read once anyway).
    "1x1_window_on_7x7": ((256, 7, 64, 1, 1, "relu", True), None),
    "1x1_map": ((256, 1, 64, 1, 1, "relu", True), None),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_channel_blocks_on_short_rows(case: str) -> None:
    (c, h, f, k, stride, activation, bias), block = CASES[case]
    model = conv_model(c, h, h, f, k, stride, activation, bias)
    x = rng.standard_normal((1, c, h, h)).astype(np.float32)
    with glow_mlir.compile(import_model(model), keep_ir=True) as compiled:
        scheduled = compiled.ir("glow-cpu-schedule")
        [got] = compiled.run({"x": x}).values()
    # Loops of the convolution's kernels over all C input channels in steps of more than one: the block loop
    # (the padding kernels' loops over the channels are not).
    kernels = "".join(f for f in re.split(r"(?=func\.func)", scheduled) if "vector.fma" in f)
    blocks = [b for b in re.findall(rf"scf\.for %\w+ = %c0\w* to %c{c}\w* step %c(\d+)\b", kernels) if b != "1"]
    if block is None:
        assert not blocks, scheduled
    else:
        assert str(block) in blocks, scheduled
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    [want] = session.run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_grouped_convolution_on_short_rows() -> None:
    """Two groups of 128 channels on a 4x4 map: each group's convolution is blocked on its own channel slice
    (64-channel tiles: blocks of 4 of 128) and the result is right."""
    c = f = 256
    weights = (rng.standard_normal((f, c // 2, 3, 3)) / np.sqrt(9 * c // 2)).astype(np.float32)
    bias = rng.uniform(-0.5, 0.5, f).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[3, 3], pads=[1] * 4, group=2)
    graph = helper.make_graph([node], "grouped", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(weights, "w"), numpy_helper.from_array(bias, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    x = rng.standard_normal((1, c, 4, 4)).astype(np.float32)
    with glow_mlir.compile(import_model(model), keep_ir=True) as compiled:
        scheduled = compiled.ir("glow-cpu-schedule")
        [got] = compiled.run({"x": x}).values()
    assert re.search(r"scf\.for %\w+ = %c0\w* to %c128\w* step %c4\b", scheduled), scheduled
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got, session.run(None, {"x": x})[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("c", "h", "n", "prefetched"), [
    (384, 3, 1, True),  # 5.3 MB of filter (beyond L2) for 9 output pixels: it streams from memory
    (384, 7, 1, True),  # 49 pixels
    (384, 9, 1, False),  # 81 pixels: the FMAs, not the filter, bound it
    (384, 6, 2, False),  # 72 pixels over the batch
    (64, 3, 1, False),  # 147 KB of filter: in cache from one run to the next
])  # fmt: skip
def test_streamed_filter_is_prefetched(c: int, h: int, n: int, prefetched: bool) -> None:
    """A convolution of at most STREAMED_PIXELS output pixels whose model's weights outgrow L2 prefetches its
    packed filter (conv_recipes._packed_kernels, into L2), and computes what onnxruntime computes."""
    model = conv_model(c, h, h, c, 3, 1, "relu", True, n=n)
    x = rng.standard_normal((n, c, h, h)).astype(np.float32)
    with glow_mlir.compile(import_model(model), keep_ir=True, cache=False) as compiled:
        scheduled = compiled.ir("glow-cpu-schedule")
        [got] = compiled.run({"x": x}).values()
    assert ("memref.prefetch" in scheduled) == prefetched
    if prefetched:
        assert "locality<2>" in scheduled
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got, session.run(None, {"x": x})[0], rtol=1e-4, atol=1e-4)
