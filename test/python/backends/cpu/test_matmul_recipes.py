"""matmul_recipes' rules: the register tile's rows, the L1 block of B, row blocks for tall A, and the prefetch of
packed weights that live beyond L2, whose test counts the model's weights once per module."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import glow_mlir
from glow_mlir.backends.cpu import matmul_recipes, recipes
from glow_mlir.backends.cpu.matmul_recipes import L1_B_BYTES, MAX_MR, _b_block, _pick_mr
from glow_mlir.backends.cpu.recipes import L2_BYTES
from onnx_check import matmul_model


@pytest.mark.parametrize("m", range(1, 400))
def test_rows_split_evenly_into_the_fewest_tiles(m: int) -> None:
    """As few row tiles as MAX_MR allows, and the tile of the rows left is never a sliver: at most one row
    per tile shorter than the others (37 rows: 3 x 10 + 7, not 3 x 12 + 1)."""
    mr = _pick_mr(m)
    assert 1 <= mr <= MAX_MR and mr in matmul_recipes._NR_FOR_MR
    tiles = math.ceil(m / mr)
    assert tiles == math.ceil(m / MAX_MR)
    assert m % mr == 0 or m % mr > mr - tiles
    assert (_pick_mr(37), _pick_mr(36), _pick_mr(16)) == (10, 12, 8)


@pytest.mark.parametrize(
    "k,nb,nr", [(512, 64, 32), (2048, 16, 32), (36, 8, 32), (768, 6, 32), (509, 4, 32), (1100, 2, 32), (64, 8, 128)]
)
def test_b_block_fits_l1(k: int, nb: int, nr: int) -> None:
    """The block of B is a divisor of k deep and of nb panels wide and fits L1_B_BYTES, unless no divisor of k
    comes within half of the bound (a prime k runs whole rather than in slivers of depth)."""
    kc, panels = _b_block(k, nb, nr)
    assert k % kc == 0 and nb % panels == 0
    bound = L1_B_BYTES // (4 * nr)
    if kc <= bound:
        assert 2 * kc >= bound or kc == k
        assert kc * panels * nr * 4 <= L1_B_BYTES
        # Not narrower than it could be: one more panel (dividing nb) would not fit.
        wider = [p for p in range(panels + 1, nb + 1) if nb % p == 0]
        assert not wider or kc * wider[0] * nr * 4 > L1_B_BYTES
    else:
        assert kc == k and panels == 1
    assert _b_block(512, 64, 32) == (256, 1) and _b_block(36, 8, 32) == (36, 4) and _b_block(509, 4, 32)[0] == 509


@pytest.mark.parametrize("constant", [True, False])
def test_tall_a_runs_in_row_blocks(constant: bool) -> None:
    """1100 rows (91 tiles of 12 and 8 left) are more than an A block of L2_A_BYTES at kc = 256: the main rows
    run in row blocks outermost and the 8 left as an op of their own, with the same numbers."""
    g, feeds, want = matmul_model(1100, 64, 512, constant)
    with glow_mlir.compile(g, keep_ir=True, cache=False) as model:
        np.testing.assert_allclose(model.run(feeds)["y"], want, rtol=1e-4, atol=1e-4 * np.sqrt(512))
        scheduled = model.ir("glow-cpu-schedule")
    assert "vector<12x32xf32>" in scheduled and "vector<8x32xf32>" in scheduled


@pytest.mark.parametrize(
    "m,k,n,prefetched",
    [
        (36, 512, 1280, True),  # 2.5 MiB of weights, 3 row tiles: B streams from beyond L2
        (36, 512, 512, False),  # 1 MiB of weights: B stays in L2 between calls
        (8, 512, 1280, False),  # one row tile reads each block once: the hardware prefetchers follow
    ],
)
def test_packed_weights_beyond_l2_are_prefetched(m: int, k: int, n: int, prefetched: bool) -> None:
    assert (k * n * 4 > L2_BYTES) == (n == 1280)
    g, feeds, want = matmul_model(m, n, k, constant=True)
    with glow_mlir.compile(g, keep_ir=True, cache=False) as model:
        np.testing.assert_allclose(model.run(feeds)["y"], want, rtol=1e-4, atol=1e-4 * np.sqrt(k))
        scheduled = model.ir("glow-cpu-schedule")
    assert ("memref.prefetch" in scheduled) == prefetched
    if prefetched:
        # Into L2 (locality 2), and only of the packed weights.
        assert "locality<2>" in scheduled and "locality<3>" not in scheduled
        assert scheduled.count("memref.collapse_shape") == scheduled.count("func.func private @__glow_kernel") - 1


def test_prefetching_kernel_still_splits_across_threads() -> None:
    """glow-cpu-parallelize counts a prefetch as a read: the kernel's column loop still runs on both threads."""
    g, feeds, want = matmul_model(36, 1280, 512, constant=True)
    with glow_mlir.compile(g, keep_ir=True, cache=False, threads=2) as model:
        np.testing.assert_allclose(model.run(feeds)["y"], want, rtol=1e-4, atol=1e-4 * np.sqrt(512))
        parallel = model.ir("glow-cpu-parallelize")
    assert "memref.prefetch" in parallel and "omp.parallel" in parallel


def test_weights_counted_once_per_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two matmuls with 2.5 MiB of constant weights each ask whether the model's weights outgrow L2: glow-cpu-schedule
    counts them once for the module (`recipes.scheduling`), not by a walk over its globals per kernel."""
    calls = []
    count = recipes._count_weight_bytes

    def counting(module: object) -> int:
        calls.append(module)
        return count(module)

    monkeypatch.setattr(recipes, "_count_weight_bytes", counting)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((36, 512)).astype(np.float32)
    w1 = (rng.standard_normal((512, 1280)) / np.sqrt(512)).astype(np.float32)
    w2 = (rng.standard_normal((1280, 512)) / np.sqrt(1280)).astype(np.float32)
    scheduled = _two_matmuls_scheduled(x, w1, w2)
    assert scheduled.count("memref.prefetch") >= 2 and len(calls) == 1


def _two_matmuls_scheduled(x: np.ndarray, w1: np.ndarray, w2: np.ndarray) -> str:
    """The IR after glow-cpu-schedule of x @ w1 @ w2 (constant weights), whose output must be numpy's."""
    g = glow_mlir.Graph("mm2")
    g.output("y", g.matmul(g.matmul(g.input("x", x.shape), g.constant(w1)), g.constant(w2)))
    with glow_mlir.compile(g, keep_ir=True, cache=False) as model:
        got = model.run({"x": x})["y"]
        scheduled = model.ir("glow-cpu-schedule")
    want = x.astype(np.float64) @ w1.astype(np.float64) @ w2.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    return scheduled


def test_packed_globals_are_named_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two matmuls whose constant B have one shape pack them into globals of one name hint: glow-cpu-schedule
    names the second apart through the module's symbol table (`recipes.scheduling`), not a scan of the module's
    ops per global, and each kernel reads its own."""
    scans = []
    module_of = recipes._module_of
    monkeypatch.setattr(recipes, "_module_of", lambda op: scans.append(op) or module_of(op))
    rng = np.random.default_rng(4)
    x = rng.standard_normal((36, 256)).astype(np.float32)
    w1, w2 = ((rng.standard_normal((256, 256)) / 16).astype(np.float32) for _ in range(2))
    scheduled = _two_matmuls_scheduled(x, w1, w2)
    packed = set(re.findall(r"memref.global \"private\" constant @(__glow_packed_\w+)", scheduled))
    assert len(packed) == 2 and any(name.endswith("_") for name in packed), packed
    # A packed global looks up its module (a walk up its parents) but not the module's ops: the table has them.
    assert len(scans) == 2
