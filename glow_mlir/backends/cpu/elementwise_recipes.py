"""glow-cpu-schedule's recipes of linalg.generic, linalg.fill and linalg.copy: vectorized loop nests.

Each op gets the vector recipe of recipes.py (tiles of 1 along the outer loop dims and about one cache line of
vectors along the innermost). A run of elementwise generics that work in place on one buffer (glow-ir-share-
buffers makes those: ResNet's add then ReLU) is marked by `mark_chains` before the recipes run, and the last
op of the run takes the whole chain into one loop nest on tensors: one pass over memory instead of one per op.
"""

from __future__ import annotations

from mlir import ir

from glow_mlir.backends.cpu import transform as steps
from glow_mlir.backends.cpu.recipes import (
    CHAIN_MARK,
    CLAIMED_MARKS,
    Recipe,
    elementwise_recipe,
    elementwise_recipe_steps,
    generic_on_tensors,
    on_tensors,
    recipe,
    write_back,
)


@recipe("linalg.generic")
def generic_recipe(op: ir.Operation) -> Recipe | None:
    """Elementwise ops, broadcasts, batched_add, conversions, selects, reductions and fused epilogues; the
    last op of an elementwise chain (`mark_chains`) takes the whole chain into one loop nest."""
    chain = _chain_ending_at(op)
    if len(chain) > 1:
        return _chain_recipe(chain)
    return elementwise_recipe(op)


def _chainable(op: ir.Operation) -> bool:
    """An elementwise generic on memrefs that the vector recipe takes without masking: identity maps only
    (all operands of one shape), parallel loops, pure arithmetic body, whole vectors along the last dim."""
    if op.name != "linalg.generic" or any(mark in op.attributes for mark in CLAIMED_MARKS):
        return False
    if not all(isinstance(v.type, ir.MemRefType) for v in op.operands):
        return False
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    if any(m != ir.AffineMap.get_identity(m.n_dims) for m in maps):
        return False
    kinds = [str(k) for k in ir.ArrayAttr(op.attributes["iterator_types"])]
    if any("parallel" not in k for k in kinds) or elementwise_recipe_steps(op) is None:
        return False
    if list(op.regions[0].blocks[0].arguments[-1].uses):
        return False
    return not elementwise_recipe_steps(op)[1]


def _continues(previous: ir.Operation, op: ir.Operation) -> bool:
    """Whether `op` works in place on `previous`'s destination and reads it: the intermediate value is then
    dead once `op` has read it, and the two can run in one loop nest."""
    dest = previous.operands[-1]
    return op.operands[-1] == dest and any(v == dest for v in op.operands[:-1]) and op.operands[-1].type == dest.type


def mark_chains(function: ir.Operation) -> None:
    """Marks every op but the last of each run of consecutive elementwise generics in which each works in
    place on the previous one's destination (glow-ir-share-buffers makes those: ResNet's add then ReLU)."""
    previous: ir.Operation | None = None
    for op in [o.operation for o in function.regions[0].blocks[0].operations]:
        if _chainable(op) and previous is not None and _continues(previous, op):
            previous.attributes[CHAIN_MARK] = ir.UnitAttr.get()
        previous = op if _chainable(op) else None


def _chain_ending_at(op: ir.Operation) -> list[ir.Operation]:
    """The marked ops right before `op` in its block, then `op`: the chain that `op` ends."""
    siblings = [o.operation for o in op.block.operations]
    i = next(j for j, o in enumerate(siblings) if o == op)
    start = i
    while start > 0 and CHAIN_MARK in siblings[start - 1].attributes:
        start -= 1
    return siblings[start : i + 1]


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
