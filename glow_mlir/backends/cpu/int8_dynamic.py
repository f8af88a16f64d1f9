"""glow-cpu-int8's dynamically quantized products (int8_rewrite.py's module docstring): an activation quantized at
run time (onnxruntime's DynamicQuantizeLinear, or quantize(dynamic=True)), its zero point and scale rank-0
values, times int8 weights. A matmul becomes cpu_int8_matmul_dynamic, which forms the correction and multiplier
from them in its epilogue; a convolution (quantize_dynamic of a CNN: ConvInteger) becomes cpu_int8_conv_nhwc,
its correction, multiplier and padding canvas computed from them by the ops before it."""

from __future__ import annotations

import dataclasses

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.backends.cpu.int8_match import (
    channels,
    exact_weights,
    other,
    packed,
    padded,
    reshaped,
    runtime_scalar,
    sole_user,
    through,
)
from glow_mlir.backends.cpu.int8_ops import BYTES, colsum, gemm_conv, offset, output_attributes, pack_weights
from glow_mlir.backends.cpu.ops import TO_NCHW
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.graph.sink_transpose import transpose_to


@dataclasses.dataclass(frozen=True)
class _Dynamic:
    """A matched dynamically quantized product: activation q (as the matmul reads it, [M, K]), its run-time
    zero point (i32) and scale (f32), both rank-0, the integer weights [K, N] (int8_match.exact_weights), the
    constant per-channel factor of the scale and the bias, and the op whose result the rewrite replaces."""

    q: ir.Value
    zero: ir.Value
    scale: ir.Value
    weights: np.ndarray
    multiplier: np.ndarray
    bias: np.ndarray
    last: ir.Operation


def _dynamic_scale(value: ir.Value, n: int, axis: int = -1) -> tuple[ir.Value, np.ndarray] | None:
    """(s, m) when `value` broadcasts s * m with s a run-time rank-0 f32 and m a constant scalar or [n]
    vector (onnxruntime's Mul(input scale, weight scale)), or s alone (m 1); an [n] product must be broadcast
    along the result's channels (`axis`: the last dim of a product, 1 of a convolution)."""
    below = through(value, "glow.broadcast")
    if ops.shape(below) not in ((), (n,)):
        return None
    if ops.shape(below) == (n,) and n > 1:
        top = g.producer(value)
        channel_axis = axis % len(ops.shape(value))
        if top is None or top.operands[0] != below or ir.IntegerAttr(top.attributes["axis"]).value != channel_axis:
            return None
    op = g.producer(below)
    if op is None or op.name != "glow.mul":
        alone = runtime_scalar(value)
        return None if alone is None or g.dtype(alone) != np.float32 else (alone, np.ones(n, np.float32))
    for runtime, constant in ((op.operands[0], op.operands[1]), (op.operands[1], op.operands[0])):
        s, m = runtime_scalar(runtime), g.constant_array(through(constant, "glow.broadcast"))
        if s is not None and g.dtype(s) == np.float32 and m is not None and m.size in (1, n) and m.dtype == np.float32:
            return s, np.broadcast_to(m.reshape(-1), (n,)).astype(np.float32)
    return None


def _activation(value: ir.Value) -> tuple[ir.Value, ir.Value] | None:
    """(q, zero) when `value` is sub(convert_to(q : i8 or ui8), broadcast(zero)) with a run-time rank-0 zero
    point (the product's activation as the ONNX importer centres it)."""
    centred = g.producer(value)
    if centred is None or centred.name != "glow.sub":
        return None
    widen, zero = g.producer(centred.operands[0]), runtime_scalar(centred.operands[1])
    if widen is None or widen.name != "glow.convert_to" or g.dtype(widen.operands[0]) not in BYTES or zero is None:
        return None
    return widen.operands[0], zero


def _dequantization(current: ir.Value, n: int, axis: int) -> tuple[ir.Operation, ir.Value, np.ndarray,
                                                                     np.ndarray] | None:  # fmt: skip
    """(last op, s, m, bias) of mul(current, broadcast(s [* m])) -> [add a per-channel constant] after the f32
    product `current`, its `n` channels along `axis` (`_dynamic_scale`); bias 0 without the add."""
    scale = sole_user(current, "glow.mul")
    found = None if scale is None else _dynamic_scale(other(scale, current), n, axis)
    if found is None:
        return None
    last, bias = scale, np.zeros(n, np.float32)
    add = sole_user(scale.results[0], "glow.add")
    if add is not None and (added := channels(other(add, scale.results[0]), axis)) is not None:
        last, bias = add, added
    return last, found[0], found[1], bias


def _from_dynamic(op: ir.Operation) -> _Dynamic | None:
    """A dynamically quantized product at i32 glow.matmul `op` (DynamicQuantizeLinear + MatMulInteger as the
    ONNX importer writes them, or quantize(dynamic=True)): matmul(reshape*(sub(convert_to(q : i8 or ui8 ->
    i32), broadcast(zero : i32, rank 0))), W int8 constant) -> reshape* -> convert_to f32 -> mul(., broadcast(
    s [* m])) -> [add a per-channel constant]."""
    activation = _activation(through(op.operands[0], "glow.reshape"))
    w = exact_weights(op.operands[1], 1)
    if activation is None or w is None or g.dtype(activation[1]) != np.int32:
        return None
    current = op.results[0]
    while (reshape := sole_user(current, "glow.reshape")) is not None:
        current = reshape.results[0]
    to_float = sole_user(current, "glow.convert_to")
    if to_float is None or g.dtype(to_float.results[0]) != np.float32:
        return None
    current = to_float.results[0]
    found = _dequantization(current, w.shape[1], len(ops.shape(current)) - 1)
    if found is None:
        return None
    last, scale, multiplier, bias = found
    return _Dynamic(*activation, scale, w, multiplier, bias, last)


def int8_dynamic_matmul(op: ir.Operation) -> ir.Value | None:
    """The cpu_int8_matmul_dynamic replacing the dynamically quantized product at i32 glow.matmul `op`
    (`_from_dynamic`), reshaped back to the replaced result's shape; None when there is none."""
    found = _from_dynamic(op)
    if found is None:
        return None
    m, n = ops.shape(op.results[0])
    with ir.InsertionPoint(found.last), found.last.location:
        q = found.q
        if ops.shape(q) != ops.shape(op.operands[0]):
            q = reshaped(q, ops.shape(op.operands[0]))
        vectors = [g.materialize(a, ops.tensor_type(a.shape, elt), prefer_splat=False) for a, elt in
                   ((colsum(found.weights), ir.IntegerType.get_signless(32)), (found.multiplier, ir.F32Type.get()),
                    (found.bias, ir.F32Type.get()))]  # fmt: skip
        operands = [q, packed(pack_weights(found.weights)), *vectors, found.zero, found.scale]
        result = ops.tensor_type([m, n], ir.F32Type.get())
        product = g.make("glow.cpu_int8_matmul_dynamic", operands, result, output_attributes())
        if ops.shape(found.last.results[0]) != (m, n):
            product = reshaped(product, ops.shape(found.last.results[0]))
    g.replace(found.last, product)
    return product


def _vector(value: ir.Value, n: int) -> ir.Value:
    """Rank-0 `value` broadcast to [n], at the insertion point."""
    return g.make("glow.broadcast", [value], ops.tensor_type([n], ops.element_type(value)), {"axis": ops.i64(1)})


def int8_dynamic_convolution(op: ir.Operation) -> ir.Value | None:
    """The cpu_int8_conv_nhwc replacing a dynamically quantized glow.convolution `op` (DynamicQuantizeLinear +
    ConvInteger as the ONNX importer writes them: convolution(sub(convert_to(q : i8 or ui8), broadcast(zero,
    rank 0)), W int8 constant, zero bias) -> convert_to i32 -> convert_to f32 -> mul(., broadcast(s [* m])) ->
    [add a per-channel constant]) with group 1 (dilated or not); None when there is none. The zero point's
    correction (offset + z) x colsum(W) and the multiplier s x m are [O] vectors computed at run time, and the
    padding a canvas of z."""
    if ir.IntegerAttr(op.attributes["group"]).value != 1:
        return None
    activation = _activation(op.operands[0])
    if activation is None:
        return None
    q, zero = activation
    # The zero point as q's own 8-bit value (the importer widens it as it widens q), for the canvas.
    narrow = g.producer(zero)
    if narrow is None or narrow.name != "glow.convert_to" or g.dtype(narrow.operands[0]) != g.dtype(q):
        return None
    w = exact_weights(op.operands[1], 0)
    bias = g.constant_array(op.operands[2]) if len(op.operands) > 2 else None
    if w is None or (bias is not None and bias.any()):
        return None
    current = op.results[0]
    for target in (np.int32, np.float32):
        step = sole_user(current, "glow.convert_to")
        if step is not None and g.dtype(step.results[0]) == target:
            current = step.results[0]
    if g.dtype(current) != np.float32:
        return None
    o = w.shape[0]
    found = _dequantization(current, o, 1)
    if found is None:
        return None
    last, scale, factor, added = found
    gemm, attrs = gemm_conv(op, w)
    with ir.InsertionPoint(last), last.location:
        i32, f32 = ir.IntegerType.get_signless(32), ir.F32Type.get()

        def constant(values: np.ndarray, element: ir.Type) -> ir.Value:
            return g.materialize(values, ops.tensor_type([o], element), prefer_splat=False)

        def times(vector: ir.Value, values: np.ndarray, element: ir.Type) -> ir.Value:
            return g.make("glow.mul", [vector, constant(values, element)], ops.tensor_type([o], element))

        sums = colsum(gemm).astype(np.int64)
        point = _vector(g.make("glow.convert_to", [narrow.operands[0]], ops.tensor_type([], i32)), o)
        correction = times(point, sums.astype(np.int32), i32)
        if offset(g.dtype(q)):
            shift = constant((offset(g.dtype(q)) * sums).astype(np.int32), i32)
            correction = g.make("glow.add", [correction, shift], ops.tensor_type([o], i32))
        multiplier = times(_vector(scale, o), factor, f32)
        x = padded(q, narrow.operands[0], op)
        n, _, oh, ow = ops.shape(op.results[0])
        result = ops.tensor_type([n, oh, ow, gemm.shape[1]], f32)
        operands = [x, packed(pack_weights(gemm)), correction, multiplier, constant(added, f32)]
        product = transpose_to(g.make("glow.cpu_int8_conv_nhwc", operands, result, attrs), TO_NCHW)
    g.replace(last, product)
    return product
