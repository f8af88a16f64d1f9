"""glow-lower's CPU rule for glow.softmax (glow_mlir/backends/cpu/rowreduce_softmax.py): attention-shaped softmax
compiles to vector kernels (no scalar loop left in the entry function), matches numpy's softmax (also with -inf
from a mask and large values), and what the rule keeps (short rows, f64) still compiles and matches."""

from __future__ import annotations

import re

import numpy as np
import pytest

from glow_mlir import runtime
from glow_mlir.builder import Graph


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _entry_has_loops(llvm: str) -> bool:
    """Whether the entry function (not an outlined kernel, not the C interface wrapper) branches: the scalar
    softmax lowering's loops stay there, kernels are outlined."""
    chunks = llvm.split("\n  llvm.func @")[1:]
    entry = [c for c in chunks if not c.startswith(("__glow", "_mlir_ciface"))]
    return any("llvm.cond_br" in c for c in entry)


def _compiled(shape: tuple[int, ...], dtype: str = "f32") -> tuple[runtime.CompiledModel, str]:
    g = Graph("softmax")
    g.output("y", g.softmax(g.input("x", shape, dtype)))
    model = runtime.compile(g, keep_ir=True)
    return model, model.ir("glow-to-llvm")


@pytest.mark.parametrize("shape", [(1, 4, 64, 64), (2, 37, 37), (3, 100)])
def test_attention_softmax_is_vector_code_and_exact(shape: tuple[int, ...]) -> None:
    model, llvm = _compiled(shape)
    assert not _entry_has_loops(llvm) and re.search(r"vector<(16|32|64)xf32>", llvm)
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(shape) * 8).astype(np.float32)
    x[..., -1] = -np.inf  # a masked position
    x.reshape(-1, shape[-1])[0, 0] = 80.0  # exp would overflow without subtracting the max
    with model:
        got = model.run({"x": x})["y"]
    np.testing.assert_allclose(got, _softmax(x), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(("shape", "dtype"), [((3, 8), "f32"), ((2, 32), "f64")])
def test_kept_softmax_still_compiles(shape: tuple[int, ...], dtype: str) -> None:
    model, llvm = _compiled(shape, dtype)
    assert _entry_has_loops(llvm)
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32 if dtype == "f32" else np.float64)
    with model:
        np.testing.assert_allclose(model.run({"x": x})["y"], _softmax(x), rtol=1e-6, atol=1e-7)
