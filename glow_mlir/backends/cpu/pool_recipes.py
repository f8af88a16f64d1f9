"""glow-cpu-schedule's recipes of the CPU backend's NHWC pools (`linalg.pooling_nhwc_max` / `_sum`).

A pool is emitted on tensors (decompose, which turns the 2-D window op into 1-D ones along W, works on tensors
only), tiled to [1, 1, ow, c, 1, KW] and vectorized along C. Pools have no reduction over channels, so each
step is a max (or add) of `ow x c` lanes.

glow-ir-to-linalg starts a pool's output with a fill (-inf for a max pool, 0 for a sum), which was a pass of its
own over the output (ResNet-50's max pool: 0.22 ms of stores, the pool itself 0.18). glow-cpu-schedule marks
that fill as the pool's (`mark_pool_starts`) and the recipe fuses it into each output tile; the kernel's finish
(`_start_in_registers`) then starts each tile's window loop from the constant in registers.
"""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import linalg

from glow_mlir import ops
from glow_mlir.backends.cpu import transform as steps
from glow_mlir.backends.cpu.conv_recipes import (
    LANES,
    dense_window,
    divisor_at_most,
    output_neighbours,
    static_f32,
    tile_steps,
    window_of,
    window_on_tensors,
)
from glow_mlir.backends.cpu.recipes import POOL_START_MARK, Kernel, Recipe, recipe, static_shape

# The pool ops of glow-ir-to-linalg's NHWC pools.
POOLS = ("linalg.pooling_nhwc_max", "linalg.pooling_nhwc_sum")


def _pool_recipe(build: Callable[..., ir.Value]) -> Callable[[ir.Operation], Recipe | None]:
    """Pooling, loops (n, oh, ow, c, kh, kw): vectorized along C, tile [1, 1, ow, c, 1, KW], with the fill of
    the output that starts it (`_start_fill`) fused into each tile."""

    def schedule(op: ir.Operation) -> Recipe | None:
        if not static_f32(op):
            return None
        _, _, ow, c = static_shape(op.operands[2])
        kw = static_shape(op.operands[1])[1]
        c_tile = divisor_at_most(c, 64) if c % LANES else max(w for w in (64, 32, 16) if c % w == 0)
        ow_tile = divisor_at_most(ow, 4)
        window = dense_window(window_of(op))
        start = _start_fill(op)
        if start is not None and POOL_START_MARK not in start.attributes:
            start = None  # scheduled as a kernel of its own already (not marked by `mark_pool_starts`)

        def pool_of(ins: list[ir.Value], init: ir.Value) -> ir.Value:
            if start is not None:
                init = linalg.fill(start.operands[0], outs=[init])
            return build(ins[0], ins[1], outs=[init], **window)

        pool = window_on_tensors(op, pool_of)
        if start is None:
            return Recipe.of(pool, tile_steps([1, 1, ow_tile, c_tile, 1, kw]))
        start.erase()

        def fused(handle: ir.Value) -> None:
            function = steps.function_of(steps.fuse(handle, [1, 1, ow_tile, c_tile, 0, 0]))
            steps.canonicalize(function)
            windows = steps.tile(steps.match(function, pool.name), [0, 0, 0, 0, 1, 0])
            steps.vectorize(steps.decompose(windows))
            steps.vectorize(steps.match(function, "linalg.fill"))

        return Recipe((Kernel(pool, fused, _start_in_registers),))

    return schedule


# The vector stores and loads of a scheduled kernel (1-D transfers become plain loads and stores).
_STORES = ("vector.transfer_write", "vector.store")
_LOADS = ("vector.transfer_read", "vector.load")


def _start_in_registers(function: ir.Operation) -> None:
    """The finish of a pool kernel with its start fused in: each tile stores its start vector (the fused
    fill) and loads it straight back as the accumulators of its window loop (the transforms leave that round
    trip through memory: the fill and the window loop vectorize apart). The load becomes the constant and the
    store goes, since the tile's result is stored at the same place after the loop."""
    for store in [op for op in ops.walk_ops(function) if op.name in _STORES]:
        value, buffer, *indices = store.operands
        if isinstance(value.owner, ir.Block) or value.owner.name != "arith.constant":
            continue
        block = list(store.block.operations)
        after = [op for op in block[block.index(store) + 1 :] if op.name != "affine.apply"]
        if not after or after[0].name not in _LOADS:
            continue
        load = after[0]
        same_place = list(load.operands)[: 1 + len(indices)] == [buffer, *indices]
        stored_again = any(
            op.name in _STORES and list(op.operands)[1:] == [buffer, *indices] and op.operands[0].type == value.type
            for op in after[1:]
        )
        if same_place and stored_again and load.result.type == value.type:
            load.result.replace_all_uses_with(value)
            load.erase()
            store.erase()


def mark_pool_starts(function: ir.Operation) -> None:
    """Marks (POOL_START_MARK) the fill that starts each pool of `function` that the pool recipe schedules, so
    that glow-cpu-schedule leaves the fill to that recipe (`_start_fill`) instead of scheduling it first."""
    for op in ops.walk_ops(function):
        if op.name in POOLS and static_f32(op):
            start = _start_fill(op)
            if start is not None:
                start.attributes[POOL_START_MARK] = ir.UnitAttr.get()


def _start_fill(op: ir.Operation) -> ir.Operation | None:
    """The linalg.fill that writes pool `op`'s output last before it (its start value), or None."""
    before, _ = output_neighbours(op)
    if before is None or before.name != "linalg.fill" or before.operands[-1] != op.operands[-1]:
        return None
    return before


recipe(POOLS[0])(_pool_recipe(linalg.pooling_nhwc_max))
recipe(POOLS[1])(_pool_recipe(linalg.pooling_nhwc_sum))
