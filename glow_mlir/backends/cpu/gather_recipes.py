"""The CPU backend's gather kernel, for glow-cpu-schedule (schedule.py): the recipe of the linalg.generic that
codegen/tensor.py makes of a `glow_ir.gather` (marked with its axis, GATHER_AXIS_ATTR), which replaces it with
vector code written here. The generic reads one element per iteration through its index (a load of the index,
wrapped and clamped, a scalar load and store): a nearest-neighbour resize, which ONNX exporters write as gathers
along H and W, ran a style transfer network's 2x up-sampling of 64 channels at 64x64 in 0.28 ms.

Per position of the output's outer dims (scalar loops), its last dim runs in vectors of 16 (the last masked):
- gathered along an axis before the last, the data's last dim is the output's: each vector is one contiguous
  load of the data at the gathered index (read once per row of the output, clamped into the data as
  codegen/tensor.py's gathers: a token id past the table reads its last row) and one store, a row copy (an
  embedding lookup, a resize along H, a reflection pad's border rows);
- gathered along the last axis, each vector's 16 indices are loaded as a vector, their signs fixed, clamped, and the
  data row read by one vector.gather (a resize along W, NCHW).
Data of static shape whose last dims have unit stride, of any element type the vector code takes (a quantized
model's uint8 expert weights, gathered per token, ran as loops: kimi-linear's dynamic-quantized MoE 0.90x
onnxruntime); along the last axis 32-bit elements only. Other gathers keep the generic's loops.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, memref, scf, vector

from glow_mlir import ops
from glow_mlir.backends.cpu.conv_recipes import LANES
from glow_mlir.backends.cpu.recipes import VECTOR_TYPES, Recipe, constant_ints, recipe, static_shape
from glow_mlir.backends.cpu.vector_body import lanes_mask, load, splat, store, zeros
from glow_mlir.codegen.builders import index
from glow_mlir.codegen.tensor import GATHER_AXIS_ATTR, in_range


def _data(op: ir.Operation) -> ir.Value:
    """The gathered buffer: the one the generic's body loads from."""
    [found] = [inner.operands[0] for inner in ops.walk_ops(op) if inner.name == "memref.load"]
    return found


def _unit_last_stride(value: ir.Value) -> bool:
    """A memref whose last dim (if any: scalar indices have none) is contiguous."""
    strides = ir.MemRefType(value.type).get_strides_and_offset()[0]
    return not strides or strides[-1] == 1


def is_gather(op: ir.Operation) -> bool:
    """A marked gather this module's kernel runs (module docstring): an output of rank 2 or more, and along the
    last axis rows of at least one vector (a reflection pad's border columns, 1 to 4 per row, took 1.3x the
    generic's time as masked vector gathers) of indices (a scalar index drops the last axis: the output's last
    dim is then no contiguous row of the data)."""
    if GATHER_AXIS_ATTR not in op.attributes:
        return False
    indices, dest = op.operands
    data = _data(op)
    values = (data, indices, dest)
    element = str(ops.element_type(data))
    if any(static_shape(v) is None for v in values) or element not in VECTOR_TYPES:
        return False
    out = static_shape(dest)
    along_last = ir.IntegerAttr(op.attributes[GATHER_AXIS_ATTR]).value == len(static_shape(data)) - 1
    # A vector.gather of narrower elements than 32 bits has no instruction to become.
    if along_last and (not static_shape(indices) or out[-1] < LANES or element not in ("f32", "i32")):
        return False
    return len(out) >= 2 and all(_unit_last_stride(v) for v in values)


@recipe("linalg.generic", when=is_gather)
def gather_recipe(op: ir.Operation) -> Recipe:
    """A gather as row copies or vector gathers (module docstring)."""
    indices, dest = op.operands
    with op.location, ir.InsertionPoint(op):
        root = Gather(_data(op), indices, dest, ir.IntegerAttr(op.attributes[GATHER_AXIS_ATTR]).value).emit()
    op.erase()
    return Recipe.of(root, lambda _: None)


class Gather:
    """The buffers and axis of one gather, and the emitter of its loops."""

    def __init__(self, data: ir.Value, indices: ir.Value, dest: ir.Value, axis: int) -> None:
        self.data, self.indices, self.dest, self.axis = data, indices, dest, axis
        self.out = static_shape(dest)
        self.count = len(static_shape(indices))
        self.size = static_shape(data)[axis]
        self.index_type = ops.element_type(indices)
        # Constant indices (a resize's, a reflection pad's) already in [0, size) need neither wrapping nor
        # clamping: those two ops per vector of a vector.gather cost Segformer's decoder 13 %.
        known = constant_ints(indices)
        self.checked = known is None or not ((known >= 0) & (known < self.size)).all()
        # Along the last axis: the output's last dim is the indices' last.
        self.along_last = axis + self.count == len(self.out)
        self.vector = ir.VectorType.get([LANES], ops.element_type(data))

    def emit(self) -> ir.Operation:
        """A loop per output dim but the last (the first is the root), the last in vectors."""
        root = scf.ForOp(index(0), index(self.out[0]), index(1))
        with ir.InsertionPoint(root.body):
            self._nest([root.induction_variable])
            scf.YieldOp([])
        return root.operation

    def _nest(self, position: list[ir.Value]) -> None:
        if len(position) < len(self.out) - 1:
            loop = scf.ForOp(index(0), index(self.out[len(position)]), index(1))
            with ir.InsertionPoint(loop.body):
                self._nest([*position, loop.induction_variable])
                scf.YieldOp([])
            return
        source = None
        if not self.along_last:
            # The row's one index, read once.
            raw = memref.load(self.indices, position[self.axis : self.axis + self.count])
            at = arith.index_cast(ir.IndexType.get(), self._in_range(raw))
            source = [*position[: self.axis], at, *position[self.axis + self.count :]]
        full, tail = divmod(self.out[-1], LANES)
        if full:
            loop = scf.ForOp(index(0), index(full * LANES), index(LANES))
            with ir.InsertionPoint(loop.body):
                self._vector(position, source, loop.induction_variable, LANES)
                scf.YieldOp([])
        if tail:
            self._vector(position, source, index(full * LANES), tail)

    def _vector(self, position: list[ir.Value], source: list[ir.Value] | None, x0: ir.Value, valid: int) -> None:
        """Output elements x0 .. x0 + valid - 1 of the row at `position`."""
        mask = lanes_mask(valid, LANES)
        if source is not None:
            value = load(self.data, [*source, x0], self.vector, mask)
        else:
            it = ir.VectorType.get([LANES], self.index_type)
            at = [*position[self.axis :], x0]
            if mask is None:
                raw = vector.load(it, self.indices, at)
            else:
                raw = vector.maskedload(it, self.indices, at, mask, _splat(it, 0))
            lanes = mask if mask is not None else _all_lanes()
            start = [*position[: self.axis], index(0)]
            value = vector.gather(self.vector, self.data, start, self._in_range(raw), lanes, zeros(self.vector))
        store(value, self.dest, [*position, x0], mask)

    def _in_range(self, raw: ir.Value) -> ir.Value:
        """The index (or vector of them) wrapped and clamped into the data, as codegen/tensor.py's gathers."""
        return in_range(raw, self.size) if self.checked else raw


def _all_lanes() -> ir.Value:
    """A mask of all 16 lanes."""
    return vector.constant_mask(ir.VectorType.get([LANES], ir.IntegerType.get_signless(1)), [LANES])


def _splat(t: ir.VectorType, value: int) -> ir.Value:
    """A vector of type `t` (integers) of `value`."""
    return splat(t, ir.IntegerAttr.get(ir.VectorType(t).element_type, value))
