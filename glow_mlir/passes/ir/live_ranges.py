"""glow-ir-hoist-dealloc and glow-ir-sink-alloc: shrink every activation's live range to its accesses
(Glow's HoistDealloc and SinkAllocas).

glow-allocate sees a buffer live from its `alloc_activation` to its last use (its dealloc, or a later read
through a view), so buffers whose brackets are wider than their accesses keep memory that others could use.
IRGen places them tightly, but a front end or IR rewrite (copy elimination and buffer sharing move deallocs
down, dead-store elimination removes the last accesses of some buffers) can leave them loose:

- glow-ir-hoist-dealloc moves each dealloc right after the last instruction that reads or writes its buffer
  (through views too), or right after the alloc when nothing does;
- glow-ir-sink-alloc moves each alloc right before the first op that uses it, and first each tensor_view
  right before its first user, since a view taken early would otherwise pin its buffer's alloc there.

Both only move ops between instructions that do not touch the buffer, so results are unchanged.
"""

from __future__ import annotations

from mlir import ir

from glow_mlir import ops
from glow_mlir.passes.ir import utils as u
from glow_mlir.passes.registry import register


def hoist_deallocs(function: ir.Operation) -> bool:
    positions = u.Positions(u.body(function))
    changed = False
    for dealloc in [op for op in positions.order if op.name == u.DEALLOC]:
        buffer = dealloc.operands[0]
        last = positions.last_access(buffer)
        anchor = positions.at(last) if last >= 0 else u.producer(buffer)
        if positions[anchor] < positions[dealloc] and positions.after(anchor) != dealloc:
            positions.move_after(dealloc, anchor)
            changed = True
    return changed


def sink_allocs(function: ir.Operation) -> bool:
    positions = u.Positions(u.body(function))
    changed = False
    # Views of views come later in the block, so sinking in reverse order moves the innermost first.
    views = [op for op in positions.order if op.name in u.VIEWS]
    allocs = [op for op in positions.order if op.name == u.ALLOC]
    for op in [*reversed(views), *allocs]:
        first = min((positions[user] for user in u.users(op.results[0])), default=None)
        if first is not None and positions.after(op) != positions.at(first):
            positions.move_before(op, positions.at(first))
            changed = True
    return changed


@register("glow-ir-hoist-dealloc")
def ir_hoist_dealloc(module: ir.Module) -> None:
    """Move each glow_ir dealloc right after the last instruction that accesses its buffer."""
    for function in ops.functions(module):
        hoist_deallocs(function)


@register("glow-ir-sink-alloc")
def ir_sink_alloc(module: ir.Module) -> None:
    """Move each glow_ir alloc (and tensor_view) right before its first user."""
    for function in ops.functions(module):
        sink_allocs(function)
