"""The shape and element-type rules of every `glow` op, stated once.

Each shape function takes operand shapes and attribute values (plain Python ints and tuples), checks every
rule the op's semantics need (ranks, matching dims, attribute ranges) and returns the result shape.
`element_type` does the same for element types, spelled as MLIR spells them ("f32", "i1", "i64"), following
the convention of docs/ARCHITECTURE.md. The graph builder calls them to infer result types and `glow-verify`
calls them to check the types an IR states, so a rule changed here changes both. A broken rule raises
`ShapeError`, whose message names the rule and the shapes or types involved; callers prefix it with the op
and its node name.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Shape = tuple[int, ...]


class ShapeError(ValueError):
    """Operand shapes, element types or attributes that break one of an op's rules."""


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ShapeError(message)


def _fmt(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def tensor(shape: Sequence[int], what: str = "shape") -> Shape:
    """A valid static tensor shape: every dim is at least 1 (Glow has no empty or dynamic tensors)."""
    dims = tuple(int(d) for d in shape)
    _require(all(d >= 1 for d in dims), f"{what} {_fmt(dims)} must have every dim >= 1")
    return dims


def _rank(shape: Shape, rank: int, what: str) -> None:
    _require(len(shape) == rank, f"{what} must have rank {rank}, got {_fmt(shape)}")


def _length(values: Sequence[int], length: int, what: str) -> None:
    _require(len(values) == length, f"{what} must have {length} values, got {_fmt(values)}")


def elementwise(lhs: Shape, rhs: Shape) -> Shape:
    """Binary elementwise ops (arithmetic, comparisons, logic, pow): both operands have one shape."""
    _require(lhs == rhs, f"operands must have the same shape, got {_fmt(lhs)} and {_fmt(rhs)}")
    return lhs


def unary(input: Shape) -> Shape:
    """Unary elementwise ops (relu, exp, log, not, convert_to, copy, ...): the result has the input's shape."""
    return input


def softmax(input: Shape) -> Shape:
    """Softmax over the last dim of a tensor of any rank >= 1."""
    _require(len(input) >= 1, f"input must have rank >= 1, got {_fmt(input)}")
    return input


def matmul(lhs: Shape, rhs: Shape) -> Shape:
    """[M, K] x [K, N] -> [M, N]."""
    _rank(lhs, 2, "lhs")
    _rank(rhs, 2, "rhs")
    _require(lhs[1] == rhs[0], f"inner dims must agree: lhs {_fmt(lhs)}, rhs {_fmt(rhs)}")
    return (lhs[0], rhs[1])


def fully_connected(input: Shape, weights: Shape, bias: Shape) -> Shape:
    """[N, K] x [K, M] + [M] -> [N, M]."""
    _rank(input, 2, "input")
    _rank(weights, 2, "weights")
    _require(
        input[1] == weights[0], f"input dim 1 must equal weights dim 0: input {_fmt(input)}, weights {_fmt(weights)}"
    )
    _require(
        bias == (weights[1],), f"bias must have shape [{weights[1]}] (weights dim 1), got {_fmt(bias)}"
    )
    return (input[0], weights[1])


def fused_matmul(lhs: Shape, rhs: Shape, bias: Shape) -> Shape:
    """activation([M, K] x [K, N] + bias [N]) -> [M, N]: matmul's rules, one bias element per column."""
    result = matmul(lhs, rhs)
    _require(bias == (result[1],), f"bias must have shape [{result[1]}] (rhs dim 1), got {_fmt(bias)}")
    return result


def batched_add(batch: Shape, slice: Shape) -> Shape:
    """batch[b, ...] + slice[...]: the slice has the shape of one batch element."""
    _require(len(batch) >= 1, f"batch must have rank >= 1, got {_fmt(batch)}")
    _require(
        slice == batch[1:],
        f"slice shape must equal batch shape without dim 0: batch {_fmt(batch)}, slice {_fmt(slice)}",
    )
    return batch


def _window_dims(
    input: Shape, kernels: Sequence[int], strides: Sequence[int], pads: Sequence[int], dilation: Sequence[int]
) -> tuple[int, int]:
    """Output H and W of a 2-D window sweep over NCHW `input`; shared by convolution and pooling."""
    _length(kernels, 2, "kernels")
    _length(strides, 2, "strides")
    _length(pads, 4, "pads [top, left, bottom, right]")
    _length(dilation, 2, "dilation")
    _require(all(k >= 1 for k in kernels), f"kernels must be >= 1, got {_fmt(kernels)}")
    _require(all(s >= 1 for s in strides), f"strides must be >= 1, got {_fmt(strides)}")
    _require(all(p >= 0 for p in pads), f"pads must be >= 0, got {_fmt(pads)}")
    _require(all(d >= 1 for d in dilation), f"dilation must be >= 1, got {_fmt(dilation)}")
    top, left, bottom, right = pads
    out = []
    for size, pad, k, s, d in (
        (input[2], top + bottom, kernels[0], strides[0], dilation[0]),
        (input[3], left + right, kernels[1], strides[1], dilation[1]),
    ):
        extent = d * (k - 1) + 1
        _require(
            size + pad >= extent,
            f"the (dilated) kernel {_fmt(kernels)} must fit the padded input for an output dim >= 1: "
            f"input {_fmt(input)}, pads {_fmt(pads)}, dilation {_fmt(dilation)}",
        )
        out.append((size + pad - extent) // s + 1)
    return out[0], out[1]


def convolution(
    input: Shape,
    filter: Shape,
    bias: Shape,
    *,
    kernels: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilation: Sequence[int],
    group: int,
) -> Shape:
    """NCHW input, OIHW filter with I = C / group, bias [O] -> [N, O, OH, OW]."""
    _rank(input, 4, "input (NCHW)")
    _rank(filter, 4, "filter (OIHW)")
    _require(group >= 1, f"group must be >= 1, got {group}")
    n, c = input[0], input[1]
    o, i, kh, kw = filter
    _require(
        c == i * group,
        f"input channels must equal filter I * group: input {_fmt(input)}, filter {_fmt(filter)}, group {group}",
    )
    _require(o % group == 0, f"group {group} must divide the filter's output channels: filter {_fmt(filter)}")
    _require(bias == (o,), f"bias must have shape [{o}] (filter dim 0), got {_fmt(bias)}")
    _require(
        tuple(kernels) == (kh, kw), f"kernels {_fmt(kernels)} must equal the filter's HW: filter {_fmt(filter)}"
    )
    oh, ow = _window_dims(input, kernels, strides, pads, dilation)
    return (n, o, oh, ow)


def pool(input: Shape, *, kernels: Sequence[int], strides: Sequence[int], pads: Sequence[int]) -> Shape:
    """max_pool / avg_pool over NCHW input -> [N, C, OH, OW].

    Pads must be smaller than the kernel (ONNX's rule), so every window holds at least one real element:
    padding then never wins a max and no average divides by zero.
    """
    _rank(input, 4, "input (NCHW)")
    oh, ow = _window_dims(input, kernels, strides, pads, (1, 1))
    top, left, bottom, right = pads
    _require(
        max(top, bottom) < kernels[0] and max(left, right) < kernels[1],
        f"pads {_fmt(pads)} must be smaller than kernels {_fmt(kernels)}",
    )
    return (input[0], input[1], oh, ow)


def conv_nhwc(
    input: Shape,
    filter: Shape,
    bias: Shape,
    *,
    kernels: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilation: Sequence[int],
    group: int,
) -> Shape:
    """The CPU backend's convolution: NHWC input, filter [KH, KW, C / group, O], bias [O] -> [N, OH, OW, O].

    The rules are convolution's, with the channels last: this op is glow.convolution in another layout.
    """
    _rank(input, 4, "input (NHWC)")
    _rank(filter, 4, "filter (KH, KW, C / group, O)")
    _require(group >= 1, f"group must be >= 1, got {group}")
    n, h, w, c = input
    kh, kw, i, o = filter
    _require(
        c == i * group,
        f"input channels must equal filter dim 2 * group: input {_fmt(input)}, filter {_fmt(filter)}, "
        f"group {group}",
    )
    _require(o % group == 0, f"group {group} must divide the filter's output channels: filter {_fmt(filter)}")
    _require(bias == (o,), f"bias must have shape [{o}] (filter dim 3), got {_fmt(bias)}")
    _require(
        tuple(kernels) == (kh, kw), f"kernels {_fmt(kernels)} must equal the filter's HW: filter {_fmt(filter)}"
    )
    oh, ow = _window_dims((n, c, h, w), kernels, strides, pads, dilation)
    return (n, oh, ow, o)


def pool_nhwc(input: Shape, *, kernels: Sequence[int], strides: Sequence[int], pads: Sequence[int]) -> Shape:
    """The CPU backend's max / avg pooling over NHWC input -> [N, OH, OW, C], with pool's rules."""
    _rank(input, 4, "input (NHWC)")
    n, h, w, c = input
    return _nchw_to_nhwc(pool((n, c, h, w), kernels=kernels, strides=strides, pads=pads))


def _nchw_to_nhwc(shape: Shape) -> Shape:
    return (shape[0], shape[2], shape[3], shape[1])


# Activations a fused convolution applies to its result, with the number of activationArgs each takes.
ACTIVATIONS = {"none": 0, "relu": 0, "clip": 2, "sigmoid": 0, "tanh": 0, "leaky_relu": 1}


def activation(name: str, args: Sequence[float]) -> None:
    """A fused activation: one of ACTIVATIONS with its number of arguments (clip: min <= max)."""
    _require(name in ACTIVATIONS, f"activation '{name}' must be one of {', '.join(ACTIVATIONS)}")
    _require(
        len(args) == ACTIVATIONS[name],
        f"activation '{name}' takes {ACTIVATIONS[name]} activationArgs, got {len(args)}",
    )
    if name == "clip":
        _require(args[0] <= args[1], f"clip's activationArgs [min, max] must have min <= max, got {list(args)}")


def batch_normalization(
    input: Shape, scale: Shape, bias: Shape, mean: Shape, var: Shape, *, channel_idx: int, epsilon: float
) -> Shape:
    """Per-channel scale, bias, mean and var, each of shape [input[channel_idx]]."""
    _require(
        0 <= channel_idx < len(input), f"channelIdx {channel_idx} must be a dim of input {_fmt(input)}"
    )
    _require(epsilon >= 0, f"epsilon must be >= 0, got {epsilon}")
    channels = input[channel_idx]
    for name, vector in (("scale", scale), ("bias", bias), ("mean", mean), ("var", var)):
        _require(
            vector == (channels,),
            f"{name} must have shape [{channels}] (input dim {channel_idx}), got {_fmt(vector)}; "
            f"input {_fmt(input)}",
        )
    return input


def reshape(input: Shape, dims: Sequence[int]) -> Shape:
    """Same element count, new dims."""
    result = tensor(dims, "dims")
    _require(
        math.prod(result) == math.prod(input),
        f"element counts must agree: input {_fmt(input)} has {math.prod(input)}, dims {_fmt(result)} has "
        f"{math.prod(result)}",
    )
    return result


def transpose(input: Shape, shuffle: Sequence[int]) -> Shape:
    """result.dims[i] = input.dims[shuffle[i]]; shuffle is a permutation of the input's dims."""
    _require(
        sorted(shuffle) == list(range(len(input))),
        f"shuffle {_fmt(shuffle)} must be a permutation of 0..{len(input) - 1} for input {_fmt(input)}",
    )
    return tuple(input[s] for s in shuffle)


def concat(inputs: Sequence[Shape], dim: int) -> Shape:
    """Inputs of one rank whose dims agree except `dim`; the result's `dim` is their sum."""
    _require(len(inputs) >= 1, "concat needs at least one input")
    first = inputs[0]
    _require(0 <= dim < len(first), f"dim {dim} must be a dim of the inputs, got first input {_fmt(first)}")
    for shape in inputs[1:]:
        _require(
            len(shape) == len(first)
            and all(a == b for i, (a, b) in enumerate(zip(shape, first, strict=True)) if i != dim),
            f"inputs must agree in every dim except {dim}: {', '.join(_fmt(s) for s in inputs)}",
        )
    return first[:dim] + (sum(s[dim] for s in inputs),) + first[dim + 1 :]


def slice(input: Shape, start: Sequence[int], sizes: Sequence[int]) -> Shape:
    """The block of shape `sizes` at offset `start`, within the input's bounds."""
    result = tensor(sizes, "slice sizes")
    _require(
        len(start) == len(input) == len(result),
        f"start {_fmt(start)} and sizes {_fmt(result)} must have the input's rank: input {_fmt(input)}",
    )
    _require(
        all(s >= 0 and s + n <= d for s, n, d in zip(start, result, input, strict=True)),
        f"block at start {_fmt(start)} of sizes {_fmt(result)} must lie within input {_fmt(input)}",
    )
    return result


def insert_tensor(big: Shape, small: Shape, start: Sequence[int]) -> Shape:
    """`small` written into `big` at `start`, within `big`'s bounds; the result has `big`'s shape."""
    _require(
        len(start) == len(big) == len(small),
        f"start {_fmt(start)}, big {_fmt(big)} and small {_fmt(small)} must have one rank",
    )
    _require(
        all(s >= 0 and s + n <= d for s, n, d in zip(start, small, big, strict=True)),
        f"small {_fmt(small)} at start {_fmt(start)} must lie within big {_fmt(big)}",
    )
    return big


def broadcast(input: Shape, target: Sequence[int], axis: int) -> Shape:
    """Input dims aligned at `axis` of the target; each is 1 or equal to the target dim it meets."""
    result = tensor(target, "target shape")
    _require(
        0 <= axis and axis + len(input) <= len(result),
        f"input {_fmt(input)} aligned at axis {axis} must fit within target {_fmt(result)}",
    )
    _require(
        all(d == 1 or d == result[axis + i] for i, d in enumerate(input)),
        f"input {_fmt(input)} aligned at axis {axis} must have dims 1 or equal to target {_fmt(result)}",
    )
    return result


def select(cond: Shape, lhs: Shape, rhs: Shape) -> Shape:
    """`cond ? lhs : rhs`: the condition and both choices have one shape."""
    _require(
        cond == lhs == rhs,
        f"cond, lhs and rhs must have the same shape, got {_fmt(cond)}, {_fmt(lhs)} and {_fmt(rhs)}",
    )
    return lhs


def gather(data: Shape, indices: Shape, axis: int) -> Shape:
    """numpy.take along `axis`: data[:axis] + indices + data[axis+1:]."""
    _require(len(data) >= 1, f"data must have rank >= 1, got {_fmt(data)}")
    _require(0 <= axis < len(data), f"axis {axis} must be a dim of data {_fmt(data)}")
    return data[:axis] + indices + data[axis + 1 :]


def batched_reduce(input: Shape, axes: Sequence[int]) -> Shape:
    """A reduction over `axes` (sorted, unique dims of the input), which the result drops.

    No axes reduce nothing: the result is the input (ONNX's "reduce all" on empty axes is the importer's to
    spell out).
    """
    _require(
        all(a < b for a, b in zip(axes, axes[1:])), f"axes {_fmt(axes)} must be sorted and unique"
    )
    _require(
        all(0 <= a < len(input) for a in axes), f"axes {_fmt(axes)} must be dims of input {_fmt(input)}"
    )
    return tuple(d for i, d in enumerate(input) if i not in axes)


def arg_reduce(input: Shape, axis: int, keep_dims: bool) -> Shape:
    """arg_max / arg_min along `axis`: that dim becomes 1 with `keep_dims`, else it is dropped."""
    _require(0 <= axis < len(input), f"axis {axis} must be a dim of input {_fmt(input)}")
    kept = (1,) if keep_dims else ()
    return input[:axis] + kept + input[axis + 1 :]


def batch_matmul(lhs: Shape, rhs: Shape) -> Shape:
    """[B, M, K] x [B, K, N] -> [B, M, N]."""
    _rank(lhs, 3, "lhs")
    _rank(rhs, 3, "rhs")
    _require(lhs[0] == rhs[0], f"batch dims must agree: lhs {_fmt(lhs)}, rhs {_fmt(rhs)}")
    _require(lhs[2] == rhs[1], f"inner dims must agree: lhs {_fmt(lhs)}, rhs {_fmt(rhs)}")
    return (lhs[0], lhs[1], rhs[2])


def conv_transpose(
    input: Shape,
    filter: Shape,
    bias: Shape,
    *,
    kernels: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilation: Sequence[int],
    group: int,
) -> Shape:
    """NCHW input, filter [C, O/group, KH, KW], bias [O] -> [N, O, OH, OW].

    Each spatial output dim is (in - 1) * stride - pad_begin - pad_end + dilation * (k - 1) + 1: the full
    scatter of every input element through the kernel, cropped by the pads.
    """
    _rank(input, 4, "input (NCHW)")
    _rank(filter, 4, "filter (C, O/group, KH, KW)")
    _length(kernels, 2, "kernels")
    _length(strides, 2, "strides")
    _length(pads, 4, "pads [top, left, bottom, right]")
    _length(dilation, 2, "dilation")
    _require(group >= 1, f"group must be >= 1, got {group}")
    n, c = input[0], input[1]
    _require(
        filter[0] == c, f"filter dim 0 must equal input channels: input {_fmt(input)}, filter {_fmt(filter)}"
    )
    _require(c % group == 0, f"group {group} must divide the input channels: input {_fmt(input)}")
    o = filter[1] * group
    _require(bias == (o,), f"bias must have shape [{o}] (filter dim 1 * group), got {_fmt(bias)}")
    _require(
        tuple(kernels) == tuple(filter[2:]),
        f"kernels {_fmt(kernels)} must equal the filter's HW: filter {_fmt(filter)}",
    )
    _require(all(s >= 1 for s in strides), f"strides must be >= 1, got {_fmt(strides)}")
    _require(all(p >= 0 for p in pads), f"pads must be >= 0, got {_fmt(pads)}")
    _require(all(d >= 1 for d in dilation), f"dilation must be >= 1, got {_fmt(dilation)}")
    full = [(size - 1) * s + d * (k - 1) + 1 for size, s, d, k in zip(input[2:], strides, dilation, kernels)]
    top, left, bottom, right = pads
    out = (full[0] - top - bottom, full[1] - left - right)
    _require(
        min(out) >= 1,
        f"pads {_fmt(pads)} must crop the full output {_fmt(full)} to dims >= 1: input {_fmt(input)}, "
        f"kernels {_fmt(kernels)}, strides {_fmt(strides)}, dilation {_fmt(dilation)}",
    )
    return (n, o, *out)


# Element types, as MLIR spells them. Integers are signed (ONNX's unsigned types stop at the importer).
FLOATS = ("f32", "f64", "f16")
BOOL = "i1"
INTEGERS = ("i8", "i16", "i32", "i64")
NUMBERS = FLOATS + INTEGERS
ELEMENT_TYPES = FLOATS + (BOOL,) + INTEGERS
INDICES = ("i32", "i64")

# Which element types the data operands of an op take; all of them share one type, which the result has.
_FLOAT_OPS = frozenset(
    "convolution conv_transpose max_pool avg_pool softmax batch_normalization fully_connected sigmoid tanh exp "
    "sqrt log erf sin cos pow floor ceil round cpu_conv_nhwc cpu_max_pool_nhwc cpu_avg_pool_nhwc "
    # Fused ops take float data only: their activations (sigmoid, tanh) and f32 activationArgs are float.
    "fused_convolution fused_matmul".split()
)
# i1 is left out: arithmetic and ordering on booleans (true as -1 in signed i1) would silently miscompute.
_NUMBER_OPS = frozenset(
    "matmul batch_matmul batched_add add sub mul div max min relu abs neg batched_reduce_add batched_reduce_max "
    "batched_reduce_min batched_reduce_prod".split()
)
_ANY_OPS = frozenset("reshape transpose concat slice insert_tensor broadcast copy".split())
_LOGIC_OPS = frozenset(("and", "or", "xor", "not"))


def _one_of(types: Sequence[str]) -> str:
    return ", ".join(types)


def _same(operands: Sequence[str], allowed: Sequence[str], kind: str) -> str:
    """The one element type all `operands` share, which must be in `allowed` (described as `kind`)."""
    _require(len(set(operands)) <= 1, f"operands must have one element type, got {', '.join(operands)}")
    _require(
        all(t in allowed for t in operands),
        f"element type must be {kind} ({_one_of(allowed)}), got {operands[0] if operands else 'none'}",
    )
    return operands[0]


def element_type(op: str, operands: Sequence[str], result: str | None = None) -> str:
    """The element type of the result of glow op `op` (without "glow.") for operand element types `operands`.

    `result` is the type asked for where operands do not determine it (constant, splat, convert_to). Raises
    `ShapeError` when a type is outside the convention or the op does not take it.
    """
    for i, t in enumerate(operands):
        _require(t in ELEMENT_TYPES, f"operand {i} element type {t} must be one of {_one_of(ELEMENT_TYPES)}")
    if op in ("constant", "splat", "convert_to"):
        _require(
            result in ELEMENT_TYPES, f"result element type {result} must be one of {_one_of(ELEMENT_TYPES)}"
        )
        return result
    if op in _FLOAT_OPS:
        return _same(operands, FLOATS, "a float")
    if op in _NUMBER_OPS:
        return _same(operands, NUMBERS, "an integer or float")
    if op in _ANY_OPS:
        return _same(operands, ELEMENT_TYPES, "an element type")
    if op in _LOGIC_OPS:
        return _same(operands, (BOOL,), "boolean")
    match op:
        case "cmp_eq" | "cmp_neq":
            _same(operands, ELEMENT_TYPES, "an element type")
            return BOOL
        case "cmp_lt" | "cmp_lte":
            _same(operands, NUMBERS, "an integer or float")
            return BOOL
        case "arg_max" | "arg_min":
            _same(operands, NUMBERS, "an integer or float")
            return "i64"
        case "select":
            cond, lhs, rhs = operands
            _require(cond == BOOL, f"cond must be {BOOL}, got {cond}")
            return _same((lhs, rhs), ELEMENT_TYPES, "an element type")
        case "gather":
            data, indices = operands
            _require(indices in INDICES, f"indices must be {' or '.join(INDICES)}, got {indices}")
            return data
    raise ShapeError(f"has no element-type rule for op '{op}'")
