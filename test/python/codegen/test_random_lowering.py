"""glow.random_uniform / glow.random_normal through the graph builder: Philox-4x32-10 against Random123's
known answers, the compiled code against the reference interpreter for every element type and run, the
same numbers at any thread count, and one draw per run when several Python threads run one model at once."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

import glow_mlir
from glow_mlir.builder import Graph
from glow_mlir.opdefs.random import philox


def _words(*values: int) -> tuple[np.ndarray, ...]:
    return tuple(np.array([v], np.uint32) for v in values)


def test_philox_matches_random123_known_answers() -> None:
    """Random123's kat_vectors for philox4x32 with 10 rounds."""
    cases = [
        ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
        ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
        ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
         (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
    ]
    for counter, key, expected in cases:
        assert tuple(int(w[0]) for w in philox(_words(*counter), key)) == expected


def _graph(dtype: str) -> Graph:
    g = Graph("draws")
    x = g.input("x", [7, 33], dtype)
    g.output("u", g.add(x, g.random("random_uniform", [7, 33], (-1.0, 4.0), dtype, seed=9.0)))
    g.output("n", g.random("random_normal", [5, 3, 2], (2.0, 0.5), dtype, seed=10.0))
    g.output("free", g.random("random_normal", [64], (0.0, 1.0), dtype))
    return g


@pytest.mark.parametrize("dtype", ["f32", "f64", "f16", "bf16"])
def test_compiled_draws_are_the_interpreters(dtype: str) -> None:
    g = _graph(dtype)
    with glow_mlir.compile(g, cache=False, progress=False) as compiled:
        feeds = {"x": np.zeros((7, 33), compiled.inputs["x"].dtype)}
        seen = []
        for run in range(3):
            got = compiled.run(feeds)
            expected = glow_mlir.interpret(g.module, feeds, random_run=run, random_seed=compiled.random_seed)
            for name in got:
                _within_one_ulp(got[name], expected[name])
            seen.append(got["n"])
        assert not np.array_equal(seen[0], seen[1]) and not np.array_equal(seen[1], seen[2])


def _within_one_ulp(got: np.ndarray, expected: np.ndarray) -> None:
    """numpy measures ulps of its own float types; bfloat16 (ml_dtypes) by its bits (finite, one sign)."""
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if got.dtype.itemsize == 2 and got.dtype != np.float16:
        steps = got.view(np.int16).astype(np.int32) - expected.view(np.int16).astype(np.int32)
        assert np.all(np.abs(steps) <= 1)
    else:
        np.testing.assert_array_max_ulp(got, expected, 1)


def test_draws_do_not_depend_on_threads() -> None:
    g = _graph("f32")
    feeds = {"x": np.zeros((7, 33), np.float32)}
    with glow_mlir.compile(g, cache=False, progress=False, threads=1) as one, \
            glow_mlir.compile(g, cache=False, progress=False, threads=2) as two:  # fmt: skip
        for _ in range(2):
            a, b = one.run(feeds), two.run(feeds)
            np.testing.assert_array_equal(a["u"], b["u"])
            np.testing.assert_array_equal(a["n"], b["n"])


def test_concurrent_runs_each_draw_once() -> None:
    """Runs from several Python threads at once: each takes a run number of its own (the atomic counter), so
    together they draw runs 0..7, each once."""
    g = Graph("concurrent")
    g.output("u", g.random("random_uniform", [4096], (0.0, 1.0), seed=1.0))
    results: list[np.ndarray] = []
    with glow_mlir.compile(g, cache=False, progress=False) as compiled:

        def work() -> None:
            for _ in range(2):
                results.append(compiled.run({})["u"])

        workers = [threading.Thread(target=work) for _ in range(4)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    expected = {glow_mlir.interpret(g.module, {}, random_run=r)["u"].tobytes() for r in range(8)}
    assert {r.tobytes() for r in results} == expected and len(results) == 8


def test_cache_hits_start_from_the_first_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache hit runs the entry's library, which one process loads once: each load restarts the draws (the
    run counters zeroed, a session seed of its own), so a seeded model's sequence repeats session after session."""
    monkeypatch.setenv("GLOW_MLIR_CACHE", "1")
    monkeypatch.setenv("GLOW_MLIR_CACHE_DIR", str(tmp_path))
    g = _graph("f32")
    feeds = {"x": np.zeros((7, 33), np.float32)}
    sequences, seeds, caches = [], [], []
    for _ in range(3):  # compiled and stored, then two hits
        with glow_mlir.compile(g, progress=False) as compiled:
            sequences.append([compiled.run(feeds)["n"] for _ in range(2)])
            seeds.append(compiled.random_seed)
            caches.append(compiled.report.get("cache"))
            free = compiled.run(feeds)["free"]
            np.testing.assert_array_equal(
                free, glow_mlir.interpret(g.module, feeds, random_run=2, random_seed=compiled.random_seed)["free"])
    for sequence in sequences[1:]:
        for a, b in zip(sequences[0], sequence, strict=True):
            np.testing.assert_array_equal(a, b)
    assert len(set(seeds)) == 3 and caches[1:] == ["hit", "hit"]
