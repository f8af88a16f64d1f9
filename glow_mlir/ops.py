"""Small helpers to build and read `glow` / `glow_ir` ops, which IRDL gives no Python classes.

IRDL ops exist only in MLIR's generic form, so every stage builds them with `ir.Operation.create` and reads
their attributes by name. Keeping those few idioms here lets passes read like the rewrites they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import ml_dtypes
import numpy as np
from mlir import ir

GLOW = "glow."
GLOW_IR = "glow_ir."

# The element types of the convention (docs/ARCHITECTURE.md): numpy dtype -> MLIR spelling, one to one.
NUMPY_TO_MLIR = {
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(np.float16): "f16",
    np.dtype(np.bool_): "i1",
    np.dtype(np.int8): "i8",
    np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
    np.dtype(np.uint8): "ui8",
    np.dtype(np.uint16): "ui16",
    np.dtype(np.uint32): "ui32",
    np.dtype(np.uint64): "ui64",
    # numpy has no bfloat16, float8, float4 or 4- and 2-bit integers: ml_dtypes' types (a byte each but bf16).
    np.dtype(ml_dtypes.bfloat16): "bf16",
    np.dtype(ml_dtypes.float8_e4m3fn): "f8E4M3FN",
    np.dtype(ml_dtypes.float8_e4m3fnuz): "f8E4M3FNUZ",
    np.dtype(ml_dtypes.float8_e5m2): "f8E5M2",
    np.dtype(ml_dtypes.float8_e5m2fnuz): "f8E5M2FNUZ",
    np.dtype(ml_dtypes.float8_e8m0fnu): "f8E8M0FNU",
    np.dtype(ml_dtypes.float4_e2m1fn): "f4E2M1FN",
    np.dtype(ml_dtypes.int4): "i4",
    np.dtype(ml_dtypes.uint4): "ui4",
    np.dtype(ml_dtypes.int2): "i2",
    np.dtype(ml_dtypes.uint2): "ui2",
}
MLIR_TO_NUMPY = {spelling: dtype for dtype, spelling in NUMPY_TO_MLIR.items()}
# The dtypes of ml_dtypes, which the bindings cannot pass as buffers (numpy calls most of them kind 'V').
ML_DTYPES = frozenset(d for d in NUMPY_TO_MLIR if d.type.__module__.startswith("ml_dtypes"))


def create(
    name: str,
    operands: Sequence[ir.Value] = (),
    results: Sequence[ir.Type] = (),
    attributes: dict[str, ir.Attribute] | None = None,
    loc: ir.Location | None = None,
) -> ir.Operation:
    """Creates a generic-form op at the current insertion point."""
    return ir.Operation.create(
        name, results=list(results), operands=list(operands), attributes=attributes or {}, loc=loc
    )


def i64_array(values: Iterable[int]) -> ir.DenseI64ArrayAttr:
    return ir.DenseI64ArrayAttr.get([int(v) for v in values])


def i64(value: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(value))


def f32(value: float) -> ir.FloatAttr:
    return ir.FloatAttr.get(ir.F32Type.get(), float(value))


def boolean(value: bool) -> ir.BoolAttr:
    return ir.BoolAttr.get(bool(value))


def ints(op: ir.Operation | ir.OpView, name: str) -> list[int]:
    """An `array<i64: ...>` attribute as a list."""
    return list(ir.DenseI64ArrayAttr(_attr(op, name)))


def integer(op: ir.Operation | ir.OpView, name: str) -> int:
    """An integer or boolean attribute as an int."""
    return ir.IntegerAttr(_attr(op, name)).value


def floating(op: ir.Operation | ir.OpView, name: str) -> float:
    return ir.FloatAttr(_attr(op, name)).value


def number(attr: ir.Attribute) -> float | int:
    """The value of a float or integer attribute (a splat's `value`, a splat constant's element)."""
    return ir.FloatAttr(attr).value if isinstance(attr, ir.FloatAttr) else ir.IntegerAttr(attr).value


def has_attr(op: ir.Operation | ir.OpView, name: str) -> bool:
    return name in _operation(op).attributes


def _attr(op: ir.Operation | ir.OpView, name: str) -> ir.Attribute:
    return _operation(op).attributes[name]


def _operation(op: ir.Operation | ir.OpView) -> ir.Operation:
    return op.operation if isinstance(op, ir.OpView) else op


def shape(value_or_type: ir.Value | ir.Type) -> tuple[int, ...]:
    """The static shape of a ranked tensor or memref value or type."""
    t = value_or_type.type if isinstance(value_or_type, ir.Value) else value_or_type
    return tuple(ir.ShapedType(t).shape)


def element_type(value_or_type: ir.Value | ir.Type) -> ir.Type:
    t = value_or_type.type if isinstance(value_or_type, ir.Value) else value_or_type
    return ir.ShapedType(t).element_type


def fully_static(t: ir.MemRefType) -> bool:
    """Whether memref type `t` has a static shape, static strides and a static offset: a code generator may read
    all three off the type (a kernel's vector accesses, the bare-pointer calling convention)."""
    strides, offset = t.get_strides_and_offset()
    return t.has_static_shape and ir.ShapedType.get_dynamic_stride_or_offset() not in (*strides, offset)


def tensor_type(dims: Sequence[int], elt: ir.Type | None = None) -> ir.RankedTensorType:
    return ir.RankedTensorType.get([int(d) for d in dims], elt or ir.F32Type.get())


def memref_type(dims: Sequence[int], elt: ir.Type | None = None) -> ir.MemRefType:
    return ir.MemRefType.get([int(d) for d in dims], elt or ir.F32Type.get())


def location_text(op_or_loc: ir.Operation | ir.OpView | ir.Location) -> str:
    """A location as a user reads it: `pool1` for a node name, `f.mlir:3:7` for a file position."""
    loc = op_or_loc if isinstance(op_or_loc, ir.Location) else _operation(op_or_loc).location
    return location_string(str(loc))


def node_names(location: ir.Location, positions: bool = False) -> list[str]:
    """The model nodes a location names: a node's own name, or every name of a fused location (an op fused
    from several nodes). With `positions`, a file position (not `-`, text parsed from a string) counts as a
    name too, `f.mlir:3:7`, which finds the op in its file."""
    if location.is_a_fused():
        return [name for loc in location.locations for name in node_names(loc, positions)]
    if location.is_a_name():
        return [location.name_str]
    if location.is_a_callsite():
        return node_names(location.callee, positions)
    if positions and location.is_a_file() and location.filename != "-":
        return [f"{location.filename}:{location.start_line}:{location.start_col}"]
    return []


def location_string(text: str) -> str:
    """`loc("f.mlir":3:7)` -> `f.mlir:3:7`, `loc("pool1")` -> `pool1`: the printed form without quoting."""
    if text.startswith("loc(") and text.endswith(")"):
        text = text[len("loc(") : -1]
    if text.startswith('"'):
        end = text.index('"', 1)
        text = text[1:end] + text[end + 1 :]
    return text


def concat_segments(types: Sequence[ir.Type]) -> list[int]:
    """Lengths of the runs of equal types: the operandSegmentSizes of a `glow.concat`.

    IRDL variadic groups are homogeneous, so a concat holds its inputs as consecutive runs of one type.
    """
    runs: list[int] = []
    for i, t in enumerate(types):
        if i and t == types[i - 1]:
            runs[-1] += 1
        else:
            runs.append(1)
    return runs


CONCAT_GROUPS = 8


def concat_attributes(types: Sequence[ir.Type], dim: int) -> dict[str, ir.Attribute]:
    """Attributes of a `glow.concat` of inputs of these types; at most CONCAT_GROUPS runs fit one op."""
    runs = concat_segments(types)
    if len(runs) > CONCAT_GROUPS:
        raise ValueError(f"a glow.concat holds at most {CONCAT_GROUPS} runs of equal-typed inputs")
    sizes = runs + [0] * (CONCAT_GROUPS - len(runs))
    return {"dim": i64(dim), "operandSegmentSizes": ir.DenseI32ArrayAttr.get(sizes)}


def roles(op: ir.Operation | ir.OpView) -> list[str]:
    """The @in/@out/@inout role of each operand of a `glow_ir` instruction, as its dialect fixes them."""
    operation = _operation(op)
    if "roles" not in operation.attributes:
        return []
    return [ir.StringAttr(a).value for a in ir.ArrayAttr(operation.attributes["roles"])]


def dialect_ops(block: ir.Block, prefix: str) -> list[ir.Operation]:
    """The ops of a block whose name starts with `prefix`, as a list safe to mutate while iterating."""
    return [op.operation for op in block.operations if op.operation.name.startswith(prefix)]


def functions(module: ir.Module | ir.Operation) -> list[ir.Operation]:
    """The `func.func` ops of a module."""
    body = module.body if isinstance(module, ir.Module) else module.regions[0].blocks[0]
    return [op.operation for op in body.operations if op.operation.name == "func.func"]


def walk_ops(root: ir.Operation) -> list[ir.Operation]:
    """All ops nested in `root` (root excluded), in pre-order, as a list."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op != root:
            found.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def mlir_type(dtype: np.dtype | type | str) -> ir.Type:
    """The MLIR element type of a numpy dtype of the convention (needs an active context).

    Raises ValueError naming the dtype for any other (e.g. complex64 or a string).
    """
    try:
        resolved = np.dtype(dtype)
    except TypeError:
        resolved = None
    if resolved not in NUMPY_TO_MLIR:
        allowed = ", ".join(d.name for d in NUMPY_TO_MLIR)
        name = dtype if resolved is None else resolved.name
        raise ValueError(f"element type {name} is not one of the supported numpy dtypes ({allowed})")
    return ir.Type.parse(NUMPY_TO_MLIR[resolved])


def dense_array(attr: ir.DenseElementsAttr, *, copy: bool = True) -> np.ndarray:
    """The array a dense attr holds, in its element type's numpy dtype and shape; with `copy=False`, a
    read-only view of the attr's own buffer where numpy reads its type (for readers that copy what they keep:
    weight packing, which otherwise copied every weight once more).

    The bindings read no bf16, float8, float4 or sub-byte integer elements (ml_dtypes' types), neither as a
    buffer nor one by one, so those are read from the attr's text: MLIR prints each element exactly (a
    number, or the hex of its bits where a decimal would not round-trip), or a large attr as one hex blob of
    its bytes.
    """
    t = ir.ShapedType(attr.type)
    dtype = numpy_dtype(t.element_type)
    if dtype not in ML_DTYPES:
        return np.array(attr) if copy else np.asarray(attr)
    bits_type = np.dtype(f"uint{8 * dtype.itemsize}")
    body = str(attr)[len("dense<") : str(attr).rindex("> :")]
    if body.startswith('"0x'):
        return np.frombuffer(bytes.fromhex(body[3:-1]), bits_type).view(dtype).reshape(t.shape).copy()
    tokens = [token.strip() for token in body.replace("[", "").replace("]", "").split(",")]
    values = [
        np.array(int(token, 16), bits_type).view(dtype) if token.startswith("0x") else np.array(float(token)).astype(dtype)
        for token in tokens
    ]
    array = np.array(values, dtype)
    # One value is a splat; otherwise the text lists every element in row-major order.
    return np.broadcast_to(array.reshape(()), t.shape).copy() if len(values) == 1 else array.reshape(t.shape)


def dense_attr(array: np.ndarray, t: ir.ShapedType) -> ir.DenseElementsAttr:
    """A dense attr of type `t` holding `array`; ml_dtypes' types go in as the integers of their bits (one
    byte per element for the sub-byte ones, whose low bits MLIR reads)."""
    data = np.ascontiguousarray(array).reshape(array.shape)
    if data.dtype in ML_DTYPES:
        data = data.view(np.dtype(f"int{8 * data.dtype.itemsize}"))
    return ir.DenseElementsAttr.get(data, type=t)


def numpy_dtype(elt: ir.Type) -> np.dtype:
    """The numpy dtype of an MLIR element type of the convention; ValueError for any other (si8, f80, index)."""
    dtype = MLIR_TO_NUMPY.get(str(elt))
    if dtype is None:
        raise ValueError(f"element type {elt} is not one of {', '.join(MLIR_TO_NUMPY)}")
    return dtype


# Rows of an array's first axis transposed at a time: a band read in order and written strided is 1.7-2.8x
# quicker than numpy's element order over the whole array, whose writes stride through all of memory (VGG-19's
# 4096 x 25088 float32 327 -> 115 ms, a 2560 x 1280 1x1 filter to HWIO 5.4 -> 2.7 ms; bands of 32 to 512 rows
# measured, 64 best overall).
TRANSPOSE_ROWS = 64


def transposed(array: np.ndarray, perm: Sequence[int]) -> np.ndarray:
    """A C-contiguous copy of `array` transposed by `perm`, copied in bands of its first axis when that axis
    moves (a filter OIHW -> HWIO, a matrix's transpose)."""
    perm = list(perm)
    if perm[0] == 0 or array.shape[0] <= TRANSPOSE_ROWS:
        return np.ascontiguousarray(array.transpose(perm))
    out = np.empty([array.shape[p] for p in perm], array.dtype)
    band = [slice(None)] * array.ndim
    for row in range(0, array.shape[0], TRANSPOSE_ROWS):
        band[perm.index(0)] = slice(row, row + TRANSPOSE_ROWS)
        out[tuple(band)] = array[row : row + TRANSPOSE_ROWS].transpose(perm)
    return out
