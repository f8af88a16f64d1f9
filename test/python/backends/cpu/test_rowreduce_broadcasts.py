"""glow-cpu-schedule's broadcast forwarding (elementwise_recipes.forward_broadcasts): a broadcast copy read by the
next op is folded into that op's indexing map. Layer norm as transformers export it (mean and 1/stddev over the
hidden dim, each broadcast back over the rows) loses both copies, computes the same bits, and a copy that
something else also reads stays."""

from __future__ import annotations

import numpy as np

from glow_mlir import ops, runtime
from glow_mlir.backends.cpu import elementwise_recipes
from glow_mlir.backends.cpu.elementwise_recipes import forward_broadcasts
from glow_mlir.builder import Graph
from glow_mlir.context import copy_module
from glow_mlir.interpreter import interpret
from glow_mlir.pipeline.runner import COMPILE_PIPELINE, run_pipeline

SHAPE = (1, 12, 48)
TO_LINALG = list(COMPILE_PIPELINE[: COMPILE_PIPELINE.index("glow-ir-to-linalg") + 1])


def _layer_norm(extra_reader: bool = False) -> Graph:
    """(x - mean) * 1 / sqrt(var + eps) over the last dim, with the statistics broadcast back over it; with
    `extra_reader`, the broadcast mean is also returned (its copy then has two readers)."""
    g = Graph("ln")
    x = g.input("x", SHAPE)
    rows = SHAPE[:-1]
    mean = g.div(g.batched_reduce_add(x, axes=[2]), g.splat(rows, SHAPE[2]))
    mean_b = g.broadcast(g.reshape(mean, (*rows, 1)), SHAPE, 0)
    centered = g.sub(x, mean_b)
    var = g.div(g.batched_reduce_add(g.mul(centered, centered), axes=[2]), g.splat(rows, SHAPE[2]))
    scale = g.div(g.splat(rows, 1.0), g.sqrt(g.add(var, g.splat(rows, 1e-5))))
    g.output("y", g.mul(centered, g.broadcast(g.reshape(scale, (*rows, 1)), SHAPE, 0)))
    if extra_reader:
        g.output("mean", mean_b)
    return g


def _broadcast_copies(g: Graph, forward: bool) -> int:
    """The broadcast copies (generics that only copy their input along a broadcasting map) after glow-ir-to-
    linalg, with or without `forward_broadcasts`."""
    module = copy_module(g.module)
    with module.context:
        run_pipeline(module, TO_LINALG)
        if forward:
            for function in ops.functions(module):
                if function.regions[0].blocks:
                    forward_broadcasts(function)
        return sum(elementwise_recipes._is_broadcast_copy(op) for op in ops.walk_ops(module.operation))


def test_layer_norm_broadcasts_are_read_in_place() -> None:
    g = _layer_norm()
    assert _broadcast_copies(g, forward=False) == 2
    assert _broadcast_copies(g, forward=True) == 0
    x = np.random.default_rng(3).standard_normal(SHAPE).astype(np.float32)
    want = interpret(g.module, {"x": x})["y"]
    with runtime.compile(g) as model:
        np.testing.assert_allclose(model.run({"x": x})["y"], want, rtol=1e-5, atol=1e-5)


def test_a_broadcast_with_another_reader_stays() -> None:
    """The returned broadcast is copied into the output: that copy stays, the other is forwarded."""
    g = _layer_norm(extra_reader=True)
    before, after = _broadcast_copies(g, forward=False), _broadcast_copies(g, forward=True)
    assert after == before - 1 >= 1
    x = np.random.default_rng(4).standard_normal(SHAPE).astype(np.float32)
    want = interpret(g.module, {"x": x})
    with runtime.compile(g) as model:
        got = model.run({"x": x})
    for name in ("y", "mean"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5)


def test_forwarded_readers_stay_vectorized() -> None:
    """The reader with a broadcasting map is a vector kernel like before: no scalar loop nest is left."""
    with runtime.compile(_layer_norm(), keep_ir=True) as model:
        llvm = model.ir("glow-to-llvm")
    assert "@__glow_loops" not in llvm and "vector<16xf32>" in llvm
