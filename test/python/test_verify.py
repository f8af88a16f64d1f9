"""glow-verify: every rule it checks, on modules written as MLIR text, and its silence on good ones."""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir

from glow_mlir.builder import Graph
from glow_mlir.context import make_context
from glow_mlir.errors import VerificationError
from glow_mlir.passes.verify import verify


def T(*dims: int) -> str:
    return f"tensor<{'x'.join(map(str, dims))}xf32>" if dims else "tensor<f32>"


def M(*dims: int) -> str:
    return f"memref<{'x'.join(map(str, dims))}xf32>" if dims else "memref<f32>"


def glow_op(name: str, operands: list[str], result: str, attrs: str = "") -> str:
    """A function whose arguments are `operands` and whose body is one named glow op returning `result`."""
    args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(operands))
    uses = ", ".join(f"%a{i}" for i in range(len(operands)))
    attributes = f" {{{attrs}}}" if attrs else ""
    return f"""
func.func @f({args}) -> {result} {{
  %0 = "glow.{name}"({uses}){attributes} : ({", ".join(operands)}) -> {result} loc("node7")
  return %0 : {result}
}}"""


def glow_ir_op(name: str, operands: list[str], roles: list[str], attrs: str = "") -> str:
    args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(operands))
    uses = ", ".join(f"%a{i}" for i in range(len(operands)))
    role_text = ", ".join(f'"{r}"' for r in roles)
    attributes = ", ".join(a for a in (attrs, f"roles = [{role_text}]") if a)
    return f"""
func.func @f({args}) {{
  "glow_ir.{name}"({uses}) {{{attributes}}} : ({", ".join(operands)}) -> () loc("node7")
  return
}}"""


def conv(kernels: str = "3, 3", strides: str = "1, 1", pads: str = "0, 0, 0, 0", group: str = "1 : i64",
         dilation: str = "1, 1", width: str = "i64") -> str:
    """Convolution attributes; each argument replaces one of them."""
    return (
        f"kernels = array<i64: {kernels}>, strides = array<{width}: {strides}>, pads = array<i64: {pads}>, "
        f"group = {group}, dilation = array<i64: {dilation}>"
    )


CONV = conv()
CONV_ARGS = [T(1, 2, 5, 5), T(4, 2, 3, 3), T(4)]
POOL = "kernels = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>"
BN = "epsilon = 1.0e-05 : f32, momentum = 9.0e-01 : f32, channelIdx = 1 : i64"

BAD = {
    "f64 element type": (glow_op("relu", ["tensor<2xf64>"], "tensor<2xf64>"), "must be a static-shaped f32 tensor"),
    "dynamic shape": (glow_op("relu", ["tensor<?xf32>"], "tensor<?xf32>"), "static-shaped f32 tensor"),
    "empty dim": (glow_op("relu", [T(0, 2)], T(0, 2)), "every dim >= 1"),
    "unary result": (glow_op("relu", [T(2, 3)], T(3, 2)), "result shape [3, 2] must equal the shape rule's [2, 3]"),
    "elementwise": (glow_op("add", [T(2, 3), T(3, 2)], T(2, 3)), "operands must have the same shape"),
    "matmul inner": (glow_op("matmul", [T(2, 3), T(4, 5)], T(2, 5)), "inner dims must agree"),
    "matmul rank": (glow_op("matmul", [T(2, 3, 1), T(3, 5)], T(2, 5)), "lhs must have rank 2"),
    "fc bias": (glow_op("fully_connected", [T(2, 3), T(3, 4), T(5)], T(2, 4)), "bias must have shape [4]"),
    "fc result": (glow_op("fully_connected", [T(2, 3), T(3, 4), T(4)], T(2, 3)), "must equal the shape rule's [2, 4]"),
    "batched_add": (glow_op("batched_add", [T(2, 3), T(2)], T(2, 3)), "slice shape must equal batch shape without dim 0"),
    "softmax rank": (glow_op("softmax", [T()], T()), "input must have rank >= 1"),
    "conv channels": (
        glow_op("convolution", [T(1, 3, 5, 5), T(4, 2, 3, 3), T(4)], T(1, 4, 3, 3), CONV),
        "input channels must equal filter I * group",
    ),
    "conv group divides O": (
        glow_op("convolution", [T(1, 4, 5, 5), T(3, 2, 3, 3), T(3)], T(1, 3, 3, 3), conv(group="2 : i64")),
        "group 2 must divide the filter's output channels",
    ),
    "conv group >= 1": (
        glow_op("convolution", [T(1, 4, 5, 5), T(3, 2, 3, 3), T(3)], T(1, 3, 3, 3), conv(group="0 : i64")),
        "group must be >= 1",
    ),
    "conv kernels": (
        glow_op("convolution", CONV_ARGS, T(1, 4, 4, 4), conv(kernels="2, 2")),
        "must equal the filter's HW",
    ),
    "conv strides": (
        glow_op("convolution", CONV_ARGS, T(1, 4, 3, 3), conv(strides="0, 1")),
        "strides must be >= 1",
    ),
    "conv dilation": (
        glow_op("convolution", CONV_ARGS, T(1, 4, 3, 3), conv(dilation="1, 0")),
        "dilation must be >= 1",
    ),
    "conv pads": (
        glow_op("convolution", CONV_ARGS, T(1, 4, 3, 3), conv(pads="0, -1, 0, 0")),
        "pads must be >= 0",
    ),
    "conv output dims": (
        glow_op("convolution", [T(1, 2, 2, 5), T(4, 2, 3, 3), T(4)], T(1, 4, 1, 3), CONV),
        "must fit the padded input",
    ),
    "conv result": (
        glow_op("convolution", CONV_ARGS, T(1, 4, 5, 5), CONV),
        "must equal the shape rule's [1, 4, 3, 3]",
    ),
    "conv bias": (glow_op("convolution", [T(1, 2, 5, 5), T(4, 2, 3, 3), T(2)], T(1, 4, 3, 3), CONV), "bias must have shape [4]"),
    "conv attribute kind": (
        glow_op("convolution", CONV_ARGS, T(1, 4, 3, 3), conv(width="i32")),
        "attribute 'strides' must be array<i64: ...>",
    ),
    "conv group kind": (
        glow_op("convolution", CONV_ARGS, T(1, 4, 3, 3), conv(group="1 : i32")),
        "attribute 'group' must be an i64 integer",
    ),
    "pool rank": (glow_op("max_pool", [T(2, 5, 5)], T(2, 2, 2), POOL), "input (NCHW) must have rank 4"),
    "pool pads < kernels": (
        glow_op("max_pool", [T(1, 1, 5, 5)], T(1, 1, 3, 3), POOL.replace("0, 0, 0, 0", "2, 0, 0, 0")),
        "must be smaller than kernels",
    ),
    "pool pads length": (
        glow_op("max_pool", [T(1, 1, 4, 4)], T(1, 1, 2, 2), POOL.replace("0, 0, 0, 0", "0, 0")),
        "must have 4 values",
    ),
    "pool result": (glow_op("max_pool", [T(1, 1, 4, 4)], T(1, 1, 3, 3), POOL), "must equal the shape rule's [1, 1, 2, 2]"),
    "avg_pool flag kind": (
        glow_op("avg_pool", [T(1, 1, 4, 4)], T(1, 1, 2, 2), POOL + ", countIncludePads = 1 : i64"),
        "attribute 'countIncludePads' must be true or false",
    ),
    "bn vector": (
        glow_op("batch_normalization", [T(2, 3, 4), T(3), T(3), T(4), T(3)], T(2, 3, 4), BN),
        "mean must have shape [3] (input dim 1)",
    ),
    "bn channelIdx": (
        glow_op("batch_normalization", [T(2, 3), T(3), T(3), T(3), T(3)], T(2, 3), BN.replace("channelIdx = 1", "channelIdx = 2")),
        "channelIdx 2 must be a dim of input",
    ),
    "bn epsilon": (
        glow_op("batch_normalization", [T(2, 3), T(3), T(3), T(3), T(3)], T(2, 3), BN.replace("1.0e-05", "-1.0")),
        "epsilon must be >= 0",
    ),
    "bn epsilon kind": (
        glow_op("batch_normalization", [T(2, 3), T(3), T(3), T(3), T(3)], T(2, 3), BN.replace("1.0e-05 : f32", "1.0e-05 : f64")),
        "attribute 'epsilon' must be an f32 float",
    ),
    "reshape count": (glow_op("reshape", [T(2, 3)], T(4, 2), "dims = array<i64: 4, 2>"), "element counts must agree"),
    "reshape result": (glow_op("reshape", [T(2, 3)], T(6), "dims = array<i64: 3, 2>"), "must equal the shape rule's [3, 2]"),
    "transpose permutation": (glow_op("transpose", [T(2, 3)], T(2, 3), "shuffle = array<i64: 0, 0>"), "must be a permutation"),
    "transpose result": (glow_op("transpose", [T(2, 3)], T(2, 3), "shuffle = array<i64: 1, 0>"), "must equal the shape rule's [3, 2]"),
    "concat dims": (
        glow_op("concat", [T(2, 3), T(3, 2)], T(5, 3), "dim = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>"),
        "inputs must agree in every dim except 0",
    ),
    "concat dim range": (
        glow_op("concat", [T(2, 3)], T(2, 3), "dim = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>"),
        "dim 2 must be a dim of the inputs",
    ),
    "concat result": (
        glow_op("concat", [T(2, 3), T(1, 3)], T(4, 3), "dim = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>"),
        "must equal the shape rule's [3, 3]",
    ),
    "slice bounds": (glow_op("slice", [T(4, 4)], T(2, 2), "start = array<i64: 3, 0>"), "must lie within input [4, 4]"),
    "slice rank": (glow_op("slice", [T(4, 4)], T(2, 2), "start = array<i64: 0>"), "must have the input's rank"),
    "insert bounds": (
        glow_op("insert_tensor", [T(4, 4), T(2, 2)], T(4, 4), "start = array<i64: 0, 3>"),
        "small [2, 2] at start [0, 3] must lie within big [4, 4]",
    ),
    "broadcast dims": (glow_op("broadcast", [T(3)], T(2, 4), "axis = 1 : i64"), "must have dims 1 or equal to target"),
    "broadcast axis": (glow_op("broadcast", [T(3)], T(2, 3), "axis = 2 : i64"), "must fit within target"),
    "splat value kind": (glow_op("splat", [], T(2), "value = 1.0 : f64"), "attribute 'value' must be an f32 float"),
    "constant type": (glow_op("constant", [], T(3), "value = dense<1.0> : tensor<2xf32>"), "value must be a dense elements attribute of the result type"),
    # glow_ir instructions follow the same rules on their buffers.
    "ir element_add": (
        glow_ir_op("element_add", [M(2, 3), M(2, 3), M(3, 2)], ["out", "in", "in"]),
        "operands must have the same shape",
    ),
    "ir dest shape": (
        glow_ir_op("matmul", [M(2, 2), M(2, 3), M(3, 4)], ["out", "in", "in"]),
        "destination shape [2, 2] must equal the shape rule's [2, 4]",
    ),
    "ir conv has no pads": (
        glow_ir_op(
            "convolution", [M(1, 4, 5, 5), M(1, 2, 5, 5), M(4, 2, 3, 3), M(4)], ["out", "in", "in", "in"],
            "kernels = array<i64: 3, 3>, strides = array<i64: 1, 1>, group = 1 : i64, dilation = array<i64: 1, 1>",
        ),
        "destination shape [1, 4, 5, 5] must equal the shape rule's [1, 4, 3, 3]",
    ),
    "ir pool": (
        glow_ir_op("avg_pool", [M(1, 1, 3, 3), M(1, 1, 4, 4)], ["out", "in"], "kernels = array<i64: 2, 2>, strides = array<i64: 2, 2>"),
        "must equal the shape rule's [1, 1, 2, 2]",
    ),
    "ir extract_tensor": (
        glow_ir_op("extract_tensor", [M(3, 3), M(4, 4)], ["out", "in"], "start = array<i64: 2, 0>"),
        "must lie within input [4, 4]",
    ),
    "ir insert_tensor": (
        glow_ir_op("insert_tensor", [M(4, 4), M(2, 2)], ["inout", "in"], "start = array<i64: 3, 3>"),
        "must lie within big [4, 4]",
    ),
    "ir broadcast": (glow_ir_op("broadcast", [M(2, 4), M(3)], ["out", "in"], "axis = 1 : i64"), "dims 1 or equal"),
    "ir copy": (glow_ir_op("copy", [M(2, 4), M(4, 2)], ["out", "in"]), "must equal the shape rule's [4, 2]"),
    "ir element type": (glow_ir_op("element_exp", ["memref<4xf16>", M(4)], ["out", "in"]), "static-shaped f32 memref"),
    "ir tensor_view count": (
        """
func.func @f(%a: memref<2x3xf32>) {
  %0 = "glow_ir.tensor_view"(%a) : (memref<2x3xf32>) -> memref<7xf32> loc("node7")
  return
}""",
        "view [7] must have as many elements as its source [2, 3]",
    ),
    "ir alloc shape": (
        """
func.func @f() {
  %0 = "glow_ir.alloc_activation"() : () -> memref<0x3xf32> loc("node7")
  return
}""",
        "buffer shape [0, 3] must have every dim >= 1",
    ),
    "ir dealloc of an argument": (
        """
func.func @f(%a: memref<2xf32>) {
  "glow_ir.dealloc_activation"(%a) {roles = ["out"]} : (memref<2xf32>) -> () loc("node7")
  return
}""",
        "operand must be a buffer from glow_ir.alloc_activation",
    ),
}


@pytest.mark.parametrize("text, rule", BAD.values(), ids=BAD.keys())
def test_broken_rule_is_reported(text: str, rule: str) -> None:
    with make_context():
        module = ir.Module.parse(text)
        with pytest.raises(VerificationError) as info:
            verify(module)
    error = info.value
    assert rule in error.rule
    assert "node7" in error.location
    assert error.op_name.startswith("glow")
    message = str(error)
    assert rule in message and "node7" in message and error.op_name in message


GOOD_GLOW_IR = """
func.func @f(%x: memref<2x3xf32> {glow.name = "x"}, %w: memref<3x4xf32> {glow.name = "w"},
             %y: memref<4x2xf32> {glow.name = "y", glow.output}) {
  %a = "glow_ir.alloc_activation"() : () -> memref<2x4xf32>
  "glow_ir.matmul"(%a, %x, %w) {roles = ["out", "in", "in"]} : (memref<2x4xf32>, memref<2x3xf32>, memref<3x4xf32>) -> ()
  "glow_ir.splat"(%a) {value = 0.0 : f32, roles = ["out"]} : (memref<2x4xf32>) -> ()
  "glow_ir.element_max"(%a, %a, %a) {roles = ["out", "in", "in"]} : (memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>) -> ()
  %v = "glow_ir.tensor_view"(%a) : (memref<2x4xf32>) -> memref<2x1x4xf32>
  %b = "glow_ir.alloc_activation"() : () -> memref<1x2x4x4xf32>
  "glow_ir.broadcast"(%b, %v) {axis = 1 : i64, roles = ["out", "in"]} : (memref<1x2x4x4xf32>, memref<2x1x4xf32>) -> ()
  %p = "glow_ir.alloc_activation"() : () -> memref<1x2x2x2xf32>
  "glow_ir.max_pool"(%p, %b) {kernels = array<i64: 2, 2>, strides = array<i64: 2, 2>, roles = ["out", "in"]} : (memref<1x2x2x2xf32>, memref<1x2x4x4xf32>) -> ()
  "glow_ir.insert_tensor"(%b, %p) {start = array<i64: 0, 0, 1, 1>, roles = ["inout", "in"]} : (memref<1x2x4x4xf32>, memref<1x2x2x2xf32>) -> ()
  %t = "glow_ir.tensor_view"(%b) : (memref<1x2x4x4xf32>) -> memref<4x8xf32>
  %s = "glow_ir.alloc_activation"() : () -> memref<2x4xf32>
  "glow_ir.extract_tensor"(%s, %t) {start = array<i64: 1, 4>, roles = ["out", "in"]} : (memref<2x4xf32>, memref<4x8xf32>) -> ()
  "glow_ir.transpose"(%y, %s) {shuffle = array<i64: 1, 0>, roles = ["out", "in"]} : (memref<4x2xf32>, memref<2x4xf32>) -> ()
  "glow_ir.dealloc_activation"(%s) {roles = ["out"]} : (memref<2x4xf32>) -> ()
  "glow_ir.dealloc_activation"(%p) {roles = ["out"]} : (memref<1x2x2x2xf32>) -> ()
  "glow_ir.dealloc_activation"(%b) {roles = ["out"]} : (memref<1x2x4x4xf32>) -> ()
  "glow_ir.dealloc_activation"(%a) {roles = ["out"]} : (memref<2x4xf32>) -> ()
  return
}
"""


def test_good_glow_ir_passes() -> None:
    with make_context():
        module = ir.Module.parse(GOOD_GLOW_IR)
        before = str(module)
        verify(module)
        assert str(module) == before


def test_good_built_graph_passes() -> None:
    g = Graph("ok")
    x = g.input("x", (1, 2, 6, 6))
    conv = g.convolution(x, np.ones((4, 1, 3, 3), np.float32), np.zeros(4, np.float32), pads=(1, 1, 1, 1), group=2)
    bn = g.batch_normalization(conv, *[np.ones(4, np.float32)] * 4)
    pooled = g.avg_pool(bn, (3, 3), (2, 2), (1, 1, 1, 1), count_include_pads=False)
    g.output("y", g.softmax(g.reshape(pooled, (1, 36))))
    verify(g.module)


def test_the_first_broken_op_is_reported() -> None:
    text = """
func.func @f(%a: tensor<2xf32>, %b: tensor<3xf32>) -> tensor<2xf32> {
  %0 = "glow.relu"(%a) : (tensor<2xf32>) -> tensor<2xf32> loc("fine")
  %1 = "glow.add"(%a, %b) : (tensor<2xf32>, tensor<3xf32>) -> tensor<2xf32> loc("first")
  %2 = "glow.relu"(%a) : (tensor<2xf32>) -> tensor<3xf32> loc("second")
  return %0 : tensor<2xf32>
}"""
    with make_context():
        module = ir.Module.parse(text)
        with pytest.raises(VerificationError, match="first.*'glow.add'.*same shape"):
            verify(module)
