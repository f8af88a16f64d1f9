"""What the `glow_ir` memory optimizations share: buffers, their views, and who reads and writes them.

Between glow-irgen and glow-allocate a function is one block of instructions on memrefs. A buffer (a root)
is an `alloc_activation` result, an input or output argument, or a `memref.get_global` constant; a
`tensor_view` is the same bytes under another shape, so every access through a view is an access of its
root. Each instruction's `roles` mark its operands @in (read), @out (the whole operand is written) or
@inout (read, and partly written); `dealloc_activation` ends a buffer's life and is not an access.
"""

from __future__ import annotations

from mlir import ir

from glow_mlir import opdefs, ops

ALLOC = "glow_ir.alloc_activation"
DEALLOC = "glow_ir.dealloc_activation"
VIEW = "glow_ir.tensor_view"
BLOCK_VIEW = "glow_ir.block_view"
# Ops whose result is (part of) the bytes of their operand: accesses through them access the operand's root.
VIEWS = (VIEW, BLOCK_VIEW)
GLOBAL = "memref.get_global"
OUTPUT_ATTR = "glow.output"

# Instructions computing each destination element from the source elements at the same index only (a
# linalg.generic with identity maps, or a copy): the destination may be one of its @in buffers, provided the
# two operands have the same type, so the in-place kernel reads each element before it overwrites it.
IN_PLACE = opdefs.in_place()


def body(function: ir.Operation) -> ir.Block:
    return function.regions[0].blocks[0]


def block_ops(block: ir.Block) -> list[ir.Operation]:
    return [op.operation for op in block.operations]


def producer(value: ir.Value) -> ir.Operation | None:
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def users(value: ir.Value) -> list[ir.Operation]:
    return [use.owner.operation if isinstance(use.owner, ir.OpView) else use.owner for use in value.uses]


def root(value: ir.Value) -> ir.Value:
    """The buffer `value` is, or is a (nested) view of."""
    op = producer(value)
    while op is not None and op.name in VIEWS:
        value = op.operands[0]
        op = producer(value)
    return value


def is_activation(buffer: ir.Value) -> bool:
    op = producer(buffer)
    return op is not None and op.name == ALLOC


def is_global(buffer: ir.Value) -> bool:
    op = producer(buffer)
    return op is not None and op.name == GLOBAL


def is_instruction(op: ir.Operation) -> bool:
    """A glow_ir op that reads or writes buffers (not alloc, dealloc or view)."""
    return op.name.startswith(ops.GLOW_IR) and op.name != DEALLOC and bool(ops.roles(op))


def operand_roles(op: ir.Operation) -> list[tuple[ir.Value, str]]:
    return list(zip(op.operands, ops.roles(op), strict=True))


def reads(op: ir.Operation) -> list[ir.Value]:
    """The roots an instruction reads (@in and @inout operands)."""
    return [root(v) for v, role in operand_roles(op) if role in ("in", "inout")]


def writes(op: ir.Operation) -> list[tuple[ir.Value, str]]:
    """(root, role) of each buffer an instruction writes (@out: all of it, @inout: part of it). Writing all
    of a block_view writes part of its root: @inout."""
    return [
        (root(v), "inout" if role == "out" and is_partial(v) else role)
        for v, role in operand_roles(op)
        if role in ("out", "inout")
    ]


def is_partial(value: ir.Value) -> bool:
    """Whether `value` is a view through a block_view: part of its root's bytes."""
    op = producer(value)
    while op is not None and op.name in VIEWS:
        if op.name == BLOCK_VIEW:
            return True
        op = producer(op.operands[0])
    return False


def views_and_self(buffer: ir.Value) -> list[ir.Value]:
    """`buffer` and every (nested) view of it."""
    found = [buffer]
    for user in users(buffer):
        if user.name in VIEWS:
            found.extend(views_and_self(user.results[0]))
    return found


def accessing(buffer: ir.Value) -> list[ir.Operation]:
    """The instructions that read or write `buffer` directly or through views (deallocs and views excluded)."""
    found: list[ir.Operation] = []
    for value in views_and_self(buffer):
        found.extend(u for u in users(value) if is_instruction(u) and u not in found)
    return found


def dealloc_of(buffer: ir.Value) -> ir.Operation | None:
    deallocs = [u for u in users(buffer) if u.name == DEALLOC]
    return deallocs[0] if deallocs else None


def output_arguments(function: ir.Operation) -> set[ir.Value]:
    """The block arguments marked `glow.output`."""
    arguments = body(function).arguments
    if "arg_attrs" not in function.attributes:
        return set()
    marks = [OUTPUT_ATTR in ir.DictAttr(d) for d in ir.ArrayAttr(function.attributes["arg_attrs"])]
    return {arg for arg, is_output in zip(arguments, marks, strict=True) if is_output}


class Positions:
    """The ops of a block in order, with each op's index, kept current through the moves, insertions and
    erasures made with its methods (re-reading a block's ops from MLIR costs far more than updating a list).
    The index is rebuilt lazily, once per batch of changes, so that a pass making thousands of rewrites stays
    linear in practice."""

    def __init__(self, block: ir.Block) -> None:
        self.order = block_ops(block)
        self._index: dict[ir.Operation, int] | None = None

    @property
    def index(self) -> dict[ir.Operation, int]:
        if self._index is None:
            self._index = {op: i for i, op in enumerate(self.order)}
        return self._index

    def __getitem__(self, op: ir.Operation) -> int:
        return self.index[op]

    def at(self, index: int) -> ir.Operation:
        return self.order[index]

    def move_before(self, op: ir.Operation, anchor: ir.Operation) -> None:
        op.move_before(anchor)
        self.order.pop(self.index[op])
        self.order.insert(self.order.index(anchor), op)
        self._index = None

    def move_after(self, op: ir.Operation, anchor: ir.Operation) -> None:
        op.move_after(anchor)
        self.order.pop(self.index[op])
        self.order.insert(self.order.index(anchor) + 1, op)
        self._index = None

    def inserted_before(self, op: ir.Operation, anchor: ir.Operation) -> None:
        """Records `op`, just created right before `anchor` in the block."""
        self.order.insert(self.index[anchor], op)
        self._index = None

    def erase(self, op: ir.Operation) -> None:
        self.order.pop(self.index[op])
        op.erase()
        self._index = None

    def last_access(self, buffer: ir.Value) -> int:
        """The index of the last instruction accessing `buffer` (through views too); -1 if none."""
        return max((self.index[op] for op in accessing(buffer)), default=-1)

    def written_after(self, buffer: ir.Value, index: int) -> bool:
        """Whether an instruction after `index` writes `buffer` (through views too)."""
        return any(
            self.index[op] > index and any(r == buffer for r, _ in writes(op)) for op in accessing(buffer)
        )

    def used_before(self, value: ir.Value, index: int) -> bool:
        """Whether any op before `index` uses `value` or a view of it (a view's definition counts)."""
        return any(self.index[u] < index for v in views_and_self(value) for u in users(v))


def retarget(old: ir.Operation, new: ir.Value, positions: Positions) -> None:
    """Makes every later use of alloc `old`'s buffer use `new` (of the same type) instead, erases `old` and
    its dealloc, and keeps `new`'s root alive as long as `old` was: its dealloc moves to where `old`'s was
    when that is later."""
    buffer = old.results[0]
    old_dealloc = dealloc_of(buffer)
    new_root = root(new)
    new_dealloc = dealloc_of(new_root) if is_activation(new_root) else None
    if old_dealloc is not None:
        if new_dealloc is not None and positions[new_dealloc] < positions[old_dealloc]:
            positions.move_after(new_dealloc, old_dealloc)
        positions.erase(old_dealloc)
    buffer.replace_all_uses_with(new)
    positions.erase(old)


def erase_unused_views(block: ir.Block) -> None:
    """Erases the views nothing uses (a view's source view may become unused in turn)."""
    for op in reversed(block_ops(block)):
        if op.name in VIEWS and not list(op.results[0].uses):
            op.erase()
