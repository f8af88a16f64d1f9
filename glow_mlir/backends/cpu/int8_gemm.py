"""glow-ir-to-linalg's lowerings of `glow_ir.cpu_int8_matmul` and `glow_ir.cpu_int8_conv_nhwc` (int8_ops.py): an
int8 GEMM on vpdpbusd, and the direct NHWC convolution as that GEMM over output pixels.

AVX-512 VNNI's vpdpbusd multiplies the 64 unsigned bytes of one operand by the 64 signed bytes of another and
adds each group of 4 products to one of 16 i32 lanes. With the weights packed as int8_ops.py says (one
512-bit row per 16 columns and 4 steps of K), one vpdpbusd takes 4 steps of K for 16 columns of one row
of the result: its unsigned operand is 4 activation bytes of that row broadcast to every lane (xor 0x80
makes int8 the unsigned `q + 128` that the op's definition adds, uint8 goes as it is; the correction operand
takes the offset and the zero point off).

The kernel is hand-written here rather than left to a transform recipe, because nothing upstream turns a
linalg product into vpdpbusd: scf loops over a register tile of `rows` x `blocks` 16-lane i32 accumulators
(`register_tile`: at most 24, with the weights and the broadcast in the other 8 of AVX-512's 32 zmm
registers), whose k loop loads `blocks` packed weight rows and `rows` broadcasts and issues rows x blocks
vpdpbusd (`llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"`, which LLVM 22 types (<16 x i32>,
<64 x i8>, <64 x i8>)). The epilogue subtracts the correction, converts to f32, multiplies and adds the bias
(two roundings, as the reference interpreter), applies the op's relu and uint8 quantization when it has them
(int8_ops.epilogue: divf, roundeven, clamp, as the graph ops it replaces) and stores 16 columns.
`cpu_int8_matmul_dynamic` is the same kernel whose epilogue first forms the correction (offset + zero) *
colsum and the multiplier float32(scale * multiplier) from its run-time zero point and scale.

Weights with column offsets (int8_ops.pack_weights: uint8 ones less their zero point) add c[n] times each row's
byte sum before the correction: after a tile's K loops, each row's K bytes (a pixel's window: KH runs of KW x C
contiguous bytes) go 64 at a time through vpdpbusd against ones, summed across the lanes, and the epilogue adds
the block's 16 offsets (one more packed row) times that sum, exactly in i32. The sums cost 1-4 % of the kernel's
time; a masked load fills the bytes it skips with what becomes 0 once unsigned (0x80 for int8), so the weights'
padding rows, W - c = -c there, add nothing.

Every M, N, K: the column-block groups of `blocks` run in an scf.for, the last group (fewer blocks, the
last one partial when 16 does not divide N: masked loads and stores) is emitted once after it; likewise
the row tiles and their remainder; a K not a multiple of 4 ends with a masked 1-3 byte load (the weights
are zero there). Column groups are the outer loop, so a group's packed weights (blocks x 64 x K/4 bytes)
stay in cache while every row tile streams past them.

A convolution is the same tiles over the output pixels (dest viewed as [N * OH * OW, O]) whose K loops run
over the filter rows, filter columns and channels of each pixel's window in the padded input, read in place
(no im2col copy), the taps `dilation` apart (a dilated window costs its taps only); a 1x1 stride-1 convolution
is exactly the GEMM of the input viewed as [N * H * W, C].
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
from mlir import ir
from mlir.dialects import arith, builtin, llvm, math, memref, scf, vector

from glow_mlir import ops
from glow_mlir.backends.cpu.int8_ops import K_STEP, LANES, SIGNED_OFFSET, packed_rows, residual_values
from glow_mlir.backends.cpu.vector_body import splat
from glow_mlir.codegen.builders import index, pair, reshape, storage_type
from glow_mlir.codegen.table import fail, lowering

VPDPBUSD = "llvm.x86.avx512.vpdpbusd.512"
# Accumulator registers a tile may use, and the most rows or 16-column blocks it spans.
MAX_ACCUMULATORS = 24
MAX_ROWS = 8
MAX_BLOCKS = 8
# Rows of a tile when there are at least 4 column blocks (6 x 4 accumulators), else MAX_ROWS.
WIDE_ROWS = 6
WIDE_BLOCKS = 4


def register_tile(m: int, blocks: int) -> tuple[int, int]:
    """(rows, column blocks) of the register tile for an M-row result of `blocks` 16-column blocks:
    6 x 4 when both are large, more rows for narrow results and more blocks for short ones, never over
    MAX_ACCUMULATORS accumulators."""
    rows = min(m, WIDE_ROWS if blocks >= WIDE_BLOCKS else MAX_ROWS)
    return rows, min(blocks, MAX_ACCUMULATORS // rows, MAX_BLOCKS)


def vector_type(length: int, elt: ir.Type) -> ir.VectorType:
    """vector<`length` x `elt`>."""
    return ir.VectorType.get([length], elt)


def signless(buffer: ir.Value) -> ir.Value:
    """uint8 `buffer` as the i8 buffer it is stored as (glow-ir-to-linalg's `signless_types` removes the cast)."""
    return builtin.unrealized_conversion_cast([storage_type(buffer.type)], [buffer])


# A row's reader: (K step index k4 of the packed weights, the row's context) -> vpdpbusd's unsigned operand.
Accumulate = Callable[["_Kernel", list[ir.Value], list[object], ir.Value, int], list[ir.Value]]
# The sum of a row's K bytes as vpdpbusd reads them (q + offset), from its context: what weights with column offsets
# (int8_ops.column_offsets) add c[n] times, in 16 i32 lanes to be summed.
RowSum = Callable[["_Kernel", object], ir.Value]


class _Kernel:
    """The buffers and types of one int8 product over an [M, N] result, and the emitters of its register
    tiles; `rows_of(row)` gives a result row's context for `accumulate`, which emits the K loops."""

    def __init__(self, op: ir.Operation, dest: ir.Value, src: ir.Value, m: int, rows_of: Callable[[ir.Value], object],
                 accumulate: Accumulate, row_sum: RowSum, offsets: int | None,
                 addend: ir.Value | None = None) -> None:  # fmt: skip
        self.weights, self.correction, self.multiplier, self.bias = op.operands[2:6]
        # The packed weights' row of column offsets (its index in each block), when they have one (`_packing`).
        self.offsets, self.row_sum = offsets, row_sum
        # cpu_int8_matmul_dynamic: the run-time zero point and scale (rank-0), `correction` holding colsum(W).
        self.runtime = tuple(op.operands[6:8]) if op.name.endswith("_dynamic") else ()
        # cpu_int8_conv_nhwc_add: the [M, N] view of the addend (f32, or uint8 dequantized with addend_scale and
        # addend_zero), added before the relu and quantization, the product first through uint8 with product_scale.
        self.addend = addend
        self.residual = residual_values(op) if addend is not None else {}
        if self.residual.get("addend_scale"):
            self.addend = signless(addend)
        self.m, self.n = m, ops.shape(dest)[1]
        self.output = OutputSteps.of(op)
        # A quantized (uint8) result is stored as the i8 bytes it is.
        self.dest = signless(dest) if self.output.scale else dest
        # uint8 bytes are vpdpbusd's unsigned operand as they are; int8 ones get 128 added (int8_ops.offset).
        self.signed = not ir.IntegerType(ops.element_type(src)).is_unsigned
        self.src = src if self.signed else signless(src)
        self.rows_of, self.accumulate = rows_of, accumulate
        self.i8, self.i32, self.f32 = (ir.IntegerType.get_signless(8), ir.IntegerType.get_signless(32),
                                       ir.F32Type.get())  # fmt: skip
        self.acc_type, self.bytes_type = vector_type(LANES, self.i32), vector_type(LANES * K_STEP, self.i8)
        self.zero = splat(self.acc_type, ir.IntegerAttr.get(self.i32, 0))
        # xor with 0x80 in each byte: int8 q -> unsigned q + 128.
        self.flip = splat(self.acc_type, ir.IntegerAttr.get(self.i32, -0x7F7F7F80))
        # What a masked load puts in the bytes it skips: 0 once made unsigned.
        self.skipped = ir.IntegerAttr.get(self.i8, -128 if self.signed else 0)

    def columns(self, rows: int, blocks: int) -> None:
        """The whole product with `rows` x `blocks` tiles: column groups outside, row tiles inside."""
        full_blocks = self.n // LANES
        groups = full_blocks // blocks
        if groups:
            loop = scf.ForOp(index(0), index(groups * blocks), index(blocks))
            with ir.InsertionPoint(loop.body):
                self.rows(loop.induction_variable, rows, blocks, 0)
                scf.YieldOp([])
        tail = full_blocks - groups * blocks + (1 if self.n % LANES else 0)
        if tail:
            self.rows(index(groups * blocks), rows, tail, self.n % LANES)

    def rows(self, block0: ir.Value, rows: int, blocks: int, partial: int) -> None:
        """Every row tile of the column group starting at block `block0`; its last block has only `partial`
        columns when that is not 0."""
        count = self.m // rows
        if count:
            loop = scf.ForOp(index(0), index(count * rows), index(rows))
            with ir.InsertionPoint(loop.body):
                self.tile(loop.induction_variable, rows, block0, blocks, partial)
                scf.YieldOp([])
        if self.m % rows:
            self.tile(index(count * rows), self.m % rows, block0, blocks, partial)

    def broadcast(self, indices: list[ir.Value], valid: int) -> ir.Value:
        """The 4 source bytes at `indices` (only the first `valid` read, the rest 0) as unsigned q + 128 in
        every i32 lane: vpdpbusd's first byte operand."""
        quad = vector_type(K_STEP, self.i8)
        if valid == K_STEP:
            four = vector.load(quad, self.src, indices)
        else:
            mask = vector.constant_mask(vector_type(K_STEP, ir.IntegerType.get_signless(1)), [valid])
            four = vector.maskedload(quad, self.src, indices, mask, splat(quad, self.skipped))
        word = vector.extract(vector.bitcast(vector_type(1, self.i32), four), [], [0])
        lanes = vector.broadcast(self.acc_type, word)
        return vector.bitcast(self.bytes_type, arith.xori(lanes, self.flip) if self.signed else lanes)

    def add_bytes(self, acc: ir.Value, buffer: ir.Value, at: list[ir.Value], length: int) -> ir.Value:
        """`acc` plus, spread over its 16 i32 lanes, the `length` bytes of `buffer` (a view of the source) from `at`
        along its last dim as vpdpbusd reads them (q + offset): 64 a step, a last step masked."""
        chunk = LANES * K_STEP
        ones = splat(self.bytes_type, ir.IntegerAttr.get(self.i8, 1))
        flip = splat(self.bytes_type, ir.IntegerAttr.get(self.i8, -128))

        def add(carried: list[ir.Value], i: ir.Value, valid: int = chunk) -> list[ir.Value]:
            indices = [*at[:-1], arith.addi(at[-1], arith.muli(i, index(chunk)))]
            if valid == chunk:
                chunk_bytes = vector.load(self.bytes_type, buffer, indices)
            else:
                mask = vector.constant_mask(vector_type(chunk, ir.IntegerType.get_signless(1)), [valid])
                chunk_bytes = vector.maskedload(self.bytes_type, buffer, indices, mask,
                                                splat(self.bytes_type, self.skipped))  # fmt: skip
            if self.signed:
                chunk_bytes = arith.xori(chunk_bytes, flip)
            return [llvm.call_intrinsic(self.acc_type, VPDPBUSD, [carried[0], chunk_bytes, ones], [], [])]

        [acc] = carried_loop([acc], length // chunk, add)
        if length % chunk:
            [acc] = add([acc], index(length // chunk), length % chunk)
        return acc

    def step(self, accs: list[ir.Value], operands: list[Callable[[], ir.Value]], block0: ir.Value, blocks: int,
             k4: ir.Value) -> list[ir.Value]:  # fmt: skip
        """One step of 4 along K (`k4` indexes the packed weights): rows x blocks vpdpbusd, each row's operand
        from `operands`."""
        weights = [vector.load(self.bytes_type, self.weights, [arith.addi(block0, index(j)), k4, index(0)])
                   for j in range(blocks)]  # fmt: skip
        out = []
        for i, operand in enumerate(operands):
            a = operand()
            for j in range(blocks):
                out.append(llvm.call_intrinsic(self.acc_type, VPDPBUSD, [accs[i * blocks + j], a, weights[j]], [], []))
        return out

    def tile(self, row0: ir.Value, rows: int, block0: ir.Value, blocks: int, partial: int) -> None:
        """The register tile of `rows` rows from `row0` and `blocks` column blocks from `block0`."""
        row_index = [arith.addi(row0, index(i)) for i in range(rows)]
        contexts = [self.rows_of(row) for row in row_index]
        accs = self.accumulate(self, [self.zero] * (rows * blocks), contexts, block0, blocks)
        # Each row's byte sum for the epilogue's c[n] * sum (the module docstring), after the K loops: summed before
        # them, the sums lived through them beside the accumulators (8-19 % slower than int8 weights, now 1-4 %).
        sums = []
        if self.offsets is not None:
            sums = [vector.reduction(self.i32, vector.CombiningKind.ADD, self.row_sum(self, c)) for c in contexts]
        for j in range(blocks):
            block = arith.addi(block0, index(j))
            width = partial if j == blocks - 1 and partial else LANES
            self.epilogue([accs[i * blocks + j] for i in range(rows)], row_index, block, width, sums)

    def epilogue(self, accs: list[ir.Value], rows: list[ir.Value], block: ir.Value, width: int,
                 sums: list[ir.Value]) -> None:  # fmt: skip
        """f32(acc [+ offsets * row sum] - correction) * multiplier + bias into 16 (or `width`) columns of column
        block `block` of each row."""
        column = arith.muli(block, index(LANES))
        f32s = vector_type(LANES, self.f32)
        mask = None
        if width < LANES:
            mask = vector.constant_mask(vector_type(LANES, ir.IntegerType.get_signless(1)), [width])

        def load(buffer: ir.Value, t: ir.VectorType, zero: ir.Attribute) -> ir.Value:
            if mask is None:
                return vector.load(t, buffer, [column])
            return vector.maskedload(t, buffer, [column], mask, splat(t, zero))

        corr = load(self.correction, self.acc_type, ir.IntegerAttr.get(self.i32, 0))
        mult = load(self.multiplier, f32s, ir.FloatAttr.get(self.f32, 0.0))
        if self.runtime:
            # (offset + zero) * colsum and float32(scale * multiplier), as int8_ops.dynamic_product.
            zero, scale = (memref.load(buffer, []) for buffer in self.runtime)
            added = arith.addi(zero, arith.constant(self.i32, SIGNED_OFFSET if self.signed else 0))
            corr = arith.muli(vector.broadcast(self.acc_type, added), corr)
            mult = arith.mulf(vector.broadcast(f32s, scale), mult)
        bias = load(self.bias, f32s, ir.FloatAttr.get(self.f32, 0.0))
        if sums:
            row = vector.load(self.bytes_type, self.weights, [block, index(self.offsets), index(0)])
            offsets = vector.bitcast(self.acc_type, row)
            accs = [arith.addi(acc, arith.muli(offsets, vector.broadcast(self.acc_type, total)))
                    for acc, total in zip(accs, sums, strict=True)]  # fmt: skip
        for acc, row in zip(accs, rows, strict=True):
            value = arith.addf(arith.mulf(arith.sitofp(f32s, arith.subi(acc, corr)), mult), bias)
            if self.addend is not None:
                value = arith.addf(self.product(value), self.added(row, column, mask))
            store_lanes(self.output.apply(value), self.dest, [row, column], mask, width)

    def product(self, value: ir.Value) -> ir.Value:
        """The residual op's f32 product, through uint8 and back when it has a product scale (its QuantizeLinear
        -> DequantizeLinear: int8_ops.evaluate_residual)."""
        scale = self.residual["product_scale"]
        if not scale:
            return value
        zero = self.residual["product_zero"]
        return dequantize(quantize_steps(value, scale, zero), scale, zero)

    def added(self, row: ir.Value, column: ir.Value, mask: ir.Value | None) -> ir.Value:
        """The residual op's addend at `row`, 16 (masked: fewer) columns from `column`, as f32: dequantized from
        uint8 with addend_scale and addend_zero, or read as it is."""
        scale = self.residual["addend_scale"]
        t = vector_type(LANES, self.i8) if scale else vector_type(LANES, self.f32)
        zero = ir.IntegerAttr.get(self.i8, 0) if scale else ir.FloatAttr.get(self.f32, 0.0)
        if mask is None:
            value = vector.load(t, self.addend, [row, column])
        else:
            value = vector.maskedload(t, self.addend, [row, column], mask, splat(t, zero))
        if not scale:
            return value
        return dequantize(arith.uitofp(vector_type(LANES, self.f32), value), scale, self.residual["addend_zero"])


@dataclasses.dataclass(frozen=True)
class OutputSteps:
    """An int8 op's epilogue after its f32 result (int8_ops.OUTPUT_ATTRS): relu, its cap (0: none), the uint8 output
    scale (0: the result stays f32) and zero point."""

    relu: bool
    clip: float
    scale: float
    zero: int

    @staticmethod
    def of(op: ir.Operation) -> OutputSteps:
        return OutputSteps(ir.BoolAttr(op.attributes["relu"]).value, ir.FloatAttr(op.attributes["clip"]).value,
                           ir.FloatAttr(op.attributes["output_scale"]).value,
                           ir.IntegerAttr(op.attributes["output_zero"]).value)  # fmt: skip

    def apply(self, value: ir.Value) -> ir.Value:
        """16 f32 lanes through the relu, its cap and uint8 quantization (int8_ops.epilogue), in the same float32
        operations as the ops they replace: maximumf, minimumf, divf, roundeven, addf, clamp, to bytes; without
        the relu or the cap where the quantization's clamp gives the same bytes (`needed`)."""
        relu, clip = self.needed()
        if relu:
            value = arith.maximumf(value, _f32_splat(0.0))
        if clip:
            value = arith.minimumf(value, _f32_splat(self.clip))
        if not self.scale:
            return value
        return quantize_u8(value, self.scale, self.zero)

    def needed(self) -> tuple[bool, bool]:
        """Whether the relu and the cap change a byte of the quantized result. The quantization is monotone and
        clamps to [0, 255]: with zero point 0, a negative value's byte is 0 with or without the relu, and a cap c
        whose own byte, round(c / scale) + zero, reaches 255 saturates as any larger value does (relu6 quantized
        over [0, 6], as onnxruntime's QDQ models and quantize() write it). Each is a compare and a blend per
        vector: leaving both out made MobileNetV2's depthwise layers 1.06x to 1.12x faster."""
        if not self.scale:
            return self.relu, bool(self.clip)
        capped = np.round(np.float32(self.clip) / np.float32(self.scale)) + np.float32(self.zero)
        return self.relu and self.zero != 0, bool(self.clip) and capped < 255


def store_lanes(value: ir.Value, buffer: ir.Value, at: list[ir.Value], mask: ir.Value | None, width: int) -> None:
    """Stores the 16 lanes of `value` at `at` in `buffer`, or under `mask` its first `width`. One lane is a scalar
    store: LLVM 22 turns a one-lane masked store of a truncated vector (a uint8 result) into a store of the lane
    before truncation, 4 bytes, which overwrote the next pixel's first 3 channels (17 output channels) or wrote past
    the end of a buffer."""
    if mask is None:
        vector.store(value, buffer, at)
    elif width == 1:
        memref.store(vector.extract(value, [], [0]), buffer, at)
    else:
        vector.maskedstore(buffer, at, mask, value)


def _f32_splat(number: float) -> ir.Value:
    f32 = ir.F32Type.get()
    return splat(vector_type(LANES, f32), ir.FloatAttr.get(f32, number))


def quantize_steps(value: ir.Value, scale: float, zero: float) -> ir.Value:
    """16 f32 lanes as the uint8 steps of the graph's QuantizeLinear, still f32: divf, roundeven, addf, clamp to
    [0, 255]."""
    steps = arith.addf(math.roundeven(arith.divf(value, _f32_splat(scale))), _f32_splat(zero))
    return arith.minimumf(arith.maximumf(steps, _f32_splat(0.0)), _f32_splat(255.0))


def dequantize(steps: ir.Value, scale: float, zero: float) -> ir.Value:
    """16 f32 lanes of uint8 steps through the graph's DequantizeLinear: (steps - zero) * scale."""
    return arith.mulf(arith.subf(steps, _f32_splat(zero)), _f32_splat(scale))


def quantize_u8(value: ir.Value, scale: float, zero: float) -> ir.Value:
    """16 f32 lanes as uint8 bytes (`quantize_steps`, then to bytes)."""
    i8, i32 = ir.IntegerType.get_signless(8), ir.IntegerType.get_signless(32)
    steps = quantize_steps(value, scale, zero)
    return arith.trunci(vector_type(LANES, i8), arith.fptoui(vector_type(LANES, i32), steps))


@lowering("cpu_quantize_u8")
def _cpu_quantize_u8(op: ir.Operation) -> None:
    """dest = quantize_u8(src) over the flat views of both, 16 elements a step, the last step masked."""
    dest, src = op.operands[0], op.operands[1]
    size = 1
    for d in ops.shape(src):
        size *= d
    flat_dest, flat_src = reshape(signless(dest), [size]), reshape(src, [size])
    scale = ir.FloatAttr(op.attributes["output_scale"]).value
    zero = ir.FloatAttr(op.attributes["output_zero"]).value
    f32s = vector_type(LANES, ir.F32Type.get())
    if size // LANES:
        loop = scf.ForOp(index(0), index(size // LANES * LANES), index(LANES))
        with ir.InsertionPoint(loop.body):
            at = [loop.induction_variable]
            vector.store(quantize_u8(vector.load(f32s, flat_src, at), scale, zero), flat_dest, at)
            scf.YieldOp([])
    if size % LANES:
        at = [index(size // LANES * LANES)]
        mask = vector.constant_mask(vector_type(LANES, ir.IntegerType.get_signless(1)), [size % LANES])
        value = vector.maskedload(f32s, flat_src, at, mask, splat(f32s, ir.FloatAttr.get(ir.F32Type.get(), 0.0)))
        store_lanes(quantize_u8(value, scale, zero), flat_dest, at, mask, size % LANES)


def carried_loop(accs: list[ir.Value], steps: int,
                 body: Callable[[list[ir.Value], ir.Value], list[ir.Value]]) -> list[ir.Value]:  # fmt: skip
    """scf.for over [0, steps) carrying `accs`: `body(accs, i)` gives the next ones; none when steps is 0."""
    if not steps:
        return accs
    loop = scf.ForOp(index(0), index(steps), index(1), accs)
    with ir.InsertionPoint(loop.body):
        scf.YieldOp(body(list(loop.inner_iter_args), loop.induction_variable))
    return list(loop.results)


def _gemm_accumulate(k: int) -> Accumulate:
    """The K loop of a GEMM over a [M, k] int8 source: contexts are row indices; a K not a multiple of 4 ends
    with a step of masked loads."""

    def accumulate(kernel: _Kernel, accs: list[ir.Value], rows: list[object], block0: ir.Value,
                   blocks: int) -> list[ir.Value]:  # fmt: skip
        def step(carried: list[ir.Value], k4: ir.Value, valid: int = K_STEP) -> list[ir.Value]:
            k_index = arith.muli(k4, index(K_STEP))
            reads = [lambda row=row: kernel.broadcast([row, k_index], valid) for row in rows]
            return kernel.step(carried, reads, block0, blocks, k4)

        accs = carried_loop(accs, k // K_STEP, step)
        if k % K_STEP:
            accs = step(accs, index(k // K_STEP), k % K_STEP)
        return accs

    return accumulate


def _gemm_sum(k: int) -> RowSum:
    """The byte sum of a row of a [M, k] source."""
    return lambda kernel, row: kernel.add_bytes(kernel.zero, kernel.src, [row, index(0)], k)


def _conv_sum(image: tuple[int, int, int, int], kernels: tuple[int, int], dilation: tuple[int, int]) -> RowSum:
    """The byte sum of an output pixel's window in an [N, H, W, C] (`image`) padded source: per filter row, its
    KW x C bytes, contiguous when the columns are not dilated, else KW runs of C."""
    n, h, w, c = image
    (kh, kw), (dh, dw) = kernels, dilation
    runs, run = (1, kw * c) if dw == 1 else (kw, c)

    def total(kernel: _Kernel, pixel: object) -> ir.Value:
        image_index, y, x = pixel  # type: ignore[misc]
        lines = reshape(kernel.src, [n * h, w * c])
        first = arith.addi(arith.muli(image_index, index(h)), y)

        def line(carried: list[ir.Value], i: ir.Value) -> list[ir.Value]:
            row = arith.addi(first, arith.muli(i, index(dh)))
            return carried_loop(carried, runs, lambda inner, j: [kernel.add_bytes(
                inner[0], lines, [row, arith.muli(arith.addi(x, arith.muli(j, index(dw))), index(c))], run)])

        return carried_loop([kernel.zero], kh, line)[0]

    return total


def _conv_accumulate(kernels: tuple[int, int], channels: int, dilation: tuple[int, int]) -> Accumulate:
    """The K loops of a direct NHWC convolution: contexts are (image, first input row, first input column) of
    an output pixel; loops over the filter rows and columns (their taps `dilation` apart in the input), then the
    channels 4 at a time (a last masked step when 4 does not divide them), reading the packed weights tap by tap
    (int8_ops.conv_weights)."""
    (kh, kw), (dh, dw) = kernels, dilation
    steps_per_tap = -(-channels // K_STEP)

    def accumulate(kernel: _Kernel, accs: list[ir.Value], pixels: list[object], block0: ir.Value,
                   blocks: int) -> list[ir.Value]:  # fmt: skip
        def tap(carried: list[ir.Value], i: ir.Value, j: ir.Value) -> list[ir.Value]:
            base = arith.muli(arith.addi(arith.muli(i, index(kw)), j), index(steps_per_tap))
            down, across = arith.muli(i, index(dh)), arith.muli(j, index(dw))
            at = [(n, arith.addi(y, down), arith.addi(x, across)) for n, y, x in pixels]  # type: ignore[misc]

            def step(inner: list[ir.Value], c4: ir.Value, valid: int = K_STEP) -> list[ir.Value]:
                c = arith.muli(c4, index(K_STEP))
                reads = [lambda p=p: kernel.broadcast([p[0], p[1], p[2], c], valid) for p in at]
                return kernel.step(inner, reads, block0, blocks, arith.addi(base, c4))

            carried = carried_loop(carried, channels // K_STEP, step)
            if channels % K_STEP:
                carried = step(carried, index(channels // K_STEP), channels % K_STEP)
            return carried

        return carried_loop(accs, kh, lambda c1, i: carried_loop(c1, kw, lambda c2, j: tap(c2, i, j)))

    return accumulate


def _packing(op: ir.Operation, rows: int, n: int) -> tuple[int, int | None]:
    """(16-column blocks, the index of the column offsets' row in each block, or None): the packed weights must have
    one of int8_ops.packed_rows' shapes for `rows` steps of K, the second with the offsets."""
    plain, with_offsets = packed_rows(rows * K_STEP, n)
    shape = ops.shape(op.operands[2])
    if shape not in (plain, with_offsets):
        raise fail(op, f"weights {list(shape)} are not packed as {list(plain)} (or one more row)")
    return plain[0], rows if shape == with_offsets else None


@lowering("cpu_int8_matmul")
@lowering("cpu_int8_matmul_dynamic")
def _cpu_int8_matmul(op: ir.Operation) -> None:
    """dest = f32(sum (src + offset) * W - correction) * multiplier + bias, on vpdpbusd (module docstring); the
    dynamic op forms correction and multiplier from its run-time zero point and scale in the epilogue."""
    dest, src = op.operands[0], op.operands[1]
    m, k = ops.shape(src)
    blocks, offsets = _packing(op, -(-k // K_STEP), ops.shape(dest)[1])
    kernel = _Kernel(op, dest, src, m, lambda row: row, _gemm_accumulate(k), _gemm_sum(k), offsets)
    kernel.columns(*register_tile(m, blocks))


@lowering("cpu_int8_conv_nhwc")
@lowering("cpu_int8_conv_nhwc_add")
def _cpu_int8_conv_nhwc(op: ir.Operation) -> None:
    """The direct NHWC convolution on vpdpbusd: a GEMM whose rows are the output pixels (dest viewed as
    [N * OH * OW, O]) and whose K runs over the filter taps and channels of each pixel's window; a 1x1
    stride-1 convolution is exactly the GEMM of the source viewed as [N * H * W, C]. The residual op's
    epilogue reads its addend through the same [N * OH * OW, O] view."""
    dest, src = op.operands[0], op.operands[1]
    n, oh, ow, o = ops.shape(dest)
    _, h, w, c = ops.shape(src)
    kh, kw = pair(op, "kernels")
    sh, sw = pair(op, "strides")
    dh, dw = pair(op, "dilation")
    blocks, offsets = _packing(op, kh * kw * -(-c // K_STEP), o)
    pixels = reshape(dest, [n * oh * ow, o])
    addend = reshape(op.operands[6], [n * oh * ow, o]) if len(op.operands) > 6 else None
    if (kh, kw, sh, sw) == (1, 1, 1, 1):
        gemm = _Kernel(op, pixels, reshape(src, [n * h * w, c]), n * oh * ow, lambda row: row, _gemm_accumulate(c),
                       _gemm_sum(c), offsets, addend)  # fmt: skip
        gemm.columns(*register_tile(n * oh * ow, blocks))
        return

    def window(row: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
        image, rest = arith.divui(row, index(oh * ow)), arith.remui(row, index(oh * ow))
        y, x = arith.divui(rest, index(ow)), arith.remui(rest, index(ow))
        return image, arith.muli(y, index(sh)), arith.muli(x, index(sw))

    kernel = _Kernel(op, pixels, src, n * oh * ow, window, _conv_accumulate((kh, kw), c, (dh, dw)),
                     _conv_sum(ops.shape(src), (kh, kw), (dh, dw)), offsets, addend)  # fmt: skip
    kernel.columns(*register_tile(n * oh * ow, blocks))
