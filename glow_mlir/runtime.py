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
import io
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from mlir import ir
from mlir.execution_engine import ExecutionEngine

from glow_mlir import ops
from glow_mlir.context import make_context
from glow_mlir.errors import UnsupportedError
from glow_mlir.passes.pipeline import COMPILE_PIPELINE, PipelineStats, run_pipeline

# The pipeline element after which the ABI is read; what follows it lowers the function to LLVM.
ABI_STAGE = "glow-allocate"
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


def compile(model: ir.Module | HasModule, *, keep_ir: bool = False) -> CompiledModel:
    """Compiles a `glow` dialect module (or a Graph, through its `.module`) for this CPU.

    The model is left untouched: compilation works on a copy in a context of its own. With `keep_ir`, the
    module text after every pipeline element is kept for `CompiledModel.ir`.
    """
    start = time.perf_counter()
    source = model if isinstance(model, ir.Module) else model.module
    module = _copy_to_new_context(source)
    split = COMPILE_PIPELINE.index(ABI_STAGE) + 1
    recorder = _Recorder(keep_ir)
    # Passes run as under glow-opt: with the module's context current.
    with module.context:
        run_pipeline(module, COMPILE_PIPELINE[:split], after_each=recorder.after, stats=recorder.stats)
    return _finish(module, recorder, start)


def compile_allocated(module: ir.Module, *, keep_ir: bool = False) -> CompiledModel:
    """Compiles a `glow_ir` module as glow-allocate leaves it; the module is lowered in place and kept."""
    return _finish(module, _Recorder(keep_ir), time.perf_counter())


class CompiledModel:
    """A JIT-compiled model: `run(feeds)` maps input names to arrays and returns outputs by name."""

    def __init__(self, module: ir.Module, abi: Abi, report: dict[str, Any], stages: dict[str, str]) -> None:
        self.abi = abi
        self.report = report
        self._stages = stages
        self._module: ir.Module | None = module
        self._context: ir.Context | None = module.context
        self._engine: ExecutionEngine | None = ExecutionEngine(module, opt_level=3)
        self._function: Callable[[Any], None] | None = self._engine.lookup(abi.function)
        self._lock = threading.Lock()
        self._arena = _aligned_bytes(abi.arena_bytes)
        buffers = (*abi.inputs, *abi.outputs, Buffer("arena", (abi.arena_bytes,), np.dtype(np.uint8)))
        self._descriptors = [_descriptor(b.shape) for b in buffers]
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
        """Runs the model; raises ValueError, naming the input, for a missing, extra or mistyped input."""
        if self._function is None:
            raise RuntimeError("this CompiledModel is closed")
        arrays = self._check(feeds)
        results = {b.name: np.empty(b.shape, b.dtype) for b in self.abi.outputs}
        # The arena and the descriptors are shared state of the model, so calls take turns.
        with self._lock:
            for descriptor, array in zip(self._descriptors[:-1], [*arrays, *results.values()], strict=True):
                _point(descriptor, array)
            self._function(self._packed)
        return results

    def _check(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        expected = self.inputs
        missing = [name for name in expected if name not in feeds]
        if missing:
            name = missing[0]
            raise ValueError(f"input '{name}': expected {expected[name].describe()}, got no array")
        extra = [name for name in feeds if name not in expected]
        if extra:
            name = extra[0]
            known = ", ".join(f"'{b.name}' {b.describe()}" for b in self.abi.inputs) or "none"
            given = np.asarray(feeds[name])
            raise ValueError(
                f"input '{name}': expected no such input (the inputs are {known}), "
                f"got {_describe(given.dtype, given.shape)}"
            )
        arrays: list[np.ndarray] = []
        for buffer in self.abi.inputs:
            array = np.asarray(feeds[buffer.name])
            if array.dtype != buffer.dtype or array.shape != buffer.shape:
                given = _describe(array.dtype, array.shape)
                raise ValueError(f"input '{buffer.name}': expected {buffer.describe()}, got {given}")
            arrays.append(np.ascontiguousarray(array))
        return arrays

    def ir(self, stage: str) -> str:
        """The module text after the last run of pipeline element `stage` (compiled with keep_ir=True)."""
        if stage not in self._stages:
            known = ", ".join(self._stages) or "none; compile with keep_ir=True"
            raise KeyError(f"no IR kept for stage '{stage}' (kept: {known})")
        return self._stages[stage]

    def close(self) -> None:
        """Frees the JITed code, then the module and its context; the model cannot run afterwards."""
        self._function = None
        self._engine = None
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

    def __init__(self, keep_ir: bool) -> None:
        self.keep_ir = keep_ir
        self.stats = PipelineStats()
        self.stages: dict[str, str] = {}

    def after(self, element: str, module: ir.Module) -> None:
        if self.keep_ir:
            self.stages[element] = str(module)


def _finish(module: ir.Module, recorder: _Recorder, start: float) -> CompiledModel:
    abi = read_abi(module)
    split = COMPILE_PIPELINE.index(ABI_STAGE) + 1
    with module.context:
        run_pipeline(module, COMPILE_PIPELINE[split:], after_each=recorder.after, stats=recorder.stats)
    report: dict[str, Any] = {"arena_bytes": abi.arena_bytes, **abi.attributes}
    report["pass_seconds"] = [(r.name, r.seconds) for r in recorder.stats.records]
    model = CompiledModel(module, abi, report, recorder.stages)
    report["compile_seconds"] = time.perf_counter() - start
    return model


def _copy_to_new_context(module: ir.Module) -> ir.Module:
    # Bytecode keeps locations (node names for errors) and is quicker than text for large constants.
    data = io.BytesIO()
    module.operation.write_bytecode(data)
    return ir.Module.parse(data.getvalue(), context=make_context())


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
    address = array.ctypes.data
    descriptor.allocated = address
    descriptor.aligned = address


def _aligned_bytes(size: int) -> np.ndarray:
    """A zeroed buffer of `size` bytes that starts at an ARENA_ALIGNMENT boundary (it keeps its storage)."""
    storage = np.zeros(size + ARENA_ALIGNMENT, np.uint8)
    start = -storage.ctypes.data % ARENA_ALIGNMENT
    return storage[start : start + size]
