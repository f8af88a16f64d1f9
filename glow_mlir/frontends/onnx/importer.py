"""Imports an ONNX model (opsets 7 to 22 of the default domain) as a `glow_mlir.Graph`.

    graph = import_model("resnet.onnx")                        # ModelProto, bytes or a path
    graph = import_model(m, static_inputs={"shape": np.array([1, 64])})
    graph = import_model(bert, shapes={"input_ids": (2, 16)})  # a model with symbolic dims, specialized
    glow_mlir.compile(graph).run({"x": x})

Glow compiles static graphs, so every tensor shape must be known here. A model with symbolic input dims is
specialized to the `shapes` given first (signature.py). Initializers and the `Constant`,
`Shape`, `Size`, `ConstantOfShape` nodes give compile-time values, and any node whose inputs are all known is
folded (see node.py): the shape subgraphs of exported models become constants. A graph input that a shape
depends on (a Reshape's target shape, Slice bounds, ...) must be bound with `static_inputs`; otherwise the
import fails with `StaticInputRequired` naming those inputs. Old-style models list initializers among the
graph inputs too: such an input stays a constant unless named in `keep_inputs`.

Before building anything the whole graph is scanned, so one `UnsupportedModelError` lists every unsupported
node (ops of other domains, such as ai.onnx.ml, are named `<domain>.<op>` with their domain's opset; a model
made only of such ops need not import the default domain at all). Every glow op carries the location of the
ONNX node it came from. Errors are `GlowError` subclasses naming the node, input or attribute at fault.

glow has no empty tensors, but an empty tensor holds no data, so its value is known at compile time: empty
graph inputs, slices, Split parts and ConstantOfShape results are kept as empty arrays (a graph input of
shape [0] used for its type or as an empty axes list is bound so, and the compiled model does not take it),
and Concat drops them. A node whose inputs are all known at compile time, one of them empty (the shifted-window
mask of a Swin3D whose window covers the input: zero-length slices, Ranges and Reshapes of them), is evaluated
by onnx's reference implementation (onnx.reference), since glow's folding builds glow ops, which hold no empty
tensors; so is one whose result is empty (an Expand to a zero dim), where glow's folding refuses it. Where an
op would compute on an empty tensor at run time, or a graph output is one, the import fails with
`EmptyTensorError`. The reference also computes the data-dependent ops (`DATA_DEPENDENT`: NonZero, Unique,
NonMaxSuppression) where their inputs are known at compile time.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Iterable, Mapping, Sequence

import numpy as np
import onnx
from onnx.reference import ReferenceEvaluator

from glow_mlir.builder import Graph, Tensor
from glow_mlir.errors import (
    DynamicShapeError,
    EmptyTensorError,
    GlowError,
    InvalidNodeError,
    MalformedModelError,
    ModelImportError,
    UnsupportedModelError,
    UnsupportedTypeError,
)

# Importing the handler modules fills the registry.
from glow_mlir.frontends.onnx import contrib, functions, qdq_nbits
from glow_mlir.frontends.onnx import (  # noqa: F401
    contrib_decoder,
    contrib_nchwc,
    contrib_quant,
    ops_attention,
    ops_bounded,
    ops_control,
    ops_einsum,
    ops_elementwise,
    ops_grid,
    ops_index,
    ops_nn,
    ops_pool,
    ops_quant,
    ops_random,
    ops_reduce,
    ops_resize,
    ops_rnn,
    ops_sequence,
    ops_signal,
    ops_tensor,
)
from glow_mlir.frontends.onnx.loading import DEFAULT_DOMAINS, default_opset, last_reads, load, node_names, walk
from glow_mlir.frontends.onnx.node import ONNX_TO_NUMPY, ArrayNames, Emitter, NodeContext, onnx_type_name, tensor_array
from glow_mlir.frontends.onnx.ops_sequence import Item
from glow_mlir.frontends.onnx.registry import GLOW_DOMAIN, GLOW_HANDLERS, HANDLERS, handler
from glow_mlir.frontends.onnx.signature import is_dynamic, resolve, signature, specialize

MIN_OPSET = 7
# The modules of the handlers of sequence, optional and control-flow ops (`Importer._evaluate` takes the others).
STRUCTURAL = frozenset({ops_sequence.__name__, ops_control.__name__})
# Ops whose output shape depends on their input values (the indices of non-zero elements, the distinct values,
# the kept boxes): a graph has static shapes, so one import takes them only where their inputs are known at
# compile time (a mask or shape computed from constants, or from a dynamic input's specialized shape), computed
# by onnx's reference implementation; on run-time inputs it refuses them, naming the node, and InferenceSession
# splits the model there (stages.py). (Compress and TopK have handlers: their condition and K must be known.)
DATA_DEPENDENT = frozenset({"NonZero", "Unique", "NonMaxSuppression"})
SUPPORTED_OPS = frozenset(HANDLERS)
# Why a data-dependent op on run-time values is refused here (and where it runs).
STAGED_ONLY = ("NonZero, Unique and NonMaxSuppression on run-time values make shapes known only at run time; one "
               "compiled graph has static shapes, but InferenceSession runs such a model in stages "
               "(frontends/onnx/stages.py)")

SUPPORTED_DTYPES = frozenset(ONNX_TO_NUMPY.values())


def import_model(
    model: onnx.ModelProto | bytes | str | os.PathLike[str],
    *,
    static_inputs: Mapping[str, np.ndarray] | None = None,
    name: str | None = None,
    keep_inputs: Collection[str] = (),
    shapes: Mapping[str, Sequence[int]] | None = None,
) -> Graph:
    """The glow graph of an ONNX model.

    `static_inputs` binds graph inputs to values at compile time (they stop being inputs); `keep_inputs`
    names graph inputs that have an initializer but must stay real inputs; `name` names the function
    (default: the ONNX graph's name). `shapes` gives concrete shapes to inputs with symbolic dims (see
    signature.py); an input left out takes its declared shape, its named dims set by the others.
    """
    return import_loaded(
        load(model), static_inputs=static_inputs, name=name, keep_inputs=keep_inputs, shapes=shapes
    )


def import_loaded(
    proto: onnx.ModelProto,
    *,
    static_inputs: Mapping[str, np.ndarray] | None = None,
    name: str | None = None,
    keep_inputs: Collection[str] = (),
    shapes: Mapping[str, Sequence[int]] | None = None,
    empty_outputs: dict[str, np.ndarray] | None = None,
) -> Graph:
    """`import_model` of a model that `load` returned, which it does not load again: a caller that reads the
    model before importing it (glow-run and InferenceSession, for its inputs) would otherwise check it and copy
    its weights back from shape inference twice (glow-run's import of VGG-19: 3.7 s, 2.6 s with this).

    A graph output that is an empty tensor (a specialization's results where a data-dependent count is 0) is
    left out of the graph and put in `empty_outputs` where that is given, else refused (EmptyTensorError)."""
    if shapes:
        specs = signature(proto, exclude=static_inputs or {})
        resolved = resolve(specs, shapes)  # checks the shapes, also those of a static model
        if is_dynamic(specs):
            proto = specialize(proto, resolved)
    return Importer(proto, dict(static_inputs or {}), set(keep_inputs), name, empty_outputs).run()


class Importer:
    """One import: the value environment, the graph being built and the scratch graph for folding."""

    def __init__(
        self, model: onnx.ModelProto, static_inputs: dict[str, np.ndarray], keep_inputs: set[str], name: str | None,
        empty_outputs: dict[str, np.ndarray] | None = None,
    ) -> None:
        self.model = model
        self.empty_outputs = empty_outputs
        self.static_inputs = static_inputs
        self.keep_inputs = keep_inputs
        self.opset = default_opset(model)
        self.graph = Graph(_symbol(name or model.graph.name or "model"))
        self._scratch: Graph | None = None
        self.env: dict[str, Item] = {}
        # The graph inputs each value depends on, to name them when a shape needs a value.
        self._depends: dict[str, frozenset[str]] = {}
        # One glow.constant per array: id -> (array kept alive so the id stays unique, its Tensor).
        self._constants: dict[int, tuple[np.ndarray, Tensor]] = {}
        self._array_names = ArrayNames()
        self.node_names = node_names(model.graph)
        # If node name -> the branch ("then_branch", "else_branch") its compile-time condition took (ops_control).
        self.taken: dict[str, str] = {}

    @property
    def scratch(self) -> Graph:
        """The graph constant folding builds its ops in; it is never compiled."""
        if self._scratch is None:
            self._scratch = Graph("fold")
        return self._scratch

    def run(self) -> Graph:
        self._check_ops()
        self._check_types()
        self._bind_inputs()
        dead_after = last_reads(self.model.graph, {o.name for o in self.model.graph.output})
        fused = qdq_nbits.fused_products(self.model.graph, self.env)
        try:
            for index, node in enumerate(self.model.graph.node):
                if (node := fused.get(index, node)) is not None:
                    self._import_node(node, self.node_names[index])
                self._release(dead_after.get(index, ()))
        except UnsupportedModelError as e:
            # A data-dependent op in a branch taken at compile time: the session splits the model with that If
            # inlined (session.py, stages.inline_taken).
            e.taken_branches = dict(self.taken)
            raise
        for output in self.model.graph.output:
            if output.name not in self.env:
                raise MalformedModelError(f"graph output '{output.name}' is not produced by any node or input")
            value = self.env[output.name]
            if not isinstance(value, (np.ndarray, Tensor)):
                # A sequence or optional (ops_sequence.py): a compile-time list of tensors; a compiled model
                # returns tensors only.
                raise UnsupportedTypeError(f"graph output '{output.name}'", ops_sequence.kind(value))
            if isinstance(value, np.ndarray):
                if value.size == 0 and self.empty_outputs is not None:
                    self.empty_outputs[output.name] = value
                    continue
                if value.size == 0:
                    raise EmptyTensorError(
                        f"graph output '{output.name}' is an empty tensor of shape {list(value.shape)}; glow has "
                        "no empty tensors, so a compiled model cannot return it"
                    )
                value = self.constant(value, f"output '{output.name}'")
            self.graph.output(output.name, value)
        self._scratch = None
        return self.graph

    def dependencies(self, value: str) -> list[str]:
        return sorted(self._depends.get(value, frozenset()))

    def check_array(self, array: np.ndarray, where: str) -> None:
        if array.dtype not in SUPPORTED_DTYPES:
            raise UnsupportedTypeError(where, str(array.dtype))
        if array.size == 0:
            raise EmptyTensorError(
                f"{where}: computes on an empty tensor of shape {list(array.shape)} (glow has no empty tensors)"
            )

    def constant(self, array: np.ndarray, where: str) -> Tensor:
        """The graph's glow.constant for `array`, made once; named after the ONNX value it holds if any."""
        key = id(array)
        if key not in self._constants:
            name = self._array_names.get(array)
            self.check_array(array, f"constant '{name}'" if name else f"node '{where}'")
            self._constants[key] = (array, self.graph.constant(array, name=name or f"{where}/constant"))
        return self._constants[key][1]

    # The steps of run().

    def _check_ops(self) -> None:
        nodes = self.model.graph.node
        # A model that imports no default opset (made of ai.onnx.ml or training ops only) is valid; shape
        # inference has refused any default-domain node in it, so every node is listed below.
        if self.opset is not None and self.opset < MIN_OPSET:
            raise UnsupportedModelError(
                [(n.op_type, self.opset, self.node_names[i]) for i, n in enumerate(nodes)],
                f"the model imports opset {self.opset}; the oldest supported is {MIN_OPSET} "
                "(onnx.version_converter can upgrade it)",
            )
        known = compile_time_values(self.model, self.static_inputs, self.keep_inputs)
        # A data-dependent op of a subgraph is refused where its branch or body is imported (its inputs may be
        # known then: an If's branch taken at compile time); one of the main graph here, with all the others.
        main = set(self.node_names)
        unsupported = [
            (_qualified(node), self._node_opset(node), name)
            for node, name in walk(self.model.graph, self.node_names)
            if (node.domain not in DEFAULT_DOMAINS
                and not (node.domain == GLOW_DOMAIN and node.op_type in GLOW_HANDLERS) and not contrib.has_body(node))
            or (node.op_type in DATA_DEPENDENT and name in main and not all(not v or v in known for v in node.input))
            or (node.domain in DEFAULT_DOMAINS and node.op_type not in HANDLERS
                and node.op_type not in DATA_DEPENDENT and not functions.has_body(node, self._node_opset(node))
                and not contrib.has_body(node))
        ]
        if unsupported:
            staged = any(op in DATA_DEPENDENT for op, _, _ in unsupported)
            raise UnsupportedModelError(unsupported, STAGED_ONLY if staged else "")

    def _node_opset(self, node: onnx.NodeProto) -> int:
        domain = "" if node.domain == "ai.onnx" else node.domain
        return next((o.version for o in self.model.opset_import if o.domain == domain), 0)

    def _check_types(self) -> None:
        """Refuses, naming the node, any value whose inferred element type glow does not have."""
        graph = self.model.graph
        for info in graph.input:
            if not info.type.HasField("tensor_type"):
                raise UnsupportedTypeError(f"graph input '{info.name}'", info.type.WhichOneof("value") or "unknown")
            elem = info.type.tensor_type.elem_type
            if elem not in ONNX_TO_NUMPY:
                raise UnsupportedTypeError(f"graph input '{info.name}'", onnx_type_name(elem))
        producers = {out: self.node_names[i] for i, n in enumerate(graph.node) for out in n.output}
        for info in [*graph.value_info, *graph.output]:
            elem = info.type.tensor_type.elem_type
            if info.type.HasField("tensor_type") and elem and elem not in ONNX_TO_NUMPY:
                where = f"value '{info.name}'"
                if info.name in producers:
                    where = f"node '{producers[info.name]}' output '{info.name}'"
                raise UnsupportedTypeError(where, onnx_type_name(elem))

    def _bind_inputs(self) -> None:
        graph = self.model.graph
        initializers = {t.name: t for t in graph.initializer}
        if graph.sparse_initializer:
            raise UnsupportedModelError([], "sparse initializers are not supported")
        input_names = {i.name for i in graph.input}
        unknown = sorted((set(self.static_inputs) | self.keep_inputs) - input_names)
        if unknown:
            raise ModelImportError(f"no graph input named {', '.join(map(repr, unknown))}; inputs: "
                                   f"{', '.join(repr(i.name) for i in graph.input)}")
        for name, tensor in initializers.items():
            if name in input_names and (name in self.keep_inputs or name in self.static_inputs):
                continue
            array = tensor_array(tensor, f"initializer '{name}'")
            self._set(name, array, frozenset())
        for info in graph.input:
            if info.name in initializers and info.name not in self.keep_inputs and info.name not in self.static_inputs:
                continue
            dt = ONNX_TO_NUMPY[info.type.tensor_type.elem_type]
            declared = _declared(info)
            if info.name in self.static_inputs:
                self._set(info.name, self._static_value(info.name, dt, declared), frozenset())
                continue
            if declared is None:
                raise DynamicShapeError(f"graph input '{info.name}' has no shape; give it with shapes=")
            if _empty(declared):
                # No data: the value is known, so the input is bound now and the compiled model does not take it.
                self._set(info.name, np.empty(declared, dt), frozenset())
                continue
            for axis, (d, proto) in enumerate(zip(declared, info.type.tensor_type.shape.dim, strict=True)):
                if d is None or d < 0:
                    what = f"'{proto.dim_param}'" if proto.dim_param else ("unknown" if d is None else str(d))
                    raise DynamicShapeError(
                        f"graph input '{info.name}': dimension {axis} is {what}; glow compiles one specialization "
                        "per input shape: give the shapes (import_model(..., shapes={...})), or run the model "
                        "through InferenceSession, which compiles one at the first run at each shape"
                    )
            try:
                value = self.graph.input(info.name, declared, dt)
            except ValueError as e:  # the builder's shape checks (a tensor too large to address)
                raise ModelImportError(str(e)) from None
            self._set(info.name, value, frozenset([info.name]))

    def _static_value(self, name: str, dt: np.dtype, declared: list[int | None] | None) -> np.ndarray:
        array = np.asarray(self.static_inputs[name])
        if array.dtype != dt:
            raise ModelImportError(f"static input '{name}': expected element type {dt}, got {array.dtype}")
        if declared is not None and (
            len(declared) != array.ndim or any(d not in (None, 0, s) for d, s in zip(declared, array.shape))
        ):
            raise ModelImportError(
                f"static input '{name}': shape {list(array.shape)} does not match the declared "
                f"{['?' if d is None else d for d in declared]}"
            )
        return array

    def _set(self, name: str, value: Item, depends: frozenset[str], location: str | None = None) -> None:
        """Binds ONNX value `name`; an array that becomes a constant is located at `location` (its node)
        or, for initializers and static inputs, at its own name."""
        self.env[name] = value
        self._depends[name] = depends
        if isinstance(value, np.ndarray):
            self._array_names.bind(value, location or name)

    def import_subgraph(
        self, graph: onnx.GraphProto, inputs: Sequence[Item | None], where: str, owner: onnx.NodeProto
    ) -> list[Item]:
        """The outputs of `graph` (an If branch, a Loop, Scan or SequenceMap body, attribute of node `owner`)
        imported into the graph being built, its inputs bound to `inputs`, the outer scope's values visible.

        Its nodes are named `<where>/<node>`. The names it binds are local to it, so the environment is
        restored afterwards (a loop imports its body once per iteration with the same names).
        """
        if len(inputs) != len(graph.input):
            raise MalformedModelError(f"node '{where}' ({owner.op_type}): subgraph '{graph.name}' takes "
                                      f"{len(graph.input)} inputs, the op binds {len(inputs)}")
        depends = frozenset().union(*(self._depends.get(n, frozenset()) for n in owner.input if n))
        saved = dict(self.env), dict(self._depends)
        try:
            for info, value in zip(graph.input, inputs):
                self._set(info.name, value, frozenset() if isinstance(value, np.ndarray) else depends)
            for tensor in graph.initializer:
                self._set(tensor.name, tensor_array(tensor, f"node '{where}' initializer '{tensor.name}'"), frozenset())
            for node, name in zip(graph.node, node_names(graph, f"{where}/")):
                self._import_node(node, name)
            missing = [o.name for o in graph.output if o.name not in self.env]
            if missing:
                raise MalformedModelError(f"node '{where}' ({owner.op_type}): subgraph output(s) {missing} "
                                          "are not produced")
            return [self.env[o.name] for o in graph.output]
        finally:
            self.env, self._depends = saved

    def _import_function(self, node: onnx.NodeProto, name: str, inputs: Sequence[Item | None]) -> None:
        """Imports `node` as its ONNX function body (functions.py), or an onnxruntime contrib op as its body of
        default-domain ops (contrib.py), each body node under the opset the body is written for, named
        `<name>/<body node>`."""
        assert self.opset is not None
        expand = contrib.expand if contrib.has_body(node) else functions.expand
        body, body_opset = expand(node, name, self.opset, [_type_of(v) for v in inputs])
        saved = self.opset
        self.opset = body_opset
        try:
            for i, inner in enumerate(body):
                self._import_node(inner, f"{name}/{inner.name or f'{inner.op_type}_{i}'}")
        finally:
            self.opset = saved
        self._release({out for inner in body for out in inner.output} - set(node.output))

    def _release(self, names: Iterable[str]) -> None:
        """Drops the compile-time arrays bound to `names`, which nothing reads any more: held to the end of the
        import, an int4 LLM's dequantized weights (a MatMulNBits body's own values) took 1.4 GB for 330 MB."""
        for value_name in [n for n in names if isinstance(self.env.get(n), np.ndarray)]:
            del self.env[value_name]

    def _import_node(self, node: onnx.NodeProto, name: str) -> None:
        inputs: list[Item | None] = []
        for value_name in node.input:
            if not value_name:
                inputs.append(None)
            elif value_name in self.env:
                inputs.append(self.env[value_name])
            else:
                raise MalformedModelError(f"node '{name}' ({node.op_type}): input '{value_name}' is never produced")
        if node.op_type not in ops_sequence.COLLECTION_OPS and not all(
            v is None or isinstance(v, (np.ndarray, Tensor)) for v in inputs
        ):
            raise InvalidNodeError(f"node '{name}' ({node.op_type}): takes tensors, got a sequence or optional")
        fold_all = all(v is None or isinstance(v, np.ndarray) for v in inputs)
        if node.op_type in DATA_DEPENDENT and node.domain in DEFAULT_DOMAINS:
            if not fold_all:
                raise UnsupportedModelError(
                    [(node.op_type, self._node_opset(node), name)],
                    "its output shape depends on values known only at run time (glow compiles static shapes; the "
                    "op is taken where its inputs are known at compile time)",
                )
            self._set_outputs(node, name, self._evaluate(node, name, inputs))
            return
        handle = handler(node.domain, node.op_type)
        if handle is None:
            # ONNX may define the op as a function of others (a node of a function body is checked here, not
            # in _check_ops, since context-dependent bodies exist only once their input types are known).
            if self.opset is None or not (contrib.has_body(node) or (node.domain in DEFAULT_DOMAINS
                                                                     and functions.has_body(node, self.opset))):
                raise UnsupportedModelError([(_qualified(node), self._node_opset(node), name)])
            self._import_function(node, name, inputs)
            return
        # Not sequence or control-flow ops: their values are lists of arrays and subgraphs, which their handlers
        # keep at compile time themselves.
        structural = handle.__module__ in STRUCTURAL
        by_reference = fold_all and not structural and node.domain in DEFAULT_DOMAINS
        empty_input = any(isinstance(v, np.ndarray) and not v.size for v in inputs)
        empty_results = (self._empty_results(node, inputs) if empty_input and not fold_all and not structural
                         and node.domain in DEFAULT_DOMAINS else None)  # fmt: skip
        if by_reference and empty_input:
            outputs: list[Item] = self._evaluate(node, name, inputs)
        elif empty_results is not None:
            outputs = list(empty_results)
        else:
            # self.opset is an int here: _check_ops refuses every node of a model that imports no default opset.
            ctx = NodeContext(node, name, self.opset, inputs, Emitter(self, name, fold_all), self)
            try:
                outputs = list(handle(ctx))
            except (ValueError, EmptyTensorError) as e:
                # A compile-time node whose result is empty (an Expand to a zero dim): glow's folding builds glow
                # ops, which refuse it; the reference computes it. Any other refusal stands.
                # A run-time node whose results are all empty by onnx's shape inference (an Expand of run-time data
                # to a zero dim) needs no code either.
                if by_reference:
                    evaluated = self._evaluate(node, name, inputs)
                elif not structural and node.domain in DEFAULT_DOMAINS:
                    evaluated = self._empty_results(node, inputs) or []
                else:
                    evaluated = []
                if not any(v.size == 0 for v in evaluated):
                    if isinstance(e, GlowError):
                        raise
                    empty = next((v for v in inputs if isinstance(v, np.ndarray) and not v.size), None)
                    if empty is not None:  # an op computing on it at run time: EmptyTensorError
                        self.check_array(empty, f"node '{name}'")
                    # The builder's shape and type checks: the node breaks a rule of the op it maps to.
                    raise InvalidNodeError(f"node '{name}' ({node.op_type}): {e}") from None
                outputs = list(evaluated)
        self._set_outputs(node, name, outputs)

    def _set_outputs(self, node: onnx.NodeProto, name: str, outputs: Sequence[Item]) -> None:
        """Binds the node's output names to `outputs`, with the graph inputs each depends on."""
        depends = frozenset().union(*(self._depends.get(n, frozenset()) for n in node.input if n))
        wanted = list(node.output)
        if any(wanted[len(outputs):]):
            raise InvalidNodeError(f"node '{name}' ({node.op_type}): produces {len(outputs)} outputs, "
                                   f"the model uses {len(wanted)}")
        for out_name, value in zip(wanted, outputs):
            if out_name:
                self._set(out_name, value, frozenset() if isinstance(value, np.ndarray) else depends, name)

    def _model_of(self, graph: onnx.GraphProto) -> onnx.ModelProto:
        """A model of `graph` (one node alone) importing the model's opsets."""
        opsets = [onnx.helper.make_opsetid(o.domain, o.version) for o in self.model.opset_import]
        return onnx.helper.make_model(graph, opset_imports=opsets)

    def _empty_results(self, node: onnx.NodeProto, inputs: list[Item | None]) -> list[np.ndarray] | None:
        """The results of `node`, which reads an empty tensor and run-time ones, where onnx's shape inference
        finds every one of them empty (a Gather by no indices): they hold no data, so no code computes them.
        None where a result is not empty (a Concat of the empty tensor and another) or its shape is unknown."""
        single, names = _alone(node, inputs)
        declared = [onnx.helper.make_value_info(n, t) for n, v in zip(names, inputs) if (t := _type_of(v))]
        try:
            known = [onnx.numpy_helper.from_array(v, n) for n, v in zip(names, inputs) if isinstance(v, np.ndarray)]
            graph = onnx.helper.make_graph([single], "empty", declared, [], known)
            inferred = onnx.shape_inference.infer_shapes(self._model_of(graph), strict_mode=True, data_prop=True)
        except (onnx.shape_inference.InferenceError, ValueError, TypeError):  # a type numpy_helper lacks
            return None
        types = {i.name: i.type.tensor_type for i in inferred.graph.value_info}
        results = []
        for index, wanted in enumerate(node.output):
            found = types.get(f"output{index}")
            if not wanted:
                results.append(np.empty(0))
                continue
            if found is None or found.elem_type not in ONNX_TO_NUMPY or not found.HasField("shape"):
                return None
            dims = [d.dim_value if d.HasField("dim_value") else -1 for d in found.shape.dim]
            if -1 in dims or 0 not in dims:
                return None
            results.append(np.empty(dims, ONNX_TO_NUMPY[found.elem_type]))
        return results

    def _evaluate(self, node: onnx.NodeProto, name: str, inputs: list[Item | None]) -> list[np.ndarray]:
        """The outputs of `node`, whose inputs are compile-time arrays, by onnx's reference implementation: a
        model of the node alone, its inputs fed."""
        single, names = _alone(node, inputs)
        feeds = {n: v for n, v in zip(names, inputs, strict=True) if isinstance(v, np.ndarray)}
        graph = onnx.helper.make_graph(
            [single], "fold",
            [onnx.helper.make_tensor_value_info(n, onnx.helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
             for n, v in feeds.items()],
            [onnx.helper.make_empty_tensor_value_info(o) for o in single.output],
        )  # fmt: skip
        try:
            results = ReferenceEvaluator(self._model_of(graph)).run(None, feeds)
        except Exception as e:  # noqa: BLE001  (the reference's own errors: the node is invalid for its inputs)
            # The reference fails on some ops of empty tensors (a ConvTranspose of no box's features, in Mask
            # R-CNN with no detection) whose results shape inference finds empty: those need no computing.
            empty = self._empty_results(node, inputs) if any(not v.size for v in feeds.values()) else None
            if empty is not None:
                return empty
            shapes = [list(v.shape) for v in feeds.values()]
            raise InvalidNodeError(f"node '{name}' ({node.op_type}) on compile-time inputs of shapes {shapes}: "
                                   f"onnx's reference implementation fails: {e}") from None
        return [np.asarray(r) for r in results]


def _alone(node: onnx.NodeProto, inputs: Sequence[Item | None]) -> tuple[onnx.NodeProto, list[str]]:
    """`node` as the one node of a model of its own: its inputs renamed `input<i>` ("" where absent), every
    output named `output<i>` (so that onnx's reference returns them all, in order); with the input names."""
    names = [f"input{i}" if v is not None else "" for i, v in enumerate(inputs)]
    single = onnx.NodeProto()
    single.CopyFrom(node)
    del single.input[:], single.output[:]
    single.input.extend(names)
    single.output.extend(f"output{i}" for i in range(len(node.output)))
    return single, names


def compile_time_values(model: onnx.ModelProto, static_inputs: Collection[str],
                        keep_inputs: Collection[str]) -> set[str]:  # fmt: skip
    """The main graph's values known at compile time, as the import will fold them: initializers (but those
    in `keep_inputs`), `static_inputs` and empty inputs, Shape and Size of anything, and what nodes compute
    from those alone (a subgraph's values count as run-time: a DATA_DEPENDENT op there is refused where its
    branch or body is imported), but a random op's draws, which are never folded (ops_random.py)."""
    graph = model.graph
    known = {t.name for t in graph.initializer if t.name not in keep_inputs}
    known.update(i.name for i in graph.input if i.name in static_inputs or _empty(_declared(i)))
    for node in graph.node:
        if node.op_type in ("Shape", "Size") or (all(not v or v in known for v in node.input) and not draws(node)):
            known.update(o for o in node.output if o)
    return known


def draws(node: onnx.NodeProto) -> bool:
    """Whether `node` is a random op (its handler is ops_random.py's): its values are drawn anew at every run."""
    return node.domain in DEFAULT_DOMAINS and getattr(handler(node.domain, node.op_type), "__module__", "") \
        == ops_random.__name__


def _type_of(value: Item | None) -> onnx.TypeProto | None:
    """The ONNX type of an imported tensor value (None for an absent input, a sequence or an optional)."""
    if isinstance(value, (np.ndarray, Tensor)):
        return onnx.helper.make_tensor_type_proto(onnx.helper.np_dtype_to_tensor_dtype(value.dtype), value.shape)
    return None


def _declared(info: onnx.ValueInfoProto) -> list[int | None] | None:
    """A graph input's declared dims (None for a symbolic or unknown one), or None when it declares no shape."""
    if not info.type.tensor_type.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else None for d in info.type.tensor_type.shape.dim]


def _empty(declared: list[int | None] | None) -> bool:
    """Whether declared dims are static with a zero: the input has no data, so the import binds it."""
    return declared is not None and 0 in declared and None not in declared


def _qualified(node: onnx.NodeProto) -> str:
    """The op's name as the model's error lists it: `<domain>.<op>` outside the default domain."""
    return node.op_type if node.domain in DEFAULT_DOMAINS else f"{node.domain}.{node.op_type}"


def _symbol(name: str) -> str:
    """A C identifier for the function (the runtime calls `_mlir_ciface_<name>`)."""
    symbol = re.sub(r"\W", "_", name)
    return symbol if symbol and not symbol[0].isdigit() else f"m_{symbol}"
