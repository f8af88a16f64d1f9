"""glow-ir-dse: dead-store elimination on `glow_ir` (Glow's DeadStoreElimination and DeleteDeadAllocs).

An instruction whose every written buffer is overwritten or freed before anything reads it computes nothing
observable: its work and the buffer's live range are wasted. Graph-level DCE catches unused values, but
rewrites at the IR level (copy elimination retargeting a producer, buffer sharing) and IRGen's own patterns
leave such stores behind. A backward walk keeps the set of buffers that will be read before being fully
overwritten; output arguments are live at the end. An instruction is removed when none of the buffers it
writes (@out or @inout) is live and each is an activation or an output argument; otherwise @out operands kill
their buffers (they write all of it) and @in / @inout operands make theirs live.

Then every activation that no instruction reads or writes any more is deleted with its views and dealloc.
"""

from __future__ import annotations

from mlir import ir

from glow_mlir import ops
from glow_mlir.passes.ir import utils as u
from glow_mlir.passes.registry import register


def eliminate_dead_stores(function: ir.Operation) -> bool:
    block = u.body(function)
    outputs = u.output_arguments(function)
    live: set[ir.Value] = set(outputs)
    changed = False
    for op in reversed(u.block_ops(block)):
        if not u.is_instruction(op):
            continue
        written = u.writes(op)
        if all((u.is_activation(b) or b in outputs) and b not in live for b, _ in written):
            op.erase()
            changed = True
            continue
        for buffer, role in written:
            if role == "out":
                live.discard(buffer)
        live.update(u.reads(op))
    return delete_dead_allocs(block) or changed


def delete_dead_allocs(block: ir.Block) -> bool:
    """Erases every activation that no instruction accesses, with its views and deallocs."""
    changed = False
    for alloc in [op for op in u.block_ops(block) if op.name == u.ALLOC]:
        buffer = alloc.results[0]
        if u.accessing(buffer):
            continue
        # Views of views first, so that every op is unused when it is erased.
        for value in reversed(u.views_and_self(buffer)):
            for user in u.users(value):
                user.erase()
            if value != buffer:
                u.producer(value).erase()
        alloc.erase()
        changed = True
    return changed


@register("glow-ir-dse")
def ir_dse(module: ir.Module) -> None:
    """Remove glow_ir instructions whose results are never read, then allocs nothing uses (DeleteDeadAllocs)."""
    for function in ops.functions(module):
        eliminate_dead_stores(function)
