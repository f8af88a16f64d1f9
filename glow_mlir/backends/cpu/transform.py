"""The transform IR of glow-cpu-schedule, built with the bindings' typed transform-dialect builders.

A recipe schedules its kernel by building transform ops on the handle of the kernel's payload op (a
`Build`, called with the insertion point inside the named sequence); the step builders here take handles
(ir.Values) and return the handles they make, so that recipes chain them. `sequence` puts every kernel's
steps into one `transform.named_sequence`, bufferizes when kernels were emitted on tensors, and ends with
the shared vector tail. Every transform op the schedule uses has a builder in the pinned bindings (22.1.8),
so no transform IR is written as text. Recipe modules import this module as `steps` (`steps.tile(handle,
sizes)`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mlir import ir
from mlir.dialects import transform
from mlir.dialects.transform import bufferization, structured, vector
from mlir.dialects.transform import memref as memref_transform

# The attribute (a unit) by which the named sequence matches the kernels' payload ops.
KERNEL_ATTR = "glow.kernel"

# The named sequence of `tail_library`.
TAIL_ENTRY = "__vector_tail"

Build = Callable[[ir.Value], None]
"""Builds a kernel's transform steps on the handle of its payload op, at the current insertion point."""


def _any_op() -> ir.Type:
    return transform.AnyOpType.get()


def tile(handle: ir.Value, sizes: Sequence[int], interchange: Sequence[int] = ()) -> ir.Value:
    """`tile_using_for` with `sizes` (0: not tiled); returns the handle of the tiled op."""
    if not any(sizes):
        return handle
    tiled = structured.TileUsingForOp(handle, sizes=list(sizes), interchange=list(interchange) or None)
    return tiled.results[0]


def fuse(handle: ir.Value, sizes: Sequence[int], interchange: Sequence[int] = ()) -> ir.Value:
    """`structured.fuse`: tiles `handle` (0: not tiled) and pulls its producers into the tile loops; returns
    the handle of the tiled op. Producers left without uses stay until a canonicalization."""
    fused = structured.FuseOp(handle, tile_sizes=list(sizes), tile_interchange=list(interchange))
    if not interchange:
        # The builder always sets `static_tile_interchange` (empty here), which the op's textual form leaves
        # out; both mean no interchange. Dropped so that the op keeps exactly the attributes it always had.
        del fused.attributes["static_tile_interchange"]
    return fused.results[0]


def function_of(handle: ir.Value) -> ir.Value:
    """The func.func around `handle`'s op (a kernel's own function, once outlined)."""
    return transform.GetParentOp(_any_op(), handle, op_name="func.func").result


def canonicalize(handle: ir.Value) -> None:
    """Applies the canonicalization patterns to `handle`'s ops."""
    with ir.InsertionPoint(transform.ApplyPatternsOp(handle).patterns):
        transform.ApplyCanonicalizationPatternsOp()


def match(handle: ir.Value, op_name: str) -> ir.Value:
    """Every `op_name` nested in `handle`."""
    return structured.MatchOp.match_op_names(handle, [op_name]).result


def decompose(handle: ir.Value) -> ir.Value:
    """`structured.decompose`: a 2-D window op with a unit KH tile becomes its 1-D form (on tensors only)."""
    return structured.DecomposeOp(handle).result


def vectorize(handle: ir.Value, vector_sizes: Sequence[int] = ()) -> None:
    """Vectorizes; `vector_sizes` masks tiles that are smaller than the vector (partial tiles)."""
    structured.VectorizeOp(handle, list(vector_sizes) or None)


def _hoist(handle: ir.Value) -> ir.Value:
    """`hoist_redundant_vector_transfers`, which consumes `handle`: returns the handle to use after it."""
    return structured.HoistRedundantVectorTransfersOp(_any_op(), handle).result


def vector_tail(root: ir.Value) -> None:
    """The shared clean-up and lowering of vector code (docs: /work/shared/notes, "A working vector tail").

    Hoisting only sees through canonical, CSE'd IR with views folded away, so it runs after each clean-up.
    """
    functions = match(root, "func.func")
    functions = _clean_up(
        functions,
        vector.ApplyVectorReductionToContractPatternsOp,
        vector.ApplyTransferPermutationPatternsOp,
        memref_transform.ApplyFoldMemrefAliasOpsPatternsOp,
    )
    functions = _clean_up(
        functions, vector.ApplyCastAwayVectorLeadingOneDimPatternsOp, vector.ApplyDropUnitDimWithShapeCastPatternsOp
    )
    _clean_up(
        functions,
        lambda: vector.ApplyLowerContractionPatternsOp(lowering_strategy=vector.VectorContractLowering.OuterProduct),
        vector.ApplyTransferPermutationPatternsOp,
        lambda: vector.ApplyLowerMultiReductionPatternsOp(
            lowering_strategy=vector.VectorMultiReductionLowering.InnerParallel
        ),
        vector.ApplyLowerMaskedTransfersPatternsOp,
        vector.ApplyLowerMasksPatternsOp,
        lambda: vector.ApplyLowerTransferPatternsOp(max_transfer_rank=1),
        vector.ApplyLowerOuterProductPatternsOp,
        cse=False,
    )


def _clean_up(functions: ir.Value, *patterns: Callable[[], object], cse: bool = True) -> ir.Value:
    """One step of the vector tail: `patterns` (each builds one pattern op) and canonicalization applied to
    `functions`, then CSE (unless not `cse`), then hoisting; returns the handle to use after it."""
    with ir.InsertionPoint(transform.ApplyPatternsOp(functions).patterns):
        for pattern in patterns:
            pattern()
        transform.ApplyCanonicalizationPatternsOp()
    if cse:
        transform.ApplyCommonSubexpressionEliminationOp(functions)
    return _hoist(functions)


def text_of(build: Build) -> str:
    """The transform ops `build` makes, as text (built on a sequence of their own): two kernels whose
    functions and steps print alike compile alike (outline.py: `Outlined`)."""
    with ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            named = transform.NamedSequenceOp(
                "steps", [_any_op()], [], arg_attrs=[{"transform.consumed": ir.UnitAttr.get()}]
            )
        with ir.InsertionPoint(named.body):
            build(named.bodyTarget)
            transform.YieldOp([])
    return str(module)


def sequence(kernels: Sequence[tuple[ir.Operation, Build]], on_tensors: bool) -> ir.Module:
    """The transform module: match every kernel at once (their payload ops, tagged KERNEL_ATTR, given in the
    payload's walk order), split the handle into one per kernel and build its steps, in order; bufferize once if
    kernels were emitted on tensors. The vector tail comes after, function by function (`tail_library`).

    One match, not one per kernel: each match walks the whole module, and DenseNet-121's ~750 kernels walked its
    20 thousand ops ~750 times.

    Bufferizing consumes the root handle, so the sequence's argument is then marked consumed.
    """
    module, named = _named_sequence("__transform_main", consumed=on_tensors)
    root = named.bodyTarget
    with ir.Location.unknown(), ir.InsertionPoint(named.body):
        if kernels:
            tagged = structured.MatchOp(_any_op(), root, op_attrs=ir.DictAttr.get({KERNEL_ATTR: ir.UnitAttr.get()}))
            handles = [tagged.result]
            if len(kernels) > 1:
                handles = list(transform.SplitHandleOp([_any_op()] * len(kernels), tagged.result).results)
            for (op, build), handle in zip(kernels, handles, strict=True):
                # The kernel's steps carry its payload op's location, which failures then name.
                with op.location:
                    build(handle)
        if on_tensors:
            bufferization.OneShotBufferizeOp(root, bufferize_function_boundaries=False)
        transform.YieldOp([])
    return module


def tail_library() -> ir.Module:
    """The transform module of `vector_tail` alone, as the named sequence TAIL_ENTRY on one function: the
    schedule applies it function by function with the `transform-interpreter` pass, which MLIR's pass manager
    runs on several functions at once."""
    module, named = _named_sequence(TAIL_ENTRY, consumed=False, visibility="private")
    with ir.Location.unknown(), ir.InsertionPoint(named.body):
        vector_tail(named.bodyTarget)
        transform.YieldOp([])
    return module


def _named_sequence(name: str, consumed: bool,
                    visibility: str | None = None) -> tuple[ir.Module, transform.NamedSequenceOp]:
    """A transform module holding the empty named sequence `name` on one handle, which it consumes or only
    reads."""
    with ir.Location.unknown():
        module = ir.Module.create()
        module.operation.attributes["transform.with_named_sequence"] = ir.UnitAttr.get()
        mode = "transform.consumed" if consumed else "transform.readonly"
        with ir.InsertionPoint(module.body):
            named = transform.NamedSequenceOp(
                name, [_any_op()], [], sym_visibility=visibility, arg_attrs=[{mode: ir.UnitAttr.get()}]
            )
    return module, named
