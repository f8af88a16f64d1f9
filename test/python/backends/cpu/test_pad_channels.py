"""A depthwise convolution's input with its pixels padded beyond C channels (glow-cpu-pad-channels,
depthwise_tiles.pixel_stride): the rule per layer class, whole networks whose depthwise layers read padded pixels
written by an elementwise op, a dense convolution or a concat computing what onnxruntime computes, and the padded
buffer filled at the border that the convolution reads only, which is marked as zeros (padding.fill_borders)."""

from __future__ import annotations

import re

import numpy as np
import onnx
import onnxruntime
import pytest
from mlir import ir
from onnx import TensorProto, helper, numpy_helper

import glow_mlir
from glow_mlir import ops
from glow_mlir.backends.cpu.depthwise_tiles import pixel_stride
from glow_mlir.backends.cpu.padding import ZERO_BORDER_ATTR, fill_borders
from glow_mlir.context import make_context
from glow_mlir.frontends.onnx import import_model
from onnx_check import IR_VERSION

rng = np.random.default_rng(32)


@pytest.mark.parametrize(("c", "window", "strides", "width", "padded"), [
    (128, (5, 5), (2, 2), 28, 144),  # 512-byte pixels: a block's vectors in 8 sets -> 9 lines a pixel
    (64, (3, 3), (1, 1), 56, 80),  # 4 lines a pixel: 16 sets
    (256, (3, 3), (2, 2), 14, 272),
    (72, (5, 5), (2, 2), 28, 80),  # no multiple of 16: pixels aligned to lines
    (100, (3, 3), (2, 2), 14, 112),
    (96, (5, 5), (2, 2), 28, 96),  # 6 lines a pixel: 32 sets already
    (100, (3, 3), (1, 1), 14, 100),  # the flat kernel reads rows as runs of floats
    (512, (3, 3), (1, 1), 14, 512),  # the copied ring reads its own copy
    (512, (3, 3), (2, 2), 14, 528),
    (768, (7, 7), (1, 1), 7, 768),  # rows shorter than MIN_PADDED_PIXELS
    (24, (5, 5), (2, 2), 28, 24),  # 32 channels would be 1.33x the bytes
    (8, (3, 3), (2, 2), 28, 8),
])  # fmt: skip
def test_pixel_stride_rule(c: int, window: tuple[int, int], strides: tuple[int, int], width: int,
                           padded: int) -> None:  # fmt: skip
    assert pixel_stride(c, window, strides, width) == padded


def _conv(nodes: list, inits: list, x: str, c: int, f: int, k: int, stride: int, group: int, name: str,
          dilation: int = 1, pads: list[int] | None = None) -> str:  # fmt: skip
    w = (rng.standard_normal((f, c // group, k, k)) / np.sqrt(c // group * k * k)).astype(np.float32)
    inits += [numpy_helper.from_array(w, f"{name}_w"),
              numpy_helper.from_array(rng.uniform(-0.5, 0.5, f).astype(np.float32), f"{name}_b")]
    reach = (k - 1) * dilation
    pads = pads if pads is not None else [reach // 2, reach // 2, reach - reach // 2, reach - reach // 2]
    nodes += [helper.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [f"{name}_c"], kernel_shape=[k, k],
                               strides=[stride] * 2, dilations=[dilation] * 2, pads=pads, group=group),
              helper.make_node("Relu", [f"{name}_c"], [name])]  # fmt: skip
    return name


def _model(case: str) -> tuple[onnx.ModelProto, list[int], int]:
    """(model, input shape, the padded channels of its depthwise layer's input)."""
    nodes: list = []
    inits: list = []
    if case == "after_add":
        # An Add of the input and itself writes the depthwise layer's 128-channel padded input; batch 2.
        shape, c, padded = [2, 128, 28, 28], 128, 144
        nodes.append(helper.make_node("Add", ["x", "x"], ["a"]))
        y = _conv(nodes, inits, "a", c, c, 5, 2, c, "dw")
    elif case == "after_dense_conv":
        # A dense 3x3 convolution (no expansion to fuse with) feeds a 3x3 stride-2 layer of 72 channels.
        shape, c, padded = [1, 12, 30, 30], 72, 80
        x = _conv(nodes, inits, "x", 12, c, 3, 1, 1, "dense")
        y = _conv(nodes, inits, x, c, c, 3, 2, c, "dw")
    elif case == "after_concat":
        # MixNet's split channels: two convolutions concatenated into 64 channels, a 5x5 stride-1 layer on them.
        shape, c, padded = [1, 12, 20, 20], 64, 80
        a = _conv(nodes, inits, "x", 12, 32, 3, 1, 1, "a")
        b = _conv(nodes, inits, "x", 12, 32, 1, 1, 1, "b")
        nodes.append(helper.make_node("Concat", [a, b], ["cat"], axis=1))
        y = _conv(nodes, inits, "cat", c, c, 5, 1, c, "dw")
    else:
        # Dilation 2 and asymmetric pads on 256 channels, stride 1.
        shape, c, padded = [1, 256, 16, 16], 256, 272
        nodes.append(helper.make_node("Abs", ["x"], ["a"]))
        y = _conv(nodes, inits, "a", c, c, 3, 1, c, "dw", dilation=2, pads=[2, 1, 1, 2])
    graph = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(y, TensorProto.FLOAT, None)], inits)  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = IR_VERSION
    return model, shape, padded


CASES = ("after_add", "after_dense_conv", "after_concat", "dilated_asymmetric")


@pytest.mark.parametrize("case", CASES)
def test_depthwise_reads_padded_pixels(case: str) -> None:
    model, shape, padded = _model(case)
    x = rng.standard_normal(shape).astype(np.float32)
    with glow_mlir.compile(import_model(model), keep_ir=True, cache=False) as compiled:
        [got] = compiled.run({"x": x}).values()
        pass_ir, linalg = compiled.ir("glow-cpu-pad-channels"), compiled.ir("glow-ir-to-linalg")
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got, session.run(None, {"x": x})[0], rtol=1e-4, atol=1e-4)
    assert re.search(rf"alloc_activation\"\(\) : \(\) -> memref<{shape[0]}x\d+x\d+x{padded}xf32>", pass_ir)
    _check_border(linalg, padded)


def _check_border(linalg: str, padded: int) -> None:
    """fill_borders on the linalg IR: the padded buffer's whole fill becomes fills of its border within the
    channels the convolution reads (no fill of the whole buffer, none of the padding channels alone), and the
    convolution is marked as reading zeros there."""
    with make_context():
        module = ir.Module.parse(linalg)
        [function] = ops.functions(module)
        fill_borders(function)
        walked = ops.walk_ops(function)
        [dw] = [op for op in walked if op.name == "linalg.depthwise_conv_2d_nhwc_hwc"]
        assert ZERO_BORDER_ATTR in dw.attributes
        channels = ops.shape(dw.operands[0])[3]
        filled = [ops.shape(op.operands[-1])[3] for op in walked if op.name == "linalg.fill"]
        assert filled and padded not in filled and padded - channels not in filled, filled
