"""glow-cpu-schedule's recipes of linalg.matmul and linalg.batch_matmul (and the matmul of fused_matmul).

C += A x B runs as register-tiled generics over blocks of C: an mr x nr register tile of up to 24 zmm
accumulators with k innermost. B is read in blocks sized for L1 (kc deep, panels of nr columns); each block
serves every row tile before the next one loads, so B comes from memory or L2 once per call, and where the
weights live beyond L2 the kernel prefetches the next block. Constant weights (a matmul's B from a constant global) are packed once, at compile time,
into the layout the kernel reads; columns that the register tile does not divide are peeled into blocks of
their own, rows that it does not divide run as a smaller tile inside each panel.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, transform
from mlir.dialects.transform import structured

from glow_mlir.backends.cpu import transform as steps
from glow_mlir.backends.cpu.recipes import (
    L2_BYTES,
    Kernel,
    Recipe,
    constant_data,
    is_float32,
    largest_divisor,
    model_weight_bytes,
    packed_global,
    prefetch_ahead,
    recipe,
    static_block,
    static_shape,
)
from glow_mlir.codegen.builders import has_identity_layout, split_last


# The register tile: at most MAX_MR rows of nr columns. This Xeon issues two 512-bit FMAs per cycle with 4
# cycles' latency, so a tile needs at least 8 independent accumulators; 12 x 32 (24 of the 32 zmm registers,
# 12 broadcasts and 2 loads per 24 FMAs) ran a 36 x 512 x 2048 layer (MLP-Mixer) at 163 GFLOP/s where 8 x 32
# ran 152 (panel order, kc = 256 both). nr per mr: a row needs 8 accumulators, so a GEMV-like row gets 128
# columns; 5 to 12 rows take 32 (5 x 64 and 6 x 64 measured the same as 5 x 32 and 6 x 32 with the panel in L1).
MAX_MR = 12
_NR_FOR_MR = {1: 128, 2: 128, 3: 64, 4: 64, **{mr: 32 for mr in range(5, MAX_MR + 1)}}
# Bytes of the block of B (kc deep, a whole number of nr-column panels) that every row tile reads from L1 (48
# KiB here) with its rows of A beside it. kc is the largest depth whose single panel fits (kc = 256 at nr = 32
# ran 36 x 512 x 2048 at 165 GFLOP/s, kc = 512 (64 KiB) at 151, kc = 128 at 154); shallow B's take several
# panels, so that each row tile of A also serves several of them.
L1_B_BYTES = 32 * 1024
# Bytes of the block of A (mc rows x kc) that every B block reads from L2: half of it, beside B's and C's
# blocks. Rows beyond it (more than 1024 at kc = 256) run in blocks of mc.
L2_A_BYTES = L2_BYTES // 2
# Packed weights come from L3 or memory on every call when the model's weights exceed L2 (L2_BYTES), and the
# hardware prefetchers, which stop at each 4 KiB page, leave the first row tile of each B block waiting for
# them while the other row tiles leave memory idle. So, where there are several row tiles, each load of packed
# B also prefetches the B one L1 block further on (recipes.prefetch_ahead). Where the weights fit L2 the
# prefetches only cost load slots: the MLP (2 MiB of weights, one row) ran 17 % slower with them, GPT-2 (zoo,
# 0.45 MiB) 4 %.


def _pick_mr(m: int) -> int:
    """The row count of the register tile: the m rows split as evenly as possible into tiles of at most
    MAX_MR, so that the m % mr rows left (a tile of their own inside each panel, `_gemm_steps`) are not a
    latency-bound sliver: 37 rows run as 3 x 10 + 7 (a 1-row tile holds 2 accumulators, a quarter of the FMA
    throughput), 16 as 2 x 8."""
    tiles = -(-m // MAX_MR)
    return -(-m // tiles)


@recipe("linalg.matmul")
def matmul_recipe(op: ir.Operation) -> Recipe | None:
    """glow_ir.matmul (and fused_matmul's product): register-tiled, constant weights packed."""
    a, b, c = op.operands
    return _gemm(op, a, b, c, batch=None)


@recipe("linalg.batch_matmul")
def batch_matmul_recipe(op: ir.Operation) -> Recipe | None:
    """glow_ir.batch_matmul: the matmul kernel per batch element (operands are activations: no packing)."""
    a, b, c = op.operands
    shape = static_shape(a)
    return _gemm(op, a, b, c, batch=shape[0] if shape else None)


def _gemm(op: ir.Operation, a: ir.Value, b: ir.Value, c: ir.Value, batch: int | None) -> Recipe | None:
    """C += A x B as register-tiled generics over blocks of C: rows [m0, m0 + Mp) and columns
    [n0, n0 + Np), each with a tile that divides it (the main part, then the peeled rest)."""
    if not all(is_float32(v) and has_identity_layout(v) and static_shape(v) for v in (a, b, c)):
        return None
    shape_a, shape_b = static_shape(a), static_shape(b)
    assert shape_a is not None and shape_b is not None
    m, k = shape_a[-2:]
    n = shape_b[-1]
    if (batch or 1) * m * n * k < 4096:  # too little work for a kernel; a batch of small products is not
        return None
    packed = constant_data(b) if batch is None else None
    mr = _pick_mr(m)
    streamed = packed is not None and m > mr and model_weight_bytes(op) > L2_BYTES
    kernels: list[Kernel] = []
    # All m rows in each block of columns: rows that mr does not divide are split off inside its column and
    # depth loops (`_gemm_steps`), so that they read each B panel while it is in cache. As a block of their
    # own they read all of B once more, from memory: ViT-tiny's 5 rows left of 37 tokens ran at a third of
    # the speed of the 32 before them (37 x 192 x 768 constant weights: 237 -> 70 us).
    for n0, np_, tile_n in column_blocks(n, _NR_FOR_MR[mr]):
        generic = _gemm_block(op, a, b, c, packed, batch, (m, n, k), (0, m, mr), (n0, np_, tile_n))
        finish = prefetch_ahead(generic.operands[1].type) if streamed else None
        kernels.append(Kernel(generic, _gemm_steps(batch, m, np_ // tile_n, k, mr, tile_n), finish))
    op.erase()
    return Recipe(tuple(kernels))


def column_blocks(n: int, nr: int) -> list[tuple[int, int, int]]:
    """Blocks (start, size, tile) covering n columns with tiles of nr (a power of two), then of each smaller
    power of two that fits what is left. LLVM scalarizes vectors whose length is not a power of two (one of
    112 lanes ran a 400x120 layer at 5 GFLOP/s, one of 128 at 16 including the call)."""
    blocks = []
    start = 0
    tile = nr
    while start < n:
        size = (n - start) - (n - start) % tile
        if size:
            blocks.append((start, size, tile))
            start += size
        tile //= 2
    return blocks


def _gemm_block(
    op: ir.Operation,
    a: ir.Value,
    b: ir.Value,
    c: ir.Value,
    packed: np.ndarray | None,
    batch: int | None,
    mnk: tuple[int, int, int],
    rows: tuple[int, int, int],
    cols: tuple[int, int, int],
) -> ir.Operation:
    """The generic C'[.., m, nb, j] += A'[.., m, k] * B'[.., nb, k, j] (packed) or B'[.., k, nb, j] (a view of
    B) of one block of C; loop dims are ([batch,] m, nb, j, k)."""
    m, n, k = mnk
    m0, mp, _ = rows
    n0, np_, nr = cols
    nb = np_ // nr
    lead = [batch] if batch is not None else []
    a_view = static_block(a, [*[0] * len(lead), m0, 0], [*lead, mp, k])
    c_view = split_last(static_block(c, [*[0] * len(lead), m0, n0], [*lead, mp, np_]), nr)
    d = len(lead)
    dims = d + 4
    bdim, mdim, nbdim, jdim, kdim = (0 if d else -1), d, d + 1, d + 2, d + 3
    batch_dims = [bdim] if d else []
    if packed is not None:
        block = packed[:, n0 : n0 + np_].reshape(k, nb, nr).transpose(1, 0, 2)
        b_view = packed_global(op, block, f"__glow_packed_{nb}x{k}x{nr}")
        b_map = _map(dims, [nbdim, kdim, jdim])
    else:
        b_view = split_last(static_block(b, [*[0] * len(lead), 0, n0], [*lead, k, np_]), nr)
        b_map = _map(dims, [*batch_dims, kdim, nbdim, jdim])
    maps = [
        _map(dims, [*batch_dims, mdim, kdim]),
        b_map,
        _map(dims, [*batch_dims, mdim, nbdim, jdim]),
    ]
    generic = linalg.GenericOp(
        result_tensors=[],
        inputs=[a_view, b_view],
        outputs=[c_view],
        indexing_maps=ir.ArrayAttr.get(maps),
        iterator_types=_iterators(["parallel"] * (dims - 1) + ["reduction"]),
    )
    f32 = ir.F32Type.get()
    body = generic.regions[0].blocks.append(f32, f32, f32)
    with ir.InsertionPoint(body):
        x, y, acc = body.arguments
        linalg.YieldOp([arith.addf(acc, arith.mulf(x, y))])
    return generic.operation


def _gemm_steps(batch: int | None, m: int, nb: int, k: int, mr: int, nr: int) -> steps.Build:
    """Blocks of B that fit L1 (kc deep, `panels` x nr wide, `_b_block`), then every mr x nr register tile of
    rows and, inside it, each panel of the block with k innermost, vectorized into one contraction per k step:
    the block loads from memory or L2 once and serves the other row tiles from L1. (Rows outer over column
    blocks of 256 and kc = 512, as before, read B from L2 for each row tile: 36 x 512 x 2048 ran at 141
    GFLOP/s, now 151 in the same process.) The m % mr rows that mr does not divide run as one register tile
    of their own inside each block. More rows than an A block of L2_A_BYTES holds run in row blocks,
    outermost (their rest as an op of its own)."""
    lead = [1] if batch is not None else []
    d = len(lead)
    rest = m % mr
    main = m - rest
    # A single row tile reads B once anyway, so blocking its depth would only reload C.
    kc, panels = _b_block(k, nb, nr) if m > mr else (k, nb)
    mc = mr * largest_divisor(main // mr, max(1, L2_A_BYTES // (4 * kc * mr)))

    def blocks(handle: ir.Value, rows: int) -> ir.Value:
        return steps.tile(handle, [*lead, rows, panels if panels < nb else 0, 0, kc if kc < k else 0])

    def row_tiles(handle: ir.Value, rows: int) -> None:
        steps.vectorize(steps.tile(handle, [*lead, rows, 1, 0, 1]))

    def build(handle: ir.Value) -> None:
        if mc < main:
            if rest:
                handle, tail = _split(handle, d, main)
                row_tiles(blocks(tail, 0), 0)
            row_tiles(blocks(handle, mc), mr)
            return
        inside = blocks(handle, 0)
        if not rest:
            row_tiles(inside, mr)
            return
        first, second = _split(inside, d, main)
        row_tiles(first, mr)
        row_tiles(second, 0)

    return build


def _b_block(k: int, nb: int, nr: int) -> tuple[int, int]:
    """The block of B read from L1: its depth kc, the largest divisor of k whose kc x nr panel fits
    L1_B_BYTES (k itself when that divisor is under half the bound, e.g. for a prime k: tiny depth blocks
    reload C each time), and its width in panels, as many of the nb as fit beside (a divisor of nb)."""
    bound = L1_B_BYTES // (4 * nr)
    kc = largest_divisor(k, bound)
    if 2 * kc < bound and kc != k:
        kc = k
    return kc, largest_divisor(nb, max(1, L1_B_BYTES // (4 * kc * nr)))


def _split(handle: ir.Value, dim: int, size: int) -> tuple[ir.Value, ir.Value]:
    """`structured.split` of `handle`'s op along loop dim `dim` after `size` iterations: the two ops' handles."""
    both = structured.SplitOp(handle, dim, size).result
    split = transform.SplitHandleOp([transform.AnyOpType.get()] * 2, both)
    return split.results[0], split.results[1]


# ----------------------------------------------------------------------------------------------------------
# Blocks of buffers and the maps of the block generics




def _iterators(kinds: Sequence[str]) -> ir.ArrayAttr:
    """linalg iterator types from their names ("parallel", "reduction")."""
    return ir.ArrayAttr.get([ir.Attribute.parse(f"#linalg.iterator_type<{k}>") for k in kinds])


def _map(dims: int, exprs: Sequence[int]) -> ir.AffineMapAttr:
    """The projected permutation (d0, ..., d{dims-1}) -> (d{exprs[0]}, ...)."""
    return ir.AffineMapAttr.get(ir.AffineMap.get(dims, 0, [ir.AffineDimExpr.get(d) for d in exprs]))


