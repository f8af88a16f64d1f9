"""glow-cpu-schedule's recipes of linalg.matmul and linalg.batch_matmul (and the matmul of fused_matmul).

C += A x B runs as register-tiled generics over blocks of C: an mr x nr register tile of 16 zmm
accumulators with k innermost, inside cache blocks (docs/notes: mc=128, nc=256, kc=512). Constant weights
(a matmul's B from a constant global) are packed once, at compile time, into the layout the kernel reads;
columns that the register tile does not divide are peeled into blocks of their own, rows are split off inside
each column block.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, memref, transform
from mlir.dialects.transform import structured

from glow_mlir import ops
from glow_mlir.backends.cpu import transform as steps
from glow_mlir.backends.cpu.recipes import (
    Kernel,
    Recipe,
    constant_data,
    has_identity_layout,
    is_float32,
    largest_divisor,
    packed_global,
    recipe,
    static_shape,
)


# nr per mr: 16 zmm accumulators is the sweet spot with 32 registers (docs/notes); one row needs 8 of them to
# cover the FMA latency, so a GEMV-like row gets 128 columns.
_NR_FOR_MR = {1: 128, 2: 128, 3: 64, 4: 64, 5: 32, 6: 32, 7: 32, 8: 32}
# Cache blocks: A block mc x kc stays in L2, a B panel kc x nr in L1 (docs/notes: mc=128, nc=256, kc=512).
MC, NC, KC = 128, 256, 512


def _pick_mr(m: int) -> int:
    """The row count of the register tile: 8 (8 x 32, the 16 accumulators), or m if smaller. The m % 8 rows
    left run as a register tile of their own inside each column block (`_gemm_steps`), which costs less than
    a smaller tile for all rows: a divisor of m in 8..4, as before, ran 36 x 512 x 2048 (MLP-Mixer) 4 % and
    20 x 256 x 1024 10 % slower."""
    return min(m, 8)


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
    if m * n * k < 4096:
        return None
    packed = constant_data(b) if batch is None else None
    mr = _pick_mr(m)
    kernels: list[Kernel] = []
    # All m rows in each block of columns: rows that mr does not divide are split off inside its column and
    # depth loops (`_gemm_steps`), so that they read each B panel while it is in cache. As a block of their
    # own they read all of B once more, from memory: ViT-tiny's 5 rows left of 37 tokens ran at a third of
    # the speed of the 32 before them (37 x 192 x 768 constant weights: 237 -> 70 us).
    for n0, np_, tile_n in column_blocks(n, _NR_FOR_MR[mr]):
        generic = _gemm_block(op, a, b, c, packed, batch, (m, n, k), (0, m, mr), (n0, np_, tile_n))
        kernels.append(Kernel(generic, _gemm_steps(batch, m, np_ // tile_n, k, mr, tile_n)))
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
    a_view = _subview(a, [*[0] * len(lead), m0, 0], [*lead, mp, k])
    c_view = _split_last(_subview(c, [*[0] * len(lead), m0, n0], [*lead, mp, np_]), nr)
    d = len(lead)
    dims = d + 4
    bdim, mdim, nbdim, jdim, kdim = (0 if d else -1), d, d + 1, d + 2, d + 3
    batch_dims = [bdim] if d else []
    if packed is not None:
        block = packed[:, n0 : n0 + np_].reshape(k, nb, nr).transpose(1, 0, 2)
        b_view = packed_global(op, block, f"__glow_packed_{nb}x{k}x{nr}")
        b_map = _map(dims, [nbdim, kdim, jdim])
    else:
        b_view = _split_last(_subview(b, [*[0] * len(lead), 0, n0], [*lead, k, np_]), nr)
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
    """Cache blocks (mc rows, nc columns, kc depth; each a divisor), then the mr x nr register tile with k
    innermost, vectorized into one contraction per k step. The m % mr rows that mr does not divide are split
    off inside the column and depth blocks and run as one register tile of their own."""
    lead = [1] if batch is not None else []
    rest = m % mr
    main = m - rest
    mc = mr * largest_divisor(main // mr, max(1, MC // mr))
    nbc = largest_divisor(nb, max(1, NC // nr))
    kc = largest_divisor(k, KC)
    blocks = [nbc if nbc < nb else 0, 0, kc if kc < k else 0]
    register = [*lead, mr, 1, 0, 1]

    def build(handle: ir.Value) -> None:
        if not rest:
            steps.vectorize(steps.tile(steps.tile(handle, [*lead, mc if mc < m else 0, *blocks]), register))
            return
        inside = steps.tile(handle, [*lead, 0, *blocks])
        first, second = _split(inside, len(lead), main)
        steps.vectorize(steps.tile(steps.tile(first, [*lead, mc if mc < main else 0, 0, 0, 0]), register))
        steps.vectorize(steps.tile(second, [*lead, 0, 1, 0, 1]))

    return build


def _split(handle: ir.Value, dim: int, size: int) -> tuple[ir.Value, ir.Value]:
    """`structured.split` of `handle`'s op along loop dim `dim` after `size` iterations: the two ops' handles."""
    both = structured.SplitOp(handle, dim, size).result
    split = transform.SplitHandleOp([transform.AnyOpType.get()] * 2, both)
    return split.results[0], split.results[1]


# ----------------------------------------------------------------------------------------------------------
# Blocks of buffers and the maps of the block generics


def _subview(base: ir.Value, offsets: Sequence[int], sizes: Sequence[int]) -> ir.Value:
    """The block of identity-layout memref `base` at `offsets` (a subview, which fold_memref_alias_ops folds
    into the accesses so that hoisting sees the base buffer); `base` itself for the whole buffer."""
    dims = static_shape(base)
    assert dims is not None
    if list(sizes) == list(dims):
        return base
    strides = _row_major(dims)
    offset = sum(o * s for o, s in zip(offsets, strides, strict=True))
    elt = ir.MemRefType(base.type).element_type
    result = ir.MemRefType.get(list(sizes), elt, layout=ir.StridedLayoutAttr.get(offset, strides))
    return memref.SubViewOp(
        result, base, [], [], [], ops.i64_array(offsets), ops.i64_array(sizes), ops.i64_array([1] * len(dims))
    ).result


def _split_last(view: ir.Value, inner: int) -> ir.Value:
    """`view` with its last dim n split into (n / inner, inner) (an expand_shape, foldable like a subview)."""
    t = ir.MemRefType(view.type)
    dims = list(t.shape)
    strides, offset = t.get_strides_and_offset()
    sizes = [*dims[:-1], dims[-1] // inner, inner]
    layout = (
        None
        if has_identity_layout(view)
        else ir.StridedLayoutAttr.get(offset, [*strides[:-1], strides[-1] * inner, strides[-1]])
    )
    result = ir.MemRefType.get(sizes, t.element_type, layout=layout)
    groups = [[d] for d in range(len(dims) - 1)] + [[len(dims) - 1, len(dims)]]
    reassociation = ir.ArrayAttr.get([ir.ArrayAttr.get([ops.i64(d) for d in g]) for g in groups])
    return memref.expand_shape(result, view, reassociation, [], ops.i64_array(sizes))


def _row_major(dims: Sequence[int]) -> list[int]:
    strides = [1] * len(dims)
    for i in range(len(dims) - 2, -1, -1):
        strides[i] = strides[i + 1] * dims[i + 1]
    return strides


def _iterators(kinds: Sequence[str]) -> ir.ArrayAttr:
    """linalg iterator types from their names ("parallel", "reduction")."""
    return ir.ArrayAttr.get([ir.Attribute.parse(f"#linalg.iterator_type<{k}>") for k in kinds])


def _map(dims: int, exprs: Sequence[int]) -> ir.AffineMapAttr:
    """The projected permutation (d0, ..., d{dims-1}) -> (d{exprs[0]}, ...)."""
    return ir.AffineMapAttr.get(ir.AffineMap.get(dims, 0, [ir.AffineDimExpr.get(d) for d in exprs]))


