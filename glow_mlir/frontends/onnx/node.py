"""What an op handler sees of one ONNX node: its inputs, attributes, and an emitter for glow ops.

A value of the imported graph is either a `Tensor` of the graph being built (it depends on a graph input) or a
numpy array (known at compile time: an initializer, a bound static input, or a folded result). Handlers call
builder methods through `NodeContext.g`, an `Emitter`, which

- names every op after the node (`loc("<node>")`, then `<node>/1`, `<node>/2`, ... for further ops), and
- folds constants: an op whose tensor operands are all numpy arrays (or, while the whole node is being folded,
  one with no operands at all) is built in a scratch graph and computed by `glow_mlir.evaluate`, so shape
  arithmetic and weight transposes become constants with the glow semantics written once, in the
  interpreter. Numpy operands of an op that also takes a Tensor become `glow.constant`s of the graph, one per
  array however often it is used.
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import ml_dtypes
import numpy as np
import onnx
from mlir import ir

from glow_mlir.backends.cpu.host import physical_memory
from glow_mlir.builder import Graph, Tensor
from glow_mlir.ops import transposed
from glow_mlir.errors import (
    InvalidNodeError,
    MalformedModelError,
    ModelImportError,
    StaticInputRequired,
    UnsupportedAttributeError,
)
from glow_mlir.interpreter import evaluate

if TYPE_CHECKING:
    from glow_mlir.frontends.onnx.importer import Importer

Value = Tensor | np.ndarray
# The largest constant a fold may compute: half the physical memory (a fuzzed Expand to a 2^31 x 32 shape asked
# numpy for 256 GiB; a smaller excess is not refused by the allocator but by the kernel's OOM killer).
_FOLD_LIMIT = physical_memory() // 2

# ONNX element types glow has, as numpy dtypes (ml_dtypes' for those numpy lacks; strings, complex numbers
# and float6 are refused). The float8/float4/int4/int2 formats only go through Cast, CastLike and ops_quant.py.
ONNX_TO_NUMPY = {
    onnx.TensorProto.FLOAT: np.dtype(np.float32),
    onnx.TensorProto.DOUBLE: np.dtype(np.float64),
    onnx.TensorProto.FLOAT16: np.dtype(np.float16),
    onnx.TensorProto.BFLOAT16: np.dtype(ml_dtypes.bfloat16),
    onnx.TensorProto.BOOL: np.dtype(np.bool_),
    onnx.TensorProto.INT8: np.dtype(np.int8),
    onnx.TensorProto.INT16: np.dtype(np.int16),
    onnx.TensorProto.INT32: np.dtype(np.int32),
    onnx.TensorProto.INT64: np.dtype(np.int64),
    onnx.TensorProto.UINT8: np.dtype(np.uint8),
    onnx.TensorProto.UINT16: np.dtype(np.uint16),
    onnx.TensorProto.UINT32: np.dtype(np.uint32),
    onnx.TensorProto.UINT64: np.dtype(np.uint64),
    onnx.TensorProto.FLOAT8E4M3FN: np.dtype(ml_dtypes.float8_e4m3fn),
    onnx.TensorProto.FLOAT8E4M3FNUZ: np.dtype(ml_dtypes.float8_e4m3fnuz),
    onnx.TensorProto.FLOAT8E5M2: np.dtype(ml_dtypes.float8_e5m2),
    onnx.TensorProto.FLOAT8E5M2FNUZ: np.dtype(ml_dtypes.float8_e5m2fnuz),
    onnx.TensorProto.FLOAT8E8M0: np.dtype(ml_dtypes.float8_e8m0fnu),
    onnx.TensorProto.FLOAT4E2M1: np.dtype(ml_dtypes.float4_e2m1fn),
    onnx.TensorProto.INT4: np.dtype(ml_dtypes.int4),
    onnx.TensorProto.UINT4: np.dtype(ml_dtypes.uint4),
    onnx.TensorProto.INT2: np.dtype(ml_dtypes.int2),
    onnx.TensorProto.UINT2: np.dtype(ml_dtypes.uint2),
}

_MISSING = object()
# glow's own ONNX domain: the bounded forms of data-dependent ops (ops_bounded.py), named `<ONNX op>Bounded`
# and carrying that op's attributes, which its schema types.
GLOW_DOMAIN = "ai.glow_mlir"
BOUNDED_SUFFIX = "Bounded"


def shape(v: Value) -> tuple[int, ...]:
    return tuple(v.shape)


def dtype(v: Value) -> np.dtype:
    return np.dtype(v.dtype)


def rank(v: Value) -> int:
    return len(v.shape)


def is_float(v: Value) -> bool:
    return np.issubdtype(dtype(v), np.floating)


def normalize_axis(axis: int, rank_: int, ctx: NodeContext, what: str = "axis") -> int:
    if not -rank_ <= axis < rank_:
        raise ctx.invalid(f"{what} {axis} is out of range for rank {rank_}")
    return axis % rank_ if rank_ else 0


class ArrayNames:
    """The ONNX value name each array was first bound to, by the array's identity: weakly, since the importer
    drops arrays nothing reads any more, after which a new array may get a dropped one's id."""

    def __init__(self) -> None:
        self._names: dict[int, tuple[weakref.ref[np.ndarray], str]] = {}

    def bind(self, array: np.ndarray, name: str) -> None:
        known = self._names.get(id(array))
        if known is None or known[0]() is not array:
            self._names[id(array)] = (weakref.ref(array), name)

    def get(self, array: np.ndarray) -> str | None:
        known = self._names.get(id(array))
        return known[1] if known is not None and known[0]() is array else None


class Emitter:
    """Builder methods (`g.add(a, b)`, ...) for one node, named after it and folded where constant."""

    def __init__(self, importer: Importer, node: str, fold_all: bool) -> None:
        self._importer = importer
        self._node = node
        self._fold_all = fold_all
        self._count = 0

    def __getattr__(self, method: str) -> Callable[..., Value]:
        if method.startswith("_") or not callable(getattr(Graph, method, None)):
            raise AttributeError(f"the graph builder has no method '{method}'")
        return lambda *args, **kwargs: self._call(method, args, kwargs)

    def _call(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Value:
        leaves = [a for a in _leaves([*args, *kwargs.values()]) if isinstance(a, (np.ndarray, Tensor))]
        if not any(isinstance(a, Tensor) for a in leaves) and (leaves or self._fold_all):
            return self._fold(method, args, kwargs)
        name = self._node if self._count == 0 else f"{self._node}/{self._count}"
        self._count += 1
        args, kwargs = _replace(args, kwargs, self._graph_constant)
        return getattr(self._importer.graph, method)(*args, name=name, **kwargs)

    def _graph_constant(self, array: np.ndarray) -> Tensor:
        return self._importer.constant(array, self._node)

    def _fold(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> np.ndarray:
        """Builds the op in the scratch graph on constants and computes it with the reference semantics."""
        scratch = self._importer.scratch
        known: dict[ir.Value, np.ndarray] = {}

        def constant(array: np.ndarray) -> Tensor:
            # The scratch op needs only the operand's type: a splat stands for the array, which `known`
            # holds. A glow.constant would copy the array into the context (hashed and kept until the
            # import ends): an int4 LLM's dequantized weights cost seconds and gigabytes so.
            self._importer.check_array(array, f"node '{self._node}'")
            t = scratch.splat(array.shape, 0, array.dtype)
            known[t.value] = array
            return t

        args, kwargs = _replace(args, kwargs, constant)
        result = getattr(scratch, method)(*args, **kwargs)
        size = math.prod(result.shape) * result.dtype.itemsize
        if size > _FOLD_LIMIT:
            raise ModelImportError(f"node '{self._node}': {method} of constants gives a {result.dtype.name}"
                                   f"{list(result.shape)} ({size / 2**30:.1f} GiB), more than half of this "
                                   "machine's memory")
        return _evaluate(result.value, known)


def _evaluate(value: ir.Value, known: dict[ir.Value, np.ndarray]) -> np.ndarray:
    """The array of `value`: builder methods may make several ops, so evaluate its producers first."""
    if value not in known:
        op = value.owner
        known[value] = evaluate(op, [_evaluate(v, known) for v in op.operands])
    return known[value]


def _leaves(values: Sequence[Any]) -> list[Any]:
    found: list[Any] = []
    for v in values:
        if isinstance(v, (list, tuple)):
            found.extend(_leaves(v))
        else:
            found.append(v)
    return found


def _replace(
    args: tuple[Any, ...], kwargs: dict[str, Any], convert: Callable[[np.ndarray], Tensor]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Arguments with every numpy array (also inside lists, as concat's inputs) converted to a Tensor."""
    return tuple(_converted(a, convert) for a in args), {k: _converted(v, convert) for k, v in kwargs.items()}


def _converted(v: Any, convert: Callable[[np.ndarray], Tensor]) -> Any:
    # A function of the module, not a recursive closure: such a closure is a reference cycle (it holds its own
    # cell), which kept `convert`, its Emitter, the Importer and the import's whole MLIR context alive until
    # the interpreter's next full garbage collection.
    if isinstance(v, np.ndarray):
        return convert(v)
    if isinstance(v, (list, tuple)) and any(isinstance(e, np.ndarray) for e in v):
        return [_converted(e, convert) for e in v]
    return v


@dataclass
class NodeContext:
    """One ONNX node as its handler sees it."""

    node: onnx.NodeProto
    name: str
    opset: int
    inputs: list[Value | None]
    g: Emitter
    importer: Importer

    @property
    def op_type(self) -> str:
        return self.node.op_type

    @property
    def folding(self) -> bool:
        """Whether every input is known at compile time, so every op the handler makes is folded."""
        return all(v is None or isinstance(v, np.ndarray) for v in self.inputs)

    def input(self, i: int) -> Value:
        """Input `i`, which the op requires."""
        v = self.optional(i)
        if v is None:
            raise self.invalid(f"input {i} is required")
        return v

    def optional(self, i: int) -> Value | None:
        return self.inputs[i] if i < len(self.inputs) else None

    def const(self, i: int, what: str) -> np.ndarray | None:
        """Input `i` as an array, None when absent; raises StaticInputRequired when it depends on graph inputs."""
        v = self.optional(i)
        if isinstance(v, Tensor):
            depends = self.importer.dependencies(self.node.input[i])
            if not depends:
                # Computed at run time from no graph input: binding inputs cannot make it static.
                raise UnsupportedAttributeError(self.name, self.op_type, what, "must be known at compile time, "
                                                "but an op the importer does not fold computes it at run time")
            raise StaticInputRequired(depends, self.name, self.op_type, what, self.node.input[i])
        return v

    def ints(self, i: int, what: str) -> list[int] | None:
        v = self.const(i, what)
        if v is None:
            return None
        values = np.asarray(v).reshape(-1)
        if values.dtype.kind in "fc" and not np.isfinite(values).all():
            raise self.invalid(f"{what} {values[:8].tolist()}{' ...' if values.size > 8 else ''} holds values that "
                               "are no integers")
        return [int(x) for x in values]

    def has(self, name: str) -> bool:
        return any(a.name == name for a in self.node.attribute)

    def attr(self, name: str, default: Any = _MISSING) -> Any:
        """An attribute as a Python value (ints, floats, str, lists of them, numpy array for a tensor)."""
        for a in self.node.attribute:
            if a.name == name:
                op = self.node.op_type
                if self.node.domain == GLOW_DOMAIN:
                    op = op.removesuffix(BOUNDED_SUFFIX)
                expected = _attribute_type(op, self.opset, name)
                if expected is not None and a.type != expected:
                    # Handlers compute with the value as the spec types it; another type is a malformed node.
                    got = _ATTRIBUTE_TYPES.Name(a.type) if a.type in _ATTRIBUTE_TYPES.values() else str(a.type)
                    raise self.invalid(f"attribute '{name}' must be of type {_ATTRIBUTE_TYPES.Name(expected)}, got {got}")
                value = onnx.helper.get_attribute_value(a)
                if isinstance(value, bytes):
                    return value.decode()
                if isinstance(value, onnx.TensorProto):
                    return tensor_array(value, f"node '{self.name}' ({self.op_type}) attribute '{name}'")
                if isinstance(value, list) and value and isinstance(value[0], bytes):
                    return [v.decode() for v in value]
                return value
        if default is _MISSING:
            raise self.invalid(f"attribute '{name}' is required")
        return default

    def outputs_wanted(self) -> int:
        """How many outputs the model uses (trailing optional outputs left out or named '' do not count)."""
        names = list(self.node.output)
        while names and not names[-1]:
            names.pop()
        return len(names)

    def unsupported(self, attribute: str, detail: str) -> UnsupportedAttributeError:
        return UnsupportedAttributeError(self.name, self.op_type, attribute, detail)

    def invalid(self, detail: str) -> InvalidNodeError:
        return InvalidNodeError(f"node '{self.name}' ({self.op_type}): {detail}")

    # Composition helpers shared by many handlers.

    def full(self, dims: Sequence[int], value: float, dt: np.dtype) -> Value:
        """A tensor of `dims` filled with `value`: a splat, or an array while folding; an empty array for
        empty `dims` (it holds no value, see importer.py)."""
        if 0 in dims:
            return np.empty([int(d) for d in dims], np.dtype(dt))
        return self.g.splat([int(d) for d in dims], value, np.dtype(dt))

    def scalar_like(self, v: Value, value: float) -> Value:
        return self.full(shape(v), value, dtype(v))

    def constant_beside(self, array: np.ndarray, beside: Value) -> Value:
        """`array` as a glow.constant where `beside` is computed at run time, so that an op on it (a
        broadcast to `beside`'s shape) stays an op instead of folding into a constant of the result's size."""
        return self.importer.constant(array, self.name) if isinstance(beside, Tensor) else array

    def broadcast_to(self, v: Value, dims: Sequence[int]) -> Value:
        """Numpy (right-aligned) broadcast of `v` to `dims`."""
        dims = tuple(int(d) for d in dims)
        if shape(v) == dims:
            return v
        if rank(v) > len(dims):
            raise self.invalid(f"cannot broadcast shape {list(shape(v))} to {list(dims)}")
        return self.g.broadcast(v, dims, len(dims) - rank(v))

    def broadcast_all(self, values: Sequence[Value]) -> list[Value]:
        """Operands broadcast to their common numpy shape, as ONNX's multidirectional broadcasting."""
        try:
            dims = np.broadcast_shapes(*(shape(v) for v in values))
        except ValueError:
            raise self.invalid(
                "operand shapes " + ", ".join(str(list(shape(v))) for v in values) + " do not broadcast"
            ) from None
        return [self.broadcast_to(v, dims) for v in values]

    def reshape(self, v: Value, dims: Sequence[int]) -> Value:
        dims = [int(d) for d in dims]
        return v if list(shape(v)) == dims else self.g.reshape(v, dims)

    def transpose(self, v: Value, perm: Sequence[int]) -> Value:
        """`v` transposed; a constant is transposed here rather than folded later by glow-constant-fold,
        which copies it three times (VGG-19's Gemm transB weights, 400 MB: 3.4 s of its compile)."""
        perm = [int(p) for p in perm]
        if perm == list(range(len(perm))):
            return v
        return transposed(v, perm) if isinstance(v, np.ndarray) else self.g.transpose(v, perm)

    def convert(self, v: Value, dt: np.dtype) -> Value:
        return v if dtype(v) == np.dtype(dt) else self.g.convert_to(v, np.dtype(dt))

    def keep_dims(self, reduced: Value, input_shape: Sequence[int], axes: Sequence[int]) -> Value:
        """A reduction's result reshaped so the reduced `axes` stay as dims of size 1."""
        dims = [1 if i in axes else d for i, d in enumerate(input_shape)]
        return self.reshape(reduced, dims)


_ATTRIBUTE_TYPES = onnx.AttributeProto.AttributeType


@functools.cache
def op_schema(op_type: str, opset: int) -> onnx.defs.OpSchema | None:
    """The default domain's schema of `op_type` at `opset`, else its latest (a model may use an op before the
    opset that introduced it); None for an op the default domain does not have."""
    for version in (opset, onnx.defs.onnx_opset_version()):
        try:
            return onnx.defs.get_schema(op_type, version, "")
        except onnx.defs.SchemaError:
            continue
    return None


def _attribute_type(op_type: str, opset: int, name: str) -> int | None:
    """The AttributeProto type the schema gives attribute `name` of `op_type` at `opset`; None when there is
    no such schema or attribute (an op of another domain, an attribute of an old opset)."""
    schema = op_schema(op_type, opset)
    attribute = schema.attributes.get(name) if schema is not None else None
    return None if attribute is None else int(attribute.type.value)


def onnx_type_name(elem: int) -> str:
    """ONNX's name of an element type number, also for a number no type has (a corrupt model)."""
    names = onnx.TensorProto.DataType
    return names.Name(elem) if elem in names.values() else f"unknown element type {elem}"


def tensor_array(tensor: onnx.TensorProto, where: str) -> np.ndarray:
    """The array of a TensorProto (an initializer, a tensor attribute); MalformedModelError naming `where`
    when its element type, dims and data disagree or its external data cannot be read."""
    try:
        return onnx.numpy_helper.to_array(tensor)
    except (ValueError, TypeError, KeyError, OSError, onnx.checker.ValidationError) as e:
        text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise MalformedModelError(f"{where}: not a valid tensor ({text})") from None


def float16_in_float32(handler: Callable[[NodeContext], Sequence[Value]]) -> Callable[[NodeContext], list[Value]]:
    """`handler` run on float32 copies of its float16 inputs, its float32 results rounded back to float16.

    For the ops that sum many products or terms (MatMul, Gemm, Conv, the reductions): the spec's reference
    implementation computes them with numpy, which accumulates float16 in float32 and rounds once, so each
    result is the float16 nearest the float32 sum; summing in float16 would round at every step instead.
    Float16 products are exact in float32 (11-bit significands), so only the one final rounding remains.
    """

    @functools.wraps(handler)
    def run(ctx: NodeContext) -> list[Value]:
        if not any(v is not None and dtype(v) == np.float16 for v in ctx.inputs):
            return list(handler(ctx))
        ctx.inputs = [v if v is None or dtype(v) != np.float16 else ctx.convert(v, np.float32) for v in ctx.inputs]
        return [ctx.convert(y, np.float16) if dtype(y) == np.float32 else y for y in handler(ctx)]

    return run
