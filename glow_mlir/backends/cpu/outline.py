"""Kernel outlining for glow-cpu-schedule: each scheduled kernel moves into a private function of its own,
called in its place, before the transform sequence runs (why: see `outline`); afterwards, so does every loop
nest that no recipe scheduled (why: see `outline_leftovers`)."""

from __future__ import annotations

import functools

from mlir import ir
from mlir.dialects import func

from glow_mlir import ops

# The names of outlined functions start with this; glow-to-llvm keeps LLVM from inlining them back and from
# unrolling their loops (llvm.py).
OUTLINED_PREFIX = "__glow_"
KERNEL_PREFIX = f"{OUTLINED_PREFIX}kernel"
LOOPS_PREFIX = f"{OUTLINED_PREFIX}loops"


def outline_leftovers(func: ir.Operation) -> None:
    """Moves every linalg op left in `func` (one that no recipe scheduled: a layout transpose, a concat's copy,
    an elementwise op on an odd shape) into a private function of its own, called in its place.

    convert-linalg-to-loops makes each of them a scalar loop nest, and LLVM's loop passes (IndVarSimplify,
    LoopVectorize) cost more than linearly in the size of the function that holds them: in DenseNet-121's
    entry function, with about 300 such nests, they took most of LLVM's time (notes: "Where compile time
    goes"). As functions of their own they cost each about what a kernel costs.
    """
    name = ir.StringAttr(func.attributes["sym_name"]).value
    leftovers = [
        op for op in ops.walk_ops(func) if op.name.startswith("linalg.") and not op.parent.name.startswith("linalg.")
    ]
    for i, op in enumerate(leftovers):
        outline(op, f"{LOOPS_PREFIX}_{name}_{i}")


def outline(op: ir.Operation, name: str) -> None:
    """Moves kernel `op` into a private function of its own, called in its place.

    Hoisting the accumulators out of the reduction loop (the heart of every register-tiled kernel) gives up
    on transfers whose buffer comes from a view op (notes: condition 4 of hoistRedundantVectorTransfers), and
    every activation is a `memref.view` into the arena. Inside the kernel's function its buffers are block
    arguments. A kernel on tensors takes its `to_tensor` producers and `materialize_in_destination` consumers
    along; constants it uses are cloned in. LLVM inlines the calls back after the vector code is formed.
    """
    # Everything the kernel computes on tensors comes along: its chain of tensor producers (a fused
    # convolution's bias op, the convolution, the `to_tensor`s), in block order.
    producers: list[ir.Operation] = []
    pending = [op]
    while pending:
        for value in pending.pop().operands:
            owner = value.owner
            if isinstance(owner, ir.OpView | ir.Operation) and isinstance(value.type, ir.RankedTensorType):
                if not any(owner.operation == p for p in producers):
                    producers.append(owner.operation)
                    pending.append(owner.operation)
    producers.sort(key=functools.cmp_to_key(lambda a, b: -1 if a.is_before_in_block(b) else 1))
    consumers = [
        use.owner
        for result in op.results
        for use in result.uses
        if use.owner.name == "bufferization.materialize_in_destination"
    ]
    cluster = producers + [op] + [c.operation for c in consumers]
    arguments: list[ir.Value] = []
    for member in cluster:
        for inner in [member, *ops.walk_ops(member)]:
            for value in inner.operands:
                if any(_defined_in(value, m) for m in cluster) or _is_constant(value):
                    continue
                if not any(known == value for known in arguments):
                    arguments.append(value)
    caller = op.parent
    while caller.name != "func.func":
        caller = caller.parent
    with ir.InsertionPoint(caller.operation):
        callee = func.FuncOp(name, ([v.type for v in arguments], []), visibility="private")
    block = callee.add_entry_block()
    with ir.InsertionPoint(block):
        terminator = func.ReturnOp([])
    with ir.InsertionPoint(op):
        func.CallOp([], ir.FlatSymbolRefAttr.get(name), arguments)
    for member in cluster:
        member.move_before(terminator)
    for inner in ops.walk_ops(callee.operation):
        for i, value in enumerate(inner.operands):
            if _defined_in(value, callee.operation):
                continue
            if _is_constant(value):
                inner.operands[i] = value.owner.clone(ir.InsertionPoint.at_block_begin(block)).results[0]
                continue
            inner.operands[i] = block.arguments[next(j for j, v in enumerate(arguments) if v == value)]


def _is_constant(value: ir.Value) -> bool:
    """Whether `value` is an arith.constant (cloned into an outlined kernel rather than passed to it)."""
    owner = value.owner
    return isinstance(owner, ir.OpView | ir.Operation) and owner.name == "arith.constant"


def _defined_in(value: ir.Value, root: ir.Operation) -> bool:
    """Whether `value` is a result or block argument of an op nested in `root`."""
    owner = value.owner
    op = owner.owner if isinstance(owner, ir.Block) else owner
    while op is not None:
        if op.operation == root:
            return True
        op = op.parent
    return False
