"""glow-mlir as an ONNX backend (`onnx.backend.base.Backend`), the interface onnx's backend test suite drives.

    rep = GlowBackend.prepare(model)          # imports and compiles, or defers (see below)
    outputs = rep.run([x, y])                 # arrays in graph-input order (or a dict by name)
    outputs[0], outputs.output_name           # results in graph-output order
    GlowBackend.run_node(node, [x, y])        # one node, wrapped in a model of its own

glow-mlir compiles static shapes only. When a graph input decides a shape (a Reshape's target, Slice
bounds, ...), the importer raises `StaticInputRequired` naming those inputs; `prepare` then defers, and
`run` compiles a specialization with the values of those inputs bound through `import_model`'s
`static_inputs`, one per distinct set of bound values (dtype, shape and bytes), cached on the rep. This
is how a static-shape compiler meets a dynamic-looking model: like XLA, it specializes on shape values.
A model with symbolic input dims is specialized the same way on the shapes of the inputs fed.

A model with data-dependent ops on run-time inputs (NonZero, NonMaxSuppression, Unique; Compress and TopK by a
run-time condition or K) runs in an InferenceSession, which splits it into stages (frontends/onnx/stages.py).

A model older than the importer's oldest opset (MIN_OPSET) is first upgraded with onnx's version converter,
as the importer's error suggests; one the converter cannot upgrade is left for the importer to refuse.

As onnx backends conventionally do, the module also offers `prepare`, `run_model`, `run_node` and
`supports_device` as functions (`import glow_mlir.onnx_backend as backend; backend.run_model(model, inputs)`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
import onnx.defs
import onnx.helper
import onnx.shape_inference
import onnx.version_converter
from onnx.backend.base import Backend, BackendRep, Device, DeviceType, namedtupledict

from glow_mlir.errors import StaticInputRequired
from glow_mlir.frontends.onnx import import_model
from glow_mlir.frontends.onnx.importer import DEFAULT_DOMAINS, MIN_OPSET
from glow_mlir.frontends.onnx.loading import load
from glow_mlir.frontends.onnx.signature import is_dynamic, signature
from glow_mlir.frontends.onnx.stages import split
from glow_mlir.runtime import CompiledModel, compile
from glow_mlir.session import InferenceSession

# The key of one specialization: (name, dtype, shape, bytes) of every bound input, in a fixed order, then
# the shape of every input for a model with symbolic dims.
SpecializationKey = tuple[tuple[str, str, tuple[int, ...], bytes] | tuple[int, ...], ...]


class GlowBackendRep(BackendRep):
    """A prepared model: compiled once, or once per set of values of its shape-deciding inputs."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.model = _upgraded(model)
        initializers = {t.name for t in self.model.graph.initializer}
        self.input_names = [i.name for i in self.model.graph.input if i.name not in initializers]
        self.output_names = [o.name for o in self.model.graph.output]
        # Inputs that decide a shape and so are bound at compile time; grows as the importer names them.
        self.static_inputs: list[str] = []
        self._compiled: dict[SpecializationKey, CompiledModel] = {}
        self._closed = False
        self._dynamic = is_dynamic(signature(self.model))
        # A model split at data-dependent ops runs in its stages' session, one per set of bound values.
        self._staged: dict[SpecializationKey, InferenceSession] | None = (
            {} if split(load(self.model), {}) is not None else None
        )
        if self._dynamic or self._staged is not None:
            return
        try:
            self._compiled[()] = compile(import_model(self.model))
        except StaticInputRequired as e:
            self.static_inputs = list(e.inputs)

    @property
    def specializations(self) -> int:
        """How many compiled versions of the model this rep holds."""
        return len(self._compiled)

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Runs the model on `inputs`: a sequence in graph-input order, a dict by name, or one array.

        Returns the outputs in graph-output order, as a tuple whose fields are also named by output.
        """
        feeds = self._feeds(inputs)
        if self._staged is not None:
            return namedtupledict("Outputs", self.output_names)(*self._run_staged(feeds))
        compiled = self._specialization(feeds)
        results = compiled.run({name: feeds[name] for name in compiled.inputs})
        return namedtupledict("Outputs", self.output_names)(*[results[name] for name in self.output_names])

    def close(self) -> None:
        """Frees every compiled specialization; the rep cannot run afterwards."""
        for compiled in self._compiled.values():
            compiled.close()
        self._compiled.clear()
        self._closed = True

    def _feeds(self, inputs: Any) -> dict[str, np.ndarray]:
        if isinstance(inputs, Mapping):
            unknown = [name for name in inputs if name not in self.input_names]
            missing = [name for name in self.input_names if name not in inputs]
            if unknown or missing:
                raise ValueError(
                    f"expected inputs {self.input_names}, got {list(inputs)}"
                    f" (missing: {missing}, unknown: {unknown})"
                )
            return {name: np.asarray(inputs[name]) for name in self.input_names}
        arrays = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
        if len(arrays) != len(self.input_names):
            raise ValueError(f"expected {len(self.input_names)} input(s) {self.input_names}, got {len(arrays)}")
        return {name: np.asarray(array) for name, array in zip(self.input_names, arrays, strict=True)}

    def _bound_key(self, feeds: dict[str, np.ndarray]) -> SpecializationKey:
        """The values fed to the inputs bound at compile time: (name, dtype, shape, bytes) of each."""
        return tuple(
            (name, feeds[name].dtype.str, feeds[name].shape, feeds[name].tobytes()) for name in self.static_inputs
        )

    def _bind_more(self, e: StaticInputRequired) -> bool:
        """Binds the inputs `e` names that are not bound yet (binding some can expose further shape-deciding
        ones: a chain of shape computations); whether there were any."""
        added = [name for name in e.inputs if name not in self.static_inputs]
        self.static_inputs += added
        return bool(added)

    def _run_staged(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        """The outputs of a model split at data-dependent ops, from the session of the values of the inputs bound
        at compile time (StaticInputRequired names them, as in `_specialization`)."""
        assert self._staged is not None
        while True:
            key = self._bound_key(feeds)
            try:
                session = self._staged.get(key) or InferenceSession(
                    self.model, static_inputs={name: feeds[name] for name in self.static_inputs})
                self._staged[key] = session
                return session.run(self.output_names, {n: v for n, v in feeds.items() if n not in self.static_inputs})
            except StaticInputRequired as e:
                if not self._bind_more(e):
                    raise

    def _specialization(self, feeds: dict[str, np.ndarray]) -> CompiledModel:
        if self._closed:
            raise RuntimeError("this GlowBackendRep is closed")
        while True:
            key = self._bound_key(feeds)
            shapes = {name: feeds[name].shape for name in self.input_names if name not in self.static_inputs}
            if self._dynamic:
                key += tuple(shapes.values())
            if key in self._compiled:
                return self._compiled[key]
            bound = {name: feeds[name] for name in self.static_inputs}
            try:
                compiled = compile(import_model(
                    self.model, static_inputs=bound, shapes=shapes if self._dynamic else None))
            except StaticInputRequired as e:
                if not self._bind_more(e):
                    raise
                continue
            self._compiled[key] = compiled
            return compiled


class GlowBackend(Backend):
    """The ONNX backend API over glow-mlir's compiler; CPU only."""

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> GlowBackendRep:
        """Imports (the importer checks the model) and compiles `model`, or defers (see the module docstring)."""
        _check_device(device)
        return GlowBackendRep(model)

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any) -> tuple[Any, ...]:
        rep = cls.prepare(model, device, **kwargs)
        try:
            return rep.run(inputs)
        finally:
            rep.close()

    @classmethod
    def run_node(
        cls,
        node: onnx.NodeProto,
        inputs: Any,
        device: str = "CPU",
        outputs_info: Sequence[tuple[np.dtype, tuple[int, ...]]] | None = None,
        **kwargs: Any,
    ) -> tuple[Any, ...]:
        """Runs one node on `inputs` (arrays for its non-empty inputs, in order, or a dict by name).

        The node becomes a model whose inputs are typed by the arrays; its outputs are typed by
        `outputs_info` (dtype, shape) when given, else by ONNX shape inference. `opset_version` in kwargs
        picks the default-domain opset (else the newest this onnx knows).
        """
        _check_device(device)
        super().run_node(node, inputs, device, outputs_info, **kwargs)
        names = list(dict.fromkeys(name for name in node.input if name))
        if isinstance(inputs, Mapping):
            if set(inputs) != set(names):
                raise ValueError(f"node '{node.name}' ({node.op_type}) has inputs {names}, got {list(inputs)}")
            arrays = {name: np.asarray(inputs[name]) for name in names}
        else:
            given = list(inputs)
            if len(given) != len(names):
                raise ValueError(f"node '{node.name}' ({node.op_type}) has inputs {names}, got {len(given)} array(s)")
            arrays = {name: np.asarray(a) for name, a in zip(names, given, strict=True)}
        graph_inputs = [
            onnx.helper.make_tensor_value_info(name, onnx.helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
            for name, a in arrays.items()
        ]
        if outputs_info is not None:
            graph_outputs = [
                onnx.helper.make_tensor_value_info(name, onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape)
                for name, (dtype, shape) in zip(node.output, outputs_info, strict=True)
            ]
        else:
            graph_outputs = [onnx.helper.make_empty_tensor_value_info(name) for name in node.output]
        opsets = [onnx.helper.make_opsetid("", kwargs.get("opset_version", onnx.defs.onnx_opset_version()))]
        if node.domain not in DEFAULT_DOMAINS:
            opsets.append(onnx.helper.make_opsetid(node.domain, 1))
        graph = onnx.helper.make_graph([node], f"run_node_{node.op_type}", graph_inputs, graph_outputs)
        model = onnx.helper.make_model(graph, opset_imports=opsets)
        if outputs_info is None:
            # Types the outputs in the model itself (graph outputs are filled in place).
            model = onnx.shape_inference.infer_shapes(model)
        return cls.run_model(model, list(arrays.values()), device, **kwargs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        """True for "CPU" (glow-mlir generates code for the host CPU only)."""
        try:
            return Device(device).type == DeviceType.CPU
        except AttributeError:
            return False


def _upgraded(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` converted to MIN_OPSET when it imports an older default-domain opset (else `model` itself)."""
    opsets = [o.version for o in model.opset_import if o.domain in DEFAULT_DOMAINS]
    if not opsets or opsets[0] >= MIN_OPSET:
        return model
    try:
        return onnx.version_converter.convert_version(model, MIN_OPSET)
    except (onnx.version_converter.ConvertError, RuntimeError, ValueError):
        return model


def _check_device(device: str) -> None:
    if not GlowBackend.supports_device(device):
        raise ValueError(f"glow-mlir runs on the CPU only, got device '{device}'")


prepare = GlowBackend.prepare
run_model = GlowBackend.run_model
run_node = GlowBackend.run_node
supports_device = GlowBackend.supports_device
