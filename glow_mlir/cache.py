"""The on-disk cache of compiled models: a second session for the same model skips the compiler.

An entry is a shared library linked from the JIT's object code (`cc -shared`, at store time) plus a JSON file
holding the calling convention (ABI), the compile report and the library's size and SHA-256. A hit loads the
library with ctypes and calls the same packed entry point the JIT gives (`_mlir__mlir_ciface_<name>`): no
pass runs and no LLVM code generation happens.

- Key: SHA-256 of the model's bytecode, the compile options, and the compiler's fingerprint: glow-mlir's
  version, the bytes of every source file of the package (a change to any pass invalidates every entry), the
  MLIR bindings' version and the host CPU's name (the JIT targets the host).
- Atomic writes: both files are written under temporary names and renamed into place, the library first, so
  that a reader never sees a JSON whose library is incomplete; a crash leaves at worst an orphaned temporary.
- Integrity: a library whose size or SHA-256 differs from its JSON (a truncated or corrupted file) is ignored,
  and the compile that follows overwrites the entry.
- Location: $GLOW_MLIR_CACHE_DIR, else ~/.cache/glow-mlir. Disabled with GLOW_MLIR_CACHE=0 or
  `compile(..., cache=False)`; entries are only written when a C compiler driver (`cc`) is on the PATH.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

FORMAT = 1
PACKAGE_ROOT = Path(__file__).resolve().parent
SOURCE_SUFFIXES = (".py", ".mlir")


def enabled(flag: bool | None) -> bool:
    """`compile(cache=...)` wins; by default the cache is on unless GLOW_MLIR_CACHE=0."""
    if flag is not None:
        return flag
    return os.environ.get("GLOW_MLIR_CACHE", "1") != "0"


def directory() -> Path:
    override = os.environ.get("GLOW_MLIR_CACHE_DIR")
    return Path(override) if override else Path.home() / ".cache" / "glow-mlir"


@cache
def compiler_fingerprint() -> str:
    """Changes whenever the compiler may produce other code: sources, versions, host CPU."""
    digest = hashlib.sha256()
    for name in ("glow-mlir", "xtc-mlir-python-bindings"):
        try:
            digest.update(f"{name}={importlib.metadata.version(name)};".encode())
        except importlib.metadata.PackageNotFoundError:
            digest.update(f"{name}=?;".encode())
    for path in sorted(p for p in PACKAGE_ROOT.rglob("*") if p.suffix in SOURCE_SUFFIXES):
        digest.update(str(path.relative_to(PACKAGE_ROOT)).encode())
        digest.update(path.read_bytes())
    digest.update(_host_cpu().encode())
    return digest.hexdigest()


def _host_cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("model name", "flags")):
                return line
    except OSError:
        pass
    return os.uname().machine


def key(model_bytecode: bytes, options: dict[str, Any]) -> str:
    digest = hashlib.sha256()
    digest.update(f"format={FORMAT};{compiler_fingerprint()};".encode())
    digest.update(json.dumps(options, sort_keys=True).encode())
    digest.update(model_bytecode)
    return digest.hexdigest()


def load(entry_key: str) -> tuple[ctypes.CDLL, dict[str, Any]] | None:
    """The loaded library and metadata of an intact entry, or None (missing, corrupt or unloadable)."""
    folder = directory()
    meta_path, library_path = folder / f"{entry_key}.json", folder / f"{entry_key}.so"
    try:
        meta = json.loads(meta_path.read_text())
        data = library_path.read_bytes()
    except (OSError, ValueError):
        return None
    if meta.get("format") != FORMAT or meta.get("library_size") != len(data):
        return None
    if meta.get("library_sha256") != hashlib.sha256(data).hexdigest():
        return None
    try:
        library = ctypes.CDLL(str(library_path))
    except OSError:
        return None
    return library, meta


def store(entry_key: str, object_file: Path, meta: dict[str, Any]) -> bool:
    """Links `object_file` into the entry's library and writes its metadata, atomically; False if no C
    compiler driver is available or linking fails (the model still runs from the JIT)."""
    compiler = shutil.which(os.environ.get("CC", "cc"))
    if compiler is None:
        return False
    folder = directory()
    folder.mkdir(parents=True, exist_ok=True)
    library_tmp = Path(tempfile.mkstemp(dir=folder, prefix=f".{entry_key}.", suffix=".so")[1])
    meta_tmp = Path(tempfile.mkstemp(dir=folder, prefix=f".{entry_key}.", suffix=".json")[1])
    try:
        linked = subprocess.run(
            [compiler, "-shared", "-o", str(library_tmp), str(object_file), "-lm"], capture_output=True
        )
        if linked.returncode != 0:
            return False
        data = library_tmp.read_bytes()
        full = {**meta, "format": FORMAT, "library_size": len(data), "library_sha256": hashlib.sha256(data).hexdigest()}
        meta_tmp.write_text(json.dumps(full))
        os.replace(library_tmp, folder / f"{entry_key}.so")
        os.replace(meta_tmp, folder / f"{entry_key}.json")
        return True
    finally:
        for leftover in (library_tmp, meta_tmp):
            leftover.unlink(missing_ok=True)


def encode_dtype(dtype: np.dtype) -> str:
    return np.dtype(dtype).str


def decode_dtype(text: str) -> np.dtype:
    return np.dtype(text)
