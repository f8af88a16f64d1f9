"""A model's input signature, with its symbolic dims, and the specialization of a model to concrete shapes.

Models exported with dynamic axes (`torch.onnx.export(..., dynamic_axes=...)`, every transformers export)
declare dims by name (`dim_param`, e.g. "batch", "sequence") or leave them unknown. glow compiles static
shapes, so such a model is compiled once per concrete input shape, as XLA and TVM do: `resolve` binds the
shapes of a feed to the signature (checking ranks, fixed dims, and that a named dim has one value across
every input that names it), and `specialize` writes those shapes into a copy of the model and re-runs ONNX
shape inference, after which the importer sees a static model (its Shape/Gather/Concat shape subgraphs
fold to constants).

    specs = signature(model)              # [InputSpec("input_ids", ("batch", "sequence"), int64), ...]
    shapes = resolve(specs, {"input_ids": (2, 16)})   # attention_mask's shape follows from the names
    static = specialize(model, shapes)
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import onnx

from glow_mlir.errors import FeedError, MalformedModelError, UnsupportedTypeError
from glow_mlir.frontends.onnx.inference import infer_shapes
from glow_mlir.frontends.onnx.node import ONNX_TO_NUMPY, onnx_type_name

# A declared dim: a size, the name of a symbolic dim, or None (unknown and unnamed).
Dim = int | str | None
Shape = tuple[int, ...]


@dataclass(frozen=True)
class InputSpec:
    """One graph input that a caller feeds: its name, declared dims (None: no shape declared) and dtype."""

    name: str
    dims: tuple[Dim, ...] | None
    dtype: np.dtype

    @property
    def static(self) -> bool:
        return self.dims is not None and all(isinstance(d, int) for d in self.dims)

    def describe(self) -> str:
        dims = "?" if self.dims is None else ", ".join("?" if d is None else str(d) for d in self.dims)
        return f"{self.dtype.name}[{dims}]"


def signature(model: onnx.ModelProto, exclude: Collection[str] = ()) -> list[InputSpec]:
    """The graph inputs a caller feeds, in graph order: not those backed by an initializer, nor `exclude`."""
    initializers = {t.name for t in model.graph.initializer}
    specs = []
    for info in model.graph.input:
        if info.name in initializers or info.name in exclude:
            continue
        tensor = info.type.tensor_type
        if tensor.elem_type not in ONNX_TO_NUMPY:
            raise UnsupportedTypeError(f"graph input '{info.name}'", onnx_type_name(tensor.elem_type))
        dims = tuple(_dim(d) for d in tensor.shape.dim) if tensor.HasField("shape") else None
        specs.append(InputSpec(info.name, dims, ONNX_TO_NUMPY[tensor.elem_type]))
    return specs


def _dim(d: onnx.TensorShapeProto.Dimension) -> Dim:
    if d.HasField("dim_value") and d.dim_value >= 0:
        return d.dim_value
    return d.dim_param or None


def with_overrides(specs: Sequence[InputSpec], overrides: Mapping[str, int]) -> list[InputSpec]:
    """`specs` with the symbolic dims named in `overrides` fixed to those sizes."""
    return [
        spec if spec.dims is None else replace(
            spec, dims=tuple(overrides.get(d, d) if isinstance(d, str) else d for d in spec.dims))
        for spec in specs
    ]


def is_dynamic(specs: Sequence[InputSpec]) -> bool:
    return not all(spec.static for spec in specs)


def resolve(specs: Sequence[InputSpec], shapes: Mapping[str, Sequence[int]]) -> dict[str, Shape]:
    """The concrete shape of every input of `specs`, from those given in `shapes`.

    An input not in `shapes` takes its declared shape, with its named dims set by the inputs that are;
    FeedError names the input and dim when a given shape contradicts the model (rank, a fixed dim, a named
    dim given two values) or when an input's shape cannot be known.
    """
    known = {spec.name: spec for spec in specs}
    unknown = [name for name in shapes if name not in known]
    if unknown:
        raise FeedError(f"no input named {', '.join(map(repr, unknown))}; the inputs are "
                        f"{', '.join(f'{s.name!r} {s.describe()}' for s in specs)}")
    # The value of each named dim, and the input and axis that set it first (to name both on a conflict).
    symbols: dict[str, tuple[int, str, int]] = {}
    resolved: dict[str, Shape] = {}
    for spec in specs:
        if spec.name not in shapes:
            continue
        shape = _concrete(spec.name, shapes[spec.name])
        if spec.dims is not None and len(shape) != len(spec.dims):
            raise FeedError(f"input '{spec.name}': expected rank {len(spec.dims)} {spec.describe()}, "
                            f"got shape {list(shape)}")
        # An input that declares no shape takes any.
        for axis, (dim, size) in enumerate(zip(spec.dims if spec.dims is not None else [None] * len(shape), shape,
                                               strict=True)):  # fmt: skip
            if isinstance(dim, int) and dim != size:
                raise FeedError(f"input '{spec.name}': dim {axis} is {dim} in the model, got {size} "
                                f"(shape {list(shape)})")
            if isinstance(dim, str):
                if dim in symbols and symbols[dim][0] != size:
                    value, other, other_axis = symbols[dim]
                    raise FeedError(f"input '{spec.name}': dim {axis} ('{dim}') is {size}, but input '{other}' "
                                    f"dim {other_axis} ('{dim}') is {value}; the model requires them equal")
                symbols.setdefault(dim, (size, spec.name, axis))
        resolved[spec.name] = shape
    for spec in specs:
        if spec.name in resolved:
            continue
        if spec.dims is None:
            raise FeedError(f"input '{spec.name}': the model declares no shape; give its shape")
        shape = []
        for axis, dim in enumerate(spec.dims):
            if isinstance(dim, int):
                shape.append(dim)
            elif isinstance(dim, str) and dim in symbols:
                shape.append(symbols[dim][0])
            else:
                what = f"'{dim}'" if dim else "unknown"
                raise FeedError(f"input '{spec.name}': dim {axis} is {what} {spec.describe()}; give its shape")
        resolved[spec.name] = tuple(shape)
    return resolved


def _concrete(name: str, shape: Sequence[int]) -> Shape:
    try:
        dims = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise FeedError(f"input '{name}': a shape is a sequence of integers, got {shape!r}") from None
    if any(d < 0 for d in dims) or any(int(d) != d for d in shape):
        raise FeedError(f"input '{name}': a shape is a sequence of non-negative integers, got {list(shape)}")
    return dims


def specialize(model: onnx.ModelProto, shapes: Mapping[str, Shape]) -> onnx.ModelProto:
    """A copy of `model` whose graph inputs named in `shapes` have those shapes, shapes re-inferred.

    The intermediate shapes the exporter recorded (value_info) and the outputs' declared dims are cleared
    first: they hold the symbolic dims, which inference would otherwise merge with the concrete ones.
    """
    specialized = onnx.ModelProto()
    specialized.CopyFrom(model)
    graph = specialized.graph
    for info in graph.input:
        if info.name in shapes:
            tensor = info.type.tensor_type
            tensor.ClearField("shape")
            tensor.shape.SetInParent()  # a rank-0 input keeps a shape (of no dims)
            for size in shapes[info.name]:
                tensor.shape.dim.add().dim_value = size
    del graph.value_info[:]
    for info in graph.output:
        if info.type.tensor_type.HasField("shape"):
            for d in info.type.tensor_type.shape.dim:
                if not d.HasField("dim_value"):
                    d.Clear()
    try:
        return infer_shapes(specialized, owned=True)
    except (onnx.shape_inference.InferenceError, ValueError) as e:
        detail = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        bound = ", ".join(f"{name} {list(shape)}" for name, shape in shapes.items())
        raise MalformedModelError(f"ONNX shape inference failed at input shapes {bound}: {detail}") from None
