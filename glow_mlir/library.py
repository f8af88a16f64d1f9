"""A compiled model's native code and its calling convention, without MLIR: `LoadedModel.run` on numpy arrays.

`LoadedModel.run` checks every input against the model's ABI (its `Abi`, read by glow_mlir/compiled.py right
after `glow-allocate`) before any generated code runs, then calls the packed entry point
`_mlir__mlir_ciface_<name>(void **)` through ctypes, which releases the GIL while it runs. Memref descriptors
and the arena (64-byte aligned as glow-allocate assumed) are allocated once per run slot, one per run in
flight (several Python threads may run one model at once), and only their data pointers change per call;
constants live in the native code as globals.

`GLOW_MLIR_POISON` (a byte, 0-255, decimal or 0x-prefixed) fills each run's arena and every output with that byte
before the generated code runs (`POISON`): a kernel that reads bytes nothing wrote in this run, or leaves an output
byte unwritten, then shows it in the outputs instead of reading a fresh arena's zeros or an earlier run's values.
It is an oracle for tests and the fuzzer (docs/Fuzzing.md, "Garbage reads"); unset, a run fills nothing.

Nothing here imports MLIR or the compiler: a model's shared library from the compile cache (glow_mlir/cache.py),
with its ABI from the entry's metadata, runs wherever numpy is installed, for instance on a machine the
model was compiled for but where the compiler is not installed (`open_entry`; bench/threads.py's bundles).
Of the package it imports only glow_mlir.errors and glow_mlir.cache, free of MLIR too.
"""

from __future__ import annotations

import ctypes
import functools
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import ml_dtypes  # noqa: F401 - registers bfloat16, float8_* ... with numpy, for decode_dtype
import numpy as np

from glow_mlir import cache
from glow_mlir.errors import FeedError

ARENA_ALIGNMENT = 64
# Outputs of this many bytes or more start at an ARENA_ALIGNMENT boundary (`_aligned_output`): a 64-byte store
# across two cache lines cost about 1 ns more (a depthwise layer's 9,400 stores into np.empty's memory), the
# aligned allocation about 0.45 us more than np.empty (bench/overhead.py's model has a 16-byte output).
ALIGNED_OUTPUT_BYTES = 32 * 1024
POISON_VARIABLE = "GLOW_MLIR_POISON"


def poison_byte(text: str | None) -> int | None:
    """The byte that `text` (GLOW_MLIR_POISON's value) names, None for unset or empty; ValueError otherwise."""
    if not text:
        return None
    try:
        value = int(text, 0)
    except ValueError:
        value = -1
    if not 0 <= value <= 255:
        raise ValueError(f"{POISON_VARIABLE}={text!r}: expected a byte, 0 to 255 (decimal or 0x-prefixed)")
    return value


# The byte every run fills its arena and outputs with first, or None (module docstring). Read at each run, so a
# test may set it.
POISON = poison_byte(os.environ.get(POISON_VARIABLE))


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


class LoadedModel:
    """A model's native code, called through `function` (its packed entry point) on numpy arrays: `run(feeds)`
    maps input names to arrays and returns the outputs by name."""

    def __init__(self, abi: Abi, function: Callable[[Any], None]) -> None:
        self.abi = abi
        self._function: Callable[[Any], None] | None = function
        self._input_index = {b.name: i for i, b in enumerate(abi.inputs)}
        # The run slots not in use. A run takes one (a new one when none is free) and puts it back, so runs from
        # several Python threads each have their own arena, while a lone caller always gets the same one (the
        # list's pop and append are atomic under the GIL: no lock). `_arena` and `_packed` are that first slot's.
        first = _RunSlot(abi)
        self._free = [first]
        self._arena, self._packed = first.arena, first.packed

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
            raise RuntimeError("this model is closed")
        if len(feeds) != len(self.abi.inputs):
            self._check(feeds)
        keep: list[np.ndarray] = []
        results: dict[str, np.ndarray] = {}
        try:
            slot = self._free.pop()
        except IndexError:
            slot = _RunSlot(self.abi)
        poison = POISON
        try:
            if poison is not None:
                slot.arena.fill(poison)
            for name, shape, dtype, descriptor in slot.inputs:
                array = feeds.get(name)
                if array.__class__ is not np.ndarray or array.dtype != dtype or array.shape != shape:
                    array = self._check(feeds)[self._input_index[name]]
                    keep.append(array)
                elif not array.flags.c_contiguous:
                    # A view (a staged model's result cut to its count along an inner axis): copied alone.
                    array = np.ascontiguousarray(array)
                    keep.append(array)
                point(descriptor, array)
            for name, shape, dtype, nbytes, descriptor in slot.outputs:
                if nbytes < ALIGNED_OUTPUT_BYTES:
                    out = results[name] = np.empty(shape, dtype)
                    point(descriptor, out)
                else:
                    results[name] = _aligned_output(shape, dtype, nbytes, descriptor)
                if poison is not None:
                    results[name].reshape(-1).view(np.uint8).fill(poison)
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

    def close(self) -> None:
        """Drops the native code; the model cannot run afterwards."""
        self._function = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def entry_point(library: ctypes.CDLL, abi: Abi) -> Callable[[Any], None]:
    """The packed entry point of `abi`'s function in a linked model library (one void** argument), the same
    function ExecutionEngine.lookup returns for a JITed module."""
    address = ctypes.cast(library[f"_mlir__mlir_ciface_{abi.function}"], ctypes.c_void_p).value
    return ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)


def open_entry(folder: Path) -> tuple[LoadedModel, dict[str, Any]]:
    """The model of the one compile cache entry in `folder` (a cache directory holding a single model, such as
    bench/ab.py's or bench/threads.py's bundles), and the entry's metadata (its compile report)."""
    keys = [p.stem for p in folder.glob("*.json")]
    if len(keys) != 1:
        raise ValueError(f"{folder} holds {len(keys)} compile cache entries, not one")
    hit = cache.load(keys[0], folder)
    if hit is None:
        raise ValueError(f"the compile cache entry {keys[0]} in {folder} does not load (missing or corrupt)")
    library, meta = hit
    abi = abi_from_json(meta["abi"])
    return LoadedModel(abi, entry_point(library, abi)), meta


@functools.cache
def _pointer_array(count: int) -> type[ctypes.Array[ctypes.c_void_p]]:
    """ctypes' array type of `count` pointers, made once: each is a class, which a reference cycle would keep
    until a full garbage collection after its model is gone."""
    return ctypes.c_void_p * count


class _RunSlot:
    """What one run of a model writes besides its outputs: its own arena (allocated once, 64-byte aligned as
    glow-allocate assumed) and memref descriptors built once, of which a run only changes the data pointers."""

    def __init__(self, abi: Abi) -> None:
        self.arena = aligned_bytes(abi.arena_bytes)
        buffers = (*abi.inputs, *abi.outputs, Buffer("arena", (abi.arena_bytes,), np.dtype(np.uint8)))
        descriptors = [memref_descriptor(b.shape) for b in buffers]
        count = len(abi.inputs)
        self.inputs = tuple((b.name, b.shape, b.dtype, d) for b, d in zip(abi.inputs, descriptors[:count], strict=True))
        self.outputs = tuple(
            (b.name, b.shape, b.dtype, math.prod(b.shape) * b.dtype.itemsize, d)
            for b, d in zip(abi.outputs, descriptors[count:-1], strict=True)
        )
        point(descriptors[-1], self.arena)
        # The packed-call convention: one pointer per argument, each to a pointer to its descriptor.
        self._pointers = [ctypes.pointer(d) for d in descriptors]
        self.packed = _pointer_array(len(buffers))(*[ctypes.addressof(p) for p in self._pointers])


def abi_to_json(abi: Abi) -> dict[str, Any]:
    def buffers(group: tuple[Buffer, ...]) -> list[dict[str, Any]]:
        return [{"name": b.name, "shape": list(b.shape), "dtype": encode_dtype(b.dtype)} for b in group]

    return {
        "function": abi.function,
        "inputs": buffers(abi.inputs),
        "outputs": buffers(abi.outputs),
        "arena_bytes": abi.arena_bytes,
        "attributes": abi.attributes,
    }


def abi_from_json(data: dict[str, Any]) -> Abi:
    def buffers(group: list[dict[str, Any]]) -> tuple[Buffer, ...]:
        return tuple(Buffer(b["name"], tuple(b["shape"]), decode_dtype(b["dtype"])) for b in group)

    return Abi(
        data["function"], buffers(data["inputs"]), buffers(data["outputs"]), data["arena_bytes"], data["attributes"]
    )


def encode_dtype(dtype: np.dtype) -> str:
    """By name: ml_dtypes' types (bfloat16, float8_*) have no type string of their own (`.str` is '<V2')."""
    return np.dtype(dtype).name


def decode_dtype(text: str) -> np.dtype:
    return np.dtype(text)


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


def _aligned_output(shape: tuple[int, ...], dtype: np.dtype, nbytes: int, descriptor: ctypes.Structure) -> np.ndarray:
    """A new output array of `shape` starting at an ARENA_ALIGNMENT boundary, as arena buffers do, and
    `descriptor` pointed at it. The kernel writing an output stores whole vectors: into np.empty's 16-byte
    aligned memory each 64-byte store spans two cache lines (a 28x28x192 depthwise layer's kernel ran 1.45x
    slower so). The address comes from ctypes, as in `point`, not `array.ctypes.data`."""
    storage = np.empty(nbytes + ARENA_ALIGNMENT, np.uint8)
    address = ctypes.addressof(ctypes.c_char.from_buffer(storage))
    skip = -address % ARENA_ALIGNMENT
    descriptor.allocated = descriptor.aligned = address + skip
    return np.ndarray(shape, dtype, storage, skip)


def aligned_bytes(size: int) -> np.ndarray:
    """A zeroed buffer of `size` bytes that starts at an ARENA_ALIGNMENT boundary (it keeps its storage)."""
    storage = np.zeros(size + ARENA_ALIGNMENT, np.uint8)
    start = -storage.ctypes.data % ARENA_ALIGNMENT
    return storage[start : start + size]
