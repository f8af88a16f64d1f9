"""The CPU backend's int8 products, `glow.cpu_int8_matmul` and `glow.cpu_int8_conv_nhwc` (with its residual form
`cpu_int8_conv_nhwc_add`, and the dynamic matmul), its depthwise convolution `cpu_int8_depthwise_nhwc`, its
one-pass uint8 quantization `cpu_quantize_u8` and its uint8 max pool `cpu_max_pool_u8_nhwc`: their definitions,
evaluators and the compile-time preparation of their operands. glow-cpu-int8 (int8_rewrite.py) makes them;
int8_gemm.py lowers the products to vpdpbusd (int8_depthwise.py the depthwise convolution, int8_pool.py the pool).
The products' operands are what the kernels read:

- `input`: the int8 or uint8 activation `q`, [M, K] (a convolution's: NHWC, padded with its zero point);
- `weights`: W [K, N] packed as [ceil(N/16), ceil(K/4), 64] bytes: block `j` holds columns 16j..16j+15, and
  its row `k4` the 16 x 4 bytes W[4 k4 + t, 16 j + c] at 4 c + t (zero beyond K and N), i.e. one 512-bit
  vpdpbusd operand per step of 4 along K (a convolution's K runs over its taps: `conv_weights`). Weights wider
  than int8 (uint8 ones minus a zero point other than 128: W - z spans [-z, 255 - z]) are int8 W - c plus a
  per-column offset c (`column_offsets`), held in one more row of each block (16 i32); the kernel then adds
  c[n] * sum_k (q + offset) per row, the row's byte sum, as onnxruntime's u8u8 GEMM adds its row sums;
- `correction`: i32 [N], `(offset + z) * sum_k W[k, n]`: vpdpbusd multiplies *unsigned* bytes by signed ones,
  so the kernel feeds it `q + offset` (int8: q xor 0x80, offset 128; uint8: q itself, offset 0) and
  subtracts this per column, which also removes the zero point: sum_k (q + offset) W - (offset + z)
  colsum(W) = sum_k (q - z) W, exactly;
- `multiplier`, `bias`: f32 [N], the requantization to float (bias 0 when there is none).

result[m, n] = f32(sum_k (input[m, k] + offset) * W[k, n] - correction[n]) * multiplier[n] + bias[n] (W with its
offsets, as `correction` is), then the `epilogue` its attributes ask for: an optional relu, and with an output
scale the uint8 QuantizeLinear of the next product's activation. Every step is the float32 operation of the graph
ops it replaces.
"""


from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from mlir import ir

from glow_mlir.opdefs import reference as ref
from glow_mlir.opdefs.base import Array, Attr, Attrs, IrDef, OpDef, Shape, Trait, define
from glow_mlir.opdefs.nn import POOL_OPERANDS, WINDOW
from glow_mlir.opdefs.shapes import ShapeError, rank, require

# The activation types vpdpbusd takes (int8 through `offset`).
BYTES = (np.dtype(np.int8), np.dtype(np.uint8))
# Columns per packed block (one zmm of i32 lanes) and K per vpdpbusd lane step (4 bytes per i32 lane).
LANES = 16
K_STEP = 4
# vpdpbusd's unsigned operand is the activation plus this: 128 for int8, 0 for uint8 (`offset`).
SIGNED_OFFSET = 128


def offset(dtype: np.dtype) -> int:
    """What the kernel adds to an activation of `dtype` (int8 or uint8) to make it vpdpbusd's unsigned byte."""
    return SIGNED_OFFSET if np.dtype(dtype) == np.int8 else 0


def columns_fit(w: np.ndarray) -> np.ndarray:
    """Per column n of integer-valued weights `w` [K, N] (of any numeric type), whether its values and 0 (the zeros
    that pad K) span at most 255 steps: the columns `column_offsets` can shift into int8's range. A NaN or infinite
    value fits nothing."""
    return w.max(axis=0, initial=0) - w.min(axis=0, initial=0) <= 255


def column_offsets(w: np.ndarray) -> np.ndarray | None:
    """Per column n of integer weights `w` [K, N], the offset c[n] nearest 0 that leaves every w[k, n] - c[n], and
    -c[n] (the zeros that pad K), in int8's range: 0 for columns that fit int8; None when a column does not fit
    (`columns_fit`). uint8 weights minus their zero point (MatMulInteger, QLinearConv) span 255 and take c = 128 -
    zero."""
    wide = w.astype(np.int64)
    if not columns_fit(wide).all():
        return None
    return np.clip(0, wide.max(axis=0, initial=0) - 127, wide.min(axis=0, initial=0) + 128).astype(np.int32)


def pack_weights(w: np.ndarray) -> np.ndarray:
    """Integer W [K, N] (each column spanning at most 255: `column_offsets`) as the kernel reads it: int8
    [ceil(N/16), ceil(K/4), 64] (the module docstring's layout) of W - c, and, when some offset c is not 0, one
    more row per block holding that block's 16 offsets as i32 (little-endian bytes)."""
    k, n = w.shape
    offsets = column_offsets(w)
    if offsets is None:
        raise ValueError(f"weights [{k}, {n}] have a column spanning more than int8's 255 steps")
    kb, nb = -(-k // K_STEP), -(-n // LANES)
    padded = np.zeros((nb * LANES, kb * K_STEP), np.int8)
    padded[:n, :k] = (w.astype(np.int64) - offsets).T
    blocks = padded.reshape(nb, LANES, kb, K_STEP).transpose(0, 2, 1, 3).reshape(nb, kb, LANES * K_STEP)
    if offsets.any():
        row = np.zeros(nb * LANES, "<i4")
        row[:n] = offsets
        blocks = np.concatenate([blocks, row.view(np.int8).reshape(nb, 1, LANES * K_STEP)], axis=1)
    return np.ascontiguousarray(blocks)


def packed_rows(k: int, n: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """The two shapes `pack_weights` gives W [k, n]: without and with the offsets' row."""
    nb, kb = -(-n // LANES), -(-k // K_STEP)
    return (nb, kb, LANES * K_STEP), (nb, kb + 1, LANES * K_STEP)


def unpack_weights(packed: np.ndarray, k: int, n: int) -> np.ndarray:
    """The inverse of `pack_weights`: W [k, n] (int64 with its offsets, int8 without)."""
    nb, rows, _ = packed.shape
    kb = -(-k // K_STEP)
    blocks = packed[:, :kb].reshape(nb, kb, LANES, K_STEP).transpose(0, 2, 1, 3).reshape(nb * LANES, kb * K_STEP)
    w = np.ascontiguousarray(blocks[:n, :k].T)
    if rows == kb:
        return w
    offsets = np.ascontiguousarray(packed[:, kb]).view("<i4").reshape(-1)[:n]
    return w.astype(np.int64) + offsets


def colsum(w: np.ndarray) -> np.ndarray:
    """sum_k W[k, n] as i32: the dynamic op's correction is (offset + zero) times this, formed at run time."""
    return w.astype(np.int64).sum(axis=0).astype(np.int32)


def correction(w: np.ndarray, zero: int, added: int = SIGNED_OFFSET) -> np.ndarray:
    """(added + zero) * colsum(W) as i32: what the kernel subtracts per column (module docstring), `added` the
    activation's `offset`."""
    return ((added + zero) * colsum(w).astype(np.int64)).astype(np.int32)


def _shape(o: Sequence[Shape], _: Attrs, __: Shape | None) -> Shape:
    input_, weights, corr, multiplier, bias = o
    rank(input_, 2, "input")
    rank(weights, 3, "weights (packed)")
    for vector, what in ((corr, "correction"), (multiplier, "multiplier"), (bias, "bias")):
        rank(vector, 1, what)
    m, k = input_
    n = bias[0]
    require(corr[0] == n and multiplier[0] == n, f"correction, multiplier and bias must have one length, got "
            f"{corr[0]}, {multiplier[0]}, {n}")  # fmt: skip
    packed = packed_rows(k, n)
    require(tuple(weights) in packed, f"weights must be packed as {list(packed[0])} (one more row with offsets) for "
            f"K={k}, N={n}, got {list(weights)}")  # fmt: skip
    return (m, n)


# Per operand after the input (i8 or ui8), its element type.
_OPERAND_TYPES = ("i8", "i32", "f32", "f32")


def _types(operands: Sequence[str], result: str | None) -> str:
    if operands[0] not in ("i8", "ui8") or tuple(operands[1:]) != _OPERAND_TYPES:
        raise ShapeError(f"operands must be i8 or ui8, {', '.join(_OPERAND_TYPES)}, got {', '.join(operands)}")
    if result not in (None, "f32", "ui8"):
        raise ShapeError(f"the result is f32, or ui8 with an output scale, got {result}")
    return result or "f32"


# The epilogue after the requantization to f32: an optional relu, capped at `clip` when that is not 0 (relu6:
# MobileNets' Clip(0, 6)), then, with an output scale, QuantizeLinear to uint8 (round half to even of y / scale,
# plus the zero point, clamped): the next product's activation, written by this one (glow-cpu-int8 fuses it).
# output_scale 0 keeps the f32 result.
OUTPUT_ATTRS = (("relu", Attr.BOOL), ("clip", Attr.FLOAT), ("output_scale", Attr.FLOAT), ("output_zero", Attr.INT))
OUTPUT_ATTR_NAMES = tuple(name for name, _ in OUTPUT_ATTRS)


def output_attributes(relu: bool = False, clip: float = 0.0, scale: float = 0.0,
                      zero: int = 0) -> dict[str, ir.Attribute]:  # fmt: skip
    return {"relu": Attr.BOOL.make(relu), "clip": Attr.FLOAT.make(clip), "output_scale": Attr.FLOAT.make(scale),
            "output_zero": Attr.INT.make(zero)}  # fmt: skip


def dequantized(q: np.ndarray, scale: float, zero: int) -> np.ndarray:
    """uint8 `q` as f32, (f32(q) - zero) * scale: the graph's DequantizeLinear."""
    return (q.astype(np.float32) - np.float32(zero)) * np.float32(scale)


def quantized(y: np.ndarray, scale: float, zero: int) -> np.ndarray:
    """f32 `y` as uint8, clamp(round_half_even(y / scale) + zero, 0, 255): the graph's QuantizeLinear."""
    return np.clip(np.round(y / np.float32(scale)) + np.float32(zero), 0, 255).astype(np.uint8)


def epilogue(op: ir.Operation, y: np.ndarray) -> np.ndarray:
    """The float32 result `y` through op's relu (and its cap) and output quantization (the evaluators' last
    step)."""
    if ir.BoolAttr(op.attributes["relu"]).value:
        y = np.maximum(y, np.float32(0))
    clip = np.float32(ir.FloatAttr(op.attributes["clip"]).value)
    if clip:
        y = np.minimum(y, clip)
    scale = np.float32(ir.FloatAttr(op.attributes["output_scale"]).value)
    if not scale:
        return y
    return quantized(y, scale, ir.IntegerAttr(op.attributes["output_zero"]).value)


def product(x: Array, packed: Array, corr: Array, multiplier: Array, bias: Array) -> Array:
    """cpu_int8_matmul's f32 result before its epilogue, in exact integer arithmetic (int64 sums, which the
    kernel's i32 sums equal)."""
    w = unpack_weights(packed, x.shape[1], bias.shape[0]).astype(np.int64)
    acc = ((x.astype(np.int64) + offset(x.dtype)) @ w - corr).astype(np.int32)
    return acc.astype(np.float32) * multiplier.astype(np.float32) + bias.astype(np.float32)


def evaluate(op: ir.Operation, a: list[Array]) -> Array:
    return epilogue(op, product(*a))


OPERANDS = ("input", "weights", "correction", "multiplier", "bias")
CPU_INT8_MATMUL = define(OpDef(
    "cpu_int8_matmul",
    "CPU backend: int8 or uint8 activation [M, K] x constant int8 weights packed [ceil(N/16), ceil(K/4), 64] "
    "(one more row of i32 column offsets for wider weights), "
    "requantized to f32: f32(sum (input + offset) * W - correction) * multiplier + bias, offset 128 for int8 "
    "and 0 for uint8, then optionally relu and QuantizeLinear to uint8 (backends/cpu/int8_ops.py).",
    OPERANDS, attrs=OUTPUT_ATTRS, backend="cpu", shape=_shape, types=_types, evaluate=evaluate,
    ir=IrDef(
        "cpu_int8_matmul", (("dest", "out"), *((name, "in") for name in OPERANDS)), attrs=OUTPUT_ATTR_NAMES,
        graph="cpu_int8_matmul",
        doc="CPU backend: dest = f32(sum (input + offset) * W - correction) * multiplier + bias, vpdpbusd on "
        "packed int8 weights.",
    ),
))  # fmt: skip


def conv_weights(w: np.ndarray) -> np.ndarray:
    """Integer OIHW filter `w` as the GEMM weights [KH * KW * C4, O] the conv kernel reads, C4 = C rounded up to
    4 (zero rows): row (kh * KW + kw) * C4 + c holds W[:, c, kh, kw], so each tap starts a packed K step."""
    o, c, kh, kw = w.shape
    c4 = -(-c // K_STEP) * K_STEP
    taps = np.zeros((kh, kw, c4, o), w.dtype)
    taps[:, :, :c] = w.transpose(2, 3, 1, 0)
    return taps.reshape(kh * kw * c4, o)


# A convolution's window: its taps, strides and dilation (a dilated one reads its taps that far apart: DeepLab's and
# UVDoc's dilated layers do only their real taps).
CONV_WINDOW = ("kernels", "strides", "dilation")
CONV_ATTRS = tuple((name, Attr.INTS) for name in CONV_WINDOW)


def gemm_conv(op: ir.Operation, w: np.ndarray) -> tuple[np.ndarray, dict[str, ir.Attribute]]:
    """The GEMM weights and attributes of the cpu_int8_conv_nhwc computing group-1 convolution `op` with integer
    OIHW filter `w` (int8_match.exact_weights): `conv_weights`, `op`'s window, strides and dilation, and an epilogue
    that keeps the f32 result (`output_attributes`)."""
    return conv_weights(w), {name: op.attributes[name] for name in CONV_WINDOW} | output_attributes()


def _extent(a: Attrs) -> tuple[int, int]:
    """The input rows and columns a window of `a`'s kernels at its dilation spans."""
    (kh, kw), (dh, dw) = a["kernels"], a["dilation"]
    return (kh - 1) * dh + 1, (kw - 1) * dw + 1


def _conv_geometry(input_: Shape, weights: Shape, bias: Shape, a: Attrs) -> Shape:
    rank(input_, 4, "input (NHWC, padded)")
    n, h, w, c = input_
    kh, kw = a["kernels"]
    sh, sw = a["strides"]
    eh, ew = _extent(a)
    require(min(a["dilation"]) > 0, f"dilation must be positive, got {list(a['dilation'])}")
    require(eh <= h and ew <= w and sh > 0 and sw > 0, f"kernels {[kh, kw]} at dilation {list(a['dilation'])} / "
            f"strides {[sh, sw]} do not fit {h}x{w}")  # fmt: skip
    o = bias[0]
    packed = packed_rows(kh * kw * -(-c // K_STEP) * K_STEP, o)
    require(tuple(weights) in packed, f"weights must be packed as {list(packed[0])} (one more row with offsets), got "
            f"{list(weights)}")  # fmt: skip
    return (n, (h - eh) // sh + 1, (w - ew) // sw + 1, o)


def _conv_shape(o: Sequence[Shape], a: Attrs, _: Shape | None) -> Shape:
    input_, weights, corr, multiplier, bias = o
    for vector, what in ((corr, "correction"), (multiplier, "multiplier"), (bias, "bias")):
        rank(vector, 1, what)
        require(vector[0] == bias[0], f"{what} must have the bias's length {bias[0]}, got {vector[0]}")
    return _conv_geometry(input_, weights, bias, a)


def conv_product(op: ir.Operation, a: list[Array]) -> Array:
    """The convolution's f32 result before its epilogue, in exact integer arithmetic: one int64 product per
    filter tap, summed."""
    x, packed, corr, multiplier, bias = a
    (kh, kw), (sh, sw), (dh, dw) = ([int(v) for v in ir.DenseI64ArrayAttr(op.attributes[name])]
                                    for name in CONV_WINDOW)  # fmt: skip
    n, h, w, c = x.shape
    o = bias.shape[0]
    c4 = -(-c // K_STEP) * K_STEP
    taps = unpack_weights(packed, kh * kw * c4, o).reshape(kh, kw, c4, o)[:, :, :c].astype(np.int64)
    oh, ow = (h - (kh - 1) * dh - 1) // sh + 1, (w - (kw - 1) * dw - 1) // sw + 1
    u = x.astype(np.int64) + offset(x.dtype)
    acc = sum(u[:, i * dh : i * dh + sh * (oh - 1) + 1 : sh, j * dw : j * dw + sw * (ow - 1) + 1 : sw] @ taps[i, j]
              for i in range(kh) for j in range(kw))  # fmt: skip
    acc = (acc - corr).astype(np.int32)
    return acc.astype(np.float32) * multiplier.astype(np.float32) + bias.astype(np.float32)


def evaluate_conv(op: ir.Operation, a: list[Array]) -> Array:
    return epilogue(op, conv_product(op, a))


CPU_INT8_CONV = define(OpDef(
    "cpu_int8_conv_nhwc",
    "CPU backend: int8 or uint8 NHWC input, already padded (with its zero point), convolved with a constant int8 "
    "filter packed [ceil(O/16), KH * KW * ceil(C/4), 64] (conv_weights, then pack_weights), its taps `dilation` "
    "apart, requantized to f32 as cpu_int8_matmul: [N, OH, OW, O] (backends/cpu/int8_ops.py).",
    OPERANDS, attrs=(*CONV_ATTRS, *OUTPUT_ATTRS), backend="cpu",
    shape=_conv_shape, types=_types, evaluate=evaluate_conv,
    ir=IrDef(
        "cpu_int8_conv_nhwc", (("dest", "out"), *((name, "in") for name in OPERANDS)),
        attrs=(*CONV_WINDOW, *OUTPUT_ATTR_NAMES),
        graph="cpu_int8_conv_nhwc",
        doc="CPU backend: dest = f32(sum (input + offset) * W - correction) * multiplier + bias over each (dilated) "
        "window of the padded NHWC input, vpdpbusd on packed int8 weights.",
    ),
))  # fmt: skip


# A residual block's output: the convolution's f32 result plus the shortcut (`addend`, the result's shape), added
# before the epilogue's relu and quantization, so that the add, the relu and the next product's quantization are
# not passes of their own over the block's output (glow-cpu-int8's `fuse_residual`). An imported QDQ model adds two
# dequantized uint8 tensors: with `product_scale`, the product is first quantized to uint8 and dequantized (its
# QuantizeLinear -> DequantizeLinear), and a uint8 addend is dequantized with `addend_scale` / `addend_zero`, so the
# block's output is one uint8 tensor that the next block's body and add both read. Each step is the float32
# operation of the graph's (QuantizeLinear: divf, roundeven, addf, clamp; DequantizeLinear: subf, mulf).
RESIDUAL_OPERANDS = (*OPERANDS, "addend")
RESIDUAL_ATTRS = (("product_scale", Attr.FLOAT), ("product_zero", Attr.INT), ("addend_scale", Attr.FLOAT),
                  ("addend_zero", Attr.INT))  # fmt: skip


def residual_attributes(product_scale: float = 0.0, product_zero: int = 0, addend_scale: float = 0.0,
                        addend_zero: int = 0) -> dict[str, ir.Attribute]:  # fmt: skip
    return {"product_scale": Attr.FLOAT.make(product_scale), "product_zero": Attr.INT.make(product_zero),
            "addend_scale": Attr.FLOAT.make(addend_scale), "addend_zero": Attr.INT.make(addend_zero)}  # fmt: skip


def residual_values(op: ir.Operation) -> dict[str, float]:
    """Residual op `op`'s RESIDUAL_ATTRS by name, as numbers (a scale of 0: no such step)."""
    return {name: ir.FloatAttr(op.attributes[name]).value if kind == Attr.FLOAT else
            ir.IntegerAttr(op.attributes[name]).value for name, kind in RESIDUAL_ATTRS}  # fmt: skip


def _residual_shape(o: Sequence[Shape], a: Attrs, r: Shape | None) -> Shape:
    result = _conv_shape(o[:5], a, r)
    require(tuple(o[5]) == tuple(result), f"addend must have the result's shape {list(result)}, got {list(o[5])}")
    return result


def _residual_types(operands: Sequence[str], result: str | None) -> str:
    if operands[5] not in ("f32", "ui8"):
        raise ShapeError(f"addend must be f32, or ui8 with an addend scale, got {operands[5]}")
    return _types(operands[:5], result)


def evaluate_residual(op: ir.Operation, a: list[Array]) -> Array:
    y, steps = conv_product(op, a[:5]), residual_values(op)
    if steps["product_scale"]:
        y = dequantized(quantized(y, steps["product_scale"], steps["product_zero"]), steps["product_scale"],
                        steps["product_zero"])  # fmt: skip
    addend = a[5]
    if addend.dtype == np.uint8:
        addend = dequantized(addend, steps["addend_scale"], steps["addend_zero"])
    return epilogue(op, y + addend.astype(np.float32))


CPU_INT8_CONV_ADD = define(OpDef(
    "cpu_int8_conv_nhwc_add",
    "CPU backend: cpu_int8_conv_nhwc whose f32 result (quantized to uint8 and back with product_scale != 0) gets "
    "`addend` (the result's shape: a residual block's shortcut; f32, or ui8 dequantized with addend_scale and "
    "addend_zero) added before the epilogue's relu and quantization (backends/cpu/int8_ops.py).",
    RESIDUAL_OPERANDS, attrs=(*CONV_ATTRS, *OUTPUT_ATTRS, *RESIDUAL_ATTRS),
    backend="cpu", shape=_residual_shape, types=_residual_types, evaluate=evaluate_residual,
    ir=IrDef(
        "cpu_int8_conv_nhwc_add", (("dest", "out"), *((name, "in") for name in RESIDUAL_OPERANDS)),
        attrs=(*CONV_WINDOW, *OUTPUT_ATTR_NAMES, *(name for name, _ in RESIDUAL_ATTRS)),
        graph="cpu_int8_conv_nhwc_add",
        doc="CPU backend: dest = cpu_int8_conv_nhwc's f32(sum (input + offset) * W - correction) * multiplier + "
        "bias (through uint8 with product_scale) + addend (dequantized when ui8), then its epilogue, vpdpbusd on "
        "packed int8 weights.",
    ),
))  # fmt: skip


def _quantize_types(operands: Sequence[str], result: str | None) -> str:
    if tuple(operands) != ("f32",) or result not in (None, "ui8"):
        raise ShapeError(f"quantizes f32 to ui8, got {', '.join(operands)} -> {result}")
    return "ui8"


def evaluate_quantize(op: ir.Operation, a: list[Array]) -> Array:
    scale, zero = (ir.FloatAttr(op.attributes[name]).value for name in ("output_scale", "output_zero"))
    return quantized(a[0].astype(np.float32), scale, int(zero))


# A uint8 QuantizeLinear that no product's epilogue can take (its input has other users: a residual block's
# output, which the next block's add reads too): one pass in the epilogue's float32 operations, where the graph's
# chain of div, round, add, max, min and convert_to ran as separate passes.
CPU_QUANTIZE_U8 = define(OpDef(
    "cpu_quantize_u8",
    "CPU backend: uint8 QuantizeLinear of an f32 tensor, clamp(round_half_even(input / output_scale) + "
    "output_zero, 0, 255), in one pass (backends/cpu/int8_ops.py).",
    ("input",), attrs=(("output_scale", Attr.FLOAT), ("output_zero", Attr.FLOAT)), backend="cpu",
    shape=lambda o, a, r: tuple(o[0]), types=_quantize_types, evaluate=evaluate_quantize,
    # Elementwise for the graph passes (glow-sink-transpose moves transposes through it); lowered by int8_gemm.
    traits=frozenset((Trait.ELEMENTWISE,)),
    ir=IrDef(
        "cpu_quantize_u8", (("dest", "out"), ("src", "in")), attrs=("output_scale", "output_zero"),
        graph="cpu_quantize_u8",
        doc="CPU backend: dest (ui8) = clamp(round_half_even(src / output_scale) + output_zero, 0, 255).",
    ),
))  # fmt: skip


# Dynamic quantization (onnxruntime's quantize_dynamic, quantize(dynamic=True)): the activation's zero point and
# scale are run-time values computed from its own min/max, so the kernel takes them as rank-0 operands and
# forms the correction and the multiplier in its epilogue; the weights stay packed int8 constants.
DYNAMIC_OPERANDS = ("input", "weights", "colsum", "multiplier", "bias", "zero", "scale")


def _dynamic_shape(o: Sequence[Shape], a: Attrs, r: Shape | None) -> Shape:
    *static, zero, scale = o
    for scalar, what in ((zero, "zero"), (scale, "scale")):
        require(tuple(scalar) == (), f"{what} must be a rank-0 tensor, got {list(scalar)}")
    return _shape(static, a, r)


def _dynamic_types(operands: Sequence[str], result: str | None) -> str:
    if tuple(operands[5:]) != ("i32", "f32"):
        raise ShapeError(f"zero and scale must be i32 and f32, got {', '.join(operands[5:])}")
    return _types(operands[:5], result)


def dynamic_product(x: Array, packed: Array, sums: Array, multiplier: Array, bias: Array, zero: Array,
                    scale: Array) -> Array:  # fmt: skip
    """cpu_int8_matmul_dynamic's f32 result before its epilogue, in exact integer arithmetic: the static
    product with correction (offset + zero) * colsum and multiplier float32(scale * multiplier)."""
    corr = (offset(x.dtype) + int(zero)) * sums.astype(np.int64)
    return product(x, packed, corr, np.float32(scale) * multiplier.astype(np.float32), bias)


def evaluate_dynamic(op: ir.Operation, a: list[Array]) -> Array:
    return epilogue(op, dynamic_product(*a))


CPU_INT8_MATMUL_DYNAMIC = define(OpDef(
    "cpu_int8_matmul_dynamic",
    "CPU backend: cpu_int8_matmul whose activation zero point and scale are run-time rank-0 values (dynamic "
    "quantization): f32(sum (input + offset) * W - (offset + zero) * colsum) * float32(scale * multiplier) + bias "
    "(backends/cpu/int8_ops.py).",
    DYNAMIC_OPERANDS, attrs=OUTPUT_ATTRS, backend="cpu", shape=_dynamic_shape, types=_dynamic_types,
    evaluate=evaluate_dynamic,
    ir=IrDef(
        "cpu_int8_matmul_dynamic", (("dest", "out"), *((name, "in") for name in DYNAMIC_OPERANDS)),
        attrs=OUTPUT_ATTR_NAMES, graph="cpu_int8_matmul_dynamic",
        doc="CPU backend: dest = f32(sum (input + offset) * W - (offset + zero) * colsum) * (scale * multiplier) + "
        "bias, vpdpbusd on packed int8 weights with run-time zero point and scale.",
    ),
))  # fmt: skip


def _u8_pool_types(operands: Sequence[str], result: str | None) -> str:
    if tuple(operands) != ("ui8",) or result not in (None, "ui8"):
        raise ShapeError(f"pools ui8 to ui8, got {', '.join(operands)} -> {result}")
    return "ui8"


# The float pools' NHWC rules are in ops.py, imported when called: importing it here would define its ops before
# these and reorder the rendered dialect.
def _u8_pool_shape(o: Sequence[Shape], a: Attrs, _: Shape | None) -> Shape:
    from glow_mlir.backends.cpu.ops import pool_nhwc

    return pool_nhwc(*o, kernels=a["kernels"], strides=a["strides"], pads=a["pads"])


def evaluate_u8_max_pool(op: ir.Operation, a: list[Array]) -> Array:
    from glow_mlir.backends.cpu.ops import nhwc_pool

    # uint8 values are exact in f32, and the float pool's -inf padding never wins.
    return nhwc_pool(ref.max_pool)(op, [a[0].astype(np.float32)]).astype(np.uint8)


# Max pooling of a uint8 activation (glow-cpu-int8's `int8_max_pool`): QuantizeLinear is monotone, so it commutes
# with max, and ResNet's stem pools the uint8 activation that the convolution before writes in its epilogue instead
# of the f32 one (a quarter of the bytes), where the float pool ran between the convolution and a quantization pass.
# The padding is read in the kernel (windows clipped to the input), not copied into a canvas.
CPU_MAX_POOL_U8 = define(OpDef(
    "cpu_max_pool_u8_nhwc",
    "CPU backend: max pooling of a uint8 NHWC tensor, padded windows clipped to the input "
    "(backends/cpu/int8_ops.py).",
    ("input",), attrs=WINDOW, backend="cpu", shape=_u8_pool_shape, types=_u8_pool_types,
    evaluate=evaluate_u8_max_pool,
    ir=IrDef("cpu_max_pool_u8_nhwc", POOL_OPERANDS, attrs=("kernels", "strides", "pads"),
             graph="cpu_max_pool_u8_nhwc",
             doc="CPU backend: uint8 max pooling in NHWC over the windows clipped to the input (pads [top, left, "
             "bottom, right])."),
))  # fmt: skip


# Depthwise int8 convolution (int8_depthwise.py): each output channel reads only its own input channel, so there is
# no reduction over channels for vpdpbusd's 4-byte groups; the kernel multiplies and adds the integers per channel
# (16 channels a vector), and its sums are exact while the window is small enough (`depthwise_exact`). The filter is
# int8 [KH, KW, C] (channels last, as the NHWC input); the correction is the zero point times each channel's filter
# sum (the input is widened as its own signed or unsigned value: no offset). The padding is the zero point
# (attribute `zero`), read in the kernel rather than copied into a padded canvas.
# The largest sum of |q| * |w| over a window the kernel's float32 arithmetic holds exactly: 2^24.
F32_EXACT = 1 << 24


def depthwise_exact(taps: int) -> bool:
    """Whether a depthwise window of `taps` taps sums exactly in float32: every partial sum of q * w (q a uint8 or
    int8 activation, |q| <= 255; w int8, |w| <= 128) and of (q - z) * w stays below 2^24. True up to 514 taps
    (7x7 windows have 49)."""
    return taps * 255 * 128 < F32_EXACT


def _depthwise_types(operands: Sequence[str], result: str | None) -> str:
    # The filter is int8, or int16 for uint8 weights less a zero point (int8_depthwise.takes).
    if operands[1] not in ("i8", "i16"):
        raise ShapeError(f"weights must be i8 or i16, got {operands[1]}")
    return _types([operands[0], "i8", *operands[2:]], result)


def depthwise_weights(w: np.ndarray) -> np.ndarray:
    """Integer depthwise filter `w` [C, 1, KH, KW] (OIHW, one input channel per group) as the kernel reads it:
    [KH, KW, C]."""
    return np.ascontiguousarray(w[:, 0].transpose(1, 2, 0))


def depthwise_correction(w: np.ndarray, zero: int, accumulated: np.ndarray | None = None) -> np.ndarray:
    """zero * (each channel's filter sum), less an integer bias inside the accumulation (`accumulated`: QLinearConv's
    int32 bias), as i32, from the [KH, KW, C] filter."""
    corr = zero * w.astype(np.int64).sum(axis=(0, 1))
    return (corr if accumulated is None else corr - accumulated).astype(np.int32)


def _depthwise_shape(o: Sequence[Shape], a: Attrs, _: Shape | None) -> Shape:
    input_, weights, corr, multiplier, bias = o
    rank(input_, 4, "input (NHWC)")
    rank(weights, 3, "weights ([KH, KW, C])")
    n, h, w, c = input_
    kh, kw = a["kernels"]
    sh, sw = a["strides"]
    top, left, bottom, right = a["pads"]
    h, w = h + top + bottom, w + left + right
    require(kh <= h and kw <= w and sh > 0 and sw > 0, f"kernels {[kh, kw]} / strides {[sh, sw]} do not fit {h}x{w}")
    require(min(top, left, bottom, right) >= 0, f"pads must not be negative, got {[top, left, bottom, right]}")
    require(tuple(weights) == (kh, kw, c), f"weights must be [{kh}, {kw}, {c}], got {list(weights)}")
    for vector, what in ((corr, "correction"), (multiplier, "multiplier"), (bias, "bias")):
        rank(vector, 1, what)
        require(vector[0] == c, f"{what} must have the channels' length {c}, got {vector[0]}")
    return (n, (h - kh) // sh + 1, (w - kw) // sw + 1, c)


def depthwise_product(a: list[Array], kernels: Sequence[int], strides: Sequence[int], pads: Sequence[int],
                      zero: int) -> Array:  # fmt: skip
    """The depthwise convolution's f32 result before its epilogue, in exact integer arithmetic over the input padded
    with `zero` ([top, left, bottom, right]): one int64 product per filter tap, summed."""
    x, w, corr, multiplier, bias = a
    kh, kw = kernels
    sh, sw = strides
    top, left, bottom, right = pads
    q = np.pad(x.astype(np.int64), ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=zero)
    _, h, wd, _ = q.shape
    oh, ow = (h - kh) // sh + 1, (wd - kw) // sw + 1
    taps = w.astype(np.int64)
    acc = sum(q[:, i : i + sh * (oh - 1) + 1 : sh, j : j + sw * (ow - 1) + 1 : sw] * taps[i, j]
              for i in range(kh) for j in range(kw))  # fmt: skip
    acc = (acc - corr).astype(np.int32)
    return acc.astype(np.float32) * multiplier.astype(np.float32) + bias.astype(np.float32)


def evaluate_depthwise(op: ir.Operation, a: list[Array]) -> Array:
    window = [[int(v) for v in ir.DenseI64ArrayAttr(op.attributes[name])] for name in ("kernels", "strides", "pads")]
    return epilogue(op, depthwise_product(a, *window, ir.IntegerAttr(op.attributes["zero"]).value))


DEPTHWISE_ATTRS = (("kernels", Attr.INTS), ("strides", Attr.INTS), ("pads", Attr.INTS), ("zero", Attr.INT))
CPU_INT8_DEPTHWISE = define(OpDef(
    "cpu_int8_depthwise_nhwc",
    "CPU backend: depthwise convolution of an int8 or uint8 NHWC input padded with its zero point `zero` (pads [top, "
    "left, bottom, right]) by a constant int8 (or int16) filter [KH, KW, C], requantized to f32: f32(sum input * W - "
    "correction) * multiplier + bias per channel, correction = zero * the channel's filter sum, then the epilogue "
    "of cpu_int8_matmul (backends/cpu/int8_ops.py).",
    OPERANDS, attrs=(*DEPTHWISE_ATTRS, *OUTPUT_ATTRS), backend="cpu", shape=_depthwise_shape,
    types=_depthwise_types, evaluate=evaluate_depthwise,
    ir=IrDef(
        "cpu_int8_depthwise_nhwc", (("dest", "out"), *((name, "in") for name in OPERANDS)),
        attrs=(*(name for name, _ in DEPTHWISE_ATTRS), *OUTPUT_ATTR_NAMES),
        graph="cpu_int8_depthwise_nhwc",
        doc="CPU backend: dest[n, y, x, c] = f32(sum over the window of input (padded with zero) * W[., ., c] - "
        "correction) * multiplier + bias, then relu, clip and uint8 quantization; the padding is read in the kernel.",
    ),
))  # fmt: skip
