"""What the `glow` graph optimizations share: reading constant operands, building replacements, erasing.

IRDL ops have no folders, traits or OpView classes, so every graph pass matches and rewrites generic
operations by name. These helpers keep the passes down to their rules: `constant_array` and `uniform_value`
read a `glow.constant` or `glow.splat` operand in its element type, `materialize` builds the cheapest op
holding an array (a splat when every element is equal and the splat attribute holds it exactly), and
`replace` swaps an op for a value and erases whatever that leaves unused, so each pass cleans up after itself
without a separate glow-dce.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
from mlir import ir

from glow_mlir import opdefs, ops

CONSTANT = "glow.constant"
SPLAT = "glow.splat"


class _Elementwise:
    """The names of the shape-preserving elementwise ops (every result element depends on the operand elements
    at its own index), from the op definitions as they stand when asked: a backend defines its own (the CPU
    backend's one-pass quantization) when it is loaded, after this module."""

    def __init__(self) -> None:
        self._defined = -1
        self._names: frozenset[str] = frozenset()

    def __contains__(self, name: object) -> bool:
        if len(opdefs.glow_ops()) != self._defined:
            self._defined, self._names = len(opdefs.glow_ops()), opdefs.elementwise()
        return name in self._names


ELEMENTWISE = _Elementwise()

Rewrite = Callable[[ir.Operation], ir.Value | None]
"""A rewrite of one op: the value to replace it with (built before it), or None to keep it."""


def body(function: ir.Operation) -> ir.Block:
    return function.regions[0].blocks[0]


def graph_ops(function: ir.Operation) -> list[ir.Operation]:
    """The `glow` ops of a function's body, in program order, as a list safe to mutate while iterating."""
    return ops.dialect_ops(body(function), ops.GLOW)


def producer(value: ir.Value) -> ir.Operation | None:
    """The op defining `value`, or None for a block argument."""
    owner = value.owner
    # An OpView's `name` may be one of its attributes; the Operation's `name` is always the op's kind.
    return None if isinstance(owner, ir.Block) else owner.operation


def producer_named(value: ir.Value, name: str) -> ir.Operation | None:
    """The op defining `value` if it is a `name` op, else None."""
    op = producer(value)
    return op if op is not None and op.name == name else None


def producer_name(value: ir.Value) -> str | None:
    op = producer(value)
    return None if op is None else op.name


def users(value: ir.Value) -> list[ir.Operation]:
    return [use.owner.operation if isinstance(use.owner, ir.OpView) else use.owner for use in value.uses]


def has_one_use(value: ir.Value) -> bool:
    return len(list(value.uses)) == 1


def attributes(op: ir.Operation) -> dict[str, ir.Attribute]:
    attrs = op.attributes
    return {attrs[i].name: attrs[i].attr for i in range(len(attrs))}


def dtype(value_or_type: ir.Value | ir.Type) -> np.dtype:
    """The numpy dtype of a tensor's element type."""
    return ops.numpy_dtype(ops.element_type(value_or_type))


def make(
    name: str, operands: Sequence[ir.Value], result: ir.Type, attrs: dict[str, ir.Attribute] | None = None
) -> ir.Value:
    """A new op at the current insertion point and location; returns its result."""
    return ops.create(name, operands, [result], attrs).results[0]


def reshape(value: ir.Value, dims: Sequence[int]) -> ir.Value:
    """A new glow.reshape of `value` to `dims` (at the current insertion point and location)."""
    return make("glow.reshape", [value], ops.tensor_type(dims, ops.element_type(value)), {"dims": ops.i64_array(dims)})


def concat(values: Sequence[ir.Value], dim: int) -> ir.Value:
    """A new glow.concat of `values` along `dim` (at the current insertion point and location); one value is
    returned as it is."""
    if len(values) == 1:
        return values[0]
    dims = list(ops.shape(values[0]))
    dims[dim] = sum(ops.shape(v)[dim] for v in values)
    attributes = ops.concat_attributes([v.type for v in values], dim)
    return make("glow.concat", values, ops.tensor_type(dims, ops.element_type(values[0])), attributes)


def splat_scalar(op: ir.Operation) -> float | int | bool:
    """The element value of a `glow.splat`, as a Python number of its result's element type."""
    attr = op.attributes["value"]
    raw = ops.number(attr)
    kind = dtype(op.results[0])
    # A signless i1 `true` may read back as -1.
    return bool(raw != 0) if kind == np.bool_ else np.asarray(raw).astype(kind).item()


def constant_array(value: ir.Value, *, copy: bool = True) -> np.ndarray | None:
    """The contents of `value` when a `glow.constant` or `glow.splat` defines it, in its element type; with
    `copy=False`, a constant's is a read-only view of its attr where the types agree (for readers that only
    derive new arrays from it: a filter transposed or scaled, which otherwise copied every weight once more)."""
    op = producer(value)
    if op is None:
        return None
    if op.name == CONSTANT:
        attr = op.attributes["value"]
        if not isinstance(attr, ir.DenseElementsAttr):
            return None
        return ops.dense_array(attr, copy=copy).astype(dtype(value), copy=False).reshape(ops.shape(value))
    if op.name == SPLAT:
        return np.full(ops.shape(value), splat_scalar(op), dtype(value))
    return None


def uniform_value(value: ir.Value) -> float | int | bool | None:
    """The one element value of a splat, or of a constant whose elements are all equal; else None.

    NaN counts as uniform only in a splat (NaN != NaN would make every check on it false anyway).
    """
    op = producer(value)
    if op is None:
        return None
    if op.name == SPLAT:
        return splat_scalar(op)
    if op.name == CONSTANT:
        attr = op.attributes["value"]
        if isinstance(attr, ir.DenseElementsAttr) and attr.is_splat:
            return ops.dense_array(attr).astype(dtype(value)).reshape(-1)[0].item()
        array = constant_array(value)
        if array is not None and array.size and np.all(array == array.reshape(-1)[0]):
            return array.reshape(-1)[0].item()
    return None


def is_uniform(value: ir.Value, scalar: float | int) -> bool:
    """True when every element of `value` is a compile-time constant equal to `scalar` (0 equals -0)."""
    found = uniform_value(value)
    return found is not None and found == scalar


def splat_attribute(elt: ir.Type, scalar: float | int | bool) -> ir.Attribute | None:
    """The `value` attribute of a glow.splat of element type `elt` holding `scalar` exactly, or None.

    Float splats hold an f32 attribute, so an f64 value that f32 cannot represent has no splat form; integer
    and i1 splats hold an i64 attribute (the convention of docs/ARCHITECTURE.md).
    """
    if isinstance(elt, ir.FloatType):
        as_f32 = np.float32(scalar)
        if not (np.isnan(scalar) or float(as_f32) == float(scalar)):
            return None
        return ir.FloatAttr.get(ir.F32Type.get(), float(as_f32))
    return ops.i64(int(bool(scalar)) if ir.IntegerType(elt).width == 1 else int(scalar))


def dense(array: np.ndarray, result: ir.Type) -> ir.DenseElementsAttr:
    """A dense elements attribute of tensor type `result` holding `array` (cast to its element type)."""
    # Cast and made row-major in one copy at most (astype, then ascontiguousarray, copied a transposed filter
    # twice; each copy of GB-scale weights faults in fresh memory), which dense_attr copies into the attr.
    array = np.ascontiguousarray(array, dtype(result)).reshape(ops.shape(result))
    if array.dtype == np.bool_:
        # The bindings build i1 attributes from bool arrays only when they infer the type themselves.
        return ir.DenseElementsAttr.get(array)
    return ops.dense_attr(array, result)


def materialize(array: np.ndarray, result: ir.Type, *, prefer_splat: bool = True) -> ir.Value:
    """A `glow.splat` (when `prefer_splat`, the array is uniform and a splat holds it exactly) or a
    `glow.constant` of type `result` holding `array`, at the current insertion point and location."""
    array = np.asarray(array).astype(dtype(result), copy=False)
    if prefer_splat and array.size:
        first = array.reshape(-1)[0]
        if np.all(array == first):
            attr = splat_attribute(ops.element_type(result), first.item())
            if attr is not None:
                return make(SPLAT, [], result, {"value": attr})
    return make(CONSTANT, [], result, {"value": dense(array, result)})


def replace(op: ir.Operation, value: ir.Value) -> None:
    """Replaces the (single) result of `op` with `value`, erases `op`, then erases what became unused."""
    op.results[0].replace_all_uses_with(value)
    erase(op)


def fold_into_leaf(
    op: ir.Operation, rearrange: Callable[[np.ndarray], np.ndarray], *, only_user: bool
) -> ir.Value | None:
    """Layout op `op` (a transpose, a reshape) of a splat or constant folded into it, built before `op`: a splat
    of op's result type, or a constant holding `rearrange(array)`; None for any other operand. With
    `only_user`, a constant folds only when `op` is its only user, so that its data is not kept twice."""
    source = op.operands[0]
    inner = producer(source)
    if inner is None:
        return None
    result = op.results[0]
    with ir.InsertionPoint(op), op.location:
        if inner.name == SPLAT:
            return make(SPLAT, [], result.type, {"value": inner.attributes["value"]})
        if inner.name == CONSTANT and (has_one_use(source) or not only_user):
            array = constant_array(source)
            if array is not None:
                return materialize(rearrange(array), result.type, prefer_splat=False)
    return None


def by_name(rewrites: Mapping[str, Rewrite]) -> Rewrite:
    """One rewrite applying `rewrites[op.name]` to the ops it names and keeping every other op."""

    def rewrite(op: ir.Operation) -> ir.Value | None:
        chosen = rewrites.get(op.name)
        return None if chosen is None else chosen(op)

    return rewrite


def rewrite_ops(function: ir.Operation, rewrite: Rewrite) -> bool:
    """One sweep over the glow ops of `function` in order: each op for which `rewrite(op)` returns a value is
    replaced by it (and what that leaves unused is erased). Returns whether anything changed."""
    changed = False
    for op in graph_ops(function):
        replacement = rewrite(op)
        if replacement is not None:
            replace(op, replacement)
            changed = True
    return changed


def erase(op: ir.Operation) -> None:
    """Erases `op`, whose results must be unused, and then every glow op left without users by it."""
    # Collect first, erase after: an erased op's values must not be touched again, and an op may use one value
    # twice. A producer joins the list once all its uses belong to listed ops, so users precede producers.
    doomed: list[ir.Operation] = []
    remaining: dict[ir.Operation, int] = {}
    stack = [op]
    while stack:
        current = stack.pop()
        doomed.append(current)
        for operand in current.operands:
            source = producer(operand)
            if source is None or not source.name.startswith(ops.GLOW):
                continue
            if source not in remaining:
                remaining[source] = sum(len(list(r.uses)) for r in source.results)
            remaining[source] -= 1
            if remaining[source] == 0:
                stack.append(source)
    for dead in doomed:
        dead.erase()


def inverse_permutation(shuffle: Sequence[int]) -> list[int]:
    inverse = [0] * len(shuffle)
    for i, s in enumerate(shuffle):
        inverse[s] = i
    return inverse


def run_on_functions(module: ir.Module, sweep: Callable[[ir.Operation], bool], *, fixed_point: bool) -> None:
    """Runs `sweep(function) -> changed` on every function, once or, with `fixed_point`, until nothing
    changes (Glow's ConvergenceMode::UntilFixedPoint)."""
    for function in ops.functions(module):
        while sweep(function) and fixed_point:
            pass


def rewrite_functions(module: ir.Module, rewrite: Rewrite, *, fixed_point: bool) -> None:
    """`rewrite_ops` with `rewrite` over every function, once or to a fixed point (`run_on_functions`): the
    whole of a pass that rewrites op by op."""
    run_on_functions(module, lambda function: rewrite_ops(function, rewrite), fixed_point=fixed_point)


def channel_vector(value: ir.Value, axis: int) -> np.ndarray | None:
    """The vector c[channel] when every element of `value` is a compile-time constant depending on its index
    along `axis` only (a constant, a splat, or a broadcast of a constant); else None."""
    dims = ops.shape(value)
    source = producer(value)
    if source is not None and source.name == "glow.broadcast":
        small = constant_array(source.operands[0])
        if small is None:
            return None
        start = ops.integer(source, "axis")
        aligned = (1,) * start + small.shape + (1,) * (len(dims) - start - small.ndim)
        full = np.broadcast_to(small.reshape(aligned), dims)
    else:
        full = constant_array(value)
        if full is None:
            return None
    index = tuple(slice(None) if d == axis else 0 for d in range(len(dims)))
    vector = full[index]
    along = [1] * len(dims)
    along[axis] = dims[axis]
    if not np.array_equal(full, np.broadcast_to(vector.reshape(along), dims)):
        return None
    return vector
