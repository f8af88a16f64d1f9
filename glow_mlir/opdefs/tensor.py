"""Definitions of the data-movement ops (constants, splats, reshapes, transposes, concat, slices, inserts,
broadcasts, gathers, type conversion, select) and of the `glow_ir` instructions no graph op maps to one to
one (alloc/dealloc, views, copy, insert_tensor).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from mlir.dialects import arith

from glow_mlir import ops
from glow_mlir.opdefs import reference as ref
from glow_mlir.opdefs import scalar as s
from glow_mlir.opdefs import shapes
from glow_mlir.opdefs import types as t
from glow_mlir.opdefs.base import Attr, IrDef, OpDef, Trait, define, define_ir

COPY_OPERANDS = (("dest", "out"), ("src", "in"))


def _stated(result: tuple[int, ...] | None) -> tuple[int, ...]:
    """The result shape a rule takes from the op itself (constant, splat: their type is their shape)."""
    if result is None:
        raise shapes.ShapeError("has no operands to infer its result shape from")
    return shapes.tensor(result)


define(OpDef(
    "constant", "A constant tensor (Glow's Constant); `value` is a dense elements attribute.", (),
    attrs=(("value", Attr.ANY),), shape=lambda o, a, r: _stated(r), types=t.asked, evaluate=ref.constant,
))
define(OpDef(
    "splat",
    "A tensor with every element equal to `value` (an f32 attribute for floats, an integer one for integers and i1).",
    (), attrs=(("value", Attr.ANY),), shape=lambda o, a, r: _stated(r), types=t.asked, evaluate=ref.splat,
    ir=IrDef(
        "splat", (("dest", "out"),), attrs=("value",), in_place=True, graph="splat",
        doc="Every element of dest = value (f32 attribute for floats, integer attribute for integers and i1).",
    ),
))
define(OpDef(
    "reshape", "Same elements in row-major order, new shape `dims`.", ("input",), attrs=(("dims", Attr.INTS),),
    shape=lambda o, a, r: shapes.reshape(*o, a["dims"]), types=t.ANY,
    evaluate=lambda op, a: a[0].reshape(ops.ints(op, "dims")),
))
define(OpDef(
    "transpose", "result.dims[i] = input.dims[shuffle[i]].", ("input",), attrs=(("shuffle", Attr.INTS),),
    shape=lambda o, a, r: shapes.transpose(*o, a["shuffle"]), types=t.ANY,
    evaluate=lambda op, a: a[0].transpose(ops.ints(op, "shuffle")),
    ir=IrDef("transpose", COPY_OPERANDS, attrs=("shuffle",), graph="transpose",
             doc="dest.dims[i] = src.dims[shuffle[i]]."),
))
define(OpDef(
    "concat",
    "Concatenation along `dim`. Inputs come in up to 8 groups of equal-typed inputs (IRDL variadics are "
    "homogeneous); operandSegmentSizes gives each group's length.",
    ("in",), attrs=(("dim", Attr.INT),), variadic=True, shape=lambda o, a, r: shapes.concat(o, a["dim"]),
    types=t.ANY, evaluate=ref.concat,
))
define(OpDef(
    "slice", "The block of the result's shape that starts at `start`.", ("input",), attrs=(("start", Attr.INTS),),
    shape=lambda o, a, r: shapes.slice(*o, a["start"], _stated(r)), types=t.ANY, evaluate=ref.slice_,
    ir=IrDef("extract_tensor", COPY_OPERANDS, attrs=("start",), graph="slice",
             doc="dest = the block of src of dest's shape at offset start."),
))
define(OpDef(
    "insert_tensor", "`big` with `small` written into it at offset `start`.", ("big", "small"),
    attrs=(("start", Attr.INTS),), shape=lambda o, a, r: shapes.insert_tensor(*o, a["start"]), types=t.ANY,
    evaluate=ref.insert_tensor,
))
define(OpDef(
    "broadcast", "Numpy broadcast of `input` to the result shape, its dims aligned at `axis`.", ("input",),
    attrs=(("axis", Attr.INT),), shape=lambda o, a, r: shapes.broadcast(*o, _stated(r), a["axis"]), types=t.ANY,
    evaluate=ref.broadcast,
    ir=IrDef("broadcast", COPY_OPERANDS, attrs=("axis",), graph="broadcast",
             doc="Numpy broadcast of src to dest's shape, src's dims aligned at axis."),
))
define(OpDef(
    "gather",
    "numpy.take(data, indices, axis): result shape data[:axis] + indices + data[axis+1:]; negative indices "
    "count from the end.",
    ("data", "indices"), attrs=(("axis", Attr.INT),), shape=lambda o, a, r: shapes.gather(*o, a["axis"]),
    types=t.gather, evaluate=ref.gather,
    ir=IrDef("gather", (("dest", "out"), ("data", "in"), ("indices", "in")), attrs=("axis",), graph="gather",
             doc="dest = numpy.take(data, indices, axis); out-of-range indices read the nearest element (clamped)."),
))
define(OpDef(
    "gather_elements",
    "numpy.take_along_axis(data, indices, axis) (ONNX GatherElements): result[p] = data[p with p[axis] = "
    "indices[p]], of the indices' shape; negative indices count from the end.",
    ("data", "indices"), attrs=(("axis", Attr.INT),),
    shape=lambda o, a, r: shapes.gather_elements(*o, a["axis"]), types=t.gather, evaluate=ref.gather_elements,
    ir=IrDef("gather_elements", (("dest", "out"), ("data", "in"), ("indices", "in")), attrs=("axis",),
             graph="gather_elements",
             doc="dest = numpy.take_along_axis(data, indices, axis); out-of-range indices read the nearest "
             "element (clamped)."),
))
define(OpDef(
    "gather_nd",
    "ONNX GatherND: each row of `indices` (its last dim k) picks the slice data[b..., i0, ..., ik-1] within "
    "its batch (the first `batch_dims` dims); the result is indices[:-1] + data[batch_dims+k:].",
    ("data", "indices"), attrs=(("batch_dims", Attr.INT),),
    shape=lambda o, a, r: shapes.gather_nd(*o, a["batch_dims"]), types=t.gather, evaluate=ref.gather_nd,
    ir=IrDef("gather_nd", (("dest", "out"), ("data", "in"), ("indices", "in")), attrs=("batch_dims",),
             graph="gather_nd",
             doc="dest = ONNX GatherND(data, indices, batch_dims); out-of-range indices are clamped."),
))
def _scatter_types(operands: Sequence[str], _: str | None) -> str:
    """Data and updates of one type (any), i32 or i64 indices; the result has the data's type."""
    data, indices, updates = operands
    t.gather((data, indices), None)
    if updates != data:
        raise shapes.ShapeError(f"updates must have the data's element type {data}, got {updates}")
    return data


_SCATTER_DOC = (
    "`reduction` (none, add, mul, max, min) combines an update with the element it lands on; updates apply "
    "in row-major order, so with none the last of duplicate indices wins. Negative indices count from the end."
)
define(OpDef(
    "scatter_elements",
    f"ONNX ScatterElements: data with updates[p] written at p with p[axis] = indices[p]. {_SCATTER_DOC}",
    ("data", "indices", "updates"), attrs=(("axis", Attr.INT), ("reduction", Attr.STRING)),
    shape=lambda o, a, r: shapes.scatter_elements(*o, a["axis"], a["reduction"]), types=_scatter_types,
    evaluate=ref.scatter_elements,
    ir=IrDef("scatter_elements", (("dest", "out"), ("data", "in"), ("indices", "in"), ("updates", "in")),
             attrs=("axis", "reduction"), graph="scatter_elements",
             doc="dest = data, then each update combined in at its index (rules as glow.scatter_elements); "
             "an update whose index is out of range is skipped."),
))
define(OpDef(
    "scatter_nd",
    f"ONNX ScatterND: data with each slice updates[p] written at data[indices[p]] (indices[..., k] address "
    f"data's first k dims). {_SCATTER_DOC}",
    ("data", "indices", "updates"), attrs=(("reduction", Attr.STRING),),
    shape=lambda o, a, r: shapes.scatter_nd(*o, a["reduction"]), types=_scatter_types, evaluate=ref.scatter_nd,
    ir=IrDef("scatter_nd", (("dest", "out"), ("data", "in"), ("indices", "in"), ("updates", "in")),
             attrs=("reduction",), graph="scatter_nd",
             doc="dest = data, then each update slice combined in at its index (rules as glow.scatter_nd); "
             "an update whose index is out of range is skipped."),
))
define(OpDef(
    "top_k",
    "The i64 indices of the `k` largest (`largest`) or smallest elements along `axis`, best first; equal "
    "elements rank by lower index, NaN above every number (numpy's sort order). The values are a "
    "gather_elements of them.",
    ("input",), attrs=(("axis", Attr.INT), ("k", Attr.INT), ("largest", Attr.BOOL)),
    shape=lambda o, a, r: shapes.top_k(*o, a["axis"], a["k"]),
    types=t.index_of(t.NUMBERS, "an integer or float"), evaluate=ref.top_k,
    ir=IrDef("top_k", (("dest", "out"), ("src", "in")), attrs=("axis", "k", "largest"), graph="top_k",
             doc="dest (i64) = indices of the k best elements of src along axis (rules as glow.top_k)."),
))
define(OpDef(
    "cumsum",
    "Running sums along `axis` (ONNX CumSum): element i is the sum of elements 0..i, or i..n-1 with `reverse`; "
    "`exclusive` leaves element i out of its own sum. f32, f64 or integers: the sums are sequential, and "
    "narrower floats would round at each step (the importer widens them).",
    ("input",), attrs=(("axis", Attr.INT), ("exclusive", Attr.BOOL), ("reverse", Attr.BOOL)),
    shape=lambda o, a, r: shapes.cumsum(*o, a["axis"]),
    types=t.same(("f32", "f64", *t.INTEGERS), "f32, f64 or an integer"), evaluate=ref.cumsum,
    ir=IrDef("cumsum", (("dest", "out"), ("src", "in")), attrs=("axis", "exclusive", "reverse"), graph="cumsum",
             doc="dest = running sums of src along axis (rules as glow.cumsum)."),
))
define(OpDef(
    "convert_to",
    "Elementwise conversion to the result's element type (Glow's ConvertTo): float->int truncates toward zero, "
    "x->i1 is x != 0, i1->x is 0 or 1.",
    ("input",), shape=lambda o, a, r: shapes.unary(*o), types=t.asked, evaluate=ref.convert_to,
    scalar=lambda x, to: s.convert(x[0], to), traits=frozenset((Trait.ELEMENTWISE,)),
    ir=IrDef("convert_to", COPY_OPERANDS, in_place=True, graph="convert_to",
             doc="dest = src converted to dest's element type (rules as glow.convert_to)."),
))
define(OpDef(
    "select", "Elementwise `cond ? lhs : rhs`; cond is i1; all three operands and the result have one shape.",
    ("cond", "lhs", "rhs"), shape=lambda o, a, r: shapes.select(*o), types=t.select,
    evaluate=lambda _, a: np.where(a[0], a[1], a[2]), scalar=lambda x, _: arith.select(x[0], x[1], x[2]),
    traits=frozenset((Trait.ELEMENTWISE,)),
    ir=IrDef("element_select", (("dest", "out"), ("cond", "in"), ("lhs", "in"), ("rhs", "in")), in_place=True,
             graph="select", doc="dest = cond ? lhs : rhs, elementwise."),
))

# Instructions of glow_ir alone.
define_ir(IrDef("alloc_activation", (), results=("buffer",), roles=False,
                doc="A new activation buffer; its lifetime ends at its dealloc_activation."))
define_ir(IrDef("dealloc_activation", (("buffer", "out"),), doc="Ends the lifetime of an activation buffer."))
define_ir(IrDef("tensor_view", (("src", "in"),), results=("view",), roles=False,
                doc="The same bytes as `src`, reinterpreted with the result's (contiguous) shape. No data moves."))
define_ir(IrDef(
    "block_view", (("src", "in"),), attrs=("start",), attr_kinds=(("start", Attr.INTS),), results=("view",),
    roles=False,
    doc="The block of `src` at offset `start` with the result's shape: a strided view of part of `src` (Glow's "
    "TensorView with offsets). No data moves; an instruction writing through it writes that block of `src`.",
))
define_ir(IrDef("copy", COPY_OPERANDS, doc="dest = src.", in_place=True,
                shape=lambda o, a, r: shapes.unary(*o), types=t.ANY))
define_ir(IrDef("insert_tensor", (("dest", "inout"), ("src", "in")), attrs=("start",), graph="insert_tensor",
                doc="Writes src into dest at offset start; the rest of dest is kept."))
