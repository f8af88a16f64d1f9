"""glow-cpu-int8's residual rule: an int8 convolution whose f32 result only feeds `add(., shortcut)` (a residual
block's output, ResNet's) becomes `glow.cpu_int8_conv_nhwc_add`, whose epilogue adds the shortcut while the
accumulators are in registers; int8_rewrite.fuse_output then folds the relu and the next product's quantization
that follow into the same epilogue, as for any product.

Without it the block's output went through passes of its own over the whole tensor (add, relu, quantize), which
profiling showed at a quarter of ResNet-50's int8 time (docs/QUANTIZATION.md). The sum is the graph's: float32
(conv + shortcut), the same single rounding whichever operand order the add had.

A block output that the next block's add reads too stays f32; its uint8 quantization for the next body, like
any such chain no epilogue took, becomes one `glow.cpu_quantize_u8` pass (`quantize_pass`), where the graph's
six ops ran as several elementwise kernels. `quantization` matches that chain for both.

An imported QDQ model (onnxruntime's quantize_static) writes the block as add(DQ(Q(conv)), DQ(shortcut)) -> Q:
both operands dequantized uint8 tensors. The rule takes the convolution's Q -> DQ into the epilogue
(`product_scale`) and reads the uint8 shortcut itself (`addend_scale`), so the block's output is the one uint8
tensor the next block's body and add read, with no f32 tensor in between; the matchers of dequantized inputs
(`quantized_input`, `dequantized_input`) live here for that and for int8_rewrite's QDQ products.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.backends.cpu.int8_ops import BYTES, residual_attributes
from glow_mlir.backends.cpu.ops import TO_NCHW, TO_NHWC
from glow_mlir.opdefs.base import Attr
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.graph.sink_transpose import transpose_to

# The convolution the rule fuses into, and what it becomes.
CONV, RESIDUAL = "glow.cpu_int8_conv_nhwc", "glow.cpu_int8_conv_nhwc_add"


def quantized_input(value: ir.Value) -> tuple[ir.Value, int] | None:
    """(q, z) when `value` is convert_to(q : i8 or ui8 -> i32, f32 or f64), minus a uniform zero point z in
    q's range or not."""
    zero = 0
    op = g.producer(value)
    if op is not None and op.name == "glow.sub":
        uniform = g.uniform_value(op.operands[1])
        if uniform is None:
            return None
        zero, op = uniform, g.producer(op.operands[0])
    if op is None or op.name != "glow.convert_to" or g.dtype(op.operands[0]) not in BYTES:
        return None
    info = np.iinfo(g.dtype(op.operands[0]))
    if zero != int(zero) or not info.min <= zero <= info.max:
        return None
    return op.operands[0], int(zero)


def dequantized_input(value: ir.Value) -> tuple[ir.Value, int, float] | None:
    """(q, z, s) when `value` is a per-tensor DequantizeLinear as the ONNX importer writes it, mul(convert_to(q)
    [- z], s) with s uniform."""
    op = g.producer(value)
    if op is None or op.name != "glow.mul":
        return None
    for centred, scale in ((op.operands[0], op.operands[1]), (op.operands[1], op.operands[0])):
        s, found = g.uniform_value(scale), quantized_input(centred)
        if s is not None and found is not None and s > 0:
            return found[0], found[1], float(s)
    return None


def _plain(op: ir.Operation) -> bool:
    """Whether int8 product `op` has an f32 result and an empty epilogue (no relu, cap or quantization yet):
    the addend comes before them."""
    attrs = (ir.BoolAttr(op.attributes["relu"]).value, ir.FloatAttr(op.attributes["clip"]).value,
             ir.FloatAttr(op.attributes["output_scale"]).value)  # fmt: skip
    return g.dtype(op.results[0]) == np.float32 and not any(attrs)


def _dequantized_product(back: ir.Value) -> tuple[float, int, ir.Value] | None:
    """(scale, zero point, the dequantized value) when f32 `back` only goes through a uint8 QuantizeLinear and a
    DequantizeLinear of the same scale and zero point (an imported QDQ model's convolution output on its way to
    a residual add), each op the only user of the one before."""
    divide = sole(back, "glow.div")
    found = None if divide is None else quantization(divide)
    if found is None:
        return None
    scale, zero, last = found
    value = last.results[0]
    while len(users := g.users(value)) == 1 and users[0].name in ("glow.convert_to", "glow.sub", "glow.mul"):
        value = users[0].results[0]
        if users[0].name == "glow.mul":
            break
    dequantized = dequantized_input(value)
    if dequantized is None or dequantized[0] != last.results[0] or dequantized[1:] != (zero, scale):
        return None
    return scale, zero, value


def fuse_residual(op: ir.Operation) -> ir.Value | None:
    """cpu_int8_conv_nhwc `op` with the add that alone uses its result (through the transpose back to NCHW, and
    in an imported QDQ model through its uint8 QuantizeLinear and DequantizeLinear: `_dequantized_product`) as
    cpu_int8_conv_nhwc_add, the add's other operand transposed to NHWC as its addend (glow-sink-transpose
    cancels that transpose against the shortcut's own); a dequantized uint8 shortcut is the addend as it is,
    its scale and zero point the op's. Replaces the add. None when `op` is not so used."""
    if op.name != CONV or not _plain(op):
        return None
    users = g.users(op.results[0])
    if len(users) != 1 or users[0].name != "glow.transpose" or ops.ints(users[0], "shuffle") != list(TO_NCHW):
        return None
    back = users[0].results[0]
    product = _dequantized_product(back)
    if product is not None:
        back = product[2]
    adds = g.users(back)
    if len(adds) != 1 or adds[0].name != "glow.add":
        return None
    add = adds[0]
    shortcut = add.operands[1] if add.operands[0] == back else add.operands[0]
    if shortcut == back or shortcut.type != back.type:
        return None
    product_scale, product_zero = (0.0, 0) if product is None else product[:2]
    addend_scale, addend_zero = 0.0, 0
    dequantized = dequantized_input(shortcut)
    if dequantized is not None and g.dtype(dequantized[0]) == np.uint8:
        shortcut, addend_zero, addend_scale = dequantized
    attrs = residual_attributes(product_scale, product_zero, addend_scale, addend_zero)
    with ir.InsertionPoint(add), add.location:
        addend = transpose_to(shortcut, TO_NHWC)
        fused = g.make(RESIDUAL, [*op.operands, addend], op.results[0].type, g.attributes(op) | attrs)
        result = transpose_to(fused, TO_NCHW)
    g.replace(add, result)
    return result


def sole(value: ir.Value, name: str) -> ir.Operation | None:
    """The one op that uses `value` as its first operand, when it is a `name`."""
    users = g.users(value)
    return users[0] if len(users) == 1 and users[0].name == name and users[0].operands[0] == value else None


# The uint8 QuantizeLinear chain after its div (quantize.py's `_Emitter.quantize`, int8_rewrite's `_unsigned`, the
# ONNX importer's QuantizeLinear): each step's op and its constant operand (the zero point, or the bound itself).
# The add of the zero point is absent when it is 0 (the importer omits it): onnxruntime's QDQ models quantize every
# relu'd activation so, the relu folded into the clamp at 0.
_CHAIN = (("glow.round", None), ("glow.add", "zero"), ("glow.max", 0), ("glow.min", 255))


def quantization(divide: ir.Operation) -> tuple[float, int, ir.Operation] | None:
    """(scale, zero point, its convert_to) of the uint8 QuantizeLinear that starts at glow.div `divide` (div by s,
    round, [add z,] max 0, min 255, convert_to ui8, each the only user of the one before), when it is one."""
    scale = g.uniform_value(divide.operands[1])
    value, zero = divide.results[0], 0.0
    for name, what in _CHAIN:
        step = sole(value, name)
        if step is None and what == "zero":
            continue
        if step is None:
            return None
        if what is not None:
            constant = g.uniform_value(step.operands[1])
            if constant is None or (isinstance(what, int) and constant != what):
                return None
            zero = constant if what == "zero" else zero
        value = step.results[0]
    last = sole(value, "glow.convert_to")
    if last is None or g.dtype(last.results[0]) != np.uint8 or scale is None or not scale > 0:
        return None
    if zero != int(zero) or not 0 <= zero <= 255:
        return None
    return float(scale), int(zero), last


def _only_dequantized(q: ir.Value) -> bool:
    """Whether every reader of uint8 `q` converts it back to f32: a QDQ model's float island (a GELU, a
    LayerNorm, a squeeze-and-excite gate, quantized and dequantized after each op). Its quantization then stays
    elementwise graph ops, which glow-quant-fold-convert-pairs joins to the dequantization: one elementwise chain
    with the ops around it instead of a pass of its own whose bytes are read back at once (QDQ MambaOut-femto
    made 353 such passes). The layouts agree once glow-sink-transpose moves transposes through the chains and
    cpu_quantize_u8."""
    users = g.users(q)
    return bool(users) and all(u.name == "glow.convert_to" and g.dtype(u.results[0]) == np.float32 for u in users)


def quantize_pass(divide: ir.Operation) -> ir.Value | None:
    """The uint8 QuantizeLinear starting at glow.div `divide` (`quantization`) as one cpu_quantize_u8, replacing
    its convert_to, unless the quantization is only read back as f32 (`_only_dequantized`). Its layout is
    glow-sink-transpose's to settle: cpu_quantize_u8 is elementwise, so the transposes glow-cpu-layout puts
    around the float convolutions move through it and cancel against the next int8 product's (MobileNetV2's QDQ
    model, quantizing each depthwise layer's NCHW output, kept 35 real transposes while they could not: 8.4 ms a
    run against 6.5 with its chains left elementwise). None when it is no such chain."""
    found = quantization(divide)
    value = divide.operands[0]
    if found is None or g.dtype(value) != np.float32:
        return None
    scale, zero, last = found
    if _only_dequantized(last.results[0]):
        return None
    attrs = {"output_scale": Attr.FLOAT.make(scale), "output_zero": Attr.FLOAT.make(zero)}
    with ir.InsertionPoint(last), last.location:
        q = g.make("glow.cpu_quantize_u8", [value], ops.tensor_type(ops.shape(value), ir.IntegerType.get_unsigned(8)),
                   attrs)  # fmt: skip
    g.replace(last, q)
    return q
