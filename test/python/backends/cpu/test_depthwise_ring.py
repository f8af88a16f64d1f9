"""Depthwise convolutions whose channel blocks alias in L1 (depthwise_ring.py), against onnxruntime: 3x3 stride-1
layers of multiples of 512 channels over a copied ring (bands of rows, a shorter last band, dilation 2, batch 2,
an input whose border is known to be zeros, threads), the layers that keep the band kernel (7x7, stride 2, 384
channels, a map too large for L2), and the filter padded by a vector where its taps alias."""

from __future__ import annotations

import re

import numpy as np
import onnxruntime
import pytest
from onnx import ModelProto, helper

import glow_mlir
from glow_mlir.backends.cpu.depthwise_ring import runs
from glow_mlir.backends.cpu.depthwise_tiles import aliased
from glow_mlir.frontends.onnx import import_model
import onnx_check

rng = np.random.default_rng(0)


def _model(c: int, hw: tuple[int, int], k: int, stride: int, dilation: int, batch: int, relu_before: bool,
           activation: str | None) -> ModelProto:  # fmt: skip
    inits = {"w": (rng.standard_normal((c, 1, k, k)) / k).astype(np.float32),
             "b": rng.uniform(-0.5, 0.5, c).astype(np.float32)}  # fmt: skip
    nodes = [helper.make_node("Relu", ["x"], ["r"])] if relu_before else []
    nodes.append(helper.make_node("Conv", ["r" if relu_before else "x", "w", "b"], ["y" if activation is None else "c"],
                                  kernel_shape=[k, k], strides=[stride] * 2, pads=[dilation * (k // 2)] * 4,
                                  dilations=[dilation] * 2, group=c))  # fmt: skip
    if activation is not None:
        node, bounds = onnx_check.activation_node(activation, "c", "y", clip=(-0.5, 0.5))
        nodes.append(node)
        inits |= bounds
    return onnx_check.model(nodes, {"x": np.zeros((batch, c, *hw), np.float32)}, ["y"], inits)


def _compiled(model: ModelProto, x: np.ndarray, threads: int = 1) -> tuple[np.ndarray, str]:
    """The output on `x`, checked against onnxruntime's, and the IR after glow-cpu-schedule."""
    with glow_mlir.compile(import_model(model), threads=threads, cache=False, keep_ir=True) as compiled:
        scheduled = compiled.ir("glow-cpu-schedule")
        got = compiled.run({"x": x})["y"]
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got, session.run(None, {"x": x})[0], rtol=1e-5, atol=1e-5)
    return got, scheduled


CASES = [
    # c, (h, w), k, stride, dilation, batch, relu before, activation, over a copied ring
    (512, (14, 14), 3, 1, 1, 1, False, "Relu", True),  # MobileNetV1's 512 on 14x14: a ring of 4 vectors
    (1024, (7, 7), 3, 1, 1, 2, True, "Clip", True),  # a border known to be zeros, batch 2, a shorter last band
    (512, (11, 9), 3, 1, 2, 1, False, None, True),  # dilation 2: rings of 5 rows; a non-square map
    (1536, (10, 10), 3, 1, 1, 1, True, "Relu", True),  # Xception's exit flow
    (1024, (7, 7), 7, 1, 1, 1, False, "Relu", False),  # 7x7: the filter read by the tiles, padded
    (1024, (14, 14), 3, 2, 1, 1, False, "Relu", False),  # stride 2
    (384, (14, 14), 3, 1, 1, 1, False, "Relu", False),  # blocks in 8 sets: bands, the filter padded
    (512, (28, 28), 3, 1, 1, 1, False, "Relu", True),  # 3.2 MB of input and output: bands of 6 rows
    (2048, (28, 28), 3, 1, 1, 1, False, "Relu", False),  # a 3-row window of 737 KB: row by row
]


@pytest.mark.parametrize(("c", "hw", "k", "stride", "dilation", "batch", "relu_before", "activation", "ring"), CASES)
def test_aliased_depthwise(c: int, hw: tuple[int, int], k: int, stride: int, dilation: int, batch: int,
                           relu_before: bool, activation: str | None, ring: bool) -> None:  # fmt: skip
    model = _model(c, hw, k, stride, dilation, batch, relu_before, activation)
    x = rng.standard_normal((batch, c, *hw)).astype(np.float32)
    _, scheduled = _compiled(model, x)
    # Over a ring: the FMAs in the helper that copies a block's rows into its alloca, called per (block, image).
    [conv] = [body for body in re.split(r"(?=func\.func private @)", scheduled) if "vector.fma" in body]
    assert conv.startswith("func.func private @__glow_depthwise_ring_") == ring
    assert ("memref.alloca" in conv) == ring
    # Every layer here aliases (C a multiple of 64): its filter is a copy with a vector of padding channels.
    assert re.search(rf"memref.global \"private\" constant @__glow_packed_depthwise_{k}x{k}x{c} : "
                     rf"memref<{k}x{k}x{c + 16}xf32>", scheduled)  # fmt: skip


def test_threads_split_the_blocks() -> None:
    """The (channel block, image) calls each have a ring of their own: split across threads, the output is the
    one-thread output bit for bit."""
    model = _model(1024, (7, 7), 3, 1, 1, 2, False, "Relu")
    x = rng.standard_normal((2, 1024, 7, 7)).astype(np.float32)
    one, _ = _compiled(model, x)
    two, _ = _compiled(model, x, threads=2)
    assert np.array_equal(one, two)


def test_unaliased_filter_is_not_copied() -> None:
    """96 channels (384-byte taps, in all of L1's sets): the filter as the model holds it, no ring."""
    model = _model(96, (14, 14), 5, 1, 1, 1, False, "Relu")
    _, scheduled = _compiled(model, rng.standard_normal((1, 96, 14, 14)).astype(np.float32))
    assert "__glow_packed_depthwise_" not in scheduled and "__glow_depthwise_ring_" not in scheduled


@pytest.mark.parametrize(("c", "sets", "expected"),
                         [(64, 16, True), (96, 16, False), (960, 16, True), (512, 2, True), (1536, 2, True),
                          (1024, 1, True), (256, 2, False), (272, 16, False)])  # fmt: skip
def test_aliased(c: int, sets: int, expected: bool) -> None:
    assert aliased(c, sets) == expected


def test_runs() -> None:
    """A ring's blocks of tiles as loops over blocks of equal widths."""
    assert runs((16, 16, 16, 16), 2) == [(0, 2, (16, 16))]
    assert runs((16, 16, 16, 12), 2) == [(0, 1, (16, 16)), (2, 1, (16, 12))]
    assert runs((16, 16, 8), 1) == [(0, 2, (16,)), (2, 1, (8,))]
