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
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.backends.cpu.int8_ops import TO_NCHW, TO_NHWC
from glow_mlir.opdefs.base import Attr
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.graph.sink_transpose import transpose_to

# The convolution the rule fuses into, and what it becomes.
CONV, RESIDUAL = "glow.cpu_int8_conv_nhwc", "glow.cpu_int8_conv_nhwc_add"


def _plain(op: ir.Operation) -> bool:
    """Whether int8 product `op` has an f32 result and an empty epilogue (no relu, cap or quantization yet):
    the addend comes before them."""
    attrs = (ir.BoolAttr(op.attributes["relu"]).value, ir.FloatAttr(op.attributes["clip"]).value,
             ir.FloatAttr(op.attributes["output_scale"]).value)  # fmt: skip
    return g.dtype(op.results[0]) == np.float32 and not any(attrs)


def fuse_residual(op: ir.Operation) -> ir.Value | None:
    """cpu_int8_conv_nhwc `op` with the add that alone uses its result (through the transpose back to NCHW) as
    cpu_int8_conv_nhwc_add, the add's other operand transposed to NHWC as its addend (glow-sink-transpose
    cancels that transpose against the shortcut's own); replaces the add. None when `op` is not so used."""
    if op.name != CONV or not _plain(op):
        return None
    users = g.users(op.results[0])
    if len(users) != 1 or users[0].name != "glow.transpose" or ops.ints(users[0], "shuffle") != list(TO_NCHW):
        return None
    back = users[0].results[0]
    adds = g.users(back)
    if len(adds) != 1 or adds[0].name != "glow.add":
        return None
    add = adds[0]
    shortcut = add.operands[1] if add.operands[0] == back else add.operands[0]
    if shortcut == back or shortcut.type != back.type:
        return None
    with ir.InsertionPoint(add), add.location:
        addend = transpose_to(shortcut, TO_NHWC)
        fused = g.make(RESIDUAL, [*op.operands, addend], op.results[0].type, g.attributes(op))
        result = transpose_to(fused, TO_NCHW)
    g.replace(add, result)
    return result


def _sole(value: ir.Value, name: str) -> ir.Operation | None:
    """The one op that uses `value` as its first operand, when it is a `name`."""
    users = g.users(value)
    return users[0] if len(users) == 1 and users[0].name == name and users[0].operands[0] == value else None


# The uint8 QuantizeLinear chain after its div (quantize.py's `_Emitter.quantize`, int8_rewrite's `_unsigned`):
# each step's op and its constant operand (the scale, the zero point, or the bound itself).
_CHAIN = (("glow.round", None), ("glow.add", "zero"), ("glow.max", 0), ("glow.min", 255))


def quantization(divide: ir.Operation) -> tuple[float, int, ir.Operation] | None:
    """(scale, zero point, its convert_to) of the uint8 QuantizeLinear that starts at glow.div `divide` (div by s,
    round, add z, max 0, min 255, convert_to ui8, each the only user of the one before), when it is one."""
    scale = g.uniform_value(divide.operands[1])
    value, zero = divide.results[0], None
    for name, what in _CHAIN:
        step = _sole(value, name)
        if step is None:
            return None
        if what is not None:
            constant = g.uniform_value(step.operands[1])
            if constant is None or (isinstance(what, int) and constant != what):
                return None
            zero = constant if what == "zero" else zero
        value = step.results[0]
    last = _sole(value, "glow.convert_to")
    if last is None or g.dtype(last.results[0]) != np.uint8 or scale is None or not scale > 0:
        return None
    if zero is None or zero != int(zero) or not 0 <= zero <= 255:
        return None
    return float(scale), int(zero), last


def quantize_pass(divide: ir.Operation) -> ir.Value | None:
    """The uint8 QuantizeLinear starting at glow.div `divide` (`quantization`) as one cpu_quantize_u8, replacing
    its convert_to; applied before the transpose that makes its f32 input, if one does, and transposed after it,
    so that glow-sink-transpose cancels it against the next convolution's. None when it is no such chain."""
    found = quantization(divide)
    value = divide.operands[0]
    if found is None or g.dtype(value) != np.float32:
        return None
    scale, zero, last = found
    source = g.producer(value)
    shuffle = None
    if source is not None and source.name == "glow.transpose":
        value, shuffle = source.operands[0], ops.ints(source, "shuffle")
    attrs = {"output_scale": Attr.FLOAT.make(scale), "output_zero": Attr.FLOAT.make(zero)}
    with ir.InsertionPoint(last), last.location:
        q = g.make("glow.cpu_quantize_u8", [value], ops.tensor_type(ops.shape(value), ir.IntegerType.get_unsigned(8)),
                   attrs)  # fmt: skip
        if shuffle is not None:
            q = transpose_to(q, shuffle)
    g.replace(last, q)
    return q
