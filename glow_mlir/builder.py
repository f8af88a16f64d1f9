"""The Python graph builder: Glow's C++ `Function` API, producing a `glow` dialect module.

    g = Graph("mlp")
    x = g.input("x", (1, 784), "f32")
    y = g.relu(g.fully_connected(x, w, b))        # numpy arrays become glow.constant
    g.output("y", g.softmax(y))
    g.module                                      # func.func @mlp, arguments/results named by glow.name

Every method checks its operands at this boundary (shapes and element types through `glow_mlir.opdefs.shapes`) and
raises `ValueError` naming the op, its node name and the shapes or types, so a bad model fails where it is
written rather than deep in the pipeline. Each op gets the location `loc("<node name>")`.

Element types follow docs/ARCHITECTURE.md: f32, f64, f16, bool (i1), i8, i16, i32, i64, named by their MLIR
spelling ("f32", "i64"), "bool", or a numpy dtype. Constants keep their array's dtype; nothing converts
implicitly, so mixing types needs an explicit `convert_to`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from mlir import ir
from mlir.dialects import func

from glow_mlir import ops
from glow_mlir.context import make_context
from glow_mlir.opdefs import OpDef, glow_op, glow_ops, shapes, types
from glow_mlir.opdefs.base import Attrs
from glow_mlir.opdefs.random import seed_of as random_seed

DType = str | type | np.dtype
T = TypeVar("T")


@dataclass(frozen=True)
class Tensor:
    """A value of a graph under construction: an `ir.Value` of a static ranked tensor type."""

    graph: Graph
    value: ir.Value

    @property
    def shape(self) -> tuple[int, ...]:
        return ops.shape(self.value)

    @property
    def dtype(self) -> np.dtype:  # numpy's: np.bool_ for i1
        return ops.numpy_dtype(ops.element_type(self.value))


TensorLike = Tensor | np.ndarray


def _method(function: Callable[..., Tensor], name: str, doc: str) -> Callable[..., Tensor]:
    """`function` named and documented as the Graph method `name`."""
    function.__name__ = name
    function.__qualname__ = f"Graph.{name}"
    function.__doc__ = doc
    return function


def _conv_method(op: str, doc: str) -> Callable[..., Tensor]:
    """The Graph method of a convolution without a fused activation (`glow.<op>`): the kernel size is the
    filter's dims 2 and 3."""

    def method(
        self: Graph, input: TensorLike, filter: TensorLike, bias: TensorLike, strides: Sequence[int] = (1, 1),
        pads: Sequence[int] = (0, 0, 0, 0), dilation: Sequence[int] = (1, 1), group: int = 1,
        name: str | None = None,
    ) -> Tensor:
        return self._window_op(op, [input, filter, bias], strides, pads, dilation, group, name)

    return _method(method, op, doc)


def _fused_conv_method(op: str, doc: str, kernel_dims: tuple[int, int] = (2, 4)) -> Callable[..., Tensor]:
    """The Graph method of a convolution with a fused activation (`glow.<op>`): the kernel size is the filter's
    dims `kernel_dims`."""

    def method(
        self: Graph, input: TensorLike, filter: TensorLike, bias: TensorLike, strides: Sequence[int] = (1, 1),
        pads: Sequence[int] = (0, 0, 0, 0), dilation: Sequence[int] = (1, 1), group: int = 1,
        activation: str = "none", activation_args: Sequence[float] = (), name: str | None = None,
    ) -> Tensor:
        return self._window_op(
            op, [input, filter, bias], strides, pads, dilation, group, name,
            _activation(activation, activation_args), kernel_dims=kernel_dims,
        )

    return _method(method, op, doc)


def _max_pool_method(op: str, doc: str) -> Callable[..., Tensor]:
    """The Graph method of a max pool (`glow.<op>`)."""

    def method(
        self: Graph, input: TensorLike, kernels: Sequence[int], strides: Sequence[int] | None = None,
        pads: Sequence[int] = (0, 0, 0, 0), name: str | None = None,
    ) -> Tensor:
        return self._op(op, [input], name, _window(kernels, strides, pads))

    return _method(method, op, doc)


def _avg_pool_method(op: str, doc: str) -> Callable[..., Tensor]:
    """The Graph method of an average pool (`glow.<op>`)."""

    def method(
        self: Graph, input: TensorLike, kernels: Sequence[int], strides: Sequence[int] | None = None,
        pads: Sequence[int] = (0, 0, 0, 0), count_include_pads: bool = True, name: str | None = None,
    ) -> Tensor:
        attrs = _window(kernels, strides, pads) | {"countIncludePads": count_include_pads}
        return self._op(op, [input], name, attrs)

    return _method(method, op, doc)


def _axis(input: TensorLike, axis: int) -> int:
    return axis + len(input.shape) if axis < 0 else axis


class Graph:
    """One `func.func` of `glow` ops being built; owns its own MLIR context."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.context = make_context()
        # Entering this location also enters the context: attributes and types are made under it.
        self._scope = ir.Location.unknown(context=self.context)
        self._counters: defaultdict[str, int] = defaultdict(int)
        self._inputs: list[str] = []
        # Values, not Tensors (which refer to their graph: a cycle, holding the context until a full collection).
        self._outputs: list[tuple[str, ir.Value]] = []
        # The func.return that reading `module` adds (later ops go before it), kept: finding it by the block's last
        # op counted the block's ops at every op added, quadratic (MobileNetV5-300M's 8000 ops: 0.4 s of import).
        self._return: ir.Operation | None = None
        with self._scope:
            self._module = ir.Module.create()
            with ir.InsertionPoint(self._module.body):
                self._func = func.FuncOp(name, ir.FunctionType.get([], []))
            self._block = self._func.add_entry_block()

    # Inputs, outputs and the finished module.

    def input(self, name: str, shape: Sequence[int], dtype: DType = "f32") -> Tensor:
        """A new function argument named `name` (its glow.name) of the given shape and element type."""
        if name in self._inputs:
            raise ValueError(f"duplicate input name '{name}'")
        try:
            dims = shapes.tensor(shape)
        except shapes.ShapeError as e:
            raise ValueError(f"input '{name}': {e}") from None
        with self._scope:
            elt = _element_type(dtype, f"input '{name}'")
            arg = self._block.add_argument(ops.tensor_type(dims, elt), ir.Location.name(name))
        self._inputs.append(name)
        return Tensor(self, arg)

    def output(self, name: str, value: TensorLike) -> None:
        """Makes `value` a function result named `name`."""
        if any(name == existing for existing, _ in self._outputs):
            raise ValueError(f"duplicate output name '{name}'")
        self._outputs.append((name, self._tensor(value, f"output '{name}'").value))

    @property
    def module(self) -> ir.Module:
        """The module so far, with the function's results, signature and names brought up to date."""
        if not self._outputs:
            raise ValueError(f"graph '{self.name}' has no outputs")
        with self._scope:
            if self._return is not None:
                self._return.erase()
            with ir.InsertionPoint(self._block):
                self._return = func.ReturnOp([v for _, v in self._outputs]).operation
            self._func.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get(
                    [a.type for a in self._block.arguments], [v.type for _, v in self._outputs]
                )
            )
            self._func.arg_attrs = ir.ArrayAttr.get([_named(n) for n in self._inputs])
            self._func.res_attrs = ir.ArrayAttr.get([_named(n) for n, _ in self._outputs])
        self._module.operation.verify()
        return self._module

    # Leaves.

    def constant(self, array: np.ndarray, name: str | None = None) -> Tensor:
        """A `glow.constant` holding a copy of `array`, with the array's own element type."""
        node = self._node_name("constant", name)
        if not isinstance(array, np.ndarray):
            raise ValueError(f"glow.constant '{node}': expected a numpy array, got {type(array).__name__}")
        try:
            dims = shapes.tensor(array.shape)
        except shapes.ShapeError as e:
            raise ValueError(f"glow.constant '{node}': {e}") from None
        with self._scope:
            elt = _element_type(array.dtype, f"glow.constant '{node}'")
            data = np.ascontiguousarray(array).reshape(array.shape)  # ascontiguousarray makes 0-d arrays 1-d
            # MLIR packs i1 elements into bits only when it infers the type from a bool array itself.
            if data.dtype == np.bool_:
                value = ir.DenseElementsAttr.get(data)
            else:
                value = ops.dense_attr(data, ops.tensor_type(dims, elt))
            return self._create("constant", node, [], dims, {"value": value}, elt)

    def splat(self, shape: Sequence[int], value: float, dtype: DType = "f32", name: str | None = None) -> Tensor:
        """A `glow.splat`: a tensor of `shape` and element type `dtype` with every element `value`.

        The value attribute is f32 for float results and i64 for integer and bool results (the convention);
        an integer result refuses a value that is not a whole number within its type's range.
        """
        node = self._node_name("splat", name)
        dims = self._rule("splat", node, shapes.tensor, shape)
        with self._scope:
            elt = _element_type(dtype, f"glow.splat '{node}'")
            return self._create("splat", node, [], dims, {"value": _splat_value(value, elt, node)}, elt)

    # Linear algebra.

    def fused_matmul(
        self,
        lhs: TensorLike,
        rhs: TensorLike,
        bias: TensorLike,
        activation: str = "none",
        activation_args: Sequence[float] = (),
        name: str | None = None,
    ) -> Tensor:
        """`activation` of lhs [M, K] x rhs [K, N] + bias [N], one op: a fully connected layer with its
        activation (what glow-fuse-activations makes of matmul + batched_add + activation)."""
        return self._op("fused_matmul", [lhs, rhs, bias], name, _activation(activation, activation_args))

    # Ops without attributes (elementwise ones, matmul, batch_matmul, fully_connected, batched_add, softmax, det)
    # are methods generated from their definitions (`_operands_method`, below).

    def convert_to(self, input: TensorLike, dtype: DType, name: str | None = None) -> Tensor:
        """Elementwise conversion to `dtype`: float->int truncates toward zero, x->bool is x != 0."""
        node = self._node_name("convert_to", name)
        with self._scope:
            elt = _element_type(dtype, f"glow.convert_to '{node}'")
        return self._op("convert_to", [input], node=node, result_type=elt)

    # Reductions.

    def batched_reduce_add(self, input: TensorLike, axes: Sequence[int], name: str | None = None) -> Tensor:
        """The sum over `axes`, which the result drops; negative axes count from the end."""
        return self._reduce("batched_reduce_add", input, axes, name)

    def batched_reduce_max(self, input: TensorLike, axes: Sequence[int], name: str | None = None) -> Tensor:
        """The maximum over `axes`, which the result drops; negative axes count from the end."""
        return self._reduce("batched_reduce_max", input, axes, name)

    def batched_reduce_min(self, input: TensorLike, axes: Sequence[int], name: str | None = None) -> Tensor:
        """The minimum over `axes`, which the result drops; negative axes count from the end."""
        return self._reduce("batched_reduce_min", input, axes, name)

    def batched_reduce_prod(self, input: TensorLike, axes: Sequence[int], name: str | None = None) -> Tensor:
        """The product over `axes`, which the result drops; negative axes count from the end."""
        return self._reduce("batched_reduce_prod", input, axes, name)

    def arg_max(self, input: TensorLike, axis: int, keep_dims: bool = False, name: str | None = None) -> Tensor:
        """i64 index of the first maximum along `axis` (negative counts from the end)."""
        return self._arg_reduce("arg_max", input, axis, keep_dims, name)

    def arg_min(self, input: TensorLike, axis: int, keep_dims: bool = False, name: str | None = None) -> Tensor:
        """i64 index of the first minimum along `axis` (negative counts from the end)."""
        return self._arg_reduce("arg_min", input, axis, keep_dims, name)

    # Convolution, pooling, normalization.

    # The window ops share parameter lists (a convolution and its transposed or CPU form, a pool and its CPU
    # NHWC form): each list is written once, in the method factories below the class.
    convolution = _conv_method(
        "convolution", "2-D convolution, NCHW input, OIHW filter; the kernel size is the filter's HW."
    )
    fused_convolution = _fused_conv_method(
        "fused_convolution",
        """`activation` (one of the defined activations, e.g. "relu", "clip" [min, max], "leaky_relu" [alpha])
        of a convolution as `convolution` builds it, one op (what glow-fuse-activations makes).""",
    )
    conv_transpose = _conv_method(
        "conv_transpose",
        "2-D transposed convolution, NCHW input, filter [C, O/group, KH, KW]; pads crop the full output.",
    )
    max_pool = _max_pool_method("max_pool", "2-D max pooling, NCHW; strides default to the kernel size.")
    avg_pool = _avg_pool_method("avg_pool", "2-D average pooling, NCHW; strides default to the kernel size.")
    cpu_conv_nhwc = _fused_conv_method(
        "cpu_conv_nhwc",
        """The CPU backend's convolution: NHWC input, filter [KH, KW, C / group, O], bias [O], then the fused
        `activation` (one of the defined activations).""",
        kernel_dims=(0, 2),
    )
    cpu_max_pool_nhwc = _max_pool_method(
        "cpu_max_pool_nhwc", "The CPU backend's max pooling, NHWC; strides default to the kernel size."
    )
    cpu_avg_pool_nhwc = _avg_pool_method(
        "cpu_avg_pool_nhwc", "The CPU backend's average pooling, NHWC; strides default to the kernel size."
    )

    def batch_normalization(self, input: TensorLike, scale: TensorLike, bias: TensorLike, mean: TensorLike,
                            var: TensorLike, epsilon: float = 1e-5, momentum: float = 0.9, channel_idx: int = 1,
                            name: str | None = None) -> Tensor:  # fmt: skip
        """Inference batch normalization along dim `channel_idx`."""
        attrs = {"epsilon": epsilon, "momentum": momentum, "channelIdx": channel_idx}
        return self._op("batch_normalization", [input, scale, bias, mean, var], name, attrs)

    def roi_align(self, input: TensorLike, rois: TensorLike, batch_indices: TensorLike, output_size: Sequence[int],
                  sampling_ratio: int = 0, spatial_scale: float = 1.0, half_pixel: bool = True, mode: str = "avg",
                  name: str | None = None) -> Tensor:  # fmt: skip
        """ONNX RoiAlign of NCHW `input` at boxes `rois` [R, 4] of images `batch_indices` (i64 [R])."""
        attrs = {"output_size": tuple(output_size), "sampling_ratio": sampling_ratio, "spatial_scale": spatial_scale,
                 "half_pixel": half_pixel, "mode": mode}  # fmt: skip
        return self._op("roi_align", [input, rois, batch_indices], name, attrs)

    # Data movement.

    def reshape(self, input: TensorLike, dims: Sequence[int], name: str | None = None) -> Tensor:
        return self._op("reshape", [input], name, {"dims": tuple(dims)})

    def transpose(self, input: TensorLike, shuffle: Sequence[int], name: str | None = None) -> Tensor:
        return self._op("transpose", [input], name, {"shuffle": tuple(shuffle)})

    def slice(
        self, input: TensorLike, start: Sequence[int], sizes: Sequence[int], name: str | None = None
    ) -> Tensor:
        """The block of shape `sizes` at offset `start`."""
        return self._op("slice", [input], name, {"start": tuple(start)}, stated=sizes)

    def insert_tensor(
        self, big: TensorLike, small: TensorLike, start: Sequence[int], name: str | None = None
    ) -> Tensor:
        """`big` with `small` written into it at offset `start`."""
        return self._op("insert_tensor", [big, small], name, {"start": tuple(start)})

    def broadcast(self, input: TensorLike, shape: Sequence[int], axis: int, name: str | None = None) -> Tensor:
        """`input` broadcast to `shape`, its dims aligned at `axis` (Glow's BroadcastNode)."""
        return self._op("broadcast", [input], name, {"axis": axis}, stated=shape)

    # Gathers, scatters and top_k; a negative axis counts from the end.

    def gather(self, data: TensorLike, indices: TensorLike, axis: int = 0, name: str | None = None) -> Tensor:
        """numpy.take(data, indices, axis) with i32 or i64 indices."""
        return self._op("gather", [data, indices], name, {"axis": _axis(data, axis)})

    def gather_elements(self, data: TensorLike, indices: TensorLike, axis: int = 0, name: str | None = None) -> Tensor:
        """numpy.take_along_axis(data, indices, axis) (ONNX GatherElements)."""
        return self._op("gather_elements", [data, indices], name, {"axis": _axis(data, axis)})

    def gather_nd(self, data: TensorLike, indices: TensorLike, batch_dims: int = 0, name: str | None = None) -> Tensor:
        """ONNX GatherND: the slices of data that the rows of `indices` (its last dim) address."""
        return self._op("gather_nd", [data, indices], name, {"batch_dims": batch_dims})

    def scatter_elements(self, data: TensorLike, indices: TensorLike, updates: TensorLike, axis: int = 0,
                         reduction: str = "none", name: str | None = None) -> Tensor:  # fmt: skip
        """ONNX ScatterElements; `reduction` is none, add, mul, max or min."""
        attrs = {"axis": _axis(data, axis), "reduction": reduction}
        return self._op("scatter_elements", [data, indices, updates], name, attrs)

    def scatter_nd(self, data: TensorLike, indices: TensorLike, updates: TensorLike, reduction: str = "none",
                   name: str | None = None) -> Tensor:  # fmt: skip
        """ONNX ScatterND; `reduction` is none, add, mul, max or min."""
        return self._op("scatter_nd", [data, indices, updates], name, {"reduction": reduction})

    def top_k(self, input: TensorLike, k: int, axis: int = -1, largest: bool = True, name: str | None = None) -> Tensor:
        """The i64 indices of the k largest (smallest) elements along `axis`, best first, ties to the lower
        index; their values are `gather_elements(input, indices, axis)`."""
        return self._op("top_k", [input], name, {"axis": _axis(input, axis), "k": k, "largest": largest})

    def cumsum(self, input: TensorLike, axis: int, exclusive: bool = False, reverse: bool = False,
               name: str | None = None) -> Tensor:  # fmt: skip
        """Running sums along `axis` (ONNX CumSum) of f32, f64 or integers; `exclusive`, `reverse` as ONNX's."""
        attrs = {"axis": _axis(input, axis), "exclusive": exclusive, "reverse": reverse}
        return self._op("cumsum", [input], name, attrs)

    def random(self, op: str, shape: Sequence[int], params: tuple[float, float], dtype: DType = "f32",
               seed: float | None = None, name: str | None = None) -> Tensor:  # fmt: skip
        """`glow.random_uniform` (params: low, high) or `glow.random_normal` (mean, scale) of `shape`, a new draw
        per run; `seed` as ONNX's, None for a stream per node and session (glow_mlir/opdefs/random.py)."""
        node = self._node_name(op, name)
        key, seeded = random_seed(seed, node)
        attrs = {**dict(zip(("low", "high") if op == "random_uniform" else ("mean", "scale"), params)),
                 "seed": key - (1 << 64 if key >= 1 << 63 else 0), "seeded": seeded}  # fmt: skip
        with self._scope:
            elt = _element_type(dtype, f"glow.{op} '{node}'")
        return self._op(op, [], node=node, attrs=attrs, stated=shape, result_type=elt)

    def concat(self, inputs: Sequence[TensorLike], dim: int, name: str | None = None) -> Tensor:
        """Concatenation along `dim`; nests concats when the inputs form more than 8 runs of one type."""
        node = self._node_name("concat", name)
        operands = self._tensors(list(inputs), "concat", node)
        self._rule("concat", node, shapes.concat, [t.shape for t in operands], dim)
        return self._concat(operands, dim, node)

    def _concat(self, operands: list[Tensor], dim: int, node: str) -> Tensor:
        with self._scope:
            runs = ops.concat_segments([t.value.type for t in operands])
            if len(runs) <= ops.CONCAT_GROUPS:
                dims = shapes.concat([t.shape for t in operands], dim)
                attributes = ops.concat_attributes([t.value.type for t in operands], dim)
                return self._create("concat", node, operands, dims, attributes)
        # Concatenation is associative: concat chunks of at most 8 runs each, then concat the chunks.
        parts: list[Tensor] = []
        begin = 0
        for chunk, first_run in enumerate(range(0, len(runs), ops.CONCAT_GROUPS)):
            end = begin + sum(runs[first_run : first_run + ops.CONCAT_GROUPS])
            parts.append(self._concat(operands[begin:end], dim, f"{node}/part{chunk}"))
            begin = end
        return self._concat(parts, dim, node)

    # Shared machinery.

    def _op(
        self,
        op: str,
        inputs: Sequence[TensorLike],
        name: str | None = None,
        attrs: Attrs | None = None,
        *,
        node: str | None = None,
        stated: Sequence[int] | None = None,
        result_type: ir.Type | None = None,
    ) -> Tensor:
        """Appends `glow.<op>` of `inputs` with attribute values `attrs`, everything read from its definition:
        the result shape from its shape rule (`stated` is the result shape where the op's attributes do not
        give it: slice sizes, broadcast target), each attribute made by its kind."""
        definition = glow_op(op)
        node = node or self._node_name(op, name)
        operands = self._tensors(inputs, op, node)
        attrs = attrs or {}
        given = None if stated is None else self._rule(op, node, shapes.tensor, stated)
        dims = self._rule(op, node, definition.shape, [t.shape for t in operands], attrs, given)
        with self._scope:
            attributes = {key: definition.attr_kind(key).make(value) for key, value in attrs.items()}
        return self._create(op, node, operands, dims, attributes, result_type)

    def _window_op(
        self,
        op: str,
        inputs: list[TensorLike],
        strides: Sequence[int],
        pads: Sequence[int],
        dilation: Sequence[int],
        group: int,
        name: str | None,
        extra: Attrs | None = None,
        kernel_dims: tuple[int, int] = (2, 4),
    ) -> Tensor:
        """A convolution (with a fused op's `extra` activation attributes): the kernel size is the filter's
        dims `kernel_dims` (HW of OIHW, or of the NHWC backend's [KH, KW, I, O])."""
        node = self._node_name(op, name)
        operands = self._tensors(inputs, op, node)
        attrs = {
            "kernels": operands[1].shape[kernel_dims[0] : kernel_dims[1]],
            "strides": tuple(strides), "pads": tuple(pads), "group": group, "dilation": tuple(dilation),
            **(extra or {}),
        }
        return self._op(op, operands, node=node, attrs=attrs)

    def _reduce(self, op: str, input: TensorLike, axes: Sequence[int], name: str | None) -> Tensor:
        """A batched_reduce op; axes are made non-negative and sorted, as the op's attribute requires."""
        node = self._node_name(op, name)
        operands = self._tensors([input], op, node)
        rank = len(operands[0].shape)
        normalized = tuple(sorted(a + rank if a < 0 else a for a in axes))
        return self._op(op, operands, node=node, attrs={"axes": normalized})

    def _arg_reduce(self, op: str, input: TensorLike, axis: int, keep_dims: bool, name: str | None) -> Tensor:
        node = self._node_name(op, name)
        operands = self._tensors([input], op, node)
        rank = len(operands[0].shape)
        attrs = {"axis": axis + rank if axis < 0 else axis, "keepDims": keep_dims}
        return self._op(op, operands, node=node, attrs=attrs)

    def _rule(self, op: str, node: str, rule: Callable[..., T], *args: object, **kwargs: object) -> T:
        """`rule(*args, **kwargs)`, its error prefixed with the op and node name."""
        try:
            return rule(*args, **kwargs)
        except shapes.ShapeError as e:
            raise shapes.ShapeError(f"glow.{op} '{node}': {e}") from None

    def _create(
        self,
        op: str,
        node: str,
        operands: Sequence[Tensor],
        dims: Sequence[int],
        attributes: dict[str, ir.Attribute],
        result_type: ir.Type | None = None,
    ) -> Tensor:
        """Appends `glow.<op>` with a result of shape `dims`, its element type checked and inferred by the type
        rule of the op's definition; `result_type` is the type asked for where the operands leave it open
        (constant, splat, convert_to)."""
        with self._scope:
            operand_types = [str(ops.element_type(t.value)) for t in operands]
            asked = None if result_type is None else str(result_type)
            elt = ir.Type.parse(self._rule(op, node, glow_op(op).types, operand_types, asked))
        with self._scope, ir.Location.name(node):
            with self._at_end():
                result = ops.tensor_type(dims, elt)
                created = ops.create(f"glow.{op}", [t.value for t in operands], [result], attributes)
        return Tensor(self, created.result)

    def _at_end(self) -> ir.InsertionPoint:
        """Where the next op goes: the end of the block being built (a loop's body while the importer builds it),
        before the func.return that reading `module` added to the function's."""
        if self._return is not None and self._return.block == self._block:
            return ir.InsertionPoint(self._return)
        return ir.InsertionPoint(self._block)

    def _node_name(self, op: str, name: str | None) -> str:
        if name is not None:
            return name
        node = f"{op}_{self._counters[op]}"
        self._counters[op] += 1
        return node

    def _tensors(self, values: Sequence[TensorLike], op: str, node: str) -> list[Tensor]:
        return [self._tensor(v, f"glow.{op} '{node}'") for v in values]

    def _tensor(self, value: TensorLike, what: str) -> Tensor:
        """A graph tensor for an operand: numpy arrays become constants; foreign handles are refused."""
        if isinstance(value, np.ndarray):
            return self.constant(value)
        if not isinstance(value, Tensor):
            kind = type(value).__name__
            raise ValueError(f"{what}: operands must be Tensors or numpy arrays, got {kind}")
        if value.graph is not self:
            raise ValueError(f"{what}: operand belongs to graph '{value.graph.name}', not '{self.name}'")
        return value


def _element_type(dtype: DType, what: str) -> ir.Type:
    """The MLIR element type named by `dtype` (needs an active context); ValueError naming `what` otherwise.

    MLIR spellings are matched first because numpy reads some of them differently ("i8" is its int64).
    """
    if isinstance(dtype, str) and dtype in types.ELEMENT_TYPES:
        return ir.Type.parse(dtype)
    try:
        return ops.mlir_type(dtype)
    except ValueError as e:
        raise ValueError(f"{what}: {e} or MLIR spellings ({', '.join(types.ELEMENT_TYPES)})") from None


def _activation(activation: str, args: Sequence[float]) -> Attrs:
    """The attribute values of a fused activation; the op's shape rule checks them (`shapes.activation`)."""
    return {"activation": activation, "activationArgs": tuple(float(a) for a in args)}


def _window(kernels: Sequence[int], strides: Sequence[int] | None, pads: Sequence[int]) -> Attrs:
    """A pool's window attributes; strides default to the kernel size."""
    return {"kernels": tuple(kernels), "strides": tuple(kernels if strides is None else strides), "pads": tuple(pads)}


def _splat_value(value: float, elt: ir.Type, node: str) -> ir.Attribute:
    """The `value` attribute of a splat of element type `elt`: f32 for floats (float8, float4), i64 for the rest."""
    if str(elt) in types.ALL_FLOATS:
        return ops.f32(value)
    low, high = types.integer_range(str(elt))
    # Python and numpy integers stay exact; a float must be a whole number (int64's extremes exceed float's).
    if isinstance(value, int | np.integer | np.bool_):
        whole: int | None = int(value)
    else:
        number = float(value)
        whole = int(number) if number.is_integer() else None
    if whole is None or not low <= whole <= high:
        raise ValueError(f"glow.splat '{node}': value {value} is not a whole number in [{low}, {high}] for {elt}")
    return ops.i64(whole)


def _named(name: str) -> ir.DictAttr:
    return ir.DictAttr.get({"glow.name": ir.StringAttr.get(name)})


def _operands_method(definition: OpDef) -> Callable[..., Tensor]:
    """The Graph method `g.<name>(*operands, name=None, **attributes)` of an op, from its definition."""
    arity, wanted = len(definition.operands), {key for key, _ in definition.attrs}

    def method(self: Graph, *operands: TensorLike, name: str | None = None, **attrs: Any) -> Tensor:
        if len(operands) == arity + 1 and isinstance(operands[-1], str):
            *operands, name = operands  # type: ignore[assignment]
        if len(operands) != arity or set(attrs) != wanted:
            raise TypeError(f"Graph.{definition.method_name} takes {arity} operands and attributes {sorted(wanted)}, "
                            f"got {len(operands)} and {sorted(attrs)}")
        return self._op(definition.name, operands, name, attrs)

    method.__name__ = definition.method_name
    method.__doc__ = f"`{definition.full_name}`: {definition.doc}"
    return method


# Every op of operands not written out above is a Graph method named by its definition (convert_to, above, also takes
# the result type); the CPU backend's ops are created by its layout pass, not by users.
for _definition in list(glow_ops().values()):
    if _definition.operands and not _definition.backend and not hasattr(Graph, _definition.method_name):
        setattr(Graph, _definition.method_name, _operands_method(_definition))
