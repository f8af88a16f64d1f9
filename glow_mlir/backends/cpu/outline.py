"""Kernel outlining for glow-cpu-schedule: each scheduled kernel moves into a private function of its own,
called in its place, before the transform sequence runs (why: see `outline`); afterwards, so does every loop
nest that no recipe scheduled (why: see `outline_leftovers`). Kernels with scratch of their own call helper
functions (`define_helper`). A function identical to one outlined before is
dropped for that one (`Outlined`): the repeated layers of a model compile once and are called many times."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterator

from mlir import ir
from mlir.dialects import func

from glow_mlir import ops
from glow_mlir.backends.cpu.parallel import SERIAL_ATTR

# The names of outlined functions start with this; glow-to-llvm keeps LLVM from inlining them back and from
# unrolling their loops (llvm.py).
OUTLINED_PREFIX = "__glow_"
KERNEL_PREFIX = f"{OUTLINED_PREFIX}kernel"
LOOPS_PREFIX = f"{OUTLINED_PREFIX}loops"


class Outlined:
    """The functions outlined so far in one module, one per distinct text. An outlined function that prints
    like an earlier one but for its name (the same ops, shapes and attributes: weights and activations are
    arguments) is erased, and its call calls the earlier one.

    Without it, every stage after outlining (the kernel schedules, the lowering to LLVM, LLVM itself) works
    once per call site: ResNet-50's 103 outlined functions are 56 distinct ones, ViT-tiny's 297 are 52
    (notes: "Where compile time goes"). Only text is compared, so two calls share a function only when
    their functions would have compiled to the same code.
    """

    def __init__(self) -> None:
        self._by_text: dict[str, str] = {}

    def keep(self, call: ir.Operation, function: ir.Operation, key: str = "") -> bool:
        """True if `function` (which `call` calls) is new, and is kept; otherwise it is erased and `call`
        calls its twin. `key` is what else two kernels must share (their transform steps)."""
        name = ir.StringAttr(function.attributes["sym_name"]).value
        # A local scope: the names are numbered in the function alone (and the module is not walked).
        text = function.get_asm(use_local_scope=True).replace(f"@{name}(", "@(", 1)
        first = self._by_text.setdefault(f"{key}\n{text}", name)
        if first == name:
            return True
        call.attributes["callee"] = ir.FlatSymbolRefAttr.get(first)
        function.erase()
        return False


def outline_leftovers(func: ir.Operation, outlined: Outlined) -> None:
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
        outlined.keep(*outline(op, f"{LOOPS_PREFIX}_{name}_{i}"))


def outline(op: ir.Operation, name: str) -> tuple[ir.Operation, ir.Operation]:
    """Moves kernel `op` into a private function of its own, called in its place; returns the call and the
    function. The call has the locations of the ops it replaces (the model nodes it computes, which the
    profiler reports per call), since the function may serve other calls too (`Outlined`).

    Hoisting the accumulators out of the reduction loop (the heart of every register-tiled kernel) gives up
    on transfers whose buffer comes from a view op (notes: condition 4 of hoistRedundantVectorTransfers), and
    every activation is a `memref.view` into the arena. Inside the kernel's function its buffers are block
    arguments. A kernel on tensors takes its `to_tensor` producers and `materialize_in_destination` consumers
    along; constants it uses are cloned in.
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
    # The ops that move and the values they define (results and block arguments). Values, not ops, are the set's
    # keys: a value hashes by the MLIR value, an op by its Python wrapper (two wrappers of one op compare equal
    # but may hash apart). Walking each operand's parents up to the cluster instead was most of the outlining
    # time on MixNet-M's 1039 kernels (a million walks).
    inside = [o.operation for member in cluster for o in [member, *ops.walk_ops(member)]]
    defined = {v for o in inside for v in _defines(o)}
    arguments: dict[ir.Value, int] = {}
    for inner in inside:
        for value in inner.operands:
            if value not in defined and not _is_constant(value):
                arguments.setdefault(value, len(arguments))
    caller = op.parent
    while caller.name != "func.func":
        caller = caller.parent
    with ir.InsertionPoint(caller.operation):
        callee = func.FuncOp(name, ([v.type for v in arguments], []), visibility="private")
    block = callee.add_entry_block()
    with ir.InsertionPoint(block):
        terminator = func.ReturnOp([])
    where = ir.Location.fused(list({str(m.location): m.location for m in cluster}.values()))
    with ir.InsertionPoint(op):
        call = func.CallOp([], ir.FlatSymbolRefAttr.get(name), list(arguments), loc=where)
    for member in cluster:
        member.move_before(terminator)
    for inner in inside:
        for i, value in enumerate(inner.operands):
            if value in arguments:
                inner.operands[i] = block.arguments[arguments[value]]
            elif value not in defined:
                inner.operands[i] = value.owner.clone(ir.InsertionPoint.at_block_begin(block)).results[0]
    return call.operation, callee.operation


def _is_constant(value: ir.Value) -> bool:
    """Whether `value` is an arith.constant (cloned into an outlined kernel rather than passed to it)."""
    owner = value.owner
    return isinstance(owner, ir.OpView | ir.Operation) and owner.name == "arith.constant"


def _defines(op: ir.Operation) -> Iterator[ir.Value]:
    """The results of `op` and the arguments of the blocks of its regions."""
    yield from op.results
    for region in op.regions:
        for block in region.blocks:
            yield from block.arguments


def define_helper(user: ir.Operation, stem: str, types: list[ir.Type], body: Callable[[list[ir.Value]], None],
                  serial: bool) -> str:  # fmt: skip
    """Defines a private function of argument types `types` in `user`'s module, whose body `body(arguments)`
    builds, once per distinct text (layers of one shape share it: their weights and views are arguments), named
    __glow_<stem>_<digest of its text>; returns its name. A kernel calls such helpers from its loops, each call
    with scratch (allocas) of its own; `serial` marks a helper called once per iteration of the loop that
    glow-cpu-parallelize splits, whose own loops then stay serial."""
    module = user
    while module.name != "builtin.module":
        module = module.parent
    block = module.regions[0].blocks[0]
    with ir.InsertionPoint.at_block_begin(block), ir.Location.unknown():
        function = func.FuncOp(f"{OUTLINED_PREFIX}{stem}", (types, []), visibility="private")
        entry = function.add_entry_block()
        with ir.InsertionPoint(entry):
            body(list(entry.arguments))
            func.ReturnOp([])
    text = function.operation.get_asm(use_local_scope=True)
    name = f"{OUTLINED_PREFIX}{stem}_{hashlib.sha1(text.encode()).hexdigest()[:12]}"
    names = {ir.StringAttr(o.attributes["sym_name"]).value for o in block.operations if "sym_name" in o.attributes}
    if name in names:
        function.operation.erase()
    else:
        function.operation.attributes["sym_name"] = ir.StringAttr.get(name)
        if serial:
            function.operation.attributes[SERIAL_ATTR] = ir.UnitAttr.get()
    return name
