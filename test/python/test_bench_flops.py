"""bench/flops.py's MAC counts against the hand counts in its docstring."""

from __future__ import annotations

import pytest

from bench import flops, models


@pytest.mark.parametrize(
    ("name", "macs"),
    [
        ("mlp", 535_040),
        ("lenet", 416_520),
        ("bert", 6_422_528),
        # transformers' export: onnx's shape inference leaves the embeddings' batch dimension unknown, so this
        # count goes through the symbolic fallback.
        ("bert_s64", 104_857_600),
    ],
)
def test_hand_counts(name: str, macs: int) -> None:
    assert flops.count_macs(models.onnx_path(name)) == macs
