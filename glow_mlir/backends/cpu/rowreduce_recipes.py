"""glow-cpu-schedule's recipe of row reductions: a linalg.generic that combines (add, max, min, mul) the f32
elements of each row along its innermost, contiguous dim, as layer and instance norms' statistics and
softmax's max and sum are written.

The vector recipe of recipes.py tiles such a reduction into vectors along the row and reduces each vector to
the row's scalar accumulator: `vector.multi_reduction` lowers to one ordered chain of scalar adds (a float
sum is not reassociated), and a row whose length is no multiple of 8 gets a masked vector that lowers to a
select per lane. wav2vec2's instance norm over rows of 799 spent about 1.2 ns per element there, a quarter of
the model's run time. Here each row is read as vectors into 4 vector accumulators (16 f32 lanes each, so
that the FMA and add latency is covered), the row's rest as whole vectors and one masked load, and only
the final vector is reduced across its lanes, as a tree (`fastmath<reassoc>`). A max or min keeps a NaN flag
per lane beside its values (`_ORDERED`), so that its values combine as one maxps / minps each. The loop nest is
emitted directly as vector code: the kernel needs no transform steps, only the shared vector tail.

The sums' association differs from a sequential sum, as in any vectorized reduction.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, memref, scf, vector

from glow_mlir.backends.cpu.recipes import Recipe, index_constant, is_float32, static_shape
from glow_mlir.backends.cpu.vector_body import vectorized
from glow_mlir.codegen.builders import has_identity_layout

# f32 lanes of one zmm register, and the accumulators a row is spread over (4 cover the add latency).
LANES = 16
ACCUMULATORS = 4
# The combiners a row reduction may use: their vector.reduction kind and identity element.
_COMBINERS = {
    "arith.addf": (vector.CombiningKind.ADD, 0.0),
    "arith.mulf": (vector.CombiningKind.MUL, 1.0),
    "arith.maximumf": (vector.CombiningKind.MAXIMUMF, float("-inf")),
    "arith.minimumf": (vector.CombiningKind.MINIMUMF, float("inf")),
    "arith.maxnumf": (vector.CombiningKind.MAXNUMF, float("-inf")),
    "arith.minnumf": (vector.CombiningKind.MINNUMF, float("inf")),
}
_BODY_DIALECTS = ("arith.", "math.")


def row_reduction_recipe(op: ir.Operation) -> Recipe | None:
    """The row-reduction kernel of `op`, or None when `op` is not an f32 row reduction of LANES or more
    elements per row (identity input maps, output map dropping the last dim, one combiner of the output)."""
    shape = _row_reduction_shape(op)
    if shape is None:
        return None
    combiner = _combiner(op)
    if combiner is None:
        return None
    loop = _emit(op, shape, combiner)
    op.erase()
    return Recipe.of(loop, lambda handle: None)


def _row_reduction_shape(op: ir.Operation) -> list[int] | None:
    """The loop ranges of `op` when it reduces rows: identity-layout memrefs of f32 only, every loop parallel
    but the last, which every input walks along its last dim and the output drops."""
    if op.name != "linalg.generic" or not all(isinstance(v.type, ir.MemRefType) for v in op.operands):
        return None
    if not all(is_float32(v) and static_shape(v) is not None for v in op.operands):
        return None
    kinds = [str(k) for k in ir.ArrayAttr(op.attributes["iterator_types"])]
    if len(kinds) < 2 or any("parallel" not in k for k in kinds[:-1]) or "reduction" not in kinds[-1]:
        return None
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    rank = len(kinds)
    if any(m != ir.AffineMap.get_identity(rank) for m in maps[:-1]):
        return None
    rows = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(d) for d in range(rank - 1)])
    if maps[-1] != rows or len(op.results):
        return None
    if not all(has_identity_layout(v) for v in op.operands):
        return None
    shape = list(static_shape(op.operands[0]) or [])
    if shape[-1] < LANES:
        return None
    return shape


def _combiner(op: ir.Operation) -> ir.Operation | None:
    """The body's op that combines the output element with the rest (`yield combiner(out, t)`), when the
    output element is read only there and every other body op is arith or math."""
    body = op.regions[0].blocks[0]
    out = body.arguments[len(body.arguments) - 1]
    yielded = list(body.operations)[-1]
    if len(yielded.operands) != 1 or isinstance(yielded.operands[0].owner, ir.Block):
        return None
    combiner = yielded.operands[0].owner
    if combiner.name not in _COMBINERS or len(list(out.uses)) != 1 or not any(v == out for v in combiner.operands):
        return None
    if "fastmath" in combiner.attributes and str(combiner.attributes["fastmath"]) != "#arith.fastmath<none>":
        return None
    for inner in list(body.operations)[:-1]:
        if not inner.name.startswith(_BODY_DIALECTS) or len(inner.regions):
            return None
    return combiner.operation


def _emit(op: ir.Operation, shape: list[int], combiner: ir.Operation) -> ir.Operation:
    """The loop nest over the rows of `op` (one scf.for per parallel dim), each row reduced in vectors;
    returns the outermost loop."""
    rows = shape[:-1]
    with op.location, ir.InsertionPoint(op):
        outer = scf.ForOp(index_constant(0), index_constant(rows[0]), index_constant(1))
        loops = [outer]
        for size in rows[1:]:
            with ir.InsertionPoint(loops[-1].body):
                loops.append(scf.ForOp(index_constant(0), index_constant(size), index_constant(1)))
        with ir.InsertionPoint(loops[-1].body):
            _row(op, [loop.induction_variable for loop in loops], shape[-1], combiner)
        for loop in loops:
            with ir.InsertionPoint(loop.body):
                scf.YieldOp([])
    return outer.operation


# The NaN-propagating max and min (arith.maximumf / minimumf) combine a row as x86's maxps / minps do (one
# instruction: select(x > acc, x, acc)), which drops a NaN x, while a flag per lane records whether one was met;
# the row is NaN when any lane's flag is set. Combined as maximumf, each vector cost a compare, an unordered
# compare, a mask or and a masked move in the loop-carried chain and a sign-aware horizontal reduction: a row
# max ran 7x slower than a row sum (softmax's max over [8, 128, 128]: 19 us against the sum's 2.8).
_ORDERED = {"arith.maximumf": arith.CmpFPredicate.OGT, "arith.minimumf": arith.CmpFPredicate.OLT}


def _row(op: ir.Operation, at: list[ir.Value], n: int, combiner: ir.Operation) -> None:
    """Reduces the row at indices `at` into the output element there."""
    f32 = ir.F32Type.get()
    vec = ir.VectorType.get([LANES], f32)
    flags_type = ir.VectorType.get([LANES], ir.IntegerType.get_signless(1))
    kind, identity_value = _COMBINERS[combiner.name]
    identity = arith.ConstantOp(vec, ir.DenseElementsAttr.get_splat(vec, ir.FloatAttr.get(f32, identity_value)))
    inputs = list(op.operands)[:-1]
    output = op.operands[-1]
    count = min(ACCUMULATORS, n // LANES)
    step = count * LANES
    main = n - n % step
    ordered = _ORDERED.get(combiner.name)

    def term(j: ir.Value, mask: ir.Value | None = None) -> ir.Value:
        """The body's value before the combiner for the LANES elements of the row from j."""
        if mask is None:
            loaded = [vector.LoadOp(vec, x, [*at, j]).result for x in inputs]
        else:
            loaded = [vector.MaskedLoadOp(vec, x, [*at, j], mask, identity.result).result for x in inputs]
        body = op.regions[0].blocks[0]
        out = body.arguments[len(body.arguments) - 1]
        # The value the combiner combines with the output element.
        [combined] = [v for v in combiner.operands if v != out]
        return vectorized(op, loaded, until=combiner)(combined)

    def combine(acc: list[ir.Value], value: ir.Value) -> list[ir.Value]:
        """The accumulator (and, for max and min, its NaN flags) with `value` combined in."""
        if ordered is None:
            return [_combine(combiner, acc[0], value)]
        kept = arith.select(arith.cmpf(ordered, value, acc[0]), value, acc[0])
        return [kept, arith.ori(acc[1], arith.cmpf(arith.CmpFPredicate.UNO, value, value))]

    start_state = [identity.result]
    if ordered is not None:
        no_nan = ir.DenseElementsAttr.get_splat(flags_type, ir.IntegerAttr.get(flags_type.element_type, 0))
        start_state.append(arith.ConstantOp(flags_type, no_nan).result)
    width = len(start_state)
    loop = scf.ForOp(index_constant(0), index_constant(main), index_constant(step), start_state * count)
    with ir.InsertionPoint(loop.body):
        j = loop.induction_variable
        carried = list(loop.inner_iter_args)
        yielded = []
        for u in range(count):
            at_j = j if u == 0 else arith.AddIOp(j, index_constant(u * LANES)).result
            yielded += combine(carried[u * width : (u + 1) * width], term(at_j))
        scf.YieldOp(yielded)
    results = list(loop.results)
    state = results[:width]
    for u in range(1, count):
        partial = results[u * width : (u + 1) * width]
        state = combine(state, partial[0])
        if ordered is not None:
            state[1] = arith.ori(state[1], partial[1])
    start = main
    while start + LANES <= n:
        state = combine(state, term(index_constant(start)))
        start += LANES
    if start < n:
        mask = vector.ConstantMaskOp(flags_type, [n - start]).result
        # Masked-off lanes load the identity, which changes neither the value nor the flags.
        masked = combine(state, term(index_constant(start), mask))
        state = [arith.SelectOp(mask, new, old).result for new, old in zip(masked, state, strict=True)]
    reassoc = ir.Attribute.parse("#arith.fastmath<reassoc>")
    if ordered is None:
        row = vector.ReductionOp(f32, ir.Attribute.parse(f"#vector.kind<{kind.name.lower()}>"), state[0],
                                 fastmath=reassoc).result  # fmt: skip
    else:
        # No lane of the value holds a NaN (the flags do): its lanes reduce as maxps / minps do.
        numeric = "maxnumf" if combiner.name == "arith.maximumf" else "minnumf"
        nnan = ir.Attribute.parse("#arith.fastmath<nnan,reassoc>")
        value = vector.ReductionOp(f32, ir.Attribute.parse(f"#vector.kind<{numeric}>"), state[0], fastmath=nnan)
        any_nan = vector.ReductionOp(flags_type.element_type, ir.Attribute.parse("#vector.kind<or>"), state[1])
        nan = arith.ConstantOp(f32, ir.FloatAttr.get(f32, float("nan"))).result
        row = arith.select(any_nan.result, nan, value.result)
    old = memref.LoadOp(output, at).result
    memref.StoreOp(_combine(combiner, old, row), output, at)


def _combine(combiner: ir.Operation, a: ir.Value, b: ir.Value) -> ir.Value:
    """`combiner`'s op (with its attributes) on a and b."""
    attributes = {name: combiner.attributes[name] for name in combiner.attributes}
    return ir.Operation.create(combiner.name, results=[a.type], operands=[a, b], attributes=attributes).result
