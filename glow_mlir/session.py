"""`InferenceSession`: onnxruntime's session API over the ONNX importer and the JIT.

    session = glow_mlir.InferenceSession("model.onnx")
    [probabilities] = session.run(None, {"image": image})
    session.get_inputs()[0].name, session.get_inputs()[0].shape, session.report

Code written for onnxruntime runs unchanged. The model is imported and compiled once, at construction.
Old-style models list initializers among the graph inputs; onnxruntime lets a caller override those by
feeding them, so a feed naming one compiles (once, then cached) a variant where it is a real input.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from glow_mlir.frontends.onnx.importer import import_model, load
from glow_mlir.runtime import Buffer, CompiledModel, compile

# onnxruntime's type strings.
_TYPE_NAMES = {
    np.dtype(np.float32): "tensor(float)",
    np.dtype(np.float64): "tensor(double)",
    np.dtype(np.float16): "tensor(float16)",
    np.dtype(np.bool_): "tensor(bool)",
    np.dtype(np.int8): "tensor(int8)",
    np.dtype(np.int16): "tensor(int16)",
    np.dtype(np.int32): "tensor(int32)",
    np.dtype(np.int64): "tensor(int64)",
}


@dataclass(frozen=True)
class NodeArg:
    """An input or output of the session, as onnxruntime's NodeArg: name, static shape, type string."""

    name: str
    shape: list[int]
    type: str


class InferenceSession:
    """A compiled ONNX model with onnxruntime's `InferenceSession` interface.

    `threads` must be 1: the generated code runs on one thread, and there is no multi-threaded execution yet.
    `static_inputs` binds graph inputs that decide shapes (see `import_model`).
    """

    def __init__(
        self,
        model: onnx.ModelProto | bytes | str | os.PathLike[str],
        threads: int = 1,
        *,
        static_inputs: dict[str, np.ndarray] | None = None,
    ) -> None:
        if threads != 1:
            raise ValueError(
                f"threads={threads}: only threads=1 is supported; glow-mlir has no multi-threaded execution yet"
            )
        self._model = load(model)
        self._static_inputs = dict(static_inputs or {})
        graph = self._model.graph
        initializers = {t.name for t in graph.initializer}
        self._overridable = {i.name for i in graph.input if i.name in initializers}
        self._variants: dict[frozenset[str], CompiledModel] = {}
        self._default = self._variant(frozenset())

    def _variant(self, keep: frozenset[str]) -> CompiledModel:
        """The compiled model where the initializer-backed inputs `keep` are real inputs."""
        if keep not in self._variants:
            start = time.perf_counter()
            graph = import_model(self._model, static_inputs=self._static_inputs, keep_inputs=keep)
            imported = time.perf_counter()
            compiled = compile(graph)
            compiled.report["import_seconds"] = imported - start
            self._variants[keep] = compiled
        return self._variants[keep]

    def get_inputs(self) -> list[NodeArg]:
        return [_node_arg(b) for b in self._default.abi.inputs]

    def get_outputs(self) -> list[NodeArg]:
        return [_node_arg(b) for b in self._default.abi.outputs]

    def get_overridable_initializers(self) -> list[NodeArg]:
        """The initializer-backed graph inputs a feed may override (as onnxruntime's method of that name)."""
        variant = self._variant(frozenset(self._overridable))
        return [_node_arg(b) for b in variant.abi.inputs if b.name in self._overridable]

    @property
    def report(self) -> dict[str, Any]:
        """The compile report of the model as constructed (arena size, pass timings, compile time)."""
        return self._default.report

    def run(
        self, output_names: list[str] | None, input_feed: dict[str, np.ndarray], run_options: object = None
    ) -> list[np.ndarray]:
        """The outputs named in `output_names` (all, in model order, for None), as onnxruntime returns them.

        `run_options` is accepted for onnxruntime compatibility and ignored.
        """
        keep = frozenset(name for name in input_feed if name in self._overridable)
        compiled = self._variant(keep)
        results = compiled.run({name: np.asarray(value) for name, value in input_feed.items()})
        names = list(output_names) if output_names else [b.name for b in compiled.abi.outputs]
        unknown = [n for n in names if n not in results]
        if unknown:
            raise ValueError(f"no output named {', '.join(map(repr, unknown))}; the outputs are {list(results)}")
        return [results[n] for n in names]


def _node_arg(buffer: Buffer) -> NodeArg:
    return NodeArg(buffer.name, list(buffer.shape), _TYPE_NAMES[buffer.dtype])
