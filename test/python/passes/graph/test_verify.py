"""glow-verify: every rule it checks, on modules written as MLIR text, and its silence on good ones."""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir

from glow_mlir.builder import Graph
from glow_mlir.context import make_context
from glow_mlir.errors import VerificationError
from glow_mlir.passes.graph.verify import verify


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
    "f80 element type": (
        glow_op("relu", ["tensor<2xf80>"], "tensor<2xf80>"),
        "operand 0 must be a static-shaped tensor of f32, f64, f16, bf16, i1, i8, i16, i32, i64, ui8, ui16, ui32, "
        "ui64, f8E4M3FN, f8E4M3FNUZ, f8E5M2, f8E5M2FNUZ, f8E8M0FNU, f4E2M1FN, i4, ui4, i2, ui2, got tensor<2xf80>",
    ),
    "signed-integer element type": (glow_op("reshape", ["tensor<2xsi8>"], "tensor<2xsi8>", "dims = array<i64: 2>"), "static-shaped tensor of"),
    "dynamic shape": (glow_op("relu", ["tensor<?xf32>"], "tensor<?xf32>"), "static-shaped tensor of"),
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
    "ir element type": (glow_ir_op("element_exp", ["memref<4xf80>", M(4)], ["out", "in"]), "static-shaped memref of"),
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


def TT(elt: str, *dims: int) -> str:
    """A tensor type of element type `elt`."""
    return f"tensor<{''.join(f'{d}x' for d in dims)}{elt}>"


def MM(elt: str, *dims: int) -> str:
    """A memref type of element type `elt`."""
    return f"memref<{''.join(f'{d}x' for d in dims)}{elt}>"


CT = "kernels = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: {pads}>, group = {group} : i64, dilation = array<i64: 1, 1>"
CT_IR = "kernels = array<i64: 2, 2>, strides = array<i64: 2, 2>, group = 1 : i64, dilation = array<i64: 1, 1>"

# The element-type rules and the shape rules of the ops added for ONNX coverage, at both levels.
BAD_TYPED = {
    "float-only op on ints": (glow_op("log", [TT("i32", 2)], TT("i32", 2)), "element type must be a float (f32, f64, f16, bf16), got i32"),
    "pow on ints": (glow_op("pow", [TT("i64", 2)] * 2, TT("i64", 2)), "element type must be a float"),
    "conv_transpose on ints": (
        glow_op("conv_transpose", [TT("i8", 1, 2, 3, 3), TT("i8", 2, 3, 2, 2), TT("i8", 3)], TT("i8", 1, 3, 6, 6), CT.format(pads="0, 0, 0, 0", group=1)),
        "element type must be a float",
    ),
    "mixed operand types": (glow_op("add", [T(2), TT("i32", 2)], T(2)), "operands must have one element type, got f32, i32"),
    "arithmetic on i1": (glow_op("add", [TT("i1", 2)] * 2, TT("i1", 2)), "element type must be an integer or float"),
    "result type": (glow_op("add", [T(2), T(2)], TT("f64", 2)), "result element type f64 must equal the type rule's f32"),
    "comparison gives i1": (glow_op("cmp_lt", [T(2), T(2)], T(2)), "result element type f32 must equal the type rule's i1"),
    "ordering on i1": (glow_op("cmp_lte", [TT("i1", 2)] * 2, TT("i1", 2)), "element type must be an integer or float"),
    "comparison shapes": (glow_op("cmp_eq", [TT("i32", 2), TT("i32", 3)], TT("i1", 2)), "operands must have the same shape"),
    "select cond": (glow_op("select", [T(2), T(2), T(2)], T(2)), "cond must be i1, got f32"),
    "select choices": (glow_op("select", [TT("i1", 2), T(2), TT("i64", 2)], T(2)), "operands must have one element type, got f32, i64"),
    "select shapes": (glow_op("select", [TT("i1", 3), T(2), T(2)], T(2)), "cond, lhs and rhs must have the same shape"),
    "logic on floats": (glow_op("and", [T(2), T(2)], TT("i1", 2)), "element type must be boolean (i1), got f32"),
    "not on ints": (glow_op("not", [TT("i8", 2)], TT("i1", 2)), "element type must be boolean (i1), got i8"),
    "gather indices type": (glow_op("gather", [T(3, 4), T(2)], T(2, 4), "axis = 0 : i64"), "indices must be i32 or i64, got f32"),
    "gather axis": (glow_op("gather", [T(3, 4), TT("i64", 2)], T(3, 2), "axis = 2 : i64"), "axis 2 must be a dim of data [3, 4]"),
    "gather result": (
        glow_op("gather", [T(3, 4), TT("i32", 2, 5)], T(3, 10), "axis = 1 : i64"),
        "result shape [3, 10] must equal the shape rule's [3, 2, 5]",
    ),
    "gather result type": (glow_op("gather", [T(3, 4), TT("i32", 2)], TT("i32", 2, 4), "axis = 0 : i64"), "must equal the type rule's f32"),
    "reduce axes order": (glow_op("batched_reduce_add", [T(2, 3)], T(), "axes = array<i64: 1, 0>"), "axes [1, 0] must be sorted and unique"),
    "reduce axes range": (glow_op("batched_reduce_max", [T(2, 3)], T(2), "axes = array<i64: 2>"), "axes [2] must be dims of input [2, 3]"),
    "reduce result": (glow_op("batched_reduce_prod", [T(2, 3, 4)], T(2, 3), "axes = array<i64: 1>"), "must equal the shape rule's [2, 4]"),
    "reduce on i1": (glow_op("batched_reduce_min", [TT("i1", 2, 3)], TT("i1", 2), "axes = array<i64: 1>"), "must be an integer or float"),
    "arg_max gives i64": (glow_op("arg_max", [T(2, 3)], TT("i32", 2), "axis = 1 : i64, keepDims = false"), "result element type i32 must equal the type rule's i64"),
    "arg_max keepDims": (glow_op("arg_min", [T(2, 3)], TT("i64", 2, 1), "axis = 1 : i64, keepDims = 1 : i64"), "attribute 'keepDims' must be true or false"),
    "arg_max axis": (glow_op("arg_max", [T(2, 3)], TT("i64", 2), "axis = 3 : i64, keepDims = false"), "axis 3 must be a dim of input [2, 3]"),
    "arg_max kept dim": (glow_op("arg_max", [T(2, 3)], TT("i64", 2), "axis = 1 : i64, keepDims = true"), "must equal the shape rule's [2, 1]"),
    "batch_matmul batch": (glow_op("batch_matmul", [T(2, 3, 4), T(3, 4, 5)], T(2, 3, 5)), "batch dims must agree"),
    "batch_matmul inner": (glow_op("batch_matmul", [T(2, 3, 4), T(2, 3, 5)], T(2, 3, 5)), "inner dims must agree"),
    "batch_matmul rank": (glow_op("batch_matmul", [T(3, 4), T(4, 5)], T(3, 5)), "lhs must have rank 3"),
    "conv_transpose channels": (
        glow_op("conv_transpose", [T(1, 2, 3, 3), T(3, 3, 2, 2), T(3)], T(1, 3, 6, 6), CT.format(pads="0, 0, 0, 0", group=1)),
        "filter dim 0 must equal input channels",
    ),
    "conv_transpose group": (
        glow_op("conv_transpose", [T(1, 4, 3, 3), T(4, 1, 2, 2), T(3)], T(1, 3, 6, 6), CT.format(pads="0, 0, 0, 0", group=3)),
        "group 3 must divide the input channels",
    ),
    "conv_transpose bias": (
        glow_op("conv_transpose", [T(1, 4, 3, 3), T(4, 3, 2, 2), T(3)], T(1, 6, 6, 6), CT.format(pads="0, 0, 0, 0", group=2)),
        "bias must have shape [6] (filter dim 1 * group)",
    ),
    "conv_transpose pads": (
        glow_op("conv_transpose", [T(1, 2, 1, 1), T(2, 3, 2, 2), T(3)], T(1, 3, 1, 1), CT.format(pads="1, 0, 1, 0", group=1)),
        "pads [1, 0, 1, 0] must crop the full output [2, 2] to dims >= 1",
    ),
    "conv_transpose result": (
        glow_op("conv_transpose", [T(1, 2, 3, 3), T(2, 3, 2, 2), T(3)], T(1, 3, 6, 6), CT.format(pads="1, 0, 0, 1", group=1)),
        "result shape [1, 3, 6, 6] must equal the shape rule's [1, 3, 5, 5]",
    ),
    "convert_to shape": (glow_op("convert_to", [T(2, 3)], TT("i32", 3, 2)), "must equal the shape rule's [2, 3]"),
    "splat int range": (glow_op("splat", [], TT("i8", 2), "value = 300 : i64"), "attribute 'value' 300 must lie in [-128, 127] for i8 results"),
    "splat bool range": (glow_op("splat", [], TT("i1", 2), "value = 2 : i64"), "must lie in [-1, 1] for i1 results"),
    "splat int kind": (glow_op("splat", [], TT("i32", 2), "value = 1.0 : f32"), "attribute 'value' must be an integer for i32 results"),
    "splat float kind": (glow_op("splat", [], TT("f16", 2), "value = 1 : i64"), "attribute 'value' must be an f32 float"),
    "ir comparison dest": (
        glow_ir_op("element_cmp_lt", [M(2), M(2), M(2)], ["out", "in", "in"]),
        "destination element type f32 must equal the type rule's i1",
    ),
    "ir select cond": (glow_ir_op("element_select", [M(2), MM("i32", 2), M(2), M(2)], ["out", "in", "in", "in"]), "cond must be i1, got i32"),
    "ir and": (glow_ir_op("element_and", [MM("i1", 2), M(2), M(2)], ["out", "in", "in"]), "must be boolean (i1), got f32"),
    "ir float-only": (glow_ir_op("element_erf", [MM("i16", 2), MM("i16", 2)], ["out", "in"]), "must be a float"),
    "ir convert_to": (glow_ir_op("convert_to", [MM("i8", 3), M(2)], ["out", "in"]), "destination shape [3] must equal the shape rule's [2]"),
    "ir gather": (
        glow_ir_op("gather", [M(2, 2), M(3, 4), MM("i64", 2)], ["out", "in", "in"], "axis = 1 : i64"),
        "destination shape [2, 2] must equal the shape rule's [3, 2]",
    ),
    "ir reduce": (
        glow_ir_op("batched_reduce_add", [M(3), M(2, 3)], ["out", "in"], "axes = array<i64: 1>"),
        "destination shape [3] must equal the shape rule's [2]",
    ),
    "ir arg_max": (
        glow_ir_op("arg_max", [MM("i32", 2), M(2, 3)], ["out", "in"], "axis = 1 : i64, keepDims = false"),
        "destination element type i32 must equal the type rule's i64",
    ),
    "ir batch_matmul": (
        glow_ir_op("batch_matmul", [M(2, 3, 3), M(2, 3, 4), M(2, 4, 5)], ["out", "in", "in"]),
        "must equal the shape rule's [2, 3, 5]",
    ),
    "ir conv_transpose has no pads": (
        glow_ir_op("conv_transpose", [M(1, 3, 5, 5), M(1, 2, 3, 3), M(2, 3, 2, 2), M(3)], ["out", "in", "in", "in"], CT_IR),
        "destination shape [1, 3, 5, 5] must equal the shape rule's [1, 3, 6, 6]",
    ),
    "ir splat range": (glow_ir_op("splat", [MM("i8", 2)], ["out"], "value = -129 : i64"), "must lie in [-128, 127] for i8 results"),
    "ir tensor_view type": (
        """
func.func @f(%a: memref<2x3xf32>) {
  %0 = "glow_ir.tensor_view"(%a) : (memref<2x3xf32>) -> memref<6xi32> loc("node7")
  return
}""",
        "view element type i32 must equal its source's f32",
    ),
}
BAD |= BAD_TYPED


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


def test_messages_are_formatted_for_failures_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A good value's check formats no message: printing every value's type in one was most of glow-verify's time
    (HRM-Text QDQ: 2.5 s of 4 s). The proxy: the list of element types, which only a message joins, is never
    iterated on a good graph, and is on a bad one."""
    from glow_mlir.opdefs import types

    class Counted(tuple):
        joins = 0

        def __iter__(self):  # noqa: ANN204
            Counted.joins += 1
            return super().__iter__()

    monkeypatch.setattr(types, "ELEMENT_TYPES", Counted(types.ELEMENT_TYPES))
    g = Graph("ok")
    g.output("y", g.relu(g.add(g.input("x", (2, 3)), g.input("z", (2, 3)))))
    verify(g.module)
    assert Counted.joins == 0
    with make_context(), pytest.raises(VerificationError):
        verify(ir.Module.parse(glow_op("relu", ["tensor<2xf80>"], "tensor<2xf80>")))
    assert Counted.joins == 1


def test_shape_rules_format_shapes_for_failures_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shape rules' messages are formatted on failure only (shapes.require takes them as functions): every
    value's and op's check formatted its shapes, 2.3 million of them in HRM-Text QDQ's compile, 1.3 s. No shape is
    formatted verifying a good graph of convolution, normalization, pooling, reshape, softmax and matmul; a bad
    shape is, in its message."""
    from glow_mlir.opdefs import shapes

    formatted: list[object] = []
    fmt = shapes.fmt
    monkeypatch.setattr(shapes, "fmt", lambda shape: formatted.append(shape) or fmt(shape))
    g = Graph("ok")
    conv = g.convolution(g.input("x", (1, 2, 6, 6)), np.ones((4, 1, 3, 3), np.float32), np.zeros(4, np.float32),
                         pads=(1, 1, 1, 1), group=2)  # fmt: skip
    pooled = g.avg_pool(g.batch_normalization(conv, *[np.ones(4, np.float32)] * 4), (3, 3), (2, 2), (1, 1, 1, 1))
    g.output("y", g.matmul(g.softmax(g.reshape(pooled, (4, 9))), g.constant(np.ones((9, 2), np.float32))))
    verify(g.module)
    assert formatted == []
    with make_context(), pytest.raises(VerificationError, match=r"\[2, 3\] and \[3, 2\]"):
        verify(ir.Module.parse(glow_op("add", [TT("f32", 2, 3), TT("f32", 3, 2)], TT("f32", 2, 3))))
    assert formatted


GOOD_TYPED = [
    glow_op("erf", [TT("f16", 2)], TT("f16", 2)),
    glow_op("add", [TT("i8", 2)] * 2, TT("i8", 2)),
    glow_op("matmul", [TT("i32", 2, 3), TT("i32", 3, 4)], TT("i32", 2, 4)),
    glow_op("cmp_eq", [TT("i1", 2)] * 2, TT("i1", 2)),
    glow_op("convert_to", [TT("i1", 2, 3)], TT("f64", 2, 3)),
    glow_op("select", [TT("i1", 2), TT("i16", 2), TT("i16", 2)], TT("i16", 2)),
    glow_op("xor", [TT("i1", 4)] * 2, TT("i1", 4)),
    glow_op("gather", [TT("i1", 3, 4), TT("i32")], TT("i1", 4), "axis = 0 : i64"),
    glow_op("batched_reduce_add", [TT("i64", 2, 3)], TT("i64"), "axes = array<i64: 0, 1>"),
    glow_op("batched_reduce_max", [T(2, 3)], T(2, 3), "axes = array<i64>"),
    glow_op("arg_min", [TT("i8", 2, 3)], TT("i64", 1, 3), "axis = 0 : i64, keepDims = true"),
    glow_op("batch_matmul", [TT("f64", 2, 3, 4), TT("f64", 2, 4, 5)], TT("f64", 2, 3, 5)),
    glow_op("conv_transpose", [T(1, 4, 3, 3), T(4, 3, 2, 2), T(6)], T(1, 6, 5, 5), CT.format(pads="1, 0, 0, 1", group=2)),
    glow_op("splat", [], TT("i1", 2), "value = true"),
    glow_op("splat", [], TT("i64", 2), "value = -9223372036854775808 : i64"),
    glow_op("splat", [], TT("f64", 2), "value = 0xFF800000 : f32"),
    glow_op("constant", [], TT("i1", 3), "value = dense<[true, false, true]> : tensor<3xi1>"),
    glow_ir_op("element_cmp_lte", [MM("i1", 2), MM("i32", 2), MM("i32", 2)], ["out", "in", "in"]),
    glow_ir_op("conv_transpose", [M(1, 3, 6, 6), M(1, 2, 3, 3), M(2, 3, 2, 2), M(3)], ["out", "in", "in", "in"], CT_IR),
    glow_ir_op("arg_max", [MM("i64", 2, 1), TT("f16", 2, 3).replace("tensor", "memref")], ["out", "in"], "axis = 1 : i64, keepDims = true"),
    glow_ir_op("splat", [MM("i1", 2)], ["out"], "value = 1 : i64"),
    glow_ir_op("insert_tensor", [MM("i64", 4), MM("i64", 2)], ["inout", "in"], "start = array<i64: 1>"),
]


@pytest.mark.parametrize("text", GOOD_TYPED)
def test_good_typed_ops_pass(text: str) -> None:
    with make_context():
        verify(ir.Module.parse(text))


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
