"""Parses and runs pass pipelines that mix glow-mlir's Python passes with upstream MLIR passes.

Upstream's PassManager cannot find Python passes by name, so a pipeline string such as
`builtin.module(glow-lower,canonicalize,func.func(cse),glow-irgen)` is split into its top-level elements:
each element naming a registered glow pass runs as that pass, and each run of other elements goes to one
upstream PassManager. Every element runs on the module.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from mlir import ir
from mlir.passmanager import PassManager

from glow_mlir.errors import PipelineError
from glow_mlir.backends.base import Backend
from glow_mlir.backends.cpu.backend import CPU
from glow_mlir.passes.registry import Pass
from glow_mlir.pipeline import catalog

# Graph optimizations in the order of Glow's default graph pipeline (docs/OPTIMIZATIONS.md): local
# simplifications, then a clean-up that folds, merges and deletes what they left behind.
SIMPLIFY = (
    "glow-gather-nd-to-gather",
    "glow-split-gather",
    "glow-scatter-to-insert",
    "glow-eliminate-noop",
    "glow-sink-transpose",
    "glow-simplify-arithmetic",
    "glow-merge-reshape",
    "glow-cse",
    "glow-merge-concat",
)
CLEAN_UP = ("glow-constant-fold", "glow-cse", "glow-dce")


class GraphOptimizationLevel(IntEnum):
    """How much graph optimization the compile pipeline does, with onnxruntime's names and values.

    DISABLE_ALL keeps only what code generation needs: verification, the backend's layout, lowering,
    scheduling and the memory plan. BASIC adds the folds and clean-ups that keep the graph as written
    (onnxruntime's basic level: constant folding, no-op and duplicate elimination). EXTENDED and above add
    the rewrites that change its structure: transpose sinking, arithmetic simplification, concat and pad
    merging, batch-norm folding, activation fusion.
    """

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


# The lowest level at which each graph optimization runs; a pass not listed always runs.
_PASS_LEVEL = {
    **dict.fromkeys(
        ("glow-constant-fold", "glow-fold-transpose-into-weights", "glow-eliminate-noop", "glow-cse", "glow-dce",
         "glow-merge-reshape"),
        GraphOptimizationLevel.ORT_ENABLE_BASIC,
    ),
    **dict.fromkeys(
        ("glow-gather-nd-to-gather", "glow-split-gather", "glow-scatter-to-insert", "glow-sink-transpose",
         "glow-simplify-arithmetic", "glow-merge-concat",
         "glow-merge-pad-into-conv", "glow-trim-conv-window", "glow-fold-batchnorm", "glow-merge-conv-branches",
         "glow-fuse-activations"),
        GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    ),
}

def compile_pipeline(
    backend: Backend, level: GraphOptimizationLevel = GraphOptimizationLevel.ORT_ENABLE_ALL
) -> tuple[str, ...]:
    """The compile pipeline for `backend` at optimization `level`: the full one (below) without the graph
    optimizations above `level`."""
    kept = [e for e in _full_pipeline(backend) if _PASS_LEVEL.get(stage_name(e), level) <= level]
    # Dropping passes can leave one pass twice in a row (glow-verify), which would only repeat its work.
    return tuple(e for i, e in enumerate(kept) if i == 0 or e != kept[i - 1])


def _full_pipeline(backend: Backend) -> tuple[str, ...]:
    """The compile pipeline with every optimization, stage by stage (docs/ARCHITECTURE.md draws it), following
    Glow's driver: fold -> optimize -> the backend's layout -> lower -> optimize -> fuse -> optimize -> verify,
    then schedule, IRGen, IR optimizations, allocation, linalg, and the backend's code generation."""
    return (
        "glow-verify",
        # fold: constant weights become constants before anything matches on them
        "glow-fold-transpose-into-weights",
        "glow-constant-fold",
        # optimize, including the folds that need the unlowered ops (pads, batch normalization)
        *SIMPLIFY,
        "glow-merge-pad-into-conv",
        # after the pads merged: taps of dilated convolutions that read only padding
        "glow-trim-conv-window",
        "glow-fold-transpose-into-weights",
        "glow-fold-batchnorm",
        # after the branches' own batch norms folded: parallel convolutions of one input that are added
        "glow-merge-conv-branches",
        *CLEAN_UP,
        # the backend's layout (Glow's post-lowering transform, run before lowering so that pads stay
        # attributes and glow-lower expands them in the backend's layout): for the CPU, convolutions and pools
        # become NHWC ops between transposes, which sinking then cancels between consecutive layers
        *backend.layout,
        # lower to the primitives the backend implements, then optimize what lowering exposed
        f"glow-lower{{backend={backend.name}}}",
        "glow-verify",
        # after the layout's int8 kernels took the quantize / dequantize pairs their products read: the others
        # (a QDQ model's activations around a GELU's erf) lose their int8 round trip
        "glow-quant-fold-convert-pairs",
        *SIMPLIFY,
        *CLEAN_UP,
        # fuse: bias adds and activations into the convolution or matmul before them, then optimize again
        "glow-fuse-activations",
        *SIMPLIFY,
        *CLEAN_UP,
        "glow-verify",
        "glow-schedule",
        "glow-irgen",
        "glow-ir-verify",
        "glow-ir-copy-elim",
        "glow-ir-dse",
        "glow-ir-share-buffers",
        "glow-ir-copy-elim",
        "glow-ir-hoist-dealloc",
        "glow-ir-sink-alloc",
        "glow-ir-dse",
        # producers write inserted blocks (paddings, concat inputs) in place; last, as block views are partial
        "glow-ir-optimize-inserts",
        # the backend's own instructions, which the buffers as allocated must know
        *backend.memory,
        "glow-ir-verify",
        "glow-allocate",
        "glow-ir-to-linalg",
        *backend.codegen,
    )


def stage_name(element: str) -> str:
    """The pass a pipeline element runs: `glow-lower{backend=cpu}` -> `glow-lower`."""
    return element.split("{", 1)[0].strip()


# The compile pipeline of the default backend, the CPU.
COMPILE_PIPELINE = compile_pipeline(CPU)


def split_pipeline(text: str) -> list[str]:
    """The top-level elements of a pipeline string, with an outer `builtin.module(...)` removed."""
    text = text.strip()
    if text.startswith("builtin.module(") and text.endswith(")"):
        text = text[len("builtin.module(") : -1]
    elements: list[str] = []
    depth = 0
    current = ""
    for ch in text:
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
            if depth < 0:
                raise PipelineError(f"unbalanced ')' or '}}' in pass pipeline '{text}'")
        if ch == "," and depth == 0:
            elements.append(current.strip())
            current = ""
        else:
            current += ch
    if depth != 0:
        raise PipelineError(f"unbalanced '(' or '{{' in pass pipeline '{text}'")
    if current.strip():
        elements.append(current.strip())
    return elements


@dataclass
class PassRecord:
    """What one pipeline element did: for the compile report and `glow-opt --glow-stats`."""

    name: str
    seconds: float
    ops_before: int
    ops_after: int


@dataclass
class PipelineStats:
    records: list[PassRecord] = field(default_factory=list)


def count_ops(module: ir.Module) -> int:
    count = 0

    def visit(_: ir.Operation) -> ir.WalkResult:
        nonlocal count
        count += 1
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return count - 1  # the module itself


def run_pipeline(
    module: ir.Module,
    pipeline: str | Sequence[str],
    *,
    after_each: Callable[[str, ir.Module], None] | None = None,
    stats: PipelineStats | None = None,
) -> None:
    """Runs `pipeline` (a string or a sequence of element strings) on `module` in place.

    `after_each(name, module)` is called after every element (glow-opt's --print-ir-after-all).
    Raises `PipelineError` for an unknown pass or a failed upstream pass; glow passes raise their own errors.
    """
    elements = split_pipeline(pipeline) if isinstance(pipeline, str) else list(pipeline)
    # The op count after one element is the count before the next: the module is walked once per element.
    before = count_ops(module) if stats is not None else 0
    for element in elements:
        name = stage_name(element)
        # Looked up before the clock starts: the first lookup imports every pass module.
        glow_pass = catalog.get(name)
        start = time.perf_counter()
        if glow_pass is not None:
            options = _options(glow_pass, element)
            with module.context, ir.Location.unknown():
                glow_pass.run(module, **options)
        else:
            _run_upstream(module, element)
        if stats is not None:
            seconds = time.perf_counter() - start
            after = count_ops(module)
            stats.records.append(PassRecord(name, seconds, before, after))
            before = after
        if after_each is not None:
            after_each(element, module)


def _options(glow_pass: Pass, element: str) -> dict[str, str]:
    """The options of pipeline element `name{key=value key=value}`, each one the pass declares."""
    if "{" not in element:
        return {}
    text = element.split("{", 1)[1]
    if not text.endswith("}"):
        raise PipelineError(f"bad options in pipeline element '{element}'")
    options: dict[str, str] = {}
    for item in text[:-1].split():
        key, eq, value = item.partition("=")
        if not eq or key not in glow_pass.options:
            allowed = ", ".join(glow_pass.options) or "none"
            raise PipelineError(f"pass '{glow_pass.name}' has no option '{item}' (options: {allowed})")
        options[key] = value
    return options


def _run_upstream(module: ir.Module, element: str) -> None:
    try:
        pm = PassManager.parse(f"builtin.module({element})", context=module.context)
    except (ValueError, ir.MLIRError) as e:
        raise PipelineError(f"unknown pass or bad pipeline element '{element}': {e}") from None
    try:
        pm.run(module.operation)
    except ir.MLIRError as e:
        raise PipelineError(f"pass '{element}' failed: {_diagnostics(e)}") from None


def _diagnostics(error: ir.MLIRError) -> str:
    notes = "; ".join(f"{d.location}: {d.message}" for d in error.error_diagnostics)
    return notes or str(error)
