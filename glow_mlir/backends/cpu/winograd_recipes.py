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

import numpy as np
from mlir import ir
from mlir.dialects import arith, func, memref, scf, vector

from glow_mlir.backends.cpu.conv_recipes import LANES, dense_window, epilogue, static_f32, window_of
from glow_mlir.backends.cpu.outline import OUTLINED_PREFIX
from glow_mlir.backends.cpu.pointwise_recipes import channel_blocks, register_tile, row_tile
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


def transformed_filter(weights: np.ndarray, minimal: Minimal = F2X3) -> np.ndarray:
    """U = G g G^T of HWCF `weights` (r, r, C, F), as [a * a, C, F] f32 (position xi = row * a + column)."""
    g = np.asarray(minimal.g, np.float64)
    u = np.einsum("ik,klcf,jl->ijcf", g, np.asarray(weights, np.float64), g)
    return u.reshape(minimal.a * minimal.a, *u.shape[2:]).astype(np.float32)


def is_winograd(op: ir.Operation) -> bool:
    """A convolution this module's kernel runs: f32 operands of static shape, a constant 3x3 filter, unit
    strides and dilations, a transformed filter within FILTER_L2_SHARE of L2, and rows of at least
    MIN_ROW_TILES tiles."""
    if not static_f32(op):
        return False
    kh, kw, c, f = static_shape(op.operands[1])
    window = dense_window(window_of(op))
    if (kh, kw) != (F2X3.r, F2X3.r) or window["strides"] != [1, 1] or window["dilations"] != [1, 1]:
        return False
    if F2X3.a * F2X3.a * c * f * 4 > FILTER_L2_SHARE * L2_BYTES:
        return False
    _, _, ow, _ = static_shape(op.operands[2])
    return -(-ow // F2X3.m) >= MIN_ROW_TILES and constant_data(op.operands[1]) is not None


@recipe("linalg.conv_2d_nhwc_hwcf", when=is_winograd)
def winograd_recipe(op: ir.Operation) -> Recipe:
    """A 3x3 convolution with the bias and activation of a CPU convolution, as Winograd F(2x2, 3x3) vector
    kernels (module docstring)."""
    bias_op, activation_op = epilogue(op)
    x, filter_, y = op.operands
    weights = constant_data(filter_)
    assert weights is not None
    bias = bias_op.operands[0] if bias_op is not None else None
    root = WinogradKernel(op, x, np.asarray(weights), bias, y, activation_op).emit()
    for done in (activation_op, op, bias_op):
        if done is not None:
            done.erase()
    return Recipe((Kernel(root, lambda _: None),))


@dataclasses.dataclass(frozen=True)
class _Block:
    """`count` blocks of `vectors` output-channel registers from channel `start`, the last vector of each with
    `lanes` channels, their packed filter slices ([a * a, C, 16 x vectors] each) from float `offset`."""

    start: int
    count: int
    vectors: int
    lanes: int
    offset: int


class WinogradKernel:
    """The shapes, register tile and packed filter of one convolution, and the emitter of its kernel."""

    def __init__(self, op: ir.Operation, x: ir.Value, weights: np.ndarray, bias: ir.Value | None, y: ir.Value,
                 activation: ir.Operation | None, minimal: Minimal = F2X3) -> None:  # fmt: skip
        self.op, self.x, self.bias, self.y, self.activation, self.minimal = op, x, bias, y, activation, minimal
        self.n, self.oh, self.ow, self.f = static_shape(y)
        self.c = weights.shape[2]
        m = minimal.m
        self.tile_rows, self.tile_cols = -(-self.oh // m), -(-self.ow // m)
        self.pixels, self.vectors = register_tile(self.tile_cols, self.f, False)
        self.pixels = row_tile(self.tile_cols, self.pixels)
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

    def emit(self) -> ir.Operation:
        """The kernel's root loop, built at the insertion point: over the rows of tiles of every image, each a
        call of the row function (the last row of an odd map its own variant, with fewer rows)."""
        m, a = self.minimal.m, self.minimal.a
        u = packed_global(self.op, self.packed, f"__glow_packed_winograd_{self.c}x{self.f}")
        last = self.oh - m * (self.tile_rows - 1)
        loop = scf.ForOp(index(0), index(self.n * self.tile_rows), index(1))
        with ir.InsertionPoint(loop.body):
            row = loop.induction_variable
            image = arith.divui(row, index(self.tile_rows))
            ty = arith.remui(row, index(self.tile_rows))
            if last == m:
                self._call(image, ty, m, a, u)
            else:
                partial = arith.cmpi(arith.CmpIPredicate.eq, ty, index(self.tile_rows - 1))
                branch = scf.IfOp(partial, [], has_else=True)
                with ir.InsertionPoint(branch.then_block):
                    self._call(image, ty, last, last + a - m, u)
                    scf.YieldOp([])
                with ir.InsertionPoint(branch.else_block):
                    self._call(image, ty, m, a, u)
                    scf.YieldOp([])
            scf.YieldOp([])
        return loop.operation

    def _call(self, image: ir.Value, ty: ir.Value, rows_out: int, rows_in: int, u: ir.Value) -> None:
        """The call of the row function on output rows m * ty.. (rows_out of them) and the rows_in input rows
        they read, as views (the function writes only its output view: the rows run on any thread)."""
        _, _, w, _ = static_shape(self.x)
        y0 = arith.muli(ty, index(self.minimal.m))
        x_rows = block_at(self.x, [image, y0, 0, 0], [1, rows_in, w, self.c], drop_first=True)
        y_rows = block_at(self.y, [image, y0, 0, 0], [1, rows_out, self.ow, self.f], drop_first=True)
        operands = [x_rows, u, *([self.bias] if self.bias is not None else []), y_rows]
        name = _RowFunction(self, [v.type for v in operands], rows_out, rows_in).define()
        func.CallOp([], ir.FlatSymbolRefAttr.get(name), operands)


class _RowFunction:
    """The function computing one row of tiles: arguments (input rows [rows_in, W, C], packed filter, bias if
    any, output rows [rows_out, OW, F]); scratch V and M in its entry block."""

    def __init__(self, kernel: WinogradKernel, types: list[ir.Type], rows_out: int, rows_in: int) -> None:
        self.k, self.types, self.rows_out, self.rows_in = kernel, types, rows_out, rows_in
        self.vt = ir.VectorType.get([LANES], ir.F32Type.get())

    def define(self) -> str:
        """Defines the function in the module (once per distinct text) and returns its name."""
        module = self.k.op
        while module.name != "builtin.module":
            module = module.parent
        body = module.regions[0].blocks[0]
        with ir.InsertionPoint.at_block_begin(body), ir.Location.unknown():
            function = func.FuncOp("__glow_winograd_row", (self.types, []), visibility="private")
            entry = function.add_entry_block()
            with ir.InsertionPoint(entry):
                self._body(list(entry.arguments))
                func.ReturnOp([])
        text = function.operation.get_asm(use_local_scope=True)
        name = f"{OUTLINED_PREFIX}winograd_row_{hashlib.sha1(text.encode()).hexdigest()[:12]}"
        names = {ir.StringAttr(o.attributes["sym_name"]).value for o in body.operations if "sym_name" in o.attributes}
        if name in names:
            function.operation.erase()
        else:
            function.operation.attributes["sym_name"] = ir.StringAttr.get(name)
        return name

    def _body(self, arguments: list[ir.Value]) -> None:
        k = self.k
        self.x, self.u = arguments[0], arguments[1]
        self.bias = arguments[2] if k.bias is not None else None
        self.y = arguments[-1]
        a2 = k.minimal.a * k.minimal.a
        self.cpad = -(-k.c // LANES) * LANES
        width = LANES * k.vectors
        f32 = ir.F32Type.get()
        self.v = memref.alloca(ir.MemRefType.get([a2, k.pixels, self.cpad], f32), [], [], alignment=64)
        self.mm = memref.alloca(ir.MemRefType.get([a2, k.pixels, width], f32), [], [], alignment=64)
        full, rest = divmod(k.tile_cols, k.pixels)
        partial = k.ow % k.minimal.m != 0
        if partial and rest == 0:
            full, rest = full - 1, k.pixels
        if full:
            loop = scf.ForOp(index(0), index(full), index(1))
            with ir.InsertionPoint(loop.body):
                self._group(arith.muli(loop.induction_variable, index(k.pixels)), k.pixels, False)
                scf.YieldOp([])
        if rest:
            self._group(index(full * k.pixels), rest, partial)

    def _group(self, t0: ir.Value, tiles: int, partial: bool) -> None:
        """Tiles t0.. (`tiles` of them; the last one past the map's edge if `partial`) of the row."""
        k = self.k
        m = k.minimal.m
        last_cols = k.ow - m * (k.tile_cols - 1) if partial else m
        full_vectors, rest = divmod(k.c, LANES)
        if full_vectors:
            loop = scf.ForOp(index(0), index(full_vectors), index(1))
            with ir.InsertionPoint(loop.body):
                self._inputs(t0, tiles, last_cols, arith.muli(loop.induction_variable, index(LANES)), None)
                scf.YieldOp([])
        if rest:
            self._inputs(t0, tiles, last_cols, index(full_vectors * LANES), lanes_mask(rest, LANES))
        for block in k.blocks:
            loop = scf.ForOp(index(0), index(block.count), index(1))
            with ir.InsertionPoint(loop.body):
                self._products(tiles, block, loop.induction_variable)
                self._outputs(t0, tiles, last_cols, block, loop.induction_variable)
                scf.YieldOp([])

    def _inputs(self, t0: ir.Value, tiles: int, last_cols: int, c0: ir.Value, mask: ir.Value | None) -> None:
        """V[xi, p, c0:c0+16] = (B^T d B)[xi] for each tile p of the group, d its a x a input pixels' 16 channels
        from c0 (zeros for the rows and columns past the input's)."""
        minimal = self.k.minimal
        m, a, r = minimal.m, minimal.a, minimal.r
        for p in range(tiles):
            cols = (last_cols if p == tiles - 1 else m) + r - 1
            x0 = arith.muli(arith.addi(t0, index(p)), index(m))
            d = [[load(self.x, [index(i), arith.addi(x0, index(j)), c0], self.vt, mask)
                  if i < self.rows_in and j < cols else None for j in range(a)] for i in range(a)]  # fmt: skip
            for xi, value in enumerate(_sandwich(minimal.bt, d)):
                vector.store(value if value is not None else zeros(self.vt), self.v, [index(xi), index(p), c0])

    def _products(self, tiles: int, block: _Block, b: ir.Value) -> None:
        """M[xi, p, :] = sum_c V[xi, p, c] U[xi, c, block b's channels] for each position xi and tile p."""
        k, vt = self.k, self.vt
        a2 = k.minimal.a * k.minimal.a
        width = LANES * block.vectors
        base = arith.addi(arith.muli(b, index(a2 * k.c * width)), index(block.offset))
        positions = scf.ForOp(index(0), index(a2), index(1))
        with ir.InsertionPoint(positions.body):
            xi = positions.induction_variable
            start = arith.addi(base, arith.muli(xi, index(k.c * width)))
            loop = scf.ForOp(index(0), index(k.c), index(1), [zeros(vt)] * (tiles * block.vectors))
            with ir.InsertionPoint(loop.body):
                c = loop.induction_variable
                row = arith.addi(start, arith.muli(c, index(width)))
                filters = [vector.load(vt, self.u, [arith.addi(row, index(v * LANES))]) for v in range(block.vectors)]
                carried = list(loop.inner_iter_args)
                out = []
                for p in range(tiles):
                    value = vector.broadcast(vt, memref.load(self.v, [xi, index(p), c]))
                    out += [vector.fma(value, w, carried[p * block.vectors + v]) for v, w in enumerate(filters)]
                scf.YieldOp(out)
            for p in range(tiles):
                for v in range(block.vectors):
                    vector.store(loop.results[p * block.vectors + v], self.mm, [xi, index(p), index(v * LANES)])
            scf.YieldOp([])

    def _outputs(self, t0: ir.Value, tiles: int, last_cols: int, block: _Block, b: ir.Value) -> None:
        """y = activation(A^T M A + bias) for each tile of the group and vector of block b, stored where the
        tile's pixels are in the map."""
        k, vt = self.k, self.vt
        minimal = k.minimal
        m, a = minimal.m, minimal.a
        channel0 = arith.addi(arith.muli(b, index(LANES * block.vectors)), index(block.start))
        for v in range(block.vectors):
            mask = lanes_mask(block.lanes, LANES) if v == block.vectors - 1 else None
            channel = arith.addi(channel0, index(v * LANES))
            bias = load(self.bias, [channel], vt, mask) if self.bias is not None else None
            for p in range(tiles):
                cols = last_cols if p == tiles - 1 else m
                values = [[vector.load(vt, self.mm, [index(i * a + j), index(p), index(v * LANES)])
                           for j in range(a)] for i in range(a)]  # fmt: skip
                outputs = _sandwich(minimal.at, values)
                x0 = arith.muli(arith.addi(t0, index(p)), index(m))
                for i in range(self.rows_out):
                    for j in range(cols):
                        value = outputs[i * m + j]
                        if bias is not None:
                            value = arith.addf(value, bias)
                        if k.activation is not None:
                            [value] = yielded(k.activation, [value])
                        store(value, self.y, [index(i), arith.addi(x0, index(j)), channel], mask)


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
