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
    """A vector of type `t` (floats or integers) of zeros."""
    element = t.element_type
    zero = ir.IntegerAttr.get(element, 0) if isinstance(element, ir.IntegerType) else ir.FloatAttr.get(element, 0.0)
    return splat(t, zero)


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


def in_lanes(pattern: tuple[int, ...]) -> list[int]:
    """A two-source shuffle of 16-float vectors repeating `pattern` in each 128-bit lane (its indices are those
    of the first lane: 0-3 of the first source, 16-19 of the second): unpcklps / unpckhps / shufps."""
    return [4 * lane + i for lane in range(4) for i in pattern]


# The interleaves of two 16-float vectors within 128-bit lanes, by element bits: (low, high) halves of each lane,
# unpcklps / unpckhps for 32, unpcklpd / unpckhpd for 64.
ZIPS = {
    32: (in_lanes((0, 16, 1, 17)), in_lanes((2, 18, 3, 19))),
    64: (in_lanes((0, 1, 16, 17)), in_lanes((2, 3, 18, 19))),
}


def _quarters(first: int) -> list[int]:
    """vshuff32x4 taking 128-bit quarters first and first + 2 of each source (first = 0: even, 1: odd)."""
    return [4 * q + i for q in (first, first + 2, first + 4, first + 6) for i in range(4)]


def transpose_16x16(rows: Sequence[ir.Value]) -> list[ir.Value]:
    """The 16 columns of the 16 x 16 f32 block whose rows are `rows` (vector<16xf32> each): the 64-shuffle network
    of 32-bit and 64-bit interleaves within 128-bit lanes, then two rounds of 128-bit quarter moves (the one
    vector.transpose's shuffle_16x16 lowering builds), each shuffle one instruction."""
    assert len(rows) == 16
    low, high = ZIPS[32]
    t = [vector.shuffle(rows[i & ~1], rows[i | 1], low if i % 2 == 0 else high) for i in range(16)]
    pairs, odd_pairs = ZIPS[64]
    u = []
    for q in range(0, 16, 4):
        a, b, c, d = t[q : q + 4]
        u += [vector.shuffle(a, c, pairs), vector.shuffle(a, c, odd_pairs),
              vector.shuffle(b, d, pairs), vector.shuffle(b, d, odd_pairs)]  # fmt: skip
    even, odd = _quarters(0), _quarters(1)
    v: list[ir.Value] = [u[0]] * 16
    for half in (0, 8):
        for j in range(4):
            v[half + j] = vector.shuffle(u[half + j], u[half + j + 4], even)
            v[half + j + 4] = vector.shuffle(u[half + j], u[half + j + 4], odd)
    return [vector.shuffle(v[j % 8], v[j % 8 + 8], even if j < 8 else odd) for j in range(16)]
