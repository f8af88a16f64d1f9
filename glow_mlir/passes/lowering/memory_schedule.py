"""glow-schedule: memory-aware ordering of a `glow` function's ops (Glow's ChildMemSizeBasedScheduler).

IRGen emits instructions in the order of the graph's ops, and that order fixes every activation's live range
and so the arena glow-allocate can reach. Program order is whatever the builder or importer produced: two
long branches built interleaved keep both branches' intermediates alive at once. This pass picks the order
the way Glow's default scheduler does:

- every op gets the bytes of its result activation (0 for constants, which become globals, and reshapes,
  which become views) and an estimate of the peak memory needed to compute it: its operands are evaluated one
  after the other, each keeping its result while the next is computed, and each operand's own estimate
  counts while it runs;
- from the returned values (then any op nobody uses), an op schedules its operands depth first, the operand
  whose computation needs the most memory beyond its result first, then itself; an op that needs no memory
  (a reshape) goes as soon as its operands are scheduled.

`peak_live_bytes(order, returned)` measures an order at graph level, the way glow-allocate sees the buffers
IRGen will make: an activation is the result of any op but a constant or a reshape (a reshape extends its
source's life instead), it is live from its producer through its last reader, and a returned value lives in
its output argument, not in the arena. Sizes are element count times element bytes (i1 is one byte).

The pass records both peaks on the function, `glow.schedule_peak_bytes` (the memory-aware order) and
`glow.topological_peak_bytes` (program order), and keeps the memory-aware order unless program order peaks
as low or lower (the estimate is a heuristic on graphs with shared subexpressions, and a tie keeps the
order the model was written in).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from mlir import ir

from glow_mlir import ops
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.registry import register

SCHEDULE_PEAK = "glow.schedule_peak_bytes"
TOPOLOGICAL_PEAK = "glow.topological_peak_bytes"
ALIASES = ("glow.reshape",)
NO_BUFFER = ("glow.constant",)


def tensor_bytes(t: ir.Type) -> int:
    """Bytes of a ranked tensor: element count times element bytes (i1 takes a byte)."""
    if not isinstance(t, ir.RankedTensorType):
        return 0
    elt = ops.element_type(t)
    width = elt.width if isinstance(elt, (ir.FloatType, ir.IntegerType)) else 0
    count = 1
    for d in ops.shape(t):
        count *= d
    return count * ((width + 7) // 8)


def _root(value: ir.Value) -> ir.Value:
    """The value whose buffer `value` lives in: through reshapes (views at the IR level) to their source."""
    op = g.producer(value)
    while op is not None and op.name in ALIASES:
        value = op.operands[0]
        op = g.producer(value)
    return value


def _is_activation(value: ir.Value, returned: set[ir.Value]) -> bool:
    op = g.producer(value)
    return op is not None and op.name not in NO_BUFFER and op.name not in ALIASES and value not in returned


def result_bytes(op: ir.Operation, returned: set[ir.Value]) -> int:
    """The arena bytes `op`'s results take."""
    return sum(tensor_bytes(r.type) for r in op.results if _is_activation(r, returned))


def peak_live_bytes(order: Sequence[ir.Operation], returned: Iterable[ir.Value]) -> int:
    """The most activation bytes live at one op when the ops run in `order` (see the module docstring)."""
    returned = set(returned)
    position = {op: i for i, op in enumerate(order)}
    end = len(order)
    start_of: dict[ir.Value, int] = {}
    last_of: dict[ir.Value, int] = {}
    for op in order:
        for result in op.results:
            if _is_activation(result, returned):
                start_of[result] = last_of[result] = position[op]
    for op in order:
        for operand in op.operands:
            root = _root(operand)
            if root in last_of:
                last_of[root] = max(last_of[root], position[op])
    for value in returned:
        root = _root(value)
        if root in last_of:
            # A view of an activation is returned: IRGen copies it into its output at the end.
            last_of[root] = end
    events = [0] * (end + 2)
    for value, start in start_of.items():
        size = tensor_bytes(value.type)
        events[start] += size
        events[last_of[value] + 1] -= size
    peak = live = 0
    for delta in events:
        live += delta
        peak = max(peak, live)
    return peak


def memory_order(block: ir.Block) -> list[ir.Operation]:
    """The block's ops but its terminator, in the child-memory-size order (a valid topological order)."""
    body = [op.operation for op in block.operations]
    terminator, ops_ = body[-1], body[:-1]
    returned = set(terminator.operands)
    size = {op: result_bytes(op, returned) for op in ops_}
    need: dict[ir.Operation, int] = {}
    for op in ops_:
        # Operands evaluated in the chosen order: each keeps its result while the later ones are computed.
        children = _children(op, need, size)
        held = peak = 0
        for child in children:
            peak = max(peak, held + need[child])
            held += size[child]
        need[op] = max(peak, held + size[op])

    scheduled: list[ir.Operation] = []
    done: set[ir.Operation] = set()

    def ready(op: ir.Operation) -> bool:
        return all(p is None or p in done for p in (g.producer(v) for v in op.operands))

    def schedule(op: ir.Operation) -> None:
        # Depth first with an explicit stack: a deep graph must not exhaust Python's recursion limit.
        stack: list[tuple[ir.Operation, bool]] = [(op, False)]
        while stack:
            current, expanded = stack.pop()
            if current in done:
                continue
            if not expanded:
                stack.append((current, True))
                stack.extend((child, False) for child in reversed(_children(current, need, size)))
                continue
            done.add(current)
            scheduled.append(current)
            for result in current.results:
                for user in g.users(result):
                    if user in size and user not in done and size[user] == 0 and ready(user):
                        stack.append((user, True))

    roots = [g.producer(v) for v in terminator.operands]
    roots += [op for op in ops_ if not any(list(r.uses) for r in op.results)]
    for root in roots:
        if root is not None:
            schedule(root)
    return scheduled


def _children(op: ir.Operation, need: dict[ir.Operation, int], size: dict[ir.Operation, int]) -> list[ir.Operation]:
    """`op`'s distinct operand producers, the one needing most memory beyond its result first (stable)."""
    children: list[ir.Operation] = []
    for value in op.operands:
        producer = g.producer(value)
        if producer is not None and producer in need and producer not in children:
            children.append(producer)
    return sorted(children, key=lambda c: size[c] - need[c])


def schedule_function(function: ir.Operation) -> None:
    block = g.body(function)
    body = [op.operation for op in block.operations]
    terminator = body[-1]
    returned = list(terminator.operands)
    program = body[:-1]
    memory = memory_order(block)
    memory_peak = peak_live_bytes(memory, returned)
    program_peak = peak_live_bytes(program, returned)
    function.attributes[SCHEDULE_PEAK] = ops.i64(memory_peak)
    function.attributes[TOPOLOGICAL_PEAK] = ops.i64(program_peak)
    if memory_peak < program_peak:
        for op in memory:
            op.move_before(terminator)


@register("glow-schedule")
def schedule(module: ir.Module) -> None:
    """Order each function's glow ops to lower peak activation memory (Glow's child-memory-size scheduler)."""
    for function in ops.functions(module):
        schedule_function(function)
