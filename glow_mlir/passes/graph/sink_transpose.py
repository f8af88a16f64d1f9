"""glow-sink-transpose: moves transposes down the graph until they cancel or meet a layout-sensitive op
(the transpose part of Glow's SinkCode).

Layout conversions (NHWC <-> NCHW around an imported subgraph, Transpose nodes in ONNX models) often come in
pairs separated by elementwise work. An elementwise op does not care about layout, so op(transpose(x, s))
equals transpose(op(x), s); sinking every transpose below such ops brings pairs together, where they compose
into one transpose or cancel. Rewrites:

- transpose(transpose(x, a), b) -> transpose(x, c) with c[i] = a[b[i]], or x when c is the identity
- transpose(splat) -> a splat of the transposed shape; transpose(constant) -> the transposed constant (when
  the transpose is the constant's only user, so the data is not stored twice)
- unary elementwise op(transpose(x, s)) -> transpose(op(x), s)
- binary elementwise op / select whose operands are all transposes with one shuffle s, splats, constants of
  one value (as splats), or constants used only there (at least one a transpose) -> transpose(op(inputs
  untransposed), s)
- concat(transpose(a, s), transpose(b, s), ..., dim) -> transpose(concat(a, b, ..., s[dim]), s): the
  channel concat of NHWC layers (SqueezeNet's fire modules) once the layout pass moved them
- batched_reduce_*(transpose(x, s), axes) -> batched_reduce_*(x, s[axes]), transposed by the order its kept
  dims had (usually none: a global pool over H and W of an NHWC tensor keeps N and C in order)
- a transpose that keeps the order of every dim larger than 1 moves no data: it becomes a reshape (the
  [N, 1, 1, C] -> [N, C, 1, 1] after a global pool, before the flatten)
- reshape(transpose(x, s)) -> transpose(reshape(x), s') when the reshape only splits dims, or merges dims that
  are neighbours in x's order (a pure regrouping of x's dims): a 3-D convolution's planes folded into the
  batch and back, or a (D, H x W) view of them, which are views of one NDHWC buffer; the transposes of
  consecutive layers then meet and cancel through them
- insert_tensor(transpose(a, s), transpose(b, s) or a splat or constant, start) -> transpose(insert_tensor(a, b,
  start'), s): a block write along an axis that PyTorch's exporters moved to the front for a ScatterND
- slice(transpose(x, s), start) -> transpose(slice(x, start'), s): the channel splits of NHWC layers
  (InceptionNeXt's token mixer, whose four channel groups each kept a transpose pair)

A transpose is sunk only when the op being crossed is its only user, so sinking never adds a transpose. The
pass repeats until nothing changes, as Glow runs SinkCode to a fixed point.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.registry import register

TRANSPOSE = "glow.transpose"
BROADCAST = "glow.broadcast"
CONCAT = "glow.concat"
SLICE = "glow.slice"


def transpose_to(value: ir.Value, shuffle: Sequence[int]) -> ir.Value:
    """transpose(value, shuffle) at the current insertion point and location."""
    dims = [ops.shape(value)[s] for s in shuffle]
    result = ops.tensor_type(dims, ops.element_type(value))
    return g.make(TRANSPOSE, [value], result, {"shuffle": ops.i64_array(shuffle)})


def fold_leaf_transpose(op: ir.Operation) -> ir.Value | None:
    """The splat or constant equal to transpose `op` of a splat or single-use constant, built before `op`."""
    return g.fold_into_leaf(op, lambda array: array.transpose(ops.ints(op, "shuffle")), only_user=True)


def _compose(op: ir.Operation) -> ir.Value | None:
    inner = g.producer_named(op.operands[0], TRANSPOSE)
    if inner is None:
        return None
    a, b = ops.ints(inner, "shuffle"), ops.ints(op, "shuffle")
    composed = [a[i] for i in b]
    x = inner.operands[0]
    if composed == list(range(len(composed))):
        return x
    with ir.InsertionPoint(op), op.location:
        return transpose_to(x, composed)


# Answers of `_all_users_sink` that stay true until the graph changes: by transpose, whether all its users sink.
Answers = dict[ir.Operation, bool]


def _sink(op: ir.Operation, answers: Answers) -> ir.Value | None:
    """transpose(op'(untransposed operands), s) for an elementwise `op`, or None when it does not apply."""
    operands = list(op.operands)
    transposes = {g.producer(v) for v in operands if g.producer_name(v) == TRANSPOSE}
    if not transposes:
        return None
    shuffles = {tuple(ops.ints(t, "shuffle")) for t in transposes}
    if len(shuffles) != 1:
        return None
    shuffle = list(shuffles.pop())
    inverse = g.inverse_permutation(shuffle)
    for t in transposes:
        # Every use of the transpose must be this op, or one that sinks it too (below), or the transpose
        # would stay and be computed twice.
        only_here = len(list(t.results[0].uses)) == sum(1 for v in operands if v == t.results[0])
        if not only_here and not _all_users_sink(t, answers):
            return None
    if not all(_sinkable_operand(v) for v in operands):
        return None
    with ir.InsertionPoint(op), op.location:
        inner_operands = [_untransposed(v, inverse) for v in operands]
        dims = ops.shape(inner_operands[0])
        inner_type = ops.tensor_type(dims, ops.element_type(op.results[0]))
        inner = g.make(op.name, inner_operands, inner_type, g.attributes(op))
        return transpose_to(inner, shuffle)


def _sinkable_operand(value: ir.Value) -> bool:
    """An operand an elementwise op can take untransposed: a transpose, a splat, a uniform constant, a constant
    used only there, or a broadcast of a value whose dims are 1 wherever the broadcast is not (a
    squeeze-and-excite scale [N, C, 1, 1] -> [N, C, H, W]: its input is transposed instead, which moves no
    data, and the broadcast stays a broadcast) or of a vector (a batch norm's [C]: the broadcast's axis
    moves instead)."""
    kind = g.producer_name(value)
    if kind in (TRANSPOSE, g.SPLAT) or _uniform_splat(value) is not None:
        return True
    if kind == BROADCAST:
        return _stretch_broadcast(g.producer(value)) and g.has_one_use(value)
    return kind == g.CONSTANT and g.has_one_use(value) and g.constant_array(value) is not None


def _stretch_broadcast(op: ir.Operation) -> bool:
    """A broadcast that any shuffle commutes with: of an input of the result's rank (dims 1 or equal), or of
    a vector along one dim (a batch norm's per-channel scale, [C] at axis 1)."""
    source, result = ops.shape(op.operands[0]), ops.shape(op.results[0])
    return len(source) == 1 or len(source) == len(result) and all(
        d in (1, r) for d, r in zip(source, result, strict=True)
    )


# How many elementwise ops deep `_all_users_sink` follows a value back to the transpose it derives from: a
# QDQ model's hard sigmoid between its quantization and dequantization is 10 (x * hardsigmoid(x) in MobileNetV3).
DERIVE_DEPTH = 16


def _all_users_sink(transpose: ir.Operation, answers: Answers) -> bool:
    """Whether every user of `transpose` is an elementwise op that sinking will cross: each of its operands is
    the transpose, a sinkable operand, or computed from those by elementwise ops (x * hardsigmoid(x),
    x * sigmoid(x): the transposed convolution output read twice), a reduction (a squeeze-and-excite's
    global pool beside its scaling), or a concat of transposes alike (DenseNet: each layer's output joins the
    concat of every later layer of its block). Another transpose met on the way must go too: read only there,
    or with all its users sinking likewise. Each user is then rewritten in turn (the last one when the
    transpose has no other user left), so the transpose goes and none is added.

    The answer is a conjunction over every transpose reached, so `known` answers each once per question: a
    transpose still being asked about counts as going (a cycle asks nothing new), and a False anywhere makes
    the whole answer False. Without it, DenseNet's blocks, where every layer's transpose reaches those of all
    later layers, were asked about once per path: exponentially often (DenseNet-121 at 160x160 compiled for
    over 25 minutes in sink-transpose). `answers` keeps what a question found for the next ones, until the
    graph changes (the pass clears it at each rewrite): all of it when the answer is True (every transpose
    reached then goes), only the Falses when it is False (a False found while others were assumed to go holds
    anyway; a True may not). Each concat asks about each of its inputs, and DenseNet's concats share their
    inputs: asked afresh, DenseNet-121 spent 5.3 of its 19 s compile here."""
    if transpose in answers:
        return answers[transpose]
    known = dict(answers)
    answer = _users_sink(transpose, known)
    answers.update(known if answer else {t: False for t, went in known.items() if not went})
    return answer


def _users_sink(transpose: ir.Operation, known: Answers) -> bool:
    """`_all_users_sink`'s question, `known` holding the answers so far and the transposes being asked about
    (assumed to go)."""
    # Compared as attributes (uniqued: one pointer comparison), not as lists: DenseNet's concats ask about
    # every transpose of their block, 136 thousand times in all.
    shuffle = transpose.attributes["shuffle"]
    known[transpose] = True

    def goes(other: ir.Operation) -> bool:
        if other.attributes["shuffle"] != shuffle:
            return False
        if other in known:
            return known[other]
        if g.has_one_use(other.results[0]):
            return True
        return _users_sink(other, known)

    # Per value, the least depth it was found to derive within and the most it was found not to: without them,
    # diamonds of elementwise ops (x * hardsigmoid(x) within x * sigmoid(...)) are followed once per path.
    derived: dict[ir.Value, int] = {}
    failed: dict[ir.Value, int] = {}

    def derives(value: ir.Value, depth: int) -> bool:
        if derived.get(value, DERIVE_DEPTH + 1) <= depth:
            return True
        if failed.get(value, -1) >= depth:
            return False
        op = g.producer(value)
        if op is None:
            return False
        if op.name == TRANSPOSE:
            return goes(op)
        if _sinkable_operand(value):
            return True
        found = (
            depth > 0 and op.name in g.ELEMENTWISE and len(op.results) == 1
            and all(derives(v, depth - 1) for v in op.operands)
        )
        (derived if found else failed)[value] = depth
        return found

    def sinks(user: ir.Operation) -> bool:
        if user.name == SLICE:
            return True
        if user.name in REDUCTIONS:
            return _reduction_sinks(user)
        if user.name == CONCAT:
            return all(g.producer_name(v) == TRANSPOSE and goes(g.producer(v)) for v in user.operands)
        return user.name in g.ELEMENTWISE and len(user.results) == 1 and all(
            derives(v, DERIVE_DEPTH) for v in user.operands
        )

    known[transpose] = all(sinks(user) for user in g.users(transpose.results[0]))
    return known[transpose]


def _uniform_splat(value: ir.Value) -> ir.Attribute | None:
    """The splat `value` attribute of a constant whose elements are all one value (a clip bound that many ops
    share), which any shape of it can be made from without copying its data; None for anything else."""
    if g.producer_name(value) != g.CONSTANT:
        return None
    scalar = g.uniform_value(value)
    return None if scalar is None else g.splat_attribute(ops.element_type(value), scalar)


def _untransposed(value: ir.Value, inverse: Sequence[int]) -> ir.Value:
    """The operand that, transposed by the sunk shuffle, gives `value`."""
    op = g.producer(value)
    if op.name == TRANSPOSE:
        return op.operands[0]
    dims = [ops.shape(value)[i] for i in inverse]
    result = ops.tensor_type(dims, ops.element_type(value))
    if op.name == g.SPLAT:
        return g.make(g.SPLAT, [], result, {"value": op.attributes["value"]})
    uniform = _uniform_splat(value)
    if uniform is not None:
        return g.make(g.SPLAT, [], result, {"value": uniform})
    if op.name == BROADCAST:
        source = op.operands[0]
        if len(ops.shape(source)) == 1:
            # The vector's dim moves where the shuffle puts it.
            axis = list(inverse).index(ops.integer(op, "axis"))
            return g.make(BROADCAST, [source], result, {"axis": ops.i64(axis)})
        return g.make(BROADCAST, [transpose_to(source, inverse)], result, g.attributes(op))
    array: np.ndarray = g.constant_array(value)
    return g.materialize(array.transpose(inverse), result, prefer_splat=False)


def _only_used_by(transpose: ir.Operation, op: ir.Operation) -> bool:
    return all(user == op for user in g.users(transpose.results[0]))


def _sink_concat(op: ir.Operation, answers: Answers) -> ir.Value | None:
    """concat of transposes with one shuffle, each read only by the concat, as a transposed concat."""
    inputs = [g.producer(v) for v in op.operands]
    if any(
        t is None or t.name != TRANSPOSE or not (_only_used_by(t, op) or _all_users_sink(t, answers)) for t in inputs
    ):
        return None
    shuffles = {tuple(ops.ints(t, "shuffle")) for t in inputs}
    if len(shuffles) != 1:
        return None
    shuffle = list(shuffles.pop())
    with ir.InsertionPoint(op), op.location:
        inner = g.concat([t.operands[0] for t in inputs], shuffle[ops.integer(op, "dim")])
        return transpose_to(inner, shuffle)


# A reduction along the contiguous (last) axis of its operand keeps it there unless what would be contiguous after
# sinking spans at least this many elements. The CPU's max over the 196 of [1, 196, 196, E] ran at 1.0 G elements/s
# for E = 4, 4.2 for 8, 6.6 for 16 (half a register of f32 lanes is where it vectorizes): CaiT's talking-heads
# softmax over [.., 196, 196], sunk below the heads' transpose, reduced with 4 contiguous heads, 11.7 ms of its
# 39 (onnxruntime's softmax: 1.9 ms); a squeeze-and-excite pool of 8 channels or more still sinks.
MIN_CONTIGUOUS = 8


def _reduction_sinks(op: ir.Operation) -> bool:
    """Whether reduction `op` of a transpose may become the reduction of the transpose's input: not when it
    reduces along the transposed value's last axis and, sunk, would reduce along a strided one with fewer than
    MIN_CONTIGUOUS contiguous elements beside it (the input's dims after its last reduced dim)."""
    transpose = g.producer(op.operands[0])
    shuffle, axes = ops.ints(transpose, "shuffle"), ops.ints(op, "axes")
    inner_axes = [shuffle[a] for a in axes]
    last = len(shuffle) - 1
    if last not in axes or last in inner_axes:
        return True
    return math.prod(ops.shape(transpose.operands[0])[max(inner_axes) + 1 :]) >= MIN_CONTIGUOUS


def _sink_reduce(op: ir.Operation, answers: Answers) -> ir.Value | None:
    """batched_reduce_*(transpose(x, s), axes) as a reduction of x over s[axes], then the kept dims' order."""
    t = g.producer(op.operands[0])
    if t is None or t.name != TRANSPOSE or not _reduction_sinks(op):
        return None
    if not (_only_used_by(t, op) or _all_users_sink(t, answers)):
        return None
    shuffle, axes = ops.ints(t, "shuffle"), ops.ints(op, "axes")
    inner_axes = sorted(shuffle[a] for a in axes)
    x = t.operands[0]
    kept_inner = [d for d in range(len(shuffle)) if d not in inner_axes]
    # The reduction of transpose(x) keeps its dims in transposed order: shuffle[i] for each kept i.
    order = [kept_inner.index(shuffle[i]) for i in range(len(shuffle)) if i not in axes]
    dims = [ops.shape(x)[d] for d in kept_inner]
    with ir.InsertionPoint(op), op.location:
        inner_type = ops.tensor_type(dims, ops.element_type(op.results[0]))
        inner = g.make(op.name, [x], inner_type, g.attributes(op) | {"axes": ops.i64_array(inner_axes)})
        return inner if order == sorted(order) else transpose_to(inner, order)


def _as_reshape(op: ir.Operation) -> ir.Value | None:
    """A transpose that keeps the dims larger than 1 in order, as the reshape it is."""
    dims = ops.shape(op.operands[0])
    moved = [d for d in ops.ints(op, "shuffle") if dims[d] != 1]
    if moved != sorted(moved):
        return None
    with ir.InsertionPoint(op), op.location:
        dims = {"dims": ops.i64_array(ops.shape(op.results[0]))}
        return g.make("glow.reshape", [op.operands[0]], op.results[0].type, dims)


def reshape_groups(source: Sequence[int], target: Sequence[int]) -> list[tuple[list[int], list[int]]] | None:
    """The dims of `source` and `target` (equal element counts) in groups of equal size, in order: each a
    (source dims, target dims) pair; dims of size 1 join the group before them (or the first). None when a dim
    is 0 or the two shapes share no grouping but the whole (a general regrouping like [6, 4] -> [4, 6] still
    comes out as one group of several dims on both sides, which the caller refuses)."""
    if 0 in source or 0 in target or not source or not target:
        return None
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(source) and j < len(target):
        dims, into = [i], [j]
        size, made = source[i], target[j]
        i, j = i + 1, j + 1
        while size != made:
            if size < made:
                dims.append(i)
                size *= source[i]
                i += 1
            else:
                into.append(j)
                made *= target[j]
                j += 1
        groups.append((dims, into))
    groups[-1][0].extend(range(i, len(source)))
    groups[-1][1].extend(range(j, len(target)))
    return groups


def _sink_through_reshape(op: ir.Operation) -> ir.Value | None:
    """reshape(transpose(x, s)) as transpose(reshape(x), s'), when the transpose is read only here and each group
    of the reshape (`reshape_groups`) splits one dim, or merges dims that follow each other in x: x is regrouped
    the same way in its own order, and s' moves the groups as s moved their dims."""
    t = g.producer(op.operands[0])
    if t is None or t.name != TRANSPOSE or not g.has_one_use(t.results[0]):
        return None
    x, shuffle = t.operands[0], ops.ints(t, "shuffle")
    groups = reshape_groups(ops.shape(t.results[0]), ops.shape(op.results[0]))
    if groups is None:
        return None
    # Per group, the dims of x it comes from, which must be one dim or a run of consecutive ones, in order.
    sources = []
    for dims, into in groups:
        of_x = [shuffle[d] for d in dims]
        if len(dims) > 1 and (len(into) > 1 or of_x != list(range(of_x[0], of_x[0] + len(of_x)))):
            return None
        sources.append(of_x[0])
    # x regrouped in its own order: the groups sorted by where their dims sit in x.
    order = sorted(range(len(groups)), key=lambda k: sources[k])
    target = ops.shape(op.results[0])
    dims = [target[j] for k in order for j in groups[k][1]]
    position, start = {}, 0
    for k in order:
        position[k] = start
        start += len(groups[k][1])
    new_shuffle = [position[k] + n for k, (_, into) in enumerate(groups) for n in range(len(into))]
    with ir.InsertionPoint(op), op.location:
        regrouped = g.make("glow.reshape", [x], ops.tensor_type(dims, ops.element_type(x)),
                           {"dims": ops.i64_array(dims)})  # fmt: skip
        return transpose_to(regrouped, new_shuffle)


def _sink_insert(op: ir.Operation) -> ir.Value | None:
    """insert_tensor(transpose(a, s), small, start) as transpose(insert_tensor(a, small', start'), s), when the
    transpose is read only here and `small` is a transpose by s read only here or another operand an elementwise
    op could take untransposed (`_sinkable_operand`): start'[s[i]] = start[i]. A block write along an axis that
    PyTorch's exporters move to the front for a ScatterND (glow-scatter-to-insert) then writes in place."""
    big, small = op.operands
    t = g.producer(big)
    if t is None or t.name != TRANSPOSE or not _only_used_by(t, op):
        return None
    shuffle = ops.ints(t, "shuffle")
    inner_small = g.producer(small)
    if inner_small is not None and inner_small.name == TRANSPOSE:
        if ops.ints(inner_small, "shuffle") != shuffle or not _only_used_by(inner_small, op):
            return None
    elif not _sinkable_operand(small) or g.producer_name(small) == BROADCAST:
        return None
    start = ops.ints(op, "start")
    inner_start = [0] * len(start)
    for i, s in enumerate(shuffle):
        inner_start[s] = start[i]
    with ir.InsertionPoint(op), op.location:
        untransposed = _untransposed(small, g.inverse_permutation(shuffle))
        inner = g.make(op.name, [t.operands[0], untransposed], t.operands[0].type,
                       {"start": ops.i64_array(inner_start)})  # fmt: skip
        return transpose_to(inner, shuffle)


def _sink_slice(op: ir.Operation, answers: Answers) -> ir.Value | None:
    """slice(transpose(x, s), start) as transpose(slice(x, start'), s), start'[s[i]] = start[i] (and the block's
    dims likewise), when every user of the transpose sinks (the other slices of a channel split)."""
    t = g.producer(op.operands[0])
    if t is None or t.name != TRANSPOSE:
        return None
    if not g.has_one_use(t.results[0]) and not _all_users_sink(t, answers):
        return None
    shuffle = ops.ints(t, "shuffle")
    start, dims = ops.ints(op, "start"), ops.shape(op.results[0])
    inner_start, inner_dims = [0] * len(start), [0] * len(dims)
    for i, k in enumerate(shuffle):
        inner_start[k], inner_dims[k] = start[i], dims[i]
    with ir.InsertionPoint(op), op.location:
        x = t.operands[0]
        inner = g.make(SLICE, [x], ops.tensor_type(inner_dims, ops.element_type(x)),
                       {"start": ops.i64_array(inner_start)})  # fmt: skip
        return transpose_to(inner, shuffle)


REDUCTIONS = frozenset(f"glow.batched_reduce_{kind}" for kind in ("add", "max", "min", "prod"))


def _rewrite(op: ir.Operation, answers: Answers) -> ir.Value | None:
    if op.name == TRANSPOSE:
        replacement = _compose(op)
        if replacement is None:
            replacement = fold_leaf_transpose(op)
        return replacement if replacement is not None else _as_reshape(op)
    if op.name in g.ELEMENTWISE and len(op.results) == 1:
        return _sink(op, answers)
    if op.name == CONCAT:
        return _sink_concat(op, answers)
    if op.name in REDUCTIONS:
        return _sink_reduce(op, answers)
    if op.name == "glow.reshape":
        return _sink_through_reshape(op)
    if op.name == "glow.insert_tensor":
        return _sink_insert(op)
    if op.name == SLICE:
        return _sink_slice(op, answers)
    return None


@register("glow-sink-transpose", fixed_point=True)
def sink_transpose(module: ir.Module) -> None:
    """Sink transposes below elementwise ops, compose or cancel transpose pairs, fold transposed constants."""
    answers: Answers = {}

    def rewrite(op: ir.Operation) -> ir.Value | None:
        replacement = _rewrite(op, answers)
        if replacement is not None:
            answers.clear()  # the graph is about to change: what was found about it may not hold
        return replacement

    g.rewrite_functions(module, rewrite, fixed_point=True)
