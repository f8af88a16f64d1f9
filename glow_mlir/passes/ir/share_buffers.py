"""glow-ir-share-buffers: lets an elementwise instruction write its result over an operand that dies there
(Glow's ShareBuffers, for the in-place case).

IRGen gives every result a fresh activation. When an elementwise instruction (`utils.IN_PLACE`: the
arithmetic, logic, comparison and unary math instructions, select, convert_to, batched_add, copy) reads an
activation for the last time and writes a fresh buffer of the same type, it can write into the operand
instead: each output element is computed from the operand elements at its index, read before being
overwritten. The fresh alloc disappears and the operand's buffer lives on until the result's dealloc, so the
two live ranges become one and glow-allocate needs one buffer where it needed two at that instruction. A
chain such as exp(sigmoid(tanh(x))) then runs in a single buffer.

The result buffer must be fresh (nothing touched it before the instruction) and the operand must be an
activation (never an input, output or constant) that no later instruction reads or writes, and of exactly the
result's type (shape and element type; a comparison's i1 result never shares a float operand's buffer).
"""

from __future__ import annotations

from mlir import ir

from glow_mlir import ops
from glow_mlir.passes.ir import utils as u
from glow_mlir.passes.registry import register


def share_buffers_function(function: ir.Operation) -> bool:
    """One forward sweep: sharing at one instruction only lengthens the operand's life past it, so it never
    enables a share at an earlier instruction."""
    positions = u.Positions(u.body(function))
    last = _last_accesses(positions.order)
    deallocs = u.deallocs_by_alloc(u.body(function))
    changed = False
    # Sharing erases allocs and deallocs only, never an instruction, so this list stays valid.
    for op in [op for op in positions.order if op.name in u.IN_PLACE]:
        changed |= _share(op, positions, last, deallocs)
    return changed


def _last_accesses(order: list[ir.Operation]) -> dict[int, ir.Operation]:
    """The last instruction that accesses each activation (through views too), by the `u.address` of its alloc.

    Kept for the sweep rather than asked of `Positions.last_access` per instruction, which lists every access of
    the operand: a buffer that sharing makes hold a chain of n in-place instructions made the pass quadratic in
    n (HRM-Text QDQ's residual stream: 583 of them, 2.8 s of its 4.8 s)."""
    last: dict[int, ir.Operation] = {}
    for op in order:
        if u.is_instruction(op):
            for value in op.operands:
                buffer = u.root(value)
                if u.is_activation(buffer):
                    last[u.address(u.producer(buffer))] = op
    return last


def _share(
    op: ir.Operation, positions: u.Positions, last: dict[int, ir.Operation], deallocs: dict[int, ir.Operation]
) -> bool:
    """Makes `op` write over an @in operand that dies there, when the rules allow; returns whether it did.
    Keeps `last` and `deallocs` current: the operand's buffer then lives on through the alloc's accesses, all
    after `op`."""
    at = positions[op]
    roles = u.operand_roles(op)
    dest = next(v for v, role in roles if role == "out")
    alloc = u.producer(dest)
    if alloc is None or alloc.name != u.ALLOC or positions.used_before(dest, at):
        return False
    for source, role in roles:
        buffer = u.root(source)
        if (
            role == "in"
            and source.type == dest.type
            and u.is_activation(buffer)
            and buffer != dest
            and positions[last[u.address(u.producer(buffer))]] == at
        ):
            # Taken before the alloc is erased: a later op may be created at its address.
            last[u.address(u.producer(buffer))] = last.pop(u.address(alloc))
            u.retarget(alloc, source, positions, deallocs)
            return True
    return False


@register("glow-ir-share-buffers")
def ir_share_buffers(module: ir.Module) -> None:
    """Let elementwise glow_ir instructions write over an @in buffer that dies there (in place)."""
    for function in ops.functions(module):
        share_buffers_function(function)
