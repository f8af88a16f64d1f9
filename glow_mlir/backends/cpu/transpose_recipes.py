"""glow-cpu-schedule's recipe of linalg.transpose (f32): vector kernels instead of scalar loop nests.

A transpose that moves the input's innermost dim elsewhere got one scalar load and store per element as a loop
nest. Here the output's innermost dim and the loop dim that walks the input's innermost one are tiled by TILE
(the other dims by 1), so each tile reads TILE contiguous rows of the input and writes TILE contiguous rows of
the output, and its vector.transpose becomes shuffles of whole registers (`shuffle_16x16` for a 16x16 tile, one
shuffle of the flattened tile otherwise). A dim that neither TILE nor HALF_TILE divides is first split into the
part TILE divides and the rest, which is one tile along that dim (static shapes everywhere: no masks); a dim of
at most TILE is one tile (the 3 channels of an RGB input next to 224 pixels: 3x16 tiles).

A transpose that keeps the innermost dim is a strided copy, left to the loop nest of outline_leftovers: its
innermost loop is contiguous in both buffers and LLVM vectorizes it. The vector recipe of recipes.py (tiles of 1,
a vector along the innermost dim) ran Swin's head split 64x3x16x16 -> 64x16x3x16 in 0.016 ms, the loops in 0.013.
"""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import transform
from mlir.dialects.transform import structured, vector

from glow_mlir.backends.cpu import transform as steps
from glow_mlir.backends.cpu.recipes import Recipe, is_float32, recipe, static_shape

# Floats per zmm register: a 16x16 tile is 16 loads, the 16x16 shuffle network, 16 stores.
TILE = 16
# The tile along a dim that TILE does not divide but this does (56 pixels): half-register rows for the whole
# dim ran MobileNetV2's 144x56x56 boundary transposes faster than 16-wide tiles and a tile of the 8 left over.
HALF_TILE = 8


@recipe("linalg.transpose")
def transpose_recipe(op: ir.Operation) -> Recipe | None:
    """Transposes of the innermost dim by register tiles; None for strided copies (see the module's doc)."""
    dest = op.operands[-1]
    shape = static_shape(dest)
    if not all(isinstance(v.type, ir.MemRefType) for v in op.operands) or shape is None or 0 in shape:
        return None
    if not is_float32(dest):
        return None
    permutation = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
    rank = len(permutation)
    if permutation[-1] == rank - 1:
        return None
    # Loop dims are the output's dims: `inner` walks the output's innermost dim, `across` the input's.
    inner, across = rank - 1, permutation.index(rank - 1)

    def build(handle: ir.Value) -> None:
        function = steps.function_of(handle)
        # Each piece of the op and its tile sizes along `inner` and `across` (other dims: 1).
        pieces: list[tuple[ir.Value, dict[int, int]]] = [(handle, {})]
        for dim in (inner, across):
            pieces = [
                (part, {**tiles, dim: tile}) for piece, tiles in pieces for part, tile in _split(piece, dim, shape[dim])
            ]
        for piece, tiles in pieces:
            sizes = [tiles.get(d, 1 if n > 1 else 0) for d, n in enumerate(shape)]
            steps.vectorize(steps.tile(piece, sizes))
        _transposes_to_shuffles(function)

    return Recipe.of(op, build)


def _split(handle: ir.Value, dim: int, size: int) -> list[tuple[ir.Value, int]]:
    """The parts of `handle`'s op along loop dim `dim` of `size` iterations, each with its tile size there
    (0: the whole part): one tile if `size` <= TILE, tiles of TILE or else HALF_TILE if one divides `size`,
    else the part TILE divides in tiles of TILE and the rest as one tile (static shapes, no masks)."""
    if size <= TILE:
        return [(handle, 0)]
    for tile in (TILE, HALF_TILE):
        if size % tile == 0:
            return [(handle, tile)]
    parts = structured.SplitOp(handle, dim, size // TILE * TILE).result
    main, rest = transform.SplitHandleOp([parts.type, parts.type], parts).results
    return [(main, TILE), (rest, 0)]


def _transposes_to_shuffles(function: ir.Value) -> None:
    """Lowers the vectorized tiles' transposes to shuffles of whole registers here, before the shared vector
    tail, rather than leaving them to the default lowering further down: the transfers' permutations become
    vector.transpose ops and their unit dims are dropped, then a 16x16 transpose becomes the shuffle network of
    `shuffle_16x16` (4 stages of 16 two-register shuffles) and any other one shuffle of the flattened tile
    (`shuffle_1d`)."""
    stages: tuple[tuple[Callable[[], object], ...], ...] = (
        (
            vector.ApplyTransferPermutationPatternsOp,
            vector.ApplyCastAwayVectorLeadingOneDimPatternsOp,
            vector.ApplyDropUnitDimWithShapeCastPatternsOp,
        ),
        (lambda: vector.ApplyLowerTransposePatternsOp(lowering_strategy=vector.VectorTransposeLowering.Shuffle16x16),),
        (lambda: vector.ApplyLowerTransposePatternsOp(lowering_strategy=vector.VectorTransposeLowering.Shuffle1D),),
    )
    for patterns in stages:
        with ir.InsertionPoint(transform.ApplyPatternsOp(function).patterns):
            for pattern in patterns:
                pattern()
            transform.ApplyCanonicalizationPatternsOp()
