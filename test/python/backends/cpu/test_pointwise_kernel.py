"""The f32 1x1 (pointwise) convolution kernel (pointwise_recipes.py) over its class, against onnxruntime: maps whose
pixels run as one row (identity layout, stride 1) and row by row (stride 2, an output inside the next layer's
padded buffer); tiles that leave a smaller last tile; channel counts that fill whole blocks, leave a narrower block
or only a partial register (masked); the filter streamed with its channel blocks outermost (and prefetched), or the
input streamed with the pixels outermost; a batch whose input outgrows L2 run in chunks of images; a 1x1 map;
every fused activation and none, with and without bias."""

from __future__ import annotations

import re

import numpy as np
import onnxruntime
import pytest
from onnx import ModelProto, helper

import glow_mlir
from glow_mlir.backends.cpu.pointwise_recipes import channel_blocks, chunk_images, register_tile
from glow_mlir.frontends.onnx import import_model
import onnx_check

rng = np.random.default_rng(0)


def _model(c: int, hw: tuple[int, int], f: int, stride: int, batch: int, bias: bool, activation: str | None,
           then_3x3: bool = False) -> ModelProto:  # fmt: skip
    """Conv 1x1 of x [batch, c, *hw] to f channels, then `activation`; `then_3x3`: a 3x3 convolution after it,
    whose padded input buffer the 1x1 layer writes into."""
    initializers = {"w": (rng.standard_normal((f, c, 1, 1)) / np.sqrt(c)).astype(np.float32)}
    if bias:
        initializers["b"] = rng.uniform(-0.5, 0.5, f).astype(np.float32)
    out = "y" if activation is None and not then_3x3 else "c"
    nodes = [helper.make_node("Conv", ["x", "w", *(["b"] if bias else [])], [out], kernel_shape=[1, 1],
                              strides=[stride] * 2)]  # fmt: skip
    if activation is not None:
        out = "y" if not then_3x3 else "a"
        node, bounds = onnx_check.activation_node(activation, "c", out)
        nodes.append(node)
        initializers |= bounds
    if then_3x3:
        initializers["w2"] = (rng.standard_normal((8, f, 3, 3)) / np.sqrt(9 * f)).astype(np.float32)
        nodes.append(helper.make_node("Conv", [out, "w2"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    return onnx_check.model(nodes, {"x": np.zeros((batch, c, *hw), np.float32)}, ["y"], initializers)


CASES = {
    # c, (h, w), f, stride, batch, bias, activation, prefetched
    "map_as_one_row_pixels_outer": (64, (56, 56), 256, 1, 1, True, "Relu", False),  # 6 x 4 tiles, 4 pixels left
    "filter_streamed_and_prefetched": (512, (7, 7), 2048, 1, 1, True, "Relu", True),  # 4 MiB: blocks outermost
    "stride_2_rows_channel_tail": (96, (13, 11), 40, 2, 1, False, "Clip", False),  # 32 + 8 lanes masked
    "batch_in_chunks": (256, (6, 6), 1536, 1, 32, True, None, False),  # 1.2 MB of input: chunks of 16 images
    "one_pixel_map": (48, (1, 1), 64, 1, 2, True, "Sigmoid", False),  # squeeze-and-excite's FC
    "partial_register_only": (8, (5, 5), 4, 1, 1, True, None, False),  # 4 of 16 lanes
    "one_lane_left": (33, (6, 7), 17, 1, 1, True, "LeakyRelu", False),  # a block of 16 and one of 1 lane
    "odd_map_batch": (40, (9, 10), 96, 1, 3, False, "Tanh", False),  # 64 + 32: a narrower last block
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_pointwise_kernel(case: str) -> None:
    c, hw, f, stride, batch, bias, activation, prefetched = CASES[case]
    model = _model(c, hw, f, stride, batch, bias, activation)
    x = rng.standard_normal((batch, c, *hw)).astype(np.float32)
    with glow_mlir.compile(import_model(model), keep_ir=True, cache=False) as compiled:
        scheduled = compiled.ir("glow-cpu-schedule")
        got = compiled.run({"x": x})["y"]
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    [want] = session.run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # The vector kernels compute the layer, its bias and activation: no convolution or generic is left for loops.
    assert "__glow_packed_pointwise" in scheduled
    assert "linalg.conv" not in scheduled and "linalg.generic" not in scheduled
    assert ("memref.prefetch" in scheduled) == prefetched


def test_output_inside_a_padded_buffer() -> None:
    """A 1x1 layer whose output is the interior of the next 3x3 layer's padded input: its pixels are not evenly
    spaced (each row is followed by padding), so it runs row by row, and the result is right."""
    model = _model(32, (5, 5), 32, 1, 1, True, "Relu", then_3x3=True)
    x = rng.standard_normal((1, 32, 5, 5)).astype(np.float32)
    with glow_mlir.compile(import_model(model), keep_ir=True, cache=False) as compiled:
        scheduled = compiled.ir("glow-cpu-schedule")
        got = compiled.run({"x": x})["y"]
    # The 1x1 kernel writes a [1, 5, 5, 32] view of the 7x7 padded buffer.
    assert re.search(r"memref<1x5x5x32xf32, strided<\[1568, 224, 32, 1\], offset: 256>>", scheduled), scheduled
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got, session.run(None, {"x": x})[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("row", "f", "channels_outer", "tile"),
    [
        (3136, 256, False, (6, 4)),  # ResNet-50's 56x56 layers: the fewest loads per FMA
        (49, 2048, True, (13, 2)),  # its 7x7 layers: the filter streams, the most pixels per filter vector
        (7, 2048, True, (7, 2)),  # a row of 7 (stride 2): 7 x 2, not 4 + 3 pixels of 4 vectors
        (1, 64, True, (1, 4)),  # one pixel: all four vectors
        (100, 16, False, (13, 1)),  # 16 channels: one vector; 100 pixels as 7 tiles of 13 and one of 9, not 14s and 2
    ],
)
def test_register_tile(row: int, f: int, channels_outer: bool, tile: tuple[int, int]) -> None:
    assert register_tile(row, f, channels_outer) == tile


def test_channel_blocks() -> None:
    assert channel_blocks(256, 4) == [(0, 4, 4)]
    assert channel_blocks(96, 4) == [(0, 1, 4), (64, 1, 2)]
    assert channel_blocks(40, 2) == [(0, 1, 2), (32, 1, 1)]
    assert channel_blocks(17, 1) == [(0, 1, 1), (16, 1, 1)]
    assert channel_blocks(4, 2) == [(0, 1, 1)]


def test_chunk_images() -> None:
    assert chunk_images(32, 6 * 6 * 256 * 4) == 16  # the batch_in_chunks case: 1.2 MB in two chunks
    assert chunk_images(8, 7 * 7 * 2048 * 4) == 2  # ResNet-50's 7x7 layers at batch 8: 400 KB per image
    assert chunk_images(3, 64 * 1024) == 3  # all of it fits
    assert chunk_images(5, 2 * 1024 * 1024) == 1  # one image outgrows it
