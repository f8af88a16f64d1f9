"""The numpy reference interpreter for `glow` dialect modules: the oracle every backend is tested against.

`interpret(module, feeds)` runs a model function op by op; `evaluate(op, operands)` computes one `glow` op
(also the constant folder's engine). The semantics are written as plainly as numpy allows, not for speed:
NCHW/OIHW convolution with groups, strides, dilation and pads; transposed convolution as the scatter of every
input element through the kernel; pooling where padding never wins a max; batch normalization in inference
form; softmax over the last dim.

Every result has its op's element type (docs/ARCHITECTURE.md) and integers behave as compiled code's do:
they wrap on overflow and divide truncating toward zero (C, ONNX), not flooring as numpy does. Float sums,
products and transcendental functions are computed in float64 and rounded once to the result type, so the
oracle is at least as accurate as the code it checks.
"""

from __future__ import annotations

from collections.abc import Callable

import math

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.errors import UnsupportedError

Array = np.ndarray


def interpret(module: ir.Module, feeds: dict[str, Array], function: str | None = None) -> dict[str, Array]:
    """Runs the module's model function on `feeds` (by input glow.name); returns its outputs by glow.name.

    `function` names the func.func to run when the module holds more than one.
    """
    fn = _function(module, function)
    block = fn.regions[0].blocks[0]
    input_names = _names(fn, "arg_attrs", len(block.arguments), "input")
    env: dict[ir.Value, Array] = {}
    for arg, name in zip(block.arguments, input_names, strict=True):
        env[arg] = _checked_feed(name, arg.type, feeds)
    extra = sorted(set(feeds) - set(input_names))
    if extra:
        raise ValueError(f"unknown inputs {extra}; the model's inputs are {input_names}")
    for op in block.operations:
        op = op.operation
        if op.name == "func.return":
            output_names = _names(fn, "res_attrs", len(op.operands), "output")
            return {name: env[v] for name, v in zip(output_names, op.operands, strict=True)}
        result = evaluate(op, [env[v] for v in op.operands])
        expected = ops.shape(op.results[0])
        if result.shape != expected:
            raise ValueError(
                f"{ops.location_text(op)}: '{op.name}' computed shape {list(result.shape)} but its type says "
                f"{list(expected)} (run glow-verify)"
            )
        env[op.results[0]] = result
    raise ValueError(f"function '{_symbol(fn)}' has no func.return")


def evaluate(op: ir.Operation | ir.OpView, operands: list[Array]) -> Array:
    """The result of one `glow` op applied to numpy operands, in the op's result element type.

    Operands are taken as the element types the op declares for them.
    """
    op = op.operation if isinstance(op, ir.OpView) else op
    kind = op.name.removeprefix(ops.GLOW)
    if not op.name.startswith(ops.GLOW) or kind not in _EVALUATORS:
        raise UnsupportedError(f"{ops.location_text(op)}: the interpreter cannot run '{op.name}'")
    typed = [np.asarray(a, dtype=_dtype(v)) for a, v in zip(operands, op.operands, strict=True)]
    # IEEE semantics, as compiled code has them: 1/0 is inf and sqrt(-1) is nan, without numpy warnings;
    # integers wrap silently as machine integers do.
    with np.errstate(all="ignore"):
        result = _EVALUATORS[kind](op, typed)
        # Not ascontiguousarray: it would turn a rank-0 result (a full reduction) into shape [1].
        return np.asarray(result, dtype=_dtype(op.results[0]), order="C")


def _dtype(value: ir.Value) -> np.dtype:
    return ops.numpy_dtype(ops.element_type(value))


def _function(module: ir.Module, name: str | None) -> ir.Operation:
    fns = ops.functions(module)
    if name is not None:
        fns = [f for f in fns if _symbol(f) == name]
        if not fns:
            raise ValueError(f"the module has no function '{name}'")
    if len(fns) != 1:
        raise ValueError(f"expected one func.func, found {len(fns)}: name the one to run with function=")
    return fns[0]


def _symbol(fn: ir.Operation) -> str:
    return ir.StringAttr(fn.attributes["sym_name"]).value


def _names(fn: ir.Operation, attr: str, count: int, what: str) -> list[str]:
    """The glow.name of each argument or result; a model without them cannot be fed by name."""
    dicts = list(ir.ArrayAttr(fn.attributes[attr])) if attr in fn.attributes else [None] * count
    names = []
    for i, d in enumerate(dicts):
        if d is None or "glow.name" not in ir.DictAttr(d):
            raise ValueError(f"{what} {i} of function '{_symbol(fn)}' has no glow.name")
        names.append(ir.StringAttr(ir.DictAttr(d)["glow.name"]).value)
    return names


def _checked_feed(name: str, type_: ir.Type, feeds: dict[str, Array]) -> Array:
    if name not in feeds:
        raise ValueError(f"missing input '{name}'")
    given = np.asarray(feeds[name])
    shape = ops.shape(type_)
    dtype = ops.numpy_dtype(ops.element_type(type_))
    if given.shape != shape:
        raise ValueError(f"input '{name}': expected shape {list(shape)}, given {list(given.shape)}")
    if given.dtype != dtype:
        raise ValueError(f"input '{name}': expected dtype {dtype}, given {given.dtype}")
    return given


# One evaluator per glow op: (op, operands) -> result. Attributes are read from the op by name.


def _constant(op: ir.Operation, _: list[Array]) -> Array:
    attr = op.attributes["value"]
    if not isinstance(attr, ir.DenseElementsAttr):
        raise UnsupportedError(f"{ops.location_text(op)}: constant value {attr.type} is not a dense elements attr")
    shape = ops.shape(op.results[0])
    if attr.is_splat and isinstance(attr.get_splat_value(), ir.BoolAttr):
        # The bindings' buffer of an i1 splat holds one packed byte, which numpy would read as many bits.
        return np.full(shape, ir.BoolAttr(attr.get_splat_value()).value, np.bool_)
    return np.array(attr).reshape(shape)


def _splat(op: ir.Operation, _: list[Array]) -> Array:
    attr = op.attributes["value"]
    value = ir.FloatAttr(attr).value if isinstance(attr, ir.FloatAttr) else ir.IntegerAttr(attr).value
    return np.full(ops.shape(op.results[0]), value, _dtype(op.results[0]))


def _wide(x: Array) -> Array:
    """`x` in the type products and sums accumulate in: float64, or int64 (wrapping as narrower ints do)."""
    return x.astype(np.float64 if x.dtype.kind == "f" else np.int64)


def _fully_connected(_: ir.Operation, a: list[Array]) -> Array:
    x, w, b = a
    return _wide(x) @ _wide(w) + b


def _matmul(_: ir.Operation, a: list[Array]) -> Array:
    return _wide(a[0]) @ _wide(a[1])


def _softmax(_: ir.Operation, a: list[Array]) -> Array:
    x = a[0].astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _windows(x: Array, kernels: list[int], strides: list[int], dilation: list[int]) -> Array:
    """View [N, C, OH, OW, KH, KW] of every (dilated) window of an already padded NCHW array."""
    kh, kw = kernels
    sh, sw = strides
    dh, dw = dilation
    n, c, h, w = x.shape
    oh = (h - (dh * (kh - 1) + 1)) // sh + 1
    ow = (w - (dw * (kw - 1) + 1)) // sw + 1
    s = x.strides
    return np.lib.stride_tricks.as_strided(
        x, (n, c, oh, ow, kh, kw), (s[0], s[1], s[2] * sh, s[3] * sw, s[2] * dh, s[3] * dw), writeable=False
    )


def _pad(x: Array, pads: list[int], value: float) -> Array:
    top, left, bottom, right = pads
    return np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=value)


def _convolution(op: ir.Operation, a: list[Array]) -> Array:
    x, f, b = a
    group = ops.integer(op, "group")
    windows = _windows(
        _pad(x.astype(np.float64), ops.ints(op, "pads"), 0.0), ops.ints(op, "kernels"), ops.ints(op, "strides"),
        ops.ints(op, "dilation"),
    )
    n, c, oh, ow, kh, kw = windows.shape
    o = f.shape[0]
    # Split channels into groups: windows [N, G, C/G, OH, OW, KH, KW], filter [G, O/G, C/G, KH, KW].
    windows = windows.reshape(n, group, c // group, oh, ow, kh, kw)
    filters = f.astype(np.float64).reshape(group, o // group, c // group, kh, kw)
    out = np.einsum("ngcyxij,gocij->ngoyx", windows, filters).reshape(n, o, oh, ow)
    return out + b.reshape(1, o, 1, 1)


def _pool_windows(op: ir.Operation, x: Array, pad_value: float) -> Array:
    return _windows(
        _pad(x, ops.ints(op, "pads"), pad_value), ops.ints(op, "kernels"), ops.ints(op, "strides"), [1, 1]
    )


def _max_pool(op: ir.Operation, a: list[Array]) -> Array:
    # -inf padding never wins: glow-verify ensures every window holds a real element.
    return _pool_windows(op, a[0], -np.inf).max(axis=(4, 5))


def _avg_pool(op: ir.Operation, a: list[Array]) -> Array:
    sums = _pool_windows(op, a[0].astype(np.float64), 0.0).sum(axis=(4, 5))
    if ops.integer(op, "countIncludePads"):
        kh, kw = ops.ints(op, "kernels")
        return sums / (kh * kw)
    ones = np.ones((1, 1) + a[0].shape[2:])
    counts = _pool_windows(op, ones, 0.0).sum(axis=(4, 5))
    return sums / counts


def _activation(op: ir.Operation, y: Array) -> Array:
    """`y` through the fused activation that `op`'s `activation` and `activationArgs` attributes name."""
    name = ir.StringAttr(op.attributes["activation"]).value
    args = list(ir.DenseF32ArrayAttr(op.attributes["activationArgs"]))
    match name:
        case "none":
            return y
        case "relu":
            return np.maximum(y, 0.0)
        case "clip":
            return np.minimum(np.maximum(y, args[0]), args[1])
        case "sigmoid":
            return 1.0 / (1.0 + np.exp(-y))
        case "tanh":
            return np.tanh(y)
        case "leaky_relu":
            return np.where(y >= 0.0, y, args[0] * y)
    raise UnsupportedError(f"{ops.location_text(op)}: the interpreter has no activation '{name}'")


def _fused_convolution(op: ir.Operation, a: list[Array]) -> Array:
    return _activation(op, _convolution(op, a))


def _fused_matmul(op: ir.Operation, a: list[Array]) -> Array:
    lhs, rhs, bias = a
    return _activation(op, _wide(lhs) @ _wide(rhs) + bias)


# The CPU backend's NHWC ops are the NCHW ops with the layout moved: NHWC <-> NCHW and filter
# [KH, KW, I, O] -> OIHW around the NCHW evaluators, which read the same attributes.
_TO_NCHW = (0, 3, 1, 2)
_TO_NHWC = (0, 2, 3, 1)


def _cpu_conv_nhwc(op: ir.Operation, a: list[Array]) -> Array:
    x, f, b = a
    y = _convolution(op, [x.transpose(_TO_NCHW), f.transpose(3, 2, 0, 1), b])
    return _activation(op, y).transpose(_TO_NHWC)


def _nhwc_pool(pool: Callable[[ir.Operation, list[Array]], Array]) -> Callable[[ir.Operation, list[Array]], Array]:
    return lambda op, a: pool(op, [a[0].transpose(_TO_NCHW)]).transpose(_TO_NHWC)


def _batch_normalization(op: ir.Operation, a: list[Array]) -> Array:
    x, scale, bias, mean, var = (v.astype(np.float64) for v in a)
    axis = ops.integer(op, "channelIdx")
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    eps = ops.floating(op, "epsilon")
    scale, bias, mean, var = (v.reshape(shape) for v in (scale, bias, mean, var))
    return (x - mean) / np.sqrt(var + eps) * scale + bias


def _concat(op: ir.Operation, a: list[Array]) -> Array:
    return np.concatenate(a, axis=ops.integer(op, "dim"))


def _block(start: list[int], sizes: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple(slice(s, s + n) for s, n in zip(start, sizes, strict=True))


def _slice(op: ir.Operation, a: list[Array]) -> Array:
    return a[0][_block(ops.ints(op, "start"), ops.shape(op.results[0]))]


def _insert_tensor(op: ir.Operation, a: list[Array]) -> Array:
    big, small = a
    out = big.copy()
    out[_block(ops.ints(op, "start"), small.shape)] = small
    return out


def _broadcast(op: ir.Operation, a: list[Array]) -> Array:
    x = a[0]
    target = ops.shape(op.results[0])
    axis = ops.integer(op, "axis")
    aligned = (1,) * axis + x.shape + (1,) * (len(target) - axis - x.ndim)
    return np.broadcast_to(x.reshape(aligned), target)


def _sigmoid(_: ir.Operation, a: list[Array]) -> Array:
    x = a[0].astype(np.float64)
    return 1.0 / (1.0 + np.exp(-x))


def _divide(a: Array, b: Array) -> Array:
    """Float division, or integer division truncating toward zero (C, ONNX) where numpy would floor.

    An integer division by zero gives 0 here: compiled code leaves it undefined, so no test may rely on it.
    """
    if a.dtype.kind == "f":
        return np.divide(a, b)
    divisor = np.where(b == 0, np.ones_like(b), b)
    floored = a // divisor
    inexact_negative = (a % divisor != 0) & ((a < 0) != (divisor < 0))
    return np.where(b == 0, np.zeros_like(a), floored + inexact_negative.astype(a.dtype))


def _convert_to(op: ir.Operation, a: list[Array]) -> Array:
    x = a[0]
    target = _dtype(op.results[0])
    if target == np.bool_:
        return x != 0
    if target.kind == "i" and x.dtype.kind == "f":
        # numpy's cast truncates toward zero, as the convention asks; NaN and out-of-range values are
        # undefined in compiled code, so their result here is whatever numpy gives.
        return np.trunc(x).astype(target)
    return x.astype(target)


def _gather(op: ir.Operation, a: list[Array]) -> Array:
    data, indices = a
    axis = ops.integer(op, "axis")
    size = data.shape[axis]
    if np.any((indices < -size) | (indices >= size)):
        raise ValueError(
            f"{ops.location_text(op)}: glow.gather indices must lie in [{-size}, {size - 1}] for axis {axis} of "
            f"data {list(data.shape)}, got {indices.min()}..{indices.max()}"
        )
    # Negative indices count from the end, as numpy.take (and ONNX Gather) has them.
    return np.take(data, indices.astype(np.int64), axis=axis)


def _reduce(fn: Callable[..., Array], widen: bool) -> Callable[[ir.Operation, list[Array]], Array]:
    """A batched_reduce evaluator; sums and products accumulate in float64 / int64 (`widen`)."""

    def run(op: ir.Operation, a: list[Array]) -> Array:
        x = _wide(a[0]) if widen else a[0]
        return fn(x, axis=tuple(ops.ints(op, "axes")))

    return run


def _arg_reduce(fn: Callable[..., Array]) -> Callable[[ir.Operation, list[Array]], Array]:
    """arg_max / arg_min: numpy's argmax/argmin return the first occurrence, as the op defines."""

    def run(op: ir.Operation, a: list[Array]) -> Array:
        axis = ops.integer(op, "axis")
        index = fn(a[0], axis=axis).astype(np.int64)
        return np.expand_dims(index, axis) if ops.integer(op, "keepDims") else index

    return run


def _batch_matmul(_: ir.Operation, a: list[Array]) -> Array:
    return np.matmul(_wide(a[0]), _wide(a[1]))


def _conv_transpose(op: ir.Operation, a: list[Array]) -> Array:
    """Each input element scattered through its kernel into the full output, which the pads then crop."""
    x, f, b = (v.astype(np.float64) for v in a)
    group = ops.integer(op, "group")
    sh, sw = ops.ints(op, "strides")
    dh, dw = ops.ints(op, "dilation")
    top, left, bottom, right = ops.ints(op, "pads")
    n, c, h, w = x.shape
    _, o_per_group, kh, kw = f.shape
    full = np.zeros((n, group, o_per_group, (h - 1) * sh + dh * (kh - 1) + 1, (w - 1) * sw + dw * (kw - 1) + 1))
    xg = x.reshape(n, group, c // group, h, w)
    fg = f.reshape(group, c // group, o_per_group, kh, kw)
    for i in range(kh):
        for j in range(kw):
            # Tap (i, j) sends input (y, x) to output (y * stride + i * dilation, x * stride + j * dilation).
            tap = np.einsum("ngchw,gco->ngohw", xg, fg[:, :, :, i, j])
            full[:, :, :, i * dh : i * dh + (h - 1) * sh + 1 : sh, j * dw : j * dw + (w - 1) * sw + 1 : sw] += tap
    full = full.reshape(n, group * o_per_group, full.shape[3], full.shape[4])
    cropped = full[:, :, top : full.shape[2] - bottom, left : full.shape[3] - right]
    return cropped + b.reshape(1, -1, 1, 1)


def _binary(fn: Callable[[Array, Array], Array]) -> Callable[[ir.Operation, list[Array]], Array]:
    return lambda _, a: fn(a[0], a[1])


def _unary(fn: Callable[[Array], Array]) -> Callable[[ir.Operation, list[Array]], Array]:
    return lambda _, a: fn(a[0])


def _in_float64(fn: Callable[[Array], Array]) -> Callable[[ir.Operation, list[Array]], Array]:
    """A transcendental function computed in float64, rounded once to the result type by `evaluate`."""
    return lambda _, a: fn(a[0].astype(np.float64))


_EVALUATORS: dict[str, Callable[[ir.Operation, list[Array]], Array]] = {
    "constant": _constant,
    "splat": _splat,
    "fully_connected": _fully_connected,
    "matmul": _matmul,
    "batched_add": _binary(np.add),
    "add": _binary(np.add),
    "sub": _binary(np.subtract),
    "mul": _binary(np.multiply),
    "div": _binary(_divide),
    "max": _binary(np.maximum),
    "min": _binary(np.minimum),
    "relu": _unary(lambda x: np.maximum(x, np.zeros_like(x))),
    "sigmoid": _sigmoid,
    "tanh": _in_float64(np.tanh),
    "exp": _in_float64(np.exp),
    "sqrt": _unary(np.sqrt),
    "softmax": _softmax,
    "convolution": _convolution,
    "max_pool": _max_pool,
    "avg_pool": _avg_pool,
    "fused_convolution": _fused_convolution,
    "fused_matmul": _fused_matmul,
    "cpu_conv_nhwc": _cpu_conv_nhwc,
    "cpu_max_pool_nhwc": _nhwc_pool(_max_pool),
    "cpu_avg_pool_nhwc": _nhwc_pool(_avg_pool),
    "batch_normalization": _batch_normalization,
    "reshape": lambda op, a: a[0].reshape(ops.ints(op, "dims")),
    "transpose": lambda op, a: a[0].transpose(ops.ints(op, "shuffle")),
    "concat": _concat,
    "slice": _slice,
    "insert_tensor": _insert_tensor,
    "broadcast": _broadcast,
    "convert_to": _convert_to,
    "select": lambda _, a: np.where(a[0], a[1], a[2]),
    "cmp_eq": _binary(np.equal),
    "cmp_neq": _binary(np.not_equal),
    "cmp_lt": _binary(np.less),
    "cmp_lte": _binary(np.less_equal),
    "and": _binary(np.logical_and),
    "or": _binary(np.logical_or),
    "xor": _binary(np.logical_xor),
    "not": _unary(np.logical_not),
    "pow": _binary(lambda x, y: np.power(x.astype(np.float64), y.astype(np.float64))),
    "log": _in_float64(np.log),
    "abs": _unary(np.abs),
    "neg": _unary(np.negative),
    "floor": _unary(np.floor),
    "ceil": _unary(np.ceil),
    # numpy rounds halves to even, as ONNX's Round does.
    "round": _unary(np.round),
    "erf": _in_float64(np.vectorize(math.erf, otypes=[np.float64])),
    "sin": _in_float64(np.sin),
    "cos": _in_float64(np.cos),
    "gather": _gather,
    "batched_reduce_add": _reduce(np.sum, widen=True),
    "batched_reduce_prod": _reduce(np.prod, widen=True),
    "batched_reduce_max": _reduce(np.max, widen=False),
    "batched_reduce_min": _reduce(np.min, widen=False),
    "arg_max": _arg_reduce(np.argmax),
    "arg_min": _arg_reduce(np.argmin),
    "batch_matmul": _batch_matmul,
    "conv_transpose": _conv_transpose,
}
