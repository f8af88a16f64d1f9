"""glow-irgen: the calling convention, buffer lifetimes, in-place outputs and copies, constants, and the
errors for graphs that were not lowered."""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir

from glow_mlir import ops, runtime
from glow_mlir.builder import Graph
from glow_mlir.context import make_context
from glow_mlir.errors import VerificationError
from glow_mlir.interpreter import interpret
from glow_mlir.passes.irgen import buffer_users, instruction_roles, irgen
from glow_mlir.passes.pipeline import run_pipeline

RNG = np.random.default_rng(3)


def _random(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _parse(text: str) -> ir.Module:
    return ir.Module.parse(text)


def _function(module: ir.Module) -> ir.Operation:
    return ops.functions(module)[0]


def _body_ops(module: ir.Module) -> list[ir.Operation]:
    return [op.operation for op in _function(module).regions[0].blocks[0].operations]


def _network() -> Graph:
    g = Graph("net")
    x = g.input("x", (1, 2, 6, 6))
    c = g.relu(g.convolution(x, _random(4, 2, 3, 3), _random(4), pads=(1, 1, 1, 1), name="conv"), name="relu")
    p = g.max_pool(c, (2, 2), name="pool")
    flat = g.reshape(p, (1, 36), name="flat")
    y = g.softmax(g.fully_connected(flat, _random(36, 5), _random(5), name="fc"), name="softmax")
    head = g.sigmoid(g.slice(y, (0, 0), (1, 2), name="t"))
    cat = g.concat([g.slice(y, (0, 1), (1, 3), name="s"), head], 1, name="cat")
    g.output("y", y)
    g.output("cat", cat)
    g.output("flat", flat)
    return g


def _bufferized(g: Graph) -> ir.Module:
    module = g.module
    with g.context:
        run_pipeline(module, ["glow-lower", "glow-verify", "glow-dce", "glow-irgen", "glow-verify"])
    return module


def test_signature_is_inputs_then_outputs_on_memrefs() -> None:
    module = _bufferized(_network())
    fn = _function(module)
    signature = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    assert list(signature.results) == []
    assert [str(t) for t in signature.inputs] == [
        "memref<1x2x6x6xf32>",
        "memref<1x5xf32>",
        "memref<1x5xf32>",
        "memref<1x36xf32>",
    ]
    attrs = [ir.DictAttr(d) for d in ir.ArrayAttr(fn.attributes["arg_attrs"])]
    assert [ir.StringAttr(d["glow.name"]).value for d in attrs] == ["x", "y", "cat", "flat"]
    assert ["glow.output" in d for d in attrs] == [False, True, True, True]
    assert "res_attrs" not in fn.attributes


def test_no_tensor_or_glow_op_is_left() -> None:
    text = str(_bufferized(_network()))
    assert "tensor<" not in text
    assert "unrealized_conversion_cast" not in text
    assert '"glow.' not in text


def test_every_activation_is_freed_right_after_its_last_use() -> None:
    module = _bufferized(_network())
    body = _body_ops(module)
    position = {op: i for i, op in enumerate(body)}
    allocs = [op for op in body if op.name == "glow_ir.alloc_activation"]
    assert allocs
    for alloc in allocs:
        users = buffer_users(alloc.results[0])
        deallocs = [u for u in users if u.name == "glow_ir.dealloc_activation"]
        assert len(deallocs) == 1
        last_real_use = max(position[u] for u in users if u.name != "glow_ir.dealloc_activation")
        # Deallocs of buffers whose last use is one instruction sit together right after it.
        between = body[last_real_use + 1 : position[deallocs[0]]]
        assert all(op.name == "glow_ir.dealloc_activation" for op in between)


def test_reads_through_views_keep_the_buffer_alive() -> None:
    with make_context():
        module = _parse(
            """
            func.func @f(%x: tensor<2x3xf32> {glow.name = "x"}) -> (tensor<3x2xf32> {glow.name = "y"}) {
              %e = "glow.exp"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
              %r = "glow.reshape"(%e) {dims = array<i64: 3, 2>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
              %s = "glow.sigmoid"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
              %t = "glow.reshape"(%s) {dims = array<i64: 3, 2>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
              %y = "glow.add"(%r, %t) : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
              return %y : tensor<3x2xf32>
            }
            """
        )
        irgen(module)
        names = [op.name for op in _body_ops(module)]
    assert names == [
        "glow_ir.alloc_activation",
        "glow_ir.element_exp",
        "glow_ir.tensor_view",
        "glow_ir.alloc_activation",
        "glow_ir.sigmoid",
        "glow_ir.tensor_view",
        "glow_ir.element_add",
        "glow_ir.dealloc_activation",
        "glow_ir.dealloc_activation",
        "func.return",
    ]


def test_outputs_are_written_in_place_or_copied() -> None:
    with make_context():
        module = _parse(
            """
            func.func @f(%x: tensor<4xf32> {glow.name = "x"}) -> (tensor<4xf32> {glow.name = "direct"}, tensor<4xf32> {glow.name = "again"}, tensor<4xf32> {glow.name = "input"}, tensor<4xf32> {glow.name = "const"}, tensor<2x2xf32> {glow.name = "view"}) {
              %c = "glow.constant"() {value = dense<2.0> : tensor<4xf32>} : () -> tensor<4xf32>
              %e = "glow.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
              %r = "glow.reshape"(%e) {dims = array<i64: 2, 2>} : (tensor<4xf32>) -> tensor<2x2xf32>
              %m = "glow.mul"(%x, %c) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
              return %m, %m, %x, %c, %r : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x2xf32>
            }
            """
        )
        irgen(module)
        module.operation.verify()
        args = list(_function(module).regions[0].blocks[0].arguments)
        x, direct, again, input_, const, view = args
        body = _body_ops(module)
        mul = next(op for op in body if op.name == "glow_ir.element_mul")
        assert mul.operands[0] == direct
        copies = [(op.operands[0], op.operands[1]) for op in body if op.name == "glow_ir.copy"]
        assert len(copies) == 4
        by_dest = dict(copies)
        assert by_dest[again] == direct
        assert by_dest[input_] == x
        assert by_dest[const].owner.operation.name == "memref.get_global"
        assert by_dest[view].owner.operation.name == "glow_ir.tensor_view"


def test_constants_become_uniquely_named_aligned_globals() -> None:
    with make_context():
        module = _parse(
            """
            func.func @w(%x: tensor<2xf32> {glow.name = "x"}) -> (tensor<2xf32> {glow.name = "y"}) {
              %a = "glow.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32> loc("w")
              %b = "glow.constant"() {value = dense<3.0> : tensor<2xf32>} : () -> tensor<2xf32> loc("w")
              %c = "glow.constant"() {value = dense<4.0> : tensor<2xf32>} : () -> tensor<2xf32> loc("1/conv.weight")
              %0 = "glow.add"(%x, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
              %1 = "glow.add"(%0, %b) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
              %2 = "glow.add"(%1, %c) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
              return %2 : tensor<2xf32>
            }
            """
        )
        irgen(module)
        module.operation.verify()
        globals_ = [op.operation for op in module.body.operations if op.operation.name == "memref.global"]
        names = [ir.StringAttr(g.attributes["sym_name"]).value for g in globals_]
        assert len(set(names) | {"w"}) == 4, names
        assert names[2] == "c_1_conv_weight"
        for g in globals_:
            assert "constant" in g.attributes
            assert ops.integer(g, "alignment") == 64
        loads = [op for op in _body_ops(module) if op.name == "memref.get_global"]
        assert [ir.FlatSymbolRefAttr(op.attributes["name"]).value for op in loads] == names


def test_instruction_roles_come_from_the_dialect() -> None:
    roles = instruction_roles()
    assert roles["glow_ir.insert_tensor"] == ("inout", "in")
    assert roles["glow_ir.convolution"] == ("out", "in", "in", "in")
    assert roles["glow_ir.dealloc_activation"] == ("out",)
    assert "glow_ir.tensor_view" not in roles


@pytest.mark.parametrize(
    "op_text, op_name",
    [
        ('"glow.relu"(%x) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>', "glow.relu"),
        (
            '"glow.batch_normalization"(%x, %c, %c, %c, %c) {epsilon = 1.0e-5 : f32, momentum = 0.9 : f32, '
            "channelIdx = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, "
            "tensor<1xf32>) -> tensor<1x1x4x4xf32>",
            "glow.batch_normalization",
        ),
        (
            '"glow.max_pool"(%x) {kernels = array<i64: 3, 3>, strides = array<i64: 1, 1>, '
            "pads = array<i64: 1, 1, 1, 1>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>",
            "glow.max_pool",
        ),
        (
            '"glow.convolution"(%x, %w, %c) {kernels = array<i64: 3, 3>, strides = array<i64: 1, 1>, '
            "pads = array<i64: 1, 1, 1, 1>, group = 1 : i64, dilation = array<i64: 1, 1>} : "
            "(tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>, tensor<1xf32>) -> tensor<1x1x4x4xf32>",
            "glow.convolution",
        ),
    ],
)
def test_unlowered_ops_are_rejected_before_any_change(op_text: str, op_name: str) -> None:
    with make_context():
        module = _parse(
            f"""
            func.func @f(%x: tensor<1x1x4x4xf32> {{glow.name = "x"}}) -> (tensor<1x1x4x4xf32> {{glow.name = "y"}}) {{
              %c = "glow.constant"() {{value = dense<1.0> : tensor<1xf32>}} : () -> tensor<1xf32>
              %w = "glow.constant"() {{value = dense<1.0> : tensor<1x1x3x3xf32>}} : () -> tensor<1x1x3x3xf32>
              %0 = {op_text} loc("node7")
              return %0 : tensor<1x1x4x4xf32>
            }}
            """
        )
        before = str(module)
        with pytest.raises(VerificationError) as error:
            irgen(module)
        assert error.value.op_name == op_name
        assert "node7" in error.value.location
        assert "glow-lower" in error.value.rule
        assert str(module) == before


def test_non_glow_ops_are_rejected() -> None:
    with make_context():
        module = _parse(
            """
            func.func @f(%x: tensor<2xf32> {glow.name = "x"}) -> (tensor<2xf32> {glow.name = "y"}) {
              %0 = arith.addf %x, %x : tensor<2xf32>
              return %0 : tensor<2xf32>
            }
            """
        )
        with pytest.raises(VerificationError, match="arith.addf"):
            irgen(module)


def test_compiled_outputs_match_interpreter() -> None:
    """In-place outputs, copies, views and concat inserts compute what the graph means, end to end."""
    g = _network()
    feeds = {"x": _random(1, 2, 6, 6)}
    with g.context:
        expected = interpret(g.module, feeds)
    with runtime.compile(g) as model:
        got = model.run(feeds)
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-6)


def test_compiled_copies_match_interpreter() -> None:
    g = Graph("copies")
    x = g.input("x", (2, 3))
    e = g.exp(x)
    g.output("e1", e)
    g.output("e2", e)
    g.output("x", x)
    g.output("c", g.constant(_random(2, 3)))
    g.output("view", g.reshape(e, (3, 2)))
    feeds = {"x": _random(2, 3)}
    with g.context:
        expected = interpret(g.module, feeds)
    with runtime.compile(g) as model:
        got = model.run(feeds)
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-6)
