"""Compile time with GB-scale weights: every copy of the weights is as much fresh memory, whose page faults
cost seconds on this machine, so the passes that derive new weights (a filter transposed to HWIO, scaled by
a folded layer scale, handed to the JIT) copy them no more than they must, and what a compile freed goes back at
once. Peak memory is measured with tracemalloc, which numpy reports its buffers to."""

from __future__ import annotations

import ctypes
import gc
import tracemalloc
import types
from collections.abc import Callable

import numpy as np
import onnx
import pytest
from mlir import ir
from onnx import helper

import glow_mlir
from glow_mlir import ops, runtime
from glow_mlir.frontends.onnx import import_model
from glow_mlir.backends.cpu.weights import WEIGHT_ALIGNMENT, WEIGHTS_ATTR, external_weights
from glow_mlir.passes.graph import fuse_activations
from glow_mlir.passes.graph import utils as g

RNG = np.random.default_rng(22)


def peak_bytes(fn: Callable[[], object]) -> tuple[object, int]:
    """fn's result and the most memory numpy and Python held at once while it ran, above what they held before."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        result = fn()
        return result, tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_constant_array_without_copy_is_a_read_only_view_of_the_attr() -> None:
    array = RNG.standard_normal((8, 4, 3, 3)).astype(np.float32)
    with ir.Context(), ir.Location.unknown():
        ir.Context.current.allow_unregistered_dialects = True
        t = ops.tensor_type(array.shape, ops.mlir_type(np.float32))
        module = ir.Module.create()  # kept: the ops die with it
        with ir.InsertionPoint(module.body):
            value = g.make(g.CONSTANT, [], t, {"value": ops.dense_attr(array, t)})
        view, copy = g.constant_array(value, copy=False), g.constant_array(value)
        assert view is not None and copy is not None
        np.testing.assert_array_equal(view, array)
        np.testing.assert_array_equal(copy, array)
        assert not view.flags.writeable and copy.flags.writeable
        assert np.shares_memory(view, g.constant_array(value, copy=False))
        assert not np.shares_memory(copy, view)


def test_dense_of_a_transposed_view_holds_its_values_in_one_copy() -> None:
    # A float64 filter transposed, stored as float32: cast and reordered in one pass (astype, then
    # ascontiguousarray, made two float32 copies).
    weights = RNG.standard_normal((64, 32, 16, 16))
    view = weights.transpose(2, 3, 1, 0)
    with ir.Context(), ir.Location.unknown():
        result = ops.tensor_type(view.shape, ops.mlir_type(np.float32))
        attr, peak = peak_bytes(lambda: g.dense(view, result))
        np.testing.assert_array_equal(ops.dense_array(attr), view.astype(np.float32))
    assert peak < 1.5 * weights.size * 4, peak


def test_materialize_casts_without_a_copy_of_its_own() -> None:
    weights = RNG.standard_normal((64, 32, 16, 16)).astype(np.float32)
    with ir.Context(), ir.Location.unknown():
        ir.Context.current.allow_unregistered_dialects = True
        result = ops.tensor_type(weights.shape, ops.mlir_type(np.float32))
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            value, peak = peak_bytes(lambda: g.materialize(weights, result, prefer_splat=False))
        np.testing.assert_array_equal(g.constant_array(value), weights)
    # The attr's data is MLIR's, not traced: an array already of the result's type is not copied at all.
    assert peak < 0.5 * weights.nbytes, peak


def test_scaled_weights_are_one_float64_copy() -> None:
    weights = RNG.standard_normal((256, 128, 3, 3)).astype(np.float32)
    weights.flags.writeable = False
    factor = RNG.standard_normal(256).reshape(-1, 1, 1, 1)
    scaled, peak = peak_bytes(lambda: fuse_activations._scaled(weights, factor))
    np.testing.assert_array_equal(scaled, weights.astype(np.float64) * factor)
    assert peak < 1.5 * weights.size * 8, peak


def test_external_weights_take_aligned_attrs_as_they_are_and_copy_the_others() -> None:
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.create()
        arrays = {f"w{i}": RNG.standard_normal(4096 + 4 * i).astype(np.float32) for i in range(64)}
        module.operation.attributes[WEIGHTS_ATTR] = ir.DictAttr.get(
            {name: ops.dense_attr(a, ops.tensor_type(a.shape, ops.mlir_type(np.float32))) for name, a in arrays.items()}
        )
        weights = external_weights(module)
        # MLIR places large data at 16-byte boundaries of malloc's: some of 64 start at a 64-byte one (about a
        # quarter here; how many depends on the allocator, so only the rule is checked).
        for name, array in arrays.items():
            data = weights[name]
            assert data.ctypes.data % WEIGHT_ALIGNMENT == 0
            np.testing.assert_array_equal(data.view(np.float32), array)
            own = ops.dense_array(ir.DictAttr(module.operation.attributes[WEIGHTS_ATTR])[name], copy=False)
            assert np.shares_memory(data, own) == (own.ctypes.data % WEIGHT_ALIGNMENT == 0)


def _folding_model() -> onnx.ModelProto:
    """x @ (Concat(w, w) * 2): a constant subgraph the importer folds (a list operand among them), 64 KiB of
    weights that glow-cpu-external-weights keeps out of the code."""
    w = onnx.numpy_helper.from_array(RNG.standard_normal((64, 128)).astype(np.float32), "w")
    two = onnx.numpy_helper.from_array(np.array(2, np.float32), "two")
    nodes = [
        helper.make_node("Concat", ["w", "w"], ["ww"], axis=0),
        helper.make_node("Mul", ["ww", "two"], ["w2"]),
        helper.make_node("MatMul", ["x", "w2"], ["y"]),
    ]
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 128])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 128])
    graph = helper.make_graph(nodes, "folding", [x], [y], [w, two])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_an_import_and_compile_leave_no_reference_cycles() -> None:
    # Objects in a reference cycle wait for a full garbage collection, and with them the import's and the
    # passes' MLIR contexts: an int4 LLM's compile left 1.5 GB so (recursive closures, a graph holding the
    # Tensors that refer to it).
    # Only glow-mlir's and MLIR's objects count: in a test run other tests' garbage (a thread ending) may appear.
    feeds = {"x": RNG.standard_normal((2, 128)).astype(np.float32)}
    glow_mlir.compile(import_model(_folding_model()), cache=False, progress=False).run(feeds)  # imports modules
    gc.collect()
    gc.disable()
    try:
        model = glow_mlir.compile(import_model(_folding_model()), cache=False, progress=False)
        model.run(feeds)
        del model
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        ours = [o for o in gc.garbage if _of_the_compiler(o)]
        assert not ours, ours[:10]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def _of_the_compiler(o: object) -> bool:
    """Whether `o` is glow-mlir's or MLIR's: an instance or function of their modules, or a ctypes array type."""
    module = getattr(o, "__module__", None) if isinstance(o, (types.FunctionType, type)) else type(o).__module__
    if isinstance(o, type) and issubclass(o, ctypes.Array):
        return True
    return isinstance(module, str) and module.split(".")[0] in ("glow_mlir", "mlir")


@pytest.mark.parametrize("threshold,released", [(1, True), (runtime.RELEASE_WEIGHT_BYTES, False)])
def test_a_compile_with_large_weights_gives_the_free_heap_back(
    monkeypatch: pytest.MonkeyPatch, threshold: int, released: bool
) -> None:
    calls: list[None] = []
    monkeypatch.setattr(runtime, "RELEASE_WEIGHT_BYTES", threshold)
    monkeypatch.setattr(runtime, "_release_free_heap", lambda: calls.append(None))
    model = glow_mlir.compile(import_model(_folding_model()), cache=False, progress=False)
    assert model.weight_bytes == 128 * 128 * 4
    assert len(calls) == (1 if released else 0)


def test_releasing_the_free_heap_runs_where_there_is_one() -> None:
    runtime._release_free_heap()  # glibc's malloc_trim here; nothing on a C library without it
