"""Outlined functions that differ only in the values of their float constants of arithmetic share one function,
which reads those values from a table that each call passes (outline.py: `Outlined`).

A QDQ model quantizes every activation with a scale and zero point of its own, and each quantization's kernel
held them as constants: HRM-Text QDQ's 2810 kernels were 1185 distinct functions, 59 of them but for their
constants, and every stage after outlining (the schedules, the lowering to LLVM, LLVM itself) worked once per
distinct function.

The table is a `memref<N x f32>` argument, read where each value is used, inside the loops: LLVM cannot hoist the
reads past the loops' stores (the table might alias them), so each is folded into its instruction as a broadcast
memory operand, as a constant's was. Values held in registers instead (scalar arguments, broadcast once) left
HRM-Text QDQ's three-quantization kernel, of 64-lane vectors, 19 vectors of 4 registers each: it spilled and ran
17 % slower.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np
from mlir import ir
from mlir.dialects import arith, memref, vector

from glow_mlir import ops

# The names of the tables' globals start with this.
TABLE_PREFIX = "__glow_constants_"


# The ops whose constant operands a table may hold: those whose code is the same for any operand value. Not
# min and max: arith.maximumf's NaN and signed-zero rules cost LLVM a compare and blend per vector unless it
# knows the other operand (HRM-Text QDQ ran 26 % slower with its clamps' bounds, 0 and 255, in tables).
_TAKING = frozenset(("arith.addf", "arith.subf", "arith.mulf", "arith.divf", "math.fma"))


def parametrizable(function: ir.Operation) -> list[ir.Operation]:
    """The constants of `function` that its table may hold, in walk order: f32 scalars or splat vectors that only
    `_TAKING` ops read (a scale, a zero point; not a fill's value, a loop's initial value or a clamp's bound)."""
    found = []
    for op in ops.walk_ops(function):
        if op.name != "arith.constant" or not _is_f32(op.results[0].type):
            continue
        if isinstance(op.results[0].type, ir.VectorType) and not ir.DenseElementsAttr(op.attributes["value"]).is_splat:
            continue
        if all(use.owner.name in _TAKING for use in op.results[0].uses):
            found.append(op)
    return found


def _is_f32(t: ir.Type) -> bool:
    return isinstance(ir.VectorType(t).element_type if isinstance(t, ir.VectorType) else t, ir.F32Type)


def values_of(constants: list[ir.Operation]) -> list[float]:
    """The value of each of `parametrizable`'s constants."""
    return [_scalar(c.attributes["value"]) for c in constants]


def _scalar(value: ir.Attribute) -> float:
    if isinstance(value, ir.DenseElementsAttr):
        value = ir.DenseElementsAttr(value).get_splat_value()
    return ir.FloatAttr(value).value


def masked_text(function: ir.Operation, constants: list[ir.Operation], print_: Callable[[ir.Operation], str]) -> str:
    """`print_(function)` with `constants` printed as zeros: alike for functions that differ only in them."""
    values = [c.attributes["value"] for c in constants]
    for constant in constants:
        t = constant.results[0].type
        zero = ir.FloatAttr.get(ir.F32Type.get(), 0.0)
        constant.attributes["value"] = ir.DenseElementsAttr.get_splat(t, zero) if isinstance(t, ir.VectorType) else zero
    text = print_(function)
    for constant, value in zip(constants, values, strict=True):
        constant.attributes["value"] = value
    return text


def take_constants(function: ir.Operation) -> None:
    """Makes `function` read its `parametrizable` constants from a table, its last argument: each is a read at the
    top of the function (a splat, broadcast where the constant was), which `sink_reads` moves to its uses once the
    function is scheduled (a linalg body must stay pure arithmetic until it is vectorized)."""
    constants = parametrizable(function)
    block = function.regions[0].blocks[0]
    table_type = ops.memref_type([len(constants)], ir.F32Type.get())
    table = block.add_argument(table_type, function.location)
    signature = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)
    function.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get([a.type for a in block.arguments], signature.results)
    )
    with ir.InsertionPoint.at_block_begin(block), function.location:
        reads = [memref.load(table, [arith.constant(ir.IndexType.get(), i)]) for i in range(len(constants))]
    for constant, read in zip(constants, reads, strict=True):
        value = read
        if isinstance(constant.results[0].type, ir.VectorType):
            with ir.InsertionPoint(constant), constant.location:
                value = vector.broadcast(constant.results[0].type, read)
        constant.results[0].replace_all_uses_with(value)
        constant.erase()


def sink_reads(function: ir.Operation) -> None:
    """Moves each read of `function`'s table (`take_constants`), with its broadcast, to right before each op that
    uses it, unless that op is in a linalg op's body (not vectorized: it stays pure arithmetic)."""
    table = function.regions[0].blocks[0].arguments[-1]
    for use in list(table.uses):
        read = use.owner.operation if isinstance(use.owner, ir.OpView) else use.owner
        if read.name != "memref.load":
            continue
        for read_use in list(read.results[0].uses):
            user = read_use.owner.operation
            if user.name == "vector.broadcast":
                for broadcast_use in list(user.results[0].uses):
                    _sink(read, user, broadcast_use.owner.operation, broadcast_use.operand_number)
                if not list(user.results[0].uses):
                    user.erase()
            else:
                _sink(read, None, user, read_use.operand_number)
        if not list(read.results[0].uses):
            read.erase()


def _sink(read: ir.Operation, broadcast: ir.Operation | None, user: ir.Operation, operand: int) -> None:
    """Gives `user`'s operand `operand` a copy of `read` (and of its `broadcast`) of its own right before it."""
    parent = user.parent
    while parent.name != "func.func":
        if parent.name.startswith("linalg."):
            return
        parent = parent.parent
    value = read.clone(ir.InsertionPoint(user)).results[0]
    if broadcast is not None:
        with ir.InsertionPoint(user), broadcast.location:
            value = vector.broadcast(broadcast.results[0].type, value)
    user.operands[operand] = value


def table(call: ir.Operation, values: list[float], made: set[str]) -> ir.Value:
    """The table of `values` for `call` (read before it): a constant global of the module, one per distinct table;
    `made` holds the names of those made so far, kept by the caller (a symbol table built per call would list
    the module per call)."""
    data = np.array(values, np.float32)
    name = f"{TABLE_PREFIX}{hashlib.sha1(data.tobytes()).hexdigest()[:16]}"
    t = ops.memref_type([len(values)], ir.F32Type.get())
    if name not in made:
        module = call
        while module.name != "builtin.module":
            module = module.parent
        initial = ops.dense_attr(data, ops.tensor_type([len(values)], ir.F32Type.get()))
        with ir.InsertionPoint.at_block_begin(module.regions[0].blocks[0]), ir.Location.unknown():
            memref.GlobalOp(sym_name=name, type_=t, sym_visibility="private", constant=True, initial_value=initial)
        made.add(name)
    with ir.InsertionPoint(call), call.location:
        return memref.get_global(t, name)
