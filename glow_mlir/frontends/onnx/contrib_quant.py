"""onnxruntime's quantized contrib ops (its QOperator format, `quantize_static(..., quant_format=
QuantFormat.QOperator)`, and its optimized saves of quantized models: QLinearAdd, QGemm, DynamicQuantizeMatMul,
...), imported as bodies of default-domain ops like those of contrib.py, whose `body` registry they join. Each is
written as DequantizeLinear -> the float op -> QuantizeLinear, which glow's quantization passes take as a QDQ
model's (docs/QUANTIZATION.md), or as onnxruntime's kernel computes it where that differs (QLinearMul)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import helper

from glow_mlir.frontends.onnx.contrib import Body, body


def _dequantized(b: Body, value: int, scale: int, zero: int, axis: int | None = None) -> str:
    """DequantizeLinear of inputs `value`, `scale`, `zero` (the zero point optional)."""
    inputs = [b.input(value), b.input(scale), *([b.input(zero)] if b.input(zero) else [])]
    return b.add("DequantizeLinear", inputs, **({} if axis is None else {"axis": axis}))


def _quantized(b: Body, x: str, scale: int, zero: int, like: int) -> None:
    """QuantizeLinear of x into output 0 with inputs `scale`, `zero`; an omitted zero point is a 0 of input
    `like`'s type (QuantizeLinear's default would be uint8)."""
    point = b.input(zero) or b.constant(0, b.dtype(like))
    b.add("QuantizeLinear", [x, b.input(scale), point], [b.output(0)])


@body("QLinearAdd")
def qlinear_add(b: Body) -> None:
    """C = quantize(dequantize(A) + dequantize(B)): inputs A, A_scale, A_zero_point, B, B_scale, B_zero_point,
    C_scale, C_zero_point."""
    _quantized(b, b.add("Add", [_dequantized(b, 0, 1, 2), _dequantized(b, 3, 4, 5)]), 6, 7, 0)


def _centred(b: Body, value: int, zero: int) -> str:
    """Input `value` minus input `zero` (if any), in int32."""
    wide = b.add("Cast", [b.input(value)], to=onnx.TensorProto.INT32)
    if not b.input(zero):
        return wide
    return b.add("Sub", [wide, b.add("Cast", [b.input(zero)], to=onnx.TensorProto.INT32)])


@body("QLinearMul")
def qlinear_mul(b: Body) -> None:
    """C = round(float32((A - A_zero_point) x (B - B_zero_point)) x float32(A_scale x B_scale / C_scale) +
    C_zero_point), clamped: onnxruntime's kernel, bit for bit (the product of the dequantized values, rounded
    twice more, lands one step away in 0.1-1 % of elements). Inputs as QLinearAdd's."""
    product = b.add("Cast", [b.add("Mul", [_centred(b, 0, 2), _centred(b, 3, 5)])], to=onnx.TensorProto.FLOAT)
    ratio = b.add("Div", [b.add("Mul", [b.input(1), b.input(4)]), b.input(6)])
    dtype = b.dtype(0)
    shifted = b.add("Mul", [product, ratio])
    if b.input(7):
        shifted = b.add("Add", [shifted, b.add("Cast", [b.input(7)], to=onnx.TensorProto.FLOAT)])
    info = np.iinfo(dtype)
    clamped = b.add("Clip", [b.add("Round", [shifted]), b.constant(info.min, np.float32),
                             b.constant(info.max, np.float32)])  # fmt: skip
    b.add("Cast", [clamped], [b.output(0)], to=helper.np_dtype_to_tensor_dtype(dtype))


@body("QLinearSigmoid", "QLinearLeakyRelu", "QLinearSoftmax", "QLinearGlobalAveragePool", "QLinearAveragePool")
def qlinear_unary(b: Body) -> None:
    """Y = quantize(op(dequantize(X))): inputs X, X_scale, X_zero_point, Y_scale, Y_zero_point; the op's
    attributes (LeakyRelu's alpha, Softmax's axis, the pools' windows); `channels_last` pools in NHWC."""
    op = b.node.op_type.removeprefix("QLinear")
    x = _dequantized(b, 0, 1, 2)
    attrs = b.without("channels_last", "opset")
    last = bool(b.attr("channels_last", 0))
    if op == "Softmax" and int(b.attr("opset", 13)) < 13:
        raise b.refuse("opset < 13 (Softmax over the flattened trailing axes) is not supported")
    if last:
        rank = b.rank(0)
        x = b.add("Transpose", [x], perm=[0, rank - 1, *range(1, rank - 1)])
    y = b.add(op, [x], **attrs)
    if last:
        y = b.add("Transpose", [y], perm=[0, *range(2, rank), 1])
    _quantized(b, y, 3, 4, 0)


def _channels_first(b: Body, op: str, inputs: Sequence[str], attrs: dict[str, object]) -> None:
    """ONNX `op` of `inputs`, whose first is NHWC (onnxruntime's NhwcTransformer, which its EXTENDED level runs on
    8-bit models), on that input made NCHW, its output made NHWC again into output 0; glow's transpose passes
    cancel the pairs between such ops."""
    rank = b.rank(0)
    x = b.add("Transpose", [inputs[0]], perm=[0, rank - 1, *range(1, rank - 1)])
    y = b.add(op, [x, *inputs[1:]], **attrs)
    b.add("Transpose", [y], [b.output(0)], perm=[0, *range(2, rank), 1])


@body("NhwcMaxPool")
def nhwc_max_pool(b: Body) -> None:
    """MaxPool of an NHWC input (8-bit), its attributes."""
    _channels_first(b, "MaxPool", [b.input(0)], dict(b.attrs))


@body("QLinearConv")
def qlinear_conv(b: Body) -> None:
    """ONNX's QLinearConv, of an NHWC input and output where channels_last=1 (the filter stays OIHW)."""
    inputs = [b.input(i) for i in range(len(b.node.input))]
    attrs = b.without("channels_last")
    if int(b.attr("channels_last", 0)):
        _channels_first(b, "QLinearConv", inputs, attrs)
    else:
        b.add("QLinearConv", inputs, [b.output(0)], **attrs)


@body("QLinearConcat")
def qlinear_concat(b: Body) -> None:
    """Y = quantize(concat(dequantize(X_i))): inputs Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per
    input; attribute axis."""
    parts = [_dequantized(b, i, i + 1, i + 2) for i in range(2, len(b.node.input), 3)]
    _quantized(b, b.add("Concat", parts, axis=int(b.attr("axis"))), 0, 1, 2)


@body("QGemm")
def qgemm(b: Body) -> None:
    """alpha x (dequantize(A) @ dequantize(B) + C, int32 at scale A_scale x B_scale), quantized by y_scale and
    y_zero_point, or float where y_scale is omitted: inputs A, a_scale, a_zero_point, B, b_scale (per tensor
    or per output column), b_zero_point, C, y_scale, y_zero_point; attributes alpha, transA, transB."""
    trans_b = int(b.attr("transB", 0))
    per_column = b.types[4] is not None and len(b.types[4].tensor_type.shape.dim) == 1 and \
        b.types[4].tensor_type.shape.dim[0].dim_value > 1
    a = _dequantized(b, 0, 1, 2)
    w = _dequantized(b, 3, 4, 5, axis=(0 if trans_b else 1) if per_column else None)
    inputs = [a, w]
    if b.input(6):
        scale = b.add("Mul", [b.input(1), b.input(4)])
        inputs.append(b.add("Mul", [b.add("Cast", [b.input(6)], to=onnx.TensorProto.FLOAT), scale]))
    # onnxruntime scales the bias too: alpha x (A @ B + C).
    alpha = float(b.attr("alpha", 1.0))
    attrs = {"alpha": alpha, "beta": alpha, "transA": int(b.attr("transA", 0)), "transB": trans_b}
    if not b.input(7):
        b.add("Gemm", inputs, [b.output(0)], **attrs)
        return
    _quantized(b, b.add("Gemm", inputs, **attrs), 7, 8, 0)


def _integer_product(b: Body, a: str, a_zero: str, a_scale: str, w: int, w_scale: int, w_zero: int,
                     bias: int) -> None:  # fmt: skip
    """MatMulInteger(a - a_zero, B - b_zero) as float, times a_scale x b_scale (b_scale per tensor or per
    output column), plus bias, into output 0."""
    product = b.add("MatMulInteger", [a, b.input(w), a_zero, b.input(w_zero)])
    scale = b.add("Mul", [a_scale, b.input(w_scale)])
    y = b.add("Mul", [b.add("Cast", [product], to=onnx.TensorProto.FLOAT), scale])
    if b.input(bias):
        y = b.add("Add", [y, b.input(bias)])
    b.add("Identity", [y], [b.output(0)])


@body("DynamicQuantizeMatMul")
def dynamic_quantize_matmul(b: Body) -> None:
    """A (float) quantized to uint8 per tensor at run time (DynamicQuantizeLinear) times quantized B: inputs A,
    B, b_scale, b_zero_point, bias; what onnxruntime fuses quantize_dynamic's MatMuls into."""
    q, scale, zero = b.fresh("a"), b.fresh("a_scale"), b.fresh("a_zero_point")
    b.add("DynamicQuantizeLinear", [b.input(0)], [q, scale, zero])
    _integer_product(b, q, zero, scale, 1, 2, 3, 4)


@body("MatMulIntegerToFloat")
def matmul_integer_to_float(b: Body) -> None:
    """(A - a_zero_point) @ (B - b_zero_point) x a_scale x b_scale + bias: inputs A, B, a_scale, b_scale,
    a_zero_point, b_zero_point, bias."""
    _integer_product(b, b.input(0), b.input(4), b.input(2), 1, 3, 5, 6)
