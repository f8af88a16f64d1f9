"""The CPU backend's weight-only 2/4/8-bit product: `glow.cpu_matmul_nbits`, glow-cpu-nbits which makes it of
`glow.matmul_nbits` (onnxruntime's MatMulNBits), and its kernel.

A decoder's projections quantized to 4 bits were folded into float32 W at compile time: 8x the bytes of the
packed values, read once per token by a decoding step (an int4 LLaMA's step read 330 MB where onnxruntime reads
80 MB), and held in memory once per specialization. The kernel reads the packed values instead and
dequantizes them in registers, so the weights stay at their size in memory and in the product.

Layout (glow-cpu-nbits packs it from the constants at compile time, for the register tile of the product's M):
`packed` [ceil(N/W), bytes, W], W = 16 x the tile's column blocks, holds at [g, j, l] the byte j of column
W g + l of the source's rows (its values for k = j x (8 / bits) + t at bits t x bits, lowest first, as
MatMulNBits stores them), so a tile reads one stream of whole cache lines (a decoding tile's 4 x 16 bytes per
byte of K: 16 columns per stream, 4 streams, had read DRAM at 16-17 GB/s; one stream: the int4 LLaMA's step
1.42x) and one 16-byte load gives 16 columns' values of 8 / bits steps of K; `scales` and `zeros`
[ceil(N/W), blocks, W] are the blocks' scale and zero point per column (0 in the columns past N, whose lanes
the kernel computes and does not store); zero points all equal (the default 2^(bits - 1) of symmetric exports)
are one rank-0 `zeros`, which takes a sixth of a 4-bit W's bytes off every product (values 1/2 byte, scale and
zero point 4 bytes each per 32 values).

Kernel: column groups of `cb` 16-column blocks outside, tiles of `rows` rows inside (8 x 2 accumulators,
1-2 x 4 for decoding steps), and per block of K its `cb` scales and -zero x scale, then per byte of K its `cb`
loads, zero-extended to i32 lanes, and per value in it a shift, a mask and a conversion. Decoding steps'
tiles (fewer than PANEL_ROWS rows, where these instructions, not the FMAs, bound the kernel) multiply-add the
values themselves with the rows' broadcast activations into per-block sums, then add scale x sum - zero x
scale x (the row's sum of the block's activations, `block_sums`, once per call): two FMAs per block instead of
one per value (87-96 -> 110-112 GFLOP/s at one row, 2.2x the float kernel on the folded W; within an f32
rounding of the definition's sum). From PANEL_ROWS rows on (prompts), W = value x scale - zero x scale (one FMA,
exact where zero x scale is, as for the default zero point 2^(bits - 1)) is written once per column group and
chunk of PANEL_K steps of K into an f32 panel in L1 (one copy of the code for every chunk: the first sets the
result, the last adds the bias, by run-time tests), which each row tile reads as the float GEMM reads its
packed W (224-238 GFLOP/s at 64 rows, the float kernel's 206-243; in each row tile's registers it was 209). A K
that ends inside a block or a byte ends with a shorter step (the packing's last values are not read).

A bias add and an activation after the product fold into it (glow-fuse-activations: the op is a producer whose
bias is operand 4): the bias is added to each tile before its last store, the activation runs in place after
the kernel as one elementwise pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
from mlir import ir
from mlir.dialects import arith, math, memref, scf, vector

from glow_mlir import ops
from glow_mlir.backends.cpu.depthwise_recipes import each_tile
from glow_mlir.backends.cpu.int8_gemm import carried_loop, signless, store_lanes, vector_type
from glow_mlir.backends.cpu.vector_body import splat
from glow_mlir.codegen.builders import index
from glow_mlir.codegen.math import activate
from glow_mlir.codegen.table import fail, lowering
from glow_mlir.opdefs import reference as ref
from glow_mlir.opdefs import shapes
from glow_mlir.opdefs.base import Attr, IrDef, OpDef, Producer, define
from glow_mlir.opdefs.nn import ACTIVATION
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.registry import register

LANES = 16
OPERANDS = ("input", "packed", "scales", "zeros", "bias")
# Steps of K per dequantized panel (prompts): [256, 32] f32, 32 KiB.
PANEL_K = 256
# Rows from which a product dequantizes W into panels rather than in each row tile's registers.
PANEL_ROWS = 16


class Column(NamedTuple):
    """A 16-column block of the result (`block`: its index) and where the packing holds it: group, first lane."""

    block: ir.Value
    group: ir.Value
    lane: int


# A consumer of one K step's dequantized weights: (carried values, k, weights) -> the next carried values.
Consume = Callable[[list[ir.Value], ir.Value, list[ir.Value]], list[ir.Value]]


def pack(q: np.ndarray, width: int) -> np.ndarray:
    """MatMulNBits' bytes [N, blocks, size] as the kernel's [ceil(N / width), blocks x size, width] (module
    docstring)."""
    return grouped(q.reshape(q.shape[0], -1), width)


def grouped(v: np.ndarray, width: int) -> np.ndarray:
    """Per-column rows [N, R] as [ceil(N / width), R, width], 0 past N: a group's `width` columns side by side."""
    n = v.shape[0]
    wide = np.zeros((-(-n // width) * width, v.shape[1]), v.dtype)
    wide[:n] = v
    return np.ascontiguousarray(wide.reshape(-1, width, v.shape[1]).transpose(0, 2, 1))


def _unpacked(a: Sequence[np.ndarray], n: int) -> list[np.ndarray]:
    """matmul_nbits' weight, scales and zeros [N, ...] of the kernel's packed, scales and zeros."""
    packed, scales, zeros = a[1:4]
    blocks = scales.shape[1]
    zeros = np.broadcast_to(zeros, scales.shape)
    columns = [x.transpose(0, 2, 1).reshape(-1, x.shape[1])[:n] for x in (packed, scales, zeros)]
    return [columns[0].reshape(n, blocks, -1), columns[1], columns[2]]


def _evaluate(op: ir.Operation, a: list[np.ndarray]) -> np.ndarray:
    bits, n = (ir.IntegerAttr(op.attributes[key]).value for key in ("bits", "columns"))
    q, scales, zeros = _unpacked(a, n)
    y = ref.matmul(op, [a[0], ref.dequantize_blocks(q, scales, zeros, bits, a[0].shape[1])]).astype(np.float32)
    return ref.activation(op, y + a[4])


def _shape(o: Sequence[tuple[int, ...]], a: dict[str, object], _: object) -> tuple[int, int]:
    input, packed, scales, zeros, bias = o
    shapes.rank(input, 2, "input")
    bits, n = a["bits"], a["columns"]
    assert isinstance(bits, int) and isinstance(n, int)
    shapes.require(bits in (2, 4, 8), f"bits must be 2, 4 or 8, got {bits}")
    width = packed[2] if len(packed) == 3 and packed[2] % LANES == 0 and packed[2] else LANES
    groups, blocks = -(-n // width), scales[1] if len(scales) == 3 else 0
    shapes.require(len(packed) == 3 and packed[0] == groups and packed[2] == width and blocks and
                   packed[1] % blocks == 0, f"packed {shapes.fmt(packed)} is not [{groups}, bytes, {width}]")
    shapes.require(tuple(scales) == (groups, blocks, width) and tuple(zeros) in ((), tuple(scales)),
                   f"scales {shapes.fmt(scales)} and zeros {shapes.fmt(zeros)} are not [{groups}, blocks, {width}] "
                   "(zeros also [])")
    shapes.require(tuple(bias) == (n,), f"bias {shapes.fmt(bias)} is not [N] = [{n}]")
    block = packed[1] // blocks * 8 // bits
    shapes.require(blocks * block >= input[1] > (blocks - 1) * block,
                   f"K = {input[1]} does not end in the last of {blocks} blocks of {block}")
    return (input[0], n)


def _types(operands: Sequence[str], _: str | None) -> str:
    if tuple(operands) != ("f32", "ui8", "f32", "f32", "f32"):
        raise shapes.ShapeError(f"operands must be f32, ui8, f32, f32, f32, got {', '.join(operands)}")
    return "f32"


define(OpDef(
    "cpu_matmul_nbits",
    "CPU backend: glow.matmul_nbits on weights packed for its kernel: packed [ceil(N/W), bytes, W], scales and "
    "zeros [ceil(N/W), blocks, W] (or one zero point, rank 0) for W a multiple of 16 (backends/cpu/nbits.py); "
    "`columns` is N; bias [N] "
    "and the activation are fused (glow-fuse-activations).",
    OPERANDS, attrs=(("bits", Attr.INT), ("columns", Attr.INT), *ACTIVATION), backend="cpu", shape=_shape,
    types=_types, evaluate=_evaluate, producer=Producer("glow.cpu_matmul_nbits", 1, bias_operand=4),
    ir=IrDef(
        "cpu_matmul_nbits", (("dest", "out"), *((name, "in") for name in OPERANDS)),
        attrs=("bits", "columns", "activation", "activationArgs"), graph="cpu_matmul_nbits",
        doc="CPU backend: dest = activation(input x W + bias), W dequantized in registers from packed 2-, 4- or "
        "8-bit values.",
    ),
))  # fmt: skip


def nbits_matmul(op: ir.Operation) -> ir.Value | None:
    """The cpu_matmul_nbits replacing glow.matmul_nbits `op` of an f32 input and constant weights, else None."""
    if op.name != "glow.matmul_nbits" or g.dtype(op.operands[0]) != np.float32:
        return None
    arrays = [g.constant_array(v, copy=False) for v in op.operands[1:]]
    if any(a is None for a in arrays):
        return None
    q, scales, zeros = arrays
    assert q is not None and scales is not None and zeros is not None
    # A group is the register tile's columns, so that a tile reads one stream of whole cache lines.
    width = LANES * register_tile(ops.shape(op.operands[0])[0], -(-q.shape[0] // LANES))[1]
    packed, f32 = pack(q, width), ir.F32Type.get()
    with ir.InsertionPoint(op), op.location:
        byte_type = ops.tensor_type(packed.shape, ops.element_type(op.operands[1]))
        operands = [op.operands[0], g.materialize(packed, byte_type)]
        uniform = zeros.size and np.all(zeros == zeros.flat[0])
        for v in (grouped(scales, width), np.array(zeros.flat[0], np.float32) if uniform else grouped(zeros, width),
                  np.zeros(q.shape[0], np.float32)):  # fmt: skip
            operands.append(g.materialize(v, ops.tensor_type(v.shape, f32), prefer_splat=False))
        attrs = {"bits": op.attributes["bits"], "columns": ops.i64(q.shape[0]), "activation": ir.StringAttr.get("none"),
                 "activationArgs": ir.DenseF32ArrayAttr.get([])}  # fmt: skip
        return g.make("glow.cpu_matmul_nbits", operands, op.results[0].type, attrs)


@register("glow-cpu-nbits")
def cpu_nbits(module: ir.Module) -> None:
    """Turn glow.matmul_nbits of f32 activations and constant weights into glow.cpu_matmul_nbits on its packing."""
    g.rewrite_functions(module, nbits_matmul, fixed_point=False)


class _Kernel:
    """The buffers, types and tile emitters of one cpu_matmul_nbits (module docstring)."""

    def __init__(self, op: ir.Operation) -> None:
        self.dest, self.src, packed, self.scales, self.zeros, self.bias = op.operands
        self.packed = signless(packed)
        self.width = ops.shape(packed)[2]
        self.bits = ir.IntegerAttr(op.attributes["bits"]).value
        self.m, self.k = ops.shape(self.src)
        self.n = ops.shape(self.dest)[1]
        self.per = 8 // self.bits
        blocks = ops.shape(self.scales)[1]
        self.block_bytes = ops.shape(packed)[1] // blocks
        self.block = self.block_bytes * self.per
        self.f32, self.i32 = ir.F32Type.get(), ir.IntegerType.get_signless(32)
        self.floats, self.ints = vector_type(LANES, self.f32), vector_type(LANES, self.i32)
        self.bytes = vector_type(LANES, ir.IntegerType.get_signless(8))
        self.zero = splat(self.floats, ir.FloatAttr.get(self.f32, 0.0))
        # The last 16-column block, N % 16 wide where that is not 0.
        self.last = -(-self.n // LANES) - 1

    def zero_point(self, column: Column, b: ir.Value) -> ir.Value:
        """Block `b`'s zero points of the 16 columns of `column` (or the one zero point, broadcast)."""
        if not ops.shape(self.zeros):
            return vector.broadcast(self.floats, memref.load(self.zeros, []))
        return vector.load(self.floats, self.zeros, [column.group, b, index(column.lane)])

    def group_columns(self, block0: ir.Value, cb: int) -> list[Column]:
        """The `cb` column blocks from `block0`, the first of a group of the packing."""
        group = arith.divui(block0, index(self.width // LANES))
        return [Column(arith.addi(block0, index(j)), group, j * LANES) for j in range(cb)]

    def int_splat(self, value: int) -> ir.Value:
        return splat(self.ints, ir.IntegerAttr.get(self.i32, value))

    def columns(self, rows: int, cb: int) -> None:
        """Column groups of `cb` blocks outside (an scf.for, the last short group after it), row tiles inside;
        first each row's sum over each block of K (`block_sums`)."""
        self.block_sums()
        each_tile(-(-self.n // LANES), cb, lambda block0, count: each_tile(
            self.m, rows, lambda row0, size: self.tile(row0, size, block0, count)))

    def block_sums(self) -> None:
        """self.sums [M, blocks]: each row of src summed over each block of K (the last, partial one masked)."""
        blocks = ops.shape(self.scales)[1]
        self.sums = memref.alloca(ir.MemRefType.get([self.m, blocks], self.f32), [], [], alignment=64)
        rows = scf.ForOp(index(0), index(self.m), index(1))
        with ir.InsertionPoint(rows.body):
            row = rows.induction_variable

            def block(_: list[ir.Value], b: ir.Value, count: int) -> list[ir.Value]:
                total, k0 = self.zero, arith.muli(b, index(self.block))
                for at in range(0, count, LANES):
                    k = arith.addi(k0, index(at))
                    if count - at >= LANES:
                        chunk = vector.load(self.floats, self.src, [row, k])
                    else:
                        mask = vector.constant_mask(vector_type(LANES, ir.IntegerType.get_signless(1)), [count - at])
                        chunk = vector.maskedload(self.floats, self.src, [row, k], mask, self.zero)
                    total = arith.addf(total, chunk)
                memref.store(vector.reduction(self.f32, vector.CombiningKind.ADD, total), self.sums, [row, b])
                return []

            self.blocks([], index(0), self.k, block)
            scf.YieldOp([])

    def tile(self, row0: ir.Value, rows: int, block0: ir.Value, cb: int) -> None:
        row_index = [arith.addi(row0, index(i)) for i in range(rows)]
        columns = self.group_columns(block0, cb)

        def block(carried: list[ir.Value], b: ir.Value, steps: int) -> list[ir.Value]:
            # sum_k a q per block, then scale x that - zero x scale x sum_k a: a scale's FMA per block, not per value.
            sums = self.values([self.zero] * (rows * cb), columns, b, steps,
                               lambda c, k, values: self.row_fmas(c, row_index, k, values))
            scales, offsets = self.factors(columns, b)
            out = []
            for i, row in enumerate(row_index):
                total = vector.broadcast(self.floats, memref.load(self.sums, [row, b]))
                for j in range(cb):
                    acc = math.fma(scales[j], sums[i * cb + j], carried[i * cb + j])
                    out.append(math.fma(offsets[j], total, acc))
            return out

        accs = self.blocks([self.zero] * (rows * cb), index(0), self.k, block)
        for j, column in enumerate(columns):
            at = arith.muli(column.block, index(LANES))
            bias = self.load(self.bias, [], at, column.block)
            for i, row in enumerate(row_index):
                self.store(arith.addf(accs[i * cb + j], bias), row, at, column.block)

    def row_fmas(self, carried: list[ir.Value], rows: list[ir.Value], k: ir.Value,
                 vectors: list[ir.Value]) -> list[ir.Value]:  # fmt: skip
        """carried[i x len(vectors) + j] + src[rows[i], k] x vectors[j]: a tile's multiply-adds at one step of K."""
        out = []
        for i, row in enumerate(rows):
            a = vector.broadcast(self.floats, memref.load(self.src, [row, k]))
            out.extend(math.fma(a, v, carried[i * len(vectors) + j]) for j, v in enumerate(vectors))
        return out

    def partial(self, column: ir.Value) -> tuple[ir.Value, ir.Value] | None:
        """For a result whose last block is N % 16 wide: that width's mask and whether `column` is the last block
        (a run-time test only where the group loop reaches it); None when 16 divides N."""
        width = self.n % LANES
        if not width:
            return None
        mask = vector.constant_mask(vector_type(LANES, ir.IntegerType.get_signless(1)), [width])
        return mask, arith.cmpi(arith.CmpIPredicate.eq, column, index(self.last))

    def store(self, value: ir.Value, row: ir.Value, at: ir.Value, column: ir.Value) -> None:
        """16 columns of the result from `at`, or the last block's N % 16 when `column` is it."""
        partial = self.partial(column)
        if partial is None:
            vector.store(value, self.dest, [row, at])
            return
        mask, is_last = partial
        branch = scf.IfOp(is_last, [], has_else=True)
        with ir.InsertionPoint(branch.then_block):
            store_lanes(value, self.dest, [row, at], mask, self.n % LANES)
            scf.YieldOp([])
        with ir.InsertionPoint(branch.else_block):
            vector.store(value, self.dest, [row, at])
            scf.YieldOp([])

    def factors(self, columns: list[Column], b: ir.Value) -> tuple[list[ir.Value], list[ir.Value]]:
        """Block `b`'s scales and -zero x scale for the 16 columns of each of `columns`."""
        scales = [vector.load(self.floats, self.scales, [c.group, b, index(c.lane)]) for c in columns]
        return scales, [arith.negf(arith.mulf(self.zero_point(c, b), s)) for c, s in zip(columns, scales, strict=True)]

    def values(self, carried: list[ir.Value], columns: list[Column], b: ir.Value, count: int,
               consume: Consume) -> list[ir.Value]:  # fmt: skip
        """The `count` steps of K of block `b`, a loop over its bytes whose values as f32 (16 columns of each of
        `columns`) `consume(carried, k, values)` takes."""
        first = arith.muli(b, index(self.block_bytes))

        def byte(carried: list[ir.Value], j: ir.Value, count: int = self.per) -> list[ir.Value]:
            at = arith.addi(first, j)
            raw = [arith.extui(self.ints, vector.load(self.bytes, self.packed, [c.group, at, index(c.lane)]))
                   for c in columns]  # fmt: skip
            k0 = arith.muli(at, index(self.per))
            for t in range(count):
                values = []
                for word in raw:
                    value = arith.shrui(word, self.int_splat(t * self.bits)) if t else word
                    if t < self.per - 1:
                        value = arith.andi(value, self.int_splat((1 << self.bits) - 1))
                    values.append(arith.sitofp(self.floats, value))
                carried = consume(carried, arith.addi(k0, index(t)) if t else k0, values)
            return carried

        carried = carried_loop(carried, count // self.per, byte)
        if count % self.per:
            carried = byte(carried, index(count // self.per), count % self.per)
        return carried

    def kblock(self, carried: list[ir.Value], columns: list[Column], b: ir.Value, count: int,
               consume: Consume) -> list[ir.Value]:  # fmt: skip
        """`values` of block `b` dequantized, W = value x scale - zero x scale, for `consume`."""
        scales, offsets = self.factors(columns, b)

        def dequantized(carried: list[ir.Value], k: ir.Value, values: list[ir.Value]) -> list[ir.Value]:
            return consume(carried, k, [math.fma(v, s, o) for v, s, o in zip(values, scales, offsets, strict=True)])

        return self.values(carried, columns, b, count, dequantized)

    def blocks(self, carried: list[ir.Value], first: ir.Value, count: int,
               block: Callable[[list[ir.Value], ir.Value, int], list[ir.Value]]) -> list[ir.Value]:  # fmt: skip
        """`block(carried, b, steps)` over the `count` steps of K from block `first`: whole blocks, then the rest."""
        whole = count // self.block
        carried = carried_loop(carried, whole, lambda c, b: block(c, arith.addi(b, first), self.block))
        if count % self.block:
            carried = block(carried, arith.addi(first, index(whole)), count % self.block)
        return carried

    def panels(self, rows: int, cb: int) -> None:
        """Prompts: per column group and chunk of PANEL_K steps of K, W dequantized once into an f32 panel
        [PANEL_K, cb x 16] (in L1), which every row tile then reads as a float GEMM does, setting the result
        (the first chunk) or adding to it."""
        chunk = max(1, PANEL_K // self.block) * self.block
        panel = memref.alloca(ir.MemRefType.get([chunk, cb * LANES], self.f32), [], [], alignment=64)
        each_tile(-(-self.n // LANES), cb, lambda block0, count: self.panel_group(panel, chunk, block0, rows, count))

    def panel_group(self, panel: ir.Value, chunk: int, block0: ir.Value, rows: int, cb: int) -> None:
        columns = self.group_columns(block0, cb)

        def fill(_: list[ir.Value], k: ir.Value, weights: list[ir.Value], k0: ir.Value) -> list[ir.Value]:
            for j, w in enumerate(weights):
                vector.store(w, panel, [arith.subi(k, k0), index(j * LANES)])
            return []

        def step(k0: ir.Value, count: int) -> None:
            first = arith.divui(k0, index(self.block))
            self.blocks([], first, count, lambda carried, b, steps: self.kblock(
                carried, columns, b, steps, lambda c, k, w: fill(c, k, w, k0)))
            start = arith.cmpi(arith.CmpIPredicate.eq, k0, index(0))
            finish = arith.cmpi(arith.CmpIPredicate.eq, k0, index((self.k - 1) // chunk * chunk))
            self.panel_rows(panel, k0, count, rows, columns, start, finish)

        # Whole chunks in a loop, then the rest; the first sets the result, the last adds the bias.
        each_tile(self.k, chunk, step)

    def panel_rows(self, panel: ir.Value, k0: ir.Value, count: int, rows: int, columns: list[Column],
                   start: ir.Value, finish: ir.Value) -> None:  # fmt: skip
        """Every row tile adds src[rows, k0:k0 + count] x panel[:count] to its result (where `start` holds: sets
        it; where `finish` holds: adds the bias too; run-time tests, one copy of the code for every chunk)."""
        blocks = [c.block for c in columns]
        biases = [arith.select(finish, self.load(self.bias, [], arith.muli(c, index(LANES)), c), self.zero)
                  for c in blocks]  # fmt: skip

        def initial(row: ir.Value, at: ir.Value, c: ir.Value) -> ir.Value:
            branch = scf.IfOp(start, [self.floats], has_else=True)
            with ir.InsertionPoint(branch.then_block):
                scf.YieldOp([self.zero])
            with ir.InsertionPoint(branch.else_block):
                scf.YieldOp([self.load(self.dest, [row], at, c)])
            return branch.results[0]

        def tile(row0: ir.Value, rows: int) -> None:
            row_index = [arith.addi(row0, index(i)) for i in range(rows)]
            ats = [arith.muli(c, index(LANES)) for c in blocks]
            accs = [initial(row, at, c) for row in row_index for at, c in zip(ats, blocks, strict=True)]

            def k_step(carried: list[ir.Value], kk: ir.Value) -> list[ir.Value]:
                weights = [vector.load(self.floats, panel, [kk, index(j * LANES)]) for j in range(len(columns))]
                return self.row_fmas(carried, row_index, arith.addi(k0, kk), weights)

            accs = carried_loop(accs, count, k_step)
            for i, row in enumerate(row_index):
                for j, (at, c) in enumerate(zip(ats, blocks, strict=True)):
                    self.store(arith.addf(accs[i * len(columns) + j], biases[j]), row, at, c)

        each_tile(self.m, rows, tile)

    def load(self, buffer: ir.Value, rows: list[ir.Value], at: ir.Value, column: ir.Value) -> ir.Value:
        """16 columns from `at` of `buffer` (the result at `rows`, or the bias); the last block's N % 16, zeros
        beyond, when `column` is it."""
        partial = self.partial(column)
        if partial is None:
            return vector.load(self.floats, buffer, [*rows, at])
        mask, is_last = partial
        branch = scf.IfOp(is_last, [self.floats], has_else=True)
        with ir.InsertionPoint(branch.then_block):
            scf.YieldOp([vector.maskedload(self.floats, buffer, [*rows, at], mask, self.zero)])
        with ir.InsertionPoint(branch.else_block):
            scf.YieldOp([vector.load(self.floats, buffer, [*rows, at])])
        return branch.results[0]


def register_tile(m: int, blocks16: int) -> tuple[int, int]:
    """(rows, column blocks): 1-2 rows x 4 blocks for decoding steps, 8 x 2 for prompts (<= 16 accumulators beside
    the blocks' scales, offsets, bytes and weights; 6 x 2, 4 x 3 and 6 x 3 were 1-11 % slower at M = 64)."""
    cb = 4 if m <= 2 else 2
    return min(m, 8), min(cb, blocks16)


@lowering("cpu_matmul_nbits")
def _cpu_matmul_nbits(op: ir.Operation) -> None:
    """dest = src x W, W dequantized in registers from the packed values (module docstring)."""
    kernel = _Kernel(op)
    if ops.shape(kernel.dest) != (kernel.m, kernel.n):
        raise fail(op, f"dest {list(ops.shape(kernel.dest))} is not [{kernel.m}, {kernel.n}]")
    # The packing's groups are the tiles' columns (glow-cpu-nbits packs them as `register_tile` says).
    rows, cb = register_tile(kernel.m, -(-kernel.n // LANES))[0], kernel.width // LANES
    if kernel.m >= PANEL_ROWS:
        kernel.panels(rows, cb)
    else:
        kernel.columns(rows, cb)
    # The fused activation as one elementwise pass in place (the vector recipes schedule it).
    activate(op, kernel.dest)
