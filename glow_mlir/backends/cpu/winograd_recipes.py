"""The CPU backend's Winograd kernel for f32 3x3 stride-1 convolutions, for glow-cpu-schedule (schedule.py): the
recipe of a `linalg.conv_2d_nhwc_hwcf` with a constant 3x3 filter, unit strides and dilations, which replaces the
op with vector code written here (no transform steps), the bias and activation of a CPU convolution included.

F(2x2, 3x3) (winograd_transforms.py) turns the 3x3 window into 16 elementwise products per 4x4 input tile;
summed over the input channels, the products of each of the 16 positions xi are a matrix product over the
tiles: M[xi][tile, f] = sum_c V[xi][tile, c] U[xi][c, f], with U = G g G^T (the filter, transformed at compile
time and packed per block of output channels) and V = B^T d B (each tile's input, additions on 16-channel
vectors: NHWC puts each pixel's channels in a row). A layer's multiply-adds fall from 9 to 4 per output and
input channel, 2.25 times fewer. Per group of P tiles (the pointwise kernel's register tile of P pixels by
`vectors` registers, pointwise_recipes.register_tile):

1. the input transform of the group's tiles, for every input channel, into V;
2. per block of 16 x vectors output channels, per position, the product of the tiles' V rows with the block's
   [C, 16 x vectors] filter slice in registers, stored to M [16, P, 16 x vectors];
3. the output transform A^T M A, the bias and the activation in registers, one store per output pixel.

Two loop orders, by the filter's size (`_layout`):

- 'rows' (the transformed filter within half of L2, rows of at least 4 tiles): a loop over the rows of tiles,
  each a call of a row function that does 1 to 3 for each group along its row, every channel block per group:
  the filter is re-read from L2 once per group.
- 'bands' (larger filters: ResNet's 256 and 512 channels, VGG's): a loop over bands of rows of tiles whose V
  fits 1 MiB, each a call of a band function that transforms every tile of the band into V (a loop over the
  tiles), then loops over the channel blocks, each a call of a block function doing 2 and 3 for every group
  of the band: each block's filter slice streams once per band while V stays in L2.

Every helper function keeps its scratch (V, M) in allocas of its own entry block, private to each call, so the
loops that call them run on any thread: glow-cpu-parallelize splits the rows, or the bands, or a band's tiles
and blocks; the row and block functions carry glow.serial (never split themselves). Each output is computed
alike at any thread count. Tiles that run past an odd map read zeros (rows: the last row and tile are variants
of their own) or the input's last row or column (bands) for the inputs beyond it, which reach only outputs
past the map, and store only their pixels in the map.

Rounding: the transforms of F(2, 3) multiply by 0, +-1 and +-1/2 only, and each output sums 4 products per
channel instead of 9, in another order; outputs differ from the direct convolution's in the last bits
(test_winograd.py checks them against onnxruntime).

docs/OPTIMIZATIONS.md ("Winograd convolutions") has the measurements.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
from mlir import ir
from mlir.dialects import arith, func, memref, scf, vector

from glow_mlir.backends.cpu.conv_recipes import LANES, REGISTERS, dense_window, epilogue, static_f32, window_of
from glow_mlir.backends.cpu.depthwise_recipes import last_apart
from glow_mlir.backends.cpu.outline import define_helper
from glow_mlir.backends.cpu.pointwise_recipes import MAX_PIXELS, channel_blocks, register_tile, row_tile
from glow_mlir.backends.cpu.recipes import (
    L2_BYTES,
    Kernel,
    Recipe,
    block_at,
    constant_data,
    model_weight_bytes,
    packed_global,
    recipe,
    static_shape,
)
from glow_mlir.backends.cpu.vector_body import lanes_mask, load, store, yielded, zeros
from glow_mlir.backends.cpu.winograd_transforms import F2X3, Minimal, sandwich, transformed_filter
from glow_mlir.codegen.builders import index


# The transformed filter's share of L2 that the rule allows: it is re-read from there once per group of tiles.
FILTER_L2_SHARE = 0.5
# The fewest tiles per row: a shorter row leaves the register tile's pixels idle.
MIN_ROW_TILES = 4
# The 'bands' loop order: bands of rows of tiles whose transformed input is at most this large (it stays in L2
# while each channel block's filter slice, at most SLICE_BYTES, streams through once per band), and of at least
# this many tiles (each band streams the whole transformed filter: 4 / tiles bytes per multiply-add).
BAND_INPUT_BYTES = 1024 * 1024
SLICE_BYTES = 1024 * 1024
MIN_BAND_TILES = 9
# The bytes from memory per multiply-add that keep pace with the FMA ports (about 10 GB/s against 100 G f32
# multiply-adds/s on this Xeon: ResNet-18's 512 -> 512 layers on 7x7 streamed 16.8 MiB of transformed filter in
# 1.75 ms), and the cost of Winograd's multiply-add against a direct one's (its transforms, about 20 %).
MEMORY_BYTES_PER_MAC = 0.1
WINOGRAD_MAC_COST = 1.2


def _layout(op: ir.Operation) -> tuple[str, int] | None:
    """Which of the kernel's two loop orders runs convolution `op` (module docstring), or None for neither:
    ('rows', 1) where the transformed filter fits FILTER_L2_SHARE of L2 and rows have MIN_ROW_TILES tiles or
    more, else ('bands', rows of tiles per band) for bands within BAND_INPUT_BYTES of at least MIN_BAND_TILES;
    None too where reading the transformed filter (once, or once per band) from memory would take longer than
    the direct schedule (a roofline of both: multiply-adds against bytes at MEMORY_BYTES_PER_MAC)."""
    if not static_f32(op):
        return None
    kh, kw, c, f = static_shape(op.operands[1])
    window = dense_window(window_of(op))
    if (kh, kw) != (F2X3.r, F2X3.r) or window["strides"] != [1, 1] or window["dilations"] != [1, 1]:
        return None
    if constant_data(op.operands[1]) is None:
        return None
    n, oh, ow, _ = static_shape(op.operands[2])
    a2 = F2X3.a * F2X3.a
    rows, cols = -(-oh // F2X3.m), -(-ow // F2X3.m)
    if a2 * c * f * 4 <= FILTER_L2_SHARE * L2_BYTES and cols >= MIN_ROW_TILES:
        layout, streams = ("rows", 1), 1
    else:
        band = min(rows, BAND_INPUT_BYTES // (a2 * cols * _padded(c) * 4))
        if band * cols < MIN_BAND_TILES:
            return None
        layout, streams = ("bands", band), n * -(-rows // band)
    # Where the model's weights come from memory on every run, a layer whose filter reads outweigh its
    # arithmetic keeps the direct schedule, which reads 9 / 16 of the bytes once (ResNet-18's 512 -> 512 on
    # 7x7, one band of 16 tiles: 1.31 -> 1.75-1.80 ms per layer in the network, though 1.17x faster alone).
    if model_weight_bytes(op) > L2_BYTES:
        direct = max(9 * n * oh * ow * c * f, 9 * c * f * 4 / MEMORY_BYTES_PER_MAC)
        winograd = max(WINOGRAD_MAC_COST * a2 * n * rows * cols * c * f,
                       streams * a2 * c * f * 4 / MEMORY_BYTES_PER_MAC)  # fmt: skip
        if winograd >= direct:
            return None
    return layout


def is_winograd(op: ir.Operation) -> bool:
    """A convolution this module's kernel runs: f32 operands of static shape, a constant 3x3 filter, unit
    strides and dilations, and one of the two loop orders' size rules (`_layout`)."""
    return _layout(op) is not None


@recipe("linalg.conv_2d_nhwc_hwcf", when=is_winograd)
def winograd_recipe(op: ir.Operation) -> Recipe:
    """A 3x3 convolution with the bias and activation of a CPU convolution, as Winograd F(2x2, 3x3) vector
    kernels (module docstring)."""
    bias_op, activation_op = epilogue(op)
    x, filter_, y = op.operands
    weights = constant_data(filter_)
    layout = _layout(op)
    assert weights is not None and layout is not None
    order, band = layout
    bias = bias_op.operands[0] if bias_op is not None else None
    kernel = WinogradKernel(op, x, np.asarray(weights), bias, y, activation_op, band if order == "bands" else 0)
    root = kernel.emit_bands() if order == "bands" else kernel.emit_rows()
    for done in (activation_op, op, bias_op):
        if done is not None:
            done.erase()
    return Recipe((Kernel(root, lambda _: None),))


def _padded(channels: int) -> int:
    """`channels` rounded up to whole vectors."""
    return -(-channels // LANES) * LANES


@dataclasses.dataclass(frozen=True)
class _Block:
    """`count` blocks of `vectors` output-channel registers from channel `start`, the last vector of each with
    `lanes` channels, their packed filter slices ([a * a, C, 16 x vectors] each) from float `offset`."""

    start: int
    count: int
    vectors: int
    lanes: int
    offset: int

    def channels(self) -> int:
        """The output channels of one block of the group."""
        return LANES * (self.vectors - 1) + self.lanes


# Where pixel (i, j) of tile p of a group is, (p, last, i, j, c) -> its index in a buffer at channel c, or None
# where it is not read (zeros) or not stored; `last`: p is the group's last tile, which reaches past an odd map.
_TileAt = Callable[[ir.Value, bool, int, int, ir.Value], list[ir.Value] | None]


# A helper function's operands: its input, the packed filter, the bias (None: none), its output.
_Operands = tuple[ir.Value, ir.Value, ir.Value | None, ir.Value]


@dataclasses.dataclass(frozen=True)
class _Band:
    """The shape of one band: its rows of tiles, and the input and output rows of its views."""

    tile_rows: int
    rows_in: int
    rows_out: int


class WinogradKernel:
    """The shapes, register tile and packed filter of one convolution, and the emitters of its kernel."""

    def __init__(self, op: ir.Operation, x: ir.Value, weights: np.ndarray, bias: ir.Value | None, y: ir.Value,
                 activation: ir.Operation | None, band: int, minimal: Minimal = F2X3) -> None:  # fmt: skip
        self.op, self.x, self.bias, self.y, self.activation, self.minimal = op, x, bias, y, activation, minimal
        self.n, self.oh, self.ow, self.f = static_shape(y)
        _, self.h, self.w, self.c = static_shape(x)
        m, a = minimal.m, minimal.a
        self.tile_rows, self.tile_cols = -(-self.oh // m), -(-self.ow // m)
        self.band = band
        if band:
            # The tiles of a band as one row; each block's filter slice streams once, within SLICE_BYTES.
            row = band * self.tile_cols
            pixels, vectors = register_tile(row, self.f, True)
            while vectors > 1 and a * a * self.c * LANES * vectors * 4 > SLICE_BYTES:
                vectors //= 2
            pixels = min(MAX_PIXELS, (REGISTERS - vectors - 1) // vectors)
        else:
            row = self.tile_cols
            pixels, vectors = register_tile(row, self.f, False)
        self.pixels, self.vectors = row_tile(row, pixels), vectors
        u = transformed_filter(weights, minimal)
        blocks, packed, offset = [], [], 0
        for start, count, vectors in channel_blocks(self.f, self.vectors):
            width = LANES * vectors
            lanes = min(LANES, self.f - start - (count * vectors - 1) * LANES) if count == 1 else LANES
            part = np.zeros((count, u.shape[0], self.c, width), np.float32)
            for b in range(count):
                chunk = u[:, :, start + b * width : min(self.f, start + (b + 1) * width)]
                part[b, :, :, : chunk.shape[2]] = chunk
            blocks.append(_Block(start, count, vectors, lanes, offset))
            packed.append(part.reshape(-1))
            offset += part.size
        self.blocks = blocks
        self.packed = np.concatenate(packed)
        self.vt = ir.VectorType.get([LANES], ir.F32Type.get())

    def _packed_filter(self) -> ir.Value:
        return packed_global(self.op, self.packed, f"__glow_packed_winograd_{self.c}x{self.f}")

    # ------------------------------------------------------------------------------------------------------
    # Rows of tiles, each a call with its own scratch

    def emit_rows(self) -> ir.Operation:
        """The kernel's root loop, built at the insertion point: over the rows of tiles of every image, each a
        call of the row function (the last row of an odd map its own variant, with fewer rows)."""
        m, a = self.minimal.m, self.minimal.a
        u = self._packed_filter()
        last = self.oh - m * (self.tile_rows - 1)
        loop = scf.ForOp(index(0), index(self.n * self.tile_rows), index(1))
        with ir.InsertionPoint(loop.body):
            row = loop.induction_variable
            image = arith.divui(row, index(self.tile_rows))
            ty = arith.remui(row, index(self.tile_rows))
            last_apart(ty, self.tile_rows,
                       lambda partial: self._call_row(image, ty, *((last, last + a - m) if partial else (m, a)), u),
                       last != m)  # fmt: skip
            scf.YieldOp([])
        return loop.operation

    def _call_row(self, image: ir.Value, ty: ir.Value, rows_out: int, rows_in: int, u: ir.Value) -> None:
        """The call of the row function on output rows m * ty.. (rows_out of them) and the rows_in input rows
        they read, as views (the function writes only its output view: the rows run on any thread)."""
        y0 = arith.muli(ty, index(self.minimal.m))
        x_rows = block_at(self.x, [image, y0, 0, 0], [1, rows_in, self.w, self.c], drop_first=True)
        y_rows = block_at(self.y, [image, y0, 0, 0], [1, rows_out, self.ow, self.f], drop_first=True)
        self._call("row", (x_rows, u, self.bias, y_rows), lambda *args: self._row_body(*args, rows_out, rows_in))

    def _call(self, kind: str, operands: _Operands, body: Callable[..., None]) -> None:
        """A call of the helper function `kind` (`_define`) on operands (input, packed filter, bias or None,
        output), its body built by `body(input, filter, bias or None, output)` on its arguments."""
        x, u, bias, y = operands
        values = [x, u, *([bias] if bias is not None else []), y]

        def build(arguments: list[ir.Value]) -> None:
            first, filter_, *rest, last = arguments
            body(first, filter_, rest[0] if rest else None, last)

        name = _define(self.op, kind, [v.type for v in values], build)
        func.CallOp([], ir.FlatSymbolRefAttr.get(name), values)

    def _row_body(self, x: ir.Value, u: ir.Value, bias: ir.Value | None, y: ir.Value, rows_out: int,
                  rows_in: int) -> None:  # fmt: skip
        """One row of tiles: per group of tiles along it, their transformed inputs into V, then per channel
        block the products into M and the output transform."""
        m, a = self.minimal.m, self.minimal.a
        f32 = ir.F32Type.get()
        v = memref.alloca(ir.MemRefType.get([a * a, self.pixels, _padded(self.c)], f32), [], [], alignment=64)
        mm = memref.alloca(ir.MemRefType.get([a * a, self.pixels, LANES * self.vectors], f32), [], [], alignment=64)
        last_cols = self.ow - m * (self.tile_cols - 1)

        def group(t0: ir.Value, tiles: int, edge: bool) -> None:
            def tile_input(p: ir.Value, last: bool, i: int, j: int, c0: ir.Value) -> list[ir.Value] | None:
                if i >= rows_in or j >= (last_cols if last else m) + a - m:
                    return None
                return [index(i), arith.addi(arith.muli(arith.addi(t0, p), index(m)), index(j)), c0]

            def tile_output(p: ir.Value, last: bool, i: int, j: int, channel: ir.Value) -> list[ir.Value] | None:
                if i >= rows_out or j >= (last_cols if last else m):
                    return None
                return [index(i), arith.addi(arith.muli(arith.addi(t0, p), index(m)), index(j)), channel]

            self._inputs(x, v, tiles, edge, lambda p: p, tile_input)
            for block in self.blocks:
                loop = scf.ForOp(index(0), index(block.count), index(1))
                with ir.InsertionPoint(loop.body):
                    b = loop.induction_variable
                    base = arith.addi(arith.muli(b, index(a * a * self.c * LANES * block.vectors)), index(block.offset))
                    channel0 = arith.addi(arith.muli(b, index(LANES * block.vectors)), index(block.start))
                    self._products(v, u, base, mm, index(0), tiles, block.vectors)
                    self._outputs(mm, y, bias, channel0, tiles, edge, block, tile_output)
                    scf.YieldOp([])

        # The tile that reaches past an odd map is in the last group, which is then one of its own.
        _in_chunks(self.tile_cols, self.pixels, group, last_alone=self.ow % m != 0)

    # ------------------------------------------------------------------------------------------------------
    # Bands of rows of tiles: all of the band's transformed input, then the channel blocks

    def emit_bands(self) -> ir.Operation:
        """The kernel's root loop, built at the insertion point: over the bands of every image, each a call of
        the band function on views of its input and output rows (the last band of a map its own variant)."""
        m = self.minimal.m
        u = self._packed_filter()
        bands = -(-self.tile_rows // self.band)
        loop = scf.ForOp(index(0), index(self.n * bands), index(1))
        with ir.InsertionPoint(loop.body):
            r = loop.induction_variable
            image, band = arith.divui(r, index(bands)), arith.remui(r, index(bands))
            y0 = arith.muli(band, index(m * self.band))

            def call(shape: _Band) -> None:
                x_rows = block_at(self.x, [image, y0, 0, 0], [1, shape.rows_in, self.w, self.c], drop_first=True)
                y_rows = block_at(self.y, [image, y0, 0, 0], [1, shape.rows_out, self.ow, self.f], drop_first=True)
                self._call("band", (x_rows, u, self.bias, y_rows), lambda *args: self._band_body(*args, shape))

            first, last = self._band_shape(0), self._band_shape((bands - 1) * self.band)
            last_apart(band, bands, lambda is_last: call(last if is_last else first), first != last)
            scf.YieldOp([])
        return loop.operation

    def _band_shape(self, first_tile_row: int) -> _Band:
        """The band from row of tiles `first_tile_row`: at most self.band rows of tiles, within the map."""
        m, a = self.minimal.m, self.minimal.a
        return _Band(min(self.band, self.tile_rows - first_tile_row),
                     min(m * self.band + a - m, self.h - m * first_tile_row),
                     min(m * self.band, self.oh - m * first_tile_row))  # fmt: skip

    def _band_body(self, x: ir.Value, u: ir.Value, bias: ir.Value | None, y: ir.Value, band: _Band) -> None:
        """V for every tile of the band (a loop over the tiles), then a loop over the channel blocks, each a call
        of the block function on its slices of the packed filter, the bias and the output: two loops that
        glow-cpu-parallelize may split (where the loop over bands is not), the first writing V's tiles, the
        second the output's channels."""
        a = self.minimal.a
        tiles = band.tile_rows * self.tile_cols
        v = memref.alloca(ir.MemRefType.get([a * a, tiles, _padded(self.c)], ir.F32Type.get()), [], [], alignment=64)
        loop = scf.ForOp(index(0), index(tiles), index(1))
        with ir.InsertionPoint(loop.body):
            t = loop.induction_variable
            ty, tx = arith.divui(t, index(self.tile_cols)), arith.remui(t, index(self.tile_cols))

            def tile_input(_: ir.Value, __: bool, i: int, j: int, c0: ir.Value) -> list[ir.Value]:
                # Rows and columns past the input (odd maps) read its last one instead: they reach only outputs
                # past the map, which are not stored.
                return [self._clamped(ty, i, band.rows_in, band.tile_rows),
                        self._clamped(tx, j, self.w, self.tile_cols), c0]  # fmt: skip

            self._inputs(x, v, 1, False, lambda _: t, tile_input)
            scf.YieldOp([])
        for block in self.blocks:
            loop = scf.ForOp(index(0), index(block.count), index(1))
            with ir.InsertionPoint(loop.body):
                b = loop.induction_variable
                slice_floats = a * a * self.c * LANES * block.vectors
                start = arith.addi(arith.muli(b, index(slice_floats)), index(block.offset))
                channel0 = arith.addi(arith.muli(b, index(LANES * block.vectors)), index(block.start))
                channels = block.channels()
                operands = (
                    v,
                    block_at(u, [start], [slice_floats]),
                    block_at(bias, [channel0], [channels]) if bias is not None else None,
                    block_at(y, [0, 0, channel0], [band.rows_out, self.ow, channels]),
                )
                self._call("block", operands, lambda *args, block=block: self._block_body(*args, block, band))
                scf.YieldOp([])

    def _clamped(self, t: ir.Value, k: int, size: int, tiles: int) -> ir.Value:
        """Input row (column) k of tile t of `tiles`, at most size - 1."""
        at = arith.addi(arith.muli(t, index(self.minimal.m)), index(k))
        return at if self.minimal.m * (tiles - 1) + k < size else arith.minui(at, index(size - 1))

    def _block_body(self, v: ir.Value, u: ir.Value, bias: ir.Value | None, y: ir.Value, block: _Block,
                    band: _Band) -> None:  # fmt: skip
        """One channel block of every tile of a band: per group of tiles, the products into M (scratch of its
        own) and the output transform, each tile's pixels stored where they are in the band's rows."""
        m, a = self.minimal.m, self.minimal.a
        mm = memref.alloca(ir.MemRefType.get([a * a, self.pixels, LANES * block.vectors], ir.F32Type.get()), [],
                           [], alignment=64)  # fmt: skip

        def group(t0: ir.Value, count: int, _: bool) -> None:
            def place(p: ir.Value) -> tuple[ir.Value, ir.Value]:
                t = arith.addi(t0, p)
                return arith.divui(t, index(self.tile_cols)), arith.remui(t, index(self.tile_cols))

            def tile_output(p: ir.Value, _: bool, i: int, j: int, channel: ir.Value) -> list[ir.Value]:
                ty, tx = place(p)
                return [arith.addi(arith.muli(ty, index(m)), index(i)), arith.addi(arith.muli(tx, index(m)), index(j)),
                        channel]  # fmt: skip

            self._products(v, u, index(0), mm, t0, count, block.vectors)
            self._outputs(mm, y, bias, index(0), count, False, block, tile_output,
                          lambda p, i, j: self._inside(place(p), i, j, band))  # fmt: skip

        _in_chunks(band.tile_rows * self.tile_cols, self.pixels, group)

    # ------------------------------------------------------------------------------------------------------
    # The three steps, shared by both loop orders

    def _inputs(self, x: ir.Value, v: ir.Value, tiles: int, edge: bool, tile_of: Callable[[ir.Value], ir.Value],
                at: _TileAt) -> None:  # fmt: skip
        """V[xi, tile_of(p), c] = (B^T d B)[xi] for tiles p < `tiles` (the last on its own where `edge`) and every
        input channel c, d the a x a input pixels of the tile (`at(p, last, i, j, c0)`: the index of pixel (i,
        j)'s channel c0 in x, None for zeros)."""
        minimal = self.minimal
        a = minimal.a

        def channels(c0: ir.Value, mask: ir.Value | None) -> None:
            def tile(p: ir.Value, last: bool) -> None:
                d = [[_load_or_none(x, at(p, last, i, j, c0), self.vt, mask) for j in range(a)] for i in range(a)]
                for xi, value in enumerate(sandwich(minimal.bt, d)):
                    vector.store(value if value is not None else zeros(self.vt), v, [index(xi), tile_of(p), c0])

            _in_chunks(tiles, 1, lambda p, _, last: tile(p, last), last_alone=edge)

        _in_chunks(self.c, LANES, lambda c0, count, _: channels(c0, lanes_mask(count, LANES)))

    def _products(self, v: ir.Value, u: ir.Value, base: ir.Value, mm: ir.Value, t0: ir.Value, tiles: int,
                  vectors: int) -> None:  # fmt: skip
        """M[xi, p, :] = sum_c V[xi, t0 + p, c] U[xi, c, :] for each position xi and tile p < `tiles`, U the
        [a * a, C, 16 x vectors] slice of the packed filter `u` from float `base`, in registers."""
        vt = self.vt
        a2 = self.minimal.a * self.minimal.a
        width = LANES * vectors
        positions = scf.ForOp(index(0), index(a2), index(1))
        with ir.InsertionPoint(positions.body):
            xi = positions.induction_variable
            start = arith.addi(base, arith.muli(xi, index(self.c * width)))
            loop = scf.ForOp(index(0), index(self.c), index(1), [zeros(vt)] * (tiles * vectors))
            with ir.InsertionPoint(loop.body):
                c = loop.induction_variable
                row = arith.addi(start, arith.muli(c, index(width)))
                filters = [vector.load(vt, u, [arith.addi(row, index(k * LANES))]) for k in range(vectors)]
                carried = list(loop.inner_iter_args)
                out = []
                for p in range(tiles):
                    value = vector.broadcast(vt, memref.load(v, [xi, arith.addi(t0, index(p)), c]))
                    out += [vector.fma(value, w, carried[p * vectors + k]) for k, w in enumerate(filters)]
                scf.YieldOp(out)
            for p in range(tiles):
                for k in range(vectors):
                    vector.store(loop.results[p * vectors + k], mm, [xi, index(p), index(k * LANES)])
            scf.YieldOp([])

    def _outputs(self, mm: ir.Value, y: ir.Value, bias: ir.Value | None, channel0: ir.Value, tiles: int, edge: bool,
                 block: _Block, at: _TileAt,
                 inside: Callable[[ir.Value, int, int], ir.Value | None] | None = None) -> None:  # fmt: skip
        """y = activation(A^T M A + bias) for tiles p < `tiles` (the last on its own where `edge`) and each vector
        of `block` (channels from `channel0` of y and bias), pixel (i, j) of tile p stored at `at(p, last, i, j,
        channel)` (None: not at all), and only where `inside(p, i, j)` holds if that is not None (a band's pixels
        past an odd map)."""
        vt = self.vt
        m, a = self.minimal.m, self.minimal.a
        for k in range(block.vectors):
            mask = lanes_mask(block.lanes, LANES) if k == block.vectors - 1 else None
            channel = arith.addi(channel0, index(k * LANES))
            shift = load(bias, [channel], vt, mask) if bias is not None else None

            def tile(p: ir.Value, last: bool, k: int = k, mask: ir.Value | None = mask, channel: ir.Value = channel,
                     shift: ir.Value | None = shift) -> None:  # fmt: skip
                values = [[vector.load(vt, mm, [index(i * a + j), p, index(k * LANES)]) for j in range(a)]
                          for i in range(a)]  # fmt: skip
                outputs = sandwich(self.minimal.at, values)
                for i in range(m):
                    for j in range(m):
                        where = at(p, last, i, j, channel)
                        if where is None:
                            continue
                        value = outputs[i * m + j]
                        assert value is not None
                        if shift is not None:
                            value = arith.addf(value, shift)
                        if self.activation is not None:
                            [value] = yielded(self.activation, [value])
                        condition = inside(p, i, j) if inside is not None else None
                        if condition is None:
                            store(value, y, where, mask)
                            continue
                        branch = scf.IfOp(condition, [], has_else=False)
                        with ir.InsertionPoint(branch.then_block):
                            store(value, y, where, mask)
                            scf.YieldOp([])

            _in_chunks(tiles, 1, lambda p, _, last: tile(p, last), last_alone=edge)

    def _inside(self, place: tuple[ir.Value, ir.Value], i: int, j: int, band: _Band) -> ir.Value | None:
        """Whether pixel (i, j) of the tile at `place` in `band` is in the map (None: it always is)."""
        m = self.minimal.m
        conditions = []
        for t, k, size, tiles in ((place[0], i, band.rows_out, band.tile_rows),
                                  (place[1], j, self.ow, self.tile_cols)):  # fmt: skip
            if m * (tiles - 1) + k >= size:
                conditions.append(arith.cmpi(arith.CmpIPredicate.ult, t, index(tiles - 1)))
        if not conditions:
            return None
        return conditions[0] if len(conditions) == 1 else arith.andi(*conditions)


def _in_chunks(total: int, size: int, body: Callable[[ir.Value, int, bool], None], last_alone: bool = False) -> None:
    """body(first, count, last) over [0, total) in chunks of `size`: a loop over the full chunks (none for one
    chunk), then the chunk left. Where `last_alone` the last chunk is always one of its own, `last` True for it
    (a group's or a row's last tile, which reaches past an odd map)."""
    full, rest = divmod(total, size)
    if last_alone and rest == 0:
        full, rest = full - 1, size
    if full == 1:
        body(index(0), size, False)
    elif full > 1:
        loop = scf.ForOp(index(0), index(full), index(1))
        with ir.InsertionPoint(loop.body):
            iv = loop.induction_variable
            body(iv if size == 1 else arith.muli(iv, index(size)), size, False)
            scf.YieldOp([])
    if rest:
        body(index(full * size), rest, last_alone)


def _define(user: ir.Operation, kind: str, types: list[ir.Type], body: Callable[[list[ir.Value]], None]) -> str:
    """The helper function `__glow_winograd_<kind>_<digest>` (outline.define_helper); all but the band function
    are called once per iteration of the loop that glow-cpu-parallelize splits, and stay serial."""
    return define_helper(user, f"winograd_{kind}", types, body, serial=kind != "band")


def _load_or_none(x: ir.Value, at: list[ir.Value] | None, t: ir.VectorType, mask: ir.Value | None) -> ir.Value | None:
    return load(x, at, t, mask) if at is not None else None
