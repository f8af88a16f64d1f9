"""The whole pipeline against the reference interpreter: every `glow` op, several shapes and attribute
settings each, plus an MLP and a LeNet built with the builder API. Tolerance 1e-5 as the issue asks."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import glow_mlir

RTOL = ATOL = 1e-5
rng = np.random.default_rng(0)


def rand(*shape: int, low: float = -1.0, high: float = 1.0) -> np.ndarray:
    return rng.uniform(low, high, shape).astype(np.float32)


def check(graph: glow_mlir.Graph, feeds: dict[str, np.ndarray]) -> None:
    expected = glow_mlir.interpret(graph.module, feeds)
    model = glow_mlir.compile(graph)
    got = model.run(feeds)
    assert got.keys() == expected.keys()
    for name in expected:
        assert got[name].shape == expected[name].shape, name
        np.testing.assert_allclose(got[name], expected[name], rtol=RTOL, atol=ATOL, err_msg=name)


def unary_graph(shape: tuple[int, ...], fn: Callable[[glow_mlir.Graph, object], object]) -> glow_mlir.Graph:
    g = glow_mlir.Graph("unary")
    g.output("y", fn(g, g.input("x", shape, "f32")))
    return g


UNARY = {
    "relu": lambda g, x: g.relu(x),
    "sigmoid": lambda g, x: g.sigmoid(x),
    "tanh": lambda g, x: g.tanh(x),
    "exp": lambda g, x: g.exp(x),
    "softmax": lambda g, x: g.softmax(x),
}


@pytest.mark.parametrize("op", sorted(UNARY))
@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4, 5)])
def test_unary(op: str, shape: tuple[int, ...]) -> None:
    check(unary_graph(shape, UNARY[op]), {"x": rand(*shape, low=-4, high=4)})


@pytest.mark.parametrize("shape", [(7,), (2, 3, 4)])
def test_sqrt(shape: tuple[int, ...]) -> None:
    check(unary_graph(shape, lambda g, x: g.sqrt(x)), {"x": rand(*shape, low=0.01, high=9)})


BINARY = ["add", "sub", "mul", "div", "max", "min"]


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4, 5)])
def test_binary(op: str, shape: tuple[int, ...]) -> None:
    g = glow_mlir.Graph("binary")
    a = g.input("a", shape, "f32")
    b = g.input("b", shape, "f32")
    g.output("y", getattr(g, op)(a, b))
    rhs = rand(*shape, low=0.5, high=2) if op == "div" else rand(*shape)
    check(g, {"a": rand(*shape), "b": rhs})


def test_binary_with_constant_and_splat() -> None:
    g = glow_mlir.Graph("consts")
    x = g.input("x", (4, 6), "f32")
    c = g.constant(rand(4, 6))
    g.output("y", g.mul(g.add(x, c), g.splat((4, 6), 0.5)))
    check(g, {"x": rand(4, 6)})


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (3, 5, 7), (16, 32, 8)])
def test_matmul_and_fully_connected(m: int, k: int, n: int) -> None:
    g = glow_mlir.Graph("mm")
    a = g.input("a", (m, k), "f32")
    g.output("mm", g.matmul(a, rand(k, n)))
    g.output("fc", g.fully_connected(a, rand(k, n), rand(n)))
    check(g, {"a": rand(m, k)})


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 5)])
def test_batched_add(shape: tuple[int, ...]) -> None:
    g = glow_mlir.Graph("ba")
    x = g.input("x", shape, "f32")
    g.output("y", g.batched_add(x, rand(*shape[1:])))
    check(g, {"x": rand(*shape)})


CONVS = [
    # (input NCHW, filter OIHW, strides, pads, dilation, group)
    ((1, 3, 8, 8), (4, 3, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    ((2, 3, 9, 7), (5, 3, 3, 2), (2, 1), (1, 0, 2, 1), (1, 1), 1),
    ((1, 4, 10, 10), (6, 2, 3, 3), (1, 1), (1, 1, 1, 1), (2, 2), 2),
    ((1, 6, 8, 8), (6, 1, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 6),  # depthwise
    ((1, 8, 5, 5), (4, 8, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),  # 1x1
]


@pytest.mark.parametrize("x_shape,w_shape,strides,pads,dilation,group", CONVS)
def test_convolution(
    x_shape: tuple[int, ...],
    w_shape: tuple[int, ...],
    strides: tuple[int, int],
    pads: tuple[int, int, int, int],
    dilation: tuple[int, int],
    group: int,
) -> None:
    g = glow_mlir.Graph("conv")
    x = g.input("x", x_shape, "f32")
    y = g.convolution(x, rand(*w_shape), rand(w_shape[0]), strides=strides, pads=pads, dilation=dilation, group=group)
    g.output("y", y)
    check(g, {"x": rand(*x_shape)})


POOLS = [
    # (input, kernels, strides, pads)
    ((1, 2, 6, 6), (2, 2), (2, 2), (0, 0, 0, 0)),
    ((2, 3, 7, 5), (3, 3), (1, 1), (1, 1, 1, 1)),
    ((1, 1, 9, 9), (3, 2), (2, 3), (1, 0, 2, 1)),
]


@pytest.mark.parametrize("x_shape,kernels,strides,pads", POOLS)
def test_max_pool(
    x_shape: tuple[int, ...], kernels: tuple[int, int], strides: tuple[int, int], pads: tuple[int, int, int, int]
) -> None:
    g = glow_mlir.Graph("maxpool")
    x = g.input("x", x_shape, "f32")
    g.output("y", g.max_pool(x, kernels=kernels, strides=strides, pads=pads))
    check(g, {"x": rand(*x_shape, low=-5, high=-1)})  # all negative: padding must never win the max


@pytest.mark.parametrize("count_include_pads", [True, False])
@pytest.mark.parametrize("x_shape,kernels,strides,pads", POOLS)
def test_avg_pool(
    x_shape: tuple[int, ...],
    kernels: tuple[int, int],
    strides: tuple[int, int],
    pads: tuple[int, int, int, int],
    count_include_pads: bool,
) -> None:
    g = glow_mlir.Graph("avgpool")
    x = g.input("x", x_shape, "f32")
    g.output("y", g.avg_pool(x, kernels=kernels, strides=strides, pads=pads, count_include_pads=count_include_pads))
    check(g, {"x": rand(*x_shape)})


@pytest.mark.parametrize("shape,channel_idx", [((2, 3, 4, 4), 1), ((5, 6), 1), ((2, 4, 3), 2)])
def test_batch_normalization(shape: tuple[int, ...], channel_idx: int) -> None:
    c = shape[channel_idx]
    g = glow_mlir.Graph("bn")
    x = g.input("x", shape, "f32")
    y = g.batch_normalization(
        x, rand(c), rand(c), rand(c), rand(c, low=0.1, high=2), epsilon=1e-3, channel_idx=channel_idx
    )
    g.output("y", y)
    check(g, {"x": rand(*shape)})


def test_reshape_transpose_slice() -> None:
    g = glow_mlir.Graph("shapes")
    x = g.input("x", (2, 3, 4), "f32")
    r = g.reshape(x, (6, 4))
    g.output("reshaped", r)
    g.output("transposed", g.transpose(x, (2, 0, 1)))
    g.output("sliced", g.slice(r, (1, 1), (3, 2)))
    check(g, {"x": rand(2, 3, 4)})


@pytest.mark.parametrize("dim", [0, 1])
def test_concat_mixed_shapes(dim: int) -> None:
    g = glow_mlir.Graph("concat")
    shapes = [(2, 3), (2, 3), (2, 3), (2, 3)] if dim == 0 else [(2, 3), (2, 1), (2, 3), (2, 5)]
    inputs = [g.input(f"x{i}", s, "f32") for i, s in enumerate(shapes)]
    g.output("y", g.concat([g.relu(t) for t in inputs], dim))
    check(g, {f"x{i}": rand(*s) for i, s in enumerate(shapes)})


def test_insert_tensor() -> None:
    g = glow_mlir.Graph("insert")
    big = g.input("big", (4, 5), "f32")
    small = g.input("small", (2, 3), "f32")
    g.output("y", g.insert_tensor(big, small, (1, 2)))
    check(g, {"big": rand(4, 5), "small": rand(2, 3)})


@pytest.mark.parametrize("src,dst,axis", [((4,), (2, 4, 3, 3), 1), ((1, 3), (2, 3), 0), ((3, 1), (2, 3, 4), 1)])
def test_broadcast(src: tuple[int, ...], dst: tuple[int, ...], axis: int) -> None:
    g = glow_mlir.Graph("broadcast")
    x = g.input("x", src, "f32")
    g.output("y", g.broadcast(x, dst, axis))
    check(g, {"x": rand(*src)})


def test_output_is_an_input_and_twice_returned() -> None:
    g = glow_mlir.Graph("passthrough")
    x = g.input("x", (3, 3), "f32")
    r = g.relu(x)
    g.output("same", x)
    g.output("a", r)
    g.output("b", r)
    check(g, {"x": rand(3, 3)})


def mlp() -> glow_mlir.Graph:
    g = glow_mlir.Graph("mlp")
    x = g.input("x", (4, 784), "f32")
    h = g.relu(g.fully_connected(x, rand(784, 128, low=-0.05, high=0.05), rand(128)))
    h = g.relu(g.fully_connected(h, rand(128, 64, low=-0.1, high=0.1), rand(64)))
    g.output("y", g.softmax(g.fully_connected(h, rand(64, 10, low=-0.1, high=0.1), rand(10))))
    return g


def lenet() -> glow_mlir.Graph:
    g = glow_mlir.Graph("lenet")
    x = g.input("x", (2, 1, 28, 28), "f32")
    h = g.convolution(x, rand(6, 1, 5, 5, low=-0.3, high=0.3), rand(6), pads=(2, 2, 2, 2))
    h = g.max_pool(g.relu(h), kernels=(2, 2), strides=(2, 2))
    h = g.convolution(h, rand(16, 6, 5, 5, low=-0.1, high=0.1), rand(16))
    h = g.max_pool(g.relu(h), kernels=(2, 2), strides=(2, 2))
    h = g.reshape(h, (2, 16 * 5 * 5))
    h = g.relu(g.fully_connected(h, rand(400, 120, low=-0.05, high=0.05), rand(120)))
    h = g.relu(g.fully_connected(h, rand(120, 84, low=-0.1, high=0.1), rand(84)))
    g.output("y", g.softmax(g.fully_connected(h, rand(84, 10, low=-0.1, high=0.1), rand(10))))
    return g


def test_mlp() -> None:
    check(mlp(), {"x": rand(4, 784)})


def test_lenet() -> None:
    check(lenet(), {"x": rand(2, 1, 28, 28)})


def test_bundled_example_network() -> None:
    """The CNN that `make run` compiles, with conv + batch normalization + pools."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "cnn.py"
    spec = importlib.util.spec_from_file_location("cnn_example", path)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    check(example.build_cnn(), {"image": rand(1, 1, 28, 28)})


def test_report() -> None:
    model = glow_mlir.compile(lenet())
    assert model.report["compile_seconds"] > 0
    assert model.report["arena_bytes"] > 0
    assert model.report["arena_bytes"] % 64 == 0
