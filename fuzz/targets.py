"""Running one case in a worker process and judging what came out.

A case passes when its input compiles and runs (`ok`: for a mutated model there is no oracle beyond not
crashing and running alike from two poisoned arenas, glow_mlir/library.py's POISON, so that outputs reading
bytes nothing wrote differ; a feed or cache mutation that keeps the values must give the unmutated run's
outputs, bit for bit), or when glow-mlir refuses it with a `GlowError` whose message names the node, input,
value or file at fault (`refused`). Failures: `internal` (any other exception escaped: IndexError, KeyError,
onnx's own errors, MemoryError, ...), `unnamed` (a typed refusal that names nothing, or a glow-opt diagnostic
without a location), `wrong` (a value-preserving feed or a cache reload gave other outputs, or the outputs
changed with the poison byte: a garbage read). The runner adds `crash` and `hang`.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import tempfile
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from google.protobuf.message import DecodeError

import glow_mlir
from fuzz.mutate_io import apply_cache_mutation, apply_feed_mutation
from glow_mlir import library
from glow_mlir.errors import GlowError, MalformedModelError, UnsupportedModelError
from glow_mlir.frontends.onnx.importer import draws
from glow_mlir.tools import glow_opt

FAILING = ("internal", "unnamed", "wrong", "crash", "hang")
# Larger inputs are not fed: a mutated model may declare absurd dims, and allocating them proves nothing.
MAX_FEED_ELEMENTS = 1 << 22
# What onnxruntime calls each element type (`tensor(float)`), as InferenceSession.get_inputs reports it.
_ORT_TYPES = {
    f"tensor({name.lower()})": onnx.helper.tensor_dtype_to_np_dtype(value)
    for name, value in onnx.TensorProto.DataType.items()
    if value not in (onnx.TensorProto.UNDEFINED, onnx.TensorProto.STRING)
}
_QUOTED = re.compile(r"'([^']+)'")
# A glow-opt diagnostic line whose location is the tool itself or MLIR's unknown location.
_UNLOCATED = re.compile(r"^(glow-opt|unknown): (error|warning)", re.MULTILINE)


# The poison bytes (glow_mlir/library.py): reference runs fill the arena and outputs with NaN bytes, a case's
# runs with zeros, so that outputs computed from bytes no kernel wrote differ between the two.
REFERENCE_POISON, CASE_POISON = 0xFF, 0x00

# The folder a worker keeps its files in (the runner makes one per worker and removes it).
SCRATCH_VARIABLE = "GLOW_FUZZ_SCRATCH"


def _scratch() -> Path:
    return Path(os.environ.get(SCRATCH_VARIABLE) or tempfile.gettempdir())


@dataclass(frozen=True)
class Result:
    """What one case gave: its status, a message (the error, or what differs) and the traceback if any."""

    status: str
    message: str = ""
    traceback: str = ""
    # Identifies the failure for minimization: a smaller input must fail the same way.
    signature: str = ""


def run(target: str, payload: dict[str, Any]) -> Result:
    """Runs one case of `target` and classifies it (never raises)."""
    runner = _TARGETS[target]
    try:
        with _poisoned(CASE_POISON):
            return runner(payload)
    except Exception as e:  # noqa: BLE001 - every escape is a finding to report, not to raise
        return _escaped(e)


@contextlib.contextmanager
def _poisoned(byte: int) -> Iterator[None]:
    saved = library.POISON
    library.POISON = byte
    try:
        yield
    finally:
        library.POISON = saved


def _escaped(e: BaseException) -> Result:
    frames = traceback.extract_tb(e.__traceback__)
    where = f"{Path(frames[-1].filename).name}:{frames[-1].name}" if frames else "?"
    text = "".join(traceback.format_exception(e))
    return Result("internal", f"{type(e).__name__}: {e}"[:2000], text[-6000:], f"internal {type(e).__name__} {where}")


def _refused(e: GlowError, names: set[str]) -> Result:
    """A typed refusal passes when its message names something of the input."""
    message = str(e)
    # A quoted name counts, also as the first part of a path (a node of an op's function body, of a subgraph).
    quoted = {q.split("/")[0] for q in _QUOTED.findall(message)} | set(_QUOTED.findall(message))
    named = bool(quoted & (names - {""})) or any(f"node name: {n}" in message for n in names if n)
    whole_model = isinstance(e, (MalformedModelError, UnsupportedModelError)) and (
        "model" in message or "opset" in message
    )
    if named or whole_model:
        return Result("refused", f"{type(e).__name__}: {message}"[:2000])
    text = "".join(traceback.format_exception(e))
    return Result("unnamed", f"{type(e).__name__}: {message}"[:2000], text[-6000:], f"unnamed {type(e).__name__}")


def model_names(data: bytes) -> set[str]:
    """Every name a message about the model may quote: nodes (also as the importer names unnamed ones),
    values, initializers, graph inputs and outputs, in subgraphs too."""
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except DecodeError:
        return set()
    names: set[str] = set()

    def text(value: str | bytes) -> str:
        # protobuf hands back a string field that is not UTF-8 as its bytes.
        return value if isinstance(value, str) else value.decode("utf-8", "replace")

    def walk(graph: onnx.GraphProto, prefix: str) -> None:
        names.update(text(v.name) for v in [*graph.input, *graph.output, *graph.value_info])
        names.update(text(t.name) for t in graph.initializer)
        for i, node in enumerate(graph.node):
            node_name = prefix + (text(node.name) or f"{text(node.op_type)}_{i}")
            names.update([node_name, text(node.name), *map(text, node.input), *map(text, node.output)])
            for a in node.attribute:
                for sub in [a.g] if a.HasField("g") else list(a.graphs):
                    walk(sub, f"{node_name}/")

    walk(model.graph, "")
    return names


def feed_for(session: glow_mlir.InferenceSession, known: dict[str, np.ndarray]) -> dict[str, np.ndarray] | None:
    """A feed for every input of `session`: the seed's array where it still fits, else zeros (valid as
    indices too) with symbolic dims as 2; None when an input is too large to allocate."""
    feed = {}
    for arg in session.get_inputs():
        dims = [d if isinstance(d, int) and d >= 0 else 2 for d in arg.shape]
        if int(np.prod(dims, dtype=np.float64)) > MAX_FEED_ELEMENTS:
            return None
        dt = np.dtype(_ORT_TYPES[arg.type])
        seed = known.get(arg.name)
        fits = seed is not None and seed.dtype == dt and all(
            not isinstance(d, int) or d == s for d, s in zip(arg.shape, seed.shape)
        ) and len(arg.shape) == seed.ndim
        feed[arg.name] = seed if fits else np.zeros(dims, dt)
    return feed


def draws_random(data: bytes) -> bool:
    """Whether the model holds a random op (importer.draws: new numbers on every run, so other outputs on a
    second run), in a subgraph or a function too."""
    model = onnx.ModelProto()
    model.ParseFromString(data)

    def walk(nodes: Any) -> bool:
        return any(
            draws(node) or any(walk(g.node) for a in node.attribute for g in [a.g, *a.graphs]) for node in nodes
        )

    return walk(model.graph.node) or any(walk(f.node) for f in model.functions)


def _run_model(payload: dict[str, Any]) -> Result:
    data: bytes = payload["model"]
    try:
        session = glow_mlir.InferenceSession(data)
        feed = feed_for(session, payload["feed"])
        if feed is None:
            return Result("ok")
        outputs = session.run(None, feed)
        if draws_random(data):
            return Result("ok")
        with _poisoned(REFERENCE_POISON):
            reference = session.run(None, feed)
    except GlowError as e:
        return _refused(e, model_names(data) | {"the model bytes"})
    differs = _same(reference, outputs)
    if differs:
        start = f"{REFERENCE_POISON:#04x} and {CASE_POISON:#04x}"
        message = f"a garbage read: {differs} between runs whose arena and outputs start as bytes {start}"
        return Result("wrong", message, signature="wrong garbage read")
    return Result("ok")


# The feed and cache targets reuse one valid session per seed: (session, reference outputs).
_sessions: dict[str, tuple[glow_mlir.InferenceSession, list[np.ndarray]]] = {}


def _session(payload: dict[str, Any]) -> tuple[glow_mlir.InferenceSession, list[np.ndarray]]:
    seed = payload["seed"]
    if seed not in _sessions:
        session = glow_mlir.InferenceSession(payload["model"])
        with _poisoned(REFERENCE_POISON):
            _sessions[seed] = session, session.run(None, payload["feed"])
    return _sessions[seed]


def _same(expected: list[np.ndarray], got: list[np.ndarray]) -> str:
    """'' when the outputs are equal bit for bit, else what differs: the reference run's outputs
    (the unmutated run's, or those under REFERENCE_POISON) against the case's."""
    if len(expected) != len(got):
        return f"expected {len(expected)} outputs, got {len(got)}"
    for i, (e, g) in enumerate(zip(expected, got)):
        # By their bytes: NaNs equal, also in types numpy compares as opaque (ml_dtypes' float8 formats).
        if e.shape != g.shape or e.dtype != g.dtype or e.tobytes() != g.tobytes():
            return f"output {i} differs"
    return ""


def _run_feed(payload: dict[str, Any]) -> Result:
    session, reference = _session(payload)
    rng = np.random.default_rng(payload["rng"])
    feed, preserving, description = apply_feed_mutation(payload["mutation"], payload["feed"], rng)
    try:
        outputs = session.run(None, feed)
    except GlowError as e:
        return _refused(e, {*payload["feed"], *feed} | model_names(payload["model"]))
    if preserving:
        differs = _same(reference, outputs)
        if differs:
            message = f"{description}: {differs} from the unmutated run's"
            return Result("wrong", message, signature=f"wrong feed {payload['mutation']}")
    return Result("ok", description)


@contextlib.contextmanager
def _cache_dir(folder: Path) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in ("GLOW_MLIR_CACHE", "GLOW_MLIR_CACHE_DIR")}
    os.environ.update(GLOW_MLIR_CACHE="1", GLOW_MLIR_CACHE_DIR=str(folder))
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# The files of each seed's intact cache entry, restored before every case.
_entries: dict[str, dict[str, bytes]] = {}


def _run_cache(payload: dict[str, Any]) -> Result:
    seed, model, seed_feed = payload["seed"], payload["model"], payload["feed"]
    _, reference = _session(payload)
    folder = _scratch() / "cache" / seed.replace("/", "_")
    with _cache_dir(folder):
        if seed not in _entries:
            glow_mlir.InferenceSession(model)
            _entries[seed] = {p.name: p.read_bytes() for p in folder.iterdir() if p.suffix in (".so", ".json")}
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for name, data in _entries[seed].items():
            (folder / name).write_bytes(data)
        rng = np.random.default_rng(payload["rng"])
        description = apply_cache_mutation(payload["mutation"], folder, rng)
        try:
            outputs = glow_mlir.InferenceSession(model).run(None, seed_feed)
        except GlowError as e:
            return _refused(e, {str(folder), *(p.name for p in folder.iterdir())})
    differs = _same(reference, outputs)
    if differs:
        message = f"{description}: {differs} from the unmutated run's"
        return Result("wrong", message, signature=f"wrong cache {payload['mutation']}")
    return Result("ok", description)


def _run_mlir(payload: dict[str, Any]) -> Result:
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", dir=_scratch(), delete=False) as f:
        f.write(payload["text"])
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = glow_opt.main([f.name, *payload["args"]])
    finally:
        os.unlink(f.name)
    text = err.getvalue()
    unlocated = _UNLOCATED.search(text)
    if unlocated is not None:
        line = text[unlocated.start():].splitlines()[0]
        return Result("unnamed", line[:2000], text[-6000:], f"unlocated {re.sub(r'[0-9]+', 'N', line)[:80]}")
    return Result("ok" if status == 0 else "refused", text[:2000])


_TARGETS: dict[str, Callable[[dict[str, Any]], Result]] = {
    "graph": _run_model,
    "protobuf": _run_model,
    "feed": _run_feed,
    "cache": _run_cache,
    "mlir": _run_mlir,
}
TARGETS = tuple(_TARGETS)
