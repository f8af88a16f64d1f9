"""The CPU backend's fused expansion + depthwise kernel, for glow-cpu-schedule (schedule.py): the ops that
glow-ir-to-linalg makes of `glow_ir.cpu_expand_depthwise_nhwc` (lowerings.py, marked EXPANSION_ATTR) become one
kernel written here, and the buffer of the expanded map that they wrote and read goes away.

The depthwise convolution runs channel block by channel block (the depthwise kernel's blocks: one or two
16-channel vectors, then the channels left), each block over the whole map. Its input rows are the expanded
map's, computed by the 1x1 convolution for that block's channels only, into a ring of the rows that one band of
output rows reads (M = (R - 1) x SH + KH of them, the padding columns zero, padding rows written as zeros): per
band of R output rows, the R x SH rows the band reads that the last band did not are computed, then the band's
depthwise tiles (depthwise_recipes.DepthwiseTile, reading the ring through a row map: depthwise_ring.RingBands)
run on them. Every expanded element is computed once; the ring (at most RING_BYTES) stays in L1 between its 1x1
producer and its depthwise readers, where the unfused depthwise kernel read the whole expanded map from L2 or
memory.

Each (channel block, image) is a call of a helper function (outline.define_helper) whose ring is an alloca of
its own: the loop over them is parallel and glow-cpu-parallelize splits it across threads. The 1x1
convolution's register tile is a row's pixels by the block's vectors, its bias and activation (its generic's
body) in registers before the store into the ring; the depthwise tiles add the bias and activation of theirs.
The first convolution may also be a network's small stem (3x3 over RGB at stride 2): the same tile, one loop
over the input channels per tap, its stride and dilation in the input's addresses.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
from mlir import ir
from mlir.dialects import arith, func, memref, scf, vector

from glow_mlir import ops
from glow_mlir.backends.cpu.conv_recipes import LANES, REGISTERS, dense_window, epilogue, static_f32, window_of
from glow_mlir.backends.cpu.depthwise_recipes import (
    ChannelBlocks,
    DepthwiseKernel,
    channel_blocks,
    each_tile,
    for_loop,
    register_lanes,
)
from glow_mlir.backends.cpu.depthwise_ring import RING_BYTES, RingBands, ring_rows
from glow_mlir.backends.cpu.depthwise_tiles import Interior, held_filter, tile_shape
from glow_mlir.backends.cpu.lowerings import EXPANSION_ATTR
from glow_mlir.backends.cpu.outline import define_helper
from glow_mlir.backends.cpu.pointwise_recipes import MAX_PIXELS, row_tile
from glow_mlir.backends.cpu.recipes import Kernel, block_at, constant_data, packed_global, static_shape
from glow_mlir.backends.cpu.vector_body import lanes_mask, load, store, yielded, zeros
from glow_mlir.codegen.builders import index
from glow_mlir.passes.ir.utils import producer, users

DEPTHWISE = "linalg.depthwise_conv_2d_nhwc_hwc"


@dataclasses.dataclass(frozen=True)
class _Group:
    """The linalg ops of one cpu_expand_depthwise_nhwc and what the fused kernel reads from them."""

    x: ir.Value
    weights: np.ndarray  # the first convolution's filter, [KH', KW', C, E]
    bias: ir.Value | None
    expand_activation: ir.Operation | None
    filter: ir.Value  # [KH, KW, E]
    dw_bias: ir.Value | None
    activation: ir.Operation | None
    y: ir.Value
    pads: tuple[int, int]  # top, left
    padded: tuple[int, int]  # the padded map's H, W
    strides: tuple[int, int]
    dilations: tuple[int, int]
    first_window: tuple[tuple[int, int], tuple[int, int]]  # the first convolution's strides and dilations
    produced: tuple[int, int]  # the H, W of its map
    done: tuple[ir.Operation, ...]  # erased once the kernel is built, users first

    @staticmethod
    def of(dw: ir.Operation) -> _Group | None:
        """The group whose depthwise convolution is `dw`, or None where its ops are not as lowerings.py makes
        them (then they run as the two kernels they are)."""
        padded = dw.operands[0]
        alloc = producer(padded)
        if alloc is None or alloc.name != "memref.alloc":
            return None
        around = users(padded)
        fills = [u for u in around if u.name == "linalg.fill"]
        views = [u for u in around if u.name == "memref.subview"]
        deallocs = [u for u in around if u.name == "memref.dealloc"]
        interior = views[0].results[0] if views else padded
        convs = [u for u in users(interior)
                 if u.name == "linalg.conv_2d_nhwc_hwcf" and EXPANSION_ATTR in u.attributes]  # fmt: skip
        if len(fills) != 1 or len(views) > 1 or len(deallocs) != 1 or len(convs) != 1:
            return None
        pw = convs[0]
        weights = constant_data(pw.operands[1])
        if not static_f32(pw) or not static_f32(dw) or weights is None:
            return None
        pw_bias, pw_activation = epilogue(pw)
        dw_bias, dw_activation = epilogue(dw)
        window = dense_window(window_of(dw))
        strides, dilations = tuple(window["strides"]), tuple(window["dilations"])
        kh = static_shape(dw.operands[1])[0]
        if (kh - 1) * dilations[0] + 1 < strides[0]:
            return None
        pads = (0, 0)
        if views:
            _, top, left, _ = (int(v) for v in ir.DenseI64ArrayAttr(views[0].attributes["static_offsets"]))
            pads = (top, left)
        _, hp, wp, _ = static_shape(padded)
        _, h, w, _ = static_shape(interior)
        first = dense_window(window_of(pw))
        first_window = (tuple(first["strides"]), tuple(first["dilations"]))
        done = (pw_activation, pw, pw_bias, fills[0], dw_activation, dw, dw_bias, deallocs[0], *views, alloc)
        return _Group(
            pw.operands[0], np.asarray(weights), pw_bias.operands[0] if pw_bias is not None else None,
            pw_activation, dw.operands[1], dw_bias.operands[0] if dw_bias is not None else None, dw_activation,
            dw.operands[2], pads, (hp, wp), strides, dilations, first_window, (h, w),
            tuple(op for op in done if op is not None),
        )  # fmt: skip


def fuse_expansions(function: ir.Operation) -> list[Kernel]:
    """Builds the fused kernel of every expansion group of `function` in place of its ops; its root loops."""
    kernels: list[Kernel] = []
    for dw in [op for op in ops.walk_ops(function) if op.name == DEPTHWISE and EXPANSION_ATTR in op.attributes]:
        group = _Group.of(dw)
        if group is None:
            continue
        with dw.location, ir.InsertionPoint(dw):
            roots = _Fused(dw, group).emit()
        for op in group.done:
            op.erase()
        kernels.extend(Kernel(root, lambda _: None) for root in roots)
    return kernels


@dataclasses.dataclass(frozen=True)
class _Part:
    """One vector of a channel block: its first channel in the block, its lanes and the channels it holds."""

    offset: int
    lanes: int
    width: int


class _Fused:
    """The shapes, band and ring of one group, and the emitter of its kernel."""

    def __init__(self, user: ir.Operation, g: _Group) -> None:
        self.user, self.g = user, g
        self.n, self.hx, self.wx, self.cin = static_shape(g.x)
        self.h, self.w = g.produced
        # The first convolution's taps (1 for an expansion) and multiply-adds per output element.
        self.kh1, self.kw1 = g.weights.shape[:2]
        self.depth = self.kh1 * self.kw1 * self.cin
        _, self.oh, self.ow, self.c = static_shape(g.y)
        self.kh, self.kw = static_shape(g.filter)[:2]
        (self.sh, _), (self.dh, _) = g.strides, g.dilations
        self.window = (self.kh - 1) * self.dh + 1
        _, self.wp = g.padded
        # The depthwise tiles' channel vectors (the depthwise kernel's rule), and the ring's: a multiple of
        # them, as many as fit RING_BYTES at one output row per band, for the 1x1 tile's sake (a row's pixels by
        # one vector loaded a broadcast per FMA: EfficientNet's 192 -> 1152 on 7x7 ran 0.9x the two kernels).
        self.vectors = 2 if self.c >= 2 * LANES and held_filter(2, self.kh, self.kw) else 1
        fitting = [v for v in (4, 2)
                   if v > self.vectors and self.c >= LANES * v and self.ring_bytes(1, v) <= RING_BYTES]
        self.ring_vectors = fitting[0] if fitting else self.vectors
        if self.ring_bytes(1, self.vectors) > RING_BYTES:
            self.vectors = self.ring_vectors = 1
        rows = tile_shape((self.oh, self.ow), self.vectors, (self.kh, self.kw), g.strides, g.dilations).rows
        while rows > 1 and self.ring_bytes(rows, self.ring_vectors) > RING_BYTES:
            rows -= 1
        self.rows = rows
        self.ring_rows = ring_rows(rows, self.sh, self.window)
        self.f32 = ir.F32Type.get()

    def ring_bytes(self, rows: int, vectors: int) -> int:
        return ring_rows(rows, self.sh, self.window) * self.wp * LANES * vectors * 4

    def emit(self) -> list[ir.Operation]:
        """The kernel's root loops, one per group of channel blocks: over its blocks and the images, each a
        call of the block's helper function on views of the operands."""
        roots = []
        for blocks in channel_blocks(self.c, self.ring_vectors):
            parts = _parts(blocks.widths)
            packed = self._packed(blocks, parts)
            width = sum(blocks.widths)
            loop = scf.ForOp(index(blocks.start), index(blocks.start + blocks.count * blocks.step), index(blocks.step))
            with ir.InsertionPoint(loop.body):
                c0 = loop.induction_variable
                images = scf.ForOp(index(0), index(self.n), index(1))
                with ir.InsertionPoint(images.body):
                    self._call(blocks, parts, packed, c0, images.induction_variable, width)
                    scf.YieldOp([])
                scf.YieldOp([])
            roots.append(loop.operation)
        return roots

    def _packed(self, blocks: ChannelBlocks, parts: Sequence[_Part]) -> ir.Value:
        """The first convolution's filter for the group's blocks, [block, KH' x KW' x C, lanes of its parts] (tap
        by tap, channel by channel), zero beyond the channels."""
        lanes = sum(p.lanes for p in parts)
        data = np.zeros((blocks.count, self.depth, lanes), np.float32)
        width = sum(blocks.widths)
        weights = self.g.weights.reshape(self.depth, self.c)
        for b in range(blocks.count):
            start = blocks.start + b * blocks.step
            data[b, :, :width] = weights[:, start : start + width]
        return packed_global(self.user, data.reshape(-1), f"__glow_packed_expansion_{self.depth}x{self.c}")

    def _call(self, blocks: ChannelBlocks, parts: Sequence[_Part], packed: ir.Value, c0: ir.Value,
              image: ir.Value, width: int) -> None:  # fmt: skip
        g = self.g
        lanes = sum(p.lanes for p in parts)
        block = arith.divui(arith.subi(c0, index(blocks.start)), index(blocks.step))
        values = [
            block_at(g.x, [image, 0, 0, 0], [1, self.hx, self.wx, self.cin], drop_first=True),
            block_at(packed, [arith.muli(block, index(self.depth * lanes))], [self.depth * lanes]),
            block_at(g.filter, [0, 0, c0], [self.kh, self.kw, width]),
            block_at(g.y, [image, 0, 0, c0], [1, self.oh, self.ow, width]),
        ]
        biases = [block_at(b, [c0], [width]) for b in (g.bias, g.dw_bias) if b is not None]

        def body(arguments: list[ir.Value]) -> None:
            x, w, filter_, y, *rest = arguments
            bias = rest.pop(0) if g.bias is not None else None
            dw_bias = rest.pop(0) if g.dw_bias is not None else None
            _Block(self, parts, blocks.widths, x, w, bias, filter_, dw_bias, y).emit()

        operands = [*values, *biases]
        name = define_helper(self.user, "expansion", [v.type for v in operands], body, serial=True)
        func.CallOp([], ir.FlatSymbolRefAttr.get(name), operands)


def _parts(widths: Sequence[int]) -> list[_Part]:
    """The vectors of a block of `widths` channels, as the depthwise tiles hold them (`register_lanes`)."""
    return [_Part(v * LANES, register_lanes(width), width) for v, width in enumerate(widths)]


class _Block(RingBands):
    """The body of one (channel block, image) call: its ring, the 1x1 rows into it (`fill`) and the depthwise
    bands (depthwise_ring.RingBands)."""

    def __init__(self, k: _Fused, parts: Sequence[_Part], widths: Sequence[int], x: ir.Value, w: ir.Value,
                 bias: ir.Value | None, filter_: ir.Value, dw_bias: ir.Value | None, y: ir.Value) -> None:  # fmt: skip
        self.k, self.parts, self.x, self.w, self.bias = k, parts, x, w, bias
        self.lanes = sum(p.lanes for p in parts)
        self.types = [ir.VectorType.get([p.lanes], k.f32) for p in parts]
        # Built here, in the helper: a value of the caller's cannot cross into it.
        self.masks = [lanes_mask(p.width, p.lanes) for p in parts]
        ring_type = ir.MemRefType.get([1, k.ring_rows, k.wp, self.lanes], k.f32)
        ring = memref.alloca(ring_type, [], [], alignment=64)
        # The ring's padding columns and rows are zeros: its tiles skip the taps that read them.
        interior = Interior(*k.g.pads, k.h, k.w)
        depthwise = DepthwiseKernel(ring, filter_, dw_bias, y, k.g.strides, k.g.dilations, k.g.activation, interior)
        super().__init__(depthwise, ring, k.rows, widths, k.vectors)
        # The 1x1 tile: a run of a row's pixels by the block's vectors of accumulators.
        self.pixels = row_tile(k.w, min(MAX_PIXELS, (REGISTERS - len(parts) - 1) // len(parts)))

    def emit(self) -> None:
        """The ring's padding columns, then the bands."""
        self._zero_columns()
        super().emit()

    def _zero_columns(self) -> None:
        """The padding columns of every ring row, zero for the whole call."""
        k = self.k
        left = k.g.pads[1]
        columns = [*range(left), *range(left + k.w, k.wp)]
        if not columns:
            return
        with for_loop(0, k.ring_rows, 1) as slot:
            for column in columns:
                self._store_zeros(slot, index(column))

    def _store_zeros(self, slot: ir.Value, column: ir.Value) -> None:
        for part, t in zip(self.parts, self.types, strict=True):
            vector.store(zeros(t), self.ring, [index(0), slot, column, index(part.offset)])

    def fill(self, row: ir.Value) -> None:
        """Padded row `row` of the expanded map into its ring row: the 1x1 convolution of input row row - top,
        or zeros for a padding row."""
        k = self.k
        top = k.g.pads[0]
        slot = self.slot(row)
        inside = arith.andi(arith.cmpi(arith.CmpIPredicate.uge, row, index(top)),
                            arith.cmpi(arith.CmpIPredicate.ult, row, index(top + k.h)))  # fmt: skip
        branch = scf.IfOp(inside, [], has_else=True)
        with ir.InsertionPoint(branch.then_block):
            source = arith.subi(row, index(top))
            each_tile(k.w, self.pixels, lambda x0, pixels: self._pixels(source, slot, x0, pixels))
            scf.YieldOp([])
        with ir.InsertionPoint(branch.else_block):
            with for_loop(k.g.pads[1], k.g.pads[1] + k.w, 1) as column:
                self._store_zeros(slot, column)
            scf.YieldOp([])

    def _pixels(self, source: ir.Value, slot: ir.Value, x0: ir.Value, pixels: int) -> None:
        """Pixels x0 .. x0 + pixels - 1 of the first convolution's row `source` (bias, activation) into ring row
        `slot`: per tap, a loop over the input channels carrying the accumulators."""
        k = self.k
        if self.bias is not None:
            start = [load(self.bias, [index(p.offset)], t, m) for p, t, m in zip(self.parts, self.types, self.masks)]
        else:
            start = [zeros(t) for t in self.types]
        count = len(self.parts)
        (sh, sw), (dh, dw) = k.g.first_window
        accs = [acc for _ in range(pixels) for acc in start]
        for i in range(k.kh1):
            row = arith.addi(arith.muli(source, index(sh)), index(i * dh)) if (sh, i) != (1, 0) else source
            for j in range(k.kw1):
                tap = (i * k.kw1 + j) * k.cin
                loop = scf.ForOp(index(0), index(k.cin), index(1), accs)
                with ir.InsertionPoint(loop.body):
                    c = loop.induction_variable
                    at = arith.muli(arith.addi(c, index(tap)) if tap else c, index(self.lanes))
                    filters = [vector.load(t, self.w, [arith.addi(at, index(p.offset))])
                               for p, t in zip(self.parts, self.types, strict=True)]  # fmt: skip
                    carried = list(loop.inner_iter_args)
                    out = []
                    for p in range(pixels):
                        column = arith.addi(x0, index(p)) if p else x0
                        if (sw, j) != (1, 0):
                            column = arith.addi(arith.muli(column, index(sw)), index(j * dw))
                        x = memref.load(self.x, [row, column, c])
                        for v, (w, t) in enumerate(zip(filters, self.types, strict=True)):
                            out.append(vector.fma(vector.broadcast(t, x), w, carried[p * count + v]))
                    scf.YieldOp(out)
                accs = list(loop.results)
        column0 = arith.addi(x0, index(k.g.pads[1]))
        for p in range(pixels):
            column = arith.addi(column0, index(p)) if p else column0
            for v, part in enumerate(self.parts):
                value = accs[p * count + v]
                if k.g.expand_activation is not None:
                    [value] = yielded(k.g.expand_activation, [value])
                store(value, self.ring, [index(0), slot, column, index(part.offset)], None)
