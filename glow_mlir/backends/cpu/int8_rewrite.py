"""glow-cpu-int8: the CPU backend's pass that turns int8 products into its vpdpbusd ops (int8_ops.py), from the
two ways int8 products reach the graph (docs/QUANTIZATION.md):

- `quantization.quantize(...)` writes, for a matmul (fully connected layers become matmuls) or convolution
  with constant weights,

      q   = convert_to(clamp(round(x / s) + z) : f32 -> i8)                the activation, quantized
      acc = matmul(sub(convert_to(q : i8 -> i32), splat z), W : i32)       W constant, int8 values
            (convolution: the same centred integers in f32 or f64, zero bias)
      y   = add(mul(convert_to(acc : i32 -> f32), m), b)                   m, b constant per channel

  which the op reproduces bit for bit;
- an imported QDQ model (onnxruntime's quantize_static) writes `matmul / fully_connected / convolution(
  mul(sub(convert_to(q : i8 or ui8 -> f32), z), s), W, b)`, where the importer has folded the weights'
  DequantizeLinear into float constants: `integer_weights` recovers their integer steps (int8, or uint8 less a
  zero point) and per-channel scales exactly (or the product stays float), and the multiplier is s times those
  scales. The integer product then differs from the float one by float rounding only, which is how onnxruntime
  computes such a model too once it fuses it into QLinearConv / QLinearMatMul;
- dynamic quantization (onnxruntime's quantize_dynamic: DynamicQuantizeLinear + MatMulInteger or ConvInteger,
  or quantize(dynamic=True)) writes the product of the first form with a run-time zero point and a run-time
  scale (rank-0 values computed from the activation's min/max), reshapes around it for 3-D activations:
  int8_dynamic.py makes a matmul cpu_int8_matmul_dynamic, which takes both as operands, and a convolution
  cpu_int8_conv_nhwc with its correction, multiplier and padding formed from them, bit for bit; and the full
  min/max reductions that compute them become row reductions (`row_extreme`).

These are patterns on the existing ops, so the reference interpreter, glow-verify and every graph pass keep
working on quantized graphs unchanged. Then, per product: the quantizer's int8 activation chain is rebuilt
as uint8 (`_unsigned`: the same integers plus 128, so the kernel adds nothing), and, once every product is
rewritten, a product whose result only feeds a relu or relu6 computes it in its epilogue, with the next
product's uint8 quantization when that alone follows (`fuse_output`), after a max pool before a quantization
has moved onto the uint8 activation (int8_pool.py) and a residual add has joined the convolution before it
(int8_residual.py); the uint8 quantizations left become one pass each. A convolution sits
between NCHW/NHWC transposes, which glow-sink-transpose cancels between layers, as glow-cpu-layout's do; a
depthwise one becomes cpu_int8_depthwise_nhwc (int8_depthwise.py), whose epilogue takes the same activations and
quantization.
"""

from __future__ import annotations

import dataclasses
from functools import cache

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.backends.cpu.host import cpu_flags
from glow_mlir.backends.cpu.int8_ops import (
    SIGNED_OFFSET,
    columns_fit,
    correction,
    gemm_conv,
    offset,
    output_attributes,
    pack_weights,
)
from glow_mlir.backends.cpu.int8_depthwise import DEPTHWISE, depthwise, is_depthwise, takes
from glow_mlir.backends.cpu.int8_dynamic import int8_dynamic_convolution, int8_dynamic_matmul
from glow_mlir.backends.cpu.int8_pool import int8_max_pool
from glow_mlir.backends.cpu.int8_residual import (
    CONV,
    RESIDUAL,
    dequantized_input,
    fuse_residual,
    quantization,
    quantize_pass,
    quantized_input,
)
from glow_mlir.backends.cpu.int8_match import (
    channels,
    exact_weights,
    layout_source,
    moved,
    other,
    packed,
    padded,
    reshaped,
    sole_user,
)
from glow_mlir.backends.cpu.ops import TO_NCHW, TO_NHWC
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.graph.cse import cse_function
from glow_mlir.passes.graph.sink_transpose import transpose_to
from glow_mlir.passes.registry import register


# How many float32 ulps either side of a scale's estimate (`_scale_estimates`) the recovered scales may lie.
SCALE_ULPS = 2


def _near(x: np.ndarray, ulps: int) -> np.ndarray:
    """Along a new last axis, each of `x` and the float32 values up to `ulps` ulps below and above it, nearest
    first."""
    out, down, up = [x], x, x
    for _ in range(ulps):
        down, up = np.nextafter(down, np.float32(0)), np.nextafter(up, np.float32(np.inf))
        out += [down, up]
    return np.stack(out, axis=-1)


def _scale_estimates(lines: np.ndarray) -> np.ndarray:
    """Per row of `lines` [C, L], the scales a quantizer may have chosen for weights dequantized to that row
    [C, 20]: symmetric int8 (the largest magnitude is 127 steps), symmetric uint8 (zero point 128: 128 steps below
    0, 127 above), asymmetric uint8 (the range with 0 is 255 steps) and uint8 of reduce_range (127), as
    onnxruntime and quantize() choose them; each with its float32 neighbours."""
    lo, hi = np.minimum(lines.min(axis=1), np.float32(0)), np.maximum(lines.max(axis=1), np.float32(0))
    top = np.maximum(-lo, hi)
    estimates = np.stack([top / np.float32(127), top / np.float32(128), (hi - lo) / np.float32(255),
                          (hi - lo) / np.float32(127)], axis=1)  # fmt: skip
    return _near(estimates, SCALE_ULPS).reshape(len(lines), -1)


def integer_weights(w: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(q, scales) with integer steps q (int64) and float32(q * scale) == w exactly, one scale per index of `axis`,
    each channel's steps spanning at most 255 with 0 (int8_ops.columns_fit): the int8 or uint8 weights less
    their zero point that a DequantizeLinear folded into float constant `w`, per channel or per tensor
    (`_scale_estimates`; per tensor, only the widest channel reaches the tensor's range); None when some channel is
    not so. Each channel takes the first of its own estimates, then the tensor's, that fits; the candidates are
    tried in that order for all channels at once, each on the channels still without a scale (a model's weights
    are hundreds of thousands of channels: one at a time they were most of glow-cpu-int8's time)."""
    if w.dtype != np.float32:
        return None
    lines = np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)
    q = np.zeros(lines.shape, np.int64)
    scales = np.ones(len(lines), np.float32)
    pending = lines.any(axis=1)
    if lines.size:
        shared = _scale_estimates(w.reshape(1, -1))
        candidates = np.concatenate([_scale_estimates(lines), np.repeat(shared, len(lines), axis=0)], axis=1)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            for column in candidates.T:
                rows = np.flatnonzero(pending)
                if not len(rows):
                    break
                scale, line = column[rows, None], lines[rows]
                steps = np.round(line / scale)
                fits = columns_fit(steps.T) & (steps * scale == line).all(axis=1)
                q[rows[fits]], scales[rows[fits]] = steps[fits].astype(np.int64), scale[fits, 0]
                pending[rows[fits]] = False
    if pending.any():
        return None
    return np.moveaxis(q.reshape(np.moveaxis(w, axis, 0).shape), 0, axis), scales


def _requantization(product: ir.Value, axis: int) -> tuple[ir.Operation, np.ndarray, np.ndarray] | None:
    """(last op, multiplier, bias) of the requantization after integer `product`: reshapes that keep the last dim
    (a matmul's batch folded back, `axis` then the last), an optional convert_to f32 (required from i32), a mul
    by a per-channel constant and an optional add of one (channels along `axis`), each the only user of the one
    before; bias is 0 without the add."""
    current = product
    while (reshape := sole_user(current, "glow.reshape")) is not None and \
            ops.shape(reshape.results[0])[-1:] == ops.shape(current)[-1:] and axis == len(ops.shape(current)) - 1:
        current = reshape.results[0]
        axis = len(ops.shape(current)) - 1
    widen = sole_user(current, "glow.convert_to")
    if widen is not None and g.dtype(widen.results[0]) == np.float32:
        current = widen.results[0]
    elif g.dtype(product) != np.float32:
        return None
    scale = sole_user(current, "glow.mul")
    multiplier = None if scale is None else channels(other(scale, current), axis)
    if multiplier is None:
        return None
    last, bias = scale, np.zeros_like(multiplier)
    add = sole_user(scale.results[0], "glow.add")
    if add is not None:
        added = channels(other(add, scale.results[0]), axis)
        if added is not None:
            last, bias = add, added
    return last, multiplier, bias


def _vectors(w: np.ndarray, q: ir.Value, zero: int, multiplier: np.ndarray, bias: np.ndarray,
             accumulated: np.ndarray | None = None) -> list[ir.Value]:  # fmt: skip
    """The correction, multiplier and bias operands of weights `w` [K, N] for activation `q`, as constants; an
    integer bias added to the accumulator (`accumulated`) is taken off the correction, which the kernel
    subtracts."""
    added = offset(g.dtype(q))
    corrected = correction(w, zero, added)
    if accumulated is not None:
        corrected = (corrected.astype(np.int64) - accumulated).astype(np.int32)
    arrays = [(corrected, ir.IntegerType.get_signless(32)), (multiplier, ir.F32Type.get()),
              (bias, ir.F32Type.get())]  # fmt: skip
    return [g.materialize(a, ops.tensor_type(a.shape, elt), prefer_splat=False) for a, elt in arrays]


@dataclasses.dataclass(frozen=True)
class _Product:
    """A matched int8 product: activation q and its zero point, integer weights (as the op holds them: [K, N],
    or OIHW; int8, or wider: int8_match.exact_weights), the per-channel multiplier and bias, and the op whose
    result the rewrite replaces."""

    q: ir.Value
    zero: int
    weights: np.ndarray
    multiplier: np.ndarray
    bias: np.ndarray
    last: ir.Operation
    # An integer bias inside the accumulation, before the multiplier (QLinearConv's int32 bias), or None.
    accumulated: np.ndarray | None = None


def _from_quantizer(op: ir.Operation, axis: int) -> _Product | None:
    """The quantizer's form (module docstring) at product `op`, its channels along result `axis`; a
    convolution's own bias is either zero (the quantizer adds the bias after the multiplier) or integers that
    the int32 accumulation takes exactly (ONNX's QLinearConv: float32(acc + bias) x multiplier)."""
    # The activation first: float models stop here, before their weights are read. A matmul's activation may come
    # through reshapes and transposes (MatMul's batch dims folded into its rows, attention's heads): the kernel
    # reads q moved the same (`moved`).
    quantized = quantized_input(layout_source(op.operands[0]) if op.name == "glow.matmul" else op.operands[0])
    if quantized is None:
        return None
    w = exact_weights(op.operands[1], 0 if op.name == "glow.convolution" else 1)
    found = _requantization(op.results[0], axis)
    if w is None or found is None:
        return None
    accumulated = None
    if len(op.operands) > 2:
        bias = g.constant_array(op.operands[2])
        if bias is None or (bias != np.round(bias)).any() or np.abs(bias).max(initial=0) >= 2**31:
            return None
        if bias.any():
            accumulated = bias.astype(np.int64)
    return _Product(*quantized, w, found[1], found[2], found[0], accumulated)


def _from_qdq(op: ir.Operation, weight_axis: int) -> _Product | None:
    """An imported QDQ product at `op`: a per-tensor DequantizeLinear input, float weights that are integer steps
    of one scale per output channel (`integer_weights`, along `weight_axis`) and a constant bias or none. The
    multiplier is float32(input scale * weight scale); op's float result is replaced. A matmul's input may come
    through reshapes and transposes (a [B, S, K] activation's rows), as in `_from_quantizer`."""
    dequantized = dequantized_input(layout_source(op.operands[0]) if op.name == "glow.matmul" else op.operands[0])
    if dequantized is None or g.dtype(op.results[0]) != np.float32:
        return None
    w = g.constant_array(op.operands[1])
    if w is None:
        return None
    recovered = integer_weights(w, weight_axis)
    bias = g.constant_array(op.operands[2]) if len(op.operands) > 2 else np.zeros(w.shape[weight_axis], np.float32)
    if recovered is None or bias is None:
        return None
    q, zero, scale = dequantized
    multiplier = np.float32(scale) * recovered[1]
    return _Product(q, zero, recovered[0], multiplier, bias.astype(np.float32), op)


def _rounded(q: ir.Value, zero: int) -> ir.Value | None:
    """round(x / s) of the quantizer's chain q = convert_to(min(max([add(] round(x / s) [, z)], -128), 127) :
    f32 -> i8) (quantize.py's `_Emitter.quantize`), when q is one; else None."""
    op = g.producer(q)
    if op is None or op.name != "glow.convert_to" or g.dtype(op.operands[0]) != np.float32:
        return None
    bounds = (("glow.min", 127), ("glow.max", -128))
    value = op.operands[0]
    for name, bound in bounds:
        step = g.producer(value)
        if step is None or step.name != name or g.uniform_value(step.operands[1]) != bound:
            return None
        value = step.operands[0]
    step = g.producer(value)
    if zero:
        if step is None or step.name != "glow.add" or g.uniform_value(step.operands[1]) != zero:
            return None
        value = step.operands[0]
        step = g.producer(value)
    return value if step is not None and step.name == "glow.round" else None


def _unsigned(found: _Product) -> _Product:
    """`found` with its int8 activation from the quantizer's chain made uint8, built before `found.last`: the
    same integers plus 128 (zero point z + 128), so the kernel feeds them to vpdpbusd as they are instead of
    adding 128 to every broadcast. Any other activation is kept."""
    rounded = None if g.dtype(found.q) != np.int8 else _rounded(found.q, found.zero)
    if rounded is None:
        return found
    zero = found.zero + SIGNED_OFFSET
    shape = ops.shape(rounded)
    with ir.InsertionPoint(found.last), found.last.location:
        def splat(value: int) -> ir.Value:
            return g.materialize(np.full(shape, value, np.float32), rounded.type)

        y = g.make("glow.add", [rounded, splat(zero)], rounded.type)
        y = g.make("glow.max", [y, splat(0)], rounded.type)
        y = g.make("glow.min", [y, splat(255)], rounded.type)
        q = g.make("glow.convert_to", [y], ops.tensor_type(shape, ir.IntegerType.get_unsigned(8)))
    return dataclasses.replace(found, q=q, zero=zero)


def int8_matmul(op: ir.Operation) -> ir.Value | None:
    """The cpu_int8_matmul replacing the int8 product at glow.matmul or glow.fully_connected `op` (the
    quantizer's i32 form or an imported QDQ one), built before the op it replaces; None when there is none
    (a dynamically quantized product becomes cpu_int8_matmul_dynamic)."""
    if op.name == "glow.matmul" and g.dtype(op.results[0]) == np.int32:
        found = _from_quantizer(op, 1)
        if found is None:
            return int8_dynamic_matmul(op)
    else:
        found = _from_qdq(op, 1)
    if found is None or len(ops.shape(op.operands[0])) != 2:
        return None
    found = _unsigned(found)
    with ir.InsertionPoint(found.last), found.last.location:
        q = moved(found.q, op.operands[0]) if op.name == "glow.matmul" else found.q
        operands = [q, packed(pack_weights(found.weights)),
                    *_vectors(found.weights, q, found.zero, found.multiplier, found.bias, found.accumulated)]
        m, n = ops.shape(op.results[0])
        product = g.make("glow.cpu_int8_matmul", operands, ops.tensor_type([m, n], ir.F32Type.get()),
                         output_attributes())  # fmt: skip
        if ops.shape(found.last.results[0]) != (m, n):
            product = reshaped(product, ops.shape(found.last.results[0]))
    g.replace(found.last, product)
    return product


def int8_convolution(op: ir.Operation) -> ir.Value | None:
    """The int8 convolution at glow.convolution `op` (the quantizer's form, centred integers in f32 or f64, or an
    imported QDQ one) as transpose(cpu_int8_conv_nhwc(padded transpose(q))) when it has group 1 (dilated or not),
    or as transpose(cpu_int8_depthwise_nhwc(transpose(q))) when it is depthwise and not dilated
    (int8_depthwise.is_depthwise), which reads the padding itself."""
    grouped = ir.IntegerAttr(op.attributes["group"]).value != 1
    if grouped and not is_depthwise(op):
        return None
    found = _from_quantizer(op, 1) or _from_qdq(op, 0)
    if found is None:
        return None if grouped else int8_dynamic_convolution(op)
    found = _unsigned(found)
    q, zero = found.q, found.zero
    if grouped and not takes(found.weights, zero, found.accumulated):
        return None  # such a layer's float convolution is exact
    with ir.InsertionPoint(found.last), found.last.location:
        if grouped:
            conv = depthwise(transpose_to(q, TO_NHWC), zero, found.weights, found.multiplier, found.bias, op,
                             found.accumulated)  # fmt: skip
        else:
            x = padded(q, zero, op)
            gemm, attrs = gemm_conv(op, found.weights)
            n, _, oh, ow = ops.shape(op.results[0])
            result = ops.tensor_type([n, oh, ow, gemm.shape[1]], ir.F32Type.get())
            vectors = _vectors(gemm, q, zero, found.multiplier, found.bias, found.accumulated)
            conv = g.make("glow.cpu_int8_conv_nhwc", [x, packed(pack_weights(gemm)), *vectors], result, attrs)
        product = transpose_to(conv, TO_NCHW)
    g.replace(found.last, product)
    return product


_REWRITES = {"glow.matmul": int8_matmul, "glow.fully_connected": int8_matmul, "glow.convolution": int8_convolution}


INT8_OPS = ("glow.cpu_int8_matmul", CONV, RESIDUAL, "glow.cpu_int8_matmul_dynamic", DEPTHWISE)
# The int8 ops computed in NHWC, between transposes.
NHWC_INT8_OPS = (CONV, RESIDUAL, DEPTHWISE)


@dataclasses.dataclass(frozen=True)
class _Output:
    """What a product's epilogue takes over (int8_ops.OUTPUT_ATTRS): relu, its cap (0: none), the uint8 output
    scale and zero point (scale 0: the result stays f32), and the op whose result the fused product replaces."""

    relu: bool
    clip: float
    scale: float
    zero: int
    last: ir.Operation


def _activation(value: ir.Value) -> tuple[bool, float, ir.Value, ir.Operation | None]:
    """(relu, cap, the activation's result, its last op) for the activation that alone uses `value`: a relu
    (glow.relu, or max(value, 0)), capped when min(., c > 0) follows max (Clip(0, c): relu6); (False, 0,
    value, None) for none."""
    relu = sole_user(value, "glow.relu")
    if relu is not None:
        return True, 0.0, relu.results[0], relu
    floor = sole_user(value, "glow.max")
    if floor is None or floor.operands[0] != value or g.uniform_value(floor.operands[1]) != 0:
        return False, 0.0, value, None
    cap = sole_user(floor.results[0], "glow.min")
    bound = None if cap is None or cap.operands[0] != floor.results[0] else g.uniform_value(cap.operands[1])
    if bound is None or not bound > 0:
        return True, 0.0, floor.results[0], floor
    return True, float(bound), cap.results[0], cap


def _output(op: ir.Operation) -> _Output | None:
    """What f32 int8 product `op` can compute in its epilogue: the activation that alone uses its result
    (`_activation`), then, when they alone follow, a uint8 QuantizeLinear (div by s, round, add z, max 0, min
    255, convert_to ui8, as `_unsigned` builds them); a convolution's result goes through its transpose back to
    NCHW first. None when neither follows."""
    value = op.results[0]
    if g.dtype(value) != np.float32:
        return None
    if op.name in NHWC_INT8_OPS:
        back = sole_user(value, "glow.transpose")
        if back is None:
            return None
        value = back.results[0]
    relu, clip, value, activation = _activation(value)
    divide = sole_user(value, "glow.div")
    found = None if divide is None or divide.operands[0] != value else quantization(divide)
    if found is not None:
        return _Output(relu, clip, *found)
    return None if activation is None else _Output(relu, clip, 0.0, 0, activation)


def fuse_output(op: ir.Operation) -> ir.Value | None:
    """int8 product `op` with the activation and uint8 quantization after it (`_output`) in its epilogue,
    replacing the activation's or the quantization's result; None when it has neither."""
    found = _output(op)
    if found is None:
        return None
    attrs = g.attributes(op) | output_attributes(found.relu, found.clip, found.scale, found.zero)
    dims = ops.shape(op.results[0])
    result = ir.IntegerType.get_unsigned(8) if found.scale else ir.F32Type.get()
    with ir.InsertionPoint(found.last), found.last.location:
        fused = g.make(op.name, list(op.operands), ops.tensor_type(dims, result), attrs)
        if op.name in NHWC_INT8_OPS:
            fused = transpose_to(fused, TO_NCHW)
    g.replace(found.last, fused)
    return fused


# The reductions whose result does not depend on the order of their terms.
_EXTREMES = ("glow.batched_reduce_min", "glow.batched_reduce_max")


def row_extreme(op: ir.Operation) -> ir.Value | None:
    """A min or max over every axis of a rank > 1 tensor (a dynamic quantization's range: DynamicQuantizeLinear,
    quantize(dynamic=True)) as the same reduction of its flat view [1, size] along axis 1: a row reduction,
    which the CPU backend vectorizes, where the reduction over several axes ran one scalar chain (BERT's
    dynamic int8 spent 60 % of its time there). Exact: min and max do not round."""
    dims = ops.shape(op.operands[0])
    if op.name not in _EXTREMES or len(dims) < 2 or ops.shape(op.results[0]) != ():
        return None
    size, elt = int(np.prod(dims)), ops.element_type(op.operands[0])
    with ir.InsertionPoint(op), op.location:
        flat = {"dims": ops.i64_array([1, size])}
        row = g.make("glow.reshape", [op.operands[0]], ops.tensor_type([1, size], elt), flat)
        one = g.make(op.name, [row], ops.tensor_type([1], elt), {"axes": ops.i64_array([1])})
        scalar = g.make("glow.reshape", [one], op.results[0].type, {"dims": ops.i64_array([])})
    g.replace(op, scalar)
    return scalar


def int8_function(function: ir.Operation) -> bool:
    """Rewrites every requantized int8 product of `function`, and the full min/max reductions of dynamic
    quantization as row reductions; returns whether any changed."""
    extremes = any([row_extreme(op) is not None for op in g.graph_ops(function) if op.name in _EXTREMES])
    # The roots first: a rewrite erases its chain, which may hold ops after its root. Outputs are fused once
    # every product is rewritten: the next product's rewrite is what makes its activation a uint8 chain;
    # a residual add first, as it comes before them (int8_residual.py).
    roots = [op for op in g.graph_ops(function) if op.name in _REWRITES]
    changed = any([_REWRITES[op.name](op) is not None for op in roots])
    # Products sharing an activation rebuilt its uint8 chain once each (`_unsigned`): one chain, whose producer
    # can then take it into its epilogue.
    cse_function(function)
    # A max pool before a quantization pools its uint8 input (int8_pool.py), whose quantization the producer's
    # epilogue then takes as any other.
    pools = [op for op in g.graph_ops(function) if op.name == "glow.max_pool"]
    changed = any([int8_max_pool(op) is not None for op in pools]) or changed
    # Each list is taken before its rewrites run: they erase ops (adds, quantization chains) that come later.
    convolutions = [op for op in g.graph_ops(function) if op.name == CONV]
    changed = any([fuse_residual(op) is not None for op in convolutions]) or changed
    products = [op for op in g.graph_ops(function) if op.name in INT8_OPS]
    changed = any([fuse_output(op) is not None for op in products]) or changed or extremes
    # The uint8 quantizations that no epilogue took, one pass each.
    divisions = [op for op in g.graph_ops(function) if op.name == "glow.div"]
    return any([quantize_pass(op) is not None for op in divisions]) or changed


@cache
def host_has_vnni() -> bool:
    """Whether this CPU runs vpdpbusd on zmm registers (Linux's `avx512_vnni` flag): the JIT targets the host,
    and LLVM cannot select the intrinsic for a CPU without it."""
    return "avx512_vnni" in cpu_flags()


@register("glow-cpu-int8")
def cpu_int8(module: ir.Module) -> None:
    """Turn int8 matmuls and convolutions with constant int8 weights (quantize()'s integer products and imported
    QDQ ones) into glow.cpu_int8_matmul / cpu_int8_conv_nhwc on weights packed for vpdpbusd (depthwise
    convolutions into cpu_int8_depthwise_nhwc), with a following relu and uint8 quantization fused; on a host
    without AVX-512 VNNI the graph stays as it is."""
    if host_has_vnni():
        g.run_on_functions(module, int8_function, fixed_point=False)
