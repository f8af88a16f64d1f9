"""Large weights kept out of the code LLVM compiles (backends/cpu/weights.py): the JIT reads them from memory
the model owns, the compile cache links them into its library, and save_object's object file carries them."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import glow_mlir
from glow_mlir.backends.cpu.weights import WEIGHT_ALIGNMENT, WEIGHT_BYTES
from glow_mlir.library import LoadedModel, entry_point

RNG = np.random.default_rng(11)
# 64 x 128 float32 is 32 KiB, above WEIGHT_BYTES; the bias is 512 bytes, below it.
WEIGHTS = RNG.standard_normal((64, 128)).astype(np.float32)
BIAS = RNG.standard_normal(128).astype(np.float32)
FEEDS = {"x": RNG.standard_normal((3, 64)).astype(np.float32)}
EXPECTED = np.tanh(FEEDS["x"] @ WEIGHTS + BIAS)


def graph() -> glow_mlir.Graph:
    g = glow_mlir.Graph("weighted")
    g.output("y", g.tanh(g.batched_add(g.matmul(g.input("x", (3, 64)), g.constant(WEIGHTS)), g.constant(BIAS))))
    return g


def test_the_thresholds_are_what_the_test_assumes() -> None:
    assert WEIGHTS.nbytes >= WEIGHT_BYTES > BIAS.nbytes


def test_a_large_weight_is_a_declaration_whose_data_the_model_supplies() -> None:
    with glow_mlir.compile(graph(), cache=False, keep_ir=True) as model:
        np.testing.assert_allclose(model.run(FEEDS)["y"], EXPECTED, rtol=1e-5, atol=1e-5)
        moved = model.ir("glow-cpu-external-weights")
        lowered = model.ir("glow-to-llvm")
    assert "glow.weights" in moved
    # One external global without data: the (packed) weights; the bias keeps its bytes in the code.
    assert lowered.count("llvm.mlir.global external constant") == 1
    assert "llvm.mlir.global private constant" in lowered


def test_the_supplied_copies_are_aligned_and_held_by_the_model() -> None:
    with glow_mlir.compile(graph(), cache=False) as model:
        weights = model._weights
        assert len(weights) == 1
        [data] = weights.values()
        assert data.ctypes.data % WEIGHT_ALIGNMENT == 0 and data.nbytes >= WEIGHTS.nbytes
    assert model._weights == {}


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler driver to link the object")
def test_a_saved_object_carries_its_weights(tmp_path: Path) -> None:
    with glow_mlir.compile(graph(), cache=False) as model:
        model.save_object(tmp_path / "model.o")
        abi = model.abi
        # The model still runs from the JIT after the weights went back into its module.
        np.testing.assert_allclose(model.run(FEEDS)["y"], EXPECTED, rtol=1e-5, atol=1e-5)
    library = tmp_path / "model.so"
    # -z defs: a symbol the object needs but does not define (a weight) fails the link.
    subprocess.run(["cc", "-shared", "-Wl,-z,defs", "-o", str(library), str(tmp_path / "model.o"), "-lm"], check=True)
    loaded = LoadedModel(abi, entry_point(ctypes.CDLL(str(library)), abi))
    np.testing.assert_allclose(loaded.run(FEEDS)["y"], EXPECTED, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(shutil.which("cc") is None, reason="the compile cache links with cc")
def test_the_cache_links_the_weights_into_its_library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GLOW_MLIR_CACHE_DIR", str(tmp_path))
    with glow_mlir.compile(graph(), cache=True) as fresh:
        assert fresh.report["cache"] == "stored"
        expected = fresh.run(FEEDS)["y"]
    with glow_mlir.compile(graph(), cache=True) as cached:
        assert cached.report["cache"] == "hit"
        np.testing.assert_array_equal(cached.run(FEEDS)["y"], expected)
