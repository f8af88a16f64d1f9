"""A representative subset of the model zoo (test/models/zoo.py; the whole set is `make models`, table in
docs/Models.md): timm CNNs and vision transformers and transformers' GPT-2 and BERT, through both PyTorch
exporters, static and with dynamic axes, through glow_mlir.InferenceSession against onnxruntime (rtol = atol =
1e-4, or onnxruntime's own optimized-vs-unoptimized difference where that is larger; see zoo.tolerance).

A model that glow-mlir refuses stays in the subset, marked `pytest.mark.xfail(strict=True, raises=<its error
type>, reason=<the refusal>)`, so that the test fails (XPASS) the day the op lands and the mark has to go. None is
refused today: BERT's and RoBERTa's GatherElements and the dynamo exports' GatherND (transformers' attention-mask
indexing, aten.index.Tensor) were, and landed while this set was written.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime
import pytest
from models import zoo

import glow_mlir

DOCS_TABLE = Path(__file__).resolve().parents[2] / "docs" / "Models.md"


@pytest.mark.parametrize(
    ("name", "exporter", "dynamic"),
    [
        pytest.param("resnet18", "torchscript", False, id="resnet18-torchscript"),
        pytest.param("convnext_atto", "torchscript", False, id="convnext_atto-torchscript"),
        pytest.param("vit_tiny", "torchscript", False, id="vit_tiny-torchscript"),
        # Dynamic batch: one session, two batch sizes.
        pytest.param("mobilenetv3_small_100", "dynamo", True, id="mobilenetv3-dynamo-dynamic"),
        # Dynamic batch and sequence, default (sdpa) attention, three shapes.
        pytest.param("gpt2", "torchscript", True, id="gpt2-torchscript-dynamic"),
        pytest.param("gpt2", "dynamo", True, id="gpt2-dynamo-dynamic"),
        pytest.param("bert", "torchscript", True, id="bert-torchscript-dynamic"),
    ],
)
def test_matches_onnxruntime(name: str, exporter: str, dynamic: bool) -> None:
    outcome = zoo.check(name, exporter, dynamic)
    print(f"\n{name} {exporter} {'dynamic' if dynamic else 'static'}: max diff {outcome.max_diff:.1e}, "
          f"compile {outcome.compile_seconds:.1f} s, shapes {outcome.shapes}")
    assert outcome.within, f"max diff {outcome.max_diff:.2e} beyond the tolerance {outcome.tolerance:.1e}"
    assert outcome.shapes == (zoo.MODELS[name].dynamic_shapes if dynamic else (zoo.MODELS[name].shape,))


def test_dynamic_export_reports_symbolic_dims() -> None:
    """The dynamic GPT-2 export keeps its dims symbolic, and glow-mlir reports them by name as onnxruntime does."""
    path = str(zoo.exported("gpt2", "torchscript", dynamic=True))
    inputs = glow_mlir.InferenceSession(path).get_inputs()
    expected = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"]).get_inputs()
    assert [i.shape for i in inputs] == [i.shape for i in expected] == [["batch", "sequence"]] * 2


def test_zoo_is_broad_and_documented() -> None:
    """At least 15 architectures from both libraries, CNNs and transformers; the docs table has a row for every
    model, exporter and axes (the set is never pruned: a failing model is a row)."""
    sources = {spec.source for spec in zoo.MODELS.values()}
    families = {spec.family for spec in zoo.MODELS.values()}
    assert len(zoo.MODELS) >= 15 and sources == {"timm", "transformers"} and {"CNN", "transformer"} <= families
    lines = [line for line in DOCS_TABLE.read_text().splitlines() if line.startswith("| ")]
    cells = [[c.strip() for c in line.strip().strip("|").split(" | ")] for line in lines[2:]]
    rows = sorted((row[0], row[3], row[4]) for row in cells)  # model, exporter, axes
    expected = sorted((n, e, a) for n in zoo.MODELS for e in zoo.EXPORTERS for a in ("static", "dynamic"))
    assert rows == expected


def test_tolerance_follows_onnxruntime_noise() -> None:
    quiet = [np.zeros(4, np.float32)]
    assert zoo.tolerance(quiet, [np.full(4, 1e-6, np.float32)]) == zoo.TOLERANCE
    assert zoo.tolerance(quiet, [np.array([0, 0, 0, 1e-2], np.float32)]) == pytest.approx(2e-2)


def test_compare_checks_shape_dtype_and_value() -> None:
    want = [np.array([1.0, 100.0], np.float32)]
    assert zoo.compare(want, [np.array([1.0, 100.005], np.float32)], 1e-4) == (pytest.approx(0.005, rel=1e-3), True)
    assert not zoo.compare(want, [np.array([1.001, 100.0], np.float32)], 1e-4)[1]
    assert not zoo.compare(want, [want[0].astype(np.float64)], 1e-4)[1]
    assert not zoo.compare(want, [want[0][:1]], 1e-4)[1]
