"""glow-constant-fold reads a constant only for an op that folds: reading every weight of a model on every
run of the pass copied all of it out (VGG-19: 548 MB each time)."""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir

from glow_mlir.context import make_context
from glow_mlir.passes.graph import constant_fold
from glow_mlir.passes.graph import utils as g

TEXT = """
func.func @f(%x: tensor<4xf32> {glow.name = "x"}) -> (tensor<4xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %a = "glow.constant"() {value = dense<[5.0, 6.0, 7.0, 8.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %s = "glow.splat"() {value = 2.0 : f32} : () -> tensor<4xf32>
  %live = "glow.mul"(%x, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %folds = "glow.mul"(%a, %s) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y = "glow.add"(%live, %folds) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
"""


def test_reads_only_the_constants_of_ops_that_fold(monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[str] = []
    original = g.constant_array

    def spy(value: ir.Value) -> np.ndarray | None:
        array = original(value)
        read.append(str(array.tolist()) if array is not None else "")
        return array

    monkeypatch.setattr(g, "constant_array", spy)
    with make_context():
        module = ir.Module.parse(TEXT)
        function = module.body.operations[0].operation
        assert constant_fold.fold_function(function)
        # %a and %s once each, for %folds; %w feeds an op of the input and is never read.
        assert sorted(read) == ["[2.0, 2.0, 2.0, 2.0]", "[5.0, 6.0, 7.0, 8.0]"]
        text = str(module)
        assert "dense<[1.000000e+01, 1.200000e+01, 1.400000e+01, 1.600000e+01]>" in text
        assert "dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]>" in text
