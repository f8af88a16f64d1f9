"""glow-cpu-schedule's recipe of linalg.transpose (f32, and 8-bit integers: a QDQ model's uint8 activations
changing layout): vector kernels instead of scalar loop nests.

A transpose that moves the input's innermost dim elsewhere got one scalar load and store per element as a loop
nest. Here the output's innermost dim and the loop dim that walks the input's innermost one are tiled by TILE
(the other dims by 1), so each tile reads TILE contiguous rows of the input and writes TILE contiguous rows of
the output, and its vector.transpose becomes shuffles of whole registers (`shuffle_16x16` for a 16x16 tile, one
shuffle of the flattened tile otherwise). A dim that neither TILE nor HALF_TILE divides is first split into the
part TILE divides and the rest, which is one tile along that dim (static shapes everywhere: no masks); a dim of
at most TILE is one tile. An NCHW -> NHWC transpose of at most INTERLEAVE_CHANNELS channels (a network's RGB
input) whose output rows are contiguous is vector code of its own instead (`_interleave`): the tiles' 16 x 3
transposes were stored as 16 stores of 3 floats.

A transpose that keeps the innermost dim is a strided copy, left to the loop nest of outline_leftovers: its
innermost loop is contiguous in both buffers and LLVM vectorizes it. The vector recipe of recipes.py (tiles of 1,
a vector along the innermost dim) ran Swin's head split 64x3x16x16 -> 64x16x3x16 in 0.016 ms, the loops in 0.013.
"""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import arith, scf, transform
from mlir.dialects import vector as vec
from mlir.dialects.transform import structured, vector

from glow_mlir.backends.cpu import transform as steps
from glow_mlir.backends.cpu.recipes import Recipe, collapse_dims, is_float32, recipe, static_shape
from glow_mlir.backends.cpu.vector_body import lanes_mask, load, store
from glow_mlir.codegen.builders import index

# Floats per zmm register: a 16x16 tile is 16 loads, the 16x16 shuffle network, 16 stores.
TILE = 16
# The most channels an NCHW -> NHWC transpose interleaves in registers (`_interleave`): an RGB input's 3.
INTERLEAVE_CHANNELS = 8
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
    element = ir.ShapedType(dest.type).element_type
    if not (is_float32(dest) or (isinstance(element, ir.IntegerType) and element.width == 8)):
        return None
    permutation = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
    rank = len(permutation)
    if permutation[-1] == rank - 1:
        return None
    if _interleaves(op.operands[0], dest, permutation):
        root = _interleave(op.operands[0], dest)
        op.erase()
        return Recipe.of(root, lambda _: None)
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


def _interleaves(x: ir.Value, y: ir.Value, permutation: list[int]) -> bool:
    """Whether a transpose is an NCHW -> NHWC one of at most INTERLEAVE_CHANNELS channels whose input rows and
    output rows (pixels x channels) are contiguous: a network's RGB input into the interior of its padded
    buffer."""
    if permutation != [0, 2, 3, 1] or static_shape(y)[3] > INTERLEAVE_CHANNELS:
        return False
    x_strides = ir.MemRefType(x.type).get_strides_and_offset()[0]
    y_strides = ir.MemRefType(y.type).get_strides_and_offset()[0]
    return x_strides[3] == 1 and y_strides[2:] == [static_shape(y)[3], 1]


def _interleave(x: ir.Value, y: ir.Value) -> ir.Operation:
    """NCHW `x` into NHWC `y` of C <= INTERLEAVE_CHANNELS channels, at the insertion point: per row, each run of
    16 pixels is C register loads (one per channel plane), one shuffle that interleaves them (lane p x C + c
    takes pixel p of channel c) and C register stores into the row's pixels as one run of floats; a row's last
    pixels are masked. The tiled vector.transpose wrote a 16 x 3 tile as 16 stores of 3 floats (an RGB
    input's transpose into MobileNetV3-small's padded input: 16.7 us, this kernel 10.1)."""
    n, h, w, c = static_shape(y)
    rows = collapse_dims(y, ([0], [1], [2, 3]))
    vt = ir.VectorType.get([TILE], ir.ShapedType(y.type).element_type)
    order = [lane % c * TILE + lane // c for lane in range(TILE * c)]
    loop = scf.ForOp(index(0), index(n * h), index(1))
    with ir.InsertionPoint(loop.body):
        image, row = arith.divui(loop.induction_variable, index(h)), arith.remui(loop.induction_variable, index(h))

        def pixels(w0: ir.Value, count: int) -> None:
            mask = lanes_mask(count, TILE)
            planes = [load(x, [image, index(k), row, w0], vt, mask) for k in range(c)]
            # Joined pairwise, the last of an odd level twice: channel k stays at lanes 16k .. 16k + 15, and
            # every shuffle takes operands of one width (LLVM made a shuffle of a 32- and a 16-lane vector one
            # extract and insert per lane).
            while len(planes) > 1:
                pairs = zip(planes[::2], planes[1::2] + planes[-1:] * (len(planes) % 2))
                planes = [vec.shuffle(a, b, list(range(2 * ir.VectorType(a.type).shape[0]))) for a, b in pairs]
            mixed = vec.shuffle(planes[0], planes[0], order) if c > 1 else planes[0]
            f0 = arith.muli(w0, index(c))
            for k in range(-(-count * c // TILE)):
                piece = vec.extract_strided_slice(vt, mixed, [k * TILE], [TILE], [1])
                at = arith.addi(f0, index(k * TILE)) if k else f0
                store(piece, rows, [image, row, at], lanes_mask(count * c - k * TILE, TILE))

        full = w // TILE
        if full:
            blocks = scf.ForOp(index(0), index(full * TILE), index(TILE))
            with ir.InsertionPoint(blocks.body):
                pixels(blocks.induction_variable, TILE)
                scf.YieldOp([])
        if w % TILE:
            pixels(index(full * TILE), w % TILE)
        scf.YieldOp([])
    return loop.operation
