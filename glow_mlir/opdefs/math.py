"""Definitions of the arithmetic ops: elementwise math, comparisons and logic, products, reductions, softmax,
and the fused activations.

An elementwise op is one call of `unary` or `binary`: the name, the element-type rule, the numpy evaluator,
the scalar body and its traits. Everything else (builder method, IRDL, verifier, IRGen, in-place use, the
linalg.generic that lowers it, activation fusion) is derived from that call. docs/NewOperators.md walks
through adding one.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable

import numpy as np
from mlir import ir
from mlir.dialects import arith, math

from glow_mlir.opdefs import reference as ref
from glow_mlir.opdefs import scalar as s
from glow_mlir.opdefs import shapes
from glow_mlir.opdefs import types as t
from glow_mlir.opdefs.base import (
    Activation,
    Attr,
    Evaluator,
    IrDef,
    OpDef,
    Producer,
    Trait,
    TypeRule,
    define,
    define_activation,
)

ELEMENTWISE = Trait.ELEMENTWISE
COMMUTATIVE = Trait.COMMUTATIVE
IDEMPOTENT = Trait.IDEMPOTENT
INVOLUTION = Trait.INVOLUTION

UNARY_OPERANDS = (("dest", "out"), ("src", "in"))
BINARY_OPERANDS = (("dest", "out"), ("lhs", "in"), ("rhs", "in"))


def unary(
    name: str,
    doc: str,
    types: TypeRule,
    evaluate: Evaluator,
    scalar: Callable[[ir.Value], ir.Value],
    *,
    instruction: str | None = None,
    lowered: bool = False,
    activation: bool = False,
    traits: tuple[Trait, ...] = (),
    method: str | None = None,
) -> OpDef:
    """A unary elementwise op; its instruction is `glow_ir.element_<name>` unless `instruction` names it.

    `lowered`: glow-lower rewrites the op into others, so it has no instruction. `activation`: it fuses into a
    convolution or matmul as their activation.
    """
    ir_def = None
    if not lowered:
        ir_def = IrDef(
            instruction or f"element_{name}", UNARY_OPERANDS, doc=f"dest = {name}(src), elementwise.",
            in_place=True, graph=name,
        )
    return define(
        OpDef(
            name, doc, ("input",), shape=lambda o, a, r: shapes.unary(*o), types=types, evaluate=evaluate,
            scalar=lambda x, _: scalar(x[0]), traits=frozenset((ELEMENTWISE, *traits)), ir=ir_def,
            activation=activation, method=method,
        )
    )


def binary(
    name: str,
    doc: str,
    types: TypeRule,
    evaluate: Callable[[np.ndarray, np.ndarray], np.ndarray],
    scalar: Callable[[ir.Value, ir.Value], ir.Value],
    *,
    traits: tuple[Trait, ...] = (),
    method: str | None = None,
) -> OpDef:
    """A binary elementwise op on operands of one shape; its instruction is `glow_ir.element_<name>`."""
    ir_def = IrDef(
        f"element_{name}", BINARY_OPERANDS, doc=f"dest = lhs {name} rhs, elementwise, one shape.", in_place=True,
        graph=name,
    )
    return define(
        OpDef(
            name, doc, ("lhs", "rhs"), shape=lambda o, a, r: shapes.elementwise(*o), types=types,
            evaluate=ref.binary(evaluate), scalar=lambda x, _: scalar(x[0], x[1]),
            traits=frozenset((ELEMENTWISE, *traits)), ir=ir_def, method=method,
        )
    )


# Binary arithmetic on integers or floats.
binary("add", "Elementwise add; both operands and the result have one shape.", t.NUMBER, np.add, s.add,
       traits=(COMMUTATIVE,))
binary("sub", "Elementwise sub; both operands and the result have one shape.", t.NUMBER, np.subtract, s.sub)
binary("mul", "Elementwise mul; both operands and the result have one shape.", t.NUMBER, np.multiply, s.mul,
       traits=(COMMUTATIVE,))
binary("div", "Elementwise div; both operands and the result have one shape.", t.NUMBER, ref.divide, s.div)
binary("max", "Elementwise max; both operands and the result have one shape.", t.NUMBER, np.maximum, s.maximum,
       traits=(COMMUTATIVE, IDEMPOTENT))
binary("min", "Elementwise min; both operands and the result have one shape.", t.NUMBER, np.minimum, s.minimum,
       traits=(COMMUTATIVE, IDEMPOTENT))

# Unary math. Transcendental functions are evaluated in float64 and rounded once.
unary("relu", "Elementwise relu.", t.NUMBER, ref.unary(lambda x: np.maximum(x, np.zeros_like(x))), s.relu,
      lowered=True, activation=True)
unary("sigmoid", "Elementwise sigmoid.", t.FLOAT, ref.sigmoid, s.sigmoid, instruction="sigmoid", activation=True)
unary("tanh", "Elementwise tanh.", t.FLOAT, ref.in_float64(np.tanh), math.tanh, instruction="tanh",
      activation=True)
# An f16 model computes in f32 (glow-lower's widen_half) and rounds each op's result to f16; an op reading that
# result reads it rounded, in f32: one kernel, fusable into the producing convolution or matmul, where a store
# to f16 and a load back were two kernels and an f16 buffer between them.
unary("round_f16", "Elementwise rounding to the nearest f16 (ties to even; beyond 65504: inf), kept in the input's "
      "type: the value an f16 store and load give.", t.same(("f32", "f64"), "f32 or f64"),
      ref.unary(lambda x: x.astype(np.float16).astype(x.dtype)),
      s.round_f16, activation=True)
unary("exp", "Elementwise exp.", t.FLOAT, ref.in_float64(np.exp), math.exp)
unary("sqrt", "Elementwise sqrt.", t.FLOAT, ref.unary(np.sqrt), math.sqrt)
unary("log", "Elementwise natural logarithm.", t.FLOAT, ref.in_float64(np.log), math.log)
unary("abs", "Elementwise absolute value.", t.NUMBER, ref.unary(np.abs), s.absolute)
unary("neg", "Elementwise negation.", t.NUMBER, ref.unary(np.negative), s.negate, traits=(INVOLUTION,))
unary("floor", "Elementwise round down.", t.FLOAT, ref.unary(np.floor), math.floor)
unary("ceil", "Elementwise round up.", t.FLOAT, ref.unary(np.ceil), math.ceil)
# numpy rounds halves to even, as ONNX's Round does.
unary("round", "Elementwise round half to even.", t.FLOAT, ref.unary(np.round), math.roundeven)
unary("erf", "Elementwise error function.", t.FLOAT, ref.in_float64(np.vectorize(pymath.erf, otypes=[np.float64])),
      s.erf)
unary("sin", "Elementwise sine.", t.FLOAT, ref.in_float64(np.sin), math.sin)
unary("cos", "Elementwise cosine.", t.FLOAT, ref.in_float64(np.cos), math.cos)
# The rest of C's math library, as ONNX has them; LLVM has no instruction or intrinsic for them, so they
# become calls of the C library (convert-math-to-libm in backends/cpu/llvm.py).
for _name, _what, _numpy, _math in (
    ("tan", "tangent", np.tan, math.tan),
    ("asin", "arc sine", np.arcsin, math.asin),
    ("acos", "arc cosine", np.arccos, math.acos),
    ("atan", "arc tangent", np.arctan, math.atan),
    ("sinh", "hyperbolic sine", np.sinh, math.sinh),
    ("cosh", "hyperbolic cosine", np.cosh, math.cosh),
    ("asinh", "inverse hyperbolic sine", np.arcsinh, math.asinh),
    ("acosh", "inverse hyperbolic cosine", np.arccosh, math.acosh),
    ("atanh", "inverse hyperbolic tangent", np.arctanh, math.atanh),
):
    unary(_name, f"Elementwise {_what}.", t.FLOAT, ref.in_float64(_numpy), _math)
binary("pow", "Elementwise `lhs ** rhs` (floats); operands of one shape.", t.FLOAT,
       lambda x, y: np.power(x.astype(np.float64), y.astype(np.float64)), math.powf)

# Comparisons: i1 results; ordered float predicates are false on NaN, != is true on it (ONNX).
_compare_doc = "Elementwise `lhs {} rhs` as i1; operands of one shape and element type."
binary("cmp_eq", _compare_doc.format("=="), t.predicate(t.ELEMENT_TYPES, "an element type"), np.equal,
       s.compare(arith.CmpFPredicate.OEQ, arith.CmpIPredicate.eq), traits=(COMMUTATIVE,))
binary("cmp_neq", _compare_doc.format("!="), t.predicate(t.ELEMENT_TYPES, "an element type"), np.not_equal,
       s.compare(arith.CmpFPredicate.UNE, arith.CmpIPredicate.ne), traits=(COMMUTATIVE,))
binary("cmp_lt", _compare_doc.format("<"), t.predicate(t.NUMBERS, "an integer or float"), np.less,
       s.compare(arith.CmpFPredicate.OLT, arith.CmpIPredicate.slt))
binary("cmp_lte", _compare_doc.format("<="), t.predicate(t.NUMBERS, "an integer or float"), np.less_equal,
       s.compare(arith.CmpFPredicate.OLE, arith.CmpIPredicate.sle))
unary("is_nan", "Elementwise `input != input` as i1: true where the float input is NaN.",
      t.predicate(t.FLOATS, "a float"), ref.unary(np.isnan), lambda x: arith.cmpf(arith.CmpFPredicate.UNO, x, x))

# Logic on i1.
binary("and", "Elementwise logical and of i1 tensors of one shape.", t.LOGIC, np.logical_and, arith.andi,
       traits=(COMMUTATIVE, IDEMPOTENT), method="logical_and")
binary("or", "Elementwise logical or of i1 tensors of one shape.", t.LOGIC, np.logical_or, arith.ori,
       traits=(COMMUTATIVE, IDEMPOTENT), method="logical_or")
binary("xor", "Elementwise logical xor of i1 tensors of one shape.", t.LOGIC, np.logical_xor, arith.xori,
       traits=(COMMUTATIVE,), method="logical_xor")
unary("not", "Elementwise logical not of an i1 tensor.", t.LOGIC, ref.unary(np.logical_not), s.logical_not,
      traits=(INVOLUTION,), method="logical_not")

# Bitwise logic and shifts on integers of one type. A shift by a negative amount or by the width or more gives
# 0, or the sign for a signed right shift (ONNX's BitShift).
_bitwise_doc = "Elementwise bitwise {} of integer tensors of one shape and element type."
binary("bitwise_and", _bitwise_doc.format("and"), t.INTEGER, np.bitwise_and, s.bitwise_and,
       traits=(COMMUTATIVE, IDEMPOTENT))
binary("bitwise_or", _bitwise_doc.format("or"), t.INTEGER, np.bitwise_or, s.bitwise_or,
       traits=(COMMUTATIVE, IDEMPOTENT))
binary("bitwise_xor", _bitwise_doc.format("xor"), t.INTEGER, np.bitwise_xor, s.bitwise_xor, traits=(COMMUTATIVE,))
unary("bitwise_not", "Elementwise bitwise not (ones' complement) of an integer tensor.", t.INTEGER,
      ref.unary(np.invert), s.bitwise_not, traits=(INVOLUTION,))


def _shift(left: bool) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """numpy's shift where the amount is in [0, width); 0 or the sign beyond, as ONNX says."""

    def evaluate(x: np.ndarray, amount: np.ndarray) -> np.ndarray:
        bits = x.dtype.itemsize * 8
        inside = (amount >= 0) & (amount < bits)
        kept = np.where(inside, amount, 0).astype(x.dtype)
        if left:
            unsigned = np.dtype(f"u{x.dtype.itemsize}")
            return np.where(inside, np.left_shift(x.view(unsigned), kept.view(unsigned)).view(x.dtype), 0)
        beyond = np.where(x < 0, -1, 0) if x.dtype.kind == "i" else 0
        return np.where(inside, np.right_shift(x, kept), beyond)

    return evaluate


binary("shift_left", "Elementwise `lhs << rhs` of integers of one type; 0 where rhs is negative or >= the width.",
       t.INTEGER, _shift(True), s.shift_left)
binary("shift_right", "Elementwise `lhs >> rhs` (arithmetic for signed, logical for unsigned integers); beyond the "
       "width (or negative rhs) 0, or -1 for a negative signed lhs.", t.INTEGER, _shift(False), s.shift_right)

# Activations that are not ops of their own: glow-lower writes them as arithmetic, glow-fuse-activations
# recognizes that arithmetic. relu, sigmoid and tanh are their ops (`activation=True` above).
define_activation(
    Activation(
        "clip", ("min", "max"), lambda x, a: s.clip(x, a[0], a[1]), lambda y, a: np.minimum(np.maximum(y, a[0]), a[1])
    )
)
define_activation(
    Activation(
        "leaky_relu", ("alpha",), lambda x, a: s.leaky_relu(x, a[0]), lambda y, a: np.where(y >= 0.0, y, a[0] * y)
    )
)

# Products.
define(OpDef(
    "fully_connected", "result[n, j] = sum_k input[n, k] * weights[k, j] + bias[j].", ("input", "weights", "bias"),
    shape=lambda o, a, r: shapes.fully_connected(*o), types=t.FLOAT, evaluate=ref.fully_connected,
))
define(OpDef(
    "matmul", "2-D matrix product.", ("lhs", "rhs"), shape=lambda o, a, r: shapes.matmul(*o),
    types=t.NUMBER_PRODUCT, evaluate=ref.matmul,
    ir=IrDef("matmul", BINARY_OPERANDS, doc="dest = lhs x rhs (2-D).", graph="matmul"),
))
define(OpDef(
    "batch_matmul", "result[b] = lhs[b] x rhs[b] for lhs [B, M, K] and rhs [B, K, N].", ("lhs", "rhs"),
    shape=lambda o, a, r: shapes.batch_matmul(*o), types=t.NUMBER, evaluate=ref.batch_matmul,
    ir=IrDef("batch_matmul", BINARY_OPERANDS, doc="dest[b] = lhs[b] x rhs[b] (3-D).", graph="batch_matmul"),
))
def _nbits_shape(o: list[tuple[int, ...]], a: dict[str, object], _: object) -> tuple[int, int]:
    """input [M, K], weight [N, blocks, bytes], scales and zeros [N, blocks] -> [M, N]; K within the blocks."""
    input, weight, scales, zeros = o
    shapes.rank(input, 2, "input")
    shapes.rank(weight, 3, "weight")
    bits = a["bits"]
    shapes.require(bits in (2, 4, 8), lambda: f"bits must be 2, 4 or 8, got {bits}")
    (m, k), (n, blocks, size) = input, weight
    block = size * 8 // bits
    shapes.require(blocks * block >= k > (blocks - 1) * block,
                   lambda: f"K = {k} does not end in the last of {blocks} blocks of {block}: weight "
                           f"{shapes.fmt(weight)}")
    for name, shape in (("scales", scales), ("zeros", zeros)):
        shapes.require(tuple(shape) == (n, blocks),
                       lambda: f"{name} {shapes.fmt(shape)} is not [N, blocks] = [{n}, {blocks}]")
    return (m, n)


def _nbits_types(operands: list[str], _: str | None) -> str:
    input, weight, scales, zeros = operands
    if weight != "ui8":
        raise shapes.ShapeError(f"weight must be ui8, got {weight}")
    return t.FLOAT([input, scales, zeros], None)


define(OpDef(
    "matmul_nbits",
    "input [M, K] x W [K, N], W given in blocks of 2-, 4- or 8-bit unsigned values (onnxruntime's MatMulNBits): "
    "weight [N, blocks, block x bits / 8] bytes, lowest bits first, W[k, n] = (value - zeros[n, b]) x "
    "scales[n, b] for k in block b. A backend may read the packed values (the CPU's cpu_matmul_nbits); glow-lower "
    "otherwise writes W out of shifts and masks.",
    ("input", "weight", "scales", "zeros"), attrs=(("bits", Attr.INT),), shape=_nbits_shape, types=_nbits_types,
    evaluate=ref.matmul_nbits,
))

define(OpDef(
    "batched_add", "result[b, ...] = batch[b, ...] + slice[...].", ("batch", "slice"),
    shape=lambda o, a, r: shapes.batched_add(*o), types=t.NUMBER, evaluate=ref.binary(np.add),
    ir=IrDef(
        "batched_add", (("dest", "out"), ("batch", "in"), ("slice", "in")),
        doc="dest[b, ...] = batch[b, ...] + slice[...].", in_place=True, graph="batched_add",
    ),
))
_ACTIVATION_ATTRS = (("activation", Attr.STRING), ("activationArgs", Attr.FLOATS))
define(OpDef(
    "fused_matmul",
    "activation(lhs x rhs + bias), bias [N] added to every row: a fully connected layer with its activation, "
    "one kernel.",
    ("lhs", "rhs", "bias"), attrs=_ACTIVATION_ATTRS,
    shape=lambda o, a, r: shapes.fused(a, shapes.fused_matmul(*o)), types=t.FLOAT_PRODUCT,
    evaluate=ref.fused_matmul,
    producer=Producer("glow.fused_matmul", None),
    ir=IrDef(
        "fused_matmul", (("dest", "out"), ("lhs", "in"), ("rhs", "in"), ("bias", "in")),
        attrs=("activation", "activationArgs"), doc="dest = activation(lhs x rhs + bias).", graph="fused_matmul",
    ),
))

# Reductions and softmax.
_REDUCE = {"add": ("sum", np.sum, True), "max": ("maximum", np.max, False), "min": ("minimum", np.min, False),
           "prod": ("product", np.prod, True)}  # fmt: skip
for _kind, (_what, _fn, _widen) in _REDUCE.items():
    define(OpDef(
        f"batched_reduce_{_kind}", f"The {_what} over the dimensions `axes` (sorted, unique), which the result drops.",
        ("input",), attrs=(("axes", Attr.INTS),), shape=lambda o, a, r: shapes.batched_reduce(*o, a["axes"]),
        types=t.NUMBER, evaluate=ref.reduce(_fn, widen=_widen),
        ir=IrDef(
            f"batched_reduce_{_kind}", UNARY_OPERANDS, attrs=("axes",),
            doc=f"dest = the {_what} of src over `axes`, which dest drops.", graph=f"batched_reduce_{_kind}",
        ),
    ))
for _kind, _fn in (("max", np.argmax), ("min", np.argmin)):
    define(OpDef(
        f"arg_{_kind}", f"Index (i64) of the first {_kind}imum along `axis`; `keepDims` keeps that dimension as 1.",
        ("input",), attrs=(("axis", Attr.INT), ("keepDims", Attr.BOOL)),
        shape=lambda o, a, r: shapes.arg_reduce(*o, a["axis"], a["keepDims"]),
        types=t.index_of(t.NUMBERS, "an integer or float"), evaluate=ref.arg_reduce(_fn),
        ir=IrDef(
            f"arg_{_kind}", UNARY_OPERANDS, attrs=("axis", "keepDims"),
            doc=f"dest (i64) = index of the first {_kind}imum of src along axis.", graph=f"arg_{_kind}",
        ),
    ))
define(OpDef(
    "softmax", "Softmax over the last dimension.", ("input",), shape=lambda o, a, r: shapes.softmax(*o),
    types=t.FLOAT, evaluate=ref.softmax,
    ir=IrDef("softmax", UNARY_OPERANDS, doc="Softmax over the last dimension.", graph="softmax"),
))
define(OpDef(
    "det", "The determinant of each square matrix in the last two dims (ONNX Det): [*, N, N] -> [*].", ("input",),
    shape=lambda o, a, r: shapes.det(*o), types=t.same(("f32", "f64"), "f32 or f64"), evaluate=ref.det,
    ir=IrDef("det", UNARY_OPERANDS, doc="dest = the determinant of each N x N matrix of src (LU, partial pivoting).",
             graph="det"),
))
