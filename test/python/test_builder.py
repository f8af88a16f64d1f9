"""The graph builder: the modules it makes, and the errors it raises at its boundary."""

from __future__ import annotations

import numpy as np
import pytest

from glow_mlir import ops
from glow_mlir.builder import Graph
from glow_mlir.interpreter import interpret
from glow_mlir.passes.verify import verify
from glow_mlir.shapes import ShapeError

RNG = np.random.default_rng(0)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def glow_ops(graph: Graph) -> list[str]:
    return [op.name for op in ops.walk_ops(graph.module.operation) if op.name.startswith(ops.GLOW)]


def test_mlp_module_follows_the_conventions() -> None:
    g = Graph("mlp")
    x = g.input("x", (1, 784), "f32")
    y = g.relu(g.fully_connected(x, rand(784, 10), rand(10)))
    g.output("y", g.softmax(y))
    text = str(g.module)
    assert "func.func @mlp(%arg0: tensor<1x784xf32> {glow.name = \"x\"}) -> (tensor<1x10xf32> {glow.name = \"y\"})" in text
    assert glow_ops(g) == ["glow.constant", "glow.constant", "glow.fully_connected", "glow.relu", "glow.softmax"]
    assert 'loc("fully_connected_0")' in str(g.module.operation.get_asm(enable_debug_info=True))
    verify(g.module)


def test_every_op_builds_verifies_and_runs() -> None:
    g = Graph("all")
    img = g.input("img", (2, 4, 9, 9))
    vec = g.input("vec", (3, 6))
    conv = g.convolution(img, rand(6, 2, 3, 3), rand(6), strides=(2, 1), pads=(1, 0, 1, 2), dilation=(1, 2), group=2)
    bn = g.batch_normalization(conv, rand(6), rand(6), rand(6), np.abs(rand(6)) + 0.1)
    pooled = g.avg_pool(g.max_pool(bn, (2, 2), pads=(1, 1, 0, 0)), (2, 2), (1, 1), count_include_pads=False)
    flat = g.reshape(pooled, (2, int(np.prod(pooled.shape[1:]))))
    fc = g.fully_connected(flat, rand(flat.shape[1], 6), rand(6))
    mm = g.batched_add(g.matmul(fc, rand(6, 6)), rand(6))
    s = g.splat((2, 6), 0.5)
    elementwise = g.min(g.max(g.div(g.mul(g.sub(g.add(mm, s), s), s), s), s), mm)
    unary = g.sqrt(g.exp(g.tanh(g.sigmoid(g.relu(elementwise)))))
    t = g.transpose(g.concat([unary, g.slice(vec, (1, 0), (2, 6))], dim=0), (1, 0))
    big = g.insert_tensor(g.broadcast(rand(6, 1), (6, 4), axis=0), g.slice(t, (0, 0), (6, 2)), (0, 1))
    g.output("out", g.softmax(big))
    verify(g.module)
    result = interpret(g.module, {"img": rand(2, 4, 9, 9), "vec": rand(3, 6)})
    assert result["out"].shape == (6, 4)
    assert np.allclose(result["out"].sum(axis=-1), 1.0, atol=1e-5)


def test_numpy_arrays_become_named_constants() -> None:
    g = Graph("c")
    x = g.input("x", (2,))
    w = rand(2)
    g.output("y", g.add(x, g.constant(w, name="weights")))
    text = g.module.operation.get_asm(enable_debug_info=True)
    assert 'loc("weights")' in text
    out = interpret(g.module, {"x": np.ones(2, np.float32)})["y"]
    np.testing.assert_array_equal(out, w + 1)


def test_names_and_counters_label_locations() -> None:
    g = Graph("n")
    x = g.input("x", (2,))
    g.output("y", g.relu(g.relu(x), name="second"))
    text = g.module.operation.get_asm(enable_debug_info=True)
    assert 'loc("relu_0")' in text and 'loc("second")' in text


def test_concat_with_more_than_eight_runs_is_nested() -> None:
    g = Graph("cat")
    a = g.input("a", (1, 2))
    b = g.input("b", (1, 3))
    inputs = [a, b] * 9  # 18 runs of equal types
    g.output("y", g.concat(inputs, dim=1))
    assert glow_ops(g).count("glow.concat") == 4
    verify(g.module)
    av, bv = rand(1, 2), rand(1, 3)
    out = interpret(g.module, {"a": av, "b": bv})["y"]
    np.testing.assert_array_equal(out, np.concatenate([av, bv] * 9, axis=1))


def test_module_can_be_read_then_extended() -> None:
    g = Graph("grow")
    x = g.input("x", (3,))
    g.output("y", g.relu(x))
    first = str(g.module)
    g.output("z", g.exp(x))
    assert first.count("return") == 1
    assert str(g.module).count("return") == 1
    assert set(interpret(g.module, {"x": rand(3)})) == {"y", "z"}


def test_max_pool_strides_default_to_kernels() -> None:
    g = Graph("p")
    y = g.max_pool(g.input("x", (1, 1, 6, 6)), (3, 3))
    assert y.shape == (1, 1, 2, 2)


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda g: g.matmul(g.input("a", (2, 3)), g.input("b", (4, 5)), name="mm"), "glow.matmul 'mm'"),
        (lambda g: g.add(g.input("a", (2, 3)), g.input("b", (3, 2))), "[2, 3] and [3, 2]"),
        (
            lambda g: g.convolution(g.input("a", (1, 3, 5, 5)), rand(4, 2, 3, 3), rand(4), name="c1"),
            "input channels must equal filter I * group",
        ),
        (
            lambda g: g.convolution(g.input("a", (1, 4, 5, 5)), rand(3, 2, 3, 3), rand(3), group=2),
            "must divide the filter's output channels",
        ),
        (lambda g: g.convolution(g.input("a", (1, 2, 5, 5)), rand(4, 2, 3, 3), rand(4), strides=(0, 1)), "strides"),
        (lambda g: g.convolution(g.input("a", (1, 2, 2, 2)), rand(4, 2, 3, 3), rand(4)), "must fit the padded input"),
        (lambda g: g.max_pool(g.input("a", (1, 2, 5, 5)), (2, 2), pads=(2, 0, 0, 0)), "smaller than kernels"),
        (lambda g: g.reshape(g.input("a", (2, 3)), (4, 2)), "element counts"),
        (lambda g: g.transpose(g.input("a", (2, 3)), (0, 0)), "permutation"),
        (lambda g: g.concat([g.input("a", (2, 3)), g.input("b", (3, 2))], 0), "agree in every dim except 0"),
        (lambda g: g.slice(g.input("a", (2, 3)), (1, 1), (2, 2)), "within input"),
        (lambda g: g.insert_tensor(g.input("a", (2, 3)), rand(1, 3), (2, 0)), "within big"),
        (lambda g: g.broadcast(g.input("a", (3,)), (2, 4), axis=1), "dims 1 or equal"),
        (lambda g: g.batched_add(g.input("a", (2, 3)), rand(2)), "slice shape must equal"),
        (lambda g: g.batch_normalization(g.input("a", (1, 3, 2)), *[rand(2)] * 4), "scale must have shape [3]"),
        (lambda g: g.softmax(g.input("a", ())), "rank >= 1"),
    ],
)
def test_shape_errors_name_the_op_and_shapes(build, message: str) -> None:
    with pytest.raises(ShapeError, match=None) as info:
        build(Graph("bad"))
    assert message in str(info.value)
    assert str(info.value).startswith("glow.")


def test_dtypes_are_checked() -> None:
    g = Graph("d")
    with pytest.raises(ValueError, match="input 'x'.*f32"):
        g.input("x", (2,), "f64")
    with pytest.raises(ValueError, match="f32"):
        g.input("x", (2,), np.int32)
    x = g.input("x", (2,), np.float32)
    with pytest.raises(ValueError, match="glow.constant.*float64"):
        g.add(x, np.ones(2))


def test_names_and_handles_are_checked() -> None:
    g = Graph("h")
    x = g.input("x", (2,))
    with pytest.raises(ValueError, match="duplicate input name 'x'"):
        g.input("x", (2,))
    g.output("y", x)
    with pytest.raises(ValueError, match="duplicate output name 'y'"):
        g.output("y", x)
    other = Graph("other").input("z", (2,))
    with pytest.raises(ValueError, match="belongs to graph 'other'"):
        g.relu(other)
    with pytest.raises(ValueError, match="Tensors or numpy arrays"):
        g.relu([1.0, 2.0])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="every dim >= 1"):
        g.input("empty", (0, 2))


def test_a_graph_without_outputs_has_no_module() -> None:
    g = Graph("empty")
    g.input("x", (2,))
    with pytest.raises(ValueError, match="no outputs"):
        g.module
