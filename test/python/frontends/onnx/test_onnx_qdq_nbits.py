"""Weight-only products written as QDQ (frontends/onnx/qdq_nbits.py): a blocked 4- or 8-bit DequantizeLinear read
only as MatMul's B runs as MatMulNBits on its packed values; other readers, layouts and types keep the plain
import. Against onnxruntime without its graph optimizations (its fused form quantizes A to int8)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import glow_mlir
from glow_mlir.frontends.onnx import import_model

rng = np.random.default_rng(0)


def _model(q: np.ndarray, scales: np.ndarray, zeros: np.ndarray | None, block: int, axis: int = 0,
           also_output: bool = False) -> onnx.ModelProto:  # fmt: skip
    """x [3, K] @ DequantizeLinear(q, scales, zeros) -> y (and the dequantized W as an output)."""
    k, n = q.shape
    inits = [numpy_helper.from_array(q, "q"), numpy_helper.from_array(scales, "s")]
    if zeros is not None:
        inits.append(numpy_helper.from_array(zeros, "z"))
    dq = helper.make_node("DequantizeLinear", ["q", "s", *(["z"] if zeros is not None else [])], ["w"], axis=axis,
                          block_size=block)  # fmt: skip
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, n])]
    if also_output:
        outputs.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, [k, n]))
    graph = helper.make_graph([dq, helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "qdq",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, k])], outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def _run(model: onnx.ModelProto, k: int) -> str:
    """Checks glow-mlir against onnxruntime's unfused graph; the IR after glow-cpu-nbits."""
    feeds = {"x": rng.standard_normal((3, k)).astype(np.float32)}
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"]).run(None, feeds)
    with glow_mlir.compile(import_model(model), keep_ir=True, cache=False) as compiled:
        got = compiled.run(feeds)
        for output, expected in zip(model.graph.output, want, strict=True):
            # Sums of 72 products up to 255 x 0.15: absolute tolerance on their scale.
            np.testing.assert_allclose(got[output.name], expected, rtol=1e-5, atol=1e-6 * np.abs(expected).max())
        return compiled.ir("glow-cpu-nbits")


@pytest.mark.parametrize(("dtype", "zero_points"), [(ml_dtypes.int4, False), (ml_dtypes.uint4, True),
                                                    (np.int8, True), (np.uint8, False)])  # fmt: skip
def test_blocked_weights_run_packed(dtype: type, zero_points: bool) -> None:
    """K = 72 ends inside its third block of 32; signed types are offset to MatMulNBits' unsigned values."""
    k, n, block = 72, 24, 32
    info = ml_dtypes.iinfo(dtype)
    q = rng.integers(info.min, info.max + 1, (k, n)).astype(dtype)
    scales = (rng.standard_normal((-(-k // block), n)) * 0.05).astype(np.float32)
    zeros = rng.integers(info.min, info.max + 1, scales.shape).astype(dtype) if zero_points else None
    assert "glow.cpu_matmul_nbits" in _run(_model(q, scales, zeros, block), k)


@pytest.mark.parametrize("case", ["also_output", "blocks_along_n"])
def test_other_layouts_and_readers_keep_the_plain_import(case: str) -> None:
    """W also a graph output (another reader), or blocked along N (axis 1): dequantized as before."""
    k, n, block = 64, 32, 16
    q = rng.integers(-8, 8, (k, n)).astype(ml_dtypes.int4)
    shape = (k // block, n) if case == "also_output" else (k, n // block)
    scales = (rng.standard_normal(shape) * 0.05).astype(np.float32)
    model = _model(q, scales, None, block, axis=0 if case == "also_output" else 1, also_output=case == "also_output")
    assert "glow.cpu_matmul_nbits" not in _run(model, k)
