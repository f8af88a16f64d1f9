"""Profile-guided quantization, step two (Glow's -load-profile): a float graph and its profile in, a graph
whose matrix products and convolutions compute on 8-bit integers out.

Each quantizable op (convolution, fully_connected, matmul, batch_matmul) not kept in float, and neither a grouped
(other than depthwise, fed by a product's epilogue) or dilated convolution nor a product of two activations (no
int8 kernel computes those, or none that pays: `_has_int8_kernel`), becomes:

- its activation operands quantized, `q = clamp(round_half_even(x / scale) + zero_point)` as int8 (ONNX's
  QuantizeLinear: the same rounding onnxruntime's quantized models use), with scale and zero point from the
  profile of the node that produces them;
- its constant weights quantized at compile time to int8, symmetric (zero point 0), per output channel
  with `per_channel` (per tensor otherwise), as onnxruntime and most int8 kernels want them;
- the product of the centred integers `(q - zero_point)` computed exactly: matmuls in int32 (glow.matmul and
  glow.batch_matmul on i32), convolutions in f32 while every partial sum is an integer below 2^24 (the
  reduction length times 255 * 127 is), else in f64: the ops a backend pattern-matches for an int8 kernel;
- the requantization fused into that producer: one multiply of the integer accumulator by
  `activation_scale * weight_scale` (per channel), then the float bias. The result is float again, so the
  ops between products (activations, pools, softmax, layer norm) stay float, and every product quantizes
  its own input: nothing ever quantizes and dequantizes back to back.

So the reference interpreter runs the quantized graph with exactly the integer arithmetic that compiled
code runs. Scales come from `calibration`: "minmax" (the profile's extremes) or "kl" (TensorRT's entropy
calibration on the |x| histogram: the clipping threshold whose 128-level quantization loses the least
information). `schema` "symmetric" centres the activation range on 0 (zero point 0, int8 [-127, 127]);
"asymmetric" maps [min(lo, 0), max(hi, 0)] onto [-128, 127] with a zero point.

`dynamic=True` is Glow's and PyTorch's dynamic quantization instead (`_dynamic`): no profile; each matmul and
fully connected layer with constant weights quantizes its activation per run to uint8 from the activation's
own min/max, as onnxruntime's DynamicQuantizeLinear, and multiplies the int32 product by float32(run-time
scale * weight scale).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.context import copy_module
from glow_mlir.passes.graph import utils as g
from glow_mlir.quantization.profile import (
    Model,
    NodeProfile,
    Profile,
    ProfileError,
    as_module,
    input_names,
    model_function,
    node_names,
)

SCHEMAS = ("asymmetric", "symmetric")
CALIBRATIONS = ("minmax", "kl")
PRECISIONS = ("int8",)
QUANTIZABLE = ("glow.convolution", "glow.fully_connected", "glow.matmul", "glow.batch_matmul")
# What dynamic quantization quantizes: products with constant weights whose rows are the activation's.
DYNAMIC = ("glow.fully_connected", "glow.matmul")
# The largest reduction length whose int8 x (int8 - zero point) products sum exactly in f32 (2^24 / 255*127).
F32_EXACT_TERMS = (1 << 24) // (255 * 127)
QMIN, QMAX = -128, 127


@dataclasses.dataclass(frozen=True)
class QParams:
    """scale and zero point of one quantized tensor (per tensor), q = round(x / scale) + zero."""

    scale: float
    zero: int


def kl_threshold(histogram: np.ndarray, top: float, levels: int = 128) -> float:
    """The |x| clipping threshold minimizing KL(P || Q) between the histogram clipped there (P, outliers
    added to its last bin) and P quantized to `levels` levels (Q, each level's mass spread over the bins it
    covers that P does not leave empty): TensorRT's entropy calibration, as onnxruntime's "Entropy" has it."""
    bins = len(histogram)
    if not histogram.any() or top <= 0:
        return top
    hist = histogram.astype(np.float64)
    best, best_end = np.inf, bins
    for end in range(levels, bins + 1, levels // 8):
        p = hist[:end].copy()
        p[-1] += hist[end:].sum()
        starts = (np.arange(levels) * end) // levels
        mass = np.add.reduceat(hist[:end], starts)
        nonzero = (hist[:end] > 0).astype(np.float64)
        count = np.add.reduceat(nonzero, starts)
        level = np.repeat(np.arange(levels), np.diff(np.append(starts, end)))
        q = np.where(nonzero > 0, mass[level] / np.maximum(count[level], 1), 0.0)
        p_sum, q_sum = p.sum(), q.sum()
        if p_sum == 0 or q_sum == 0:
            continue
        p, q = p / p_sum, q / q_sum
        live = p > 0
        # A bin P fills that Q leaves empty costs as if Q had a tiny mass there (onnxruntime smooths likewise).
        kl = float(np.sum(p[live] * np.log(p[live] / np.maximum(q[live], 1e-12))))
        if kl < best:
            best, best_end = kl, end
    return top * best_end / bins


def activation_params(node: NodeProfile, schema: str, calibration: str) -> QParams:
    """The int8 parameters of an activation profiled as `node`."""
    lo, hi = min(node.min, 0.0), max(node.max, 0.0)
    if calibration == "kl":
        threshold = kl_threshold(node.histogram, node.absmax)
        lo, hi = max(lo, -threshold), min(hi, threshold)
    if schema == "symmetric":
        bound = max(-lo, hi)
        return QParams(bound / QMAX if bound > 0 else 1.0, 0)
    if hi - lo <= 0:
        return QParams(1.0, 0)
    scale = (hi - lo) / (QMAX - QMIN)
    zero = int(np.clip(np.round(QMIN - lo / scale), QMIN, QMAX))
    return QParams(scale, zero)


def weight_scales(w: np.ndarray, axis: int | None) -> np.ndarray:
    """Symmetric int8 scales of constant weights `w`: one per index of `axis`, or one for all (axis None);
    an all-zero channel gets scale 1 (its values quantize to 0 either way)."""
    reduce = tuple(i for i in range(w.ndim) if i != axis) if axis is not None else None
    bound = np.max(np.abs(w.astype(np.float64)), axis=reduce)
    return np.where(bound > 0, bound / QMAX, 1.0).astype(np.float32)


def quantize_array(x: np.ndarray, scale: np.ndarray | float, zero: int = 0) -> np.ndarray:
    """QuantizeLinear in numpy: round_half_even(x / scale) + zero, clamped to int8 (float32 arithmetic)."""
    scaled = x.astype(np.float32) / np.asarray(scale, np.float32)
    return np.clip(np.round(scaled) + zero, QMIN, QMAX).astype(np.int8)


def _element(elt: str) -> ir.Type:
    """The MLIR element type spelled `elt` ("f32", "i8")."""
    return ops.mlir_type(ops.MLIR_TO_NUMPY[elt])


@dataclasses.dataclass
class _Emitter:
    """Builds ops before `anchor` with locations `<name>/quant/<what>`."""

    anchor: ir.Operation
    name: str

    def make(self, op: str, operands: Sequence[ir.Value], result: ir.Type, attrs: dict | None = None,
             what: str = "") -> ir.Value:  # fmt: skip
        loc = ir.Location.name(f"{self.name}/quant/{what or op.removeprefix('glow.')}")
        with ir.InsertionPoint(self.anchor), loc:
            return g.make(op, operands, result, attrs)

    def constant(self, array: np.ndarray, elt: str, what: str) -> ir.Value:
        loc = ir.Location.name(f"{self.name}/quant/{what}")
        with ir.InsertionPoint(self.anchor), loc:
            return g.materialize(array, ops.tensor_type(array.shape, _element(elt)))

    def like(self, value: ir.Value, elt: str) -> ir.Type:
        return ops.tensor_type(ops.shape(value), _element(elt))

    def scalar(self, value: ir.Value, number: float, elt: str, what: str) -> ir.Value:
        return self.constant(np.full(ops.shape(value), number), elt, what)

    def quantize(self, x: ir.Value, p: QParams) -> ir.Value:
        """int8 q = clamp(round(x / scale) + zero), in f32 as QuantizeLinear computes it."""
        scaled = self.make("glow.div", [x, self.scalar(x, p.scale, "f32", "scale")], x.type)
        y = self.make("glow.round", [scaled], x.type)
        if p.zero:
            y = self.make("glow.add", [y, self.scalar(x, p.zero, "f32", "zero_point")], x.type)
        y = self.make("glow.max", [y, self.scalar(x, QMIN, "f32", "qmin")], x.type)
        y = self.make("glow.min", [y, self.scalar(x, QMAX, "f32", "qmax")], x.type)
        return self.make("glow.convert_to", [y], self.like(x, "i8"), what="quantize")

    def centred(self, q: ir.Value, zero: int, elt: str) -> ir.Value:
        """int8 `q` minus its zero point, in type `elt` (exact: i32, f32 or f64)."""
        wide = self.make("glow.convert_to", [q], self.like(q, elt), what="widen")
        if not zero:
            return wide
        return self.make("glow.sub", [wide, self.scalar(q, zero, elt, "zero_point")], wide.type)

    def along(self, vector: np.ndarray, result: ir.Value, axis: int, what: str) -> ir.Value:
        """A float32 constant vector (or scalar) broadcast to `result`'s shape along `axis`."""
        if vector.size == 1:
            return self.scalar(result, float(vector.reshape(-1)[0]), "f32", what)
        small = self.constant(vector.astype(np.float32), "f32", what)
        return self.make("glow.broadcast", [small], self.like(result, "f32"), {"axis": ops.i64(axis)}, what)


@dataclasses.dataclass(frozen=True)
class Options:
    """quantize()'s choices, as one value for the per-op rewrite."""

    schema: str
    calibration: str
    per_channel: bool
    keep_float: frozenset[str]


def quantize(
    model: Model,
    profile: Profile | None = None,
    *,
    schema: str = "asymmetric",
    calibration: str = "minmax",
    per_channel: bool = True,
    precision: str = "int8",
    keep_float: Sequence[str] = (),
    dynamic: bool = False,
) -> ir.Module:
    """A copy of `model` (a Graph, module or ONNX model) with its products and convolutions computed on int8
    (the module docstring says how), scaled by `profile`, which must have been taken of this model.

    `keep_float` names nodes (by node name) or op kinds ("convolution", "glow.matmul") left in float.
    `dynamic` quantizes instead only the matmuls and fully connected layers with constant weights, their
    activations per run from their own min/max (`_dynamic`; no profile, schema or calibration): Glow's and
    PyTorch's dynamic quantization, onnxruntime's quantize_dynamic.
    """
    for value, allowed, what in ((schema, SCHEMAS, "schema"), (calibration, CALIBRATIONS, "calibration"),
                                 (precision, PRECISIONS, "precision")):  # fmt: skip
        if value not in allowed:
            raise ValueError(f"{what} must be one of {', '.join(allowed)}, got {value!r}")
    source = as_module(model)
    if not dynamic:
        if profile is None:
            raise ValueError("static quantization needs a profile (or pass dynamic=True)")
        profile.check(source)
    module = copy_module(source)
    options = Options(schema, calibration, per_channel, frozenset(keep_float))
    with module.context, ir.Location.unknown():
        function = model_function(module)
        names = node_names(function)
        arguments = dict(zip(function.regions[0].blocks[0].arguments, input_names(function), strict=True))

        def source_name(value: ir.Value) -> str:
            owner = g.producer(value)
            return arguments[value] if owner is None else names[owner]

        # Chosen, with the node names of their operands' producers, before any rewrite changes the graph.
        chosen = [
            (op, name, [source_name(v) for v in op.operands[:2]])
            for op, name in names.items()
            if op.name in (DYNAMIC if dynamic else QUANTIZABLE)
            and not {name, op.name, op.name.removeprefix("glow.")} & options.keep_float
            and all(g.dtype(v) == np.float32 for v in op.operands)
            and _has_int8_kernel(op, dynamic)
        ]
        for op, name, sources in chosen:
            if dynamic:
                replacement = _dynamic(op, name, per_channel)
            else:
                replacement = _quantized(op, name, profile, options, sources)
            op.results[0].replace_all_uses_with(replacement)
            g.erase(op)
    return module


# Per kind: the operand holding the weights and their output-channel axis, which is also the result's channel
# axis (`out_axis`) where the per-channel multiplier and the bias run.
_WEIGHTS = {
    "glow.convolution": (0, 1), "glow.fully_connected": (1, 1), "glow.matmul": (1, 1), "glow.batch_matmul": (2, 2),
}  # fmt: skip


def _quantized(op: ir.Operation, name: str, profile: Profile, options: Options, sources: list[str]) -> ir.Value:
    """The int8 form of quantizable `op`, built before it; its final op keeps `op`'s location."""
    emit = _Emitter(op, name)
    result, kind = op.results[0], op.name
    channel_axis, out_axis = _WEIGHTS[kind]
    conv = kind == "glow.convolution"
    elt = "i32" if not conv else "f32" if _reduction_length(op) <= F32_EXACT_TERMS else "f64"
    centred: list[ir.Value] = []
    scales: list[np.ndarray] = []
    for i, operand in enumerate(op.operands[:2]):
        constant = g.constant_array(operand)
        if constant is not None:
            # Weights (operand 1) per output channel when asked; a constant elsewhere per tensor.
            axis = channel_axis if options.per_channel and i == 1 else None
            w_scale = weight_scales(constant, axis)
            dims = [-1 if d == axis else 1 for d in range(constant.ndim)]
            aligned = w_scale if axis is None else w_scale.reshape(dims)
            q = quantize_array(constant, aligned)
            centred.append(emit.constant(q.astype(ops.MLIR_TO_NUMPY[elt]), elt, "weights"))
            scales.append(w_scale)
            continue
        try:
            params = activation_params(profile[sources[i]], options.schema, options.calibration)
        except ProfileError as e:
            raise ProfileError(f"{name} ({kind}): operand {i}: {e}") from None
        centred.append(emit.centred(emit.quantize(operand, params), params.zero, elt))
        scales.append(np.array(params.scale, np.float32))
    acc_type = emit.like(result, elt)
    if conv:
        zeros = emit.constant(np.zeros(ops.shape(op.operands[2])), elt, "zero_bias")
        acc = emit.make(kind, [*centred, zeros], acc_type, g.attributes(op), "accumulate")
    else:
        product = "glow.matmul" if kind == "glow.fully_connected" else kind
        acc = emit.make(product, centred, acc_type, what="accumulate")
    # The requantization multiplier float32(a_scale * w_scale), per output channel, fused into the product.
    multiplier = (scales[0] * scales[1]).astype(np.float32)
    wide = emit.make("glow.convert_to", [acc], result.type, what="dequantize")
    rescale = emit.along(multiplier, result, out_axis, "multiplier")
    if kind not in ("glow.convolution", "glow.fully_connected"):
        with ir.InsertionPoint(op), op.location:
            return g.make("glow.mul", [wide, rescale], result.type)
    scaled = emit.make("glow.mul", [wide, rescale], result.type)
    bias = g.constant_array(op.operands[2])
    if bias is not None:
        bias_value = emit.along(bias, result, out_axis, "bias")
    else:
        bias_value = emit.make("glow.broadcast", [op.operands[2]], result.type, {"axis": ops.i64(out_axis)})
    with ir.InsertionPoint(op), op.location:
        return g.make("glow.add", [scaled, bias_value], result.type)


def _has_int8_kernel(op: ir.Operation, dynamic: bool) -> bool:
    """Whether `op` is worth quantizing. A grouped convolution is not, unless it is depthwise (one output channel
    per input channel, no dilation: the CPU backend's cpu_int8_depthwise_nhwc) and its input arrives as uint8
    (`_uint8_input`): no int8 kernel computes the others, so quantizing one would only put a quantization and a
    float convolution on centred integers where the float convolution was (MobileNetV2 int8 ran 0.71x its fp32 so,
    before the depthwise kernel); a group-1 convolution is, dilated or not (cpu_int8_conv_nhwc). Nor is a product
    of two activations (attention's batch_matmul): the int8 kernels take constant weights, packed at compile time,
    and the int32 product ran as a generic loop, slower than the float kernel (a BERT encoder's static int8 0.081
    ms, 0.046 ms with its batch_matmuls float: docs/QUANTIZATION.md). With `dynamic`, only products whose weights are
    constant are."""
    if dynamic:
        return g.constant_array(op.operands[1]) is not None
    if all(g.producer_name(v) not in (g.CONSTANT, g.SPLAT) for v in op.operands[:2]):
        return False
    if op.name != "glow.convolution":
        return True
    group = ir.IntegerAttr(op.attributes["group"]).value
    if group == 1:
        return True
    dilation = list(ir.DenseI64ArrayAttr(op.attributes["dilation"]))
    depthwise = group == ops.shape(op.operands[0])[1] == ops.shape(op.operands[1])[0]
    return dilation == [1, 1] and depthwise and _uint8_input(op.operands[0])


# The activations between a product and a depthwise convolution that the product's int8 epilogue computes (relu,
# and max / min with a constant: relu6 as ONNX's Clip imports).
_EPILOGUE_ACTIVATIONS = ("glow.relu", "glow.max", "glow.min")


def _uint8_input(value: ir.Value) -> bool:
    """Whether `value`, a depthwise convolution's input, comes from a product quantize() rewrites through relus or
    clips only (each value used once), so that the product's int8 epilogue writes it as the uint8 activation the
    depthwise kernel reads (MobileNetV2's expand -> relu6 -> depthwise). Another input (a residual stream, a SiLU's
    result) needs a quantization pass of its own over the f32 tensor, which costs about what the int8 kernel saves
    over the float one (ConvNeXt-atto's int8 0.93x to 0.98x, EfficientNet-B0's 0.98x, with all their depthwise
    layers quantized)."""
    while len(g.users(value)) == 1 and (op := g.producer(value)) is not None:
        if op.name in QUANTIZABLE:
            return _has_int8_kernel(op, dynamic=False)
        constant = len(op.operands) == 1 or g.producer_name(op.operands[1]) in (g.CONSTANT, g.SPLAT)
        if op.name not in _EPILOGUE_ACTIVATIONS or not constant:
            return False
        value = op.operands[0]
    return False


def _dynamic(op: ir.Operation, name: str, per_channel: bool) -> ir.Value:
    """The dynamically quantized form of matmul or fully_connected `op` (constant weights), built before it,
    as onnxruntime's DynamicQuantizeLinear + MatMulInteger: per run, lo = min(min x, 0), hi = max(max x, 0),
    scale s = (hi - lo) / 255 (at least the smallest normal float, so that a zero activation quantizes to its
    zero point), zero point z = round(clamp(-lo / s, 0, 255)), q = clamp(round(x / s) + z, 0, 255) as uint8;
    then matmul(q - z, W) in int32 with W symmetric int8, times float32(s * weight scale) [+ bias]. The CPU
    backend runs it on vpdpbusd with s and z as run-time operands (cpu_int8_matmul_dynamic)."""
    emit = _Emitter(op, name)
    x, result = op.operands[0], op.results[0]
    scalar_f32 = ops.tensor_type([], _element("f32"))

    def constant(number: float, what: str) -> ir.Value:
        return emit.constant(np.array(number, np.float32), "f32", what)

    def scalar(kind: str, *operands: ir.Value, attrs: dict | None = None) -> ir.Value:
        return emit.make(f"glow.{kind}", operands, scalar_f32, attrs)

    def elementwise(kind: str, *operands: ir.Value) -> ir.Value:
        return emit.make(f"glow.{kind}", operands, x.type)

    def spread(value: ir.Value, what: str) -> ir.Value:
        """Rank-0 `value` broadcast to x's shape (its element type kept)."""
        target = ops.tensor_type(ops.shape(x), ops.element_type(value))
        return emit.make("glow.broadcast", [value], target, {"axis": ops.i64(len(ops.shape(x)))}, what)

    axes = {"axes": ops.i64_array(range(len(ops.shape(x))))}
    zero, qmax = constant(0.0, "zero"), constant(255.0, "qmax")
    lo = scalar("min", scalar("batched_reduce_min", x, attrs=axes), zero)
    hi = scalar("max", scalar("batched_reduce_max", x, attrs=axes), zero)
    tiny = constant(float(np.finfo(np.float32).tiny), "tiny")
    scale = scalar("max", scalar("div", scalar("sub", hi, lo), qmax), tiny)
    z = scalar("round", scalar("min", scalar("max", scalar("sub", zero, scalar("div", lo, scale)), zero), qmax))
    y = elementwise("add", elementwise("round", elementwise("div", x, spread(scale, "scale"))), spread(z, "zero_point"))
    y = elementwise("min", elementwise("max", y, emit.scalar(x, 0, "f32", "qmin")), emit.scalar(x, 255, "f32", "qmax"))
    q = emit.make("glow.convert_to", [y], emit.like(x, "ui8"), what="quantize")
    z_i32 = emit.make("glow.convert_to", [z], ops.tensor_type([], _element("i32")), what="zero_point")
    wide_q = emit.make("glow.convert_to", [q], emit.like(x, "i32"), what="widen")
    centred = emit.make("glow.sub", [wide_q, spread(z_i32, "zero_point")], wide_q.type)
    w = g.constant_array(op.operands[1])
    w_scale = weight_scales(w, 1 if per_channel else None)
    weights = emit.constant(quantize_array(w, w_scale).astype(np.int32), "i32", "weights")
    acc = emit.make("glow.matmul", [centred, weights], emit.like(result, "i32"), what="accumulate")
    # float32(s * weight scale): per channel, s broadcast to the channels first (ONNX's Mul).
    if per_channel:
        vector = ops.tensor_type(w_scale.shape, _element("f32"))
        s = emit.make("glow.broadcast", [scale], vector, {"axis": ops.i64(1)}, "scale")
        w_value = emit.constant(w_scale, "f32", "weight_scale")
    else:
        s, w_value = scale, constant(float(w_scale), "weight_scale")
    multiplier = emit.make("glow.mul", [s, w_value], w_value.type, what="multiplier")
    axis = 1 if per_channel else 2
    rescale = emit.make("glow.broadcast", [multiplier], result.type, {"axis": ops.i64(axis)}, "multiplier")
    wide = emit.make("glow.convert_to", [acc], result.type, what="dequantize")
    if op.name == "glow.matmul":
        with ir.InsertionPoint(op), op.location:
            return g.make("glow.mul", [wide, rescale], result.type)
    scaled = emit.make("glow.mul", [wide, rescale], result.type)
    bias = emit.make("glow.broadcast", [op.operands[2]], result.type, {"axis": ops.i64(1)}, "bias")
    with ir.InsertionPoint(op), op.location:
        return g.make("glow.add", [scaled, bias], result.type)


def _reduction_length(op: ir.Operation) -> int:
    """How many products each result element of `op` sums."""
    dims = ops.shape(op.operands[1])
    if op.name == "glow.convolution":
        return int(np.prod(dims[1:]))
    return dims[-2]
