"""`InferenceSession`: onnxruntime's session API over the ONNX importer and the JIT.

    session = glow_mlir.InferenceSession("model.onnx")
    [probabilities] = session.run(None, {"image": image})
    session.get_inputs()[0].name, session.get_inputs()[0].shape, session.report

Code written for onnxruntime runs unchanged. A model with static input shapes is imported and compiled once,
at construction. A model with symbolic input dims (dynamic axes) loads as it is: `get_inputs()` reports each
such dim as onnxruntime does (its name, or None), and the first run at a new concrete shape compiles a
specialization for it (frontends/onnx/signature.py), which later runs at that shape reuse. The session keeps
the `max_specializations` used most recently; the compile cache on disk keeps them across processes, so a
specialization evicted here, or compiled by an earlier process, costs only the import. `shapes=` compiles
shapes up front. A model with data-dependent ops on run-time values (NonZero, NonMaxSuppression, ...) runs as
two sessions, the second one's inputs as long as the first one's results make them (frontends/onnx/stages.py).
A graph input whose value decides a shape (a Reshape's target, a Range's limit) is compiled per value, as a
dynamic axis is per shape; a model that computes such a value at run time (a length from predicted durations)
runs as two sessions cut before the node that needs it, the second compiled per value.
Old-style models list initializers among the graph inputs; onnxruntime lets a caller override those by
feeding them, so a feed naming one compiles (once, then cached) a variant where it is a real input.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from glow_mlir.backends.cpu.openmp import default_threads
from glow_mlir.compiled import CompiledModel
from glow_mlir.library import Buffer, feed_array
from glow_mlir.errors import FeedError, StaticInputRequired, UnsupportedModelError
from glow_mlir.frontends.onnx.importer import import_loaded, load
from glow_mlir.frontends.onnx.node import ONNX_TO_NUMPY
from glow_mlir.frontends.onnx.signature import Dim, Shape, is_dynamic, resolve, signature, specialize, with_overrides
from glow_mlir.frontends.onnx.stages import Split, inline_taken, split
from glow_mlir.options import PROVIDERS, RunOptions, SessionOptions, logging_level
from glow_mlir.profiling import ProfiledModel, Profiler
from glow_mlir.runtime import compile

logger = logging.getLogger(__name__)

# How many specializations of a model with symbolic dims a session keeps compiled by default.
DEFAULT_SPECIALIZATIONS = 8

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
    np.dtype(np.uint8): "tensor(uint8)",
    np.dtype(np.uint16): "tensor(uint16)",
    np.dtype(np.uint32): "tensor(uint32)",
    np.dtype(np.uint64): "tensor(uint64)",
    # ml_dtypes' types by name: importing the ONNX frontend registers them with numpy.
    np.dtype("bfloat16"): "tensor(bfloat16)",
    np.dtype("float8_e4m3fn"): "tensor(float8e4m3fn)",
    np.dtype("float8_e4m3fnuz"): "tensor(float8e4m3fnuz)",
    np.dtype("float8_e5m2"): "tensor(float8e5m2)",
    np.dtype("float8_e5m2fnuz"): "tensor(float8e5m2fnuz)",
    np.dtype("float8_e8m0fnu"): "tensor(float8e8m0)",
    np.dtype("float4_e2m1fn"): "tensor(float4e2m1)",
    np.dtype("int4"): "tensor(int4)",
    np.dtype("uint4"): "tensor(uint4)",
    np.dtype("int2"): "tensor(int2)",
    np.dtype("uint2"): "tensor(uint2)",
}


# Shapes given to the session: one {input: shape} mapping, or several.
ShapeSets = Mapping[str, Sequence[int]] | Sequence[Mapping[str, Sequence[int]]]
# A specialization: the initializer-backed inputs fed (kept as inputs), the concrete shape of every input in
# signature order (None for a model with static shapes, which needs no specialization), and the value of each
# input compiled per value (`value_inputs`: name, dtype, shape, bytes).
_Key = tuple[frozenset[str], tuple[Shape, ...] | None, tuple[tuple[str, str, Shape, bytes], ...]]
# The specialization of a model with static shapes and no input compiled per value.
_STATIC: _Key = (frozenset(), None, ())
# The sets of feed shapes whose resolved input shapes a session of a dynamic model remembers.
_RESOLVED_SHAPES = 256


@dataclass(frozen=True)
class NodeArg:
    """An input or output of the session, as onnxruntime's NodeArg: name, shape, type string.

    A dim of the shape is an int, or for a symbolic dim its name (str) or None when it has none.
    """

    name: str
    shape: list[Dim]
    type: str


@dataclass(frozen=True)
class ModelMetadata:
    """onnxruntime's ModelMetadata: the model's producer, graph name, domain, descriptions, version and
    metadata properties."""

    producer_name: str
    graph_name: str
    domain: str
    description: str
    graph_description: str
    version: int
    custom_metadata_map: dict[str, str]


# onnxruntime's keyword arguments beyond the options, accepted and without effect here.
_ORT_KEYWORDS = frozenset({"disabled_optimizers", "read_config_from_model"})


class InferenceSession:
    """A compiled ONNX model with onnxruntime's `InferenceSession` interface.

    `sess_options` (ours or onnxruntime's SessionOptions, see options.py), `providers` (CPUExecutionProvider;
    another is skipped with a warning, as onnxruntime does when it is not available) and `provider_options`
    are onnxruntime's. glow-mlir's own keywords: `threads` (as intra_op_num_threads: 0, the default, is
    the physical cores; 1 the single-threaded code; docs/THREADS.md), `static_inputs` binds graph inputs that
    decide shapes (see `import_loaded`), `value_inputs` names graph inputs compiled per value instead (each
    new value fed compiles a specialization; an input whose value decides a shape joins them at its first
    import), `shapes` pre-compiles a model with symbolic dims at the given input
    shapes (a mapping, or a list of them; an input left out takes its shape from the dims it shares with the
    others), and `max_specializations` bounds how many shape specializations stay compiled in the session,
    least recently used first out. One session may be run from several Python threads at once.
    """

    def __init__(
        self,
        path_or_bytes: onnx.ModelProto | bytes | str | os.PathLike[str],
        sess_options: SessionOptions | Any = None,
        providers: Sequence[str | tuple[str, dict[str, Any]]] | None = None,
        provider_options: Sequence[dict[str, Any]] | None = None,
        *,
        threads: int | None = None,
        static_inputs: dict[str, np.ndarray] | None = None,
        value_inputs: Sequence[str] = (),
        shapes: ShapeSets | None = None,
        max_specializations: int = DEFAULT_SPECIALIZATIONS,
        **kwargs: Any,
    ) -> None:
        unknown = sorted(set(kwargs) - _ORT_KEYWORDS)
        if unknown:
            raise TypeError(f"InferenceSession got unexpected keyword argument(s) {', '.join(map(repr, unknown))}")
        self._options = SessionOptions.of(sess_options)
        self._providers = _providers(providers, provider_options)
        # The session's messages below this level are dropped (onnxruntime's per-session log severity).
        self._log_level = logging_level(self._options.log_severity_level) or logging.NOTSET
        count = threads if threads is not None else self._options.intra_op_num_threads
        if count < 0:
            raise ValueError(f"intra_op_num_threads={count}: must be 0 (the physical cores) or more")
        # The threads each large kernel is split across (backends/cpu/parallel.py); 0 is the default.
        self._threads = count or default_threads()
        if max_specializations < 1:
            raise ValueError(f"max_specializations={max_specializations}: must be at least 1")
        self._model = load(path_or_bytes)
        # enable_profiling: every specialization is compiled in the profiling variant, its runs traced per kernel
        # (glow_mlir/profiling.py) until end_profiling writes the trace.
        self._profiler = (
            Profiler(self._options.profile_file_prefix, {n.name: n.op_type for n in self._model.graph.node})
            if self._options.enable_profiling
            else None
        )
        self._static_inputs = dict(static_inputs or {})
        declared = signature(self._model, exclude=self._static_inputs)
        self._specs = with_overrides(declared, self._options.free_dimension_overrides)
        self._dynamic = is_dynamic(self._specs)
        # A model whose symbolic dims the options fix all compiles once, at construction, specialized to them.
        self._fixed_shapes = resolve(self._specs, {}) if is_dynamic(declared) and not self._dynamic else None
        graph = self._model.graph
        initializers = {t.name for t in graph.initializer}
        # Before IR version 4 every initializer had to be listed as a graph input too (opset 7/8 exports), so
        # the listing overrides nothing: those stay constants, as onnxruntime takes them (not inputs either).
        constant = initializers if self._model.ir_version < 4 else set()
        self._overridable = {i.name for i in graph.input if i.name in initializers} - constant
        self._inputs = frozenset(i.name for i in graph.input if i.name not in constant)
        unknown = sorted(set(value_inputs) - self._inputs)
        if unknown:
            raise ValueError(f"value_inputs: no graph input named {', '.join(map(repr, unknown))}")
        self._by_value = tuple(value_inputs)
        self._capacity = max_specializations
        # A specialization whose If branches hold data-dependent ops is a split session of its own.
        self._compiled: OrderedDict[_Key, CompiledModel | InferenceSession | None] = OrderedDict()
        self._resolved: dict[tuple[tuple[str, Shape], ...], tuple[Shape, ...]] = {}
        # Per specialization, its outputs that are empty tensors at its shapes (left out of the compiled model).
        self._empty: dict[_Key, dict[str, np.ndarray]] = {}
        self._last: CompiledModel | InferenceSession | None = None
        # Runs from several Python threads share the table of specializations.
        self._lock = threading.Lock()
        # A model split at data-dependent ops runs as a session per stage (`_run_stages`).
        self._stage_options = (sess_options, threads, shapes, max_specializations)
        self._split = split(self._model, self._static_inputs)
        self._stages: tuple[InferenceSession, InferenceSession | None] | None = None
        self._default: CompiledModel | None = None
        if self._split is not None:
            self._stages = self._stage_sessions(self._split)
            return
        try:
            if not self._dynamic and not self._by_value:
                default = self._specialization(_STATIC, {})
                # A model split where an If's branch holds a data-dependent op has no one compiled model.
                self._default = None if isinstance(default, InferenceSession) else default
            for given in _shape_sets(shapes):
                if not self._dynamic:
                    resolve(self._specs, given)  # checks the shapes against the static ones
                elif not self._by_value:
                    self._specialization((frozenset(), self._shape_key(resolve(self._specs, given)), ()), {})
        except StaticInputRequired as e:
            # Compiled per value from now on (at the first run), or split: nothing more to compile now.
            if not self._settle(e):
                raise

    def _stage_sessions(self, parts: Split) -> tuple[InferenceSession, InferenceSession | None]:
        """The sessions of the split model's prefix (compiled now where its shapes are static, or at `shapes`)
        and suffix if any (compiled per shape at its first run: its data-dependent dims are symbolic; per value
        of the values it needs at compile time)."""
        options, threads, shapes, capacity = self._stage_options
        prefix = InferenceSession(parts.prefix, options, threads=threads, static_inputs=self._static_inputs,
                                  value_inputs=[v for v in self._by_value if v in parts.prefix_inputs],
                                  shapes=shapes, max_specializations=capacity)  # fmt: skip
        if parts.suffix is None:
            return prefix, None
        bound = {name: value for name, value in self._static_inputs.items() if name in parts.suffix_inputs}
        by_value = [*parts.by_value, *(v for v in self._by_value if v in parts.suffix_inputs)]
        suffix = InferenceSession(parts.suffix, options, threads=threads, static_inputs=bound, value_inputs=by_value,
                                  max_specializations=capacity)  # fmt: skip
        return prefix, suffix

    def _settle(self, e: StaticInputRequired, bound: Collection[str] = ()) -> bool:
        """Takes the value that import error `e` names as compiled per value: a graph input joins `value_inputs`;
        a value the model computes splits it before the node that needs it (stages.py); a value of a subgraph
        (a Resize to a box's size in an unrolled loop: Mask R-CNN's pasted masks) binds the graph inputs it
        depends on per value. False where none applies (`bound`: the inputs the failed import had bound)."""
        with self._lock:
            if self._stages is not None or (e.value in self._by_value and e.value not in bound):
                return True  # another thread's run settled it
            if self._bindable(e.value):
                self._by_value += (e.value,)
                self._log(logging.INFO, "input '%s' decides a shape: compiled per value", e.value)
                return True
            parts = split(self._model, self._static_inputs, (e.node, e.value)) if e.value else None
            if parts is None:
                unbound = [v for v in e.inputs if v not in bound]
                if not unbound or not all(self._bindable(v) for v in unbound):
                    return False
                self._by_value += tuple(v for v in unbound if v not in self._by_value)
                self._log(logging.INFO, "inputs %s decide a shape in a subgraph: compiled per value", unbound)
                return True
            self._log(logging.INFO, "node '%s' needs '%s' at compile time: split there", e.node, e.value)
            self._split, self._stages = parts, self._stage_sessions(parts)
            return True

    def _bindable(self, name: str | None) -> bool:
        """Whether graph input `name` may be compiled per value (not an overridable initializer, not bound)."""
        return name in self._inputs and name not in self._overridable and name not in self._static_inputs

    def _run_stages(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The model's outputs, by name, from the prefix's session, the data-dependent results cut to their
        counts, and the suffix's session."""
        assert self._stages is not None and self._split is not None
        prefix, suffix = self._stages
        parts = self._split
        unknown = sorted(set(feeds) - self._inputs)
        if unknown:
            raise FeedError(f"no input named {', '.join(map(repr, unknown))}; the inputs are {sorted(self._inputs)}")
        names = parts.prefix_outputs
        fed = {n: v for n, v in feeds.items() if n in parts.prefix_inputs}
        results = dict(zip(names, prefix._run(names, fed), strict=True))
        cut_to = parts.cut_results(results)
        results.update(cut_to)
        if suffix is not None:
            wanted = parts.suffix_outputs
            results.update(zip(wanted, suffix._run(wanted, parts.suffix_feeds(feeds, results, cut_to)), strict=True))
        return results

    def _log(self, level: int, message: str, *args: object) -> None:
        if level >= self._log_level:
            logger.log(level, message, *args)

    def _shape_key(self, shapes: Mapping[str, Shape]) -> tuple[Shape, ...]:
        return tuple(shapes[spec.name] for spec in self._specs)

    def _specialization(self, key: _Key, values: Mapping[str, np.ndarray]) -> CompiledModel | InferenceSession | None:
        """The compiled model of `key` (`values`: its inputs compiled per value), compiled now if the session
        holds none; None where every output is empty at its shapes."""
        with self._lock:
            if key in self._compiled:
                compiled = self._compiled[key]
                self._compiled.move_to_end(key)
            else:
                keep, shapes, _ = key
                start = time.perf_counter()
                named = (
                    self._fixed_shapes if shapes is None else dict(zip((s.name for s in self._specs), shapes, strict=True))
                )
                if named is not None:  # an input bound by its value has no shape to specialize
                    named = {name: shape for name, shape in named.items() if name not in values}
                empty: dict[str, np.ndarray] = {}
                self._empty[key] = empty
                try:
                    compiled = self._compile(keep, named, values, empty, start)
                except UnsupportedModelError as e:
                    compiled = self._branch_session(e, named, values)
                self._compiled[key] = compiled
                # The static model's default variant is never evicted: get_inputs and report read it.
                evictable = [k for k in self._compiled if k != _STATIC]
                if len(evictable) > self._capacity:
                    # Dropped, not closed: a run in another thread may still hold it; it is freed with it.
                    del self._compiled[evictable[0]], self._empty[evictable[0]]
            self._last = compiled
            return compiled

    def _compile(self, keep: frozenset[str], named: Mapping[str, Shape] | None, values: Mapping[str, np.ndarray],
                 empty: dict[str, np.ndarray], start: float) -> CompiledModel | None:  # fmt: skip
        """The model imported at shapes `named` with `values` bound, compiled; None where every output is empty
        at those shapes (`empty` collects the empty ones)."""
        graph = import_loaded(self._model, static_inputs={**self._static_inputs, **values}, keep_inputs=keep,
                              shapes=named, empty_outputs=empty if self._dynamic or values else None)  # fmt: skip
        imported = time.perf_counter()
        # Where every output is empty at these shapes there is nothing to compute.
        compiled = None if len(empty) == len(self._model.graph.output) else compile(
            graph,
            optimization_level=self._options.graph_optimization_level,
            optimized_model_path=self._options.optimized_model_filepath or None,
            threads=self._threads,
            profile=self._profiler is not None,
            consume=True,  # the import is the session's own, used for nothing else
        )
        if compiled is not None:
            compiled.report["import_seconds"] = imported - start
        if isinstance(compiled, ProfiledModel) and self._profiler is not None:
            self._profiler.add(compiled, time.perf_counter() - start)
        return compiled

    def _branch_session(self, e: UnsupportedModelError, named: Mapping[str, Shape] | None,
                        values: Mapping[str, np.ndarray]) -> InferenceSession:  # fmt: skip
        """Where import error `e` is a data-dependent op in an If branch that a compile-time condition took at
        these shapes: a session of the model specialized to them with that branch inlined, split at the op
        (stages.inline_taken; torchvision's detectors' NonMaxSuppression); else `e` is raised again."""
        model = self._model if named is None else specialize(self._model, named)
        inlined = inline_taken(model, e.taken_branches) if e.taken_branches else None
        if inlined is None:
            raise e
        options, threads, _, capacity = self._stage_options
        return InferenceSession(inlined, options, threads=threads, static_inputs={**self._static_inputs, **values},
                                max_specializations=capacity)  # fmt: skip

    @staticmethod
    def _value_of(name: str, feeds: Mapping[str, np.ndarray]) -> np.ndarray:
        """The feed of `name`, an input compiled per value."""
        if name not in feeds:
            raise FeedError(f"input '{name}' is not given (its value decides shapes: the model is compiled per value)")
        return feeds[name]

    def get_inputs(self) -> list[NodeArg]:
        if self._default is not None:
            return [_node_arg(b) for b in self._default.abi.inputs]
        return [NodeArg(s.name, list(s.dims or ()), _TYPE_NAMES[s.dtype]) for s in self._specs]

    def get_outputs(self) -> list[NodeArg]:
        if self._default is not None:
            return [_node_arg(b) for b in self._default.abi.outputs]
        return [_declared(info) for info in self._model.graph.output]

    def get_overridable_initializers(self) -> list[NodeArg]:
        """The initializer-backed graph inputs a feed may override (as onnxruntime's method of that name)."""
        initializers = {t.name: t for t in self._model.graph.initializer}
        return [
            NodeArg(name, list(initializers[name].dims), _TYPE_NAMES[ONNX_TO_NUMPY[initializers[name].data_type]])
            for name in (i.name for i in self._model.graph.input)
            if name in self._overridable
        ]

    def compiled_shapes(self) -> list[dict[str, Shape]]:
        """The input shapes of the specializations the session holds, least recently used first (of the first
        stage, for a model split at data-dependent ops)."""
        if self._stages is not None:
            return self._stages[0].compiled_shapes()
        with self._lock:
            keys = list(self._compiled)
        return [
            {spec.name: shape for spec, shape in zip(self._specs, shapes, strict=True)}
            for _, shapes, _ in keys
            if shapes is not None
        ]

    def get_modelmeta(self) -> ModelMetadata:
        m = self._model
        return ModelMetadata(
            producer_name=m.producer_name,
            graph_name=m.graph.name,
            domain=m.domain,
            description=m.doc_string,
            graph_description=m.graph.doc_string,
            # onnxruntime reports an unset model_version as INT64_MAX.
            version=m.model_version if m.HasField("model_version") else 2**63 - 1,
            custom_metadata_map={p.key: p.value for p in m.metadata_props},
        )

    def get_providers(self) -> list[str]:
        return list(self._providers)

    def get_provider_options(self) -> dict[str, dict[str, Any]]:
        return {name: {} for name in self._providers}

    def get_session_options(self) -> SessionOptions:
        return self._options

    def end_profiling(self) -> str:
        """Writes the profile (onnxruntime's chrome-trace JSON, `<profile_file_prefix>_<date>_<time>.json` in
        the working directory) and returns its name, as onnxruntime's; "" when profiling is off or ended.
        Profiling stops: later runs are not recorded, and later compiles are the normal variant."""
        if self._stages is not None:
            # Each stage's session profiles its own runs, into a file of its own: the first stage's is named.
            names = [stage.end_profiling() for stage in self._stages if stage is not None]
            return names[0]
        with self._lock:
            profiler, self._profiler = self._profiler, None
        # A specialization split at an If branch's data-dependent op profiles its runs in its own session.
        for session in self._branch_sessions():
            session.end_profiling()
        return profiler.end() if profiler is not None else ""

    def profiled_models(self) -> list[ProfiledModel]:
        """The models compiled in the profiling variant so far (SessionOptions.enable_profiling), each with its
        kernels and recorded runs: this session's in compile order, then those of its stages or of the sessions
        that run a specialization split (an If branch inlined); empty when profiling is off."""
        if self._stages is not None:
            return [model for stage in self._stages if stage is not None for model in stage.profiled_models()]
        with self._lock:
            own = self._profiler.models if self._profiler is not None else []
        return [*own, *(model for session in self._branch_sessions() for model in session.profiled_models())]

    def _branch_sessions(self) -> list[InferenceSession]:
        """The sessions that run specializations split at an If branch's data-dependent op (`_branch_session`)."""
        with self._lock:
            return [c for c in self._compiled.values() if isinstance(c, InferenceSession)]

    @property
    def report(self) -> dict[str, Any]:
        """The compile report (arena size, pass timings, compile time) of the model as constructed; for a
        model with symbolic dims, of the specialization run or compiled last (empty before the first); for a model
        split at data-dependent ops, the first stage's, with every stage's under "stages"."""
        if self._stages is not None:
            return {**self._stages[0].report, "stages": [s.report for s in self._stages if s is not None]}
        compiled = self._default or self._last
        return compiled.report if compiled is not None else {}

    def run(
        self,
        output_names: Sequence[str] | None,
        input_feed: Mapping[str, np.ndarray],
        run_options: RunOptions | Any = None,
    ) -> list[np.ndarray]:
        """The outputs named in `output_names` (all, in model order, for None), as onnxruntime returns them.

        `run_options` (ours or onnxruntime's RunOptions) is accepted for compatibility; a run always computes
        every output. A feed that contradicts the model raises FeedError (a ValueError) naming the input and
        dim.
        """
        return self._run(output_names, {name: feed_array(name, value) for name, value in input_feed.items()})

    def _run(self, output_names: Sequence[str] | None, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        """`run` on feeds that are arrays already (a stage's, from the session that runs it)."""
        whole = self._default
        if (whole is not None and self._stages is None and len(feeds) == len(whole.abi.inputs)
                and not self._empty[_STATIC] and self._overridable.isdisjoint(feeds)):  # fmt: skip
            # A static model fed just its inputs: its one compiled model runs them (and checks them), with no
            # specialization to look up (a staged model's static stages run so, once per stage).
            results = whole.run(feeds)
            names = output_names or list(results)
            if all(n in results for n in names):
                return [results[n] for n in names]
        keep = frozenset(name for name in feeds if name in self._overridable)
        shapes = None
        if self._dynamic:
            given = tuple((name, array.shape) for name, array in feeds.items() if name not in self._overridable)
            shapes = self._resolved.get(given)
            if shapes is None:
                missing = [s for s in self._specs if s.name not in feeds]
                if missing:
                    raise FeedError(f"input '{missing[0].name}' {missing[0].describe()} is not given")
                shapes = self._shape_key(resolve(self._specs, dict(given)))
                # Checked once per set of feed shapes: a staged model's later stages see the same few on every run.
                if len(self._resolved) < _RESOLVED_SHAPES:
                    self._resolved[given] = shapes
        compiled, key = None, _STATIC
        while self._stages is None:
            values = {name: self._value_of(name, feeds) for name in self._by_value}
            key = (keep, shapes, tuple((n, v.dtype.str, v.shape, v.tobytes()) for n, v in values.items()))
            try:
                compiled = self._specialization(key, values)
                break
            except StaticInputRequired as e:
                if not self._settle(e, values.keys()):
                    raise
        if self._stages is not None:
            every = self._run_stages(feeds)
            results = {o.name: every[o.name] for o in self._model.graph.output}
            names = list(output_names) if output_names else list(results)
        else:
            # The outputs empty at these shapes (none of a static model), in the model's order with the others.
            results = dict(self._empty.get(key, {}))
            names = [o.name for o in self._model.graph.output]
            if isinstance(compiled, InferenceSession):
                fed = {n: v for n, v in feeds.items() if n not in self._by_value}
                results.update(zip(names, compiled._run(names, fed), strict=True))
            elif compiled is not None:
                taken = {b.name for b in compiled.abi.inputs}
                # An empty input is bound at compile time (it holds no data), and so is an input compiled per
                # value: the compiled model does not take them.
                fed = {n: v for n, v in feeds.items() if n in taken or (v.size and n not in self._by_value)}
                results.update(compiled.run(fed))
                names = names if len(results) > len(compiled.abi.outputs) else [b.name for b in compiled.abi.outputs]
            names = list(output_names) if output_names else names
        unknown = [n for n in names if n not in results]
        if unknown:
            raise ValueError(f"no output named {', '.join(map(repr, unknown))}; the outputs are {list(results)}")
        return [results[n] for n in names]


def get_available_providers() -> list[str]:
    """The execution providers glow-mlir has, as onnxruntime's function of that name."""
    return list(PROVIDERS)


def _providers(
    providers: Sequence[str | tuple[str, dict[str, Any]]] | None, options: Sequence[dict[str, Any]] | None
) -> list[str]:
    """The providers used: the CPU's. Another one is skipped with a warning naming it, as onnxruntime skips
    a provider it does not have."""
    names = [p[0] if isinstance(p, tuple) else p for p in (providers or PROVIDERS)]
    if options is not None and len(options) != len(names):
        raise ValueError(f"provider_options has {len(options)} entries for {len(names)} provider(s)")
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"providers: expected provider names, got {name!r}")
        if name not in PROVIDERS:
            warnings.warn(
                f"{name} is not available in glow-mlir (available: {', '.join(PROVIDERS)}); it is skipped",
                stacklevel=3,
            )
    return list(PROVIDERS)


def _shape_sets(shapes: ShapeSets | None) -> list[Mapping[str, Sequence[int]]]:
    if shapes is None:
        return []
    if isinstance(shapes, Mapping):
        return [shapes]
    if not all(isinstance(given, Mapping) for given in shapes):
        raise TypeError("shapes= takes a mapping {input name: shape}, or a list of them")
    return list(shapes)


def _node_arg(buffer: Buffer) -> NodeArg:
    return NodeArg(buffer.name, list(buffer.shape), _TYPE_NAMES[buffer.dtype])


def _declared(info: onnx.ValueInfoProto) -> NodeArg:
    """A graph output as the model declares it (its dims may be symbolic)."""
    tensor = info.type.tensor_type
    dims: list[Dim] = [
        d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor.shape.dim
    ]
    return NodeArg(info.name, dims, _TYPE_NAMES[ONNX_TO_NUMPY[tensor.elem_type]])
