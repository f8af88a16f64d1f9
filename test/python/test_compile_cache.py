"""The on-disk compile cache (glow_mlir/cache.py): a hit skips the compiler and runs the same code, a corrupt
entry is ignored and rebuilt, the cache can be turned off, and the key follows the compile options."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import glow_mlir
from glow_mlir import cache

RNG = np.random.default_rng(5)
WEIGHTS = RNG.standard_normal((32, 48)).astype(np.float32)
FEEDS = {"x": RNG.standard_normal((4, 32)).astype(np.float32)}


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GLOW_MLIR_CACHE", "1")
    monkeypatch.setenv("GLOW_MLIR_CACHE_DIR", str(tmp_path))
    return tmp_path


def graph() -> glow_mlir.Graph:
    g = glow_mlir.Graph("cached")
    g.output("y", g.tanh(g.matmul(g.input("x", (4, 32)), g.constant(WEIGHTS))))
    return g


def compile_and_check(**options: object) -> str:
    """Compiles, checks the result against numpy, and says where the code came from."""
    with glow_mlir.compile(graph(), **options) as model:  # type: ignore[arg-type]
        np.testing.assert_allclose(model.run(FEEDS)["y"], np.tanh(FEEDS["x"] @ WEIGHTS), rtol=1e-5, atol=1e-5)
        return str(model.report.get("cache"))


def entries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))


def test_miss_then_hit(cache_dir: Path) -> None:
    assert compile_and_check() == "stored"
    assert len(entries(cache_dir)) == 2  # the library and its JSON
    assert compile_and_check() == "hit"
    assert not [p for p in cache_dir.iterdir() if p.name.startswith(".")], "temporaries left behind"


def test_a_consumed_module_has_the_key_of_its_copy(cache_dir: Path) -> None:
    # compile(consume=True) streams the bytecode into the hash instead of copying it: the same entry.
    assert compile_and_check(consume=True) == "stored"
    assert compile_and_check() == "hit"
    assert compile_and_check(consume=True) == "hit"
    assert len(entries(cache_dir)) == 2


def test_a_truncated_library_is_ignored_and_rebuilt(cache_dir: Path) -> None:
    assert compile_and_check() == "stored"
    [library] = cache_dir.glob("*.so")
    library.write_bytes(library.read_bytes()[:1000])
    assert compile_and_check() == "stored"
    assert compile_and_check() == "hit"


def test_a_corrupt_json_is_ignored(cache_dir: Path) -> None:
    assert compile_and_check() == "stored"
    [meta] = cache_dir.glob("*.json")
    meta.write_text("{ not json")
    assert compile_and_check() == "stored"


def test_disabled_by_environment_or_argument(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert compile_and_check(cache=False) == "None"
    monkeypatch.setenv("GLOW_MLIR_CACHE", "0")
    assert compile_and_check() == "None"
    assert entries(cache_dir) == []
    assert compile_and_check(cache=True) == "stored"


def test_key_follows_options_and_model(cache_dir: Path) -> None:
    assert compile_and_check() == "stored"
    assert compile_and_check(cpu="x86-64") == "stored"
    assert len(entries(cache_dir)) == 4
    key = cache.key("model", {"cpu": None, "features": None})
    assert key != cache.key("model", {"cpu": None, "features": "+avx2"})
    assert key != cache.key("other model", {"cpu": None, "features": None})
    assert key == cache.key("model", {"features": None, "cpu": None})


def test_keep_ir_bypasses_the_cache(cache_dir: Path) -> None:
    with glow_mlir.compile(graph(), keep_ir=True) as model:
        assert "cache" not in model.report and model.ir("glow-cpu-schedule")
    assert entries(cache_dir) == []


def test_a_corrupt_entry_is_deleted_not_loaded(cache_dir: Path) -> None:
    assert compile_and_check() == "stored"
    [library] = cache_dir.glob("*.so")
    library.write_bytes(library.read_bytes()[:1000])
    [key] = [p.stem for p in cache_dir.glob("*.json")]
    assert cache.load(key) is None
    assert entries(cache_dir) == []


def test_a_hit_reports_its_load_time_and_no_pass_times(cache_dir: Path) -> None:
    assert compile_and_check() == "stored"
    with glow_mlir.compile(graph()) as model:
        assert model.report["cache"] == "hit"
        assert model.report["load_seconds"] > 0 and model.report["pass_seconds"] == []
        assert model.report["arena_bytes"] >= 0


def test_save_object_works_for_a_cached_model(cache_dir: Path, tmp_path: Path) -> None:
    with glow_mlir.compile(graph(), cache=False) as fresh:
        fresh.save_object(tmp_path / "fresh.o")
    assert compile_and_check() == "stored"
    with glow_mlir.compile(graph()) as model:
        assert model.report["cache"] == "hit"
        model.save_object(tmp_path / "cached.o")
    assert (tmp_path / "cached.o").read_bytes()[:4] == b"\x7fELF"
    assert (tmp_path / "cached.o").stat().st_size == (tmp_path / "fresh.o").stat().st_size


def test_xdg_cache_home_is_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GLOW_MLIR_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.directory() == tmp_path / "xdg" / "glow-mlir"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache.directory() == Path.home() / ".cache" / "glow-mlir"


def test_size_cap_evicts_the_least_recently_used(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert compile_and_check() == "stored"
    assert compile_and_check(cpu="x86-64") == "stored"
    [first, second] = cache.entries()
    assert first.function == second.function == "cached"
    # A hit is a use: the first entry becomes the most recent, so the cap evicts the second.
    assert compile_and_check() == "hit"
    monkeypatch.setenv("GLOW_MLIR_CACHE_MAX_BYTES", str(first.bytes + second.bytes - 1))
    cache.evict(cache.max_bytes())
    assert [e.key for e in cache.entries()] == [first.key]
    monkeypatch.setenv("GLOW_MLIR_CACHE_MAX_BYTES", "0")
    assert compile_and_check() == "hit"
    assert compile_and_check(cpu="x86-64") == "stored"
    assert cache.entries() == []  # each store evicts down to the cap


def test_cache_command(cache_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from glow_mlir.tools import cli

    assert compile_and_check() == "stored"
    assert cli.main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert f"directory: {cache_dir}" in out and "entries: 1," in out
    assert cli.main(["cache", "list"]) == 0
    assert "cached" in capsys.readouterr().out
    assert cli.main(["cache", "clear"]) == 0
    assert "deleted 1 entries" in capsys.readouterr().out
    assert entries(cache_dir) == []
