"""glow-ir-to-linalg's lowering of roi_align (ONNX RoiAlign) on an NCHW source: scf loops, since each box's
grid of samples is known only at run time.

Per box: its corners (scaled, shifted half a pixel with half_pixel), each cell's size and the samples per
axis (sampling_ratio, or ceil(box / output) when it is 0). The sampling is separable, so the two pixels each
sample row and column reads and their weights are tabulated once per box (onnxruntime's pre_calc, kept as a
row table and a column table on the stack, sized at run time by the most samples any box takes); then each
channel's cells sum (or take the max of) their samples in a register. The arithmetic is the reference's
(onnx/reference/ops/op_roi_align.py) in the source's type: a sample more than a pixel outside the image
weighs 0, one within a pixel of an edge reads the edge. Every index is clamped into the buffers, so no box,
NaN or batch index reads outside them (an index out of range reads the nearest image), and the samples per
cell along an axis are at most ROI_ALIGN_MAX_SAMPLES, so that no box overflows the stack.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, memref, scf, vector
from mlir.dialects import math as mlir_math

from glow_mlir import ops
from glow_mlir.codegen.builders import index, loop_nest, rank4, reduce_loop, vector_lanes
from glow_mlir.codegen.table import fail, lowering
from glow_mlir.opdefs import scalar as s
from glow_mlir.opdefs.reference import ROI_ALIGN_MAX_SAMPLES

@lowering("roi_align")
def _roi_align(op: ir.Operation) -> None:
    lower_roi_align(op, channels_last=False)


def lower_roi_align(op: ir.Operation, channels_last: bool) -> None:
    """roi_align of an NCHW source into [R, C, OH, OW], or with `channels_last` of an NHWC one into
    [R, OH, OW, C], where each sample reads a vector of channels at a time (the CPU backend's
    cpu_roi_align_nhwc)."""
    dest, src, rois, batch = op.operands
    dims, out_dims = rank4(op, src), rank4(op, dest)
    n, c, h, w = (dims[0], dims[3], dims[1], dims[2]) if channels_last else dims
    r, out_c, out_h, out_w = (out_dims[0], out_dims[3], out_dims[1], out_dims[2]) if channels_last else out_dims
    fits = (out_c, out_h, out_w) == (c, *ops.ints(op, "output_size"))
    if not fits or ops.shape(rois) != (r, 4) or ops.shape(batch) != (r,):
        boxes = f"rois {list(ops.shape(rois))}, batch_indices {list(ops.shape(batch))}"
        raise fail(op, f"{boxes} and src {list(dims)} do not make dest {list(out_dims)}")
    ratio, half = ops.integer(op, "sampling_ratio"), bool(ops.integer(op, "half_pixel"))
    largest = ir.StringAttr(op.attributes["mode"]).value == "max"
    t = ops.element_type(src)

    def f(value: float) -> ir.Value:
        return s.constant(t, value)

    def geometry(i: ir.Value) -> tuple[ir.Value, ...]:
        """Box i's top-left corner, size and samples per cell, along y then x."""
        scale, shift = f(ops.floating(op, "spatial_scale")), f(0.5 if half else 0.0)
        x0, y0, x1, y1 = (arith.subf(arith.mulf(memref.load(rois, [i, index(k)]), scale), shift) for k in range(4))
        size_h, size_w = arith.subf(y1, y0), arith.subf(x1, x0)
        if not half:
            size_h, size_w = arith.maxnumf(size_h, f(1.0)), arith.maxnumf(size_w, f(1.0))
        return y0, size_h, _samples(size_h, out_h, ratio), x0, size_w, _samples(size_w, out_w, ratio)

    # One pair of tables for every box, sized by the most samples any box takes (allocas in the box loop would
    # grow the stack each box).
    most = [index(ratio), index(ratio)]
    if not ratio:
        scan = scf.ForOp(index(0), index(r), index(1), most)
        with ir.InsertionPoint(scan.body):
            _, _, grid_h, _, _, grid_w = geometry(scan.induction_variable)
            scf.YieldOp([arith.maxsi(a, b) for a, b in zip(scan.inner_iter_args, (grid_h, grid_w), strict=True)])
        most = list(scan.results)
    rows, cols = _Table(t, out_h, most[0], h), _Table(t, out_w, most[1], w)

    def box(ivs: list[ir.Value]) -> None:
        (i,) = ivs
        image = arith.index_cast(ir.IndexType.get(), memref.load(batch, [i]))
        image = arith.maxsi(arith.minsi(image, index(n - 1)), index(0))
        y0, size_h, grid_h, x0, size_w, grid_w = geometry(i)
        rows.fill(y0, arith.divf(size_h, f(out_h)), grid_h)
        cols.fill(x0, arith.divf(size_w, f(out_w)), grid_w)
        samples = arith.muli(grid_h, grid_w)
        count = _as_float(arith.maxsi(samples, index(1)), t)
        # A cell with no samples is 0; a max starts below every value.
        empty = arith.cmpi(arith.CmpIPredicate.eq, samples, index(0))
        start = arith.select(empty, f(0.0), s.lowest(t)) if largest else f(0.0)

        def cell(k: ir.Value, ph: ir.Value, pw: ir.Value, width: int) -> None:
            """Channels [k, k + width) of cell (ph, pw), a vector of them when width > 1."""
            vector_type = ir.VectorType.get([width], t) if width > 1 else None

            def at(first: ir.Value, y: ir.Value, x: ir.Value) -> list[ir.Value]:
                return [first, y, x, k] if channels_last else [first, k, y, x]

            def load(y: ir.Value, x: ir.Value) -> ir.Value:
                if vector_type is None:
                    return memref.load(src, at(image, y, x))
                return vector.load(vector_type, src, at(image, y, x))

            def spread(v: ir.Value) -> ir.Value:
                return v if vector_type is None else vector.broadcast(vector_type, v)

            def sample(iy: ir.Value, ix: ir.Value, acc: ir.Value) -> ir.Value:
                row, col = rows.at(ph, iy, grid_h), cols.at(pw, ix, grid_w)
                terms = [arith.mulf(spread(arith.mulf(wy, wx)), load(y, x)) for y, wy in row for x, wx in col]
                if largest:
                    best = arith.maximumf(arith.maximumf(terms[0], terms[1]), arith.maximumf(terms[2], terms[3]))
                    return arith.maximumf(acc, best)
                return arith.addf(acc, arith.addf(arith.addf(arith.addf(terms[0], terms[1]), terms[2]), terms[3]))

            def sample_row(iy: ir.Value, acc: ir.Value) -> ir.Value:
                return reduce_loop(grid_w, acc, lambda ix, carried: sample(iy, ix, carried))

            acc = reduce_loop(grid_h, spread(start), sample_row)
            result = acc if largest else arith.divf(acc, spread(count))
            if vector_type is None:
                memref.store(result, dest, at(i, ph, pw))
            else:
                vector.store(result, dest, at(i, ph, pw))

        if not channels_last:
            loop_nest([c, out_h, out_w], lambda ivs: cell(*ivs, 1))
            return
        # Channels last: a vector of them at a time, the rest one by one.
        lanes = vector_lanes(t)
        full = c - c % lanes

        def pixel(ivs: list[ir.Value]) -> None:
            ph, pw = ivs
            if full:
                each = scf.ForOp(index(0), index(full), index(lanes))
                with ir.InsertionPoint(each.body):
                    cell(each.induction_variable, ph, pw, lanes)
                    scf.YieldOp([])
            if full < c:
                rest = scf.ForOp(index(full), index(c), index(1))
                with ir.InsertionPoint(rest.body):
                    cell(rest.induction_variable, ph, pw, 1)
                    scf.YieldOp([])

        loop_nest([out_h, out_w], pixel)

    loop_nest([r], box)


def _as_float(i: ir.Value, t: ir.Type) -> ir.Value:
    """Index `i` as a float of type `t`."""
    return arith.sitofp(t, arith.index_cast(ir.IntegerType.get_signless(64), i))


class _Table:
    """Along one axis of `length` pixels, for each of `cells` cells' samples, at most `most` a cell: the two
    pixels a sample reads and their weights (0 for a sample beyond [-1, length]), filled per box."""

    def __init__(self, t: ir.Type, cells: int, most: ir.Value, length: int) -> None:
        size = arith.muli(index(cells), most)
        dynamic = ir.ShapedType.get_dynamic_size()
        self.pixels = memref.alloca(ir.MemRefType.get([dynamic, 2], ir.IndexType.get()), [size], [])
        self.weights = memref.alloca(ir.MemRefType.get([dynamic, 2], t), [size], [])
        self.t, self.cells, self.length = t, cells, length

    def fill(self, start: ir.Value, cell: ir.Value, grid: ir.Value) -> None:
        """The box's samples start + p cell + (j + 1/2) cell / grid, `grid` a cell, at slots p grid + j."""
        t, length = self.t, self.length
        step = arith.divf(cell, _as_float(grid, t))
        i64 = ir.IntegerType.get_signless(64)

        def f(value: float) -> ir.Value:
            return s.constant(t, value)

        def sample(p: ir.Value, j: ir.Value) -> None:
            base = arith.addf(start, arith.mulf(_as_float(p, t), cell))
            pos = arith.addf(base, arith.mulf(arith.addf(_as_float(j, t), f(0.5)), step))
            inside = arith.andi(
                arith.cmpf(arith.CmpFPredicate.OGE, pos, f(-1.0)), arith.cmpf(arith.CmpFPredicate.OLE, pos, f(length))
            )
            # Within [0, length] (NaN to 0) before fptosi; a sample outside weighs 0 anyway.
            pos = arith.minnumf(arith.maxnumf(pos, f(0.0)), f(length))
            low = arith.index_cast(ir.IndexType.get(), arith.fptosi(i64, pos))
            last = index(length - 1)
            edge = arith.cmpi(arith.CmpIPredicate.sge, low, last)
            high = arith.select(edge, last, arith.addi(low, index(1)))
            low = arith.select(edge, last, low)
            frac = arith.subf(arith.select(edge, f(length - 1), pos), _as_float(low, t))
            slot = arith.addi(arith.muli(p, grid), j)
            for side, (pixel, weight) in enumerate(((low, arith.subf(f(1.0), frac)), (high, frac))):
                memref.store(pixel, self.pixels, [slot, index(side)])
                memref.store(arith.select(inside, weight, f(0.0)), self.weights, [slot, index(side)])

        each = scf.ForOp(index(0), index(self.cells), index(1))
        with ir.InsertionPoint(each.body):
            inner = scf.ForOp(index(0), grid, index(1))
            with ir.InsertionPoint(inner.body):
                sample(each.induction_variable, inner.induction_variable)
                scf.YieldOp([])
            scf.YieldOp([])

    def at(self, p: ir.Value, j: ir.Value, grid: ir.Value) -> list[tuple[ir.Value, ir.Value]]:
        """Sample j of cell p: its (pixel, weight) pairs, low then high."""
        slot = arith.addi(arith.muli(p, grid), j)
        return [
            (memref.load(self.pixels, [slot, index(side)]), memref.load(self.weights, [slot, index(side)]))
            for side in range(2)
        ]


def _samples(size: ir.Value, cells: int, ratio: int) -> ir.Value:
    """The samples per cell along an axis: `ratio`, or ceil(size / cells) when 0 (none when that is below 1)."""
    if ratio:
        return index(ratio)
    t = size.type
    count = mlir_math.ceil(arith.divf(size, s.constant(t, cells)))
    # Clamped in float before the conversion (an infinite or NaN size would overflow fptosi), to what the stack
    # tables hold (ROI_ALIGN_MAX_SAMPLES, as the evaluator).
    count = arith.minnumf(arith.maxnumf(count, s.constant(t, 0.0)), s.constant(t, float(ROI_ALIGN_MAX_SAMPLES)))
    return arith.index_cast(ir.IndexType.get(), arith.fptosi(ir.IntegerType.get_signless(64), count))
