"""What glow-cpu-int8 (int8_rewrite.py) matches int8 products on, and builds them of: per-channel constants, the
sole users of a value, run-time scalars, the data movement between an activation and the product that reads it,
and the packed weights' constant."""

from __future__ import annotations

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.backends.cpu.int8_ops import columns_fit
from glow_mlir.backends.cpu.ops import TO_NHWC
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.graph.sink_transpose import transpose_to


def channels(value: ir.Value, axis: int) -> np.ndarray | None:
    """The f32 vector that `value` repeats along every dim but `axis`, when it is a constant or a broadcast of
    one aligned at `axis`; else None."""
    n = ops.shape(value)[axis]
    op = g.producer(value)
    if op is not None and op.name == "glow.broadcast" and ops.shape(op.operands[0]) == (n,):
        if ir.IntegerAttr(op.attributes["axis"]).value == axis:
            small = g.constant_array(op.operands[0])
            return None if small is None else small.astype(np.float32)
    array = g.constant_array(value)
    if array is None:
        return None
    line = np.moveaxis(array, axis, -1).reshape(-1, n)
    return line[0].astype(np.float32) if (line == line[:1]).all() else None


def sole_user(value: ir.Value, name: str) -> ir.Operation | None:
    """The one op that uses `value`, when it is a `name`."""
    users = g.users(value)
    return users[0] if len(users) == 1 and users[0].name == name else None


def other(op: ir.Operation, value: ir.Value) -> ir.Value:
    """The operand of binary `op` that is not `value`."""
    return op.operands[1] if op.operands[0] == value else op.operands[0]


def exact_weights(value: ir.Value, axis: int) -> np.ndarray | None:
    """The constant `value` as int64, when every element is an integer and each output channel's (along `axis`)
    values, with 0, span at most 255: int8 weights, or wider ones the kernels take as int8 plus a per-channel
    offset (int8_ops.columns_fit, column_offsets: uint8 weights minus their zero point)."""
    w = g.constant_array(value)
    if w is None or np.abs(w).max(initial=0) >= 2**31 or (w != np.round(w)).any():
        return None
    wide = w.astype(np.int64)
    lines = np.moveaxis(wide, axis, -1).reshape(-1, wide.shape[axis])
    return wide if columns_fit(lines).all() else None


def packed(weights: np.ndarray) -> ir.Value:
    """The constant of packed int8 weights (int8_ops.pack_weights)."""
    return g.materialize(weights, ops.tensor_type(weights.shape, ir.IntegerType.get_signless(8)), prefer_splat=False)


def through(value: ir.Value, name: str) -> ir.Value:
    """`value` before any chain of `name` ops (reshapes, broadcasts) that produce it."""
    op = g.producer(value)
    while op is not None and op.name == name:
        value = op.operands[0]
        op = g.producer(value)
    return value


def runtime_scalar(value: ir.Value) -> ir.Value | None:
    """The rank-0 value that `value` broadcasts (or is), when no constant defines it."""
    value = through(through(value, "glow.broadcast"), "glow.reshape")
    return value if ops.shape(value) == () and g.constant_array(value) is None else None


LAYOUT_OPS = ("glow.reshape", "glow.transpose")


def layout_source(value: ir.Value) -> ir.Value:
    """The value that reshapes and transposes (each its source's only reader) turn into `value`."""
    op = g.producer(value)
    while op is not None and op.name in LAYOUT_OPS and len(g.users(op.operands[0])) == 1:
        value = op.operands[0]
        op = g.producer(value)
    return value


def moved(q: ir.Value, operand: ir.Value) -> ir.Value:
    """q moved by the reshapes and transposes that take `layout_source(operand)` to `operand`, at the insertion
    point: the same data movement on the 8-bit activation as on its widened, centred form."""
    chain, value, source = [], operand, layout_source(operand)
    while value != source:
        op = g.producer(value)
        chain.append(op)
        value = op.operands[0]
    for op in reversed(chain):
        dims = ops.shape(op.results[0])
        attrs = {name: op.attributes[name] for name in ("dims", "shuffle") if name in op.attributes}
        q = g.make(op.name, [q], ops.tensor_type(list(dims), ops.element_type(q)), attrs)
    return q


def reshaped(value: ir.Value, dims: tuple[int, ...]) -> ir.Value:
    """`value` reshaped to `dims`, at the insertion point."""
    return g.make("glow.reshape", [value], ops.tensor_type(list(dims), ops.element_type(value)),
                  {"dims": ops.i64_array(list(dims))})  # fmt: skip


def padded(q: ir.Value, zero: int | ir.Value, op: ir.Operation) -> ir.Value:
    """Activation `q` (NCHW) transposed to NHWC and, when glow.convolution `op` pads, inserted into a canvas of its
    zero point (an int, or a rank-0 value of q's type known at run time), whose centred value is 0 as the float
    convolution's padding; at the current insertion point."""
    x = transpose_to(q, TO_NHWC)
    top, left, bottom, right = (int(v) for v in ir.DenseI64ArrayAttr(op.attributes["pads"]))
    if not (top or left or bottom or right):
        return x
    b, h, wd, c = ops.shape(x)
    padded_type = ops.tensor_type([b, h + top + bottom, wd + left + right, c], ops.element_type(q))
    if isinstance(zero, int):
        canvas = g.materialize(np.full(ops.shape(padded_type), zero, g.dtype(q)), padded_type)
    else:
        canvas = g.make("glow.broadcast", [zero], padded_type, {"axis": ops.i64(4)})
    return g.make("glow.insert_tensor", [canvas, x], padded_type, {"start": ops.i64_array([0, top, left, 0])})
