"""The glow graph optimizations: each one keeps what the graph computes (the interpreter gives the same outputs
before and after, and so does the compiled model) while it removes the work it targets."""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir

from glow_mlir import ops, runtime
from glow_mlir.builder import Graph
from glow_mlir.context import copy_module, make_context
from glow_mlir.interpreter import interpret
from glow_mlir.pipeline import catalog
from glow_mlir.pipeline.runner import run_pipeline

RNG = np.random.default_rng(7)

GRAPH_PASSES = [
    "glow-cse",
    "glow-constant-fold",
    "glow-fold-batchnorm",
    "glow-simplify-arithmetic",
    "glow-eliminate-noop",
    "glow-merge-reshape",
    "glow-sink-transpose",
    "glow-merge-concat",
    "glow-merge-pad-into-conv",
    "glow-fold-transpose-into-weights",
    # after the pad merged into the first convolution, which then adds to the branches over x
    "glow-merge-conv-branches",
]


def _random(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _positive(*shape: int) -> np.ndarray:
    return (RNG.random(shape) + 0.5).astype(np.float32)


def _optimized(module: ir.Module, passes: list[str]) -> ir.Module:
    """A copy of `module` after `passes`, checked by glow-verify."""
    copy = copy_module(module)
    with copy.context:
        run_pipeline(copy, [*passes, "glow-verify"])
    return copy


def _op_names(module: ir.Module) -> list[str]:
    return [op.name for op in ops.walk_ops(module.operation) if op.name.startswith(ops.GLOW)]


def _assert_same_outputs(before: ir.Module, after: ir.Module, feeds: dict[str, np.ndarray]) -> None:
    expected = interpret(before, feeds)
    got = interpret(after, feeds)
    assert expected.keys() == got.keys()
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=2e-5, atol=2e-5, err_msg=name)


def _network() -> tuple[Graph, dict[str, np.ndarray]]:
    """A CNN written the way importers leave models: every pattern each pass rewrites occurs at least once."""
    g = Graph("net")
    x = g.input("x", (2, 3, 8, 8))
    # An ONNX Pad before the conv; batch norm after it; relu.
    padded = g.insert_tensor(g.splat((2, 3, 10, 10), 0.0), x, (0, 0, 1, 1))
    conv = g.convolution(padded, _random(4, 3, 3, 3), _random(4))
    bn = g.batch_normalization(conv, _positive(4), _random(4), _random(4), _positive(4))
    # Re-parameterizable branches over x: a 3x3, a 1x3 and a 1x1 convolution, added to the first one's result.
    branches = g.add(g.convolution(x, _random(4, 3, 1, 3), _random(4), pads=(0, 1, 0, 1)),
                     g.convolution(x, _random(4, 3, 3, 3), _random(4), pads=(1, 1, 1, 1)))  # fmt: skip
    act = g.relu(g.add(bn, g.add(branches, g.convolution(x, _random(4, 3, 1, 1), _random(4)))))
    # A layout round trip around elementwise work, plus no-op reshapes and identity arithmetic.
    nhwc = g.transpose(act, (0, 2, 3, 1))
    work = g.add(g.mul(g.tanh(nhwc), g.splat((2, 8, 8, 4), 1.0)), g.splat((2, 8, 8, 4), 0.0))
    back = g.transpose(g.reshape(work, (2, 8, 8, 4)), (0, 3, 1, 2))
    # A -inf pad into a max pool; two identical branches (CSE).
    pooled = g.max_pool(g.insert_tensor(g.splat((2, 4, 10, 10), float("-inf")), back, (0, 0, 1, 1)), (2, 2))
    left = g.sigmoid(pooled)
    right = g.sigmoid(pooled)
    # Nested concats and a slice of one of their inputs.
    inner = g.concat([left, right], 1)
    outer = g.concat([inner, g.exp(pooled)], 1)
    picked = g.slice(outer, (0, 8, 0, 0), (2, 4, 5, 5))
    # NHWC flatten into a dense layer with transposed (Gemm) weights and constant arithmetic on the bias.
    flat = g.reshape(g.reshape(g.transpose(picked, (0, 2, 3, 1)), (2, 5, 5, 4)), (2, 100))
    weights = g.transpose(g.constant(_random(6, 100)), (1, 0))
    bias = g.add(g.constant(_random(6)), g.constant(_random(6)))
    dense = g.fully_connected(flat, weights, bias)
    g.output("y", g.softmax(dense))
    g.output("cat", g.slice(outer, (0, 0, 0, 0), (2, 8, 5, 5)))
    return g, {"x": _random(2, 3, 8, 8)}


def test_all_passes_are_registered() -> None:
    names = catalog.passes()
    for name in [*GRAPH_PASSES, "glow-schedule"]:
        assert name in names and names[name].description


@pytest.mark.parametrize("name", GRAPH_PASSES)
def test_each_pass_keeps_the_outputs_and_removes_work(name: str) -> None:
    g, feeds = _network()
    module = g.module
    after = _optimized(module, [name])
    _assert_same_outputs(module, after, feeds)
    assert _op_names(after) != _op_names(module), f"{name} changed nothing on the network"


@pytest.mark.parametrize("name", GRAPH_PASSES)
def test_each_pass_keeps_the_outputs_after_lowering(name: str) -> None:
    """The passes also run on lowered graphs (the second optimize of Glow's driver)."""
    g, feeds = _network()
    lowered = _optimized(g.module, ["glow-lower"])
    _assert_same_outputs(g.module, _optimized(lowered, [name]), feeds)


def test_all_passes_together_shrink_the_network_and_compile() -> None:
    g, feeds = _network()
    module = g.module
    after = _optimized(module, [*GRAPH_PASSES, "glow-dce", *GRAPH_PASSES, "glow-dce"])
    _assert_same_outputs(module, after, feeds)
    names = _op_names(after)
    assert len(names) < len(_op_names(module))
    for gone in ("glow.batch_normalization", "glow.insert_tensor", "glow.transpose"):
        assert gone not in names
    with runtime.compile(after) as model:
        got = model.run(feeds)
    expected = interpret(module, feeds)
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-4, atol=1e-5)


def test_passes_are_idempotent() -> None:
    g, _ = _network()
    once = _optimized(g.module, GRAPH_PASSES)
    twice = _optimized(once, GRAPH_PASSES)
    assert str(once) == str(twice)


@pytest.mark.parametrize("group", [1, 2])
def test_fold_batchnorm_into_grouped_conv(group: int) -> None:
    g = Graph("bn")
    x = g.input("x", (1, 4, 5, 5))
    conv = g.convolution(x, _random(6, 4 // group, 3, 3), _random(6), pads=(1, 0, 1, 2), group=group)
    g.output("y", g.batch_normalization(conv, _random(6), _random(6), _random(6), _positive(6), epsilon=1e-3))
    after = _optimized(g.module, ["glow-fold-batchnorm"])
    assert _op_names(after).count("glow.batch_normalization") == 0
    _assert_same_outputs(g.module, after, {"x": _random(1, 4, 5, 5)})


def test_fold_batchnorm_into_fc_and_matmul() -> None:
    g = Graph("bn")
    x = g.input("x", (3, 5))
    fc = g.fully_connected(x, _random(5, 4), _random(4))
    g.output("fc", g.batch_normalization(fc, _random(4), _random(4), _random(4), _positive(4)))
    mm = g.matmul(x, _random(5, 2))
    g.output("mm", g.batch_normalization(mm, _random(2), _random(2), _random(2), _positive(2)))
    after = _optimized(g.module, ["glow-fold-batchnorm"])
    assert "glow.batch_normalization" not in _op_names(after)
    _assert_same_outputs(g.module, after, {"x": _random(3, 5)})


@pytest.mark.parametrize("shuffle", [(0, 2, 3, 1), (0, 3, 1, 2), (0, 1, 3, 2), (0, 3, 2, 1)])
def test_transpose_before_flatten_moves_into_the_weights(shuffle: tuple[int, ...]) -> None:
    g = Graph("flat")
    x = g.input("x", (2, 3, 4, 5))
    t = g.transpose(x, shuffle)
    flat = g.reshape(t, (2, 60))
    g.output("y", g.fully_connected(flat, _random(60, 7), _random(7)))
    g.output("z", g.matmul(g.reshape(g.transpose(x, shuffle), (2, 60)), _random(60, 3)))
    after = _optimized(g.module, ["glow-fold-transpose-into-weights"])
    assert "glow.transpose" not in _op_names(after)
    _assert_same_outputs(g.module, after, {"x": _random(2, 3, 4, 5)})


def test_avg_pool_pad_merge_counts_padding() -> None:
    g = Graph("avg")
    x = g.input("x", (1, 2, 5, 5))
    padded = g.insert_tensor(g.splat((1, 2, 7, 8), 0.0), x, (0, 0, 1, 2))
    g.output("a", g.avg_pool(padded, (3, 3), (2, 2), count_include_pads=False))
    g.output("b", g.avg_pool(padded, (3, 3), (1, 1), pads=(1, 0, 0, 0), count_include_pads=True))
    # Merged pads would reach the kernel size (a window of padding only): glow-verify forbids it, so kept.
    g.output("c", g.avg_pool(padded, (3, 3), (1, 1), pads=(2, 0, 0, 0), count_include_pads=True))
    after = _optimized(g.module, ["glow-merge-pad-into-conv"])
    pools = [op for op in ops.walk_ops(after.operation) if op.name == "glow.avg_pool"]
    assert [ops.ints(p, "pads") for p in pools] == [[1, 2, 1, 1], [2, 2, 1, 1], [2, 0, 0, 0]]
    assert all(ops.integer(p, "countIncludePads") for p in pools)
    _assert_same_outputs(g.module, after, {"x": _random(1, 2, 5, 5)})


def test_lowered_padding_merges_back() -> None:
    """glow-lower expands padded convs and pools into splat + insert_tensor; the merge restores the pads."""
    g = Graph("pads")
    x = g.input("x", (1, 2, 6, 6))
    c = g.convolution(x, _random(3, 2, 3, 3), _random(3), pads=(1, 2, 1, 0))
    g.output("y", g.max_pool(c, (3, 3), (1, 1), pads=(1, 1, 2, 2)))
    lowered = _optimized(g.module, ["glow-lower"])
    merged = _optimized(lowered, ["glow-merge-pad-into-conv", "glow-dce"])
    assert "glow.insert_tensor" in _op_names(lowered)
    assert "glow.insert_tensor" not in _op_names(merged)
    _assert_same_outputs(g.module, merged, {"x": _random(1, 2, 6, 6)})


INTEGER_MODEL = """
func.func @ints(%x: tensor<2x3xi32> {glow.name = "x"}, %m: tensor<3x2xi1> {glow.name = "m"}) -> (tensor<3x2xi32> {glow.name = "y"}, tensor<3x2xi1> {glow.name = "b"}) {
  %zero = "glow.splat"() {value = 0 : i64} : () -> tensor<2x3xi32>
  %a = "glow.add"(%x, %zero) : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %t = "glow.transpose"(%a) {shuffle = array<i64: 1, 0>} : (tensor<2x3xi32>) -> tensor<3x2xi32>
  %n = "glow.neg"(%t) : (tensor<3x2xi32>) -> tensor<3x2xi32>
  %c1 = "glow.constant"() {value = dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi32>} : () -> tensor<3x2xi32>
  %c2 = "glow.constant"() {value = dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi32>} : () -> tensor<3x2xi32>
  %k = "glow.mul"(%c1, %c2) : (tensor<3x2xi32>, tensor<3x2xi32>) -> tensor<3x2xi32>
  %y = "glow.add"(%n, %k) : (tensor<3x2xi32>, tensor<3x2xi32>) -> tensor<3x2xi32>
  %r = "glow.reshape"(%m) {dims = array<i64: 6>} : (tensor<3x2xi1>) -> tensor<6xi1>
  %rr = "glow.reshape"(%r) {dims = array<i64: 3, 2>} : (tensor<6xi1>) -> tensor<3x2xi1>
  %nn = "glow.not"(%rr) : (tensor<3x2xi1>) -> tensor<3x2xi1>
  %b = "glow.not"(%nn) : (tensor<3x2xi1>) -> tensor<3x2xi1>
  return %y, %b : tensor<3x2xi32>, tensor<3x2xi1>
}
"""


def test_integer_and_boolean_graphs_keep_their_types() -> None:
    with make_context():
        module = ir.Module.parse(INTEGER_MODEL)
    feeds = {
        "x": RNG.integers(-50, 50, (2, 3)).astype(np.int32),
        "m": RNG.integers(0, 2, (3, 2)).astype(np.bool_),
    }
    after = _optimized(module, GRAPH_PASSES)
    names = _op_names(after)
    assert "glow.not" not in names and "glow.reshape" not in names
    assert names.count("glow.constant") == 1
    function = ops.functions(after)[0]
    assert [str(t) for t in ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value).results] == [
        "tensor<3x2xi32>",
        "tensor<3x2xi1>",
    ]
    expected = interpret(module, feeds)
    got = interpret(after, feeds)
    np.testing.assert_array_equal(np.asarray(got["y"]).astype(np.int64), np.asarray(expected["y"]).astype(np.int64))
    np.testing.assert_array_equal(np.asarray(got["b"]).astype(bool), feeds["m"])


@pytest.mark.parametrize("group", [1, 4])
def test_merge_conv_branches_with_batch_norm_identity(group: int) -> None:
    """PP-LCNetV3's and MobileOne's blocks: a 5x5 and a 1x1 convolution (depthwise or dense), the input's batch
    norm and the input itself, added: one 5x5 convolution, the same outputs."""
    g = Graph("rep")
    x = g.input("x", (1, 4, 7, 7))
    per_group = 4 // group
    five = g.convolution(x, _random(4, per_group, 5, 5), _random(4), pads=(2, 2, 2, 2), group=group)
    one = g.convolution(x, _random(4, per_group, 1, 1), _random(4), group=group)
    norm = g.batch_normalization(x, _positive(4), _random(4), _random(4), _positive(4))
    g.output("y", g.add(g.add(g.add(five, one), norm), x))
    after = _optimized(g.module, ["glow-merge-conv-branches", "glow-dce"])
    assert _op_names(after).count("glow.convolution") == 1
    assert "glow.add" not in _op_names(after) and "glow.batch_normalization" not in _op_names(after)
    _assert_same_outputs(g.module, after, {"x": _random(1, 4, 7, 7)})
