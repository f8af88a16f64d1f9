"""glow-cpu-schedule's recipes of the native bf16 products: linalg.matmul and linalg.conv_2d_nhwc_hwcf on bf16
factors with an f32 result and constant weights (glow-lower's widen_half leaves matmul, fully_connected and
the group-1 NHWC convolution with constant weights so), computed with avx512_bf16's vdpbf16ps.

vdpbf16ps multiplies 16 pairs of bf16 and adds both products of a pair into one f32 lane,
`acc[j] += a[2j + 1] * b[2j + 1] + a[2j] * b[2j]` (each product exact in f32, rounded to nearest even at each
addition, denormal inputs and results flushed to zero). So the weights are packed at compile time into
[ceil(O / 16)][KH * KW * ceil(C / 2)][16][2] (`pack_weights`, with the nv vectors a tile loads per step side by
side): one 64-byte vector holds 16 output channels' weights for two consecutive input channels (zeros past C
and O), and the pair x[c], x[c + 1] of an output pixel's input is broadcast to the 16 lanes as one 32-bit
element. An odd C ends each window row with a pair [x[C - 1], 0].

The register tile is mr output pixels (consecutive along W; a matmul's rows) by nv vectors of 16 output
channels: nv = min(4, vectors), mr = min(pixels, 24 // nv), so mr * nv <= 24 accumulators leave the other 8
of the 32 zmm registers to the weights and the broadcast pair. Pixels the tile does not divide get a tile of
their own (mr = pixels % mr); the channels past the last block of nv full vectors get a block of their own,
whose last vector, partial when 16 does not divide O, is loaded and stored under a mask. A matmul is the 1x1
convolution of one image row: its rows are the pixels, K the channels.

The kernel is emitted directly as scf loops of vector ops, not as transform steps: the reduction loops carry
the accumulators, so there is nothing to hoist. It is a private function per distinct shape, called in the
product's place. A convolution starts its accumulators from the bias (the
bias op of glow-ir-to-linalg is erased); its activation runs as the elementwise kernel of its own op.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Sequence

import ml_dtypes
import numpy as np
from mlir import ir
from mlir.dialects import arith, func, scf, vector

from glow_mlir import ops
from glow_mlir.backends.cpu import bf16_host
# The f32 convolution recipe's finder of the marked bias and activation ops around a convolution.
from glow_mlir.backends.cpu.conv_recipes import epilogue as conv_epilogue
from glow_mlir.backends.cpu.outline import OUTLINED_PREFIX
from glow_mlir.backends.cpu.recipes import (
    Recipe,
    constant_data,
    elementwise_recipe,
    index_constant,
    packed_global,
    recipe,
    static_shape,
)

LANES = 16  # f32 lanes of a zmm register, each accumulating one output channel
ACCUMULATORS = 24  # of the 32 zmm registers; the others hold the weights and the broadcast pair
MAX_VECTORS = 4  # output-channel vectors per tile: 4 weights loads feed mr * 4 dot products per pair


def register_tile(pixels: int, channels: int) -> tuple[int, int]:
    """(mr, nv): mr output pixels by nv vectors of 16 channels, the rule of the module doc."""
    nv = min(MAX_VECTORS, -(-channels // LANES))
    return max(1, min(pixels, ACCUMULATORS // nv)), nv


def pack_weights(weights: np.ndarray) -> np.ndarray:
    """Weights [KH, KW, C, O] (a matmul's [K, N] is [1, 1, K, N]) as [ceil(O / (16 nv)), KH * KW * ceil(C / 2),
    nv, 32] bf16, nv the register tile's vectors: group g, step t = (kh * KW + kw) * ceil(C / 2) + c2, vector
    j holds channels 16 (g nv + j) .. + 15 of input channels 2 c2 and 2 c2 + 1, interleaved by pairs as
    vdpbf16ps reads them ([N / 16][K / 2][16][2] with the nv vectors a tile loads per step side by side);
    zeros past C and O."""
    kh, kw, c, o = weights.shape
    nv = register_tile(1, o)[1]
    c2, groups = -(-c // 2), -(-o // (LANES * nv))
    padded = np.zeros((kh, kw, 2 * c2, groups * nv * LANES), ml_dtypes.bfloat16)
    padded[:, :, :c, :o] = weights
    pairs = padded.reshape(kh, kw, c2, 2, groups, nv, LANES).transpose(4, 0, 1, 2, 5, 6, 3)
    return np.ascontiguousarray(pairs.reshape(groups, kh * kw * c2, nv, 2 * LANES))


# The glow products whose kernels are here, each with its weights as operand 1.
NATIVE_PRODUCTS = frozenset({"glow.matmul", "glow.fully_connected", "glow.cpu_conv_nhwc"})
# A product that uses each weight for at most STREAMING_ROWS output rows (pixels) and whose f32 weights
# exceed the L2 cache (2 MiB a core here) is bound by streaming its weights (a GEMV): bf16 halves those bytes,
# which pays even where vdpbf16ps computes at half the FMA's rate. Measured on this Xeon, f32 / bf16 time:
# [K, N] = 4096 x 4096 at M = 1, 2, 4, 8: 1.49, 1.43, 1.36, 0.83; 2048 x 1000 at M = 1 and 8: 1.41, 0.97;
# 768 x 3072 at M = 1 and 4: 1.55, 1.28; 512 x 256 (0.5 MiB) at M = 1: 0.83.
STREAMING_ROWS = 4
STREAMING_BYTES = 2 << 20


def native_product(op: ir.Operation) -> bool:
    """The CPU backend's `native_bf16`: a bf16 matmul, fully_connected or group-1 NHWC convolution whose
    weights are a constant, on a host where vdpbf16ps beats the f32 FMA (bf16_host.py), or on any host with
    avx512_bf16 if the product streams its weights (STREAMING_ROWS). Products of two activations (attention's
    batch_matmul) and grouped or depthwise convolutions stay f32: their kernels are the f32 ones."""
    grouped = "group" in op.attributes and ir.IntegerAttr(op.attributes["group"]).value != 1
    if op.name not in NATIVE_PRODUCTS or grouped:
        return False
    weights = op.operands[1].owner
    is_constant = isinstance(weights, ir.OpView | ir.Operation) and weights.operation.name == "glow.constant"
    if not (is_constant and _is_bf16(op.operands[0])):
        return False
    rows = int(np.prod(ir.ShapedType(op.results[0].type).shape[:-1]))
    streams = rows <= STREAMING_ROWS and 4 * int(np.prod(ir.ShapedType(op.operands[1].type).shape)) > STREAMING_BYTES
    return bf16_host.dot_pays() or (streams and bf16_host.has_avx512_bf16())


def _is_bf16(value: ir.Value) -> bool:
    return ir.ShapedType(value.type).element_type == ir.BF16Type.get()


def bf16_product(op: ir.Operation) -> bool:
    """Whether linalg `op` multiplies bf16 factors into an f32 result: a native bf16 product (its recipe's
    guard; whether the recipe can run it is its own check)."""
    *factors, out = op.operands
    return all(_is_bf16(v) for v in factors) and ir.ShapedType(out.type).element_type == ir.F32Type.get()


@dataclasses.dataclass(frozen=True)
class _Product:
    """A product as the kernel sees it: x [N, H, W, C] (a matmul's A [M, K]), packed weights, the f32 output y
    [N, OH, OW, O] ([M, N]) and the bias [O] the accumulators start from (None: they start from y)."""

    x: ir.Value
    packed: ir.Value
    y: ir.Value
    bias: ir.Value | None
    kernel: tuple[int, int]
    strides: tuple[int, int]
    dilations: tuple[int, int]
    channels: int

    @property
    def matmul(self) -> bool:
        return len(static_shape(self.x)) == 2


@recipe("linalg.matmul", when=bf16_product)
def bf16_matmul_recipe(op: ir.Operation) -> Recipe | None:
    """C += A x B on bf16 A and constant bf16 B: the vdpbf16ps kernel; None leaves it to loops."""
    a, b, c = op.operands
    weights = constant_data(b)
    if weights is None or not all(_rows_contiguous(v) for v in (a, c)):
        return None
    k, n = weights.shape
    packed = pack_weights(weights.reshape(1, 1, k, n))
    _call(op, _Product(a, _packed(op, packed), c, None, (1, 1), (1, 1), (1, 1), k))
    op.erase()
    return Recipe(())


@recipe("linalg.conv_2d_nhwc_hwcf", when=bf16_product)
def bf16_conv_recipe(op: ir.Operation) -> Recipe | None:
    """y = activation(conv(x, filter) + bias) on bf16 x and a constant bf16 filter: the vdpbf16ps kernel,
    starting from the bias; the activation runs as its own elementwise kernel. None leaves it to loops."""
    x, filter_, y = op.operands
    weights = constant_data(filter_)
    bias_op, activation_op = conv_epilogue(op)
    bias = bias_op.operands[0] if bias_op is not None else None
    if weights is None or not all(_rows_contiguous(v) for v in (x, y) + ((bias,) if bias is not None else ())):
        return None
    strides = tuple(ir.DenseIntElementsAttr(op.attributes["strides"]))
    dilations = tuple(ir.DenseIntElementsAttr(op.attributes["dilations"]))
    kh, kw, c, _ = weights.shape
    packed = _packed(op, pack_weights(weights))
    _call(op, _Product(x, packed, y, bias, (kh, kw), strides, dilations, c))  # type: ignore[arg-type]
    for done in (bias_op, op):
        if done is not None:
            done.erase()
    activation = elementwise_recipe(activation_op) if activation_op is not None else None
    return activation or Recipe(())


def _rows_contiguous(value: ir.Value) -> bool:
    """A memref of static shape, strides and offset whose last dim is contiguous, which the kernel's vector
    loads and stores need: a whole buffer, or a view into one (a convolution writing into the interior of
    the next op's padded input)."""
    t = ir.MemRefType(value.type)
    return ops.fully_static(t) and t.get_strides_and_offset()[0][-1] == 1


def _packed(user: ir.Operation, data: np.ndarray) -> ir.Value:
    """The packed weights as a new constant global, named by their shape, and its get_global."""
    return packed_global(user, data, f"__glow_bf16_packed_{'x'.join(map(str, data.shape))}")


def _call(op: ir.Operation, p: _Product) -> None:
    """A call, at the insertion point, of the kernel of `p` as a private function of the module: outlined,
    as glow-cpu-schedule's kernels are (LLVM neither inlines it nor unrolls its loops: llvm.py), and one
    function per distinct shape and window, the weights and activations being its arguments."""
    args = [p.x, p.packed, *([p.bias] if p.bias is not None else []), p.y]
    key = "|".join([*(str(v.type) for v in args), str((p.kernel, p.strides, p.dilations, p.channels))])
    name = f"{OUTLINED_PREFIX}bf16_{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    module = op
    while module.name != "builtin.module":
        module = module.parent
    body = module.regions[0].blocks[0]
    names = {ir.StringAttr(f.attributes["sym_name"]).value for f in body.operations if "sym_name" in f.attributes}
    if name not in names:
        with ir.InsertionPoint(body):
            function = func.FuncOp(name, ir.FunctionType.get([v.type for v in args], []), visibility="private")
            entry = function.add_entry_block()
        with ir.InsertionPoint(entry):
            x, packed, *rest = entry.arguments
            _emit(dataclasses.replace(p, x=x, packed=packed, bias=rest[0] if len(rest) == 2 else None, y=rest[-1]))
            func.ReturnOp([])
    func.CallOp([], ir.FlatSymbolRefAttr.get(name), args)


# ----------------------------------------------------------------------------------------------------------
# The kernel


def _add(a: ir.Value, b: int | ir.Value) -> ir.Value:
    if isinstance(b, int):
        return a if b == 0 else arith.addi(a, index_constant(b))
    return arith.addi(a, b)


def _mul(a: ir.Value, b: int) -> ir.Value:
    return a if b == 1 else arith.muli(a, index_constant(b))


def _loop(
    start: int,
    stop: int,
    step: int,
    carried: Sequence[ir.Value],
    body: Callable[[ir.Value, list[ir.Value]], list[ir.Value]],
) -> list[ir.Value]:
    """An scf.for from `start` to `stop` by `step` carrying `carried`; `body(iv, values)` returns the next
    values. A single trip is emitted without the loop (its iv a constant)."""
    if stop - start == step:
        return body(index_constant(start), list(carried))
    loop = scf.ForOp(index_constant(start), index_constant(stop), index_constant(step), list(carried))
    with ir.InsertionPoint(loop.body):
        scf.YieldOp(body(loop.induction_variable, list(loop.inner_iter_args)))
    return list(loop.results)


@dataclasses.dataclass(frozen=True)
class _Tile:
    """The shape of a register tile: mr pixels by nv vectors of output channels, of whose last vector `lanes`
    are valid (16: all; fewer are loaded and stored under a mask)."""

    mr: int
    nv: int
    lanes: int


def _emit(p: _Product) -> None:
    """The kernel at the insertion point: loops over (n, oh), channel blocks and pixel tiles, each tile's
    accumulators through the reduction over (kh, kw, input-channel pairs)."""
    y_shape = static_shape(p.y)
    if p.matmul:
        rows, pixels, channels = 1, y_shape[0], y_shape[1]
    else:
        rows, pixels, channels = y_shape[0] * y_shape[1], y_shape[2], y_shape[3]
    mr, nv = register_tile(pixels, channels)
    full = channels // LANES
    blocks = [(_Tile(mr, nv, LANES), 0, full - full % nv)]  # (tile, first vector, end vector) of each part
    tail = full % nv + (1 if channels % LANES else 0)
    if tail:
        blocks.append((_Tile(mr, tail, channels % LANES or LANES), full - full % nv, full - full % nv + tail))
    main_pixels = pixels - pixels % mr

    def row(r: ir.Value, _: list[ir.Value]) -> list[ir.Value]:
        for tile, v0, v1 in blocks:
            if v1 == v0:
                continue
            for px0, px1, tile_mr in ((0, main_pixels, mr), (main_pixels, pixels, pixels % mr)):
                if px1 > px0:
                    shaped = dataclasses.replace(tile, mr=tile_mr)
                    _loop(v0, v1, tile.nv, [], lambda v, _c, t=shaped, a=px0, b=px1: _pixels(p, r, v, t, a, b))
        return []

    _loop(0, rows, 1, [], row)


def _pixels(p: _Product, r: ir.Value, vec: ir.Value, tile: _Tile, start: int, stop: int) -> list[ir.Value]:
    _loop(start, stop, tile.mr, [], lambda px, _c: _tile(p, r, vec, px, tile))
    return []


def _tile(p: _Product, r: ir.Value, vec: ir.Value, px: ir.Value, tile: _Tile) -> list[ir.Value]:
    """One register tile: accumulators from the bias (or y), the reduction, the store."""
    f32, bf16 = ir.F32Type.get(), ir.BF16Type.get()
    acc_type = ir.VectorType.get([LANES], f32)
    mask = vector.create_mask(ir.VectorType.get([LANES], ir.IntegerType.get_signless(1)), [index_constant(tile.lanes)])
    y_shape = static_shape(p.y)
    channel = [_mul(_add(vec, j), LANES) for j in range(tile.nv)]
    group = arith.divui(vec, index_constant(ir.MemRefType(p.packed.type).shape[2]))

    def y_index(i: int, j: int) -> list[ir.Value]:
        pixel = _add(px, i)
        if p.matmul:
            return [pixel, channel[j]]
        n, oh = arith.divui(r, index_constant(y_shape[1])), arith.remui(r, index_constant(y_shape[1]))
        return [n, oh, pixel, channel[j]]

    def load(base: ir.Value, index: list[ir.Value], j: int) -> ir.Value:
        if tile.lanes == LANES or j < tile.nv - 1:
            return vector.load(acc_type, base, index)
        zero = arith.ConstantOp(acc_type, ir.DenseElementsAttr.get_splat(acc_type, ir.FloatAttr.get(f32, 0.0)))
        return vector.maskedload(acc_type, base, index, mask, zero.result)

    if p.bias is not None:
        starts = [load(p.bias, [channel[j]], j) for j in range(tile.nv)]
        init = [starts[j] for _ in range(tile.mr) for j in range(tile.nv)]
    else:
        init = [load(p.y, y_index(i, j), j) for i in range(tile.mr) for j in range(tile.nv)]

    kh, kw = p.kernel
    pairs = p.channels // 2
    pair_type = ir.VectorType.get([2], bf16)
    wide_type = ir.VectorType.get([2 * LANES], bf16)
    i32 = ir.IntegerType.get_signless(32)

    def broadcast(pair: ir.Value) -> ir.Value:
        one = vector.bitcast(ir.VectorType.get([1], i32), pair)
        return vector.bitcast(wide_type, vector.broadcast(ir.VectorType.get([LANES], i32), one))

    def x_index(i: int, dy: ir.Value, dx: ir.Value, c: ir.Value) -> list[ir.Value]:
        pixel = _add(px, i)
        if p.matmul:
            return [pixel, c]
        oh_count = y_shape[1]
        n, oh = arith.divui(r, index_constant(oh_count)), arith.remui(r, index_constant(oh_count))
        h = _add(_mul(oh, p.strides[0]), _mul(dy, p.dilations[0]))
        w = _add(_mul(pixel, p.strides[1]), _mul(dx, p.dilations[1]))
        return [n, h, w, c]

    def step(accs: list[ir.Value], t: ir.Value, pair_of: Callable[[int], ir.Value]) -> list[ir.Value]:
        weights = [
            vector.load(wide_type, p.packed, [group, t, index_constant(j), index_constant(0)]) for j in range(tile.nv)
        ]
        out = list(accs)
        for i in range(tile.mr):
            a = broadcast(pair_of(i))
            for j in range(tile.nv):
                k = i * tile.nv + j
                out[k] = ir.Operation.create(
                    "x86vector.avx512.dot", results=[acc_type], operands=[accs[k], a, weights[j]]
                ).result
        return out

    c2_count = -(-p.channels // 2)

    def window(dy: ir.Value, dx: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
        first = _mul(_add(_mul(dy, kw), dx), c2_count)

        def pair_step(c2: ir.Value, values: list[ir.Value]) -> list[ir.Value]:
            c = _mul(c2, 2)
            return step(values, _add(first, c2), lambda i: vector.load(pair_type, p.x, x_index(i, dy, dx, c)))

        accs = _loop(0, pairs, 1, accs, pair_step) if pairs else accs
        if p.channels % 2:
            single = ir.VectorType.get([1], bf16)
            zero = arith.ConstantOp(single, ir.DenseElementsAttr.get_splat(single, ir.FloatAttr.get(bf16, 0.0)))

            def odd(i: int) -> ir.Value:
                last = vector.load(single, p.x, x_index(i, dy, dx, index_constant(p.channels - 1)))
                return vector.shuffle(last, zero.result, [0, 1])

            accs = step(accs, _add(first, pairs), odd)
        return accs

    accs = _loop(0, kh, 1, init, lambda dy, a: _loop(0, kw, 1, a, lambda dx, b: window(dy, dx, b)))
    for i in range(tile.mr):
        for j in range(tile.nv):
            index = y_index(i, j)
            if tile.lanes == LANES or j < tile.nv - 1:
                vector.store(accs[i * tile.nv + j], p.y, index)
            else:
                vector.maskedstore(p.y, index, mask, accs[i * tile.nv + j])
    return []
