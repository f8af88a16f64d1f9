"""Shape rules: the functions the op definitions name for their result shapes.

Each shape function takes operand shapes and attribute values (plain Python ints and tuples), checks every
rule the op's semantics need (ranks, matching dims, attribute ranges) and returns the result shape; element
types have their rules in `glow_mlir.opdefs.types`. The graph builder calls them (through the definitions) to
infer result types and `glow-verify` calls them to check the types an IR states, so a rule changed here
changes both. A broken rule raises
`ShapeError`, whose message names the rule and the shapes or types involved; callers prefix it with the op
and its node name.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple, TypedDict, Unpack

from glow_mlir.opdefs.base import activations

Shape = tuple[int, ...]


class ShapeError(ValueError):
    """Operand shapes, element types or attributes that break one of an op's rules."""


def require(condition: bool, message: str | Callable[[], str]) -> None:
    """Raises ShapeError(message) unless `condition`. A message that formats values is passed as a function, called
    on failure only: formatted on every call, the messages of the shape rules that glow-verify checks for every op
    and value cost more than the checks (HRM-Text QDQ: 2.3 million shapes formatted, 1.3 s of a compile)."""
    if not condition:
        raise ShapeError(message() if callable(message) else message)


def fmt(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


# The most elements a tensor may hold: its byte offsets (8-byte elements) stay within a signed 64-bit index.
MAX_ELEMENTS = 2**60


def tensor(shape: Sequence[int], what: str = "shape") -> Shape:
    """A valid static tensor shape: every dim is at least 1 (Glow has no empty or dynamic tensors), and the
    element count addressable by 64-bit indices (MAX_ELEMENTS)."""
    dims = tuple(int(d) for d in shape)
    require(all(d >= 1 for d in dims), lambda: f"{what} {fmt(dims)} must have every dim >= 1")
    require(math.prod(dims) <= MAX_ELEMENTS, lambda: f"{what} {fmt(dims)} has more than 2^60 elements")
    return dims


def rank(shape: Shape, rank: int, what: str) -> None:
    require(len(shape) == rank, lambda: f"{what} must have rank {rank}, got {fmt(shape)}")


def _length(values: Sequence[int], length: int, what: str) -> None:
    require(len(values) == length, lambda: f"{what} must have {length} values, got {fmt(values)}")


def elementwise(lhs: Shape, rhs: Shape) -> Shape:
    """Binary elementwise ops (arithmetic, comparisons, logic, pow): both operands have one shape."""
    require(lhs == rhs, lambda: f"operands must have the same shape, got {fmt(lhs)} and {fmt(rhs)}")
    return lhs


def unary(input: Shape) -> Shape:
    """Unary elementwise ops (relu, exp, log, not, convert_to, copy, ...): the result has the input's shape."""
    return input


def softmax(input: Shape) -> Shape:
    """Softmax over the last dim of a tensor of any rank >= 1."""
    require(len(input) >= 1, lambda: f"input must have rank >= 1, got {fmt(input)}")
    return input


# The largest matrices glow.det takes: the generated code eliminates on a stack copy (512 KiB of f64).
DET_MAX_ORDER = 256


def det(input: Shape) -> Shape:
    """The determinants of the square matrices in the last two dims: [*, N, N] -> [*]."""
    require(len(input) >= 2 and input[-1] == input[-2], lambda: f"input must be [*, N, N], got {fmt(input)}")
    return input[:-2]


def matmul(lhs: Shape, rhs: Shape) -> Shape:
    """[M, K] x [K, N] -> [M, N]."""
    rank(lhs, 2, "lhs")
    rank(rhs, 2, "rhs")
    require(lhs[1] == rhs[0], lambda: f"inner dims must agree: lhs {fmt(lhs)}, rhs {fmt(rhs)}")
    return (lhs[0], rhs[1])


def fully_connected(input: Shape, weights: Shape, bias: Shape) -> Shape:
    """[N, K] x [K, M] + [M] -> [N, M]."""
    rank(input, 2, "input")
    rank(weights, 2, "weights")
    require(
        input[1] == weights[0],
        lambda: f"input dim 1 must equal weights dim 0: input {fmt(input)}, weights {fmt(weights)}"
    )
    require(
        bias == (weights[1],), lambda: f"bias must have shape [{weights[1]}] (weights dim 1), got {fmt(bias)}"
    )
    return (input[0], weights[1])


def fused_matmul(lhs: Shape, rhs: Shape, bias: Shape) -> Shape:
    """activation([M, K] x [K, N] + bias [N]) -> [M, N]: matmul's rules, one bias element per column."""
    result = matmul(lhs, rhs)
    require(bias == (result[1],), lambda: f"bias must have shape [{result[1]}] (rhs dim 1), got {fmt(bias)}")
    return result


def batched_add(batch: Shape, slice: Shape) -> Shape:
    """batch[b, ...] + slice[...]: the slice has the shape of one batch element."""
    require(len(batch) >= 1, lambda: f"batch must have rank >= 1, got {fmt(batch)}")
    require(
        slice == batch[1:],
        lambda: f"slice shape must equal batch shape without dim 0: batch {fmt(batch)}, slice {fmt(slice)}",
    )
    return batch


def _window_lengths(
    kernels: Sequence[int], strides: Sequence[int], pads: Sequence[int], dilation: Sequence[int]
) -> None:
    """A 2-D window's attributes: two kernels, strides and dilations, four pads."""
    _length(kernels, 2, "kernels")
    _length(strides, 2, "strides")
    _length(pads, 4, "pads [top, left, bottom, right]")
    _length(dilation, 2, "dilation")


def _window_steps(strides: Sequence[int], pads: Sequence[int], dilation: Sequence[int]) -> None:
    """A window moves by strides >= 1 over an input padded by pads >= 0, its taps dilation >= 1 apart."""
    require(all(s >= 1 for s in strides), lambda: f"strides must be >= 1, got {fmt(strides)}")
    require(all(p >= 0 for p in pads), lambda: f"pads must be >= 0, got {fmt(pads)}")
    require(all(d >= 1 for d in dilation), lambda: f"dilation must be >= 1, got {fmt(dilation)}")


def window_dims(
    input: Shape, kernels: Sequence[int], strides: Sequence[int], pads: Sequence[int], dilation: Sequence[int]
) -> tuple[int, int]:
    """Output H and W of a 2-D window sweep over NCHW `input`; shared by convolution and pooling."""
    _window_lengths(kernels, strides, pads, dilation)
    require(all(k >= 1 for k in kernels), lambda: f"kernels must be >= 1, got {fmt(kernels)}")
    _window_steps(strides, pads, dilation)
    top, left, bottom, right = pads
    out = []
    for size, pad, k, s, d in (
        (input[2], top + bottom, kernels[0], strides[0], dilation[0]),
        (input[3], left + right, kernels[1], strides[1], dilation[1]),
    ):
        extent = d * (k - 1) + 1
        require(
            size + pad >= extent,
            lambda: f"the (dilated) kernel {fmt(kernels)} must fit the padded input for an output dim >= 1: "
            f"input {fmt(input)}, pads {fmt(pads)}, dilation {fmt(dilation)}",
        )
        out.append((size + pad - extent) // s + 1)
    return out[0], out[1]


class ConvAttrs(TypedDict):
    """The attributes a convolution's shape rule takes (convolution, conv_transpose, the CPU backend's NHWC
    convolution), as keywords."""

    kernels: Sequence[int]
    strides: Sequence[int]
    pads: Sequence[int]
    dilation: Sequence[int]
    group: int


class ConvLayout(NamedTuple):
    """Where a convolution's input and filter keep their dims, and how its messages name the filter's."""

    input: str  # the input's dims in order: "NCHW"
    filter: str  # the filter's dims in order: "OIHW", with I = C / group
    filter_name: str  # the filter's layout as messages write it
    filter_in: str  # the filter's I dim as messages write it


NCHW_OIHW = ConvLayout("NCHW", "OIHW", "OIHW", "I")


def grouped_convolution(
    input: Shape, filter: Shape, bias: Shape, layout: ConvLayout, **attrs: Unpack[ConvAttrs]
) -> Shape:
    """Convolution's rules in any `layout`: input [N, C, H, W] and filter [O, C / group, KH, KW] in its
    order, bias [O] -> [N, O, OH, OW] (NCHW whatever the layout: a layout's rule reorders it)."""
    kernels, group = attrs["kernels"], attrs["group"]
    rank(input, 4, f"input ({layout.input})")
    rank(filter, 4, f"filter ({layout.filter_name})")
    require(group >= 1, lambda: f"group must be >= 1, got {group}")
    n, c, h, w = (input[layout.input.index(d)] for d in "NCHW")
    o, i, kh, kw = (filter[layout.filter.index(d)] for d in "OIHW")
    require(
        c == i * group,
        lambda: f"input channels must equal filter {layout.filter_in} * group: input {fmt(input)}, "
                f"filter {fmt(filter)}, group {group}",
    )
    require(o % group == 0, lambda: f"group {group} must divide the filter's output channels: filter {fmt(filter)}")
    o_dim = layout.filter.index("O")
    require(bias == (o,), lambda: f"bias must have shape [{o}] (filter dim {o_dim}), got {fmt(bias)}")
    require(
        tuple(kernels) == (kh, kw), lambda: f"kernels {fmt(kernels)} must equal the filter's HW: filter {fmt(filter)}"
    )
    oh, ow = window_dims((n, c, h, w), kernels, attrs["strides"], attrs["pads"], attrs["dilation"])
    return (n, o, oh, ow)


def convolution(input: Shape, filter: Shape, bias: Shape, **attrs: Unpack[ConvAttrs]) -> Shape:
    """NCHW input, OIHW filter with I = C / group, bias [O] -> [N, O, OH, OW]."""
    return grouped_convolution(input, filter, bias, NCHW_OIHW, **attrs)


def pool(input: Shape, *, kernels: Sequence[int], strides: Sequence[int], pads: Sequence[int]) -> Shape:
    """max_pool / avg_pool over NCHW input -> [N, C, OH, OW].

    Pads must be smaller than the kernel (ONNX's rule), so every window holds at least one real element:
    padding then never wins a max and no average divides by zero.
    """
    rank(input, 4, "input (NCHW)")
    oh, ow = window_dims(input, kernels, strides, pads, (1, 1))
    top, left, bottom, right = pads
    require(
        max(top, bottom) < kernels[0] and max(left, right) < kernels[1],
        lambda: f"pads {fmt(pads)} must be smaller than kernels {fmt(kernels)}",
    )
    return (input[0], input[1], oh, ow)


def roi_align(
    input: Shape, rois: Shape, batch_indices: Shape, *, output_size: Sequence[int], sampling_ratio: int, mode: str
) -> Shape:
    """roi_align of NCHW input at R boxes [R, 4] of batch images [R] -> [R, C, OH, OW]."""
    rank(input, 4, "input (NCHW)")
    require(len(rois) == 2 and rois[1] == 4, lambda: f"rois must be [R, 4], got {fmt(rois)}")
    require(batch_indices == rois[:1],
            lambda: f"batch_indices {fmt(batch_indices)} must be [{rois[0]}] for rois {fmt(rois)}")
    _length(output_size, 2, "output_size")
    require(all(d >= 1 for d in output_size), lambda: f"output_size {fmt(output_size)} must be >= 1")
    require(sampling_ratio >= 0, lambda: f"sampling_ratio {sampling_ratio} must be >= 0 (0: adaptive)")
    require(mode in ("avg", "max"), lambda: f"mode '{mode}' must be avg or max")
    return (rois[0], input[1], *output_size)


def activation(name: str, args: Sequence[float]) -> None:
    """A fused activation: "none" or one of the defined activations, with its number of arguments."""
    known = activations()
    require(
        name == "none" or name in known, lambda: f"activation '{name}' must be one of {', '.join(['none', *known])}"
    )
    count = len(known[name].args) if name in known else 0
    require(len(args) == count, lambda: f"activation '{name}' takes {count} activationArgs, got {len(args)}")
    if name == "clip":
        require(args[0] <= args[1], lambda: f"clip's activationArgs [min, max] must have min <= max, got {list(args)}")


def fused(attrs: dict[str, object], result: Shape) -> Shape:
    """A fused op's result shape is its unfused rule's; its `activation` and `activationArgs` must fit."""
    activation(str(attrs["activation"]), list(attrs["activationArgs"]))  # type: ignore[call-overload]
    return result


def pads_of(attrs: dict[str, object]) -> Sequence[int]:
    """An op's pads; instructions have none (the graph made padding explicit before IRGen)."""
    return attrs.get("pads", (0, 0, 0, 0))  # type: ignore[return-value]


def batch_normalization(
    input: Shape, scale: Shape, bias: Shape, mean: Shape, var: Shape, *, channel_idx: int, epsilon: float
) -> Shape:
    """Per-channel scale, bias, mean and var, each of shape [input[channel_idx]]."""
    require(
        0 <= channel_idx < len(input), lambda: f"channelIdx {channel_idx} must be a dim of input {fmt(input)}"
    )
    require(epsilon >= 0, lambda: f"epsilon must be >= 0, got {epsilon}")
    channels = input[channel_idx]
    for name, vector in (("scale", scale), ("bias", bias), ("mean", mean), ("var", var)):
        require(
            vector == (channels,),
            lambda: f"{name} must have shape [{channels}] (input dim {channel_idx}), got {fmt(vector)}; "
            f"input {fmt(input)}",
        )
    return input


def reshape(input: Shape, dims: Sequence[int]) -> Shape:
    """Same element count, new dims."""
    result = tensor(dims, "dims")
    require(
        math.prod(result) == math.prod(input),
        lambda: f"element counts must agree: input {fmt(input)} has {math.prod(input)}, dims {fmt(result)} has "
        f"{math.prod(result)}",
    )
    return result


def transpose(input: Shape, shuffle: Sequence[int]) -> Shape:
    """result.dims[i] = input.dims[shuffle[i]]; shuffle is a permutation of the input's dims."""
    require(
        sorted(shuffle) == list(range(len(input))),
        lambda: f"shuffle {fmt(shuffle)} must be a permutation of 0..{len(input) - 1} for input {fmt(input)}",
    )
    return tuple(input[s] for s in shuffle)


def concat(inputs: Sequence[Shape], dim: int) -> Shape:
    """Inputs of one rank whose dims agree except `dim`; the result's `dim` is their sum."""
    require(len(inputs) >= 1, "concat needs at least one input")
    first = inputs[0]
    require(0 <= dim < len(first), lambda: f"dim {dim} must be a dim of the inputs, got first input {fmt(first)}")
    for shape in inputs[1:]:
        require(
            len(shape) == len(first)
            and all(a == b for i, (a, b) in enumerate(zip(shape, first, strict=True)) if i != dim),
            lambda: f"inputs must agree in every dim except {dim}: {', '.join(fmt(s) for s in inputs)}",
        )
    return first[:dim] + (sum(s[dim] for s in inputs),) + first[dim + 1 :]


def slice(input: Shape, start: Sequence[int], sizes: Sequence[int]) -> Shape:
    """The block of shape `sizes` at offset `start`, within the input's bounds."""
    result = tensor(sizes, "slice sizes")
    _block_within(
        input, start, result,
        f"start {fmt(start)} and sizes {fmt(result)} must have the input's rank: input {fmt(input)}",
        f"block at start {fmt(start)} of sizes {fmt(result)} must lie within input {fmt(input)}",
    )
    return result


def insert_tensor(big: Shape, small: Shape, start: Sequence[int]) -> Shape:
    """`small` written into `big` at `start`, within `big`'s bounds; the result has `big`'s shape."""
    _block_within(
        big, start, small,
        f"start {fmt(start)}, big {fmt(big)} and small {fmt(small)} must have one rank",
        f"small {fmt(small)} at start {fmt(start)} must lie within big {fmt(big)}",
    )
    return big


def _block_within(outer: Shape, start: Sequence[int], sizes: Shape, rank_message: str, bounds_message: str) -> None:
    """The block of shape `sizes` at offset `start` lies within `outer`, all three of one rank (slice and
    insert_tensor's rule; each names its operands in its own messages)."""
    require(len(start) == len(outer) == len(sizes), rank_message)
    require(all(s >= 0 and s + n <= d for s, n, d in zip(start, sizes, outer, strict=True)), bounds_message)


def broadcast(input: Shape, target: Sequence[int], axis: int) -> Shape:
    """Input dims aligned at `axis` of the target; each is 1 or equal to the target dim it meets."""
    result = tensor(target, "target shape")
    require(
        0 <= axis and axis + len(input) <= len(result),
        lambda: f"input {fmt(input)} aligned at axis {axis} must fit within target {fmt(result)}",
    )
    require(
        all(d == 1 or d == result[axis + i] for i, d in enumerate(input)),
        lambda: f"input {fmt(input)} aligned at axis {axis} must have dims 1 or equal to target {fmt(result)}",
    )
    return result


def select(cond: Shape, lhs: Shape, rhs: Shape) -> Shape:
    """`cond ? lhs : rhs`: the condition and both choices have one shape."""
    require(
        cond == lhs == rhs,
        lambda: f"cond, lhs and rhs must have the same shape, got {fmt(cond)}, {fmt(lhs)} and {fmt(rhs)}",
    )
    return lhs


def gather(data: Shape, indices: Shape, axis: int) -> Shape:
    """numpy.take along `axis`: data[:axis] + indices + data[axis+1:]."""
    require(len(data) >= 1, lambda: f"data must have rank >= 1, got {fmt(data)}")
    require(0 <= axis < len(data), lambda: f"axis {axis} must be a dim of data {fmt(data)}")
    return data[:axis] + indices + data[axis + 1 :]


def gather_elements(data: Shape, indices: Shape, axis: int) -> Shape:
    """numpy.take_along_axis: the result has the indices' shape, which fits in data's except along `axis`."""
    require(len(data) >= 1, lambda: f"data must have rank >= 1, got {fmt(data)}")
    require(0 <= axis < len(data), lambda: f"axis {axis} must be a dim of data {fmt(data)}")
    require(len(indices) == len(data), lambda: f"indices {fmt(indices)} must have data's rank: data {fmt(data)}")
    require(
        all(i <= d for a, (i, d) in enumerate(zip(indices, data)) if a != axis),
        lambda: f"indices {fmt(indices)} must not exceed data {fmt(data)} off axis {axis}",
    )
    return indices


def _nd_depth(data: Shape, indices: Shape, batch_dims: int) -> int:
    """The index depth k of a gather_nd / scatter_nd (the indices' last dim), checked against data."""
    require(len(data) >= 1 and len(indices) >= 1, lambda: f"data {fmt(data)} and indices {fmt(indices)} need rank >= 1")
    require(
        0 <= batch_dims < min(len(data), len(indices)),
        lambda: f"batch_dims {batch_dims} must be below the ranks of data {fmt(data)} and indices {fmt(indices)}",
    )
    require(
        data[:batch_dims] == indices[:batch_dims],
        lambda: f"the first {batch_dims} dims of data {fmt(data)} and indices {fmt(indices)} must agree",
    )
    k = indices[-1]
    require(
        1 <= k <= len(data) - batch_dims,
        lambda: f"the indices' last dim {k} must be in [1, {len(data) - batch_dims}]: data {fmt(data)}, "
        f"indices {fmt(indices)}, batch_dims {batch_dims}",
    )
    return k


def gather_nd(data: Shape, indices: Shape, batch_dims: int) -> Shape:
    """ONNX GatherND: indices[..., k] pick slices data[b..., i0, ..., ik-1]: indices[:-1] + data[b+k:]."""
    k = _nd_depth(data, indices, batch_dims)
    return indices[:-1] + data[batch_dims + k :]


SCATTER_REDUCTIONS = ("none", "add", "mul", "max", "min")


def _reduction(reduction: str) -> None:
    require(reduction in SCATTER_REDUCTIONS,
            lambda: f"reduction '{reduction}' must be one of {', '.join(SCATTER_REDUCTIONS)}")


def scatter_elements(data: Shape, indices: Shape, updates: Shape, axis: int, reduction: str) -> Shape:
    """ONNX ScatterElements: updates have the indices' shape, which fits in data's except along `axis`."""
    _reduction(reduction)
    gather_elements(data, indices, axis)
    require(updates == indices, lambda: f"updates {fmt(updates)} must have the indices' shape {fmt(indices)}")
    return data


def scatter_nd(data: Shape, indices: Shape, updates: Shape, reduction: str) -> Shape:
    """ONNX ScatterND: updates are indices[:-1] + data[k:], k the indices' last dim."""
    _reduction(reduction)
    k = _nd_depth(data, indices, 0)
    expected = indices[:-1] + data[k:]
    require(
        updates == expected,
        lambda: f"updates {fmt(updates)} must be indices[:-1] + data[k:] = {fmt(expected)}: data {fmt(data)}, "
        f"indices {fmt(indices)}",
    )
    return data


def top_k(input: Shape, axis: int, k: int) -> Shape:
    """The k best along `axis`: that dim becomes k, at most its size."""
    require(0 <= axis < len(input), lambda: f"axis {axis} must be a dim of input {fmt(input)}")
    require(1 <= k <= input[axis], lambda: f"k {k} must be in [1, {input[axis]}] for axis {axis} of input {fmt(input)}")
    return input[:axis] + (k,) + input[axis + 1 :]


def cumsum(input: Shape, axis: int) -> Shape:
    """Running sums along `axis`: the input's shape."""
    require(0 <= axis < len(input), lambda: f"axis {axis} must be a dim of input {fmt(input)}")
    return input


def batched_reduce(input: Shape, axes: Sequence[int]) -> Shape:
    """A reduction over `axes` (sorted, unique dims of the input), which the result drops.

    No axes reduce nothing: the result is the input (ONNX's "reduce all" on empty axes is the importer's to
    spell out).
    """
    require(
        all(a < b for a, b in zip(axes, axes[1:])), lambda: f"axes {fmt(axes)} must be sorted and unique"
    )
    require(
        all(0 <= a < len(input) for a in axes), lambda: f"axes {fmt(axes)} must be dims of input {fmt(input)}"
    )
    return tuple(d for i, d in enumerate(input) if i not in axes)


def arg_reduce(input: Shape, axis: int, keep_dims: bool) -> Shape:
    """arg_max / arg_min along `axis`: that dim becomes 1 with `keep_dims`, else it is dropped."""
    require(0 <= axis < len(input), lambda: f"axis {axis} must be a dim of input {fmt(input)}")
    kept = (1,) if keep_dims else ()
    return input[:axis] + kept + input[axis + 1 :]


def batch_matmul(lhs: Shape, rhs: Shape) -> Shape:
    """[B, M, K] x [B, K, N] -> [B, M, N]."""
    rank(lhs, 3, "lhs")
    rank(rhs, 3, "rhs")
    require(lhs[0] == rhs[0], lambda: f"batch dims must agree: lhs {fmt(lhs)}, rhs {fmt(rhs)}")
    require(lhs[2] == rhs[1], lambda: f"inner dims must agree: lhs {fmt(lhs)}, rhs {fmt(rhs)}")
    return (lhs[0], lhs[1], rhs[2])


def conv_transpose(input: Shape, filter: Shape, bias: Shape, **attrs: Unpack[ConvAttrs]) -> Shape:
    """NCHW input, filter [C, O/group, KH, KW], bias [O] -> [N, O, OH, OW].

    Each spatial output dim is (in - 1) * stride - pad_begin - pad_end + dilation * (k - 1) + 1: the full
    scatter of every input element through the kernel, cropped by the pads.
    """
    kernels, strides, pads, dilation, group = (
        attrs["kernels"], attrs["strides"], attrs["pads"], attrs["dilation"], attrs["group"]
    )
    rank(input, 4, "input (NCHW)")
    rank(filter, 4, "filter (C, O/group, KH, KW)")
    _window_lengths(kernels, strides, pads, dilation)
    require(group >= 1, lambda: f"group must be >= 1, got {group}")
    n, c = input[0], input[1]
    require(
        filter[0] == c, lambda: f"filter dim 0 must equal input channels: input {fmt(input)}, filter {fmt(filter)}"
    )
    require(c % group == 0, lambda: f"group {group} must divide the input channels: input {fmt(input)}")
    o = filter[1] * group
    require(bias == (o,), lambda: f"bias must have shape [{o}] (filter dim 1 * group), got {fmt(bias)}")
    require(
        tuple(kernels) == tuple(filter[2:]),
        lambda: f"kernels {fmt(kernels)} must equal the filter's HW: filter {fmt(filter)}",
    )
    _window_steps(strides, pads, dilation)
    full = [(size - 1) * s + d * (k - 1) + 1 for size, s, d, k in zip(input[2:], strides, dilation, kernels)]
    top, left, bottom, right = pads
    out = (full[0] - top - bottom, full[1] - left - right)
    require(
        min(out) >= 1,
        lambda: f"pads {fmt(pads)} must crop the full output {fmt(full)} to dims >= 1: input {fmt(input)}, "
        f"kernels {fmt(kernels)}, strides {fmt(strides)}, dilation {fmt(dilation)}",
    )
    return (n, o, *out)
