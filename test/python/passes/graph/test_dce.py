"""glow-dce: dead glow ops go, live ones and non-glow ops stay, and results do not change."""

from __future__ import annotations

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.builder import Graph
from glow_mlir.context import make_context
from glow_mlir.interpreter import interpret
from glow_mlir.passes.graph.dce import dce

TEXT = """
func.func @f(%x: tensor<4xf32> {glow.name = "x"}) -> (tensor<4xf32> {glow.name = "y"}) {
  %c = "glow.constant"() {value = dense<2.0> : tensor<4xf32>} : () -> tensor<4xf32>
  %s = "glow.splat"() {value = 1.0 : f32} : () -> tensor<4xf32>
  %d0 = "glow.add"(%x, %s) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %d1 = "glow.relu"(%d0) : (tensor<4xf32>) -> tensor<4xf32>
  %d2 = "glow.exp"(%d1) : (tensor<4xf32>) -> tensor<4xf32>
  %live = "glow.mul"(%x, %c) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %keep = arith.constant 1.0 : f32
  return %live : tensor<4xf32>
}
"""


def names(module: ir.Module) -> list[str]:
    return [op.name for op in ops.walk_ops(module.operation)]


def test_dead_chain_goes_in_one_run() -> None:
    with make_context():
        module = ir.Module.parse(TEXT)
        dce(module)
        assert names(module) == ["func.func", "glow.constant", "glow.mul", "arith.constant", "func.return"]
        module.operation.verify()
        # The arith.constant is not the interpreter's business; everything glow that is left still runs.
        next(op for op in ops.walk_ops(module.operation) if op.name == "arith.constant").erase()
        x = np.arange(4, dtype=np.float32)
        np.testing.assert_array_equal(interpret(module, {"x": x})["y"], 2 * x)


def test_live_graph_is_untouched() -> None:
    g = Graph("live")
    x = g.input("x", (2, 3))
    g.output("y", g.softmax(g.relu(g.add(x, np.ones((2, 3), np.float32)))))
    before = str(g.module)
    dce(g.module)
    assert str(g.module) == before


def test_dead_branch_of_a_built_graph_goes() -> None:
    g = Graph("branch")
    x = g.input("x", (2, 3))
    g.tanh(g.sigmoid(g.matmul(x, np.ones((3, 3), np.float32))))
    g.output("y", g.relu(x))
    module = g.module
    dce(module)
    assert [n for n in names(module) if n.startswith("glow.")] == ["glow.relu"]
