"""glow-irgen: the calling convention, buffer lifetimes, in-place outputs and copies, constants, and the
errors for graphs that were not lowered."""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir

from glow_mlir import opdefs, ops, runtime
from glow_mlir.builder import Graph
from glow_mlir.context import make_context
from glow_mlir.errors import VerificationError
from glow_mlir.interpreter import interpret
from glow_mlir.passes.lowering.irgen import buffer_users, irgen
from glow_mlir.pipeline.runner import run_pipeline

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


def instruction_roles() -> dict[str, tuple[str, ...]]:
    return {instr.full_name: instr.role_list for instr in opdefs.ir_ops().values() if instr.role_list}


def test_instruction_roles_come_from_the_definitions() -> None:
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


# Each new op of the glow dialect on the inputs of ONNX_FUNCTION: (op text, result type, instruction, attributes).
ONNX_OPS = [
    ('"glow.convert_to"(%f) : (tensor<2x3xf32>) -> tensor<2x3xi64>', "tensor<2x3xi64>", "convert_to", []),
    ('"glow.select"(%m, %f, %g) : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>',
     "tensor<2x3xf32>", "element_select", []),
    *[
        (f'"glow.{op}"(%f, %g) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>', "tensor<2x3xi1>",
         f"element_{op}", [])
        for op in ("cmp_eq", "cmp_neq", "cmp_lt", "cmp_lte")
    ],
    *[
        (f'"glow.{op}"(%m, %n) : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>', "tensor<2x3xi1>",
         f"element_{op}", [])
        for op in ("and", "or", "xor")
    ],
    ('"glow.not"(%m) : (tensor<2x3xi1>) -> tensor<2x3xi1>', "tensor<2x3xi1>", "element_not", []),
    ('"glow.pow"(%f, %g) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>', "tensor<2x3xf32>",
     "element_pow", []),
    *[
        (f'"glow.{op}"(%f) : (tensor<2x3xf32>) -> tensor<2x3xf32>', "tensor<2x3xf32>", f"element_{op}", [])
        for op in ("log", "abs", "neg", "floor", "ceil", "round", "erf", "sin", "cos")
    ],
    ('"glow.gather"(%f, %k) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<4xi64>) -> tensor<2x4xf32>',
     "tensor<2x4xf32>", "gather", ["axis"]),
    *[
        (f'"glow.batched_reduce_{op}"(%f) {{axes = array<i64: 1>}} : (tensor<2x3xf32>) -> tensor<2xf32>',
         "tensor<2xf32>", f"batched_reduce_{op}", ["axes"])
        for op in ("add", "max", "min", "prod")
    ],
    *[
        (f'"glow.{op}"(%f) {{axis = 0 : i64, keepDims = true}} : (tensor<2x3xf32>) -> tensor<1x3xi64>',
         "tensor<1x3xi64>", op, ["axis", "keepDims"])
        for op in ("arg_max", "arg_min")
    ],
    ('"glow.batch_matmul"(%f3, %g3) : (tensor<1x2x3xf32>, tensor<1x3x2xf32>) -> tensor<1x2x2xf32>',
     "tensor<1x2x2xf32>", "batch_matmul", []),
    ('"glow.conv_transpose"(%x4, %w4, %b4) {kernels = array<i64: 2, 2>, strides = array<i64: 2, 2>, '
     "pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : "
     "(tensor<1x2x2x2xf32>, tensor<2x3x2x2xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>",
     "tensor<1x3x4x4xf32>", "conv_transpose", ["kernels", "strides", "group", "dilation"]),
]  # fmt: skip

ONNX_FUNCTION = """
func.func @f(%f: tensor<2x3xf32> {{glow.name = "f"}}, %g: tensor<2x3xf32> {{glow.name = "g"}},
             %m: tensor<2x3xi1> {{glow.name = "m"}}, %n: tensor<2x3xi1> {{glow.name = "n"}},
             %k: tensor<4xi64> {{glow.name = "k"}}) -> ({result} {{glow.name = "y"}}) {{
  %f3 = "glow.reshape"(%f) {{dims = array<i64: 1, 2, 3>}} : (tensor<2x3xf32>) -> tensor<1x2x3xf32>
  %g3 = "glow.reshape"(%g) {{dims = array<i64: 1, 3, 2>}} : (tensor<2x3xf32>) -> tensor<1x3x2xf32>
  %x4 = "glow.constant"() {{value = dense<1.0> : tensor<1x2x2x2xf32>}} : () -> tensor<1x2x2x2xf32>
  %w4 = "glow.constant"() {{value = dense<0.5> : tensor<2x3x2x2xf32>}} : () -> tensor<2x3x2x2xf32>
  %b4 = "glow.constant"() {{value = dense<0.25> : tensor<3xf32>}} : () -> tensor<3xf32>
  %y = {op} loc("node")
  return %y : {result}
}}
"""


@pytest.mark.parametrize("op_text,result,instruction,attributes", ONNX_OPS)
def test_onnx_ops_become_their_instructions(op_text: str, result: str, instruction: str, attributes: list[str]) -> None:
    with make_context():
        module = _parse(ONNX_FUNCTION.format(op=op_text, result=result))
        source = next(op for op in ops.walk_ops(module.operation) if op.name.startswith(ops.GLOW) and
                      str(op.location) == 'loc("node")')  # fmt: skip
        kept = {name: str(source.attributes[name]) for name in attributes}
        irgen(module)
        module.operation.verify()
        (inst,) = [op for op in _body_ops(module) if op.name == f"glow_ir.{instruction}"]
        # The op writes the output argument in place, with the result's element type.
        output = list(_function(module).regions[0].blocks[0].arguments)[-1]
        assert inst.operands[0] == output
        assert str(output.type) == result.replace("tensor", "memref")
        assert ops.roles(inst) == list(instruction_roles()[inst.name])
        assert {name: str(inst.attributes[name]) for name in attributes} == kept
        assert "pads" not in inst.attributes


def test_padded_conv_transpose_is_rejected() -> None:
    op = ONNX_OPS[-1][0].replace("pads = array<i64: 0, 0, 0, 0>", "pads = array<i64: 1, 0, 0, 0>")
    with make_context():
        module = _parse(ONNX_FUNCTION.format(op=op, result="tensor<1x3x4x4xf32>"))
        with pytest.raises(VerificationError, match="glow-lower"):
            irgen(module)


TYPED_CONSTANTS = {
    "f64": np.array([1.5, -2.25]),
    "f16": np.array([0.5, 3.0], np.float16),
    "i1": np.array([True, False]),
    "i8": np.array([-128, 127], np.int8),
    "i16": np.array([-300, 300], np.int16),
    "i32": np.array([7, -7], np.int32),
    "i64": np.array([2**40, -1], np.int64),
}


@pytest.mark.parametrize("elt", sorted(TYPED_CONSTANTS))
def test_constants_of_every_element_type_become_globals_and_run(elt: str) -> None:
    """A constant of each listed element type becomes a memref.global of that type, and the code runs."""
    value = TYPED_CONSTANTS[elt]
    t = f"tensor<2x{elt}>"
    items = [str(v).lower() if elt == "i1" else repr(v.item()) for v in value]
    attr = f"dense<[{', '.join(items)}]> : {t}"
    with make_context():
        module = _parse(
            f"""
            func.func @f(%b: tensor<2xi1> {{glow.name = "b"}}, %x: {t} {{glow.name = "x"}})
                -> ({t} {{glow.name = "y"}}, {t} {{glow.name = "c"}}) {{
              %c = "glow.constant"() {{value = {attr}}} : () -> {t} loc("c")
              %y = "glow.select"(%b, %c, %x) : (tensor<2xi1>, {t}, {t}) -> {t}
              return %y, %c : {t}, {t}
            }}
            """
        )
        run_pipeline(module, ["glow-irgen", "glow-allocate"])
        (weights,) = [op.operation for op in module.body.operations if op.operation.name == "memref.global"]
        assert str(ir.TypeAttr(weights.attributes["type"]).value) == f"memref<2x{elt}>"
    b, x = np.array([True, False]), np.zeros(2, value.dtype)
    with runtime.compile_allocated(module) as model:
        got = model.run({"b": b, "x": x})
    np.testing.assert_array_equal(got["c"], value)
    np.testing.assert_array_equal(got["y"], np.where(b, value, x))
    assert got["y"].dtype == value.dtype
