"""Kernel outlining for glow-cpu-schedule: each scheduled kernel moves into a private function of its own,
called in its place, before the transform sequence runs (why: see `outline`); afterwards, so does every loop
nest that no recipe scheduled (why: see `outline_leftovers`). Kernels with scratch of their own call helper
functions (`define_helper`). A function identical to one outlined before is
dropped for that one (`Outlined`): the repeated layers of a model compile once and are called many times. Last,
functions that differ only in the offsets of their views become one that takes any offset (`merge_offset_twins`)."""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import func, memref

from glow_mlir import ops
from glow_mlir.backends.cpu import constant_args
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
    their functions would have compiled to the same code. Functions that print alike but for the values of
    their float constants of arithmetic share one too, which reads them from a table each call passes
    (constant_args.py); a function that no other matches so keeps its constants, and its code.
    """

    def __init__(self) -> None:
        self._by_text: dict[str, _Kept] = {}
        self._tables: set[str] = set()

    def keep(self, call: ir.Operation, function: ir.Operation, key: str = "") -> bool:
        """True if `function` (which `call` calls) is new, and is kept; otherwise it is erased and `call` calls
        its twin (replaced by a call that also passes a table of its constants where the twin reads them from
        one). `key` is what else two kernels must share (their transform steps)."""
        name = ir.StringAttr(function.attributes["sym_name"]).value
        constants = constant_args.parametrizable(function)
        values = constant_args.values_of(constants)
        text = f"{key}\n{constant_args.masked_text(function, constants, _unnamed_text)}"
        kept = self._by_text.setdefault(text, _Kept(name, function, values))
        if kept.name == name:
            kept.calls.append(call)
            return True
        if not kept.takes_table and values != kept.values:
            constant_args.take_constants(kept.function)
            kept.calls = [self._passing(c, kept.values) for c in kept.calls]
            kept.takes_table = True
        if kept.takes_table:
            call = self._passing(call, values)
        call.attributes["callee"] = ir.FlatSymbolRefAttr.get(kept.name)
        kept.calls.append(call)
        function.erase()
        return False

    def sink_table_reads(self) -> None:
        """Moves the table reads of the functions that take one to their uses (constant_args.sink_reads): once
        all are scheduled."""
        for kept in self._by_text.values():
            if kept.takes_table:
                constant_args.sink_reads(kept.function)

    def _passing(self, call: ir.Operation, values: list[float]) -> ir.Operation:
        """`call` replaced by a call of the same callee that also passes the table of `values`."""
        table = constant_args.table(call, values, self._tables)
        with ir.InsertionPoint(call), call.location:
            new = func.CallOp([], ir.FlatSymbolRefAttr(call.attributes["callee"]), [*call.operands, table])
        call.erase()
        return new.operation


@dataclass
class _Kept:
    """A function `Outlined` kept: its name, the values of its `constant_args.parametrizable` constants, the calls
    of it so far, and whether it reads those constants from a table."""

    name: str
    function: ir.Operation
    values: list[float]
    calls: list[ir.Operation] = field(default_factory=list)
    takes_table: bool = False


def _unnamed_text(function: ir.Operation) -> str:
    """`function` printed without its name, in a local scope (the values numbered in the function alone, and the
    module not walked): two functions that print alike compile alike."""
    name = ir.StringAttr(function.attributes["sym_name"]).value
    return function.get_asm(use_local_scope=True).replace(f"@{name}(", "@(", 1)


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
    # The vector loop nests that lowerings wrote themselves (the int8 kernels, a quantization's pass) go the
    # same way: in QDQ MambaOut-femto's entry function they were 30 000 of the module's 37 000 lines, compiled
    # by LLVM as one function on one core and once per repeated block.
    leftovers += [op for op in func.regions[0].blocks[0].operations if _outlinable_loop(op.operation)]
    for i, op in enumerate(leftovers):
        outlined.keep(*outline(op.operation, f"{LOOPS_PREFIX}_{name}_{i}"))


def _outlinable_loop(op: ir.Operation) -> bool:
    """Whether `op`, an op of an entry function's body, is a vector loop nest that can be a function of its
    own: an scf.for without results (its effects are its buffers' writes) that calls no kernel (a
    convolution's loop over channel tiles stays, for glow-cpu-parallelize's choice between it and the
    kernel's loops). Scalar loops stay too: LLVM unrolls those of few trips in the entry (softmax's rows of 9
    on SegFormer's small maps, 5 % of its run), and unrolls nothing in an outlined function (llvm.py)."""
    if op.name != "scf.for" or op.results:
        return False
    inner = [o.name for o in ops.walk_ops(op)]
    return "func.call" not in inner and any(name.startswith("vector.") for name in inner)


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


# Ops that hand a view of their first operand on: a view of a buffer at a dynamic offset is at one too.
_VIEWS = frozenset(("memref.subview", "memref.collapse_shape", "memref.expand_shape", "memref.cast"))
# A strided layout's printed offset, or none (offset 0): erased, two kernels that differ only there are twins.
_OFFSET = re.compile(r"strided<(\[[^\]]*\])(?:, offset: -?\d+)?>")


def _at_any_offset(t: ir.Type) -> ir.Type | None:
    """A memref type of a strided layout with a static offset as the same layout at a dynamic offset; None for
    any other type (whole buffers, of identity layout, stay as they are)."""
    if not isinstance(t, ir.MemRefType) or not isinstance(t.layout, ir.StridedLayoutAttr):
        return None
    strides, offset = t.get_strides_and_offset()
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    if offset == dynamic:
        return None
    return ir.MemRefType.get(t.shape, t.element_type, ir.StridedLayoutAttr.get(dynamic, strides), t.memory_space)


def _generalized(function: ir.Operation) -> ir.Operation | None:
    """A copy of kernel `function` whose strided arguments take any offset (the offset read from each call's
    view at run time), with every view derived from them likewise; None where some op would not follow (a
    reinterpret_cast, a call, a region carrying such a view), or the copy does not verify."""
    copy = function.clone(ir.InsertionPoint(function))
    changed: set[ir.Value] = set()
    for arg in copy.regions[0].blocks[0].arguments:
        wider = _at_any_offset(arg.type)
        if wider is not None:
            arg.set_type(wider)
            changed.add(arg)
    for op in ops.walk_ops(copy):
        if not any(v in changed for v in op.operands):
            continue
        memref_results = [r for r in op.results if isinstance(r.type, ir.MemRefType)]
        blocks = [a for region in op.regions for b in region.blocks for a in b.arguments]
        if op.name in _VIEWS and op.operands[0] in changed:
            wider = _at_any_offset(op.results[0].type)
            if wider is None:
                copy.erase()
                return None
            op.results[0].set_type(wider)
            changed.add(op.results[0])
        elif memref_results or any(isinstance(a.type, ir.MemRefType) for a in blocks) or op.name == "func.call":
            copy.erase()
            return None
    signature = ir.FunctionType(ir.TypeAttr(copy.attributes["function_type"]).value)
    arguments = [a.type for a in copy.regions[0].blocks[0].arguments]
    copy.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(arguments, signature.results))
    try:
        copy.verify()
    except ir.MLIRError:
        copy.erase()
        return None
    return copy


def merge_offset_twins(module: ir.Module, entries: list[ir.Operation]) -> None:
    """Outlined functions that differ only in the offsets of their views (the same layer writing into a concat
    at another channel, the same block read at another row) become one, which takes its views at any offset:
    DenseNet-121's 759 kernel functions are 284 so. Run on the scheduled kernels: their recipes chose code for
    the shapes and strides they saw, which serves any offset. Each group's functions are generalized
    (`_generalized`) and compared again as text; the first of those equal serves the calls of all, each view
    cast to its argument's type at the call."""
    block = module.body
    groups: dict[str, list[ir.Operation]] = {}
    for op in block.operations:
        if op.operation.name != "func.func" or not op.regions[0].blocks:
            continue
        if ir.StringAttr(op.attributes["sym_name"]).value.startswith((KERNEL_PREFIX, LOOPS_PREFIX)):
            text = _OFFSET.sub(r"strided<\1, offset: ?>", _unnamed_text(op.operation))
            groups.setdefault(text, []).append(op.operation)
    serving: dict[str, ir.Operation] = {}
    for members in groups.values():
        if len(members) < 2:
            continue
        # Generalized copies by their text (named as their original, which the text leaves out).
        alike: dict[str, list[tuple[ir.Operation, ir.Operation]]] = {}
        for function in members:
            copy = _generalized(function)
            if copy is not None:
                alike.setdefault(_unnamed_text(copy), []).append((function, copy))
        for pairs in alike.values():
            if len(pairs) < 2:
                for _, copy in pairs:
                    copy.erase()
                continue
            kept = pairs[0][1]
            for function, copy in pairs:
                serving[ir.StringAttr(function.attributes["sym_name"]).value] = kept
                if copy is not kept:
                    copy.erase()
                function.erase()
    if not serving:
        return
    for entry in entries:
        for call in [o for o in ops.walk_ops(entry) if o.name == "func.call"]:
            callee = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
            if callee not in serving:
                continue
            target = serving[callee]
            call.attributes["callee"] = ir.FlatSymbolRefAttr.get(ir.StringAttr(target.attributes["sym_name"]).value)
            wanted = ir.FunctionType(ir.TypeAttr(target.attributes["function_type"]).value).inputs
            with ir.InsertionPoint(call), call.location:
                for i, (value, t) in enumerate(zip(call.operands, wanted, strict=True)):
                    if value.type != t:
                        call.operands[i] = memref.cast(t, value)
