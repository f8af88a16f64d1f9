"""1x1 stride-1 convolutions on small maps (OW <= 6) run as a matrix product over all pixels of the map
(conv_recipes.py, `_pixel_tile` / `_pixels_kernel`): the kernel reads the input as [N*OH*OW, C], with the bias
and the fused activation on the same tile, and computes what onnxruntime computes."""

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


# (C, H, W, F, activation, bias) -> the pixel kernel's [pixels, channels] tile, or None for the row schedule.
CASES = {
    "3x3_512_to_64_relu": ((512, 3, 3, 64, "relu", True), (9, 32)),
    "5x5_64_to_48": ((64, 5, 5, 48, None, True), (5, 16)),
    "5x5_64_to_64_clip": ((64, 5, 5, 64, "clip", True), (5, 64)),
    "2x2_32_to_128_no_bias": ((32, 2, 2, 128, "relu", False), (4, 64)),
    "6x6_40_to_32": ((40, 6, 6, 32, None, True), (12, 32)),
    "7x7_rows": ((16, 7, 7, 32, "relu", True), None),
    "channel_remainder_rows": ((32, 3, 3, 40, None, True), None),
    "narrow_rows": ((8, 6, 6, 4, None, True), None),
}


def test_pointwise_into_a_padded_buffer_keeps_rows() -> None:
    """A 1x1 convolution whose output is the interior of the next 3x3 layer's padded input: its pixels are not
    evenly spaced (each row is followed by padding), so it keeps the row schedule, and the result is right."""
    c, f = 32, 32
    w1 = (rng.standard_normal((f, c, 1, 1)) / np.sqrt(c)).astype(np.float32)
    w2 = (rng.standard_normal((f, f, 3, 3)) / np.sqrt(9 * f)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], kernel_shape=[1, 1]),
             helper.make_node("Conv", ["a", "w2"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    graph = helper.make_graph(nodes, "pad", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 5, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    x = rng.standard_normal((1, c, 5, 5)).astype(np.float32)
    with glow_mlir.compile(import_model(model)) as compiled:
        [got] = compiled.run({"x": x}).values()
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got, session.run(None, {"x": x})[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", sorted(CASES))
def test_pointwise_on_small_maps(case: str) -> None:
    (c, h, w, f, activation, bias), tile = CASES[case]
    model = conv_model(c, h, w, f, activation=activation, bias=bias)
    x = rng.standard_normal((1, c, h, w)).astype(np.float32)
    with glow_mlir.compile(import_model(model), keep_ir=True) as compiled:
        scheduled = compiled.ir("glow-cpu-schedule")
        [got] = compiled.run({"x": x}).values()
    signature = rf"func\.func private @__glow_kernel\d+\(%arg0: memref<{h * w}x{c}xf32>, %arg1: memref<{c}x(\d+)xf32"
    pixels = re.findall(signature, scheduled)
    if tile is None:
        assert not pixels, scheduled
    else:
        assert pixels and all(int(width) == tile[1] for width in pixels), scheduled
        # The register tile: `tile[0]` pixels' broadcasts each step.
        assert f"vector<{tile[0]}x{tile[1]}xf32>" in scheduled
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    [want] = session.run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("f,prefetched", [(2048, True), (512, False)])
def test_streamed_pixel_filter_is_prefetched(f: int, prefetched: bool) -> None:
    """A 1x1 layer on a 3x3 map (9 FMAs per filter row) whose filter outgrows L2 (512 -> 2048: 4 MiB) streams it
    from memory: its loads prefetch ahead (conv_recipes._streamed); a 1 MiB filter (512 -> 512) does not. Both
    match onnxruntime."""
    model = conv_model(512, 3, 3, f, activation="relu")
    x = rng.standard_normal((1, 512, 3, 3)).astype(np.float32)
    with glow_mlir.compile(import_model(model), keep_ir=True, cache=False) as compiled:
        [got] = compiled.run({"x": x}).values()
        assert ("memref.prefetch" in compiled.ir("glow-cpu-schedule")) == prefetched
    [want] = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
