"""glow-schedule: the memory-aware order is a valid order that computes the same outputs, peaks lower than a
bad program order, and makes glow-allocate's arena smaller."""

from __future__ import annotations

import numpy as np
from mlir import ir

from glow_mlir import ops, runtime
from glow_mlir.builder import Graph
from glow_mlir.context import copy_module, make_context
from glow_mlir.interpreter import interpret
from glow_mlir.pipeline.runner import run_pipeline
from glow_mlir.passes.lowering.memory_schedule import (
    SCHEDULE_PEAK,
    TOPOLOGICAL_PEAK,
    peak_live_bytes,
    tensor_bytes,
)

RNG = np.random.default_rng(11)


def _random(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _interleaved(depth: int) -> Graph:
    """Two long branches that widen then narrow, built step by step in turn: program order keeps both wide
    intermediates alive at once."""
    g = Graph("branches")
    x = g.input("x", (4, 16))
    left, right = x, x
    for _ in range(depth):
        left = g.tanh(g.matmul(left, _random(16, 256)))
        right = g.sigmoid(g.matmul(right, _random(16, 256)))
        left = g.matmul(left, _random(256, 16))
        right = g.matmul(right, _random(256, 16))
    g.output("y", g.add(left, right))
    return g


def _function(module: ir.Module) -> ir.Operation:
    return ops.functions(module)[0]


def test_scheduler_lowers_the_peak_of_interleaved_branches() -> None:
    g = _interleaved(3)
    module = copy_module(g.module)
    with module.context:
        run_pipeline(module, ["glow-schedule", "glow-verify"])
    function = _function(module)
    scheduled = ops.integer(function, SCHEDULE_PEAK)
    program = ops.integer(function, TOPOLOGICAL_PEAK)
    assert scheduled < program
    # The function now runs in the scheduled order, and the recorded peak is that order's.
    block = function.regions[0].blocks[0]
    body = [op.operation for op in block.operations]
    assert peak_live_bytes(body[:-1], body[-1].operands) == scheduled
    feeds = {"x": _random(4, 16)}
    expected = interpret(g.module, feeds)["y"]
    np.testing.assert_allclose(interpret(module, feeds)["y"], expected, rtol=1e-5, atol=1e-5)


def test_schedule_shrinks_the_arena() -> None:
    g = _interleaved(2)
    feeds = {"x": _random(4, 16)}
    expected = interpret(g.module, feeds)["y"]
    arenas = []
    for passes in ([], ["glow-schedule"]):
        module = copy_module(g.module)
        with module.context:
            pipeline = ["glow-verify", *passes, "glow-lower", "glow-irgen", "glow-ir-verify", "glow-allocate"]
            run_pipeline(module, pipeline)
        with runtime.compile_allocated(module) as model:
            arenas.append(model.abi.arena_bytes)
            np.testing.assert_allclose(model.run(feeds)["y"], expected, rtol=1e-4, atol=1e-3)
    before, after = arenas
    assert after < before, (before, after)


def test_peak_counts_activations_only() -> None:
    """Constants are globals, reshapes are views, returned values live in output arguments."""
    g = Graph("peak")
    x = g.input("x", (8, 8))
    a = g.exp(x)  # 256 bytes, live until the add
    r = g.reshape(a, (64,))  # a view of a: extends a's life to the last reader of r
    b = g.tanh(x)  # 256 bytes
    c = g.add(g.reshape(b, (64,)), r)  # returned: not in the arena
    g.output("y", g.mul(c, g.constant(_random(64))))
    function = _function(g.module)
    body = [op.operation for op in function.regions[0].blocks[0].operations]
    # exp, tanh both live at the add; the add's result (c) is an activation too, the returned mul is not.
    assert peak_live_bytes(body[:-1], body[-1].operands) == 256 + 256 + 256


def test_tensor_bytes_follow_the_element_type() -> None:
    with make_context():
        sizes = {t: tensor_bytes(ir.Type.parse(f"tensor<3x5x{t}>")) for t in ("f32", "f64", "f16", "i1", "i8", "i64")}
    assert sizes == {"f32": 60, "f64": 120, "f16": 30, "i1": 15, "i8": 15, "i64": 120}


def test_good_program_order_is_kept() -> None:
    g = Graph("chain")
    x = g.input("x", (4, 4))
    g.output("y", g.exp(g.tanh(g.sigmoid(x))))
    module = copy_module(g.module)
    before = str(module)
    with module.context:
        run_pipeline(module, ["glow-schedule"])
    function = _function(module)
    assert ops.integer(function, SCHEDULE_PEAK) == ops.integer(function, TOPOLOGICAL_PEAK) == 128
    del function.attributes[SCHEDULE_PEAK]
    del function.attributes[TOPOLOGICAL_PEAK]
    assert str(module) == before
