"""glow-ir-to-linalg's lowerings of math instructions: elementwise arithmetic, comparisons, logic and unary
math, matmuls, reductions, softmax, determinants, and the fused activations (arg_max / arg_min: arg_search.py).

The elementwise instructions are derived from the op definitions: one linalg.generic each around the scalar
body their op states (glow_mlir/opdefs), checked by its element-type rule. Search-shaped instructions
(softmax, det's pivoting) are scf loops.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mlir import ir
from mlir.dialects import arith, linalg, math, memref, scf

from glow_mlir import ops
from glow_mlir.codegen.builders import (
    elementwise,
    fill,
    float_only,
    generic,
    highest,
    identity_map,
    index,
    is_bool,
    is_float,
    loop_nest,
    lowest,
    reduce_loop,
    scalar,
    with_scalars,
)
from glow_mlir.opdefs import glow_ops, shapes, types
from glow_mlir.opdefs.base import OpDef, Trait, activations
from glow_mlir.opdefs.scalar import Scalar2, add, maximum, minimum, mul
from glow_mlir.codegen.table import Lowering, fail, lowering, register_lowerings


# ----------------------------------------------------------------------------------------------------------
# Matmuls


@lowering("matmul")
def _matmul(op: ir.Operation) -> None:
    dest, lhs, rhs = op.operands
    fill(dest, 0.0)
    linalg.matmul(lhs, rhs, outs=[dest])


@lowering("batched_add")
def _batched_add(op: ir.Operation) -> None:
    dest, batch, slice_ = op.operands
    rank, slice_dims = len(ops.shape(dest)), ops.shape(slice_)
    # The slice lines up with the trailing dims of the batch (Glow: slice dims == batch dims[1:]).
    if ops.shape(dest)[rank - len(slice_dims) :] != slice_dims or len(slice_dims) >= rank:
        raise fail(op, f"slice {list(slice_dims)} does not match the batch {list(ops.shape(dest))}")
    slice_map = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(d) for d in range(rank - len(slice_dims), rank)])
    generic([batch, slice_], dest, [identity_map(rank), slice_map, identity_map(rank)], lambda a: add(a[0], a[1]))


@lowering("batch_matmul")
def _batch_matmul(op: ir.Operation) -> None:
    dest, lhs, rhs = op.operands
    fill(dest, 0.0)
    linalg.batch_matmul(lhs, rhs, outs=[dest])


@lowering("fused_matmul")
@float_only
def _fused_matmul(op: ir.Operation) -> None:
    """dest = activation(lhs x rhs + bias): dest starts as the bias in every row, the product accumulates into
    it, then the activation runs in place."""
    dest, lhs, rhs, bias = op.operands
    _, columns = ops.shape(dest)
    if ops.shape(bias) != (columns,):
        raise fail(op, f"bias {list(ops.shape(bias))} is not [{columns}]")
    bias_map = ir.AffineMap.get(2, 0, [ir.AffineDimExpr.get(1)])
    generic([bias], dest, [bias_map, identity_map(2)], lambda a: a[0])
    linalg.matmul(lhs, rhs, outs=[dest])
    activate(op, dest)


def activate(op: ir.Operation, dest: ir.Value,
             attrs: tuple[str, str] = ("activation", "activationArgs")) -> ir.Operation | None:  # fmt: skip
    """Applies `op`'s fused activation (named by attributes `attrs`: its name, its arguments) to `dest` in place:
    one linalg.generic (returned), none for "none"."""
    name = ir.StringAttr(op.attributes[attrs[0]]).value
    if name == "none":
        return None
    activation = activations()[name]
    args = list(ir.DenseF32ArrayAttr(op.attributes[attrs[1]]))
    return elementwise([], dest, lambda a: activation.scalar(a[0], args))


# ----------------------------------------------------------------------------------------------------------
# Softmax, reductions and searches


@lowering("softmax")
@float_only
def _softmax(op: ir.Operation) -> None:
    dest, src = op.operands
    dims = ops.shape(src)
    if not dims:
        raise fail(op, "needs a buffer of rank 1 or more")
    elt, last = ops.element_type(src), dims[-1]

    def row(ivs: list[ir.Value]) -> None:
        def at(j: ir.Value) -> list[ir.Value]:
            return [*ivs, j]

        # Subtracting the row's max keeps exp from overflowing; the divide normalizes in place in dest.
        row_max = reduce_loop(
            last, scalar(elt, float("-inf")), lambda j, m: arith.maximumf(m, memref.load(src, at(j)))
        )

        def exp_and_sum(j: ir.Value, total: ir.Value) -> ir.Value:
            e = math.exp(arith.subf(memref.load(src, at(j)), row_max))
            memref.store(e, dest, at(j))
            return arith.addf(total, e)

        total = reduce_loop(last, scalar(elt, 0.0), exp_and_sum)

        def normalize(j: list[ir.Value]) -> None:
            memref.store(arith.divf(memref.load(dest, at(*j)), total), dest, at(*j))

        loop_nest([last], normalize)

    loop_nest(list(dims[:-1]), row)


@lowering("det")
@float_only
def _det(op: ir.Operation) -> None:
    """Each matrix's determinant by Gaussian elimination with partial pivoting (LAPACK's getrf, as numpy and
    onnxruntime's Eigen compute it) on a stack copy: the product of the pivots, negated per row swap. A column of
    zeros below the diagonal makes the pivot and the determinant 0, and its elimination is skipped."""
    dest, src = op.operands
    dims = ops.shape(src)
    if len(dims) < 2 or dims[-1] != dims[-2] or ops.shape(dest) != dims[:-2]:
        raise fail(op, f"cannot take the determinants of {list(dims)} into {list(ops.shape(dest))}")
    n, elt = dims[-1], ops.element_type(src)
    if n > shapes.DET_MAX_ORDER:
        raise fail(op, f"eliminates {n} x {n} matrices on the stack; at most {shapes.DET_MAX_ORDER} x {shapes.DET_MAX_ORDER}")
    zero = scalar(elt, 0.0)
    work = memref.alloca(ir.MemRefType.get([n, n], elt), [], [])

    def matrix(ivs: list[ir.Value]) -> None:
        loop_nest([n, n], lambda ij: memref.store(memref.load(src, [*ivs, *ij]), work, ij))
        columns = scf.ForOp(index(0), index(n), index(1), [scalar(elt, 1.0)])
        with ir.InsertionPoint(columns.body):
            k, det = columns.induction_variable, columns.inner_iter_args[0]
            # The pivot: the largest magnitude on or below the diagonal, the first of equals.
            search = scf.ForOp(k, index(n), index(1), [scalar(elt, -1.0), k])
            with ir.InsertionPoint(search.body):
                i, (best, row) = search.induction_variable, search.inner_iter_args
                size = math.absf(memref.load(work, [i, k]))
                larger = arith.cmpf(arith.CmpFPredicate.OGT, size, best)
                scf.YieldOp([arith.select(larger, size, best), arith.select(larger, i, row)])
            p = search.results[1]

            def swap(j: list[ir.Value]) -> None:
                upper, lower = memref.load(work, [k, *j]), memref.load(work, [p, *j])
                memref.store(lower, work, [k, *j])
                memref.store(upper, work, [p, *j])

            loop_nest([n], swap)
            pivot = memref.load(work, [k, k])
            swapped = arith.cmpi(arith.CmpIPredicate.ne, p, k)
            det = arith.mulf(arith.select(swapped, arith.negf(det), det), pivot)
            eliminate = scf.IfOp(arith.cmpf(arith.CmpFPredicate.ONE, pivot, zero), [], has_else=False)
            with ir.InsertionPoint(eliminate.then_block):
                rows = scf.ForOp(arith.addi(k, index(1)), index(n), index(1))
                with ir.InsertionPoint(rows.body):
                    i = rows.induction_variable
                    factor = arith.divf(memref.load(work, [i, k]), pivot)
                    each = scf.ForOp(arith.addi(k, index(1)), index(n), index(1))
                    with ir.InsertionPoint(each.body):
                        j = each.induction_variable
                        below = arith.mulf(factor, memref.load(work, [k, j]))
                        memref.store(arith.subf(memref.load(work, [i, j]), below), work, [i, j])
                        scf.YieldOp([])
                    scf.YieldOp([])
                scf.YieldOp([])
            scf.YieldOp([det])
        memref.store(columns.results[0], dest, ivs)

    loop_nest(list(dims[:-2]), matrix)


def _batched_reduce(identity: Callable[[ir.Type], ir.Value], combine: Scalar2) -> Lowering:
    """dest = combine-reduction of src over `axes`: dest starts as the identity, then accumulates."""

    def lower(op: ir.Operation) -> None:
        dest, src = op.operands
        axes, dims = ops.ints(op, "axes"), ops.shape(src)
        if axes != sorted(set(axes)) or any(not 0 <= a < len(dims) for a in axes):
            raise fail(op, f"axes {axes} are not sorted, unique dims of a rank-{len(dims)} source")
        kept = [d for d in range(len(dims)) if d not in axes]
        if ops.shape(dest) != tuple(dims[d] for d in kept):
            raise fail(op, f"destination {list(ops.shape(dest))} is not {list(dims)} without axes {axes}")
        linalg.fill(identity(ops.element_type(dest)), outs=[dest])
        dest_map = ir.AffineMap.get(len(dims), 0, [ir.AffineDimExpr.get(d) for d in kept])
        generic([src], dest, [identity_map(len(dims)), dest_map], lambda a: combine(a[1], a[0]), reductions=axes)

    return lower


register_lowerings(
    {
        "batched_reduce_add": _batched_reduce(lambda elt: scalar(elt, 0), add),
        "batched_reduce_max": _batched_reduce(lowest, maximum),
        "batched_reduce_min": _batched_reduce(highest, minimum),
        "batched_reduce_prod": _batched_reduce(lambda elt: scalar(elt, 1), mul),
    }
)


# ----------------------------------------------------------------------------------------------------------
# Elementwise instructions, derived from the op definitions: one linalg.generic around the op's scalar body
# (glow_mlir/opdefs), after the operand checks its element-type rule implies.


def _elementwise_lowering(definition: OpDef) -> Lowering:
    """The lowering of elementwise op `definition`'s instruction (`with_scalars`: an operand of one known value
    is a scalar in the body)."""
    body = definition.scalar
    assert body is not None
    takes = types.operand_types(definition.types)

    def lower(op: ir.Operation) -> None:
        dest, *inputs = op.operands
        result = ops.element_type(dest)
        # The inputs, which the rule constrains (a predicate's i1 destination is not a float).
        if takes == types.FLOATS:
            _require_all(op, inputs, is_float, "floating-point")
        elif takes == (types.BOOL,):
            _require_all(op, op.operands, is_bool, "i1")
        with_scalars(inputs, dest, lambda a: body(a, result))

    return lower


def _require_all(
    op: ir.Operation, values: Sequence[ir.Value], kind: Callable[[ir.Type], bool], what: str
) -> None:
    for value in values:
        elt = ops.element_type(value)
        if not kind(elt):
            i = list(op.operands).index(value)
            raise fail(op, f"takes {what} buffers only, operand {i} has element type {elt}")


register_lowerings(
    {
        op.ir.name: _elementwise_lowering(op)
        for op in glow_ops().values()
        if op.has(Trait.ELEMENTWISE) and op.ir is not None and op.scalar is not None
    }
)
