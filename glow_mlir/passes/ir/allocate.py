"""glow-allocate: Glow's static memory allocation of every activation into one arena.

After IRGen each intermediate buffer lives from its `glow_ir.alloc_activation` to its
`glow_ir.dealloc_activation`. Because the whole instruction sequence is known at compile time, buffers whose
lifetimes do not intersect can share memory, and the plan costs nothing at run time. Like Glow's
`MemoryAllocator::allocateAll`, the planner sees every interval at once, places buffers first-fit at 64-byte
aligned offsets in several orders (largest buffer at the time of peak live memory first, longest-lived at
that time first, program order), stops as soon as an order reaches the lower bound (the peak of
simultaneously live bytes) and keeps the smallest arena. A check that no two simultaneously live buffers
share a byte runs on every plan.

The rewrite adds a last argument `%arena: memref<Nxi8> {glow.arena}`, turns each alloc into
`memref.view %arena[%offset][]`, erases the deallocs, and records `glow.arena_bytes`, `glow.peak_live_bytes`
and `glow.naive_activation_bytes` (the arena without any sharing) on the function.

The planner works on plain `(size, start, end)` tuples (bytes, first and last instruction index, inclusive)
so that it is tested without MLIR.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, memref

from glow_mlir import ops
from glow_mlir.errors import GlowError, UnsupportedError, VerificationError
from glow_mlir.opdefs import control
from glow_mlir.passes.ir import loops
from glow_mlir.passes.lowering.irgen import ALLOC, buffer_users
from glow_mlir.passes.registry import register

ALIGNMENT = 64
DEALLOC = "glow_ir.dealloc_activation"
ARENA_ATTR = "glow.arena"

Buffer = tuple[int, int, int]  # (size in bytes, start, end): live at instruction indices start..end inclusive


class AllocationError(GlowError):
    """A memory plan places two simultaneously live buffers on a common byte, or breaks the alignment."""


@dataclass(frozen=True)
class Plan:
    offsets: list[int]
    arena_bytes: int
    peak_live_bytes: int
    naive_bytes: int
    strategy: str


def align(size: int, alignment: int = ALIGNMENT) -> int:
    return -(-size // alignment) * alignment


def live_together(a: Buffer, b: Buffer) -> bool:
    return a[1] <= b[2] and b[1] <= a[2]


def _live_sizes(buffers: Sequence[Buffer], times: Sequence[int], alignment: int) -> list[int]:
    # Some buffer starts at the moment of peak memory, so starts are the only times worth measuring.
    return [sum(align(size, alignment) for size, start, end in buffers if start <= t <= end) for t in times]


def peak_live_bytes(buffers: Sequence[Buffer], alignment: int = ALIGNMENT) -> int:
    """The lower bound of any plan: the most (aligned) bytes live at one instruction."""
    return max(_live_sizes(buffers, sorted({b[1] for b in buffers}), alignment), default=0)


def first_fit(buffers: Sequence[Buffer], order: Sequence[int], alignment: int = ALIGNMENT) -> list[int]:
    """Offsets from placing buffers in `order`, each at the lowest aligned offset free during its lifetime."""
    placed: dict[int, int] = {}
    for i in order:
        size = align(buffers[i][0], alignment)
        taken = sorted(
            (offset, offset + align(buffers[j][0], alignment))
            for j, offset in placed.items()
            if live_together(buffers[i], buffers[j])
        )
        offset = 0
        for low, high in taken:
            if offset + size <= low:
                break
            offset = max(offset, high)
        placed[i] = offset
    return [placed[i] for i in range(len(buffers))]


def _at_peak_order(buffers: Sequence[Buffer], key: Callable[[int], tuple[int, ...]], alignment: int) -> list[int]:
    """Glow's order: repeatedly find the time when the unplaced buffers hold the most memory, and take the
    buffer live then that maximizes `key`."""
    times = sorted({b[1] for b in buffers})
    live = _live_sizes(buffers, times, alignment)
    remaining = set(range(len(buffers)))
    order: list[int] = []
    while remaining:
        peak = max(range(len(times)), key=live.__getitem__)
        if live[peak] == 0:
            # Only empty buffers are left; any place suits them.
            order.extend(sorted(remaining))
            break
        now = times[peak]
        chosen = max((i for i in remaining if buffers[i][1] <= now <= buffers[i][2] and buffers[i][0] > 0), key=key)
        remaining.remove(chosen)
        order.append(chosen)
        size, start, end = buffers[chosen]
        for k, t in enumerate(times):
            if start <= t <= end:
                live[k] -= align(size, alignment)
    return order


def _orders(buffers: Sequence[Buffer], alignment: int) -> list[tuple[str, Callable[[], list[int]]]]:
    def size_first(i: int) -> tuple[int, ...]:
        size, start, end = buffers[i]
        return (size, end - start, -start, -i)

    def time_first(i: int) -> tuple[int, ...]:
        size, start, end = buffers[i]
        return (end - start, size, -start, -i)

    return [
        ("max-live-size, max-buffer-size", lambda: _at_peak_order(buffers, size_first, alignment)),
        ("max-live-size, max-buffer-time", lambda: _at_peak_order(buffers, time_first, alignment)),
        ("original order", lambda: sorted(range(len(buffers)), key=lambda i: (buffers[i][1], i))),
    ]


def arena_size(buffers: Sequence[Buffer], offsets: Sequence[int], alignment: int = ALIGNMENT) -> int:
    return max((o + align(b[0], alignment) for b, o in zip(buffers, offsets)), default=0)


def plan_memory(buffers: Sequence[Buffer], alignment: int = ALIGNMENT) -> Plan:
    """The smallest first-fit plan over Glow's orders, stopping at the first that meets the lower bound."""
    bound = peak_live_bytes(buffers, alignment)
    naive = sum(align(b[0], alignment) for b in buffers)
    best: Plan | None = None
    for strategy, order in _orders(buffers, alignment):
        offsets = first_fit(buffers, order(), alignment)
        size = arena_size(buffers, offsets, alignment)
        if best is None or size < best.arena_bytes:
            best = Plan(offsets, size, bound, naive, strategy)
        if size == bound:
            break
    assert best is not None
    check_plan(buffers, best.offsets, best.arena_bytes, alignment)
    return best


def check_plan(buffers: Sequence[Buffer], offsets: Sequence[int], arena_bytes: int, alignment: int = ALIGNMENT) -> None:
    """Raises AllocationError unless every buffer is aligned, inside the arena, and shares no byte with a
    buffer live at the same time."""
    if len(offsets) != len(buffers):
        raise AllocationError(f"a plan for {len(buffers)} buffers has {len(offsets)} offsets")
    for i, (b, offset) in enumerate(zip(buffers, offsets)):
        if offset % alignment or offset < 0 or offset + b[0] > arena_bytes:
            raise AllocationError(
                f"buffer {i} {b} at offset {offset} is misaligned or outside the {arena_bytes}-byte arena"
            )
    for i in range(len(buffers)):
        for j in range(i + 1, len(buffers)):
            if not (live_together(buffers[i], buffers[j]) and buffers[i][0] and buffers[j][0]):
                continue
            if offsets[i] < offsets[j] + buffers[j][0] and offsets[j] < offsets[i] + buffers[i][0]:
                raise AllocationError(
                    f"buffers {i} {buffers[i]} at {offsets[i]} and {j} {buffers[j]} at {offsets[j]} are live "
                    "at the same time and overlap"
                )


def _bytes(buffer: ir.Type) -> int:
    """The bytes of a buffer as the runtime lays it out: numpy's itemsize, so an i1 (bool) takes one byte."""
    elt = ops.element_type(buffer)
    try:
        itemsize = ops.numpy_dtype(elt).itemsize
    except ValueError:
        raise UnsupportedError(f"glow-allocate cannot size buffers of element type {elt}") from None
    count = 1
    for d in ops.shape(buffer):
        count *= d
    return count * itemsize


def _planned(buffer: ir.Type) -> int:
    """The bytes a buffer takes in the arena: its size, aligned."""
    return align(_bytes(buffer))


def allocate(module: ir.Module) -> None:
    """Plans and rewrites the activations of every function of `module`, in place; the bodies of loops go
    first and end up inside the loops that run them (glow_mlir/passes/ir/loops.py)."""
    functions = loops.bodies_first(ops.functions(module))
    bodies = {control.Loop.of(loop).body for f in functions for loop in loops.loops_in(f)}
    for function in functions:
        with function.location:
            _allocate_function(function)
    for function in functions:
        name = ir.StringAttr(function.attributes["sym_name"]).value
        if name in bodies or control.BODY_ATTR in function.attributes:
            function.erase()


@register("glow-allocate")
def allocate_pass(module: ir.Module) -> None:
    """Places all activations in one 64-byte-aligned arena argument (Glow's static first-fit allocator)."""
    allocate(module)


def _allocate_function(function: ir.Operation) -> None:
    signature = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)
    arg_attrs = (
        [ir.DictAttr(d) for d in ir.ArrayAttr(function.attributes["arg_attrs"])]
        if "arg_attrs" in function.attributes
        else [ir.DictAttr.get({}) for _ in signature.inputs]
    )
    if signature.results or any(ARENA_ATTR in d for d in arg_attrs):
        rule = "is not a glow_ir function awaiting allocation (run glow-irgen first, and glow-allocate once)"
        raise VerificationError("func.func", ops.location_text(function), rule)
    block = function.regions[0].blocks[0]
    order = [op.operation for op in block.operations]
    position = {op: i for i, op in enumerate(order)}
    allocs = [op for op in order if op.name == ALLOC]
    # The dealloc is a use, so a well-formed buffer ends there; a later read through a view extends it.
    buffers = [
        (_bytes(a.results[0].type), position[a], max([position[a], *(position[u] for u in buffer_users(a.results[0]))]))
        for a in allocs
    ]
    # Each loop's body runs in a scratch block live at the loop only.
    loop_ops = [op for op in order if op.name == control.IR_LOOP]
    buffers += [(loops.scratch_bytes(loop, _planned), position[loop], position[loop]) for loop in loop_ops]
    plan = plan_memory(buffers)

    arena = block.add_argument(ir.MemRefType.get([plan.arena_bytes], ir.IntegerType.get_signless(8)), function.location)
    function.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get([*signature.inputs, arena.type], []))
    function.attributes["arg_attrs"] = ir.ArrayAttr.get([*arg_attrs, ir.DictAttr.get({ARENA_ATTR: ir.UnitAttr.get()})])
    for alloc, offset in zip(allocs, plan.offsets):
        with ir.InsertionPoint(alloc), alloc.location:
            start = arith.constant(ir.IndexType.get(), offset)
            view = memref.view(alloc.results[0].type, arena, start, [])
        alloc.results[0].replace_all_uses_with(view)
    for op in order:
        if op.name in (ALLOC, DEALLOC):
            op.erase()
    for loop, offset in zip(loop_ops, plan.offsets[len(allocs):], strict=True):
        loops.expand(loop, arena, offset, _planned)
    function.attributes["glow.arena_bytes"] = ops.i64(plan.arena_bytes)
    function.attributes["glow.peak_live_bytes"] = ops.i64(plan.peak_live_bytes)
    function.attributes["glow.naive_activation_bytes"] = ops.i64(plan.naive_bytes)
