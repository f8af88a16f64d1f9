"""What glow-cpu-parallelize (parallel.py) reads off scheduled loop nests: which ops read, write or view
buffers, the buffer a view is of, whether a value moves with a loop's induction variable (and which dims of a
buffer do), trip counts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from mlir import ir

# Ops that read a buffer and never write it: their memref operand is operand `READS[name]`, indices follow.
# (A prefetch, matmul_recipes' of packed weights, touches no value: counted as a read.)
READS = {"vector.load": 0, "vector.transfer_read": 0, "memref.load": 0, "vector.maskedload": 0, "vector.gather": 0,
         "memref.prefetch": 0}  # fmt: skip
# Ops that write a buffer: their memref operand is operand `WRITES[name]`.
WRITES = {"vector.store": 1, "vector.transfer_write": 1, "memref.store": 1, "vector.maskedstore": 0,
          "vector.scatter": 0, "vector.compressstore": 0}  # fmt: skip
# Ops that make a view of a buffer (operand 0) without touching its memory.
VIEWS = frozenset({"memref.subview", "memref.cast", "memref.reinterpret_cast", "memref.expand_shape",
                   "memref.collapse_shape", "memref.view", "memref.extract_strided_metadata"})  # fmt: skip
# Vector ops that only move values between registers: LLVM folds most of them away (shape casts, whole-register
# extracts and inserts) or into the arithmetic's operands (a scalar broadcast into an FMA's memory operand).
REGISTER_MOVES = frozenset({"vector.extract", "vector.insert", "vector.broadcast", "vector.shape_cast",
                            "vector.to_elements", "vector.from_elements", "vector.extract_strided_slice",
                            "vector.insert_strided_slice"})  # fmt: skip
# Ops that do no work at run time.
NO_WORK = frozenset({"arith.constant", "scf.yield", "ub.poison", "memref.get_global", "func.return"})

# The trip count assumed for a loop whose bounds are not constants (only for the cost estimate).
UNKNOWN_TRIPS = 8


class Moves:
    """Whether a value moves with (is computed from the induction variable of) any loop of a nest."""

    def __init__(self, nest: list[ir.Operation]) -> None:
        # `depends_on_iv` memoizes per induction variable.
        self._loops: list[tuple[ir.Operation, ir.Value, dict[ir.Value, bool]]] = [
            (l, loop_body(l).arguments[0], {}) for l in nest
        ]

    def __call__(self, value: ir.Value) -> bool:
        return any(depends_on_iv(value, iv, loop, memo) for loop, iv, memo in self._loops)


def memref_bytes(type: ir.Type) -> int | None:
    """The bytes of the elements a memref of `type` covers; None for another type or a dynamic shape."""
    if not isinstance(type, ir.MemRefType):
        return None
    memref = ir.MemRefType(type)
    if not memref.has_static_shape:
        return None
    return math.prod(memref.shape) * element_bits(memref.element_type) // 8


def loop_body(loop: ir.Operation) -> ir.Block:
    return loop.regions[0].blocks[0]


def only_inner_loop(loop: ir.Operation) -> ir.Operation | None:
    """The scf.for that is all of `loop`'s body (besides its yield): the next loop of a perfect nest."""
    body = list(loop_body(loop).operations)
    if len(body) == 2 and body[0].operation.name == "scf.for":
        return body[0].operation
    return None


Root = tuple[ir.Value, int | None]


def buffer_root(buffer: ir.Value) -> Root:
    """The buffer that `buffer` is a view of, as (underlying buffer, byte offset). An activation is a
    `memref.view` of the arena at a constant byte offset, and glow-allocate gives buffers that live at once
    disjoint bytes: views at distinct constant offsets are distinct buffers (None: not an arena view)."""
    base = buffer_base(buffer)
    if is_arena_view(base):
        view = base.owner.operation
        return buffer_root(view.operands[0])[0], constant_value(view.operands[1])
    return base, None


def buffer_base(buffer: ir.Value) -> ir.Value:
    """The whole buffer that `buffer` is a view of: an arena view (`buffer_root`), or a value that is no view."""
    while not is_arena_view(buffer) and not isinstance(buffer.owner, ir.Block):
        if buffer.owner.operation.name not in VIEWS:
            break
        buffer = buffer.owner.operation.operands[0]
    return buffer


def is_arena_view(buffer: ir.Value) -> bool:
    owner = buffer.owner
    return (not isinstance(owner, ir.Block) and owner.operation.name == "memref.view"
            and constant_value(owner.operation.operands[1]) is not None)  # fmt: skip


def defined_inside(value: ir.Value, loop: ir.Operation) -> bool:
    """Whether `value` is defined in `loop`'s body: its induction variable, or a result or block argument of
    an op nested in it."""
    owner = value.owner
    op = owner.owner if isinstance(owner, ir.Block) else owner.operation.parent
    while op is not None:
        if op.operation == loop.operation:
            return True
        op = op.parent
    return False


def defined_inside_any(value: ir.Value, loops: Iterable[ir.Operation]) -> bool:
    return any(defined_inside(value, l) for l in loops)


def depends_on_iv(value: ir.Value, iv: ir.Value, loop: ir.Operation, memo: dict[ir.Value, bool]) -> bool:
    """Whether `value` is computed from `iv`: through the operands of ops in `loop`, or as the induction
    variable of an inner loop whose start does (the start only: a tile's point loop begins at its tile)."""
    if value == iv:
        return True
    if value in memo:
        return memo[value]
    memo[value] = False
    result = False
    if defined_inside(value, loop):
        owner = value.owner
        if isinstance(owner, ir.Block):
            parent = owner.owner.operation
            if parent.name == "scf.for" and value == owner.arguments[0]:
                result = depends_on_iv(parent.operands[0], iv, loop, memo)
        elif not owner.operation.regions:
            result = any(depends_on_iv(v, iv, loop, memo) for v in owner.operation.operands)
    memo[value] = result
    return result


def constant_value(value: ir.Value) -> int | None:
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "arith.constant":
        return None
    attr = owner.operation.attributes["value"]
    return ir.IntegerAttr(attr).value if isinstance(attr, ir.IntegerAttr) else None


def trip_count(loop: ir.Operation) -> int:
    lower, upper, step = (constant_value(v) for v in list(loop.operands)[:3])
    if lower is None or upper is None or step is None or step <= 0:
        return UNKNOWN_TRIPS
    return max(0, -(-(upper - lower) // step))


def element_bits(type: ir.Type) -> int:
    """The bits of one element of `type` (64 for index)."""
    if isinstance(type, ir.IntegerType | ir.FloatType):
        return type.width
    return 64  # index, pointers


def moving_dims(buffer: ir.Value, indices: list[ir.Value], iv: ir.Value, loop: ir.Operation,
                 memo: dict[ir.Value, bool]) -> str:  # fmt: skip
    """The dims of `buffer` (accessed at `indices`) or of a buffer it views that move with `iv`, the one nearest
    the root, as 'd<k> of <shape>'; '' if none."""

    def label(dims: list[int], type: ir.Type) -> str:
        shape = "x".join(str(d) for d in ir.MemRefType(type).shape)
        return ",".join(f"d{d}" for d in dims) + f" of {shape}" if dims else ""

    found = label([k for k, v in enumerate(indices) if depends_on_iv(v, iv, loop, memo)], buffer.type)
    while not isinstance(buffer.owner, ir.Block) and buffer.owner.operation.name in VIEWS:
        view = buffer.owner.operation
        if view.name == "memref.subview":
            static = list(ir.DenseI64ArrayAttr(view.attributes["static_offsets"]))
            dynamic = iter(list(view.operands)[1:])
            dims = [k for k, offset in enumerate(static)
                    if offset == ir.ShapedType.get_dynamic_size() and depends_on_iv(next(dynamic), iv, loop, memo)]  # fmt: skip
            found = label(dims, view.operands[0].type) or found
        buffer = view.operands[0]
    return found
