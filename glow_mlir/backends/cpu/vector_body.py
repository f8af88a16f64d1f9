"""A linalg.generic's scalar body cloned onto vectors, for the kernels written as vector code (a depthwise or
pointwise convolution's activation, depthwise_recipes.py and pointwise_recipes.py; a row reduction's element
term, rowreduce_recipes.py), and the loads those kernels share."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mlir import ir
from mlir.dialects import arith, vector


def vectorized(
    generic: ir.Operation, values: Sequence[ir.Value], until: ir.Operation | None = None
) -> Callable[[ir.Value], ir.Value]:
    """Clones the body ops of elementwise linalg.generic `generic` (those before `until`, or all) onto vectors:
    its first len(values) block arguments are `values` (vectors of one shape); each op is created again on
    vectors of that shape, scalar constants as splats. Returns the lookup from a body value to its vector
    (a scalar from outside the body broadcast)."""
    body = generic.regions[0].blocks[0]
    known: list[tuple[ir.Value, ir.Value]] = list(zip(list(body.arguments)[: len(values)], values, strict=True))
    shape = ir.VectorType(values[0].type).shape

    def lookup(value: ir.Value) -> ir.Value:
        for scalar, vec in known:
            if scalar == value:
                return vec
        return vector.BroadcastOp(ir.VectorType.get(shape, value.type), value).result

    for inner in list(body.operations)[:-1]:
        if until is not None and inner.operation == until:
            break
        if inner.name == "arith.constant":
            splat = ir.VectorType.get(shape, inner.results[0].type)
            value = ir.DenseElementsAttr.get_splat(splat, inner.attributes["value"])
            known.append((inner.results[0], arith.ConstantOp(splat, value).result))
            continue
        results = [ir.VectorType.get(shape, r.type) for r in inner.results]
        attributes = {name: inner.attributes[name] for name in inner.attributes}
        vectorized_op = ir.Operation.create(
            inner.name, results=results, operands=[lookup(v) for v in inner.operands], attributes=attributes
        )
        known.extend(zip(inner.results, vectorized_op.results, strict=True))
    return lookup


def yielded(generic: ir.Operation, values: Sequence[ir.Value]) -> list[ir.Value]:
    """What elementwise linalg.generic `generic` yields, on vectors `values` (one per block argument)."""
    lookup = vectorized(generic, values)
    return [lookup(v) for v in list(generic.regions[0].blocks[0].operations)[-1].operands]


def splat(t: ir.VectorType, value: ir.Attribute) -> ir.Value:
    """A constant vector of type `t` with every element `value`."""
    return arith.constant(t, ir.DenseElementsAttr.get_splat(t, value))


def zeros(t: ir.VectorType) -> ir.Value:
    """A vector of type `t` (f32) of zeros."""
    return splat(t, ir.FloatAttr.get(ir.F32Type.get(), 0.0))


def lanes_mask(count: int, lanes: int) -> ir.Value | None:
    """A mask of the first `count` of `lanes` lanes (a vector's channels that exist); None when that is all."""
    if count >= lanes:
        return None
    return vector.constant_mask(ir.VectorType.get([lanes], ir.IntegerType.get_signless(1)), [count])


def load(buffer: ir.Value, at: list[ir.Value], t: ir.VectorType, mask: ir.Value | None) -> ir.Value:
    """A vector `t` of `buffer` at `at` (under `mask`: zeros beyond it)."""
    if mask is None:
        return vector.load(t, buffer, at)
    return vector.maskedload(t, buffer, at, mask, zeros(t))


def store(value: ir.Value, buffer: ir.Value, at: list[ir.Value], mask: ir.Value | None) -> None:
    """Stores vector `value` into `buffer` at `at` (under `mask`: only its lanes)."""
    if mask is None:
        vector.store(value, buffer, at)
    else:
        vector.maskedstore(buffer, at, mask, value)
