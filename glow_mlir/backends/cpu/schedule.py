"""glow-cpu-schedule: tiles and vectorizes the kernels of glow-ir-to-linalg with transform-dialect recipes.

glow-ir-to-linalg says *what* each instruction computes (one or a few linalg ops); this pass says *how* it
runs on this CPU, the way Glow's CPU backend picks a hand-written kernel per instruction. It runs right after
glow-ir-to-linalg and before glow-to-llvm.

This module is the pass driver. Per function, it replaces f32 exp/log/tanh/sin/cos by arithmetic (fastmath.py),
builds the fused kernel of each expansion + depthwise convolution (expansion_recipes.py), shrinks the fills
of padded buffers to their borders (padding.py), marks elementwise chains (elementwise_recipes.py) and the
fills that start pools (pool_recipes.py), then, with the model's weights counted and its symbol table built
once (recipes.scheduling), asks the recipe registered for each candidate op (recipes.py holds the contract
and the registry; matmul_recipes.py, elementwise_recipes.py, conv_recipes.py, grouped_recipes.py,
depthwise_recipes.py, pointwise_recipes.py and pool_recipes.py the recipes) what to do. It tags every kernel
a recipe returns, outlines it into a function of its own (outline.py), and runs one transform named sequence
(transform.py) that schedules them all, then the shared vector tail on each function (the transform-interpreter
pass nested in func.func, which MLIR runs on several functions at once: DenseNet-121's schedule 2.9-3.1 ->
2.0-2.1 s with the sequence's single match, generated code identical). Last, it outlines every linalg op that
no recipe took (outline.py: `outline_leftovers`). A kernel whose function and transform steps print like an
earlier kernel's is not scheduled again: its call calls the earlier kernel's function (outline.py: `Outlined`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable

from mlir import ir
from mlir.dialects.transform import interpreter
from mlir.passmanager import PassManager

from glow_mlir import ops
# Imported for the recipes they register (elementwise_recipes' come with mark_chains, pool_recipes' with
# mark_pool_starts).
from glow_mlir.backends.cpu import (  # noqa: F401
    conv_recipes,
    depthwise_ring,
    gather_recipes,
    grouped_recipes,
    matmul_recipes,
    narrow_conv_recipes,
    pointwise_recipes,
    transpose_recipes,
    winograd_recipes,
)
from glow_mlir.backends.cpu import fastmath
from glow_mlir.backends.cpu import transform as steps
from glow_mlir.backends.cpu.elementwise_recipes import chain_order, mark_chains
from glow_mlir.backends.cpu.expansion_recipes import fuse_expansions
from glow_mlir.backends.cpu.padding import fill_borders
from glow_mlir.backends.cpu.pool_recipes import mark_pool_starts
from glow_mlir.backends.cpu.outline import KERNEL_PREFIX, Outlined, merge_offset_twins, outline, outline_leftovers
from glow_mlir.backends.cpu.recipes import CLAIMED_MARKS, Kernel, recipes, scheduling
from glow_mlir.errors import PipelineError
from glow_mlir.passes.registry import register


@register("glow-cpu-schedule")
def cpu_schedule(module: ir.Module) -> None:
    """Tile and vectorize linalg kernels with per-op transform recipes (matmul, elementwise, conv, ...)."""
    table = recipes()
    with module.context, scheduling(module.operation):
        kernels: list[Kernel] = []
        entries = [func for func in ops.functions(module) if func.regions[0].blocks]
        for func in entries:
            fastmath.approximate(func)
            kernels.extend(fuse_expansions(func))
            fill_borders(func)
            mark_chains(func)
            mark_pool_starts(func)
            # A convolution's bias and activation ops go with the convolution's recipe, which may erase them.
            candidates = [
                op
                for op in ops.walk_ops(func)
                if op.name in table and not any(mark in op.attributes for mark in CLAIMED_MARKS)
            ]
            with chain_order(func):
                for op in candidates:
                    fn = table[op.name]
                    with op.location, ir.InsertionPoint(op):
                        chosen = fn(op)
                    if chosen is not None:
                        kernels.extend(chosen.kernels)
        outlined = Outlined()
        if kernels:
            _schedule(module, kernels, outlined)
        for func in entries:
            outline_leftovers(func, outlined)
        outlined.sink_table_reads()
        merge_offset_twins(module, entries)


def _schedule(module: ir.Module, kernels: list[Kernel], outlined: Outlined) -> None:
    """Outlines `kernels` and schedules the distinct ones with one transform named sequence."""
    on_tensors = any(op.name == "bufferization.to_tensor" for op in ops.walk_ops(module.operation))
    tagged: dict[str, tuple[ir.Operation, steps.Build]] = {}
    finishing: list[tuple[ir.Operation, Callable[[ir.Operation], None]]] = []
    for i, kernel in enumerate(kernels):
        call, function = outline(kernel.op, f"{KERNEL_PREFIX}{i}")
        if outlined.keep(call, function, steps.text_of(kernel.build)):
            kernel.op.attributes[steps.KERNEL_ATTR] = ir.UnitAttr.get()
            tagged[ir.StringAttr(function.attributes["sym_name"]).value] = (kernel.op, kernel.build)
            if kernel.finish is not None:
                finishing.append((function, kernel.finish))
    # The kernels in the order the match finds them: their functions' order in the module.
    names = [ir.StringAttr(op.attributes["sym_name"]).value for op in module.body.operations
             if op.operation.name == "func.func"]  # fmt: skip
    script = steps.sequence([tagged[name] for name in names if name in tagged], on_tensors)
    try:
        interpreter.apply_named_sequence(module.operation, script.body.operations[0], script)
        # The pass finds its entry point only in a library preloaded into the context, from a file. The library's
        # sequence is private: compiling again in the same context merges another copy, renamed, not a clash.
        with tempfile.NamedTemporaryFile("w", suffix=".mlir") as library:
            library.write(str(steps.tail_library()))
            library.flush()
            PassManager.parse(
                f"builtin.module(transform-preload-library{{transform-library-paths={library.name}}},"
                f"func.func(transform-interpreter{{entry-point={steps.TAIL_ENTRY}}}))"
            ).run(module.operation)
    except ir.MLIRError as e:
        notes = "; ".join(f"{d.location}: {d.message}" for d in e.error_diagnostics)
        raise PipelineError(f"glow-cpu-schedule failed: {notes or e}") from None
    for function, finish in finishing:
        finish(function)
    for op in ops.walk_ops(module.operation):
        if steps.KERNEL_ATTR in op.attributes:
            del op.attributes[steps.KERNEL_ATTR]
