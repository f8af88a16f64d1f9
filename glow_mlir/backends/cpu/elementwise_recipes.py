"""glow-cpu-schedule's recipes of linalg.generic, linalg.fill and linalg.copy: vectorized loop nests.

Broadcast copies are first folded into the op that reads them (`forward_broadcasts`: that op reads the small
source through the broadcast's map). Each op gets the vector recipe of recipes.py (tiles of 1 along the outer
loop dims and about one cache line of vectors along the innermost). A run of elementwise generics that work
in place on one buffer (glow-ir-share-buffers makes those: ResNet's add then ReLU) is marked by `mark_chains`
before the recipes run, and the last op of the run takes the whole chain into one loop nest on tensors: one
pass over memory instead of one per op. An elementwise op on contiguous buffers whose last dim would take masked
vectors in every row (attention's 197 x 197 scores) runs on the buffers seen flat (`flattened`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np
from mlir import ir
from mlir.dialects import linalg

from glow_mlir import ops

from glow_mlir.backends.cpu import transform as steps
from glow_mlir.backends.cpu.recipes import (
    CHAIN_MARK,
    CLAIMED_MARKS,
    Recipe,
    _bytes as element_bytes,
    block_at,
    collapse_dims,
    elementwise_recipe,
    elementwise_recipe_steps,
    generic_on_tensors,
    on_tensors,
    recipe,
    vector_budget,
    write_back,
)
from glow_mlir.backends.cpu.rowreduce_recipes import row_reduction_recipe
from glow_mlir.codegen.builders import has_identity_layout


@recipe("linalg.generic")
def generic_recipe(op: ir.Operation) -> Recipe | None:
    """Elementwise ops, broadcasts, batched_add, conversions, selects, reductions and fused epilogues; the
    last op of an elementwise chain (`mark_chains`) takes the whole chain into one loop nest, and a row
    reduction gets the kernel of rowreduce_recipes.py."""
    chain = _chain_ending_at(op)
    if len(chain) > 1:
        return _chain_recipe(chain)
    reduction = row_reduction_recipe(op)
    if reduction is not None:
        return reduction
    flat = flattened(op)
    if flat is not None:
        parts = [elementwise_recipe(part) for part in flat]
        return Recipe(tuple(k for part in parts if part is not None for k in part.kernels))
    fewer = collapsed(op)
    if fewer is not None:
        return generic_recipe(fewer)
    return elementwise_recipe(op)


def collapsed(op: ir.Operation) -> ir.Operation | None:
    """Generic `op` with its innermost loop dims as one, where the vector recipe would give it no vectors or
    masked ones and takes the collapsed op unmasked or at all: a reduction or broadcast product over the
    trailing [H, W] of an NCHW tensor (a squeeze-and-excite block's mean and scaling on a 6x6 map, which ran as
    scalar loops). The innermost dims `_collapsible_run` finds merge when every operand walks them as one
    contiguous run of its own dims or reads none of them. None where it does not apply; else the new op, which
    replaces `op`."""
    if op.name != "linalg.generic" or any(mark in op.attributes for mark in CLAIMED_MARKS):
        return None
    if not all(isinstance(v.type, ir.MemRefType) for v in op.operands):
        return None
    if any(inner.name == "linalg.index" for inner in ops.walk_ops(op)):
        return None
    before = elementwise_recipe_steps(op)
    if before is not None and not before[1]:
        return None
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    iterators = list(ir.ArrayAttr(op.attributes["iterator_types"]))
    first = _collapsible_run(op, maps, [str(k) for k in iterators])
    if first is None:
        return None
    regrouped = [_regrouped(m, ir.MemRefType(v.type).shape, first) for v, m in zip(op.operands, maps, strict=True)]
    if any(r is None for r in regrouped):
        return None
    new_maps, views = [], []
    with op.location, ir.InsertionPoint(op):
        for value, (groups, results) in zip(op.operands, regrouped, strict=True):  # type: ignore[misc]
            views.append(collapse_dims(value, groups) if len(groups) < ir.MemRefType(value.type).rank else value)
            new_maps.append(ir.AffineMap.get(first + 1, 0, results))
        generic = _with_body_of(op, views, new_maps, iterators[: first + 1])
    after = elementwise_recipe_steps(generic)
    if after is None or (before is not None and after[1]):
        generic.erase()
        return None
    op.erase()
    return generic


def _with_body_of(op: ir.Operation, views: list[ir.Value], maps: list[ir.AffineMap],
                  iterators: list[ir.Attribute]) -> ir.Operation:  # fmt: skip
    """A linalg.generic on `views` (inputs, then the output) with `maps` and `iterators` and a copy of generic
    `op`'s body, at the current insertion point."""
    generic = linalg.GenericOp(
        result_tensors=[], inputs=views[:-1], outputs=views[-1:],
        indexing_maps=ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
        iterator_types=ir.ArrayAttr.get(iterators),
    )  # fmt: skip
    copy = op.clone()
    copy.regions[0].blocks[0].append_to(generic.regions[0])
    copy.erase()
    return generic.operation


def _regrouped(
    amap: ir.AffineMap, shape: list[int], first: int
) -> tuple[list[list[int]], list[ir.AffineExpr]] | None:
    """An operand's dims grouped for `collapsed` (the loop dims from `first` on as one, each constant index of
    a size-1 dim with the dim before it, or after it when first) and the results of its new map; None for a
    constant index of a longer dim."""
    groups: list[list[int]] = []
    results: list[ir.AffineExpr] = []
    pending: list[int] = []
    for i, e in enumerate(amap.results):
        if not isinstance(e, ir.AffineDimExpr):
            if shape[i] != 1:
                return None
            (groups[-1] if groups else pending).append(i)
            continue
        position = min(e.position, first)
        if position == first and results and results[-1] == ir.AffineDimExpr.get(first):
            groups[-1].append(i)
            continue
        groups.append([*pending, i])
        pending = []
        results.append(ir.AffineDimExpr.get(position))
    if pending:
        return None
    return groups, results


def _collapsible_run(op: ir.Operation, maps: list[ir.AffineMap], iterators: list[str]) -> int | None:
    """The first of the innermost loop dims that can be one (all of one iterator type, each operand reading them
    as `_reads_as_run`), or None when only the innermost can."""
    n = maps[0].n_dims
    first = n - 1
    while first > 0 and iterators[first - 1] == iterators[-1] and all(
        _reads_as_run(v, amap, range(first - 1, n)) for v, amap in zip(op.operands, maps, strict=True)
    ):
        first -= 1
    return first if first < n - 1 else None


def _reads_as_run(value: ir.Value, amap: ir.AffineMap, dims: range) -> bool:
    """Whether an operand reads loop `dims` as consecutive dims of its own, in order and contiguous in memory
    (one dim of a `memref.collapse_shape`), or reads none of them."""
    where = {e.position: i for i, e in enumerate(amap.results) if isinstance(e, ir.AffineDimExpr)}
    positions = [where.get(d) for d in dims]
    if all(p is None for p in positions):
        return True
    if None in positions or positions != list(range(positions[0], positions[0] + len(positions))):
        return False
    t = ir.MemRefType(value.type)
    strides, _ = t.get_strides_and_offset()
    return all(strides[p] == strides[p + 1] * t.shape[p + 1] for p in positions[:-1])


def flattened(op: ir.Operation) -> list[ir.Operation] | None:
    """An elementwise generic (identity maps, parallel loops, no linalg.index) on contiguous buffers of one
    shape whose last dim takes masked vectors (a row of 197 or 49 elements: attention's scores in ViT and
    Swin), as generics on the buffers seen flat: one over the whole vectors, one over the rest. Rows of 197
    ran their softmax's exp at 0.21 ns per element against 0.12 for rows of 192 (3 x 197 x 197, 24 us); flat,
    14.6 us. Likewise one the vector recipe does not take (rows shorter than 8, i1 buffers: a LeakyRelu's
    select on its comparison's mask): flat, its scalar loop is one long loop that LLVM vectorizes, not one of
    4 or 8 iterations per row (HiFi-GAN's [1, 8192, 4] channels-last activations). None where it does not
    apply; else the new ops, which replace `op`."""
    if op.name != "linalg.generic" or not _pointwise(op):
        return None
    buffers = list(op.operands)
    if not all(isinstance(v.type, ir.MemRefType) and has_identity_layout(v) for v in buffers):
        return None
    rank = ir.MemRefType(buffers[0].type).rank
    if len({tuple(ir.MemRefType(v.type).shape) for v in buffers}) != 1 or rank < 2:
        return None
    if any(inner.name == "linalg.index" for inner in ops.walk_ops(op)):
        return None
    chosen = elementwise_recipe_steps(op)
    if chosen is not None and not chosen[1]:
        return None
    total = math.prod(ir.MemRefType(buffers[0].type).shape)
    if chosen is None and ir.MemRefType(buffers[0].type).shape[-1] == total:
        return None  # one row already
    length = vector_budget(max(element_bytes(ir.MemRefType(v.type).element_type) for v in buffers))
    whole = total - total % length
    pieces = [(0, whole), (whole, total - whole)] if whole and whole < total else [(0, total)]
    new: list[ir.Operation] = []
    with op.location, ir.InsertionPoint(op):
        flat = [collapse_dims(v, [list(range(rank))]) for v in buffers]
        for start, size in pieces:
            views = [block_at(v, [start], [size]) if size < total else v for v in flat]
            parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
            new.append(_with_body_of(op, views, [ir.AffineMap.get_identity(1)] * len(views), [parallel]))
    op.erase()
    return new


def _pointwise(op: ir.Operation) -> bool:
    """Whether generic `op` reads and writes each element at its own index: identity maps, parallel loops."""
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    if any(m != ir.AffineMap.get_identity(m.n_dims) for m in maps):
        return False
    return all("parallel" in str(k) for k in ir.ArrayAttr(op.attributes["iterator_types"]))


def _chainable(op: ir.Operation) -> bool:
    """An elementwise generic on memrefs that the vector recipe takes without masking: identity maps only
    (all operands of one shape), parallel loops, pure arithmetic body, whole vectors along the last dim."""
    if op.name != "linalg.generic" or any(mark in op.attributes for mark in CLAIMED_MARKS):
        return False
    if not all(isinstance(v.type, ir.MemRefType) for v in op.operands):
        return False
    if not _pointwise(op) or list(op.regions[0].blocks[0].arguments[-1].uses):
        return False
    steps = elementwise_recipe_steps(op)
    return steps is not None and not steps[1]


def _continues(previous: ir.Operation, op: ir.Operation) -> bool:
    """Whether `op` works in place on `previous`'s destination and reads it: the intermediate value is then
    dead once `op` has read it, and the two can run in one loop nest."""
    dest = previous.operands[-1]
    return op.operands[-1] == dest and any(v == dest for v in op.operands[:-1]) and op.operands[-1].type == dest.type


def mark_chains(function: ir.Operation) -> None:
    """Forwards broadcasts into their readers (`forward_broadcasts`), then marks every op but the last of each
    run of consecutive elementwise generics in which each works in place on the previous one's destination
    (glow-ir-share-buffers makes those: ResNet's add then ReLU), or reads a temporary that the previous one wrote
    for it alone (`_forward_temporary`: SiLU's x * sigmoid(x) on an input that stays live)."""
    forward_broadcasts(function)
    previous: ir.Operation | None = None
    for op in [o.operation for o in function.regions[0].blocks[0].operations]:
        # Views and constants between two links (glow-irgen's view of the next buffer, the ReLU's zero) touch no
        # memory: they used to end the chain, so that ResNet's add and ReLU ran as two passes.
        if op.name in _PURE:
            continue
        # Asked once per op (a recipe's steps are derived each time: 3.5 s of HRM-Text QDQ's compile when asked
        # twice); `_forward_temporary` swaps operands of the same type only, which keeps the answer.
        chainable = _chainable(op)
        if chainable and previous is not None and (_continues(previous, op) or _forward_temporary(previous, op)):
            previous.attributes[CHAIN_MARK] = ir.UnitAttr.get()
        previous = op if chainable else None


def _forward_temporary(previous: ir.Operation, op: ir.Operation) -> bool:
    """Where `op` reads `previous`'s destination, a temporary that nothing else uses, and writes a buffer of its
    type that neither op reads otherwise: `previous` writes `op`'s destination instead, and `op` reads it there
    in place, so the two are a chain (`_continues`) and the temporary is never written. x * sigmoid(x) on an x
    that stays live (a graph input, a residual) ran as two passes with a buffer between them: SiLU over 256K
    floats took 21 cycles a vector against 12 for the sigmoid alone."""
    temporary, dest = previous.operands[-1], op.operands[-1]
    if temporary == dest or temporary.type != dest.type or isinstance(temporary.owner, ir.Block):
        return False
    if not any(v == temporary for v in op.operands[:-1]):
        return False
    if any(use.owner.operation not in (previous, op) for use in temporary.uses):
        return False
    inputs = [v for v in (*previous.operands[:-1], *op.operands[:-1]) if v != temporary]
    if not all(_disjoint(v, dest) for v in inputs if isinstance(v.type, ir.MemRefType)):
        return False
    previous.operands[len(previous.operands) - 1] = dest
    for position, value in enumerate(list(op.operands)[:-1]):
        if value == temporary:
            op.operands[position] = dest
    return True


# Ops that only name memory (views, casts, constants): a broadcast's reader may follow it past these.
_PURE = ("arith.constant", "memref.view", "memref.reinterpret_cast", "memref.subview", "memref.expand_shape",
         "memref.collapse_shape", "memref.get_global")


def forward_broadcasts(function: ir.Operation) -> None:
    """Folds each broadcast copy into the generic right after it that reads the copy: that generic reads the
    broadcast's source through the broadcast's own map, and the copy (a full pass writing the large tensor,
    and one reading it back) is gone. glow.broadcast is such a copy: layer norm's mean and 1/stddev over the
    hidden dim, attention's mask over the heads, squeeze-and-excite's channel scale over H x W.

    Only when the reader is the next op that touches memory (nothing can write the source in between), nothing
    after it can read what the copy held (`_forwardable`), the reader's output cannot overlap the source (the
    allocator may reuse a source that dies at the broadcast for the reader's output), and neither op belongs
    to another op's recipe (a convolution's bias and activation)."""
    ops_in_block = [o.operation for o in function.regions[0].blocks[0].operations]
    for i, op in enumerate(ops_in_block):
        if not _is_broadcast_copy(op):
            continue
        reader = next((o for o in ops_in_block[i + 1 :] if o.name not in _PURE), None)
        copy = op.operands[1]
        if reader is None or reader.name != "linalg.generic" or not _forwardable(copy, op, reader):
            continue
        if any(mark in o.attributes for o in (op, reader) for mark in CLAIMED_MARKS):
            continue
        source = op.operands[0]
        if not _disjoint(source, reader.operands[-1]):
            continue
        source_map = ir.ArrayAttr(op.attributes["indexing_maps"])[0]
        maps = list(ir.ArrayAttr(reader.attributes["indexing_maps"]))
        for position, value in enumerate(list(reader.operands)[:-1]):
            if value == copy:
                reader.operands[position] = source
                maps[position] = source_map
        reader.attributes["indexing_maps"] = ir.ArrayAttr.get(maps)
        op.erase()


def _is_broadcast_copy(op: ir.Operation) -> bool:
    """A generic on memrefs that copies its one input into its output along a map of increasing loop dims and
    zeros (a broadcast, no transpose), writing the whole output (identity output map, parallel loops)."""
    if op.name != "linalg.generic" or len(op.operands) != 2:
        return False
    if not all(isinstance(v.type, ir.MemRefType) for v in op.operands):
        return False
    source, dest = (ir.MemRefType(v.type) for v in op.operands)
    if source.element_type != dest.element_type:
        return False
    in_map, out_map = (ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"]))
    if out_map != ir.AffineMap.get_identity(out_map.n_dims) or in_map == out_map:
        return False
    dims = [e.position for e in in_map.results if isinstance(e, ir.AffineDimExpr)]
    zeros = [e for e in in_map.results if not isinstance(e, ir.AffineDimExpr)]
    if dims != sorted(set(dims)) or any(str(e) != "0" for e in zeros):
        return False
    if any("parallel" not in str(k) for k in ir.ArrayAttr(op.attributes["iterator_types"])):
        return False
    body = op.regions[0].blocks[0]
    [yield_op] = list(body.operations) if len(list(body.operations)) == 1 else [None]
    return yield_op is not None and len(yield_op.operands) == 1 and yield_op.operands[0] == body.arguments[0]


def _forwardable(copy: ir.Value, broadcast: ir.Operation, reader: ir.Operation) -> bool:
    """Whether `reader` reads `copy` as inputs only through the identity map, and nothing after it can read what
    the broadcast wrote there: either `reader` overwrites all of `copy` without reading its old elements
    (glow-ir-share-buffers puts sub(x, broadcast) in place in the broadcast's buffer; parallel loops, identity
    output map, output element unused), or nothing but the broadcast and `reader` uses `copy` (no view of it,
    no later reader)."""
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(reader.attributes["indexing_maps"])]
    last = len(reader.operands) - 1
    positions = [i for i, v in enumerate(reader.operands) if v == copy and i != last]
    if not positions or not all(maps[i] == ir.AffineMap.get_identity(maps[i].n_dims) for i in positions):
        return False
    if reader.operands[last] != copy:
        return all(use.owner == broadcast or use.owner == reader for use in copy.uses)
    body = reader.regions[0].blocks[0]
    return (
        maps[last] == ir.AffineMap.get_identity(maps[last].n_dims)
        and all("parallel" in str(k) for k in ir.ArrayAttr(reader.attributes["iterator_types"]))
        and not list(body.arguments[len(body.arguments) - 1].uses)
    )


def _disjoint(source: ir.Value, output: ir.Value) -> bool:
    """Whether the bytes of `source` and `output` cannot overlap: different function arguments or globals, or
    views of one arena at disjoint constant offsets."""
    a, b = _base_and_span(source), _base_and_span(output)
    if a is None or b is None:
        return False
    (base_a, start_a, end_a), (base_b, start_b, end_b) = a, b
    if base_a != base_b:
        return True
    return end_a <= start_b or end_b <= start_a


def _base_and_span(value: ir.Value) -> tuple[str, int, int] | None:
    """(the function argument or global a memref lies in, its first byte there, its end byte) through views
    and offset-free casts; None when an offset is not a constant."""
    t = ir.MemRefType(value.type)
    size = int(np.prod(t.shape)) * element_bytes(t.element_type)
    offset = 0
    while True:
        owner = value.owner
        if isinstance(owner, ir.Block):
            return f"arg{ir.BlockArgument(value).arg_number}", offset, offset + size
        if owner.name == "memref.get_global":
            return "@" + ir.FlatSymbolRefAttr(owner.attributes["name"]).value, offset, offset + size
        if owner.name == "memref.view":
            shift = owner.operands[1].owner
            if isinstance(shift, ir.Block) or shift.name != "arith.constant":
                return None
            offset += ir.IntegerAttr(shift.attributes["value"]).value
        elif owner.name == "memref.reinterpret_cast":
            if ir.MemRefType(value.type).get_strides_and_offset()[1] != 0:
                return None
        elif owner.name not in ("memref.expand_shape", "memref.collapse_shape"):
            return None
        value = owner.operands[0]


# Each op of the function glow-cpu-schedule is scheduling and its place, taken before the recipes run
# (`chain_order`).
_ORDER: ContextVar[dict[ir.Operation, int] | None] = ContextVar("glow_chain_order", default=None)


@contextmanager
def chain_order(function: ir.Operation) -> Iterator[None]:
    """While the recipes of `function` run: its ops' order as it was before them, which `_chain_ending_at` reads
    instead of asking MLIR. MLIR keeps a block's order as indices with gaps; the ops each recipe inserts at one
    place use up the gap, and the next comparison with one of them numbered the whole block again, once per
    recipe: 1.5 s of CSATv2 QDQ's compile, growing with the square of the model."""
    token = _ORDER.set({op.operation: i for i, op in enumerate(function.regions[0].blocks[0].operations)})
    try:
        yield
    finally:
        _ORDER.reset(token)


def _chain_ending_at(op: ir.Operation) -> list[ir.Operation]:
    """The marked ops right before `op` in its block, then `op`: the chain that `op` ends.

    Found among the users of `op`'s destination, not by listing the block, which made the pass quadratic in
    the model's size. Every op of a chain writes that destination, and so does the op after each marked op
    (`mark_chains`): the chain is the marked writers of it after the last unmarked op before `op` that uses it
    (the end of an earlier chain in a shared buffer is one). Under `chain_order`, the ops that recipes made are
    left out: each recipe inserts at its own op, before every op of a later chain (a run of consecutive ops),
    so an unmarked op of its own is never between a chain's ops."""
    dest, order = op.operands[-1], _ORDER.get() or {}
    users = {use.owner.operation: None for use in dest.uses}
    users.pop(op, None)
    here = order.get(op)
    if here is None:
        earlier = [user for user in users if user.block == op.block and user.is_before_in_block(op)]
        earlier.sort(key=functools.cmp_to_key(lambda a, b: -1 if a.is_before_in_block(b) else 1))
    else:
        earlier = sorted((user for user in users if order.get(user, here) < here), key=order.__getitem__)
    chain: list[ir.Operation] = []
    for user in earlier:
        if CHAIN_MARK not in user.attributes:
            chain = []
        elif user.operands[-1] == dest:
            chain.append(user)
    return [*chain, op]


def _chain_recipe(chain: list[ir.Operation]) -> Recipe:
    """The chain on tensors, each op reading the previous one's result instead of the shared destination,
    tiled as its last op with the others fused into the tile: one pass over memory instead of one per op."""
    dest = chain[0].operands[-1]
    sizes = elementwise_recipe_steps(chain[-1])[0]
    with chain[-1].location, ir.InsertionPoint(chain[-1]):
        sources: list[ir.Value] = []
        for value in (v for op in chain for v in op.operands[:-1]):
            if value != dest and not any(value == known for known in sources):
                sources.append(value)
        *source_tensors, result = on_tensors([*sources, dest], [False] * len(sources) + [True])
        for op in chain:
            # Destination passing: each op works in place on the value before it (dest's own for the first),
            # reading dest's elements through its output element, so the chain bufferizes in dest itself.
            reads_dest = [i for i, v in enumerate(op.operands[:-1]) if v == dest]
            inputs = [source_tensors[_index_of(sources, v)] for v in op.operands[:-1] if v != dest]
            result = generic_on_tensors(op, inputs, result, through_output=reads_dest)
        write_back(result, dest)
    for op in reversed(chain):
        op.erase()

    def build(handle: ir.Value) -> None:
        function = steps.function_of(steps.fuse(handle, sizes))
        steps.canonicalize(function)
        steps.vectorize(steps.match(function, "linalg.generic"))
        # Forwards each op's vector to the next op on tensors, before bufferization stores and reloads it.
        steps.canonicalize(function)

    return Recipe.of(result.owner.operation, build)


def _index_of(values: list[ir.Value], value: ir.Value) -> int:
    return next(i for i, known in enumerate(values) if known == value)


@recipe("linalg.fill")
def fill_recipe(op: ir.Operation) -> Recipe | None:
    """splat, and the zero/identity fills ahead of matmuls and reductions."""
    return elementwise_recipe(op)


@recipe("linalg.copy")
def copy_recipe(op: ir.Operation) -> Recipe | None:
    """copy, insert_tensor and extract_tensor (copies between blocks of buffers)."""
    return elementwise_recipe(op)
