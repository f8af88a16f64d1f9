"""Compiles a glow model to native code with MLIR's JIT (the model that runs it: glow_mlir/compiled.py).

`compile` copies the model into a context of its own, runs the compile pipeline, reads the calling convention
(the ABI) of the function right after `glow-allocate`, lowers it to LLVM and JITs it; the compile cache
(glow_mlir/cache.py) keeps the native code across processes. The names of compiled.py that callers use with
`compile` (CompiledModel, Buffer, Abi, read_abi, feed_array, ...) are importable from here too.
"""

from __future__ import annotations

import ctypes
import hashlib
import io
import logging
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

from mlir import ir
from tqdm import tqdm

from glow_mlir import cache as glow_cache
from glow_mlir import ops
from glow_mlir.backends.cpu import native as native_build
from glow_mlir.backends.cpu import openmp, parallel
from glow_mlir.backends.cpu.backend import CPU
from glow_mlir.backends.cpu.host import physical_memory
from glow_mlir.backends.cpu.profile import read_kernels
from glow_mlir.compiled import CompiledModel, emit_object, llc_path, read_abi
from glow_mlir.context import make_context
from glow_mlir.errors import ModelTooLargeError
from glow_mlir.library import ARENA_ALIGNMENT, Abi, Buffer, abi_from_json, feed_array
from glow_mlir.pipeline.runner import (
    COMPILE_PIPELINE,
    GraphOptimizationLevel,
    PassRecord,
    PipelineStats,
    compile_pipeline,
    run_pipeline,
    stage_name,
)
from glow_mlir.profiling import Kernel, ProfiledModel, kernel_report, kernels_of

__all__ = [
    "ARENA_ALIGNMENT", "Abi", "Buffer", "CompiledModel", "compile", "compile_allocated", "emit_object", "feed_array",
    "llc_path", "read_abi",
]  # fmt: skip

# A compile copies a model's weights several times (import's folds, the schedule's packing, the JIT's module) into
# memory that glibc keeps mapped once freed: 1 GB of an int4 LLM's 2.1 GB after its compile (330 MB of float
# weights). A model with at least this many bytes of weights gives the free heap back at the end of its compile
# (`_release_free_heap`: 60 ms there).
RELEASE_WEIGHT_BYTES = 64 * 2**20
# The pipeline element after which the ABI is read; what follows it lowers the function to LLVM.
ABI_STAGE = "glow-allocate"
# The last element on the `glow` dialect: after it, the module is the optimized, scheduled graph.
OPTIMIZED_STAGE = "glow-schedule"
# The element after which every kernel is a function of its own (the progress bar counts them).
KERNEL_STAGE = "glow-cpu-schedule"
# The element that takes `profile=1` in the profiling variant (backends/cpu/profile.py).
PROFILE_STAGE = "glow-to-llvm"
# The compile's stages for the report's `stage_seconds`, each named with the pipeline element that begins it:
# the graph passes (verification, optimization, layout, lowering, node scheduling), the IR passes (IRGen,
# glow_ir optimizations, the memory plan), the kernel schedules (linalg, tiling and vectorizing), and LLVM
# (the lowering to the LLVM dialect, then LLVM's own optimization and code generation in the JIT).
STAGES = (
    ("graph passes", "glow-verify"),
    ("IR passes", "glow-irgen"),
    ("schedule", "glow-ir-to-linalg"),
    ("LLVM", PROFILE_STAGE),
)

logger = logging.getLogger(__name__)


class HasModule(Protocol):
    module: ir.Module


def compile(
    model: ir.Module | HasModule,
    *,
    keep_ir: bool = False,
    cache: bool | None = None,
    cpu: str | None = None,
    features: str | None = None,
    optimization_level: GraphOptimizationLevel = GraphOptimizationLevel.ORT_ENABLE_ALL,
    optimized_model_path: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    threads: int = 1,
    profile: bool = False,
    consume: bool = False,
) -> CompiledModel:
    """Compiles a `glow` dialect module (or a Graph, through its `.module`) for this CPU.

    The model is left untouched: compilation works on a copy in a context of its own, unless `consume`, which
    compiles the module itself (it must not be used afterwards) and spares copying its weights twice (into
    bytecode and back; VGG-19: 1.5 GB of fresh memory); InferenceSession consumes its own import. With
    `keep_ir`, the module text after every pipeline element is kept for `CompiledModel.ir` (and the cache is
    bypassed).
    `cache` (default: on unless GLOW_MLIR_CACHE=0) reuses or stores the native code on disk
    (glow_mlir/cache.py). `cpu` and `features` (LLVM names, e.g. "skylake-avx512", "+avx512f,+fma") select
    the target of `CompiledModel.save_object`; the JIT always runs code for the host CPU, which is what
    MLIR's ExecutionEngine offers (it has no target options). `optimization_level` drops the graph
    optimizations above it (pipeline/runner.py, onnxruntime's levels). `optimized_model_path` receives the
    optimized `glow` module as MLIR text (after OPTIMIZED_STAGE; the cache is bypassed, as with keep_ir).
    `progress` shows the stage being run (and, once scheduled, the kernel count) on stderr for a compile
    longer than a second; by default only when stderr is a terminal and GLOW_MLIR_PROGRESS is not 0.
    `threads` > 1 splits each large kernel's outer parallel loops across that many threads (OpenMP,
    backends/cpu/parallel.py, docs/THREADS.md); 1 compiles the single-threaded code.
    `profile` compiles the profiling variant, a `profiling.ProfiledModel` that times every kernel of each run
    (glow_mlir/profiling.py) from the calling thread, at any `threads` (a split kernel's time includes its
    fork and join); the compile cache keeps it apart from the normal variant, which has no timing code.
    """
    start = time.perf_counter()
    if threads > 1:
        openmp.load_runtime()
    source = model if isinstance(model, ir.Module) else model.module
    data = None if consume else _bytecode(source)
    entry = None
    if glow_cache.enabled(cache) and not keep_ir and optimized_model_path is None:
        options = {"cpu": cpu, "features": features, "optimization": int(optimization_level)}
        # Only a threaded compile has the key: single-threaded entries keep the keys they always had.
        entry = glow_cache.key(
            _digest(source, data),
            options | ({"threads": threads} if threads > 1 else {}) | ({"profile": True} if profile else {}),
        )
        hit = glow_cache.load(entry)
        if hit is not None:
            library, meta = hit
            abi = abi_from_json(meta["abi"])
            # No pass ran: the report keeps the memory plan, not the original compile's pass times.
            report = {k: v for k, v in meta["report"].items() if k not in ("pass_seconds", "passes", "stage_seconds")}
            loaded = time.perf_counter() - start
            report.update(cache="hit", load_seconds=loaded, compile_seconds=loaded, pass_seconds=[], passes=[],
                          stage_seconds={})

            logger.info("loaded '%s' from the compile cache in %.3f s", abi.function, loaded)

            def rebuild() -> CompiledModel:
                return compile(
                    source, cache=False, cpu=cpu, features=features, optimization_level=optimization_level,
                    threads=threads, profile=profile,
                )

            if profile:
                kernels = kernels_of(report)
                return ProfiledModel(None, abi, report, {}, library=library, rebuild=rebuild, kernels=kernels)
            return CompiledModel(None, abi, report, {}, library=library, rebuild=rebuild)
    module = source if data is None else ir.Module.parse(data, context=make_context())
    pipeline = parallel.with_threads(compile_pipeline(CPU, optimization_level), threads)
    split = pipeline.index(ABI_STAGE) + 1
    with _progress_bar(pipeline, progress) as bar:
        recorder = _Recorder(keep_ir, optimized_model_path, bar, [stage_name(e) for e in pipeline])
        # Passes run as under glow-opt: with the module's context current.
        with module.context:
            run_pipeline(module, pipeline[:split], after_each=recorder.after, stats=recorder.stats)
        compiled = _finish(module, recorder, start, target=(cpu, features), threads=threads, profile=profile)
    logger.info("compiled '%s' in %.2f s", compiled.abi.function, compiled.report["compile_seconds"])
    if entry is not None:
        compiled.report["cache"] = "stored" if compiled._store(entry) else "not stored"
    return compiled


def compile_allocated(module: ir.Module, *, keep_ir: bool = False) -> CompiledModel:
    """Compiles a `glow_ir` module as glow-allocate leaves it; the module is lowered in place and kept."""
    return _finish(module, _Recorder(keep_ir), time.perf_counter())


class _Recorder:
    """Collects pass timings for the report and, when asked, the IR after each pipeline element."""

    def __init__(
        self,
        keep_ir: bool,
        optimized_model_path: str | os.PathLike[str] | None = None,
        bar: tqdm | None = None,
        names: Sequence[str] = (),
    ) -> None:
        self.keep_ir = keep_ir
        self.optimized_model_path = optimized_model_path
        # The progress bar, and the stage each of its steps runs (the pipeline's, then LLVM code generation).
        self.bar = bar
        self.names = [*names, "LLVM code generation"]
        self.stats = PipelineStats()
        self.stages: dict[str, str] = {}

    def after(self, element: str, module: ir.Module) -> None:
        name = stage_name(element)
        if self.keep_ir:
            self.stages[name] = str(module)
        if self.optimized_model_path is not None and name == OPTIMIZED_STAGE:
            Path(self.optimized_model_path).write_text(f"{module}\n")
        if self.stats.records:
            logger.debug("%s: %.3f s", name, self.stats.records[-1].seconds)
        if self.bar is not None and not self.bar.disable:
            if name == KERNEL_STAGE:
                # Each scheduled kernel is a function of its own; the model's entry function is the other one.
                self.bar.set_postfix_str(f"{len(ops.functions(module)) - 1} kernels", refresh=False)
            # The bar names the stage running now: the one after this, shown by the update.
            self.bar.set_description_str(self.names[min(self.bar.n + 1, len(self.names) - 1)], refresh=False)
            self.bar.update()


def _progress_bar(pipeline: Sequence[str], progress: bool | None) -> tqdm:
    """A stage-by-stage bar on stderr that appears only once a compile has taken a second."""
    if progress is None:
        progress = sys.stderr.isatty() and os.environ.get("GLOW_MLIR_PROGRESS", "1") != "0"
    # Every step is shown (miniters=1, mininterval=0): steps are few and some take seconds.
    return tqdm(total=len(pipeline) + 1, desc=stage_name(pipeline[0]), unit="stage", delay=1.0, miniters=1,
                mininterval=0, leave=False, file=sys.stderr, disable=not progress)


def check_memory(abi: Abi) -> None:
    """Refuses, before code generation, a model whose outputs and arena take more than this machine's physical
    memory: a run could not allocate them (an Expand fed a shape of 2^30 x 48 asked numpy for 48 GiB at run
    time, a MemoryError naming no output)."""
    physical = physical_memory()
    outputs = [(b, math.prod(b.shape) * b.dtype.itemsize) for b in abi.outputs]
    needed = abi.arena_bytes + sum(size for _, size in outputs)
    if needed <= physical:
        return
    parts = [f"output '{b.name}' {b.describe()} {size / 2**30:.1f} GiB" for b, size in outputs if size]
    parts.append(f"arena {abi.arena_bytes / 2**30:.1f} GiB")
    raise ModelTooLargeError(f"'{abi.function}' needs {needed / 2**30:.1f} GiB to run ({', '.join(parts)}), more than "
                             f"this machine's {physical / 2**30:.1f} GiB")


def _finish(
    module: ir.Module,
    recorder: _Recorder,
    start: float,
    target: tuple[str | None, str | None] = (None, None),
    threads: int = 1,
    profile: bool = False,
) -> CompiledModel:
    abi = read_abi(module)
    if target == (None, None):
        check_memory(abi)
    split = COMPILE_PIPELINE.index(ABI_STAGE) + 1
    with module.context:
        tail = parallel.with_threads(COMPILE_PIPELINE[split:], threads)
        # The profiling variant: glow-to-llvm first times every kernel call (backends/cpu/profile.py).
        tail = [f"{e}{{profile=1}}" if profile and e == PROFILE_STAGE else e for e in tail]
        run_pipeline(module, tail, after_each=recorder.after, stats=recorder.stats)
    report: dict[str, Any] = {"arena_bytes": abi.arena_bytes, **abi.attributes, "threads": threads}
    report["pass_seconds"] = [(r.name, r.seconds) for r in recorder.stats.records]
    # What each pipeline element did: its time and the module's op count before and after it.
    report["passes"] = [asdict(r) for r in recorder.stats.records]
    jit_start = time.perf_counter()
    if profile:
        kernels = [Kernel(symbol, nodes, splits) for symbol, nodes, splits in read_kernels(module)]
        report.update(kernel_report(kernels))
        model: CompiledModel = ProfiledModel(module, abi, report, recorder.stages, target=target, kernels=kernels)
    else:
        # Native code for the host, where the LLVM module is large enough (its op count from the last pass).
        native = target == (None, None) and native_build.wanted(recorder.stats.records[-1].ops_after)
        model = CompiledModel(module, abi, report, recorder.stages, target=target, native=native)
    report["stage_seconds"] = stage_seconds(recorder.stats.records, time.perf_counter() - jit_start)
    if recorder.bar is not None:
        recorder.bar.update()
    if model.weight_bytes >= RELEASE_WEIGHT_BYTES:
        _release_free_heap()
    report["compile_seconds"] = time.perf_counter() - start
    return model


def _release_free_heap() -> None:
    """Returns the heap's free pages to the system: glibc's malloc_trim; nothing where the C library has none."""
    trim = getattr(ctypes.CDLL(None), "malloc_trim", None)
    if trim is not None:
        trim(0)


def stage_seconds(records: Sequence[PassRecord], jit_seconds: float) -> dict[str, float]:
    """Seconds per compile stage (STAGES): each pipeline element counts toward the stage begun last at or
    before it; the JIT (LLVM's optimization and code generation) counts toward LLVM."""
    starts = {first: name for name, first in STAGES}
    seconds = dict.fromkeys((name for name, _ in STAGES), 0.0)
    current = STAGES[0][0]
    for record in records:
        current = starts.get(record.name, current)
        seconds[current] += record.seconds
    seconds[STAGES[-1][0]] += jit_seconds
    return seconds


def _bytecode(module: ir.Module) -> bytes:
    """The module as bytecode, for its copy in a context of its own: it keeps locations (node names for errors)
    and is quicker than text for large constants."""
    data = io.BytesIO()
    module.operation.write_bytecode(data)
    return data.getvalue()


class _Hasher:
    """A file that write_bytecode streams into SHA-256, so that no copy of the weights is kept."""

    def __init__(self) -> None:
        self.sha256 = hashlib.sha256()

    def write(self, chunk: bytes) -> None:
        self.sha256.update(chunk)


def _digest(module: ir.Module, data: bytes | None) -> str:
    """The SHA-256 of the module's bytecode (`data` where the copy made it), the model's identity in the
    compile cache's key."""
    if data is not None:
        return hashlib.sha256(data).hexdigest()
    hasher = _Hasher()
    module.operation.write_bytecode(hasher)
    return hasher.sha256.hexdigest()
