"""glow-ir-optimize-inserts: the instruction that computes an inserted block writes it in place, into the
insert's destination (Glow's TensorView with offsets, as its IR optimizer uses for concats).

glow-lower pads an input as insert_tensor(splat, x), and IRGen writes a concat as one insert_tensor per
input: each copies a block that an instruction has just computed into a bigger buffer, which a padded
convolution or a concat's consumer then reads. For `insert_tensor(P, S)` at `start`, S becomes a
`glow_ir.block_view` of P at `start`: the instruction W that computed S writes straight into that block of P,
every reader of S reads it there, and the insert and S's buffer disappear. It applies when:

1. S is an activation that only W writes, through an @out operand that is S itself, and S has no views;
2. P is an activation or an output argument of S's element type that neither W nor another reader of S
   writes;
3. between W and the last access of S, P is only written by splats that come before the insert (the zeros of
   a padding: they take no inputs and move, with P's alloc, before W) and by inserts or block views of
   blocks disjoint from S's (a concat's other inputs); nothing reads P there;
4. W and the readers of S are kernels that take strided buffers (NHWC convolutions and pools, elementwise
   instructions, copies, inserts and transposes: the model's NCHW input transposed into the stem's padding),
   since a block of P is a strided view.

P then lives from W on instead of from the insert. The pass runs once every buffer-merging optimization is
done, right before glow-allocate: the others treat a block view's writes as partial (`utils.writes`).
"""

from __future__ import annotations

from collections.abc import Sequence

from mlir import ir

from glow_mlir import ops
from glow_mlir.passes.ir import utils as u
from glow_mlir.passes.registry import register

INSERT = "glow_ir.insert_tensor"
SPLAT = "glow_ir.splat"
# Kernels whose lowering works on strided buffers (linalg ops on any memref layout).
STRIDED_KERNELS = frozenset(
    {
        "glow_ir.cpu_conv_nhwc",
        "glow_ir.cpu_max_pool_nhwc",
        "glow_ir.cpu_avg_pool_nhwc",
        "glow_ir.insert_tensor",
        "glow_ir.transpose",
        *u.IN_PLACE,
    }
)

Block = tuple[Sequence[int], Sequence[int]]  # (start, sizes)


def optimize_inserts_function(function: ir.Operation) -> bool:
    """Sweeps the inserts in program order, rewriting each that qualifies, until a sweep rewrites none (a
    rewrite can make an earlier insert qualify). Each rewrite keeps `positions` current, so a concat-heavy
    model (DenseNet: hundreds of inserts) costs a few sweeps, not a rescan per rewrite."""
    positions = u.Positions(u.body(function))
    outputs = u.output_arguments(function)
    changed = False
    while True:
        rewrote = False
        for op in [op for op in positions.order if op.name == INSERT]:
            if op in positions and _rewrite(op, positions, outputs):
                rewrote = True
        if not rewrote:
            return changed
        changed = True


def _rewrite(insert: ir.Operation, positions: u.Positions, outputs: set[ir.Value]) -> bool:
    dest, src = insert.operands
    if not (u.is_activation(src) and (u.is_activation(dest) or dest in outputs)):
        return False
    if any(user.name in u.VIEWS for user in u.users(src)):
        return False
    writers = [op for op in u.accessing(src) if any(r == src for r, _ in u.writes(op))]
    if len(writers) != 1:
        return False
    writer = writers[0]
    if positions[writer] > positions[insert] or (src, "out") not in u.operand_roles(writer):
        return False
    if writer.name not in STRIDED_KERNELS or any(op.name not in STRIDED_KERNELS for op in u.accessing(src)):
        return False
    if ops.element_type(dest) != ops.element_type(src) or any(u.root(v) == dest for v in writer.operands):
        return False
    # A reader of S that also writes P (S inserted into P twice) would then read P while writing it.
    readers = [op for op in u.accessing(src) if op not in (writer, insert)]
    if any(u.root(v) == dest for op in readers for v, role in u.operand_roles(op) if role != "in"):
        return False
    start = ops.ints(insert, "start")
    block = (start, ops.shape(src))
    fills = _movable_fills(dest, block, positions[writer], positions[insert], positions.last_access(src), positions)
    if fills is None:
        return False

    alloc = u.producer(dest)
    if alloc is not None and positions[alloc] > positions[writer]:
        positions.move_before(alloc, writer)
    for fill in fills:
        positions.move_before(fill, writer)
    with ir.InsertionPoint(writer), insert.location:
        view_op = u.block_view(dest, start, list(ops.shape(src)))
    positions.inserted_before(view_op.operation, writer)
    dealloc = u.dealloc_of(src)
    if dealloc is not None:
        positions.erase(dealloc)
    positions.erase(insert)
    src_alloc = u.producer(src)
    src.replace_all_uses_with(view_op.results[0])
    positions.erase(src_alloc)
    return True


def _movable_fills(
    dest: ir.Value, block: Block, first: int, insert_at: int, last: int, positions: u.Positions
) -> list[ir.Operation] | None:
    """The splats of `dest` between `first` (W) and `insert_at` that must move before W, or None when some
    access of `dest` in (first, last] other than those and disjoint blocks forbids the rewrite."""
    fills: list[ir.Operation] = []
    others = False
    for op in sorted(u.accessing(dest), key=lambda o: positions[o]):
        at = positions[op]
        if at <= first or at > last or at == insert_at:
            continue
        if op.name == SPLAT and op.operands[0] == dest and at < insert_at:
            # A splat moved before a write it used to overwrite would let that write through.
            if others:
                return None
            fills.append(op)
            continue
        if not _writes_apart(op, dest, block):
            return None
        others = True
    return fills


def _writes_apart(op: ir.Operation, dest: ir.Value, block: Block) -> bool:
    """Whether instruction `op` only writes blocks of `dest` disjoint from `block` (an insert_tensor into
    dest, or writes through block_views of dest) and reads nothing of dest."""
    if op.name == INSERT and op.operands[0] == dest:
        return u.root(op.operands[1]) != dest and _apart((ops.ints(op, "start"), ops.shape(op.operands[1])), block)
    for value, role in u.operand_roles(op):
        if u.root(value) != dest:
            continue
        owner = u.producer(value)
        if role == "in" or owner is None or owner.name != u.BLOCK_VIEW or owner.operands[0] != dest:
            return False
        if not _apart((ops.ints(owner, "start"), ops.shape(value)), block):
            return False
    return True


def _apart(a: Block, b: Block) -> bool:
    """Whether two blocks of one buffer share no element."""
    return any(sa + na <= sb or sb + nb <= sa for sa, na, sb, nb in zip(a[0], a[1], b[0], b[1], strict=True))


@register("glow-ir-optimize-inserts")
def ir_optimize_inserts(module: ir.Module) -> None:
    """Make the instruction computing an inserted block (a padding's interior, a concat's input) write it in
    place through a block_view of the insert's destination."""
    for function in ops.functions(module):
        optimize_inserts_function(function)
