"""The fill of a padded buffer shrinks to its border (padding.fill_borders) where a convolution's bias, a
copy or a fill then writes the interior whole: a chain of padded convolutions (bias or none, stride 2, odd and
asymmetric pads, batch 2, channels that are no multiple of 16, 5x5 windows) and a padded max pool compute what
onnxruntime computes, and no kernel fills a whole padded buffer."""

from __future__ import annotations

import re

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import glow_mlir
from glow_mlir.frontends.onnx import import_model
from onnx_check import IR_VERSION

rng = np.random.default_rng(11)


def _model(n: int, c: int, hw: int, layers: list[tuple[int, int, int, list[int], bool]], pool: bool) -> onnx.ModelProto:
    """x [n, c, hw, hw] through convolutions (filters, window, stride, pads, bias) with ReLUs, then an optional
    3x3 max pool with pads 1."""
    nodes, inits, x = [], [], "x"
    for i, (f, k, stride, pads, bias) in enumerate(layers):
        inits.append(numpy_helper.from_array((rng.standard_normal((f, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32), f"w{i}"))
        inputs = [x, f"w{i}"]
        if bias:
            inits.append(numpy_helper.from_array(rng.uniform(-0.5, 0.5, f).astype(np.float32), f"b{i}"))
            inputs.append(f"b{i}")
        nodes += [helper.make_node("Conv", inputs, [f"c{i}"], kernel_shape=[k, k], strides=[stride] * 2, pads=pads),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"])]
        x, c = f"r{i}", f
    if pool:
        nodes.append(helper.make_node("MaxPool", [x], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4))
        x = "p"
    graph = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, inits[0].dims[1], hw, hw])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)], inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = IR_VERSION
    return model


CASES = {
    "bias_chain": (1, 16, 10, [(32, 3, 1, [1] * 4, True), (32, 3, 1, [1] * 4, True)], False),
    "no_bias": (1, 16, 10, [(32, 3, 1, [1] * 4, False), (32, 3, 1, [1] * 4, False)], False),
    "stride2_odd_channels_batch2": (2, 20, 11, [(24, 3, 2, [1] * 4, True), (40, 3, 1, [1] * 4, True)], False),
    "asymmetric_5x5": (1, 8, 9, [(16, 5, 1, [2, 1, 0, 2], True), (16, 5, 1, [2] * 4, True)], False),
    "stem_and_pool": (1, 3, 32, [(16, 7, 2, [3] * 4, True)], True),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_padded_buffers_fill_their_border(case: str) -> None:
    model = _model(*CASES[case])
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    x = rng.standard_normal(shape).astype(np.float32)
    with glow_mlir.compile(import_model(model), keep_ir=True, cache=False) as compiled:
        [got] = compiled.run({"x": x}).values()
        linalg, scheduled = compiled.ir("glow-ir-to-linalg"), compiled.ir("glow-cpu-schedule")
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got, session.run(None, {"x": x})[0], rtol=1e-4, atol=1e-4)
    # Every buffer that glow-ir-to-linalg filled whole and then viewed (padded) is filled by slabs only.
    padded = set(re.findall(r"linalg\.fill ins\(%\S+ : f32\) outs\(%\S+ : (memref<[0-9x]+xf32>)\)", linalg))
    padded &= set(re.findall(r"memref\.subview %\S+\[[^]]*\] \[[^]]*\] \[[^]]*\] : (memref<[0-9x]+xf32>) to", linalg))
    assert padded
    for buffer in padded:
        assert not re.search(rf"func\.func private @__glow_\w+\(%arg0: {re.escape(buffer)}\) {{", scheduled), buffer


def test_input_is_transposed_into_the_stem_padding() -> None:
    """The NCHW input's transpose writes the stem's padded NHWC buffer in place (glow-ir-optimize-inserts; a
    copy of 3-channel rows into it ran as a scalar loop, 40-70 us per 224x224 image), and the buffer is filled at
    its border only."""
    model = _model(*CASES["stem_and_pool"])
    x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    with glow_mlir.compile(import_model(model), keep_ir=True, cache=False) as compiled:
        [got] = compiled.run({"x": x}).values()
        linalg, scheduled = compiled.ir("glow-ir-to-linalg"), compiled.ir("glow-cpu-schedule")
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got, session.run(None, {"x": x})[0], rtol=1e-4, atol=1e-4)
    assert "linalg.copy" not in linalg
    [transpose] = re.findall(r"linalg\.transpose ins\(%arg0 : \S+\) outs\(%\S+ : ([^)]+)\)", linalg)
    assert transpose == "memref<1x32x32x3xf32, strided<[4332, 114, 3, 1], offset: 351>>"
    assert not re.search(r"func\.func private @__glow_\w+\(%arg0: memref<1x38x38x3xf32>\) {", scheduled)
