"""The numpy reference interpreter for `glow` dialect modules: the oracle every backend is tested against.

`interpret(module, feeds)` runs a model function op by op; `evaluate(op, operands)` computes one `glow` op
(also the constant folder's engine). The semantics are written as plainly as numpy allows, not for speed:
NCHW/OIHW convolution with groups, strides, dilation and pads; pooling where padding never wins a max;
batch normalization in inference form; softmax over the last dim. Results are float32; reductions
accumulate in float64 where that makes the oracle more accurate than the code it checks.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.errors import UnsupportedError

Array = np.ndarray

_MLIR_TO_NUMPY = {mlir: dtype for dtype, mlir in ops.NUMPY_TO_MLIR.items()}


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
    """The float32 result of one `glow` op applied to numpy operands."""
    op = op.operation if isinstance(op, ir.OpView) else op
    kind = op.name.removeprefix(ops.GLOW)
    if not op.name.startswith(ops.GLOW) or kind not in _EVALUATORS:
        raise UnsupportedError(f"{ops.location_text(op)}: the interpreter cannot run '{op.name}'")
    # IEEE semantics, as compiled code has them: 1/0 is inf and sqrt(-1) is nan, without numpy warnings.
    with np.errstate(all="ignore"):
        result = _EVALUATORS[kind](op, [np.asarray(a, dtype=np.float32) for a in operands])
    return np.ascontiguousarray(result, dtype=np.float32)


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
    dtype = _MLIR_TO_NUMPY.get(str(ops.element_type(type_)))
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
    return np.array(attr).reshape(ops.shape(op.results[0]))


def _splat(op: ir.Operation, _: list[Array]) -> Array:
    return np.full(ops.shape(op.results[0]), ops.floating(op, "value"), np.float32)


def _fully_connected(_: ir.Operation, a: list[Array]) -> Array:
    x, w, b = a
    return x.astype(np.float64) @ w.astype(np.float64) + b


def _matmul(_: ir.Operation, a: list[Array]) -> Array:
    return a[0].astype(np.float64) @ a[1].astype(np.float64)


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


def _binary(fn: Callable[[Array, Array], Array]) -> Callable[[ir.Operation, list[Array]], Array]:
    return lambda _, a: fn(a[0], a[1])


def _unary(fn: Callable[[Array], Array]) -> Callable[[ir.Operation, list[Array]], Array]:
    return lambda _, a: fn(a[0])


_EVALUATORS: dict[str, Callable[[ir.Operation, list[Array]], Array]] = {
    "constant": _constant,
    "splat": _splat,
    "fully_connected": _fully_connected,
    "matmul": _matmul,
    "batched_add": _binary(np.add),
    "add": _binary(np.add),
    "sub": _binary(np.subtract),
    "mul": _binary(np.multiply),
    "div": _binary(np.divide),
    "max": _binary(np.maximum),
    "min": _binary(np.minimum),
    "relu": _unary(lambda x: np.maximum(x, np.float32(0))),
    "sigmoid": _sigmoid,
    "tanh": _unary(np.tanh),
    "exp": _unary(np.exp),
    "sqrt": _unary(np.sqrt),
    "softmax": _softmax,
    "convolution": _convolution,
    "max_pool": _max_pool,
    "avg_pool": _avg_pool,
    "batch_normalization": _batch_normalization,
    "reshape": lambda op, a: a[0].reshape(ops.ints(op, "dims")),
    "transpose": lambda op, a: a[0].transpose(ops.ints(op, "shuffle")),
    "concat": _concat,
    "slice": _slice,
    "insert_tensor": _insert_tensor,
    "broadcast": _broadcast,
}
