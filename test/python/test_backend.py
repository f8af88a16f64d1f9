"""The ONNX backend API of glow_mlir.onnx_backend: prepare/run, outputs in graph order, specialization on
shape-deciding inputs, run_node, devices and errors."""

from __future__ import annotations

import io
import unittest

import numpy as np
import onnx
import onnx.backend.test
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.backend.base import BackendRep

from glow_mlir.onnx_backend import GlowBackend
from glow_mlir.errors import GlowError, UnsupportedModelError

rng = np.random.default_rng(0)


def rand(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def make_model(
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
    initializers: list[onnx.TensorProto] = (),  # type: ignore[assignment]
) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "test", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def f32(name: str, shape: list[int | str]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def two_outputs_model() -> onnx.ModelProto:
    """sum = x + y, prod = x * y; the graph lists prod first, though its node comes second."""
    nodes = [helper.make_node("Add", ["x", "y"], ["sum"]), helper.make_node("Mul", ["x", "y"], ["prod"])]
    return make_model(nodes, [f32("x", [2, 3]), f32("y", [2, 3])], [f32("prod", [2, 3]), f32("sum", [2, 3])])


def reshape_model() -> onnx.ModelProto:
    """y = relu(reshape(x, shape)): the graph input `shape` decides the output shape."""
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["r"]), helper.make_node("Relu", ["r"], ["y"])]
    inputs = [f32("x", [2, 6]), helper.make_tensor_value_info("shape", TensorProto.INT64, [2])]
    return make_model(nodes, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])


def test_run_returns_outputs_in_graph_order() -> None:
    x, y = rand(2, 3), rand(2, 3)
    rep = GlowBackend.prepare(two_outputs_model())
    prod, total = rep.run([x, y])
    np.testing.assert_allclose(prod, x * y, rtol=1e-6)
    np.testing.assert_allclose(total, x + y, rtol=1e-6)
    outputs = rep.run({"y": y, "x": x})
    assert outputs._fields == ("prod", "sum")
    np.testing.assert_array_equal(outputs["sum"], total)
    rep.close()


def test_run_model_and_single_array_input() -> None:
    x = rand(4, 5)
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], [f32("x", [4, 5])], [f32("y", [4, 5])])
    (y,) = GlowBackend.run_model(model, x)
    np.testing.assert_array_equal(y, np.maximum(x, 0))


def test_initializers_listed_as_inputs_are_not_fed() -> None:
    """Old-style models list initializers among the graph inputs; only the others are fed."""
    w = rand(2, 3)
    model = make_model(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        [f32("x", [2, 3]), f32("w", [2, 3])],
        [f32("y", [2, 3])],
        [numpy_helper.from_array(w, "w")],
    )
    rep = GlowBackend.prepare(model)
    assert rep.input_names == ["x"]
    x = rand(2, 3)
    np.testing.assert_allclose(rep.run([x])[0], x + w, rtol=1e-6)


def test_specializes_on_shape_deciding_inputs() -> None:
    rep = GlowBackend.prepare(reshape_model())
    assert rep.static_inputs == ["shape"]
    assert rep.specializations == 0
    x = rand(2, 6)
    for shape in ([3, 4], [4, 3], [3, 4], [12, 1]):
        (y,) = rep.run([x, np.array(shape, np.int64)])
        np.testing.assert_array_equal(y, np.maximum(x.reshape(shape), 0))
    assert rep.specializations == 3
    rep.close()


def test_run_node() -> None:
    x, y = rand(3, 4), rand(3, 4)
    (z,) = GlowBackend.run_node(helper.make_node("Sub", ["x", "y"], ["z"]), [x, y])
    np.testing.assert_allclose(z, x - y, rtol=1e-6)
    (z,) = GlowBackend.run_node(
        helper.make_node("Add", ["a", "a"], ["z"]), {"a": x}, outputs_info=[(np.float32, (3, 4))], opset_version=14
    )
    np.testing.assert_allclose(z, x + x, rtol=1e-6)


def test_run_node_checks_the_inputs() -> None:
    with pytest.raises(ValueError, match="has inputs"):
        GlowBackend.run_node(helper.make_node("Sub", ["x", "y"], ["z"]), [rand(2)])


def test_devices() -> None:
    assert GlowBackend.supports_device("CPU")
    assert not GlowBackend.supports_device("CUDA")
    assert not GlowBackend.supports_device("TPU")
    with pytest.raises(ValueError, match="CPU only"):
        GlowBackend.prepare(two_outputs_model(), "CUDA")


def test_wrong_inputs_are_named() -> None:
    rep = GlowBackend.prepare(two_outputs_model())
    with pytest.raises(ValueError, match="expected 2 input"):
        rep.run([rand(2, 3)])
    with pytest.raises(ValueError, match="missing: \\['y'\\]"):
        rep.run({"x": rand(2, 3)})
    with pytest.raises(ValueError, match="input 'y'"):
        rep.run([rand(2, 3), rand(3, 2)])
    with pytest.raises(ValueError, match="input 'x'"):
        rep.run([rand(2, 3).astype(np.float64), rand(2, 3)])
    rep.close()
    with pytest.raises(RuntimeError, match="closed"):
        rep.run([rand(2, 3), rand(2, 3)])


def test_unsupported_model_is_refused_at_prepare() -> None:
    model = make_model(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("NoSuchOp", ["r"], ["y"], domain="example")],
        [f32("x", [2])],
        [f32("y", [2])],
    )
    model.opset_import.append(helper.make_opsetid("example", 1))
    with pytest.raises(UnsupportedModelError, match="NoSuchOp"):
        GlowBackend.prepare(model)


def test_symbolic_dims_compile_one_specialization_per_shape() -> None:
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], [f32("x", ["batch", 4])], [f32("y", ["batch", 4])])
    rep = GlowBackend.prepare(model)
    assert rep.specializations == 0
    for batch in (2, 5, 2):
        x = np.linspace(-1, 1, batch * 4, dtype=np.float32).reshape(batch, 4)
        np.testing.assert_array_equal(rep.run([x])[0], np.maximum(x, 0))
    assert rep.specializations == 2
    with pytest.raises(GlowError, match=r"input 'x': dim 1 is 4 in the model, got 3"):
        rep.run([np.zeros((2, 3), np.float32)])


# Generating onnx's node cases overflows and divides by zero on purpose.
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_onnx_backend_test_runner_drives_it() -> None:
    """onnx's own runner (onnx.backend.test.BackendTest) accepts GlowBackend: a node case and a model case."""
    backend_test = onnx.backend.test.BackendTest(GlowBackend, __name__)
    backend_test.include(r"^(test_abs|test_reshape_extended_dims|test_single_relu_model)_cpu$")
    suite = unittest.TestSuite(
        unittest.defaultTestLoader.loadTestsFromTestCase(case) for case in backend_test.test_cases.values()
    )
    result = unittest.TextTestRunner(stream=io.StringIO()).run(suite)
    assert result.testsRun - len(result.skipped) == 3
    assert result.wasSuccessful(), [text for _, text in result.failures + result.errors]


def test_rep_is_an_onnx_backend_rep() -> None:
    rep = GlowBackend.prepare(two_outputs_model())
    assert isinstance(rep, BackendRep)
    assert rep.output_names == ["prod", "sum"]
    assert rep.specializations == 1
    rep.close()
