"""Profile-guided quantization, step one (Glow's -dump-profile): the range and histogram of every node.

`profile(model, sample_feeds)` runs the float model on each sample through the reference interpreter and
records, for every float-valued op result and every float input, its min, max and a histogram of |x| (which
KL calibration reads). The interpreter, not an instrumented compile, because it sees every op's own result:
compiled code fuses ops (their intermediate values never exist) and reuses arena buffers, so instrumenting it
would need a compile with fusion turned off, and its results are the float model's exactly. Calibration runs
a few samples once, where the interpreter's speed does not matter.

Nodes are named by their location (the ONNX node name, or the builder's op name); a name that occurs more
than once gets `#2`, `#3`, ... in program order. A profile is saved as JSON with the SHA-256 of the model's
text, and loading it for another model raises `ProfileError`: ranges of another graph would quantize this
one silently wrong.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.errors import GlowError
from glow_mlir.interpreter import interpret

# Bins of the |x| histogram: Glow's profiles keep 2000; 2048 lets KL calibration's 128 target bins split
# the candidate ranges evenly.
BINS = 2048
FORMAT = "glow-mlir-profile-1"


class ProfileError(GlowError, ValueError):
    """A profile that does not fit the model it is used with, or a file that is not a profile."""


class HasModule(Protocol):
    module: ir.Module


Model = ir.Module | HasModule | str | os.PathLike[str] | bytes | Any


def as_module(model: Model) -> ir.Module:
    """The `glow` module of a Graph, a module, or an ONNX model (path, bytes or ModelProto, imported)."""
    if isinstance(model, ir.Module):
        return model
    if hasattr(model, "module"):
        return model.module  # type: ignore[no-any-return]
    from glow_mlir.frontends.onnx import import_model

    return import_model(model).module


def graph_hash(model: Model) -> str:
    """SHA-256 of the module's text with its locations (node names are part of what a profile refers to)."""
    text = as_module(model).operation.get_asm(enable_debug_info=True)
    return hashlib.sha256(text.encode()).hexdigest()


def node_names(function: ir.Operation) -> dict[ir.Operation, str]:
    """Every op of `function`'s body by its node name (location text, `#k` for the k-th repeat)."""
    names: dict[ir.Operation, str] = {}
    seen: dict[str, int] = {}
    for op in function.regions[0].blocks[0].operations:
        op = op.operation
        if not op.name.startswith(ops.GLOW):
            continue
        base = ops.location_text(op)
        seen[base] = seen.get(base, 0) + 1
        names[op] = base if seen[base] == 1 else f"{base}#{seen[base]}"
    return names


def input_names(function: ir.Operation) -> list[str]:
    """The glow.name of each argument of `function`."""
    return [ir.StringAttr(ir.DictAttr(d)["glow.name"]).value for d in ir.ArrayAttr(function.attributes["arg_attrs"])]


def model_function(module: ir.Module) -> ir.Operation:
    """The module's one model function (a profile, like the interpreter, covers one)."""
    functions = ops.functions(module)
    if len(functions) != 1:
        raise ProfileError(f"a model to quantize has one function, this module has {len(functions)}")
    return functions[0]


@dataclasses.dataclass
class NodeProfile:
    """What the samples showed of one node's values: the extremes, and a histogram of |x| over
    [0, max(|min|, |max|)] in BINS bins."""

    min: float
    max: float
    histogram: np.ndarray

    @property
    def absmax(self) -> float:
        return max(abs(self.min), abs(self.max))

    def add(self, values: np.ndarray) -> None:
        """Takes in another sample's values: the range grows, and the old counts move to the bins of the new
        range where their bin centres fall (Glow's rescaleHistogram)."""
        flat = values.astype(np.float64).reshape(-1)
        flat = flat[np.isfinite(flat)]
        if not flat.size:
            return
        before = self.absmax if np.isfinite(self.min) else 0.0
        self.min, self.max = min(self.min, float(flat.min())), max(self.max, float(flat.max()))
        top = self.absmax
        if top > before and self.histogram.any():
            if before > 0:
                centres = (np.arange(BINS) + 0.5) * (before / BINS)
                self.histogram = np.histogram(centres, BINS, (0.0, top), weights=self.histogram)[0]
            else:
                # Every earlier value was 0: they stay in the first bin.
                self.histogram = np.concatenate([[self.histogram.sum()], np.zeros(BINS - 1)])
        # An all-zero range still has a first bin to count zeros in.
        self.histogram = self.histogram + np.histogram(np.abs(flat), BINS, (0.0, top if top > 0 else 1.0))[0]

    @staticmethod
    def of(values: np.ndarray) -> NodeProfile:
        node = NodeProfile(np.inf, -np.inf, np.zeros(BINS))
        node.add(values)
        return node


@dataclasses.dataclass
class Profile:
    """Each node's `NodeProfile` by node name (inputs by their names), for the graph hashed `graph_hash`."""

    graph_hash: str
    nodes: dict[str, NodeProfile]

    def check(self, model: Model) -> None:
        """Raises ProfileError unless this profile was taken of `model`."""
        found = graph_hash(model)
        if found != self.graph_hash:
            raise ProfileError(
                f"the profile was taken of graph {self.graph_hash[:12]}, this model's graph is {found[:12]}: "
                "profile the model again"
            )

    def __getitem__(self, name: str) -> NodeProfile:
        if name not in self.nodes:
            raise ProfileError(f"the profile has no node '{name}' (profiled: {len(self.nodes)} nodes)")
        return self.nodes[name]

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the profile as JSON (histograms as lists of counts)."""
        nodes = {
            name: {"min": n.min, "max": n.max, "histogram": n.histogram.tolist()} for name, n in self.nodes.items()
        }
        with open(path, "w") as f:
            json.dump({"format": FORMAT, "graph_hash": self.graph_hash, "bins": BINS, "nodes": nodes}, f)

    @staticmethod
    def load(path: str | os.PathLike[str], model: Model | None = None) -> Profile:
        """Reads a profile that `save` wrote; with `model`, checks it was taken of that model's graph."""
        with open(path) as f:
            try:
                data = json.load(f)
            except json.JSONDecodeError as e:
                raise ProfileError(f"{os.fspath(path)} is not a profile: {e}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("bins") != BINS:
            raise ProfileError(f"{os.fspath(path)} is not a {FORMAT} profile with {BINS} bins")
        nodes = {
            name: NodeProfile(float(n["min"]), float(n["max"]), np.asarray(n["histogram"], np.float64))
            for name, n in data["nodes"].items()
        }
        loaded = Profile(data["graph_hash"], nodes)
        if model is not None:
            loaded.check(model)
        return loaded


def is_float(array: np.ndarray) -> bool:
    """Whether `array` holds floats (bf16 is ml_dtypes' kind 'V' to numpy)."""
    return array.dtype.kind == "f" or array.dtype == ops.MLIR_TO_NUMPY["bf16"]


def profile(model: Model, sample_feeds: Iterable[Mapping[str, np.ndarray]]) -> Profile:
    """The profile of `model` over `sample_feeds` (each a dict of inputs by name), run by the interpreter."""
    module = as_module(model)
    names = node_names(model_function(module))
    nodes: dict[str, NodeProfile] = {}

    def record(name: str, values: np.ndarray) -> None:
        if not is_float(values):
            return
        if name in nodes:
            nodes[name].add(values)
        else:
            nodes[name] = NodeProfile.of(values)

    def observe(op: ir.Operation, result: np.ndarray) -> None:
        if op.name not in ("glow.constant", "glow.splat"):
            record(names[op], result)

    count = 0
    for feeds in sample_feeds:
        for name, array in feeds.items():
            record(name, np.asarray(array))
        interpret(module, dict(feeds), observe=observe)
        count += 1
    if not count:
        raise ProfileError("profiling needs at least one sample")
    return Profile(graph_hash(module), nodes)
