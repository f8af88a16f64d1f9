"""The CPU backend's Winograd kernel for f32 3x3 stride-1 convolutions, for glow-cpu-schedule (schedule.py): the
recipe of a `linalg.conv_2d_nhwc_hwcf` with a constant 3x3 filter, unit strides and dilations, which replaces the
op with vector code written here (no transform steps), the bias and activation of a CPU convolution included.

Winograd's minimal filtering F(m x m, r x r) (Lavin and Gray 2016, arXiv 1509.09308) computes an m x m tile
of outputs from an a x a tile of inputs (a = m + r - 1) as

    Y = A^T [ U (.) V ] A,   U = G g G^T (the filter, once, at compile time),   V = B^T d B (the input tile),

with (.) the elementwise product; summed over input channels, the product of each of the a * a positions is a
matrix product over the tiles: M[xi][tile, f] = sum_c V[xi][tile, c] U[xi][c, f]. A 3x3 layer's multiply-adds
fall from 9 per output and channel pair to a * a / (m * m) (F(2, 3): 16 / 4 = 4, 2.25 times fewer), at the
price of the transforms, which are additions on whole 16-channel vectors (NHWC puts each pixel's channels in a
row) and cost per tile what its channels' product costs per 16 channels.

The kernel works one row of tiles at a time, in a function of its own (`_RowFunction`) whose two scratch
buffers (`memref.alloca` in its entry block) are private to each call, so that the rows can run on any
thread (glow-cpu-parallelize splits the loop over rows, which calls it): per group of P tiles along the row,

1. the input transform of the group's tiles, for every input channel, into V [a * a, P, C];
2. per block of output channels (16 x vectors, the pointwise kernel's register tile of P pixels by `vectors`
   registers, pointwise_recipes.register_tile), the a * a matrix products of the tiles' V rows with the
   packed filter's [C, 16 x vectors] slices, each in registers, stored to M [a * a, P, 16 x vectors];
3. the output transform of M, the bias and the activation in registers, and one store per output pixel.

V (P x C x 64 bytes at a = 4) stays in L1 or L2 from 1 to 3, and the filter's a * a * C * F floats are re-read
once per group: the rule (`is_winograd`) takes layers whose transformed filter fits in half of L2. Tiles that
run past the output (odd maps) read zeros for the inputs beyond it and store only their pixels in the map.

Rounding: the transforms of F(2, 3) multiply by 0, +-1 and +-1/2 only (exact), and each output sums 4 products
per channel instead of 9 in another order; outputs differ from the direct convolution's by a few ulps of the
accumulated values (test_winograd.py checks them against onnxruntime).

docs/OPTIMIZATIONS.md ("Winograd convolutions") has the measurements.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable

import numpy as np
from mlir import ir
from mlir.dialects import arith, func, memref, scf, vector

from glow_mlir.backends.cpu.conv_recipes import LANES, REGISTERS, dense_window, epilogue, static_f32, window_of
from glow_mlir.backends.cpu.outline import OUTLINED_PREFIX
from glow_mlir.backends.cpu.parallel import SERIAL_ATTR
from glow_mlir.backends.cpu.pointwise_recipes import MAX_PIXELS, channel_blocks, register_tile, row_tile
from glow_mlir.backends.cpu.recipes import (
    L2_BYTES,
    Kernel,
    Recipe,
    block_at,
    constant_data,
    packed_global,
    recipe,
    static_shape,
)
from glow_mlir.backends.cpu.vector_body import lanes_mask, load, store, yielded, zeros
from glow_mlir.codegen.builders import index


@dataclasses.dataclass(frozen=True)
class Minimal:
    """The matrices of F(m x m, r x r): input transform B^T (a x a), filter transform G (a x r), output
    transform A^T (m x a), a = m + r - 1."""

    m: int
    r: int
    bt: tuple[tuple[float, ...], ...]
    g: tuple[tuple[float, ...], ...]
    at: tuple[tuple[float, ...], ...]

    @property
    def a(self) -> int:
        return self.m + self.r - 1


# Lavin and Gray's F(2 x 2, 3 x 3) (interpolation points 0, 1, -1, infinity).
F2X3 = Minimal(
    m=2,
    r=3,
    bt=((1, 0, -1, 0), (0, 1, 1, 0), (0, -1, 1, 0), (0, 1, 0, -1)),
    g=((1, 0, 0), (0.5, 0.5, 0.5), (0.5, -0.5, 0.5), (0, 0, 1)),
    at=((1, 1, 1, 0), (0, 1, -1, -1)),
)
# The transformed filter's share of L2 that the rule allows: it is re-read from there once per group of tiles.
FILTER_L2_SHARE = 0.5
# The fewest tiles per row: a shorter row leaves the register tile's pixels idle.
MIN_ROW_TILES = 4
# The 'image' loop order: the transformed input of one image at most this large (it stays in L2 while each
# channel block's filter slice, at most SLICE_BYTES, streams through once), and at least this many tiles.
IMAGE_INPUT_BYTES = 1024 * 1024
SLICE_BYTES = 1024 * 1024
MIN_IMAGE_TILES = 9


def transformed_filter(weights: np.ndarray, minimal: Minimal = F2X3) -> np.ndarray:
    """U = G g G^T of HWCF `weights` (r, r, C, F), as [a * a, C, F] f32 (position xi = row * a + column)."""
    g = np.asarray(minimal.g, np.float64)
    u = np.einsum("ik,klcf,jl->ijcf", g, np.asarray(weights, np.float64), g)
    return u.reshape(minimal.a * minimal.a, *u.shape[2:]).astype(np.float32)


def _layout(op: ir.Operation) -> str | None:
    """Which of the kernel's two loop orders runs convolution `op` (module docstring), or None for neither:
    'rows' where the transformed filter fits FILTER_L2_SHARE of L2 and rows have MIN_ROW_TILES tiles or more,
    else 'image' for one image whose transformed input fits IMAGE_INPUT_BYTES."""
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
        return "rows"
    if n == 1 and a2 * rows * cols * _padded(c) * 4 <= IMAGE_INPUT_BYTES and rows * cols >= MIN_IMAGE_TILES:
        return "image"
    return None


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
    bias = bias_op.operands[0] if bias_op is not None else None
    kernel = WinogradKernel(op, x, np.asarray(weights), bias, y, activation_op, layout == "image")
    root = kernel.emit_image() if layout == "image" else kernel.emit_rows()
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


class WinogradKernel:
    """The shapes, register tile and packed filter of one convolution, and the emitters of its kernel."""

    def __init__(self, op: ir.Operation, x: ir.Value, weights: np.ndarray, bias: ir.Value | None, y: ir.Value,
                 activation: ir.Operation | None, whole_image: bool, minimal: Minimal = F2X3) -> None:  # fmt: skip
        self.op, self.x, self.bias, self.y, self.activation, self.minimal = op, x, bias, y, activation, minimal
        self.n, self.oh, self.ow, self.f = static_shape(y)
        _, self.h, self.w, self.c = static_shape(x)
        m, a = minimal.m, minimal.a
        self.tile_rows, self.tile_cols = -(-self.oh // m), -(-self.ow // m)
        if whole_image:
            # The tiles of the image as one row; each block's filter slice streams once, within SLICE_BYTES.
            row = self.tile_rows * self.tile_cols
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
            if last == m:
                self._call_row(image, ty, m, a, u)
            else:
                partial = arith.cmpi(arith.CmpIPredicate.eq, ty, index(self.tile_rows - 1))
                branch = scf.IfOp(partial, [], has_else=True)
                with ir.InsertionPoint(branch.then_block):
                    self._call_row(image, ty, last, last + a - m, u)
                    scf.YieldOp([])
                with ir.InsertionPoint(branch.else_block):
                    self._call_row(image, ty, m, a, u)
                    scf.YieldOp([])
            scf.YieldOp([])
        return loop.operation

    def _call_row(self, image: ir.Value, ty: ir.Value, rows_out: int, rows_in: int, u: ir.Value) -> None:
        """The call of the row function on output rows m * ty.. (rows_out of them) and the rows_in input rows
        they read, as views (the function writes only its output view: the rows run on any thread)."""
        y0 = arith.muli(ty, index(self.minimal.m))
        x_rows = block_at(self.x, [image, y0, 0, 0], [1, rows_in, self.w, self.c], drop_first=True)
        y_rows = block_at(self.y, [image, y0, 0, 0], [1, rows_out, self.ow, self.f], drop_first=True)
        operands = [x_rows, u, *([self.bias] if self.bias is not None else []), y_rows]
        name = _define(self.op, "row", [v.type for v in operands], lambda args: self._row_body(args, rows_out, rows_in))
        func.CallOp([], ir.FlatSymbolRefAttr.get(name), operands)

    def _row_body(self, arguments: list[ir.Value], rows_out: int, rows_in: int) -> None:
        """One row of tiles: per group of tiles along it, their transformed inputs into V, then per channel
        block the products into M and the output transform."""
        x, u, y = arguments[0], arguments[1], arguments[-1]
        bias = arguments[2] if self.bias is not None else None
        m, a = self.minimal.m, self.minimal.a
        f32 = ir.F32Type.get()
        v = memref.alloca(ir.MemRefType.get([a * a, self.pixels, _padded(self.c)], f32), [], [], alignment=64)
        mm = memref.alloca(ir.MemRefType.get([a * a, self.pixels, LANES * self.vectors], f32), [], [], alignment=64)
        full, rest = divmod(self.tile_cols, self.pixels)
        partial = self.ow % m != 0
        if partial and rest == 0:
            full, rest = full - 1, self.pixels
        last_cols = self.ow - m * (self.tile_cols - 1)

        def group(t0: ir.Value, tiles: int, edge: bool) -> None:
            def tile_input(p: int, i: int, j: int, c0: ir.Value) -> list[ir.Value] | None:
                cols = (last_cols if edge and p == tiles - 1 else m) + a - m
                if i >= rows_in or j >= cols:
                    return None
                return [index(i), arith.addi(arith.muli(arith.addi(t0, index(p)), index(m)), index(j)), c0]

            def tile_output(p: int, i: int, j: int, channel: ir.Value) -> list[ir.Value] | None:
                if i >= rows_out or j >= (last_cols if edge and p == tiles - 1 else m):
                    return None
                return [index(i), arith.addi(arith.muli(arith.addi(t0, index(p)), index(m)), index(j)), channel]

            self._inputs(x, v, tiles, lambda p: index(p), tile_input)
            for block in self.blocks:
                loop = scf.ForOp(index(0), index(block.count), index(1))
                with ir.InsertionPoint(loop.body):
                    b = loop.induction_variable
                    base = arith.addi(arith.muli(b, index(a * a * self.c * LANES * block.vectors)), index(block.offset))
                    channel0 = arith.addi(arith.muli(b, index(LANES * block.vectors)), index(block.start))
                    self._products(v, u, base, mm, index(0), tiles, block.vectors)
                    self._outputs(mm, y, bias, channel0, tiles, block, tile_output)
                    scf.YieldOp([])

        if full:
            loop = scf.ForOp(index(0), index(full), index(1))
            with ir.InsertionPoint(loop.body):
                group(arith.muli(loop.induction_variable, index(self.pixels)), self.pixels, False)
                scf.YieldOp([])
        if rest:
            group(index(full * self.pixels), rest, partial)

    # ------------------------------------------------------------------------------------------------------
    # One image: all of its transformed input, then the channel blocks

    def emit_image(self) -> ir.Operation:
        """The kernel's root, built at the insertion point: a call of the image function."""
        operands = [self.x, self._packed_filter(), *([self.bias] if self.bias is not None else []), self.y]
        name = _define(self.op, "image", [v.type for v in operands], self._image_body)
        return func.CallOp([], ir.FlatSymbolRefAttr.get(name), operands).operation

    def _image_body(self, arguments: list[ir.Value]) -> None:
        """V for every tile of the image (a loop over the tiles), then a loop over the channel blocks, each a
        call of the block function on its slices of the packed filter, the bias and the output: two loops
        that glow-cpu-parallelize may split, the first writing V's tiles, the second the output's channels."""
        x, u, y = arguments[0], arguments[1], arguments[-1]
        bias = arguments[2] if self.bias is not None else None
        m, a = self.minimal.m, self.minimal.a
        tiles = self.tile_rows * self.tile_cols
        v = memref.alloca(ir.MemRefType.get([a * a, tiles, _padded(self.c)], ir.F32Type.get()), [], [], alignment=64)
        loop = scf.ForOp(index(0), index(tiles), index(1))
        with ir.InsertionPoint(loop.body):
            t = loop.induction_variable
            ty, tx = arith.divui(t, index(self.tile_cols)), arith.remui(t, index(self.tile_cols))

            def tile_input(_: int, i: int, j: int, c0: ir.Value) -> list[ir.Value]:
                # Rows and columns past the input (odd maps) read its last one instead: they reach only outputs
                # past the map, which are not stored.
                return [index(0), self._clamped(ty, i, self.h), self._clamped(tx, j, self.w), c0]

            self._inputs(x, v, 1, lambda _: t, tile_input)
            scf.YieldOp([])
        for block in self.blocks:
            loop = scf.ForOp(index(0), index(block.count), index(1))
            with ir.InsertionPoint(loop.body):
                b = loop.induction_variable
                slice_floats = a * a * self.c * LANES * block.vectors
                start = arith.addi(arith.muli(b, index(slice_floats)), index(block.offset))
                channel0 = arith.addi(arith.muli(b, index(LANES * block.vectors)), index(block.start))
                channels = block.channels()
                operands = [
                    v,
                    block_at(u, [start], [slice_floats]),
                    *([block_at(bias, [channel0], [channels])] if bias is not None else []),
                    block_at(y, [0, 0, 0, channel0], [1, self.oh, self.ow, channels], drop_first=True),
                ]
                body = lambda args, block=block: self._block_body(args, block)  # noqa: E731
                name = _define(self.op, "block", [o.type for o in operands], body)
                func.CallOp([], ir.FlatSymbolRefAttr.get(name), operands)
                scf.YieldOp([])

    def _clamped(self, t: ir.Value, k: int, size: int) -> ir.Value:
        """Input row (column) k of tile t, at most size - 1."""
        at = arith.addi(arith.muli(t, index(self.minimal.m)), index(k))
        tiles = self.tile_rows if size == self.h else self.tile_cols
        return at if self.minimal.m * (tiles - 1) + k < size else arith.minui(at, index(size - 1))

    def _block_body(self, arguments: list[ir.Value], block: _Block) -> None:
        """One channel block of every tile of the image: per group of tiles, the products into M (scratch of its
        own) and the output transform, each tile's pixels stored where they are in the map."""
        v, u, y = arguments[0], arguments[1], arguments[-1]
        bias = arguments[2] if self.bias is not None else None
        m, a = self.minimal.m, self.minimal.a
        mm = memref.alloca(ir.MemRefType.get([a * a, self.pixels, LANES * block.vectors], ir.F32Type.get()), [],
                           [], alignment=64)  # fmt: skip
        tiles = self.tile_rows * self.tile_cols
        full, rest = divmod(tiles, self.pixels)

        def group(t0: ir.Value, count: int) -> None:
            places: list[tuple[ir.Value, ir.Value]] = []
            for p in range(count):
                t = arith.addi(t0, index(p))
                places.append((arith.divui(t, index(self.tile_cols)), arith.remui(t, index(self.tile_cols))))

            def tile_output(p: int, i: int, j: int, channel: ir.Value) -> list[ir.Value]:
                ty, tx = places[p]
                return [arith.addi(arith.muli(ty, index(m)), index(i)), arith.addi(arith.muli(tx, index(m)), index(j)),
                        channel]  # fmt: skip

            self._products(v, u, index(0), mm, t0, count, block.vectors)
            self._outputs(mm, y, bias, index(0), count, block, tile_output, places)

        if full:
            loop = scf.ForOp(index(0), index(full), index(1))
            with ir.InsertionPoint(loop.body):
                group(arith.muli(loop.induction_variable, index(self.pixels)), self.pixels)
                scf.YieldOp([])
        if rest:
            group(index(full * self.pixels), rest)

    # ------------------------------------------------------------------------------------------------------
    # The three steps, shared by both loop orders

    def _inputs(self, x: ir.Value, v: ir.Value, tiles: int, tile_of: Callable[[int], ir.Value],
                at: Callable[[int, int, int, ir.Value], list[ir.Value] | None]) -> None:  # fmt: skip
        """V[xi, tile_of(p), c] = (B^T d B)[xi] for tiles p < `tiles` and every input channel c, d the a x a input
        pixels of the tile (`at(p, i, j, c0)`: the index of pixel (i, j)'s channel c0 in x, None for zeros)."""
        minimal = self.minimal
        a = minimal.a

        def channels(c0: ir.Value, mask: ir.Value | None) -> None:
            for p in range(tiles):
                d = [[_load_or_none(x, at(p, i, j, c0), self.vt, mask) for j in range(a)] for i in range(a)]
                for xi, value in enumerate(_sandwich(minimal.bt, d)):
                    vector.store(value if value is not None else zeros(self.vt), v, [index(xi), tile_of(p), c0])

        full, rest = divmod(self.c, LANES)
        if full:
            loop = scf.ForOp(index(0), index(full), index(1))
            with ir.InsertionPoint(loop.body):
                channels(arith.muli(loop.induction_variable, index(LANES)), None)
                scf.YieldOp([])
        if rest:
            channels(index(full * LANES), lanes_mask(rest, LANES))

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

    def _outputs(self, mm: ir.Value, y: ir.Value, bias: ir.Value | None, channel0: ir.Value, tiles: int,
                 block: _Block, at: Callable[[int, int, int, ir.Value], list[ir.Value] | None],
                 places: list[tuple[ir.Value, ir.Value]] | None = None) -> None:  # fmt: skip
        """y = activation(A^T M A + bias) for tiles p < `tiles` and each vector of `block` (channels from
        `channel0` of y and bias), pixel (i, j) of tile p stored at `at(p, i, j, channel)` (None: not at all).
        With `places` (each tile's row and column of tiles), a pixel past an odd map's last row or column is
        stored only where its tile is not the last of the map's rows (columns)."""
        vt = self.vt
        m, a = self.minimal.m, self.minimal.a
        for k in range(block.vectors):
            mask = lanes_mask(block.lanes, LANES) if k == block.vectors - 1 else None
            channel = arith.addi(channel0, index(k * LANES))
            shift = load(bias, [channel], vt, mask) if bias is not None else None
            for p in range(tiles):
                values = [[vector.load(vt, mm, [index(i * a + j), index(p), index(k * LANES)])
                           for j in range(a)] for i in range(a)]  # fmt: skip
                outputs = _sandwich(self.minimal.at, values)
                for i in range(m):
                    for j in range(m):
                        where = at(p, i, j, channel)
                        if where is None:
                            continue
                        value = outputs[i * m + j]
                        assert value is not None
                        if shift is not None:
                            value = arith.addf(value, shift)
                        if self.activation is not None:
                            [value] = yielded(self.activation, [value])
                        inside = self._inside(places[p], i, j) if places is not None else None
                        if inside is None:
                            store(value, y, where, mask)
                            continue
                        branch = scf.IfOp(inside, [], has_else=False)
                        with ir.InsertionPoint(branch.then_block):
                            store(value, y, where, mask)
                            scf.YieldOp([])

    def _inside(self, place: tuple[ir.Value, ir.Value], i: int, j: int) -> ir.Value | None:
        """Whether pixel (i, j) of the tile at `place` is in the map (None: it always is)."""
        m = self.minimal.m
        conditions = []
        for t, k, size, tiles in ((place[0], i, self.oh, self.tile_rows), (place[1], j, self.ow, self.tile_cols)):
            if m * (tiles - 1) + k >= size:
                conditions.append(arith.cmpi(arith.CmpIPredicate.ult, t, index(tiles - 1)))
        if not conditions:
            return None
        return conditions[0] if len(conditions) == 1 else arith.andi(*conditions)


def _define(user: ir.Operation, kind: str, types: list[ir.Type], body: Callable[[list[ir.Value]], None]) -> str:
    """Defines a private function of argument types `types` whose body `body(arguments)` builds, once per
    distinct text in `user`'s module (layers of one shape share it: their weights are arguments), named
    __glow_winograd_<kind>_<digest of its text>; returns its name."""
    module = user
    while module.name != "builtin.module":
        module = module.parent
    block = module.regions[0].blocks[0]
    with ir.InsertionPoint.at_block_begin(block), ir.Location.unknown():
        function = func.FuncOp(f"__glow_winograd_{kind}", (types, []), visibility="private")
        entry = function.add_entry_block()
        with ir.InsertionPoint(entry):
            body(list(entry.arguments))
            func.ReturnOp([])
    text = function.operation.get_asm(use_local_scope=True)
    name = f"{OUTLINED_PREFIX}winograd_{kind}_{hashlib.sha1(text.encode()).hexdigest()[:12]}"
    names = {ir.StringAttr(o.attributes["sym_name"]).value for o in block.operations if "sym_name" in o.attributes}
    if name in names:
        function.operation.erase()
    else:
        function.operation.attributes["sym_name"] = ir.StringAttr.get(name)
        if kind != "image":
            # Called once per iteration of the loop that glow-cpu-parallelize splits.
            function.operation.attributes[SERIAL_ATTR] = ir.UnitAttr.get()
    return name


def _load_or_none(x: ir.Value, at: list[ir.Value] | None, t: ir.VectorType, mask: ir.Value | None) -> ir.Value | None:
    return load(x, at, t, mask) if at is not None else None


def _sandwich(matrix: tuple[tuple[float, ...], ...], d: list[list[ir.Value | None]]) -> list[ir.Value | None]:
    """T d T^T for T = `matrix` (rows x a) on an a x a grid of vectors (None: zero), as rows * rows vectors in
    row-major order: first each column's T d, then each row's (T d) T^T."""
    a = len(d)
    columns = [[_combine(row, [d[i][j] for i in range(a)]) for row in matrix] for j in range(a)]
    return [_combine(row, [columns[j][i] for j in range(a)]) for i in range(len(matrix)) for row in matrix]


def _combine(coefficients: tuple[float, ...], values: list[ir.Value | None]) -> ir.Value | None:
    """sum_k coefficients[k] * values[k] on vectors, skipping zero coefficients and values (None: zero), with
    additions and subtractions for +-1 (None if every term is zero)."""
    terms = sorted(((c, v) for c, v in zip(coefficients, values, strict=True) if c != 0 and v is not None),
                   key=lambda term: term[0] != 1)  # fmt: skip
    total: ir.Value | None = None
    for coefficient, value in terms:
        if total is None:
            total = value if coefficient == 1 else arith.mulf(value, _splat(coefficient, value.type))
        elif coefficient == 1:
            total = arith.addf(total, value)
        elif coefficient == -1:
            total = arith.subf(total, value)
        else:
            total = vector.fma(_splat(coefficient, value.type), value, total)
    return total


def _splat(value: float, t: ir.Type) -> ir.Value:
    return arith.constant(t, ir.DenseElementsAttr.get_splat(t, ir.FloatAttr.get(ir.F32Type.get(), value)))
