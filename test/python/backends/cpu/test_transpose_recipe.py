"""Transposes that move the innermost dim run as vector kernels (transpose_recipes.py): register tiles whose
transposes are shuffles; remainders of odd sizes are tiles of their own. Those that keep it stay loop nests
that LLVM vectorizes. Numbers against numpy; the schedule's IR shows which."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import glow_mlir
from glow_mlir.frontends.onnx import import_model
from onnx_check import IR_VERSION

rng = np.random.default_rng(11)


def _model(shape: tuple[int, ...], perm: tuple[int, ...], elem: int = TensorProto.FLOAT) -> onnx.ModelProto:
    node = helper.make_node("Transpose", ["x"], ["y"], perm=list(perm))
    graph = helper.make_graph(
        [node],
        "t",
        [helper.make_tensor_value_info("x", elem, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = IR_VERSION
    return model


@pytest.mark.parametrize(
    "shape,perm",
    [
        ((37, 45), (1, 0)),  # both dims with remainders
        ((16, 48), (1, 0)),  # whole 16x16 tiles only
        ((2, 56, 24), (0, 2, 1)),  # 8-wide tiles where 16 does not divide
        ((5, 3), (1, 0)),  # smaller than one tile
        ((2, 3, 40, 9), (0, 2, 3, 1)),  # NCHW -> NHWC of an RGB input, batch 2
        ((1, 32, 20, 37), (0, 2, 3, 1)),  # NCHW -> NHWC, odd width
        ((2, 7, 7, 40), (0, 3, 1, 2)),  # NHWC -> NCHW of a 7x7 map
        ((2, 3, 197, 32), (0, 1, 3, 2)),  # attention's K^T over 197 tokens
        ((2, 197, 3, 32), (0, 2, 1, 3)),  # attention's head split: the innermost dim stays
        ((2, 4, 7, 4, 7, 24), (0, 1, 3, 2, 4, 5)),  # Swin's window partition, rank 6
        ((3, 5, 6, 17, 19), (4, 2, 0, 3, 1)),  # rank 5, every dim moves
        ((3, 5, 17), (2, 0, 1)),
        ((7, 1, 33), (2, 1, 0)),  # a unit dim between the two tiled ones
        ((4, 6, 10), (1, 0, 2)),  # innermost kept, shorter than a vector
    ],
)
def test_transpose_matches_numpy(shape: tuple[int, ...], perm: tuple[int, ...]) -> None:
    x = rng.standard_normal(shape).astype(np.float32)
    with glow_mlir.compile(import_model(_model(shape, perm)), keep_ir=True, cache=False) as compiled:
        [got] = compiled.run({"x": x}).values()
        text = compiled.ir("glow-cpu-schedule")
    np.testing.assert_array_equal(got, np.transpose(x, perm))
    moved = perm[-1] != len(shape) - 1
    assert ("__glow_loops_" in text) != moved, text
    if moved:
        assert "vector.shuffle" in text, text


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize(
    "shape,perm",
    [
        ((1, 3, 96, 96), (0, 2, 3, 1)),  # a QDQ model's quantized RGB input into NHWC: interleaved rows
        ((2, 3, 5, 40), (0, 2, 3, 1)),  # interleaved rows with a masked last run of pixels
        ((1, 16, 24, 24), (0, 2, 3, 1)),  # NCHW -> NHWC, 16x16 tiles and 8-wide ones
        ((1, 40, 7, 9), (0, 2, 3, 1)),  # odd sizes: remainder tiles
        ((2, 6, 6, 96), (0, 3, 1, 2)),  # NHWC -> NCHW
    ],
)
def test_byte_transposes_are_vector_kernels(shape: tuple[int, ...], perm: tuple[int, ...], dtype: type) -> None:
    """A QDQ model's uint8 activations change layout too (its quantized input, an int8 layer's NCHW output read
    in NHWC): the same register tiles and interleaved rows on bytes, not a loop nest of one byte at a time."""
    x = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, shape, endpoint=True).astype(dtype)
    elem = TensorProto.UINT8 if dtype == np.uint8 else TensorProto.INT8
    with glow_mlir.compile(import_model(_model(shape, perm, elem)), keep_ir=True, cache=False) as compiled:
        [got] = compiled.run({"x": x}).values()
        text = compiled.ir("glow-cpu-schedule")
    np.testing.assert_array_equal(got, np.transpose(x, perm))
    assert "__glow_loops_" not in text and "vector.shuffle" in text, text


@pytest.mark.parametrize("shape", [(1, 32, 16, 48), (1, 3, 16, 48), (1, 5, 4, 20), (1, 8, 2, 16)])
def test_llvm_gets_register_shuffles(shape: tuple[int, ...]) -> None:
    """NCHW -> NHWC of 32 channels (16x16 tiles) and of 3, 5 and 8 (interleaved rows): the transposes reach
    LLVM as shuffles of whole vectors, not as one extract and insert per element."""
    with glow_mlir.compile(import_model(_model(shape, (0, 2, 3, 1))), keep_ir=True, cache=False) as compiled:
        text = compiled.ir("glow-to-llvm")
    assert "llvm.shufflevector" in text
    assert "llvm.extractelement" not in text and "llvm.insertelement" not in text


@pytest.mark.parametrize(
    "shape",
    [
        (2, 3, 5, 40),  # an RGB input, rows of 2 full runs of 16 pixels and 8 left (24 floats: 2 registers masked)
        (1, 2, 3, 16),  # 2 channels: one shuffle of two registers
        (1, 5, 2, 21),  # 5 channels (an odd level of pairs), 5 pixels left
        (1, 8, 3, 7),  # 8 channels, fewer pixels than a run
    ],
)
def test_small_channel_counts_interleave(shape: tuple[int, ...]) -> None:
    """NCHW -> NHWC of at most 8 channels (transpose_recipes._interleave): per row, each run of 16 pixels is one
    load per channel plane, one interleaving shuffle and C register stores into the row as a run of floats (the
    last pixels masked), written into the interior of the padded input of a convolution after it, against
    numpy; the padded buffer's fill shrinks to its border (padding.fill_borders)."""
    n, c, h, w = shape
    # 16 outputs: a convolution to fewer stays NCHW (narrow_conv_recipes.py) and needs no transpose.
    kernel = rng.standard_normal((16, c, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 3, 1]),
             helper.make_node("Transpose", ["t"], ["u"], perm=[0, 3, 1, 2]),
             helper.make_node("Conv", ["u", "k"], ["y"], pads=[1] * 4)]  # fmt: skip
    graph = helper.make_graph(
        nodes,
        "t",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(kernel, "k")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = IR_VERSION
    x = rng.standard_normal(shape).astype(np.float32)
    with glow_mlir.compile(import_model(model), keep_ir=True, cache=False) as compiled:
        [got] = compiled.run({"x": x}).values()
        text = compiled.ir("glow-cpu-schedule")
    padded = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)])
    want = np.zeros((n, 16, h, w), np.float32)
    for i in range(3):
        for j in range(3):
            want += np.einsum("nchw,oc->nohw", padded[:, :, i : i + h, j : j + w], kernel[:, :, i, j])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    order = [lane % c * 16 + lane // c for lane in range(16 * c)]
    assert f"[{', '.join(map(str, order))}]" in text, text
    # No fill of the whole padded buffer: only its border slabs.
    assert not re.search(rf"linalg.fill ins\(%\w+ : f32\) outs\(%\w+ : memref<{n}x{h + 2}x{w + 2}x{c}xf32>\)", text)
