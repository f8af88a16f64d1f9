"""Per-kernel profiles: how long each generated kernel took, run by run, named after the model nodes it computes.

    model = glow_mlir.compile(graph, profile=True)     # a ProfiledModel
    model.run(feeds)
    print(profile_table(summarize(model.kernels, model.runs)))

`compile(..., profile=True)` builds the profiling variant of the code (glow_mlir/backends/cpu/profile.py:
every call of an outlined kernel from the entry function is timed into a counters buffer; with `threads=N`
from the calling thread, a split kernel's fork and join included); the normal variant carries none of it,
and the compile cache keys the two apart. `ProfiledModel.run` reads and resets the counters after each run
and keeps one `Run` record per call.

`Profiler` is onnxruntime's session profiling (`SessionOptions.enable_profiling`): it collects the runs of
every specialization a session compiles and `end()` writes them as onnxruntime's chrome-trace JSON (load it
in chrome://tracing or Perfetto): one "Session" event per compile and per run (`model_run`), and one "Node"
event per kernel per run named `<nodes>_kernel_time`, whose args give the kernel's symbol, the ONNX nodes and
their op types. Timestamps are microseconds since the profiler started, on the monotonic clock that the
generated code reads too.
"""

from __future__ import annotations

import ctypes
import itertools
import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from glow_mlir.backends.cpu.parallel import Split
from glow_mlir.backends.cpu.profile import CALLS_ROW, NS_ROW, READ, ROWS, START_ROW
from glow_mlir.compiled import CompiledModel
from glow_mlir.library import memref_descriptor, point

# Generated code keeps its counters in a global of its library, and two models loaded from the same cached
# library share them: profiled runs take turns process-wide, so that each reads only its own counts.
_RUNS = threading.Lock()


@dataclass(frozen=True)
class Kernel:
    """One timed call site: the outlined function it calls, the model nodes that function computes, and what its
    parallel regions split (none in single-threaded code): the site's own region, or the kernel's."""

    symbol: str
    nodes: tuple[str, ...]
    splits: tuple[Split, ...] = ()

    def label(self, known: Mapping[str, str] | None = None) -> str:
        """The nodes joined by '+' (only those in `known`, the model's node names, if any is), else the symbol."""
        return "+".join(self.model_nodes(known)) or self.symbol

    def model_nodes(self, known: Mapping[str, str] | None = None) -> tuple[str, ...]:
        """The model nodes among the location names, given the model's node names (`known`): an op of a node
        that the importer expanded into several is named `<node>/<k>` (a subgraph's, `<node>/<inner>`), so a
        name counts as its longest prefix that is a node; names of weights and inputs (a cloned constant keeps
        its initializer's name) are left out. All names when none is a node, or without `known`."""
        if known is None:
            return self.nodes
        found: dict[str, None] = {}
        for name in self.nodes:
            while name and name not in known:
                name = name.rpartition("/")[0]
            if name:
                found[name] = None
        return tuple(found) or self.nodes


@dataclass(frozen=True)
class Run:
    """One profiled run: its start on the monotonic clock, its length as Python saw it (the call included),
    the counters (per kernel: ns spent, calls, and the clock at the start of its first call), and the Python
    thread that ran it."""

    start_ns: int
    duration_ns: int
    counters: np.ndarray
    thread: int


class ProfiledModel(CompiledModel):
    """A CompiledModel of the profiling variant: each `run` also records a `Run` in `runs` (while `recording`)."""

    def __init__(self, *args: Any, kernels: Sequence[Kernel], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.kernels = tuple(kernels)
        self.runs: list[Run] = []
        self.recording = True
        if self._library is not None:
            address = ctypes.cast(self._library[f"_mlir__mlir_ciface_{READ}"], ctypes.c_void_p).value
            self._read = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)
        else:
            assert self._engine is not None
            self._read = self._engine.lookup(READ)
        # The generated code's buffer has one column at least (profile.py), whatever the kernel count.
        self._counters = np.zeros((ROWS, max(len(self.kernels), 1)), np.int64)
        descriptor = memref_descriptor(self._counters.shape)
        point(descriptor, self._counters)
        self._read_pointer = ctypes.pointer(descriptor)
        self._read_packed = (ctypes.c_void_p * 1)(ctypes.addressof(self._read_pointer))

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        with _RUNS:
            start = time.monotonic_ns()
            results = super().run(feeds)
            duration = time.monotonic_ns() - start
            self._read(self._read_packed)
            if self.recording:
                counters = self._counters[:, : len(self.kernels)].copy()
                self.runs.append(Run(start, duration, counters, threading.get_ident()))
        return results


def kernels_of(report: Mapping[str, Any]) -> list[Kernel]:
    """The kernel table a profiling compile keeps in its report (`profile_kernels`: symbol, then nodes;
    `profile_splits`: per site, its regions' trips and dims)."""
    return [
        Kernel(row[0], tuple(row[1:]), tuple(Split(tuple(s["trips"]), tuple(s["dims"])) for s in splits))
        for row, splits in zip(report["profile_kernels"], report["profile_splits"], strict=True)
    ]


def kernel_report(kernels: Sequence[Kernel]) -> dict[str, Any]:
    """The report's entries for `kernels`, which `kernels_of` reads back (the compile cache keeps reports)."""
    return {
        "profile_kernels": [[k.symbol, *k.nodes] for k in kernels],
        "profile_splits": [[{"trips": list(s.trips), "dims": list(s.dims)} for s in k.splits] for k in kernels],
    }


@dataclass(frozen=True)
class Row:
    """A kernel's share of the profiled runs."""

    kernel: str
    nodes: tuple[str, ...]
    calls: int
    total_ms: float
    percent: float


def summarize(
    kernels: Sequence[Kernel], runs: Sequence[Run], known: Mapping[str, str] | None = None
) -> tuple[list[Row], float]:
    """Per kernel, its calls and time over `runs`, slowest first, as a share of the runs' total time (as
    Python saw each call); and that total in ms. `known` maps the model's node names to op types."""
    total_ms = sum(r.duration_ns for r in runs) / 1e6
    if not runs:
        return [], 0.0
    counters = np.sum([r.counters for r in runs], axis=0)
    rows = [
        Row(k.symbol, k.model_nodes(known), int(counters[CALLS_ROW, i]), counters[NS_ROW, i] / 1e6,
            100 * counters[NS_ROW, i] / 1e6 / total_ms if total_ms else 0.0)
        for i, k in enumerate(kernels)
    ]
    rows.sort(key=lambda r: -r.total_ms)
    return rows, total_ms


def profile_table(rows: Sequence[Row], total_ms: float, runs: int, top: int = 20) -> str:
    """The `top` slowest kernels as a text table (kernel, ONNX nodes, calls, total ms, %), then the time
    spent outside every kernel (the call from Python, views, copies in the entry function)."""
    lines = [
        f"profile: {runs} run(s), {total_ms:.3f} ms in all; the {min(top, len(rows))} slowest of {len(rows)} kernels:",
        f"  {'kernel':<26} {'ONNX nodes':<48} {'calls':>6} {'total ms':>10} {'%':>6}",
    ]
    for row in rows[:top]:
        nodes = ", ".join(row.nodes) or "-"
        if len(nodes) > 48:
            nodes = nodes[:45] + "..."
        lines.append(f"  {row.kernel:<26} {nodes:<48} {row.calls:>6} {row.total_ms:>10.3f} {row.percent:>6.1f}")
    outside = total_ms - sum(r.total_ms for r in rows)
    if total_ms:
        lines.append(f"  {'(outside kernels)':<26} {'':<48} {'':>6} {outside:>10.3f} {100 * outside / total_ms:>6.1f}")
    return "\n".join(lines)


class Profiler:
    """onnxruntime's session profiling over the ProfiledModels of one session (see the module doc)."""

    def __init__(self, prefix: str, op_types: Mapping[str, str] | None = None) -> None:
        self.prefix = prefix
        self.op_types = dict(op_types or {})
        self.start_ns = time.monotonic_ns()
        self._models: list[ProfiledModel] = []
        self._session_events: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def add(self, model: ProfiledModel, seconds: float) -> None:
        """Follows the runs of `model`, whose import and compile (or cache load) just took `seconds`."""
        end_ns = time.monotonic_ns()
        with self._lock:
            self._models.append(model)
            self._session_events.append(self._event("Session", "session_initialization", end_ns - int(seconds * 1e9),
                                                    int(seconds * 1e9), {"function": model.abi.function}))

    @property
    def models(self) -> list[ProfiledModel]:
        """The models followed so far, in the order they were compiled."""
        with self._lock:
            return list(self._models)

    def _event(
        self, category: str, name: str, start_ns: int, duration_ns: int, args: dict[str, Any], thread: int | None = None
    ) -> dict[str, Any]:
        return {
            "cat": category, "pid": os.getpid(), "tid": (thread or threading.get_ident()) & 0xFFFFFFFF,
            "dur": duration_ns // 1000, "ts": (start_ns - self.start_ns) // 1000, "ph": "X", "name": name,
            "args": args,
        }

    def events(self) -> list[dict[str, Any]]:
        """The trace so far: compiles, then per run its kernels and the run itself, in time order."""
        with self._lock:
            events = list(self._session_events)
        for model in self.models:
            for run in list(model.runs):
                for i, kernel in enumerate(model.kernels):
                    calls = int(run.counters[CALLS_ROW, i])
                    if not calls:
                        continue
                    nodes = kernel.model_nodes(self.op_types or None)
                    args = {
                        "op_name": "+".join(self.op_types[n] for n in nodes if n in self.op_types) or kernel.symbol,
                        "provider": "CPUExecutionProvider", "kernel": kernel.symbol, "nodes": list(nodes),
                        "calls": calls,
                    }
                    events.append(self._event("Node", f"{kernel.label(self.op_types or None)}_kernel_time",
                                              int(run.counters[START_ROW, i]), int(run.counters[NS_ROW, i]), args,
                                              run.thread))
                events.append(self._event("Session", "model_run", run.start_ns, run.duration_ns,
                                          {"function": model.abi.function}, run.thread))
        events.sort(key=lambda e: e["ts"])
        return events

    def end(self, folder: str | os.PathLike[str] = ".") -> str:
        """Writes the trace to `<prefix>_<date>_<time>_<ms>.json` in `folder` (onnxruntime's name), stops recording,
        and returns the file's name."""
        events = self.events()
        with self._lock:
            for model in self._models:
                model.recording = False
        now = datetime.now()
        stem = f"{self.prefix}_{now:%Y-%m-%d_%H-%M-%S}_{now.microsecond // 1000:03d}"
        # Sessions ending in the same millisecond (a split model's stages) each keep a file: "_1", "_2", ...
        for copy in itertools.count():
            # The prefix may hold a folder of its own: the name is returned as written.
            name = f"{stem}_{copy}.json" if copy else f"{stem}.json"
            path = Path(folder) / name
            try:
                with open(path, "x") as file:
                    file.write("[\n" + ",\n".join(json.dumps(e) for e in events) + "\n]\n")
                break
            except FileExistsError:
                pass
        return str(path) if Path(folder) != Path(".") else name
