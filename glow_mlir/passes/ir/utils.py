"""What the `glow_ir` memory optimizations share: buffers, their views, and who reads and writes them.

Between glow-irgen and glow-allocate a function is one block of instructions on memrefs. A buffer (a root)
is an `alloc_activation` result, an input or output argument, or a `memref.get_global` constant; a
`tensor_view` is the same bytes under another shape, so every access through a view is an access of its
root. Each instruction's `roles` mark its operands @in (read), @out (the whole operand is written) or
@inout (read, and partly written); `dealloc_activation` ends a buffer's life and is not an access.
"""

from __future__ import annotations

import ctypes

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
    """A glow_ir op that reads or writes buffers (not alloc, dealloc or view): one with operand roles. The roles
    are counted, not listed (the IR passes ask this of every user of every buffer: DenseNet-121's
    glow-ir-optimize-inserts spent half its time building the lists)."""
    if not op.name.startswith(ops.GLOW_IR) or op.name == DEALLOC or "roles" not in op.attributes:
        return False
    return len(ir.ArrayAttr(op.attributes["roles"])) > 0


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


def block_view(buffer: ir.Value, start: list[int], sizes: list[int]) -> ir.Operation:
    """A `block_view` of `buffer` at `start` of `sizes`, built at the insertion point: its type is the strided
    layout of that block of `buffer`'s bytes."""
    strides, offset = ir.MemRefType(buffer.type).get_strides_and_offset()
    layout = ir.StridedLayoutAttr.get(offset + sum(s * t for s, t in zip(start, strides, strict=True)), strides)
    view_type = ir.MemRefType.get(list(sizes), ops.element_type(buffer), layout=layout)
    return ops.create(BLOCK_VIEW, [buffer], [view_type], {"start": ops.i64_array(start)})


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
    # Known by address: `u not in found` compared each user with every one found, quadratic in a buffer that
    # glow-ir-share-buffers made hold a long in-place chain (HRM-Text QDQ's residual stream: 583 instructions).
    seen: set[int] = set()
    for value in views_and_self(buffer):
        for user in users(value):
            if is_instruction(user) and address(user) not in seen:
                seen.add(address(user))
                found.append(user)
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


# Order keys of neighbouring ops start this far apart: an op moved or inserted between two others takes the
# key halfway between theirs, and 16 such halvings fit in one place before the block is renumbered.
_KEY_GAP = 1 << 16

_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def address(op: ir.Operation) -> int:
    """The address of `op`'s MLIR operation: its identity while it lives. Not `hash(op)`: the bindings hash an
    Operation by its contents too (replacing an operand or setting an attribute changes it), so a dict keyed
    by ops misses one whose operands a pass replaced. Each Python object for the op has the same address."""
    return _capsule_pointer(op._CAPIPtr, b"mlir.ir.Operation._CAPIPtr")


class Positions:
    """The ops of a block in order, each with an order key, kept current through the moves, insertions and
    erasures made with its methods. Keys only compare: an op placed between two others takes a key between
    theirs, and the block is renumbered only when no integer is left there (as MLIR orders a block's ops):
    an edit costs O(1), and a renumbering O(n) once 16 edits split one gap. An index rebuilt after every
    edit made share-buffers and sink-alloc quadratic in the block. Ops are known by `address`, so every op
    created or erased while a Positions is in use must go through `inserted_before` and `erase`: an erased
    op's address may be a new op's."""

    def __init__(self, block: ir.Block) -> None:
        self._ops = {address(op): op for op in block_ops(block)}
        order = list(self._ops)
        self._first = order[0] if order else None
        # Each op's neighbours (None past either end); zip stops at the last op, also in an empty block.
        self._prev: dict[int, int | None] = dict(zip(order, [None, *order], strict=False))
        self._next: dict[int, int | None] = dict(zip(order, [*order[1:], None], strict=False))
        self._key: dict[int, int] = {}
        self._at_key: dict[int, int] = {}
        self._renumber()

    @property
    def order(self) -> list[ir.Operation]:
        """The block's ops in order (a new list)."""
        found: list[ir.Operation] = []
        at = self._first
        while at is not None:
            found.append(self._ops[at])
            at = self._next[at]
        return found

    def __contains__(self, op: ir.Operation) -> bool:
        """Whether `op` is in the block (not erased through `erase`)."""
        return address(op) in self._key

    def __getitem__(self, op: ir.Operation) -> int:
        """`op`'s order key: greater than those of the ops before it, less than those after it."""
        return self._key[address(op)]

    def at(self, key: int) -> ir.Operation:
        """The op whose order key is `key`."""
        return self._ops[self._at_key[key]]

    def after(self, op: ir.Operation) -> ir.Operation | None:
        """The op right after `op`; None after the last."""
        following = self._next[address(op)]
        return None if following is None else self._ops[following]

    def move_before(self, op: ir.Operation, anchor: ir.Operation) -> None:
        op.move_before(anchor)
        self._unlink(address(op))
        self._link_before(op, address(anchor))

    def move_after(self, op: ir.Operation, anchor: ir.Operation) -> None:
        op.move_after(anchor)
        self._unlink(address(op))
        at, anchor_at = address(op), address(anchor)
        following = self._next[anchor_at]
        if following is not None:
            self._link_before(op, following)
            return
        self._ops[at] = op
        self._prev[at], self._next[at], self._next[anchor_at] = anchor_at, None, at
        self._set_key(at, self._key[anchor_at] + _KEY_GAP)

    def inserted_before(self, op: ir.Operation, anchor: ir.Operation) -> None:
        """Records `op`, just created right before `anchor` in the block."""
        self._link_before(op, address(anchor))

    def erase(self, op: ir.Operation) -> None:
        # Forgotten before it is destroyed: a later op may be created at its address.
        self._unlink(address(op))
        op.erase()

    def _unlink(self, at: int) -> None:
        before, after = self._prev.pop(at), self._next.pop(at)
        del self._ops[at], self._at_key[self._key.pop(at)]
        if before is None:
            self._first = after
        else:
            self._next[before] = after
        if after is not None:
            self._prev[after] = before

    def _link_before(self, op: ir.Operation, anchor: int) -> None:
        at, before = address(op), self._prev[anchor]
        self._ops[at] = op
        self._prev[at], self._next[at], self._prev[anchor] = before, anchor, at
        if before is None:
            self._first = at
        else:
            self._next[before] = at
        low = self._key[before] if before is not None else 0
        if self._key[anchor] - low < 2:
            self._renumber()
        else:
            self._set_key(at, (low + self._key[anchor]) // 2)

    def _set_key(self, at: int, key: int) -> None:
        self._key[at] = key
        self._at_key[key] = at

    def _renumber(self) -> None:
        self._key.clear()
        self._at_key.clear()
        at, key = self._first, _KEY_GAP
        while at is not None:
            self._set_key(at, key)
            at, key = self._next[at], key + _KEY_GAP

    def last_access(self, buffer: ir.Value) -> int:
        """The order key of the last instruction accessing `buffer` (through views too); -1 if none."""
        return max((self[op] for op in accessing(buffer)), default=-1)

    def written_after(self, buffer: ir.Value, key: int) -> bool:
        """Whether an instruction after the op of order key `key` writes `buffer` (through views too)."""
        return any(self[op] > key and any(r == buffer for r, _ in writes(op)) for op in accessing(buffer))

    def used_before(self, value: ir.Value, key: int) -> bool:
        """Whether any op before the op of order key `key` uses `value` or a view of it (a view's definition
        counts)."""
        return any(self[u] < key for v in views_and_self(value) for u in users(v))


def retarget(
    old: ir.Operation, new: ir.Value, positions: Positions, deallocs: dict[int, ir.Operation] | None = None
) -> None:
    """Makes every later use of alloc `old`'s buffer use `new` (of the same type) instead, erases `old` and
    its dealloc, and keeps `new`'s root alive as long as `old` was: its dealloc moves to where `old`'s was
    when that is later.

    `deallocs`, each alloc's dealloc by the alloc's `address`, saves listing the users of `new`'s root (a
    pass retargeting many allocs into one buffer made quadratic by that): it is kept current here."""
    buffer = old.results[0]
    new_root = root(new)
    if deallocs is None:
        old_dealloc = dealloc_of(buffer)
        new_dealloc = dealloc_of(new_root) if is_activation(new_root) else None
    else:
        # Taken before `old` is erased: a later op may be created at its address.
        old_dealloc = deallocs.pop(address(old), None)
        new_dealloc = deallocs.get(address(producer(new_root))) if is_activation(new_root) else None
    if old_dealloc is not None:
        if new_dealloc is not None and positions[new_dealloc] < positions[old_dealloc]:
            positions.move_after(new_dealloc, old_dealloc)
        positions.erase(old_dealloc)
    buffer.replace_all_uses_with(new)
    positions.erase(old)


def deallocs_by_alloc(block: ir.Block) -> dict[int, ir.Operation]:
    """Each alloc's dealloc in `block`, by the alloc's `address` (for `retarget`)."""
    return {address(producer(op.operands[0])): op for op in block_ops(block) if op.name == DEALLOC}


def erase_unused_views(block: ir.Block) -> None:
    """Erases the views nothing uses (a view's source view may become unused in turn)."""
    for op in reversed(block_ops(block)):
        if op.name in VIEWS and not list(op.results[0].uses):
            op.erase()
