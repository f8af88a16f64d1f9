"""glow-ir-to-linalg's lowerings of data-movement instructions: copy, splat, views (tensor_view, block_view),
transpose, insert/extract tensor, broadcast, convert_to, select and gather.

Views become memref views of the same buffer (a reinterpret_cast or a strided subview) that replace the
view's result; the others are linalg ops writing their destination. An alloc_activation or dealloc_activation
left over (glow-allocate did not run) is an error.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, linalg, memref

from glow_mlir import ops
from glow_mlir.codegen.builders import block, fill, generic, identity_map, reshape, scalar, width
from glow_mlir.codegen.table import fail, lowering


@lowering("alloc_activation")
@lowering("dealloc_activation")
def _leftover(op: ir.Operation) -> None:
    raise fail(op, "must be gone before glow-ir-to-linalg: run glow-allocate first")


@lowering("tensor_view")
def _tensor_view(op: ir.Operation) -> None:
    view = reshape(op.operands[0], ops.shape(op.results[0]))
    op.results[0].replace_all_uses_with(view)


@lowering("block_view")
def _block_view(op: ir.Operation) -> None:
    src = op.operands[0]
    view = block(src, ops.ints(op, "start"), ops.shape(op.results[0]), op)
    op.results[0].replace_all_uses_with(view)


@lowering("copy")
def _copy(op: ir.Operation) -> None:
    dest, src = op.operands
    linalg.copy(src, outs=[dest])


@lowering("splat")
def _splat(op: ir.Operation) -> None:
    # The value is an f32 attribute for float buffers and an integer one for integer and i1 buffers.
    attr = op.attributes["value"]
    value = ir.FloatAttr(attr).value if isinstance(attr, ir.FloatAttr) else ir.IntegerAttr(attr).value
    fill(op.operands[0], value)


@lowering("transpose")
def _transpose(op: ir.Operation) -> None:
    dest, src = op.operands
    shuffle = ops.ints(op, "shuffle")
    if sorted(shuffle) != list(range(len(ops.shape(src)))):
        raise fail(op, f"shuffle {shuffle} is not a permutation of the source's dims")
    linalg.transpose(src, outs=[dest], permutation=shuffle)


@lowering("insert_tensor")
def _insert_tensor(op: ir.Operation) -> None:
    dest, src = op.operands
    linalg.copy(src, outs=[block(dest, ops.ints(op, "start"), ops.shape(src), op)])


@lowering("extract_tensor")
def _extract_tensor(op: ir.Operation) -> None:
    dest, src = op.operands
    linalg.copy(block(src, ops.ints(op, "start"), ops.shape(dest), op), outs=[dest])


@lowering("broadcast")
def _broadcast(op: ir.Operation) -> None:
    dest, src = op.operands
    dest_dims, src_dims = ops.shape(dest), ops.shape(src)
    axis = ops.integer(op, "axis")
    if axis < 0 or axis + len(src_dims) > len(dest_dims):
        raise fail(op, f"cannot align {list(src_dims)} at axis {axis} in {list(dest_dims)}")
    exprs: list[ir.AffineExpr] = []
    for i, d in enumerate(src_dims):
        if d == dest_dims[axis + i]:
            exprs.append(ir.AffineDimExpr.get(axis + i))
        elif d == 1:
            exprs.append(ir.AffineConstantExpr.get(0))
        else:
            raise fail(op, f"cannot broadcast {list(src_dims)} to {list(dest_dims)} at axis {axis}")
    rank = len(dest_dims)
    generic([src], dest, [ir.AffineMap.get(rank, 0, exprs), identity_map(rank)], lambda a: a[0])


@lowering("gather")
def _gather(op: ir.Operation) -> None:
    dest, data, indices = op.operands
    axis = ops.integer(op, "axis")
    data_dims, index_dims = ops.shape(data), ops.shape(indices)
    if not 0 <= axis < len(data_dims):
        raise fail(op, f"axis {axis} is out of range for data of rank {len(data_dims)}")
    expected = (*data_dims[:axis], *index_dims, *data_dims[axis + 1 :])
    if ops.shape(dest) != expected:
        rule = f"is not data[:axis] + indices + data[axis+1:] = {list(expected)}"
        raise fail(op, f"destination {list(ops.shape(dest))} {rule}")
    index_type = ops.element_type(indices)
    if not isinstance(index_type, ir.IntegerType) or width(index_type) not in (32, 64):
        raise fail(op, f"needs i32 or i64 indices, got {index_type}")
    rank, count = len(expected), len(index_dims)
    index_map = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(axis + i) for i in range(count)])

    def body(a: list[ir.Value]) -> ir.Value:
        # Negative indices count from the end (numpy.take, ONNX Gather).
        index = a[0]
        negative = arith.cmpi(arith.CmpIPredicate.slt, index, scalar(index_type, 0))
        index = arith.select(negative, arith.addi(index, scalar(index_type, data_dims[axis])), index)
        outer = [linalg.IndexOp(ops.i64(d)).result for d in range(axis)]
        inner = [linalg.IndexOp(ops.i64(d)).result for d in range(axis + count, rank)]
        return memref.load(data, [*outer, arith.index_cast(ir.IndexType.get(), index), *inner])

    generic([indices], dest, [index_map, identity_map(rank)], body)
