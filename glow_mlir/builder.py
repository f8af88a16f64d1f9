"""The Python graph builder: Glow's C++ `Function` API, producing a `glow` dialect module.

    g = Graph("mlp")
    x = g.input("x", (1, 784), "f32")
    y = g.relu(g.fully_connected(x, w, b))        # numpy arrays become glow.constant
    g.output("y", g.softmax(y))
    g.module                                      # func.func @mlp, arguments/results named by glow.name

Every method checks its operands at this boundary (element type, shapes through `glow_mlir.shapes`) and
raises `ValueError` naming the op, its node name and the shapes, so a bad model fails where it is written
rather than deep in the pipeline. Each op gets the location `loc("<node name>")`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import func

from glow_mlir import ops, shapes
from glow_mlir.context import make_context

_F32_NAMES = ("f32", "float32")


@dataclass(frozen=True)
class Tensor:
    """A value of a graph under construction: an `ir.Value` of a ranked f32 tensor type."""

    graph: Graph
    value: ir.Value

    @property
    def shape(self) -> tuple[int, ...]:
        return ops.shape(self.value)


TensorLike = Tensor | np.ndarray


class Graph:
    """One `func.func` of `glow` ops being built; owns its own MLIR context."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.context = make_context()
        # Entering this location also enters the context: attributes and types are made under it.
        self._scope = ir.Location.unknown(context=self.context)
        self._counters: defaultdict[str, int] = defaultdict(int)
        self._inputs: list[str] = []
        self._outputs: list[tuple[str, Tensor]] = []
        with self._scope:
            self._module = ir.Module.create()
            with ir.InsertionPoint(self._module.body):
                self._func = func.FuncOp(name, ir.FunctionType.get([], []))
            self._block = self._func.add_entry_block()

    # Inputs, outputs and the finished module.

    def input(self, name: str, shape: Sequence[int], dtype: str | type | np.dtype = "f32") -> Tensor:
        """A new function argument named `name` (its glow.name) of the given shape."""
        _check_dtype(dtype, f"input '{name}'")
        if name in self._inputs:
            raise ValueError(f"duplicate input name '{name}'")
        try:
            dims = shapes.tensor(shape)
        except shapes.ShapeError as e:
            raise ValueError(f"input '{name}': {e}") from None
        with self._scope:
            arg = self._block.add_argument(ops.tensor_type(dims), ir.Location.name(name))
        self._inputs.append(name)
        return Tensor(self, arg)

    def output(self, name: str, value: TensorLike) -> None:
        """Makes `value` a function result named `name`."""
        if any(name == existing for existing, _ in self._outputs):
            raise ValueError(f"duplicate output name '{name}'")
        self._outputs.append((name, self._tensor(value, f"output '{name}'")))

    @property
    def module(self) -> ir.Module:
        """The module so far, with the function's results, signature and names brought up to date."""
        if not self._outputs:
            raise ValueError(f"graph '{self.name}' has no outputs")
        with self._scope:
            if self._has_return():
                self._block.operations[-1].erase()
            with ir.InsertionPoint(self._block):
                func.ReturnOp([t.value for _, t in self._outputs])
            self._func.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get(
                    [a.type for a in self._block.arguments], [t.value.type for _, t in self._outputs]
                )
            )
            self._func.arg_attrs = ir.ArrayAttr.get([_named(n) for n in self._inputs])
            self._func.res_attrs = ir.ArrayAttr.get([_named(n) for n, _ in self._outputs])
        self._module.operation.verify()
        return self._module

    # Leaves.

    def constant(self, array: np.ndarray, name: str | None = None) -> Tensor:
        """A `glow.constant` holding a copy of `array` (float32)."""
        node = self._node_name("constant", name)
        if not isinstance(array, np.ndarray):
            raise ValueError(f"glow.constant '{node}': expected a numpy array, got {type(array).__name__}")
        _check_dtype(array.dtype, f"glow.constant '{node}'")
        try:
            dims = shapes.tensor(array.shape)
        except shapes.ShapeError as e:
            raise ValueError(f"glow.constant '{node}': {e}") from None
        with self._scope:
            value = ir.DenseElementsAttr.get(np.ascontiguousarray(array), type=ops.tensor_type(dims))
        return self._create("constant", node, [], dims, {"value": value})

    def splat(self, shape: Sequence[int], value: float, name: str | None = None) -> Tensor:
        """A `glow.splat`: a tensor of `shape` with every element `value`."""
        node = self._node_name("splat", name)
        dims = self._rule("splat", node, shapes.tensor, shape)
        with self._scope:
            return self._create("splat", node, [], dims, {"value": ops.f32(value)})

    # Linear algebra.

    def fully_connected(
        self, input: TensorLike, weights: TensorLike, bias: TensorLike, name: str | None = None
    ) -> Tensor:
        return self._simple("fully_connected", shapes.fully_connected, [input, weights, bias], name)

    def matmul(self, lhs: TensorLike, rhs: TensorLike, name: str | None = None) -> Tensor:
        return self._simple("matmul", shapes.matmul, [lhs, rhs], name)

    def batched_add(self, batch: TensorLike, slice: TensorLike, name: str | None = None) -> Tensor:
        return self._simple("batched_add", shapes.batched_add, [batch, slice], name)

    # Elementwise.

    def add(self, lhs: TensorLike, rhs: TensorLike, name: str | None = None) -> Tensor:
        return self._simple("add", shapes.elementwise, [lhs, rhs], name)

    def sub(self, lhs: TensorLike, rhs: TensorLike, name: str | None = None) -> Tensor:
        return self._simple("sub", shapes.elementwise, [lhs, rhs], name)

    def mul(self, lhs: TensorLike, rhs: TensorLike, name: str | None = None) -> Tensor:
        return self._simple("mul", shapes.elementwise, [lhs, rhs], name)

    def div(self, lhs: TensorLike, rhs: TensorLike, name: str | None = None) -> Tensor:
        return self._simple("div", shapes.elementwise, [lhs, rhs], name)

    def max(self, lhs: TensorLike, rhs: TensorLike, name: str | None = None) -> Tensor:
        return self._simple("max", shapes.elementwise, [lhs, rhs], name)

    def min(self, lhs: TensorLike, rhs: TensorLike, name: str | None = None) -> Tensor:
        return self._simple("min", shapes.elementwise, [lhs, rhs], name)

    def relu(self, input: TensorLike, name: str | None = None) -> Tensor:
        return self._simple("relu", shapes.unary, [input], name)

    def sigmoid(self, input: TensorLike, name: str | None = None) -> Tensor:
        return self._simple("sigmoid", shapes.unary, [input], name)

    def tanh(self, input: TensorLike, name: str | None = None) -> Tensor:
        return self._simple("tanh", shapes.unary, [input], name)

    def exp(self, input: TensorLike, name: str | None = None) -> Tensor:
        return self._simple("exp", shapes.unary, [input], name)

    def sqrt(self, input: TensorLike, name: str | None = None) -> Tensor:
        return self._simple("sqrt", shapes.unary, [input], name)

    def softmax(self, input: TensorLike, name: str | None = None) -> Tensor:
        return self._simple("softmax", shapes.softmax, [input], name)

    # Convolution, pooling, normalization.

    def convolution(
        self,
        input: TensorLike,
        filter: TensorLike,
        bias: TensorLike,
        strides: Sequence[int] = (1, 1),
        pads: Sequence[int] = (0, 0, 0, 0),
        dilation: Sequence[int] = (1, 1),
        group: int = 1,
        name: str | None = None,
    ) -> Tensor:
        """2-D convolution, NCHW input, OIHW filter; the kernel size is the filter's HW."""
        node = self._node_name("convolution", name)
        operands = self._tensors([input, filter, bias], "convolution", node)
        kernels = operands[1].shape[2:]
        dims = self._rule(
            "convolution", node, shapes.convolution, *(t.shape for t in operands),
            kernels=kernels, strides=tuple(strides), pads=tuple(pads), dilation=tuple(dilation), group=group,
        )
        with self._scope:
            attributes = {
                "kernels": ops.i64_array(kernels),
                "strides": ops.i64_array(strides),
                "pads": ops.i64_array(pads),
                "group": ops.i64(group),
                "dilation": ops.i64_array(dilation),
            }
            return self._create("convolution", node, operands, dims, attributes)

    def max_pool(
        self,
        input: TensorLike,
        kernels: Sequence[int],
        strides: Sequence[int] | None = None,
        pads: Sequence[int] = (0, 0, 0, 0),
        name: str | None = None,
    ) -> Tensor:
        """2-D max pooling, NCHW; strides default to the kernel size."""
        return self._pool("max_pool", input, kernels, strides, pads, {}, name)

    def avg_pool(
        self,
        input: TensorLike,
        kernels: Sequence[int],
        strides: Sequence[int] | None = None,
        pads: Sequence[int] = (0, 0, 0, 0),
        count_include_pads: bool = True,
        name: str | None = None,
    ) -> Tensor:
        """2-D average pooling, NCHW; strides default to the kernel size."""
        with self._scope:
            extra = {"countIncludePads": ops.boolean(count_include_pads)}
        return self._pool("avg_pool", input, kernels, strides, pads, extra, name)

    def batch_normalization(
        self,
        input: TensorLike,
        scale: TensorLike,
        bias: TensorLike,
        mean: TensorLike,
        var: TensorLike,
        epsilon: float = 1e-5,
        momentum: float = 0.9,
        channel_idx: int = 1,
        name: str | None = None,
    ) -> Tensor:
        """Inference batch normalization along dim `channel_idx`."""
        node = self._node_name("batch_normalization", name)
        operands = self._tensors([input, scale, bias, mean, var], "batch_normalization", node)
        dims = self._rule(
            "batch_normalization", node, shapes.batch_normalization, *(t.shape for t in operands),
            channel_idx=channel_idx, epsilon=epsilon,
        )
        with self._scope:
            attributes = {
                "epsilon": ops.f32(epsilon),
                "momentum": ops.f32(momentum),
                "channelIdx": ops.i64(channel_idx),
            }
            return self._create("batch_normalization", node, operands, dims, attributes)

    # Data movement.

    def reshape(self, input: TensorLike, dims: Sequence[int], name: str | None = None) -> Tensor:
        with self._scope:
            attributes = {"dims": ops.i64_array(dims)}
        return self._simple("reshape", shapes.reshape, [input], name, (tuple(dims),), attributes)

    def transpose(self, input: TensorLike, shuffle: Sequence[int], name: str | None = None) -> Tensor:
        with self._scope:
            attributes = {"shuffle": ops.i64_array(shuffle)}
        return self._simple("transpose", shapes.transpose, [input], name, (tuple(shuffle),), attributes)

    def slice(
        self, input: TensorLike, start: Sequence[int], sizes: Sequence[int], name: str | None = None
    ) -> Tensor:
        """The block of shape `sizes` at offset `start`."""
        with self._scope:
            attributes = {"start": ops.i64_array(start)}
        return self._simple("slice", shapes.slice, [input], name, (tuple(start), tuple(sizes)), attributes)

    def insert_tensor(
        self, big: TensorLike, small: TensorLike, start: Sequence[int], name: str | None = None
    ) -> Tensor:
        """`big` with `small` written into it at offset `start`."""
        with self._scope:
            attributes = {"start": ops.i64_array(start)}
        return self._simple("insert_tensor", shapes.insert_tensor, [big, small], name, (tuple(start),), attributes)

    def broadcast(self, input: TensorLike, shape: Sequence[int], axis: int, name: str | None = None) -> Tensor:
        """`input` broadcast to `shape`, its dims aligned at `axis` (Glow's BroadcastNode)."""
        with self._scope:
            attributes = {"axis": ops.i64(axis)}
        return self._simple("broadcast", shapes.broadcast, [input], name, (tuple(shape), axis), attributes)

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

    def _pool(
        self,
        op: str,
        input: TensorLike,
        kernels: Sequence[int],
        strides: Sequence[int] | None,
        pads: Sequence[int],
        extra: dict[str, ir.Attribute],
        name: str | None,
    ) -> Tensor:
        strides = tuple(kernels if strides is None else strides)
        with self._scope:
            attributes = {
                "kernels": ops.i64_array(kernels),
                "strides": ops.i64_array(strides),
                "pads": ops.i64_array(pads),
                **extra,
            }
        return self._simple(
            op, shapes.pool, [input], name, (), attributes,
            {"kernels": tuple(kernels), "strides": strides, "pads": tuple(pads)},
        )

    def _simple(
        self,
        op: str,
        rule: Callable[..., shapes.Shape],
        inputs: list[TensorLike],
        name: str | None,
        args: tuple[object, ...] = (),
        attributes: dict[str, ir.Attribute] | None = None,
        kwargs: dict[str, object] | None = None,
    ) -> Tensor:
        """An op whose result shape is `rule(*operand shapes, *args, **kwargs)`."""
        node = self._node_name(op, name)
        operands = self._tensors(inputs, op, node)
        dims = self._rule(op, node, rule, *(t.shape for t in operands), *args, **(kwargs or {}))
        return self._create(op, node, operands, dims, attributes or {})

    def _rule(
        self, op: str, node: str, rule: Callable[..., shapes.Shape], *args: object, **kwargs: object
    ) -> shapes.Shape:
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
    ) -> Tensor:
        with self._scope, ir.Location.name(node):
            # After `module` was read the block ends in func.return; later ops go before it.
            at_end = ir.InsertionPoint(self._block)
            with ir.InsertionPoint.at_block_terminator(self._block) if self._has_return() else at_end:
                created = ops.create(f"glow.{op}", [t.value for t in operands], [ops.tensor_type(dims)], attributes)
        return Tensor(self, created.result)

    def _has_return(self) -> bool:
        operations = self._block.operations
        return len(operations) > 0 and operations[-1].name == "func.return"

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


def _check_dtype(dtype: str | type | np.dtype, what: str) -> None:
    """Only f32 compute is supported; refuse anything else here rather than miscompile it later."""
    if isinstance(dtype, str):
        ok = dtype in _F32_NAMES
    else:
        try:
            ok = np.dtype(dtype) == np.float32
        except TypeError:
            ok = False
    if not ok:
        raise ValueError(f"{what}: element type must be f32 (np.float32), got {dtype}")


def _named(name: str) -> ir.DictAttr:
    return ir.DictAttr.get({"glow.name": ir.StringAttr.get(name)})
