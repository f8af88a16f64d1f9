"""How glow-allocate places and expands a `glow_ir.loop` (glow_mlir/opdefs/control.py): its body runs in
an `scf.for` inside the model function, its memory planned once.

A loop's body is a bufferized, allocated function `(i, carried in..., scan slices..., invariants...,
carried out..., scan output slices..., arena)`. glow-allocate plans the bodies first (a body's own loops
before it), so each has `glow.arena_bytes`; the function running the loop then reserves one scratch block
at the loop's position in its own plan (`scratch_bytes`): the body's arena, the iteration number, and a
buffer per carried output, scan slice and scan output slice. `expand` replaces the instruction with

    copy carried results <- initial values
    scf.for %iv = 0 to trip_count {        (scf.while %iv < trip_count and the body's condition, if it has one)
      store %iv into the iteration buffer; copy each scan slice out of its input (a strided subview)
      the body's instructions, its arguments bound to the loop's buffers and its arena to the scratch
      copy carried results <- carried outputs; copy each scan output slice into its result
    }

The body reads the carried results and writes separate carried outputs, copied back after it: a body may
read a carried value after writing the new one (an LSTM's cell state), so the two cannot share a buffer.
The body's instructions are moved, not duplicated: the generated code does not grow with the trip count.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mlir import ir
from mlir.dialects import arith, memref, scf

from glow_mlir import ops
from glow_mlir.errors import UnsupportedError
from glow_mlir.opdefs import control

ARENA_BYTES = "glow.arena_bytes"
# The bytes a buffer of this type takes in a plan, aligned (glow-allocate's rule, which it passes in).
Size = Callable[[ir.Type], int]


def _symbol(fn: ir.Operation) -> str:
    return ir.StringAttr(fn.attributes["sym_name"]).value


def loops_in(function: ir.Operation) -> list[ir.Operation]:
    return [op for op in ops.walk_ops(function) if op.name == control.IR_LOOP]


def bodies_first(functions: Sequence[ir.Operation]) -> list[ir.Operation]:
    """`functions` ordered so that a loop's body comes before every function running that loop."""
    by_name = {_symbol(f): f for f in functions}
    done: list[ir.Operation] = []
    seen: set[str] = set()
    for fn in functions:
        _visit(fn, (), by_name, seen, done)
    return done


def _visit(fn: ir.Operation, path: tuple[str, ...], by_name: dict[str, ir.Operation], seen: set[str],
           done: list[ir.Operation]) -> None:  # fmt: skip
    """Appends to `done` the loop bodies that `fn` runs (depth first), then `fn`. (A recursive closure would be
    a reference cycle keeping the module's ops, and so its context, alive until a full garbage collection.)"""
    name = _symbol(fn)
    if name in path:
        raise UnsupportedError(f"loop body @{name} runs itself: {' -> '.join(path + (name,))}")
    if name in seen:
        return
    for loop in loops_in(fn):
        body = control.Loop.of(loop).body
        if body not in by_name:
            raise UnsupportedError(f"{ops.location_text(loop)}: the loop's body @{body} is not in the module")
        _visit(by_name[body], (*path, name), by_name, seen, done)
    seen.add(name)
    done.append(fn)


def _parts(loop: ir.Operation) -> tuple[control.Loop, ir.Operation, list[ir.Type]]:
    """The loop's attributes, its allocated body, and the types of its scratch buffers: the body's arena,
    the iteration number, the scan slices, the carried outputs and the scan output slices (the carried
    inputs and the invariants are the loop's own buffers)."""
    spec = control.Loop.of(loop)
    body = control.body_function(loop)
    if ARENA_BYTES not in body.attributes:
        raise UnsupportedError(f"{ops.location_text(loop)}: the body @{spec.body} is not allocated")
    args = list(body.regions[0].blocks[0].arguments)
    outs = ops.roles(loop).count("out")
    n_in = len(loop.operands) - outs
    arena = ir.MemRefType.get([ops.integer(body, ARENA_BYTES)], ir.IntegerType.get_signless(8))
    scan_slices = args[1 + spec.num_carried:1 + spec.num_carried + spec.num_scan_inputs]
    outputs = args[1 + n_in:1 + n_in + spec.condition + outs]
    return spec, body, [arena, args[0].type, *(a.type for a in scan_slices), *(a.type for a in outputs)]


def scratch_bytes(loop: ir.Operation, size: Size) -> int:
    """The bytes of the scratch block the loop's body needs at the loop's position in its function's plan."""
    return sum(size(t) for t in _parts(loop)[2])


def expand(loop: ir.Operation, arena: ir.Value, offset: int, size: Size) -> None:
    """Replaces `loop` by an scf.for running its body, whose memory is the scratch block at `offset` of
    `arena` (glow-allocate placed it); the body's instructions move into the loop."""
    spec, body, buffer_types = _parts(loop)
    outs = ops.roles(loop).count("out")
    results, operands = list(loop.operands[:outs]), list(loop.operands[outs:])
    c, s = spec.num_carried, spec.num_scan_inputs
    index = ir.IndexType.get()
    with ir.InsertionPoint(loop), loop.location:
        scratch = []
        for t in buffer_types:
            scratch.append(_view(arena, offset, t))
            offset += size(t)
        body_arena, iteration, slices, body_outs = scratch[0], scratch[1], scratch[2:2 + s], scratch[2 + s:]
        for k in range(c):
            _copy(results[k], operands[k])
        zero, one = (arith.constant(index, v) for v in (0, 1))
        last = arith.constant(index, spec.trip_count - 1)
        trips = arith.constant(index, spec.trip_count)
        if spec.condition:
            iv, yield_op = _while(trips, zero, one, body_outs[0])
        else:
            for_op = scf.ForOp(zero, trips, one)
            iv = for_op.induction_variable
            with ir.InsertionPoint(for_op.body):
                yield_op = scf.YieldOp([])
    with ir.InsertionPoint(yield_op), loop.location:
        reverse = arith.subi(last, iv)
        memref.store(arith.index_cast(ir.IntegerType.get_signless(64), iv), iteration, [])
        for k in range(s):
            at = reverse if spec.scan_input_directions[k] else iv
            _copy(slices[k], _slice(operands[c + k], spec.scan_input_axes[k], at))
    copy = body.clone(ir.InsertionPoint(loop))
    block = copy.regions[0].blocks[0]
    bound = [iteration, *results[:c], *slices, *operands[c + s:], *body_outs, body_arena]
    for arg, value in zip(list(block.arguments), bound, strict=True):
        arg.replace_all_uses_with(value)
    for op in list(block.operations):
        if op.name == "func.return":
            break
        op.move_before(yield_op)
    copy.erase()
    body_outs = body_outs[spec.condition:]
    with ir.InsertionPoint(yield_op), loop.location:
        for k in range(c):
            _copy(results[k], body_outs[k])
        for k in range(len(results) - c):
            at = reverse if spec.scan_output_directions[k] else iv
            _copy(_slice(results[c + k], spec.scan_output_axes[k], at), body_outs[c + k])
    loop.erase()


def _while(trips: ir.Value, zero: ir.Value, one: ir.Value, condition: ir.Value) -> tuple[ir.Value, ir.Operation]:
    """An scf.while over %iv from 0 while %iv < trips and the body's last `condition` holds (true before the
    first iteration); returns %iv and the yield, before which the iteration's code goes."""
    index = ir.IndexType.get()
    memref.store(arith.constant(ir.IntegerType.get_signless(1), 1), condition, [])
    while_op = scf.WhileOp([index], [zero])
    before = while_op.before.blocks.append(index)
    with ir.InsertionPoint(before):
        in_range = arith.cmpi(arith.CmpIPredicate.slt, before.arguments[0], trips)
        scf.ConditionOp(arith.andi(in_range, memref.load(condition, [])), [before.arguments[0]])
    after = while_op.after.blocks.append(index)
    with ir.InsertionPoint(after):
        yield_op = scf.YieldOp([arith.addi(after.arguments[0], one)])
    return after.arguments[0], yield_op


def _view(arena: ir.Value, offset: int, t: ir.Type) -> ir.Value:
    return memref.view(t, arena, arith.constant(ir.IndexType.get(), offset), [])


def _copy(dest: ir.Value, source: ir.Value) -> None:
    roles = ir.ArrayAttr.get([ir.StringAttr.get(r) for r in ("out", "in")])
    ops.create("glow_ir.copy", [dest, source], attributes={"roles": roles})


def _slice(buffer: ir.Value, axis: int, at: ir.Value) -> ir.Value:
    """buffer[..., at, ...] along `axis`, which the view drops: a strided subview."""
    dims = list(ops.shape(buffer))
    strides = [1] * len(dims)
    for k in reversed(range(len(dims) - 1)):
        strides[k] = strides[k + 1] * dims[k + 1]
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    layout = ir.StridedLayoutAttr.get(dynamic, [st for k, st in enumerate(strides) if k != axis])
    result = ir.MemRefType.get([d for k, d in enumerate(dims) if k != axis], ops.element_type(buffer), layout)
    offsets = [0] * len(dims)
    offsets[axis] = dynamic
    sizes = [1 if k == axis else d for k, d in enumerate(dims)]
    return memref.SubViewOp(result, buffer, [at], [], [], offsets, sizes, [1] * len(dims)).result
