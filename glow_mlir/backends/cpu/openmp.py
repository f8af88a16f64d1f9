"""The OpenMP runtime that threaded code calls (libiomp5, from the intel-openmp wheel; docs/THREADS.md), and the
default thread count."""

from __future__ import annotations

import ctypes
import functools
import importlib.metadata
import os
import sys
from pathlib import Path

from glow_mlir.errors import UnsupportedError

RUNTIME_NAME = "libiomp5.so"


def physical_cores() -> int:
    """The physical cores this process may run on: the CPUs of its affinity mask, counted once per core
    (SMT siblings share one), from the kernel's topology files; the CPU count where these are missing."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    cores: set[tuple[str, str]] = set()
    for cpu in cpus:
        topology = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            cores.add(((topology / "physical_package_id").read_text(), (topology / "core_id").read_text()))
        except OSError:
            return len(cpus)
    return len(cores) or os.cpu_count() or 1


@functools.cache
def runtime_library() -> Path | None:
    """libiomp5.so, the OpenMP runtime that the `intel-openmp` wheel installs into the environment's lib/."""
    try:
        files = importlib.metadata.files("intel-openmp") or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    for file in files:
        if file.name == RUNTIME_NAME:
            return Path(str(file.locate())).resolve()
    candidate = Path(sys.prefix) / "lib" / RUNTIME_NAME
    return candidate if candidate.exists() else None


@functools.cache
def load_runtime() -> ctypes.CDLL:
    """Loads the OpenMP runtime into the process with RTLD_GLOBAL, once: the JIT resolves the generated
    code's `__kmpc_*` calls among the process's symbols, and so does the dynamic loader for a compile cache
    library (linked with those symbols undefined). UnsupportedError when it is not installed."""
    path = runtime_library()
    if path is None:
        raise UnsupportedError(
            f"threads > 1 needs the OpenMP runtime {RUNTIME_NAME} (pip install intel-openmp); use threads=1"
        )
    return ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)


def default_threads() -> int:
    """The thread count of `intra_op_num_threads=0` (onnxruntime's "default"): the physical cores, as
    onnxruntime takes; one where the OpenMP runtime is not installed (the single-threaded code needs none)."""
    return physical_cores() if runtime_library() is not None else 1
