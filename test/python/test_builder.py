"""The graph builder: the modules it makes, and the errors it raises at its boundary."""

from __future__ import annotations

import numpy as np
import pytest

from glow_mlir import ops
from glow_mlir.builder import Graph
from glow_mlir.interpreter import interpret
from glow_mlir.passes.graph.verify import verify
from glow_mlir.opdefs.shapes import ShapeError

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


SPELLINGS = [
    ("f32", "f32"), ("f64", "f64"), ("f16", "f16"), ("bool", "i1"), ("i1", "i1"), ("i8", "i8"), ("i16", "i16"),
    ("i32", "i32"), ("i64", "i64"), (np.float32, "f32"), (np.float64, "f64"), (np.float16, "f16"),
    (np.bool_, "i1"), (np.int8, "i8"), (np.int16, "i16"), (np.int32, "i32"), (np.dtype("int64"), "i64"),
    ("float16", "f16"), ("int32", "i32"), (np.uint8, "ui8"), (np.uint16, "ui16"), (np.uint32, "ui32"),
    (np.uint64, "ui64"), ("ui8", "ui8"), ("bf16", "bf16"),
]


@pytest.mark.parametrize("dtype, mlir", SPELLINGS)
def test_inputs_take_every_element_type_of_the_convention(dtype, mlir: str) -> None:
    g = Graph("d")
    x = g.input("x", (2, 3), dtype)
    assert str(ops.element_type(x.value)) == mlir
    assert ops.NUMPY_TO_MLIR[x.dtype] == mlir
    g.output("y", g.reshape(x, (3, 2)))
    assert f"tensor<2x3x{mlir}>" in str(g.module)
    verify(g.module)


@pytest.mark.parametrize("dtype", [np.complex64, np.float128, "si32", "f80", "str"])
def test_other_element_types_are_refused(dtype) -> None:
    with pytest.raises(ValueError, match="input 'x': element type .* is not one of"):
        Graph("d").input("x", (2,), dtype)


@pytest.mark.parametrize(
    "array, mlir",
    [
        (np.array([1.5, 2], np.float64), "f64"),
        (np.array([1.5, 2], np.float16), "f16"),
        (np.array([True, False]), "i1"),
        (np.array([-128, 127], np.int8), "i8"),
        (np.array([-3, 30000], np.int16), "i16"),
        (np.array([7, -7], np.int32), "i32"),
        (np.array([2**62, -(2**62)], np.int64), "i64"),
    ],
)
def test_constants_keep_their_dtype_and_values(array: np.ndarray, mlir: str) -> None:
    g = Graph("c")
    c = g.constant(array, name="k")
    assert str(ops.element_type(c.value)) == mlir and c.dtype == array.dtype
    g.output("y", c)
    out = interpret(g.module, {})["y"]
    assert out.dtype == array.dtype and np.array_equal(out, array)


def test_bool_splat_constants_read_back_whole() -> None:
    # MLIR stores an all-true i1 constant as a splat; every element must come back true.
    g = Graph("c")
    g.output("t", g.constant(np.ones((3, 3), np.bool_)))
    g.output("f", g.constant(np.zeros((5,), np.bool_)))
    out = interpret(g.module, {})
    assert out["t"].dtype == np.bool_ and out["t"].all() and not out["f"].any()


def test_unsupported_constant_dtype_names_it() -> None:
    with pytest.raises(ValueError, match="glow.constant 'u': element type complex64"):
        Graph("c").constant(np.zeros(2, np.complex64), name="u")


def test_types_never_mix_implicitly() -> None:
    g = Graph("d")
    x = g.input("x", (2,), np.float32)
    with pytest.raises(ValueError, match="glow.add 'add_0': operands must have one element type, got f32, f64"):
        g.add(x, np.ones(2))


@pytest.mark.parametrize(
    "dtype, value, attribute",
    [("f32", 0.5, "5.000000e-01 : f32"), ("f64", 2, "2.000000e+00 : f32"), ("f16", -1.0, "-1.000000e+00 : f32"),
     ("i32", 7, "7 : i64"), ("i8", -128.0, "-128 : i64"), ("bool", True, "1 : i64"),
     ("i64", 2**63 - 1, "9223372036854775807 : i64")],
)
def test_splat_value_attribute_follows_the_result_type(dtype: str, value: float, attribute: str) -> None:
    g = Graph("s")
    g.output("y", g.splat((2,), value, dtype))
    assert f"value = {attribute}" in str(g.module)
    out = interpret(g.module, {})["y"]
    assert out.dtype == ops.numpy_dtype(ops.element_type(g.module.body.operations[0].regions[0].blocks[0].operations[0].result))
    assert np.array_equal(out, np.full(2, value, out.dtype))


@pytest.mark.parametrize("dtype, value", [("i8", 128), ("i8", 1.5), ("bool", 2), ("i32", float("nan"))])
def test_splat_refuses_values_its_type_cannot_hold(dtype: str, value: float) -> None:
    with pytest.raises(ValueError, match=f"glow.splat 's': value .* is not a whole number"):
        Graph("s").splat((2,), value, dtype, name="s")


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


def test_every_new_op_builds_verifies_and_runs_with_its_types() -> None:
    g = Graph("onnx_ops")
    x = g.input("x", (2, 3, 4))
    ids = g.input("ids", (2, 2), "i64")
    flags = g.input("flags", (2, 3, 4), "bool")
    positive = g.add(g.abs(x), g.splat((2, 3, 4), 0.5))
    unary = g.cos(g.sin(g.erf(g.round(g.ceil(g.floor(g.neg(g.log(g.pow(positive, x)))))))))
    less = g.cmp_lt(x, unary)
    logic = g.logical_not(g.logical_xor(g.logical_or(g.logical_and(less, flags), flags), less))
    chosen = g.select(g.cmp_neq(g.convert_to(logic, "i32"), g.splat((2, 3, 4), 0, "i32")), x, unary)
    equal = g.cmp_eq(g.cmp_lte(x, chosen), less)
    reduced = g.batched_reduce_min(g.batched_reduce_max(g.batched_reduce_prod(g.batched_reduce_add(x, (2,)), ()), (0,)), (0,))
    gathered = g.gather(x, ids, axis=-1)
    bmm = g.batch_matmul(x, g.transpose(x, (0, 2, 1)))
    deconv = g.conv_transpose(g.reshape(x, (1, 2, 3, 4)), np.ones((2, 2, 2, 2), np.float32), np.zeros(4, np.float32),
                              strides=(2, 2), pads=(1, 1, 0, 0), group=2)
    g.output("equal", equal)
    g.output("reduced", reduced)
    g.output("gathered", gathered)
    g.output("bmm", bmm)
    g.output("arg", g.arg_min(g.arg_max(x, 1, keep_dims=True), -1))
    g.output("deconv", deconv)
    verify(g.module)
    feeds = {"x": rand(2, 3, 4), "ids": np.array([[0, -1], [3, 1]], np.int64),
             "flags": RNG.standard_normal((2, 3, 4)) > 0}
    out = interpret(g.module, feeds)
    assert {k: (v.dtype, v.shape) for k, v in out.items()} == {
        "equal": (np.dtype(np.bool_), (2, 3, 4)),
        "reduced": (np.dtype(np.float32), ()),
        "gathered": (np.dtype(np.float32), (2, 3, 2, 2)),
        "bmm": (np.dtype(np.float32), (2, 3, 3)),
        "arg": (np.dtype(np.int64), (2, 1)),
        "deconv": (np.dtype(np.float32), (1, 4, 5, 7)),
    }
    np.testing.assert_array_equal(out["gathered"], np.take(feeds["x"], feeds["ids"], axis=2))


def test_integer_data_movement_and_matmul() -> None:
    g = Graph("ints")
    a = g.input("a", (2, 3), "i64")
    moved = g.concat([g.transpose(a, (1, 0)), g.slice(g.reshape(a, (3, 2)), (0, 0), (1, 2))], dim=0)
    big = g.insert_tensor(g.broadcast(np.array([7], np.int64), (4, 2), axis=1), g.slice(moved, (0, 0), (2, 2)), (1, 0))
    g.output("y", g.batched_add(g.matmul(big, np.ones((2, 3), np.int64)), np.array([1, 2, 3], np.int64)))
    verify(g.module)
    av = np.arange(6, dtype=np.int64).reshape(2, 3)
    moved_ref = np.concatenate([av.T, av.reshape(3, 2)[:1]])
    big_ref = np.full((4, 2), 7, np.int64)
    big_ref[1:3] = moved_ref[:2]
    out = interpret(g.module, {"a": av})["y"]
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, big_ref @ np.ones((2, 3), np.int64) + [1, 2, 3])


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda g: g.log(g.input("a", (2,), "i32"), name="l"), "glow.log 'l': element type must be a float (f32, f64, f16, bf16), got i32"),
        (lambda g: g.pow(g.input("a", (2,)), g.input("b", (2,), "f16")), "operands must have one element type, got f32, f16"),
        (lambda g: g.add(g.input("a", (2,), "bool"), g.input("b", (2,), "bool")), "must be an integer or float (f32, f64, f16, bf16, i8"),
        (lambda g: g.select(g.input("c", (2,)), g.input("a", (2,)), g.input("b", (2,)), name="s"), "glow.select 's': cond must be i1, got f32"),
        (lambda g: g.select(g.input("c", (3,), "bool"), g.input("a", (2,)), g.input("b", (2,))), "cond, lhs and rhs must have the same shape, got [3], [2] and [2]"),
        (lambda g: g.cmp_lt(g.input("a", (2,), "bool"), g.input("b", (2,), "bool")), "glow.cmp_lt 'cmp_lt_0'"),
        (lambda g: g.logical_and(g.input("a", (2,)), g.input("b", (2,))), "glow.and 'and_0': element type must be boolean (i1), got f32"),
        (lambda g: g.logical_not(g.input("a", (2,), "i8")), "glow.not 'not_0'"),
        (lambda g: g.gather(g.input("a", (3, 4)), rand(2)), "glow.gather 'gather_0': indices must be i32 or i64, got f32"),
        (lambda g: g.gather(g.input("a", (3, 4)), np.zeros(2, np.int32), axis=2), "axis 2 must be a dim of data [3, 4]"),
        (lambda g: g.batched_reduce_add(g.input("a", (2, 3)), (1, -1)), "axes [1, 1] must be sorted and unique"),
        (lambda g: g.batched_reduce_max(g.input("a", (2, 3)), (2,)), "axes [2] must be dims of input [2, 3]"),
        (lambda g: g.batched_reduce_prod(g.input("a", (2,), "bool"), (0,)), "glow.batched_reduce_prod"),
        (lambda g: g.arg_max(g.input("a", (2, 3)), 2, name="am"), "glow.arg_max 'am': axis 2 must be a dim of input [2, 3]"),
        (lambda g: g.arg_min(g.input("a", (2,), "bool"), 0), "must be an integer or float"),
        (lambda g: g.batch_matmul(g.input("a", (2, 3, 4)), g.input("b", (3, 4, 5))), "batch dims must agree: lhs [2, 3, 4], rhs [3, 4, 5]"),
        (lambda g: g.batch_matmul(g.input("a", (2, 3, 4)), g.input("b", (2, 3, 5))), "inner dims must agree"),
        (lambda g: g.conv_transpose(g.input("a", (1, 3, 4, 4)), rand(2, 2, 3, 3), rand(2), name="ct"), "glow.conv_transpose 'ct': filter dim 0 must equal input channels"),
        (lambda g: g.conv_transpose(g.input("a", (1, 3, 4, 4)), rand(3, 2, 3, 3), rand(6), group=2), "group 2 must divide the input channels"),
        (lambda g: g.conv_transpose(g.input("a", (1, 2, 4, 4)), rand(2, 2, 3, 3), rand(3)), "bias must have shape [2] (filter dim 1 * group)"),
        (lambda g: g.conv_transpose(g.input("a", (1, 2, 1, 1)), rand(2, 2, 2, 2), rand(2), pads=(1, 0, 1, 0)), "must crop the full output [2, 2]"),
        (lambda g: g.conv_transpose(g.input("a", (1, 2, 3, 3), "i32"), np.ones((2, 2, 2, 2), np.int32), np.ones(2, np.int32)), "must be a float"),
        (lambda g: g.convolution(g.input("a", (1, 2, 3, 3), "f64"), rand(2, 2, 3, 3), rand(2)), "operands must have one element type, got f64, f32, f32"),
    ],
)
def test_type_and_shape_errors_of_new_ops(build, message: str) -> None:
    with pytest.raises(ValueError) as info:
        build(Graph("bad"))
    assert message in str(info.value)
    assert str(info.value).startswith("glow.")


def test_convert_to_refuses_unknown_types() -> None:
    g = Graph("c")
    with pytest.raises(ValueError, match="glow.convert_to 'cv': element type complex64"):
        g.convert_to(g.input("a", (2,)), np.complex64, name="cv")
