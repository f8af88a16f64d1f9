"""Mutations of what surrounds a valid model: the feed given to a session, the compile-cache entry it loads,
and MLIR text given to glow-opt.

Feed and cache mutations run in the worker (a non-contiguous view or a file on disk does not travel through
a pipe); each returns a description, and a feed mutation says whether it keeps the values (then the run
must give the unmutated outputs).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")
FEED_MUTATIONS = (
    "shape", "rank", "dtype", "missing", "extra", "nan", "inf", "empty", "noncontiguous", "fortran", "list",
    "scalar", "readonly", "object", "byteswap", "extreme",
)
CACHE_MUTATIONS = (
    "truncate_library", "flip_library", "delete_library", "empty_library", "truncate_json", "garbage_json",
    "edit_json", "drop_json_key", "delete_json",
)
MLIR_MUTATIONS = ("delete_token", "duplicate_token", "swap_tokens", "element_type", "dim", "attribute_number",
                  "op_name", "delete_line")


def _pick(rng: np.random.Generator, items: Sequence[T]) -> T:
    return items[int(rng.integers(len(items)))]


def apply_feed_mutation(
    kind: str, feed: dict[str, np.ndarray], rng: np.random.Generator
) -> tuple[dict[str, Any], bool, str]:
    """(the mutated feed, whether it keeps every value, a description)."""
    new: dict[str, Any] = dict(feed)
    if not feed:
        return {"bogus": np.zeros(1, np.float32)}, False, "an input given to a model that takes none"
    name = _pick(rng, sorted(feed))
    x = feed[name]
    if kind == "shape":
        dims = list(x.shape) or [1]
        axis = int(rng.integers(len(dims)))
        dims[axis] = max(1, dims[axis] + int(_pick(rng, [-1, 1, 2, 7])))
        new[name] = np.resize(x, dims).astype(x.dtype) if x.ndim else np.zeros(dims, x.dtype)
        return new, False, f"input '{name}' of shape {dims}"
    if kind == "rank":
        new[name] = x[None] if rng.random() < 0.5 or x.ndim == 0 else x.reshape(-1)
        return new, False, f"input '{name}' of rank {new[name].ndim}"
    if kind == "dtype":
        dt = _pick(rng, [np.float64, np.float16, np.int32, np.int64, np.bool_, np.uint8, np.complex64, np.float32])
        new[name] = x.astype(dt)
        return new, np.dtype(dt) == x.dtype, f"input '{name}' as {np.dtype(dt)}"
    if kind == "missing":
        del new[name]
        return new, False, f"input '{name}' left out"
    if kind == "extra":
        new["extra_input"] = np.zeros(3, np.float32)
        return new, False, "an extra input"
    if kind in ("nan", "inf"):
        if x.dtype.kind != "f" or x.size == 0:
            return new, True, f"input '{name}' unchanged (not float)"
        y = x.copy()
        y.reshape(-1)[int(rng.integers(y.size))] = np.nan if kind == "nan" else _pick(rng, [np.inf, -np.inf])
        new[name] = y
        return new, False, f"input '{name}' with a {kind}"
    if kind == "empty":
        dims = list(x.shape) or [0]
        dims[int(rng.integers(len(dims)))] = 0
        new[name] = np.zeros(dims, x.dtype)
        return new, False, f"input '{name}' of shape {dims}"
    if kind == "noncontiguous":
        # Every other element of an array twice as long on the last axis: the same values, strided.
        wide = np.repeat(x, 2, axis=-1) if x.ndim else x
        new[name] = wide[..., ::2] if x.ndim else wide
        return new, True, f"input '{name}' as a strided view"
    if kind == "fortran":
        new[name] = np.asfortranarray(x)
        return new, True, f"input '{name}' in Fortran order"
    if kind == "list":
        new[name] = x.tolist()
        return new, False, f"input '{name}' as a Python list"
    if kind == "scalar":
        new[name] = x.reshape(-1)[0].item() if x.size else 0
        return new, False, f"input '{name}' as a Python scalar"
    if kind == "readonly":
        y = x.copy()
        y.flags.writeable = False
        new[name] = y
        return new, True, f"input '{name}' read-only"
    if kind == "object":
        new[name] = _pick(rng, [None, "text", {"a": 1}, object(), [[1, 2], [3]]])
        return new, False, f"input '{name}' as {type(new[name]).__name__}"
    if kind == "extreme":
        # An integer past any bound a model expects of it (a token id past the vocabulary, an index past its
        # axis, a repeat count): typed errors or clamped reads, never a read or write outside a buffer.
        if x.dtype.kind not in "iu" or x.size == 0:
            return new, True, f"input '{name}' unchanged (not integer)"
        info = np.iinfo(x.dtype)
        value = _pick(rng, [info.max, info.min, info.max // 2 + 1, 1 << min(31, info.bits - 2), -7, 1000, 65536])
        value = max(info.min, min(info.max, value))  # -7 of an unsigned type, 65536 of an 8- or 16-bit one
        y = x.copy()
        flat = y.reshape(-1)
        if rng.random() < 0.5:
            flat[int(rng.integers(y.size))] = value
        else:
            flat[:] = value
        new[name] = y
        return new, False, f"input '{name}' holding {value}"
    if kind == "byteswap":
        new[name] = x.astype(x.dtype.newbyteorder())
        return new, x.dtype.itemsize == 1, f"input '{name}' in the other byte order"
    raise ValueError(f"unknown feed mutation '{kind}'")


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The paths to every scalar of a JSON value."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _leaves(v, (*path, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _leaves(v, (*path, i))]
    return [path]


def apply_cache_mutation(kind: str, folder: Path, rng: np.random.Generator) -> str:
    """Damages the one entry in `folder` as `kind` says; returns a description."""
    library = next(folder.glob("*.so"))
    meta = next(folder.glob("*.json"))
    data = library.read_bytes()
    if kind == "truncate_library":
        cut = int(rng.integers(len(data)))
        library.write_bytes(data[:cut])
        return f"library truncated to {cut} bytes"
    if kind == "flip_library":
        buffer = bytearray(data)
        i = int(rng.integers(len(buffer)))
        buffer[i] ^= 1 << int(rng.integers(8))
        library.write_bytes(bytes(buffer))
        return f"a bit of library byte {i} flipped"
    if kind == "delete_library":
        library.unlink()
        return "library deleted"
    if kind == "empty_library":
        library.write_bytes(b"")
        return "library emptied"
    text = meta.read_text()
    if kind == "truncate_json":
        cut = int(rng.integers(len(text)))
        meta.write_text(text[:cut])
        return f"metadata truncated to {cut} characters"
    if kind == "garbage_json":
        meta.write_text(_pick(rng, ["", "null", "[]", "{}", "42", '"x"', "\x00\xff"]))
        return "metadata replaced"
    if kind == "delete_json":
        meta.unlink()
        return "metadata deleted"
    document = json.loads(text)
    path = _pick(rng, _leaves(document))
    parent = document
    for step in path[:-1]:
        parent = parent[step]
    if kind == "drop_json_key":
        if path:
            parent.pop(path[-1])
        meta.write_text(json.dumps(document))
        return f"metadata field {list(path)} removed"
    old = parent[path[-1]] if path else document
    if isinstance(old, bool) or not isinstance(old, (int, float)):
        value: Any = _pick(rng, [None, 0, -1, "", [], {}, "float32", "bogus"])
    else:
        value = _pick(rng, [old + 1, old - 1, 0, -1, old * 2, 2**40, None, "1"])
    if path:
        parent[path[-1]] = value
    else:
        document = value
    meta.write_text(json.dumps(document))
    return f"metadata field {list(path)} set to {value!r}"


# MLIR text: a token is an SSA name, a number, a word, a string or one punctuation character.
_TOKEN = re.compile(r'%[\w.#]+|@[\w.]+|"[^"\n]*"|-?\d+(?:\.\d+)?(?:e[+-]?\d+)?|\w+|[^\s\w]')
_ELEMENT_TYPE = re.compile(r"\b(f32|f16|f64|bf16|i1|i8|i32|i64|ui8|index)\b")
_DIM = re.compile(r"(?<=[<x])(\d+)(?=x)")
_ARRAY_NUMBER = re.compile(r"(?<=array<i64: )[^>]*|(?<== )-?\d+(?= : i64)")
_OP_NAME = re.compile(r'"(glow(?:_ir)?\.\w+)"')


def mutate_mlir(text: str, kind: str, rng: np.random.Generator) -> tuple[str, str]:
    """`text` with one mutation of `kind` in the code (comments are left alone); a description."""
    code = [(m.start(), m.end()) for m in _TOKEN.finditer(text) if not _in_comment(text, m.start())]
    if not code:
        return text, "no token"
    if kind in ("delete_token", "duplicate_token"):
        start, end = _pick(rng, code)
        piece = "" if kind == "delete_token" else text[start:end] * 2
        return text[:start] + piece + text[end:], f"{kind} {text[start:end]!r} at offset {start}"
    if kind == "swap_tokens":
        (a0, a1), (b0, b1) = sorted([_pick(rng, code), _pick(rng, code)])
        if a1 > b0:
            return text, "no swap"
        return text[:a0] + text[b0:b1] + text[a1:b0] + text[a0:a1] + text[b1:], f"swapped offsets {a0} and {b0}"
    if kind == "delete_line":
        lines = text.split("\n")
        i = int(rng.integers(len(lines)))
        return "\n".join(lines[:i] + lines[i + 1:]), f"line {i + 1} deleted"
    pattern, choices = {
        "element_type": (_ELEMENT_TYPE, ["f32", "f16", "i1", "i32", "i64", "index", "bf16", "ui8", "f64"]),
        "dim": (_DIM, ["0", "1", "3", "7", "65536", "2147483648"]),
        "attribute_number": (_ARRAY_NUMBER, ["", "0", "-1", "1, 2, 3", "0, 0", "9999999999", "-5, 1"]),
        "op_name": (_OP_NAME, ['"glow.add"', '"glow.relu"', '"glow.convolution"', '"glow.reshape"',
                               '"glow_ir.copy"', '"glow.concat"', '"glow.bogus"', '"glow.transpose"']),
    }[kind]
    matches = [m for m in pattern.finditer(text) if not _in_comment(text, m.start())]
    if not matches:
        return mutate_mlir(text, "delete_token", rng)
    m = _pick(rng, matches)
    value = _pick(rng, choices)
    return text[: m.start()] + value + text[m.end():], f"{kind}: {m.group(0)!r} -> {value!r} at offset {m.start()}"


def _in_comment(text: str, offset: int) -> bool:
    line_start = text.rfind("\n", 0, offset) + 1
    return "//" in text[line_start:offset]
