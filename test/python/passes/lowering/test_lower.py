"""glow-lower: each rule computes what the op it replaces computes (checked in the reference interpreter),
leaves only ops IRGen handles, keeps locations, and respects a backend's veto."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from mlir import ir

from glow_mlir import ops
from glow_mlir.builder import Graph, Tensor
from glow_mlir.context import make_context
from glow_mlir.interpreter import interpret
from glow_mlir.passes.lowering import irgen
from glow_mlir.passes.lowering.lower import avg_pool_correction, lower
from glow_mlir.pipeline.runner import run_pipeline

RNG = np.random.default_rng(7)


def _random(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _op_names(module: ir.Module) -> list[str]:
    return [op.name for op in ops.walk_ops(module.operation) if op.name.startswith(ops.GLOW)]


def _lowered_matches(
    build: Callable[[Graph], Tensor], feeds: dict[str, np.ndarray], lowered_away: str | None = None
) -> ir.Module:
    """Builds a one-output graph, lowers it, and checks that the interpreter gives the same answer."""
    g = Graph("net")
    g.output("y", build(g))
    module = g.module
    with g.context:
        expected = interpret(module, feeds)["y"]
        run_pipeline(module, ["glow-lower", "glow-verify"])
        assert lowered_away is None or f"glow.{lowered_away}" not in _op_names(module)
        got = interpret(module, feeds)["y"]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    return module


def test_fully_connected() -> None:
    x = _random(3, 5)
    module = _lowered_matches(
        lambda g: g.fully_connected(g.input("x", (3, 5)), _random(5, 4), _random(4)), {"x": x}, "fully_connected"
    )
    assert _op_names(module).count("glow.matmul") == 1
    assert _op_names(module).count("glow.batched_add") == 1


@pytest.mark.parametrize("shape, channel_idx", [((2, 3, 4, 5), 1), ((4, 6), 1), ((2, 5, 3), 2)])
def test_batch_normalization(shape: tuple[int, ...], channel_idx: int) -> None:
    c = shape[channel_idx]
    var = np.abs(_random(c)) + 0.1
    module = _lowered_matches(
        lambda g: g.batch_normalization(
            g.input("x", shape), _random(c), _random(c), _random(c), var, epsilon=1e-3, channel_idx=channel_idx
        ),
        {"x": _random(*shape)},
        "batch_normalization",
    )
    names = _op_names(module)
    assert names.count("glow.broadcast") == 2 and names.count("glow.sqrt") == 1


def test_relu() -> None:
    module = _lowered_matches(lambda g: g.relu(g.input("x", (2, 7))), {"x": _random(2, 7)}, "relu")
    assert "glow.max" in _op_names(module)


@pytest.mark.parametrize(
    "pads, strides, dilation, group",
    [((1, 1, 1, 1), (1, 1), (1, 1), 1), ((0, 2, 1, 0), (2, 1), (1, 1), 1), ((2, 1, 2, 1), (1, 2), (2, 1), 2)],
)
def test_padded_convolution(
    pads: tuple[int, ...], strides: tuple[int, int], dilation: tuple[int, int], group: int
) -> None:
    w = _random(4, 4 // group, 3, 3)
    module = _lowered_matches(
        lambda g: g.convolution(
            g.input("x", (2, 4, 6, 5)), w, _random(4), strides=strides, pads=pads, dilation=dilation, group=group
        ),
        {"x": _random(2, 4, 6, 5)},
    )
    conv = next(op for op in ops.walk_ops(module.operation) if op.name == "glow.convolution")
    assert ops.ints(conv, "pads") == [0, 0, 0, 0]
    assert "glow.insert_tensor" in _op_names(module)


def test_unpadded_convolution_is_kept() -> None:
    g = Graph("net")
    g.output("y", g.convolution(g.input("x", (1, 2, 5, 5)), _random(3, 2, 3, 3), _random(3)))
    module = g.module
    before = str(module)
    with g.context:
        lower(module)
    assert str(module) == before


def test_padded_max_pool_never_picks_padding() -> None:
    x = -np.abs(_random(1, 2, 5, 5)) - 1.0  # all negative: a zero pad would win every border window
    module = _lowered_matches(
        lambda g: g.max_pool(g.input("x", (1, 2, 5, 5)), (3, 3), (2, 2), pads=(1, 1, 1, 1)), {"x": x}
    )
    pool = next(op for op in ops.walk_ops(module.operation) if op.name == "glow.max_pool")
    assert ops.ints(pool, "pads") == [0, 0, 0, 0]


@pytest.mark.parametrize("count_include_pads", [True, False])
@pytest.mark.parametrize(
    "kernels, strides, pads",
    [((3, 3), (1, 1), (1, 1, 1, 1)), ((2, 3), (2, 2), (1, 0, 0, 2)), ((3, 2), (1, 3), (2, 1, 1, 1))],
)
def test_padded_avg_pool(
    kernels: tuple[int, int], strides: tuple[int, int], pads: tuple[int, ...], count_include_pads: bool
) -> None:
    module = _lowered_matches(
        lambda g: g.avg_pool(
            g.input("x", (2, 3, 6, 7)), kernels, strides, pads=pads, count_include_pads=count_include_pads
        ),
        {"x": _random(2, 3, 6, 7)},
    )
    pool = next(op for op in ops.walk_ops(module.operation) if op.name == "glow.avg_pool")
    assert ops.ints(pool, "pads") == [0, 0, 0, 0]
    assert ("glow.constant" in _op_names(module)) == (not count_include_pads)


def test_avg_pool_correction() -> None:
    # 4x4 input, 3x3 windows, stride 1, one pixel of padding: corners see 4 real elements, edges 6, inside 9.
    factors = avg_pool_correction((4, 4), (4, 4), (3, 3), (1, 1), (1, 1, 1, 1))
    np.testing.assert_allclose(factors[0], [9 / 4, 9 / 6, 9 / 6, 9 / 4])
    np.testing.assert_allclose(factors[1], [9 / 6, 1, 1, 9 / 6])
    assert factors.dtype == np.float32


def test_avg_pool_without_padded_windows_needs_no_correction() -> None:
    # With pads only at the bottom and stride 2, no window reaches into the padding.
    g = Graph("net")
    g.output("y", g.avg_pool(g.input("x", (1, 1, 4, 4)), (2, 2), (2, 2), pads=(0, 0, 1, 0), count_include_pads=False))
    module = g.module
    with g.context:
        lower(module)
    assert "glow.mul" not in _op_names(module)


def _mixed_graph() -> Graph:
    g = Graph("net")
    x = g.input("x", (1, 2, 4, 4))
    y = g.relu(g.convolution(x, _random(2, 2, 3, 3), _random(2), pads=(1, 1, 1, 1), name="conv1"), name="relu1")
    y = g.batch_normalization(y, _random(2), _random(2), _random(2), np.abs(_random(2)) + 1, name="bn1")
    y = g.avg_pool(y, (2, 2), (2, 2), pads=(1, 1, 1, 1), count_include_pads=False, name="pool1")
    y = g.fully_connected(g.reshape(y, (1, 18)), _random(18, 3), _random(3), name="fc1")
    g.output("y", y)
    return g


def test_lowered_graph_holds_only_irgen_ops_and_keeps_locations() -> None:
    g = _mixed_graph()
    module = g.module
    with g.context:
        lower(module)
    names = _op_names(module)
    assert set(names) <= set(irgen.rewrites()) | {irgen.CONSTANT}
    for op in ops.walk_ops(module.operation):
        if op.name.startswith(ops.GLOW):
            assert op.location.is_a_name(), f"{op.name} lost its node name: {op.location}"
    locations = {op.location.name_str for op in ops.walk_ops(module.operation) if op.name.startswith(ops.GLOW)}
    assert {"conv1", "relu1", "bn1", "pool1", "fc1"} <= locations
    # Every op made by the batch-norm rule carries the node's name.
    glow_ops = [op for op in ops.walk_ops(module.operation) if op.name.startswith(ops.GLOW)]
    bn_ops = {op.name for op in glow_ops if op.location.name_str == "bn1"}
    assert {"glow.splat", "glow.add", "glow.sqrt", "glow.div", "glow.mul", "glow.sub", "glow.broadcast"} <= bn_ops


def test_whole_graph_matches_interpreter() -> None:
    g = _mixed_graph()
    module = g.module
    feeds = {"x": _random(1, 2, 4, 4)}
    with g.context:
        expected = interpret(module, feeds)["y"]
        run_pipeline(module, ["glow-verify", "glow-lower", "glow-verify", "glow-dce"])
        got = interpret(module, feeds)["y"]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_backend_may_keep_ops() -> None:
    g = _mixed_graph()
    module = g.module
    with g.context:
        lower(module, should_lower=lambda op: op.name != "glow.relu")
    names = _op_names(module)
    assert "glow.relu" in names
    assert not {"glow.fully_connected", "glow.batch_normalization"} & set(names)


def test_registered_pass_parses_and_runs_from_text() -> None:
    with make_context():
        module = ir.Module.parse(
            """
            func.func @f(%x: tensor<2x3xf32> {glow.name = "x"}) -> (tensor<2x3xf32> {glow.name = "y"}) {
              %0 = "glow.relu"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("r")
              return %0 : tensor<2x3xf32>
            }
            """
        )
        run_pipeline(module, "builtin.module(glow-lower)")
        assert _op_names(module) == ["glow.splat", "glow.max"]
        module.operation.verify()


@pytest.mark.parametrize(
    "shape, filter_shape, strides, pads, dilation, group",
    [
        ((1, 2, 3, 3), (2, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
        ((2, 4, 3, 4), (4, 2, 2, 3), (2, 3), (1, 0, 0, 2), (1, 1), 2),
        ((1, 3, 4, 4), (3, 1, 3, 2), (2, 2), (0, 1, 2, 0), (2, 1), 3),
    ],
)
def test_padded_conv_transpose_becomes_unpadded_and_a_slice(shape, filter_shape, strides, pads, dilation, group) -> None:
    out_channels = filter_shape[1] * group
    module = _lowered_matches(
        lambda g: g.conv_transpose(
            g.input("x", shape), _random(*filter_shape), _random(out_channels), strides=strides, pads=pads,
            dilation=dilation, group=group, name="deconv",
        ),
        {"x": _random(*shape)},
    )
    lowered = [op for op in ops.walk_ops(module.operation) if op.name.startswith(ops.GLOW)]
    (deconv,) = [op for op in lowered if op.name == "glow.conv_transpose"]
    (crop,) = [op for op in lowered if op.name == "glow.slice"]
    assert ops.ints(deconv, "pads") == [0, 0, 0, 0]
    assert ops.ints(crop, "start") == [0, 0, pads[0], pads[1]]
    assert crop.operands[0].owner == deconv
    assert {deconv.location.name_str, crop.location.name_str} == {"deconv"}


def test_unpadded_conv_transpose_is_kept() -> None:
    module = _lowered_matches(
        lambda g: g.conv_transpose(g.input("x", (1, 2, 3, 3)), _random(2, 2, 2, 2), _random(2), strides=(2, 2)),
        {"x": _random(1, 2, 3, 3)},
    )
    assert _op_names(module) == ["glow.constant", "glow.constant", "glow.conv_transpose"]


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.float16, np.float64])
def test_relu_keeps_its_element_type(dtype: type) -> None:
    x = (RNG.standard_normal((3, 4)) * 50).astype(dtype)
    module = _lowered_matches(lambda g: g.relu(g.input("x", (3, 4), dtype)), {"x": x}, "relu")
    (splat,) = [op for op in ops.walk_ops(module.operation) if op.name == "glow.splat"]
    expected = "f32" if np.dtype(dtype).kind == "f" else "i64"
    assert str(splat.attributes["value"].type) == expected
    # f16 computes in f32 (glow-lower's widen_half), between conversions.
    computed = np.float32 if dtype is np.float16 else dtype
    assert ops.numpy_dtype(ops.element_type(splat.results[0])) == np.dtype(computed)


def test_f64_padded_avg_pool_correction_has_its_type() -> None:
    x = RNG.standard_normal((1, 2, 5, 5))
    module = _lowered_matches(
        lambda g: g.avg_pool(g.input("x", (1, 2, 5, 5), "f64"), (3, 3), (2, 2), (1, 1, 1, 1), count_include_pads=False),
        {"x": x},
    )
    constants = [op for op in ops.walk_ops(module.operation) if op.name == "glow.constant"]
    assert [str(ops.element_type(c.results[0])) for c in constants] == ["f64"]


def test_f64_batch_normalization() -> None:
    x = RNG.standard_normal((2, 3, 2, 2))
    vectors = [RNG.standard_normal(3) for _ in range(3)] + [np.abs(RNG.standard_normal(3)) + 0.1]
    _lowered_matches(
        lambda g: g.batch_normalization(g.input("x", (2, 3, 2, 2), "f64"), *vectors), {"x": x}, "batch_normalization"
    )
