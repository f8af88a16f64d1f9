"""Transposes that move the innermost dim run as vector kernels (transpose_recipes.py): register tiles whose
transposes are shuffles; remainders of odd sizes are tiles of their own. Those that keep it stay loop nests
that LLVM vectorizes. Numbers against numpy; the schedule's IR shows which."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import glow_mlir
from glow_mlir.frontends.onnx import import_model
from onnx_check import IR_VERSION

rng = np.random.default_rng(11)


def _model(shape: tuple[int, ...], perm: tuple[int, ...]) -> onnx.ModelProto:
    node = helper.make_node("Transpose", ["x"], ["y"], perm=list(perm))
    graph = helper.make_graph(
        [node],
        "t",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
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


@pytest.mark.parametrize("shape", [(1, 32, 16, 48), (1, 3, 16, 48)])
def test_llvm_gets_register_shuffles(shape: tuple[int, ...]) -> None:
    """NCHW -> NHWC of 32 and of 3 channels: the tiles' transposes reach LLVM as shuffles of whole vectors, not
    as one extract and insert per element."""
    with glow_mlir.compile(import_model(_model(shape, (0, 2, 3, 1))), keep_ir=True, cache=False) as compiled:
        text = compiled.ir("glow-to-llvm")
    assert "llvm.shufflevector" in text
    assert "llvm.extractelement" not in text and "llvm.insertelement" not in text
