"""ONNX sequences and optionals, held as compile-time lists of values in the importer.

glow compiles static graphs, so a sequence whose length and element shapes are known at compile time is a
Python tuple of the importer's values (`SequenceValue`), each element a Tensor or an array, and an optional
is an `OptionalValue` holding one value or none. The sequence ops only rearrange that list: what runs is the
glow ops that make and use its elements (ConcatFromSequence's concat, SplitToSequence's slices, the ops of a
SequenceMap body imported once per element, in ops_control.py). So every position must be known at compile
time; a sequence or optional that is a graph input or output is refused (the importer's _check_types and
run), as a compiled model takes and returns tensors only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from glow_mlir.builder import Tensor
from glow_mlir.frontends.onnx.node import (
    ONNX_TO_NUMPY,
    NodeContext,
    Value,
    dtype,
    normalize_axis,
    rank,
    shape,
)
from glow_mlir.frontends.onnx.registry import handles


@dataclass(frozen=True)
class SequenceValue:
    """An ONNX sequence: its elements, and their element type (which an empty sequence still has)."""

    items: tuple[Value, ...]
    dtype: np.dtype


@dataclass(frozen=True)
class OptionalValue:
    """An ONNX optional: a tensor or sequence, or None for an empty optional."""

    item: Value | SequenceValue | None


# What an ONNX value is in the importer: a tensor (see node.py), a sequence or an optional.
Item = Value | SequenceValue | OptionalValue

# The ops whose handlers take sequence or optional inputs; the importer refuses one given to any other op.
COLLECTION_OPS = frozenset({
    "Identity", "Loop", "If", "SequenceInsert", "SequenceAt", "SequenceErase", "SequenceLength",
    "ConcatFromSequence", "SequenceMap", "Optional", "OptionalHasElement", "OptionalGetElement",
})


def sequence_input(ctx: NodeContext, i: int) -> SequenceValue:
    v = ctx.input(i)
    if not isinstance(v, SequenceValue):
        raise ctx.invalid(f"input {i} must be a sequence, got a {kind(v)}")
    return v


def tensor_input(ctx: NodeContext, i: int) -> Value:
    v = ctx.input(i)
    if not isinstance(v, (np.ndarray, Tensor)):
        raise ctx.invalid(f"input {i} must be a tensor, got a {kind(v)}")
    return v


def kind(v: object) -> str:
    return {SequenceValue: "sequence", OptionalValue: "optional"}.get(type(v), "tensor")


def _position(ctx: NodeContext, i: int, length: int, inclusive_end: bool) -> int:
    """The compile-time position input `i` in [-length, length - 1] (or up to `length` when inserting)."""
    values = ctx.ints(i, "the sequence position")
    if values is None or len(values) != 1:
        raise ctx.invalid(f"position must be a scalar, got {values}")
    position = values[0]
    high = length if inclusive_end else length - 1
    if not -length <= position <= high:
        raise ctx.invalid(f"position {position} is out of range [{-length}, {high}] for a sequence of length "
                          f"{length}")
    return position + length if position < 0 else position


def _check_element(ctx: NodeContext, seq: SequenceValue, v: Value) -> None:
    if dtype(v) != seq.dtype:
        raise ctx.invalid(f"a tensor of element type {dtype(v)} cannot join a sequence of {seq.dtype}")


@handles("SequenceEmpty")
def sequence_empty(ctx: NodeContext) -> list[SequenceValue]:
    elem = ctx.attr("dtype", 1)  # float by default
    if elem not in ONNX_TO_NUMPY:
        raise ctx.unsupported("dtype", f"element type {elem} is not supported")
    return [SequenceValue((), ONNX_TO_NUMPY[elem])]


@handles("SequenceConstruct")
def sequence_construct(ctx: NodeContext) -> list[SequenceValue]:
    items = tuple(tensor_input(ctx, i) for i in range(len(ctx.inputs)))
    seq = SequenceValue(items, dtype(items[0]))
    for v in items:
        _check_element(ctx, seq, v)
    return [seq]


@handles("SequenceInsert")
def sequence_insert(ctx: NodeContext) -> list[SequenceValue]:
    seq, v = sequence_input(ctx, 0), tensor_input(ctx, 1)
    _check_element(ctx, seq, v)
    n = len(seq.items)
    at = n if ctx.optional(2) is None else _position(ctx, 2, n, inclusive_end=True)
    return [SequenceValue((*seq.items[:at], v, *seq.items[at:]), seq.dtype)]


@handles("SequenceAt")
def sequence_at(ctx: NodeContext) -> list[Value]:
    seq = sequence_input(ctx, 0)
    return [seq.items[_position(ctx, 1, len(seq.items), inclusive_end=False)]]


@handles("SequenceErase")
def sequence_erase(ctx: NodeContext) -> list[SequenceValue]:
    seq = sequence_input(ctx, 0)
    n = len(seq.items)
    if n == 0:
        raise ctx.invalid("cannot erase from an empty sequence")
    at = n - 1 if ctx.optional(1) is None else _position(ctx, 1, n, inclusive_end=False)
    return [SequenceValue(seq.items[:at] + seq.items[at + 1:], seq.dtype)]


@handles("SequenceLength")
def sequence_length(ctx: NodeContext) -> list[Value]:
    return [np.array(len(sequence_input(ctx, 0).items), np.int64)]


@handles("SplitToSequence")
def split_to_sequence(ctx: NodeContext) -> list[SequenceValue]:
    x = tensor_input(ctx, 0)
    axis = normalize_axis(ctx.attr("axis", 0), rank(x), ctx)
    length = shape(x)[axis]
    split = ctx.ints(1, "split") if ctx.optional(1) is not None else None
    squeeze = False
    if split is None:
        sizes = [1] * length
        squeeze = not ctx.attr("keepdims", 1)
    elif np.ndim(ctx.optional(1)) == 0:
        # A scalar: chunks of that size, the last one shorter when it does not divide the axis.
        chunk = split[0]
        if chunk <= 0:
            raise ctx.invalid(f"split {chunk} must be positive")
        sizes = [min(chunk, length - start) for start in range(0, length, chunk)]
    else:
        sizes = split
        if any(s < 0 for s in sizes) or sum(sizes) != length:
            raise ctx.invalid(f"split {sizes} must be non-negative and sum to dim {axis} of {list(shape(x))}")
    items: list[Value] = []
    start = 0
    for size in sizes:
        begin = [0] * rank(x)
        begin[axis] = start
        dims = list(shape(x))
        dims[axis] = size
        if isinstance(x, np.ndarray):
            # Known at compile time: sliced here, so that an empty tensor (NonZero's indices of nothing, in
            # Longformer's global attention) or an empty part stays an array, as glow holds no empty tensors.
            part = np.ascontiguousarray(x[tuple(slice(b, b + d) for b, d in zip(begin, dims))])
            if squeeze:
                part = part.reshape(dims[:axis] + dims[axis + 1:])
            items.append(part)
            start += size
            continue
        part = x if dims == list(shape(x)) else ctx.g.slice(x, begin, dims)
        if squeeze:
            part = ctx.reshape(part, dims[:axis] + dims[axis + 1:])
        items.append(part)
        start += size
    return [SequenceValue(tuple(items), dtype(x))]


@handles("ConcatFromSequence")
def concat_from_sequence(ctx: NodeContext) -> list[Value]:
    seq = sequence_input(ctx, 0)
    if not seq.items:
        raise ctx.invalid("cannot concatenate an empty sequence")
    first = seq.items[0]
    new_axis = ctx.attr("new_axis", 0)
    axis = normalize_axis(ctx.attr("axis"), rank(first) + (1 if new_axis else 0), ctx)
    items = list(seq.items)
    if new_axis:
        items = [ctx.reshape(v, [*shape(v)[:axis], 1, *shape(v)[axis:]]) for v in items]
    return [items[0] if len(items) == 1 else ctx.g.concat(items, axis)]


@handles("Optional")
def optional(ctx: NodeContext) -> list[OptionalValue]:
    return [OptionalValue(ctx.optional(0))]


@handles("OptionalHasElement")
def optional_has_element(ctx: NodeContext) -> list[Value]:
    v = ctx.optional(0)
    present = v is not None and not (isinstance(v, OptionalValue) and v.item is None)
    return [np.array(present)]


@handles("OptionalGetElement")
def optional_get_element(ctx: NodeContext) -> list[Value | SequenceValue]:
    v = ctx.input(0)
    if isinstance(v, OptionalValue):
        if v.item is None:
            raise ctx.invalid("the optional input is empty")
        return [v.item]
    return [v]
