"""The catalogue of every glow-mlir pass, read by glow-opt, the compile pipeline and the docs.

Importing a pass module registers its passes (`glow_mlir.passes.registry.register`); this module imports
them all, so that the catalogue is complete whoever asks first, and lists them stage by stage (`STAGES`),
the order glow-opt --list-passes and the docs show. It sits above every stage: no pass module imports it.
"""

from __future__ import annotations

from glow_mlir.backends.cpu import (
    backend,
    expansion,
    layout,
    llvm,
    lowerings,
    pad_channels,
    parallel,
    schedule,
    weights,
)
from glow_mlir.codegen import to_linalg
from glow_mlir.passes.graph import (
    constant_fold,
    cse,
    dce,
    eliminate_noop,
    fold_batchnorm,
    fold_transpose_weights,
    fuse_activations,
    gather_nd,
    merge_concat,
    merge_conv_branches,
    merge_pad,
    merge_reshape,
    quant_fold_converts,
    quant_fold_qdq,
    scatter_to_insert,
    simplify_arithmetic,
    sink_transpose,
    split_gather,
    trim_window,
    verify,
)
from glow_mlir.passes.ir import allocate, copy_elim, dse, live_ranges, optimize_inserts, share_buffers
from glow_mlir.passes.ir import verify as ir_verify
from glow_mlir.passes.lowering import irgen, lower, memory_schedule
from glow_mlir.passes.registry import Pass, registered

# The pass modules in pipeline order; a module's passes keep their order within it.
STAGES = (
    verify, dce, lower, cse, constant_fold, fold_batchnorm, merge_conv_branches, simplify_arithmetic, gather_nd,
    split_gather, scatter_to_insert, eliminate_noop, merge_reshape, sink_transpose, merge_concat, merge_pad,
    trim_window, fold_transpose_weights, quant_fold_converts, quant_fold_qdq, fuse_activations, layout, memory_schedule,
    irgen, ir_verify, share_buffers, copy_elim, dse, live_ranges, optimize_inserts, expansion, pad_channels,
    allocate, to_linalg,
    lowerings, schedule, parallel, weights, llvm, backend,
)  # fmt: skip
_ORDER = {module.__name__: i for i, module in enumerate(STAGES)}


def passes() -> dict[str, Pass]:
    """Every registered pass, by name, stage by stage."""
    found = list(registered().values())
    found.sort(key=lambda p: _ORDER.get(p.run.__module__, len(STAGES)))
    return {p.name: p for p in found}


def get(name: str) -> Pass | None:
    return registered().get(name)
