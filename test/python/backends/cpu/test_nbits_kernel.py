"""The weight-only 2/4/8-bit product (backends/cpu/nbits.py) against its definition over the shape class: decoding
rows (1-2), row tiles of 8 and their remainders, prompts dequantizing W into panels (16 rows and more), N not a
multiple of 16 nor of a column group, K ending inside a block, a byte and a panel, blocks of 16 to 128; the
weights stay packed (the compiled model holds their bytes, not a float W), and a run-time weight takes
glow-lower's rule instead."""

from __future__ import annotations

import numpy as np
import pytest

import glow_mlir
from glow_mlir.backends.cpu import nbits
from glow_mlir.builder import Graph
from glow_mlir.opdefs import reference as ref

rng = np.random.default_rng(0)


def _operands(k: int, n: int, bits: int, block: int,
              symmetric: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """Random packed values [N, blocks, block x bits / 8], scales and float zero points [N, blocks] (all
    2^(bits - 1) when `symmetric`: the kernel's one zero point)."""
    blocks, per = -(-k // block), 8 // bits
    values = rng.integers(0, 1 << bits, (n, blocks, block))
    q = np.zeros((n, blocks, block // per), np.uint8)
    for t in range(per):
        q |= (values[..., t::per] << (t * bits)).astype(np.uint8)
    scales = (rng.standard_normal((n, blocks)) * 0.05).astype(np.float32)
    zeros = rng.integers(0, 1 << bits, (n, blocks)).astype(np.float32)
    return q, scales, np.full_like(zeros, 1 << (bits - 1)) if symmetric else zeros


def _compiled(m: int, k: int, n: int, bits: int, block: int, *, weight_input: bool = False,
              symmetric: bool = False) -> tuple[np.ndarray, np.ndarray, str]:  # fmt: skip
    """(compiled result, the op's definition evaluated in numpy, the IR after glow-cpu-nbits)."""
    q, scales, zeros = _operands(k, n, bits, block, symmetric)
    a = rng.standard_normal((m, k)).astype(np.float32)
    g = Graph("nbits")
    weight = g.input("q", q.shape, "ui8") if weight_input else q
    g.output("y", g.matmul_nbits(g.input("a", (m, k)), weight, scales, zeros, bits=bits))
    feeds = {"a": a, "q": q} if weight_input else {"a": a}
    with glow_mlir.compile(g, keep_ir=True, cache=False) as compiled:
        got = compiled.run(feeds)["y"]
        text = compiled.ir("glow-cpu-nbits")
    want = a.astype(np.float64) @ ref.dequantize_blocks(q, scales, zeros, bits, k).astype(np.float64)
    return got, want, text


@pytest.mark.parametrize(("m", "k", "n", "bits", "block"), [
    (1, 64, 40, 4, 32), (2, 100, 33, 4, 32), (1, 37, 70, 4, 16), (3, 50, 17, 2, 16), (9, 77, 50, 8, 16),
    (17, 256, 96, 4, 128), (8, 130, 16, 2, 64), (1, 1024, 64, 4, 128),
    # Prompts (PANEL_ROWS and more): panels of 256 steps of K and a shorter last one, N past a column group.
    (20, 300, 37, 4, 32), (16, 520, 50, 2, 128), (33, 100, 16, 8, 16), (16, 768, 20, 4, 32),
])  # fmt: skip
def test_matches_the_definition(m: int, k: int, n: int, bits: int, block: int) -> None:
    got, want, text = _compiled(m, k, n, bits, block)
    assert "glow.cpu_matmul_nbits" in text and "glow.matmul_nbits" not in text
    # W = value x scale - zero x scale is within an f32 rounding of (value - zero) x scale.
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize(("m", "k", "n"), [(1, 64, 40), (20, 300, 37)])
def test_one_zero_point(m: int, k: int, n: int) -> None:
    """Zero points all 8 (symmetric 4-bit exports) are one rank-0 operand; decoding rows and panels read it."""
    got, want, text = _compiled(m, k, n, 4, 32, symmetric=True)
    assert "tensor<f32>" in text and "glow.cpu_matmul_nbits" in text
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())


def test_positive_activations() -> None:
    """Decoding rows sum a x value per block and take zero x scale x sum(a) off once per block: activations all
    of one sign, where the two terms are largest against their difference, stay within the tolerance."""
    k, n = 512, 48
    q, scales, zeros = _operands(k, n, 4, 32)
    a = (np.abs(rng.standard_normal((1, k))) + 4).astype(np.float32)
    g = Graph("positive")
    g.output("y", g.matmul_nbits(g.input("a", (1, k)), q, scales, zeros, bits=4))
    with glow_mlir.compile(g, cache=False) as compiled:
        got = compiled.run({"a": a})["y"]
    want = a.astype(np.float64) @ ref.dequantize_blocks(q, scales, zeros, 4, k).astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize(("m", "k"), [(2, 96), (20, 96), (20, 600)])
def test_bias_and_activation_fused(m: int, k: int) -> None:
    """A bias add and a tanh after the product run in its kernel (the bias before its stores, decoding tiles and
    panels, one panel or three; the activation in place after it)."""
    n = 40
    q, scales, zeros = _operands(k, n, 4, 32)
    bias = rng.standard_normal(n).astype(np.float32)
    a = rng.standard_normal((m, k)).astype(np.float32)
    g = Graph("fused")
    product = g.matmul_nbits(g.input("a", (m, k)), q, scales, zeros, bits=4)
    g.output("y", g.tanh(g.add(product, g.broadcast(bias, (m, n), 1))))
    with glow_mlir.compile(g, keep_ir=True, cache=False) as compiled:
        got = compiled.run({"a": a})["y"]
        fused = compiled.ir("glow-fuse-activations")
    assert 'activation = "tanh"' in fused and "glow.add" not in fused and "glow.tanh" not in fused
    product64 = a.astype(np.float64) @ ref.dequantize_blocks(q, scales, zeros, 4, k).astype(np.float64)
    np.testing.assert_allclose(got, np.tanh(product64 + bias), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("m", [1, 20])
def test_code_does_not_grow_with_k(m: int) -> None:
    """Decoding tiles and panels loop over K's blocks and panels: K = 2048 emits no more code than K = 512 (a
    first and a last panel emitted apart from the loop had made an int4 LLaMA's prompt take 7.5 s in LLVM)."""
    sizes = []
    for k in (512, 2048):
        q, scales, zeros = _operands(k, 64, 4, 32)
        g = Graph("size")
        g.output("y", g.matmul_nbits(g.input("a", (m, k)), q, scales, zeros, bits=4))
        with glow_mlir.compile(g, keep_ir=True, cache=False) as compiled:
            sizes.append(compiled.ir("glow-ir-to-linalg").count("\n"))
    assert sizes[1] <= sizes[0], sizes


def test_runtime_weight_takes_the_lowering_rule() -> None:
    got, want, text = _compiled(3, 40, 20, 4, 16, weight_input=True)
    assert "glow.matmul_nbits" in text and "glow.cpu_matmul_nbits" not in text
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_weights_stay_packed() -> None:
    """A 4-bit [1024, 1024] W is 512 KiB of values and 64 KiB of scales and zero points (32 along K per block),
    4 MiB as float32: the compiled model holds the former."""
    k = n = 1024
    q, scales, zeros = _operands(k, n, 4, 32)
    g = Graph("packed")
    g.output("y", g.matmul_nbits(g.input("a", (1, k)), q, scales, zeros, bits=4))
    with glow_mlir.compile(g, cache=False) as compiled:
        assert compiled.weight_bytes < (q.nbytes + scales.nbytes + zeros.nbytes) * 1.1, compiled.weight_bytes


def test_register_tile() -> None:
    assert nbits.register_tile(1, 64) == (1, 4)
    assert nbits.register_tile(64, 64) == (8, 2)
    assert nbits.register_tile(3, 1) == (3, 1)
