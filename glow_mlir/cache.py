"""The on-disk cache of compiled models: a second session for the same model skips the compiler.

An entry is a shared library linked from the JIT's object code (`cc -shared`, at store time) plus a JSON file
holding the calling convention (ABI), the compile report and the library's size and SHA-256. A hit loads the
library with ctypes and calls the same packed entry point the JIT gives (`_mlir__mlir_ciface_<name>`): no
pass runs and no LLVM code generation happens.

- Key: SHA-256 of the model's digest (the SHA-256 of its bytecode, streamed: runtime.py), the compile options
  and the compiler's fingerprint: glow-mlir's version, the bytes of every source file of the package (a change
  to any pass invalidates every entry), the MLIR bindings' version and the host CPU's name (the JIT targets
  the host).
- Atomic writes: both files are written under temporary names and renamed into place, the library first, so
  that a reader never sees a JSON whose library is incomplete; a crash leaves at worst an orphaned temporary.
- Integrity: an entry whose JSON does not parse or differs from its own SHA-256 (stored in it), or whose
  library's size or SHA-256 differs from its JSON (a truncated or corrupted file), is deleted, never loaded;
  the compile that follows writes it again.
- Location: $GLOW_MLIR_CACHE_DIR, else $XDG_CACHE_HOME/glow-mlir, else ~/.cache/glow-mlir. Disabled with
  GLOW_MLIR_CACHE=0 or `compile(..., cache=False)`; entries are only written when a C compiler driver (`cc`)
  is on the PATH.
- Size: after each store, the least recently used entries (a hit counts as a use) are deleted until the
  entries take at most $GLOW_MLIR_CACHE_MAX_BYTES (default 2 GiB; a model's weights live in its library, so
  an entry is about the size of the model). `glow-mlir cache info|list|clear` shows and empties it.
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
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

# 2: dtypes are stored by name. 3: the metadata carries its own SHA-256.
FORMAT = 3
DEFAULT_MAX_BYTES = 2 * 1024**3
PACKAGE_ROOT = Path(__file__).resolve().parent
SOURCE_SUFFIXES = (".py", ".mlir")


def enabled(flag: bool | None) -> bool:
    """`compile(cache=...)` wins; by default the cache is on unless GLOW_MLIR_CACHE=0."""
    if flag is not None:
        return flag
    return os.environ.get("GLOW_MLIR_CACHE", "1") != "0"


def directory() -> Path:
    override = os.environ.get("GLOW_MLIR_CACHE_DIR")
    if override:
        return Path(override)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "glow-mlir"


def max_bytes() -> int:
    text = os.environ.get("GLOW_MLIR_CACHE_MAX_BYTES", "")
    try:
        return int(text) if text else DEFAULT_MAX_BYTES
    except ValueError:
        raise ValueError(f"GLOW_MLIR_CACHE_MAX_BYTES must be a number of bytes, got {text!r}") from None


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


def key(model_digest: str, options: dict[str, Any]) -> str:
    """The entry of a model whose bytecode has SHA-256 `model_digest`, compiled with `options`."""
    digest = hashlib.sha256()
    digest.update(f"format={FORMAT};{compiler_fingerprint()};".encode())
    digest.update(json.dumps(options, sort_keys=True).encode())
    digest.update(model_digest.encode())
    return digest.hexdigest()


def load(entry_key: str, folder: Path | None = None) -> tuple[ctypes.CDLL, dict[str, Any]] | None:
    """The loaded library and metadata of an intact entry of the cache (or of `folder`), or None (missing,
    corrupt or unloadable)."""
    folder = folder or directory()
    meta_path, library_path = folder / f"{entry_key}.json", folder / f"{entry_key}.so"
    if not meta_path.exists():
        return None
    try:
        meta = json.loads(meta_path.read_text())
        data = library_path.read_bytes()
    except (OSError, ValueError):
        _drop(entry_key, folder)
        return None
    if (
        not isinstance(meta, dict)
        or meta.get("format") != FORMAT
        or meta.get("meta_sha256") != _meta_digest(meta)
        or meta.get("library_size") != len(data)
        or meta.get("library_sha256") != hashlib.sha256(data).hexdigest()
    ):
        _drop(entry_key, folder)
        return None
    try:
        library = ctypes.CDLL(str(library_path))
    except OSError:
        _drop(entry_key, folder)
        return None
    # The JSON's modification time is the entry's last use, for least-recently-used eviction.
    os.utime(meta_path)
    return library, meta


def _meta_digest(meta: dict[str, Any]) -> str:
    """SHA-256 of the metadata without its own digest: an edited field (a shape, the arena's size) would make
    the library run on buffers of the wrong size, so the loader checks the metadata like the library."""
    rest = {k: v for k, v in meta.items() if k != "meta_sha256"}
    return hashlib.sha256(json.dumps(rest, sort_keys=True).encode()).hexdigest()


def _drop(entry_key: str, folder: Path) -> None:
    for suffix in (".json", ".so"):
        (folder / f"{entry_key}{suffix}").unlink(missing_ok=True)


@dataclass(frozen=True)
class Entry:
    key: str
    bytes: int
    last_used: float
    function: str


def entries(*, named: bool = True) -> list[Entry]:
    """The cache's entries, least recently used first; without `named`, from file metadata alone (no JSON
    is read, so that eviction after every store stays cheap with thousands of entries)."""
    found = []
    for meta_path in directory().glob("*.json"):
        key = meta_path.stem
        try:
            stat = meta_path.stat()
            size = stat.st_size + (directory() / f"{key}.so").stat().st_size
            meta = json.loads(meta_path.read_text()) if named else {}
        except (OSError, ValueError):
            continue
        function = meta.get("abi", {}).get("function", "?") if isinstance(meta, dict) else "?"
        found.append(Entry(key, size, stat.st_mtime, function))
    return sorted(found, key=lambda e: e.last_used)


def evict(limit: int) -> list[Entry]:
    """Deletes the least recently used entries until the rest take at most `limit` bytes; returns them."""
    present = entries(named=False)
    total = sum(e.bytes for e in present)
    dropped = []
    for entry in present:
        if total <= limit:
            break
        _drop(entry.key, directory())
        total -= entry.bytes
        dropped.append(entry)
    return dropped


def clear() -> int:
    """Deletes every entry (and any temporary a crashed writer left); returns how many entries there were."""
    count = len(entries(named=False))
    folder = directory()
    for path in folder.glob("*"):
        if path.suffix in (".json", ".so") and path.is_file():
            path.unlink(missing_ok=True)
    return count


def store(entry_key: str, inputs: Sequence[Path], meta: dict[str, Any]) -> bool:
    """Links `inputs` (object and assembler files) into the entry's library and writes its metadata,
    atomically; False if no C compiler driver is available or linking fails (the model still runs from the JIT)."""
    compiler = shutil.which(os.environ.get("CC", "cc"))
    if compiler is None:
        return False
    folder = directory()
    folder.mkdir(parents=True, exist_ok=True)
    library_tmp = Path(tempfile.mkstemp(dir=folder, prefix=f".{entry_key}.", suffix=".so")[1])
    meta_tmp = Path(tempfile.mkstemp(dir=folder, prefix=f".{entry_key}.", suffix=".json")[1])
    try:
        linked = subprocess.run(
            [compiler, "-shared", "-o", str(library_tmp), *map(str, inputs), "-lm"], capture_output=True
        )
        if linked.returncode != 0:
            return False
        data = library_tmp.read_bytes()
        full = {**meta, "format": FORMAT, "library_size": len(data), "library_sha256": hashlib.sha256(data).hexdigest()}
        full["meta_sha256"] = _meta_digest(full)
        meta_tmp.write_text(json.dumps(full))
        os.replace(library_tmp, folder / f"{entry_key}.so")
        os.replace(meta_tmp, folder / f"{entry_key}.json")
        evict(max_bytes())
        return True
    finally:
        for leftover in (library_tmp, meta_tmp):
            leftover.unlink(missing_ok=True)
