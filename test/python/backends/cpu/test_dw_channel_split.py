"""Depthwise convolutions whose channels are not a multiple of 16 run as two kernels: the largest multiple of
16 channels with whole AVX-512 registers, and the rest on their own channel slice (conv_recipes.py,
`depthwise_recipe`). One kernel over all 88 or 40 channels used odd vector lengths and ran at 1-4 GFLOP/s."""

from __future__ import annotations

import re

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import glow_mlir
from glow_mlir.frontends.onnx import import_model

rng = np.random.default_rng(0)


def _depthwise(channels: int, size: int, k: int, stride: int):
    w = (rng.standard_normal((channels, 1, k, k)) / k).astype(np.float32)
    b = rng.uniform(-0.2, 0.2, channels).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[k, k], strides=[stride] * 2,
                            pads=[k // 2] * 4, group=channels)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, size, size])
    graph = helper.make_graph([node], "dw", [x],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model


@pytest.mark.parametrize(
    ("channels", "size", "k", "stride", "widths"),
    [(88, 14, 3, 1, (80, 8)), (40, 24, 7, 1, (32, 8)), (60, 12, 5, 2, (48, 12)), (12, 9, 3, 1, (12,)),
     (48, 10, 3, 1, (48,))],
)
def test_depthwise_channel_split(channels: int, size: int, k: int, stride: int, widths: tuple[int, ...]) -> None:
    model = _depthwise(channels, size, k, stride)
    x = rng.standard_normal((1, channels, size, size)).astype(np.float32)
    with glow_mlir.compile(import_model(model), keep_ir=True) as compiled:
        scheduled = compiled.ir("glow-cpu-schedule")
        got = compiled.run({"x": x})["y"]
    # Each depthwise kernel's signature names its filter slice [KH, KW, channels].
    filters = re.findall(rf"func\.func private @__glow_kernel\d+\([^)]*memref<{k}x{k}x(\d+)xf32", scheduled)
    assert tuple(int(f) for f in filters) == widths, scheduled
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    [want] = session.run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
