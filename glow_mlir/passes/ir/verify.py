"""glow-ir-verify: checks the memory discipline of `glow_ir` functions (Glow's IRVerify).

glow-verify checks each instruction's shapes; this pass checks how instructions use buffers over time, which
is what glow-allocate's plan and every IR optimization rely on. Walking the block in order, it requires:

1. every `dealloc_activation` ends a buffer from `alloc_activation`, and every such buffer is deallocated
   exactly once;
2. no instruction reads or writes a buffer, and no `tensor_view` or `block_view` is taken of it, after its
   dealloc (accesses through views are accesses of the viewed buffer);
3. no @in operand reads an activation or an output argument before some instruction wrote it (inputs and
   constant globals hold data from the start). An @inout operand may meet a buffer nothing wrote yet: the
   insert_tensor instructions of a concat each fill a part of a fresh buffer (which parts are covered is not
   tracked);
4. no instruction writes an input argument or a constant global;
5. an instruction whose @out or @inout buffer is also one of its @in buffers must be an elementwise
   instruction (`utils.IN_PLACE`) writing through @out with both operands of one type: any other kernel
   would read elements it already overwrote.

It changes nothing and raises `VerificationError` naming the instruction, its location and the broken rule,
with the buffer as the IR prints it. It runs between glow-irgen and glow-allocate (allocation removes the
allocs and deallocs it reads).
"""

from __future__ import annotations

from mlir import ir

from glow_mlir import ops
from glow_mlir.errors import VerificationError
from glow_mlir.passes.ir import utils as u
from glow_mlir.passes.registry import register


def _fail(op: ir.Operation, rule: str) -> VerificationError:
    return VerificationError(op.name, ops.location_text(op), rule)


def _name(value: ir.Value) -> str:
    return value.get_name()


def verify_function(function: ir.Operation) -> None:
    block = u.body(function)
    outputs = u.output_arguments(function)
    inputs = {a for a in block.arguments if a not in outputs}
    written: set[ir.Value] = set(inputs)
    freed: set[ir.Value] = set()
    allocs: list[ir.Operation] = []
    for op in u.block_ops(block):
        if op.name == u.ALLOC:
            allocs.append(op)
        elif op.name == u.DEALLOC:
            buffer = op.operands[0]
            if not u.is_activation(buffer) or u.root(buffer) != buffer:
                raise _fail(op, f"deallocates {_name(buffer)}, which is not a buffer from glow_ir.alloc_activation")
            if buffer in freed:
                raise _fail(op, f"deallocates {_name(buffer)} a second time")
            freed.add(buffer)
        elif op.name in u.VIEWS:
            source = u.root(op.operands[0])
            if source in freed:
                raise _fail(op, f"takes a view of {_name(source)} after its dealloc")
        elif op.name.startswith(ops.GLOW_IR):
            _check_instruction(op, written, freed, inputs)
        elif op.name == u.GLOBAL:
            written.add(op.results[0])
    for alloc in allocs:
        if alloc.results[0] not in freed:
            raise _fail(alloc, f"allocates {_name(alloc.results[0])}, which is never deallocated")


def _check_instruction(op: ir.Operation, written: set[ir.Value], freed: set[ir.Value], inputs: set[ir.Value]) -> None:
    roles = u.operand_roles(op)
    for value, role in roles:
        buffer = u.root(value)
        verb = "reads" if role == "in" else "writes"
        if buffer in freed:
            raise _fail(op, f"{verb} {_name(buffer)} after its dealloc")
        if role == "in" and buffer not in written:
            raise _fail(op, f"reads {_name(buffer)} before any instruction wrote it")
        if role != "in" and (buffer in inputs or u.is_global(buffer)):
            kind = "an input argument" if buffer in inputs else "a constant global"
            raise _fail(op, f"writes {_name(buffer)}, which is {kind}")
    sources = [(v, u.root(v)) for v, role in roles if role == "in"]
    for dest, role in roles:
        if role == "in":
            continue
        for source, buffer in sources:
            if buffer != u.root(dest):
                continue
            if op.name not in u.IN_PLACE or role != "out" or source.type != dest.type:
                raise _fail(
                    op,
                    f"reads {_name(buffer)} through an @in operand while writing it through @{role}: only an "
                    "elementwise instruction may work in place, with both operands of one type",
                )
    for value, role in roles:
        if role != "in":
            written.add(u.root(value))


@register("glow-ir-verify")
def ir_verify(module: ir.Module) -> None:
    """Check glow_ir memory discipline: alloc/dealloc pairing, no use after dealloc or read before write."""
    for function in ops.functions(module):
        verify_function(function)
