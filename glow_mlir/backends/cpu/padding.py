"""Padded buffers filled at their border only, for glow-cpu-schedule (`fill_borders`, before any recipe runs).

glow-ir-optimize-inserts makes an op write its result straight into the interior of the next layer's padded
input (a convolution's output, the model's NCHW input transposed into the stem's padded buffer), after a fill of
the whole buffer with the padding value (0, -inf before a max pool). The interior was written twice.

A depthwise convolution that reads such a zero-bordered buffer next is marked with where the interior lies
(ZERO_BORDER_ATTR), so that its kernel can skip the taps that read the border's zeros (depthwise_recipes.py).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from mlir import ir
from mlir.dialects import linalg, memref

from glow_mlir import ops
from glow_mlir.backends.cpu.recipes import static_block, static_shape
from glow_mlir.codegen.builders import has_identity_layout

# On a linalg.depthwise_conv_2d_nhwc_hwc: [top, left, height, width] of its input's interior, the rows and columns
# that hold values; every other element of the input is a zero of the padding.
ZERO_BORDER_ATTR = "glow.zero_border"

# An op after a fill that touches the fill's buffer, with the view it goes through (None: the buffer itself).
Touch = tuple[ir.Operation, ir.Operation | None]


def fill_borders(function: ir.Operation) -> None:
    """Shrinks the fill of each padded buffer in `function` to the border that the padding is: the fill of a
    buffer whose next use is a view of its interior that is then written whole, before anything reads the
    buffer (a convolution's bias writing its output into the next layer's padded input, the input transposed
    into the stem's), becomes fills of the slabs around that interior. The interior was written twice: ResNet-50's
    fills of padded buffers took 0.6 ms of a 54 ms run, the 114x114x64 one before the max pool 0.36 ms. A depthwise
    convolution reading such a buffer of zeros next gets ZERO_BORDER_ATTR."""
    for fill in [op for op in ops.walk_ops(function) if op.name == "linalg.fill"]:
        buffer = fill.operands[-1]
        if not isinstance(buffer.type, ir.MemRefType) or not has_identity_layout(buffer) or not static_shape(buffer):
            continue
        touches = _touches(fill)
        interior = _written_interior(touches) if touches is not None else None
        if interior is None:
            continue
        _mark_zero_border(fill, touches, *interior)
        strides, _ = ir.MemRefType(buffer.type).get_strides_and_offset()
        anywhere = ir.StridedLayoutAttr.get(ir.ShapedType.get_dynamic_stride_or_offset(), strides)
        element = ir.MemRefType(buffer.type).element_type
        with fill.location, ir.InsertionPoint(fill):
            for offsets, sizes in _border(_read_extent(buffer, touches, interior[0]), *interior[1:]):
                # At a dynamic offset, the slabs of one shape (a buffer's top and bottom rows, those of every
                # buffer of its shape) are one kernel, compiled once.
                slab_type = ir.MemRefType.get(sizes, element, layout=anywhere)
                slab = memref.cast(slab_type, static_block(buffer, offsets, sizes))
                linalg.fill(fill.operands[0], outs=[slab])
        fill.erase()


def _touches(fill: ir.Operation) -> list[Touch] | None:
    """The ops after `fill` that touch its buffer, as the ops of `fill`'s block that hold them, each with the view
    it goes through (None: the buffer itself or a nested op); None where an op outside that block touches it."""
    touches: list[Touch] = []
    for use in fill.operands[-1].uses:
        user = use.owner.operation
        readers = [u.owner.operation for u in user.result.uses] if user.name == "memref.subview" else [user]
        for reader in readers:
            held = _in_block(reader, fill.block)
            if held is None:
                return None
            if held != fill and fill.is_before_in_block(held):
                touches.append((held, user if held == reader and user != reader else None))
    return touches


def _written_interior(touches: Sequence[Touch]) -> tuple[ir.Operation, list[int], list[int]] | None:
    """(writer, offsets, sizes): the first of a fill's `touches` (`_touches`) when it writes a static, unit-stride
    view of the buffer whole without reading it, before any other op touches the buffer (directly or through
    another view; a view op itself touches nothing, and an op nested in a loop touches it where the loop is: the
    expansion kernels' calls of glow-cpu-fuse-expansion take views of the stem's padded input in their loop over
    images), with the view's offsets and sizes; else None."""
    first = _first([op for op, _ in touches])
    if first is None:
        return None
    views = [view for op, view in touches if op == first]
    view = views[0] if len(views) == 1 else None
    if view is None or len(view.operands) != 1:
        return None
    if any(stride != 1 for stride in ir.DenseI64ArrayAttr(view.attributes["static_strides"])):
        return None
    if not _writes_whole(first, view.result):
        return None
    offsets = list(ir.DenseI64ArrayAttr(view.attributes["static_offsets"]))
    sizes = list(ir.DenseI64ArrayAttr(view.attributes["static_sizes"]))
    return first, offsets, sizes


def _read_extent(buffer: ir.Value, touches: Sequence[Touch], writer: ir.Operation) -> list[int]:
    """The extent from the origin of what the `touches` other than `writer` can read of `buffer`: the box that
    holds their static views (a depthwise convolution reading the first C channels of pixels that
    glow-cpu-pad-channels padded), or the whole buffer where one touches it otherwise, where none does, or where
    it is an argument (read after the function returns)."""
    shape = static_shape(buffer)
    others = [view for op, view in touches if op != writer]
    if not others or isinstance(buffer.owner, ir.Block):
        return list(shape)
    extent = [0] * len(shape)
    for view in others:
        if view is None or len(view.operands) != 1:
            return list(shape)
        offsets = ir.DenseI64ArrayAttr(view.attributes["static_offsets"])
        sizes = ir.DenseI64ArrayAttr(view.attributes["static_sizes"])
        extent = [max(e, o + n) for e, o, n in zip(extent, offsets, sizes, strict=True)]
    return extent


def _mark_zero_border(fill: ir.Operation, touches: Sequence[Touch], writer: ir.Operation, offsets: Sequence[int],
                      sizes: Sequence[int]) -> None:  # fmt: skip
    """Marks the depthwise convolution that reads `fill`'s buffer whole right after `writer` wrote its interior
    (`offsets`, `sizes`, whole along the images and channels) and the ops after it that touch that interior only
    (a convolution's own steps after its bias: the convolution, its activation), when the fill is of zeros:
    ZERO_BORDER_ATTR."""
    buffer = fill.operands[-1]
    interior = next(view for op, view in touches if op == writer)
    reader = _first([op for op, view in touches if op != writer and (view is None or view != interior)])
    if reader is None or reader.name != "linalg.depthwise_conv_2d_nhwc_hwc" or not _is_zero(fill.operands[0]):
        return
    # The buffer itself, or the view of its first channels that a convolution of padded pixels reads.
    views = [view for op, view in touches if op == reader]
    if len(views) != 1:
        return
    read = buffer if views[0] is None else views[0].result
    if reader.operands[0] != read or not _at_origin(read, buffer):
        return
    shape = static_shape(read)
    if offsets[0] or offsets[3] or sizes[0] != shape[0] or sizes[3] != shape[3]:
        return
    reader.attributes[ZERO_BORDER_ATTR] = ir.DenseI64ArrayAttr.get([offsets[1], offsets[2], sizes[1], sizes[2]])


def _at_origin(view: ir.Value, buffer: ir.Value) -> bool:
    """Whether `view` is `buffer` or a unit-stride view of it from its origin, whole along its rows and columns."""
    if view == buffer:
        return True
    op = view.owner
    return (all(o == 0 for o in ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
            and all(s == 1 for s in ir.DenseI64ArrayAttr(op.attributes["static_strides"]))
            and static_shape(view)[:3] == static_shape(buffer)[:3])  # fmt: skip


def _is_zero(value: ir.Value) -> bool:
    """Whether `value` is an arith.constant float 0.0 (either sign)."""
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.name != "arith.constant":
        return False
    attr = owner.attributes["value"]
    return isinstance(attr, ir.FloatAttr) and ir.FloatAttr(attr).value == 0.0


def _in_block(op: ir.Operation, block: ir.Block) -> ir.Operation | None:
    """`op` or the op that holds it in `block`, or None where `block` holds neither."""
    while op.block != block:
        parent = op.parent
        if parent is None or parent.name == "func.func":
            return None
        op = parent.operation
    return op


def _first(block_ops: Sequence[ir.Operation]) -> ir.Operation | None:
    """The earliest of `block_ops` (ops of one block) in the block, or None."""
    return min(block_ops, key=functools.cmp_to_key(lambda a, b: -1 if a.is_before_in_block(b) else 1), default=None)


def _writes_whole(op: ir.Operation, view: ir.Value) -> bool:
    """Whether linalg op `op` writes every element of `view`, its only output, without reading it: a copy, fill
    or transpose into it, or an all-parallel generic with an identity output map whose body ignores the output."""
    if op.operands[-1] != view or any(v == view for v in list(op.operands)[:-1]):
        return False
    if op.name in ("linalg.copy", "linalg.fill", "linalg.transpose"):
        return True
    if op.name != "linalg.generic" or len(op.results) or "indexing_maps" not in op.attributes:
        return False
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    parallel = all("parallel" in str(k) for k in ir.ArrayAttr(op.attributes["iterator_types"]))
    body = op.regions[0].blocks[0]
    output = body.arguments[len(body.arguments) - 1]
    return parallel and maps[-1] == ir.AffineMap.get_identity(maps[-1].n_dims) and not list(output.uses)


def _border(shape: Sequence[int], offsets: Sequence[int], sizes: Sequence[int]) -> list[tuple[list[int], list[int]]]:
    """The boxes (offsets, sizes) that cover `shape` but the box at `offsets` of `sizes`: along each dim d, the
    parts before and after the box, within the box along the dims before d and whole along those after it."""
    boxes = []
    for d, (extent, start, size) in enumerate(zip(shape, offsets, sizes, strict=True)):
        for lo, hi in ((0, start), (start + size, extent)):
            if hi > lo:
                boxes.append(([*offsets[:d], lo, *[0] * (len(shape) - d - 1)],
                              [*sizes[:d], hi - lo, *shape[d + 1 :]]))
    return boxes
