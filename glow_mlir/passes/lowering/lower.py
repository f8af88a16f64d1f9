"""glow-lower: Glow's node lowering, which rewrites high-level `glow` ops into the few primitives IRGen knows.

Like Glow's `lower()`, every rule replaces one node by a small graph of simpler nodes, so that later stages
(IRGen, codegen) implement fewer ops and the graph optimizer sees the arithmetic:

- fully_connected -> matmul + batched_add
- batch_normalization -> per-channel `scale / sqrt(var + eps)` and `bias - mean * that` computed on the
  [C] vectors, broadcast to the input shape at `channelIdx`, then one mul and one add on the activation
- relu -> max(x, splat 0), the splat of x's element type (floats or integers)
- convolution / fused_convolution / max_pool / avg_pool with padding -> a splat of the padded shape (0, or
  -inf for max_pool so that padding never wins), the input inserted into it, and the op with zero pads; an
  avg_pool that does not count padding is then multiplied by a constant `k*k / (real elements in the window)`
  per output position
- a backend's own ops likewise, by the rules it registers (`register_rules`): the CPU backend's NHWC ops
  insert their padding along their H and W dims
- conv_transpose with padding -> conv_transpose with zero pads (its full output) and a slice that crops it,
  since a transposed convolution's pads remove output rather than add input
- every op computing a bfloat16 or float16 result -> the same op on f32, between conversions (`widen_half`):
  the half types are storage types here, as the CPU backend has no arithmetic on them but its bf16 products
  (an fp16 ResNet-18 ran its f16 max pool as scalar loops, 31 % of the model, and its convolutions at 0.4x
  their f32 speed). Each f16 op's result is rounded to f16 as the model states it (ONNX's reference rounds
  every op's f16 result: the backend suite's fp16 attention cases differ by an f16 step without those roundings;
  onnxruntime's CPU provider rounds once where an f32 chain ends, docs/QUANTIZATION.md): the next op reads it
  as `glow.round_f16` of the f32 result, which glow-fuse-activations fuses into a producing convolution or
  matmul (with an f16 SiLU: "silu_f16"), not as a conversion down and one up (two kernels and an f16 buffer);
  a value that holds f16 values already (data movement of such values) is read as it is. A chain of bf16 ops
  passes its f32 values on, so a value is rounded to bf16 once, where it leaves the chain (a graph output, a
  convert_to, an op of another result type, a native product's factor): rounding each step loses bits with
  every op, and every partial sum of a matmul or softmax (about log2(terms) bits). The exceptions are the
  products a backend computes natively (`Backend.native_bf16`; the CPU backend's: matmul, fully_connected and
  group-1 NHWC convolutions with constant weights, where its vdpbf16ps kernels beat f32,
  backends/cpu/bf16_recipes.py): they take their bf16 factors as they are and give an f32 result (a bias in
  f32); the f32 chain before one is rounded at that factor, the one after starts from its f32 sums
  (docs/QUANTIZATION.md, "Native bf16 products")

A backend may keep any op whole (Glow's `shouldLower`): `lower(module, should_lower)` asks it per op. Every
op a rule creates carries the location of the op it replaces, so later errors still name the model node.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.backends.base import DEFAULT, get_backend, lower_everything
from glow_mlir.errors import PipelineError
from glow_mlir.passes.graph.utils import attributes, concat, producer_named, reshape
from glow_mlir.passes.registry import register

# A rule builds the replacement of `op` at the current insertion point and location and returns the value
# that replaces op's result, or None when the op is already primitive (e.g. a convolution with no padding).
Rule = Callable[[ir.Operation], ir.Value | None]


def lower(module: ir.Module, should_lower: Callable[[ir.Operation], bool] = lower_everything) -> None:
    """Lowers, in place, every op of every function of `module` that has a rule and that `should_lower` accepts."""
    for function in ops.functions(module):
        for op in ops.walk_ops(function):
            rule = RULES.get(op.name)
            if rule is None or not should_lower(op):
                continue
            with ir.InsertionPoint(op), op.location:
                replacement = rule(op)
            if replacement is not None:
                op.results[0].replace_all_uses_with(replacement)
                op.erase()


# Ops that create or convert values, which computing in f32 gains nothing.
_NOT_WIDENED = frozenset({"glow.constant", "glow.splat", "glow.convert_to"})
# Ops whose results are values of their operands: f16 values in, f16 values out, which no rounding changes.
_MOVING = frozenset({
    "glow.transpose", "glow.reshape", "glow.slice", "glow.concat", "glow.insert_tensor", "glow.broadcast",
    "glow.gather", "glow.gather_elements", "glow.gather_nd", "glow.select", "glow.max", "glow.min",
    "glow.max_pool", "glow.cpu_max_pool_nhwc",
})  # fmt: skip


def widen_half(function: ir.Operation, native: Callable[[ir.Operation], bool] = lambda op: False) -> None:
    """Computes every op of bf16 or f16 result in f32: its half operands converted up, the result converted
    back down. An f16 op reads its operands rounded, as the model computes them (round_f16 of the f32 value a
    down-conversion converts, any f32 -> f16 -> f32 pair becoming one); a bf16 operand that is such a
    down-conversion is read as the f32 value it converts, so a chain of bf16 ops rounds once, at its end (the
    down-conversions left without uses are dropped). A bf16 product that `native` accepts (the backend's
    `native_bf16`) keeps its two bf16 factors, a down-conversion included, and gives f32 (a fully_connected as
    matmul + batched_add, its bias in f32)."""
    f32 = ir.F32Type.get()
    wide_of: dict[ir.Value, ir.Value] = {}  # a down-conversion this pass made -> the f32 value it converts
    rounded_of: dict[ir.Value, ir.Value] = {}  # an f16 one -> round_f16 of that f32 value, as its readers read it
    exact: set[ir.Value] = set()  # f32 values that hold f16 values (read without rounding)

    def read(v: ir.Value, half: ir.Type) -> ir.Value:
        """Half operand v of an op computing `half` in f32: a bf16 chain's f32 value; an f16 value this pass
        rounded, as round_f16 of its f32 value (the same number as converting it up; the value itself where it
        holds f16 values already); else converted up."""
        wide = wide_of.get(v)
        if wide is not None and isinstance(half, ir.BF16Type):
            return wide
        if isinstance(ops.element_type(v), ir.F16Type) and wide is None:
            wide = _f32_source(v)  # a conversion down that another pass made (the CPU layout's convolutions)
        if wide is not None and isinstance(ops.element_type(v), ir.F16Type):
            if wide in exact:
                return wide
            if v not in rounded_of:
                with ir.InsertionPoint(v.owner), v.owner.location:
                    rounded_of[v] = _make("glow.round_f16", [wide], wide.type)
                exact.add(rounded_of[v])
            return rounded_of[v]
        up = _converted(v, f32)
        if isinstance(ops.element_type(v), ir.F16Type):
            exact.add(up)
        return up

    for op in ops.walk_ops(function):
        if op.name in _NOT_WIDENED or len(op.results) != 1 or len(op.regions) > 0:
            continue
        half = ops.element_type(op.results[0])
        if not isinstance(half, (ir.BF16Type, ir.F16Type)):
            continue
        is_native = isinstance(half, ir.BF16Type) and native(op)
        with ir.InsertionPoint(op), op.location:
            operands = [
                v if (i < 2 and is_native) or not isinstance(ops.element_type(v), (ir.BF16Type, ir.F16Type))
                else read(v, half)
                for i, v in enumerate(op.operands)
            ]
            result = ops.tensor_type(ops.shape(op.results[0]), f32)
            if is_native and op.name == "glow.fully_connected":
                # matmul + batched_add, as glow-lower's rule, with the bias added in f32.
                product = _make("glow.matmul", operands[:2], result)
                wide = ops.create("glow.batched_add", [product, operands[2]], [result])
            else:
                wide = ops.create(op.name, operands, [result], attributes(op))
            narrow = _converted(wide.results[0], half)
        wide_of[narrow] = wide.results[0]
        if isinstance(half, ir.F16Type) and op.name in _MOVING and all(
            v in exact for v in operands if isinstance(ops.element_type(v), ir.FloatType)
        ):
            exact.add(wide.results[0])
        op.results[0].replace_all_uses_with(narrow)
        op.erase()
    # An f16 value converted up that an f32 value was converted down to (another pass's conversions, around
    # the CPU layout's convolutions): that value rounded, as an op reading it reads it.
    f16 = ir.F16Type.get()
    for op in ops.walk_ops(function):
        if op.name != "glow.convert_to" or not isinstance(ops.element_type(op.results[0]), ir.F32Type):
            continue
        source = op.operands[0]
        if isinstance(ops.element_type(source), ir.F16Type) and (source in wide_of or _f32_source(source)):
            op.results[0].replace_all_uses_with(read(source, f16))
            op.erase()
    # Conversions down that nothing reads any more: left, they would be readers of the f32 values that
    # glow-fuse-activations fuses only where nothing else reads them.
    for op in reversed(list(ops.walk_ops(function))):
        if op.name == "glow.convert_to" and not list(op.results[0].uses):
            op.erase()


def _f32_source(value: ir.Value) -> ir.Value | None:
    """The f32 value that `value` (f16) is a glow.convert_to of, if it is one."""
    owner = producer_named(value, "glow.convert_to")
    source = owner.operands[0] if owner is not None else None
    return source if source is not None and isinstance(ops.element_type(source), ir.F32Type) else None


def _converted(value: ir.Value, elt: ir.Type) -> ir.Value:
    return _make("glow.convert_to", [value], ops.tensor_type(ops.shape(value), elt))


@register("glow-lower", options=("backend",))
def lower_pass(module: ir.Module, backend: str = DEFAULT) -> None:
    """Lowers FC, batch norm, relu and padding (and conv_transpose cropping) into glow primitives, each op the
    backend (option `backend`, default cpu) does not keep whole; computes bf16 and f16 ops in f32."""
    try:
        chosen = get_backend(backend)
    except KeyError as e:
        raise PipelineError(f"glow-lower: {e.args[0]}") from None
    for function in ops.functions(module):
        widen_half(function, chosen.native_bf16)
    lower(module, chosen.should_lower)


def _make(
    name: str, operands: Sequence[ir.Value], result: ir.Type, attributes: dict[str, ir.Attribute] | None = None
) -> ir.Value:
    return ops.create(name, operands, [result], attributes).results[0]


def _splat(result: ir.Type, value: float) -> ir.Value:
    """A splat of `value`; its attribute is f32 for float results and i64 for integer ones (the convention)."""
    is_float = isinstance(ops.element_type(result), ir.FloatType)
    return _make("glow.splat", [], result, {"value": ops.f32(value) if is_float else ops.i64(int(value))})


def _attributes(op: ir.Operation) -> dict[str, ir.Attribute]:
    attributes = op.attributes
    return {attributes[i].name: attributes[i].attr for i in range(len(attributes))}


def _lower_fully_connected(op: ir.Operation) -> ir.Value:
    x, weights, bias = op.operands
    result = op.results[0].type
    product = _make("glow.matmul", [x, weights], result)
    return _make("glow.batched_add", [product, bias], result)


def _lower_batch_normalization(op: ir.Operation) -> ir.Value:
    x, scale, bias, mean, var = op.operands
    channels = var.type
    result = op.results[0].type
    # y = x * k + (bias - mean * k) with k = scale / sqrt(var + eps): the divisions and square roots run on
    # C elements once instead of on every activation element.
    shifted = _make("glow.add", [var, _splat(channels, ops.floating(op, "epsilon"))], channels)
    std = _make("glow.sqrt", [shifted], channels)
    k = _make("glow.div", [scale, std], channels)
    shift = _make("glow.sub", [bias, _make("glow.mul", [mean, k], channels)], channels)
    axis = {"axis": ops.i64(ops.integer(op, "channelIdx"))}
    k_full = _make("glow.broadcast", [k], result, axis)
    shift_full = _make("glow.broadcast", [shift], result, axis)
    return _make("glow.add", [_make("glow.mul", [x, k_full], result), shift_full], result)


def _lower_relu(op: ir.Operation) -> ir.Value:
    x = op.operands[0]
    return _make("glow.max", [x, _splat(x.type, 0.0)], op.results[0].type)


# The H and W dims of NCHW, the graph's layout; a backend's ops in another layout pass theirs.
NCHW_HW = (2, 3)


def _pad(x: ir.Value, pads: Sequence[int], fill: float, hw: tuple[int, int] = NCHW_HW) -> ir.Value:
    """`x` (rank 4, H and W at dims `hw`) surrounded by `pads` = [top, left, bottom, right] elements `fill`."""
    top, left, bottom, right = pads
    dims, start = list(ops.shape(x)), [0, 0, 0, 0]
    dims[hw[0]] += top + bottom
    dims[hw[1]] += left + right
    start[hw[0]], start[hw[1]] = top, left
    padded = ops.tensor_type(dims, ops.element_type(x))
    return _make("glow.insert_tensor", [_splat(padded, fill), x], padded, {"start": ops.i64_array(start)})


def _unpadded(op: ir.Operation, operands: Sequence[ir.Value], **changes: ir.Attribute) -> ir.Value:
    """`op` again on `operands`, with zero pads and the attribute `changes`."""
    attributes = _attributes(op) | {"pads": ops.i64_array([0, 0, 0, 0])} | changes
    return _make(op.name, operands, op.results[0].type, attributes)


def lower_padded_convolution(op: ir.Operation, hw: tuple[int, int] = NCHW_HW) -> ir.Value | None:
    pads = ops.ints(op, "pads")
    if not any(pads):
        return None
    x, weights, bias = op.operands
    return _unpadded(op, [_pad(x, pads, 0.0, hw), weights, bias])


def lower_padded_max_pool(op: ir.Operation, hw: tuple[int, int] = NCHW_HW) -> ir.Value | None:
    pads = ops.ints(op, "pads")
    if not any(pads):
        return None
    return _unpadded(op, [_pad(op.operands[0], pads, float("-inf"), hw)])


def lower_padded_avg_pool(op: ir.Operation, hw: tuple[int, int] = NCHW_HW) -> ir.Value | None:
    pads = ops.ints(op, "pads")
    if not any(pads):
        return None
    # The padded zeros are real input elements of the new op, so it divides every window by k*k.
    pooled = _unpadded(op, [_pad(op.operands[0], pads, 0.0, hw)], countIncludePads=ops.boolean(True))
    if ops.integer(op, "countIncludePads"):
        return pooled
    in_dims, out_dims = ops.shape(op.operands[0]), ops.shape(pooled)
    correction = avg_pool_correction(
        [in_dims[d] for d in hw], [out_dims[d] for d in hw], ops.ints(op, "kernels"), ops.ints(op, "strides"), pads
    )
    if np.all(correction == 1.0):
        return pooled
    result = op.results[0].type
    elt = ops.element_type(result)
    value = {"value": ir.DenseElementsAttr.get(correction.astype(ops.numpy_dtype(elt)))}
    constant = _make("glow.constant", [], ops.tensor_type(correction.shape, elt), value)
    factor = _make("glow.broadcast", [constant], result, {"axis": ops.i64(hw[0])})
    return _make("glow.mul", [pooled, factor], result)


def _lower_matmul_nbits(op: ir.Operation) -> ir.Value:
    """W written out of its packed values (shifts and masks of each byte, concatenated, converted, less the
    zero points, times the scales: [N, K], transposed) and a matmul: constant operands fold into a float W."""
    x, weight, scales, zeros = op.operands
    bits = ir.IntegerAttr(op.attributes["bits"]).value
    (n, blocks, size), k = ops.shape(weight), ops.shape(x)[1]
    per, elt = 8 // bits, ops.element_type(x)
    byte = ops.tensor_type([n, blocks, size, 1], ops.element_type(weight))
    column = reshape(weight, [n, blocks, size, 1])
    parts = []
    for j in range(per):
        part = _make("glow.shift_right", [column, _splat(byte, j * bits)], byte) if j else column
        if bits < 8:
            part = _make("glow.bitwise_and", [part, _splat(byte, (1 << bits) - 1)], byte)
        parts.append(part)
    values = reshape(concat(parts, 3), [n, blocks, size * per])
    blocked = ops.tensor_type([n, blocks, size * per], elt)
    values = _make("glow.convert_to", [values], blocked)
    zero, scale = (_make("glow.broadcast", [reshape(v, [n, blocks, 1])], blocked, {"axis": ops.i64(0)})
                   for v in (zeros, scales))  # fmt: skip
    w = _make("glow.mul", [_make("glow.sub", [values, zero], blocked), scale], blocked)
    w = reshape(w, [n, blocks * size * per])
    if blocks * size * per != k:
        w = _make("glow.slice", [w], ops.tensor_type([n, k], elt), {"start": ops.i64_array([0, 0])})
    w = _make("glow.transpose", [w], ops.tensor_type([k, n], elt), {"shuffle": ops.i64_array([1, 0])})
    return _make("glow.matmul", [x, w], op.results[0].type)


def _lower_conv_transpose(op: ir.Operation) -> ir.Value | None:
    pads = ops.ints(op, "pads")
    if not any(pads):
        return None
    top, left, bottom, right = pads
    n, o, h, w = ops.shape(op.results[0])
    full = ops.tensor_type([n, o, h + top + bottom, w + left + right], ops.element_type(op.results[0]))
    uncropped = _make(op.name, list(op.operands), full, _attributes(op) | {"pads": ops.i64_array([0, 0, 0, 0])})
    return _make("glow.slice", [uncropped], op.results[0].type, {"start": ops.i64_array([0, 0, top, left])})


def avg_pool_correction(
    in_hw: Sequence[int], out_hw: Sequence[int], kernels: Sequence[int], strides: Sequence[int], pads: Sequence[int]
) -> np.ndarray:
    """[OH, OW] factors `k*k / real elements in the window` that turn a padded average into one over real elements.

    A window that covers padding only has no real element; its average is defined as 0 (factor 0).
    """
    top, left = pads[0], pads[1]
    counts = [
        np.array([max(0, min(o * s + k, pad + size) - max(o * s, pad)) for o in range(out)], dtype=np.float32)
        for size, out, k, s, pad in zip(in_hw, out_hw, kernels, strides, (top, left))
    ]
    real = np.outer(counts[0], counts[1])
    full = np.float32(kernels[0] * kernels[1])
    return np.divide(full, real, out=np.zeros_like(real), where=real > 0).astype(np.float32)


RULES: dict[str, Rule] = {
    "glow.fully_connected": _lower_fully_connected,
    "glow.batch_normalization": _lower_batch_normalization,
    "glow.relu": _lower_relu,
    "glow.convolution": lower_padded_convolution,
    "glow.fused_convolution": lower_padded_convolution,
    "glow.max_pool": lower_padded_max_pool,
    "glow.avg_pool": lower_padded_avg_pool,
    "glow.conv_transpose": _lower_conv_transpose,
    "glow.matmul_nbits": _lower_matmul_nbits,
}


def register_rules(rules: dict[str, Rule]) -> None:
    """Adds a backend's rules for its own ops (the CPU backend's NHWC ops make their padding explicit too)."""
    for name, rule in rules.items():
        if name in RULES:
            raise ValueError(f"'{name}' has two lowering rules")
        RULES[name] = rule
