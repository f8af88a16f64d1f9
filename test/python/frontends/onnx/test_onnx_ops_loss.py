"""NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, imported as their ONNX function bodies
(frontends/onnx/functions.py; GatherElements picks each target's score): glow-mlir against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx_check import check_node, rand

rng = np.random.default_rng(5)


def targets(n: int, c: int, *rest: int, ignore: int | None = None) -> np.ndarray:
    labels = rng.integers(0, c, (n, *rest)).astype(np.int64)
    if ignore is not None:
        labels.reshape(-1)[::3] = ignore
    return labels


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("rest", [(), (4,), (3, 2)])
def test_nll_loss(reduction: str, weighted: bool, rest: tuple[int, ...]) -> None:
    inputs = {"x": rand(3, 5, *rest, low=-3, high=0), "t": targets(3, 5, *rest)}
    consts = {"w": rand(5, low=0.1, high=2)} if weighted else {}
    check_node("NegativeLogLikelihoodLoss", inputs, {"reduction": reduction}, consts, opset=13)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("ignore_index", [0, -1])
def test_nll_loss_ignore_index(reduction: str, ignore_index: int) -> None:
    inputs = {"x": rand(4, 6, 3, low=-3, high=0), "t": targets(4, 6, 3, ignore=ignore_index)}
    attrs = {"reduction": reduction, "ignore_index": ignore_index}
    check_node("NegativeLogLikelihoodLoss", inputs, attrs, {"w": rand(6, low=0.1, high=2)}, opset=13)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("rest", [(), (4,), (2, 3)])
def test_softmax_cross_entropy(reduction: str, weighted: bool, rest: tuple[int, ...]) -> None:
    inputs = {"x": rand(3, 5, *rest, low=-4, high=4), "t": targets(3, 5, *rest)}
    consts = {"w": rand(5, low=0.1, high=2)} if weighted else {}
    # Both outputs: the loss and the log-probabilities.
    check_node("SoftmaxCrossEntropyLoss", inputs, {"reduction": reduction}, consts, opset=13, outputs=2)


@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_softmax_cross_entropy_ignore_index_double(reduction: str) -> None:
    inputs = {"x": rand(4, 3, 5, low=-4, high=4, dtype=np.float64), "t": targets(4, 3, 5, ignore=2)}
    attrs = {"reduction": reduction, "ignore_index": 2}
    check_node("SoftmaxCrossEntropyLoss", inputs, attrs, opset=13, outputs=2)
