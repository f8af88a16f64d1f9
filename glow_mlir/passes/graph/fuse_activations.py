"""glow-fuse-activations: folds a convolution's or matrix product's bias add and activation into one op
(Glow's activation fusion, `fuseActivations` / FoldMatMulAddIntoFullyConnected).

After glow-lower a convolution is followed by its activation as plain arithmetic: relu is max(x, splat 0),
ONNX Clip (ReLU6, HardTanh) is min(max(x, lo), hi), LeakyRelu is select(cmp_lt(x, 0), mul(x, alpha), x) as
the ONNX importer writes it (cmp_lte as Glow lowers it). Run separately, each is one more full pass over the
activation and one more buffer; fused, the kernel applies it to each result while the result is still hot.
Rewrites, in this order for each producer:

- bias add: producer + c (either operand order), where c is a constant, splat or broadcast of a constant that
  is constant along every dim but the producer's channel dim -> the producer with bias b + c[channel]
  (computed in float64), when the producer's bias is a constant;
- matmul(x, W) + batched_add(., b) -> glow.fused_matmul(x, W, b) (float only);
- activation: an op defined as an activation (glow.relu, glow.sigmoid, glow.tanh, ...: `activation=True` in
  glow_mlir/opdefs), relu as max(x, 0), clip (min(max(x, lo), hi); max(min(x, hi), lo) with lo <= hi; max or
  min alone as a half-open clip), leaky_relu -> the fused producer with
  `activation` / `activationArgs` set, also through a transpose or reshape of the producer's result (which
  then follows the fused op). A clip or leaky_relu argument must be exact in f32 (activationArgs is an
  array<f32>); relu and clip keep max's and min's NaN propagation.

The fusable producers are the ops whose definition names a `producer` (glow_mlir/opdefs): a convolution
becomes glow.fused_convolution, and a fused op that has no activation yet (glow.fused_convolution,
glow.fused_matmul, the CPU backend's glow.cpu_conv_nhwc) gets one. Every intermediate result must have no
user outside the pattern, otherwise it would be computed twice. The pass works in one forward sweep; a second
run finds nothing more.
"""

from __future__ import annotations

import math

import numpy as np
from mlir import ir

from glow_mlir import opdefs, ops
from glow_mlir.opdefs.base import Producer
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.registry import register

NONE = "none"
# The ops that are activations themselves (their definitions say `activation=True`): relu, sigmoid, tanh, ...
ACTIVATION_OPS = frozenset(f"glow.{name}" for name, op in opdefs.glow_ops().items() if op.activation)
MATMUL = "glow.matmul"
BATCHED_ADD = "glow.batched_add"


def producers() -> dict[str, Producer]:
    """The ops that take a fused bias add and activation, from their definitions (`producer`): a convolution
    becomes glow.fused_convolution; a fused op without an activation yet (fused_convolution, fused_matmul, a
    backend's convolution) gets one."""
    return {op.full_name: op.producer for op in opdefs.glow_ops().values() if op.producer is not None}


# Ops that only move elements, which an elementwise activation with scalar arguments commutes with: the
# transposes glow-cpu-layout puts after an NHWC convolution, where glow-sink-transpose cannot move them past
# an activation that reads the transposed value more than once (LeakyRelu's select).
VIEWS = ("glow.transpose", "glow.reshape")

# A matched activation: its name, its activationArgs, and the op whose result it is.
Match = tuple[str, list[float], ir.Operation]


def fuse_function(function: ir.Operation) -> bool:
    """Fuses what follows every producer and matmul of `function`, in program order; returns whether it did."""
    changed = False
    # Rewrites erase only the candidate itself and the ops after it in its pattern, none of them a candidate.
    table = producers()
    for op in [op for op in g.graph_ops(function) if op.name in table or op.name == MATMUL]:
        changed |= _fuse(op, table)
    return changed


def _fuse(op: ir.Operation, table: dict[str, Producer]) -> bool:
    """Folds into `op` the bias add, then the activation, that follow it; returns whether anything changed."""
    changed = False
    if op.name == MATMUL:
        op = _fuse_matmul_bias(op)
        if op is None:
            return False
        changed = True
    if _activation_of(op) != NONE:
        return changed
    with_bias = _fold_bias_add(op, table)
    if with_bias is not None:
        op, changed = with_bias, True
    # An activation commutes with a layout change: act(transpose(y)) = transpose(act(y)).
    value, view = op.results[0], _single_user(op.results[0])
    if view is not None and view.name in VIEWS:
        value = view.results[0]
    else:
        view = None
    match = _match_activation(value)
    if match is None:
        return changed
    name, args, last = match
    attributes = g.attributes(op) | {
        "activation": ir.StringAttr.get(name),
        "activationArgs": ir.DenseF32ArrayAttr.get(args),
    }
    with ir.InsertionPoint(last), last.location:
        fused = g.make(table[op.name].fused, list(op.operands), op.results[0].type, attributes)
    if view is not None:
        with ir.InsertionPoint(last), view.location:
            fused = g.make(view.name, [fused], view.results[0].type, g.attributes(view))
    g.replace(last, fused)
    return True


def _activation_of(op: ir.Operation) -> str:
    """The activation an op already applies: "none" for a plain convolution or a fused op without one."""
    if "activation" not in op.attributes:
        return NONE
    return ir.StringAttr(op.attributes["activation"]).value


def _fuse_matmul_bias(matmul: ir.Operation) -> ir.Operation | None:
    """batched_add(matmul(x, W), b) -> fused_matmul(x, W, b) without activation, when the product has no other
    user and is float; returns the new op."""
    product = matmul.results[0]
    if not g.has_one_use(product) or not _is_float(product):
        return None
    add = g.users(product)[0]
    if add.name != BATCHED_ADD or add.operands[0] != product:
        return None
    attributes = {"activation": ir.StringAttr.get(NONE), "activationArgs": ir.DenseF32ArrayAttr.get([])}
    with ir.InsertionPoint(add), add.location:
        fused = g.make("glow.fused_matmul", [*matmul.operands, add.operands[1]], add.results[0].type, attributes)
    g.replace(add, fused)
    return g.producer(fused)


def _fold_bias_add(op: ir.Operation, table: dict[str, Producer]) -> ir.Operation | None:
    """op + (constant per channel) -> op with its constant bias increased by it; returns the new op."""
    axis = table[op.name].channel_axis
    result = op.results[0]
    if axis is None or not g.has_one_use(result):
        return None
    add = g.users(result)[0]
    if add.name != "glow.add":
        return None
    other = add.operands[1] if add.operands[0] == result else add.operands[0]
    if other == result:
        return None
    per_channel = _channel_vector(other, axis)
    bias = g.constant_array(op.operands[2])
    if per_channel is None or bias is None:
        return None
    with ir.InsertionPoint(add), add.location:
        new_bias = g.materialize(
            bias.astype(np.float64) + per_channel.astype(np.float64), op.operands[2].type, prefer_splat=False
        )
        new = g.make(op.name, [op.operands[0], op.operands[1], new_bias], result.type, g.attributes(op))
    g.replace(add, new)
    return g.producer(new)


def _channel_vector(value: ir.Value, axis: int) -> np.ndarray | None:
    """The vector c[channel] when every element of `value` is a compile-time constant depending on its index
    along `axis` only (a constant, a splat, or a broadcast of a constant); else None."""
    dims = ops.shape(value)
    source = g.producer(value)
    if source is not None and source.name == "glow.broadcast":
        small = g.constant_array(source.operands[0])
        if small is None:
            return None
        start = ops.integer(source, "axis")
        aligned = (1,) * start + small.shape + (1,) * (len(dims) - start - small.ndim)
        full = np.broadcast_to(small.reshape(aligned), dims)
    else:
        full = g.constant_array(value)
        if full is None:
            return None
    index = tuple(slice(None) if d == axis else 0 for d in range(len(dims)))
    vector = full[index]
    along = [1] * len(dims)
    along[axis] = dims[axis]
    if not np.array_equal(full, np.broadcast_to(vector.reshape(along), dims)):
        return None
    return vector


def _is_float(value: ir.Value) -> bool:
    return isinstance(ops.element_type(value), ir.FloatType)


def _single_user(value: ir.Value) -> ir.Operation | None:
    return g.users(value)[0] if g.has_one_use(value) else None


def _bound(op: ir.Operation, value: ir.Value) -> tuple[ir.Value, float] | None:
    """For max/min(value, c) or (c, value) with c a uniform constant exact in f32: (op's result, c)."""
    lhs, rhs = op.operands
    if lhs == rhs:
        return None
    other = rhs if lhs == value else lhs
    scalar = g.uniform_value(other)
    if scalar is None or not _exact_f32(scalar):
        return None
    return op.results[0], float(scalar)


def _exact_f32(scalar: float | int | bool) -> bool:
    """Whether an activation argument is exactly an f32 and not NaN."""
    number = float(scalar)
    return not math.isnan(number) and float(np.float32(number)) == number


def _match_activation(y: ir.Value) -> Match | None:
    """The activation applied to `y` by the ops after it, when they use nothing of y's but what the pattern
    reads and their intermediate results have no other users."""
    if not _is_float(y):
        return None
    leaky = _match_leaky_relu(y)
    if leaky is not None:
        return leaky
    user = _single_user(y)
    if user is None:
        return None
    if user.name in ACTIVATION_OPS:
        return user.name.removeprefix(ops.GLOW), [], user
    if user.name not in ("glow.max", "glow.min"):
        return None
    first = _bound(user, y)
    if first is None:
        return None
    result, value = first
    # max then min (lo, hi) or min then max (hi, lo): a clip; min(max(x, lo), hi) is the ONNX order.
    second_op = _single_user(result)
    if second_op is not None and {user.name, second_op.name} == {"glow.max", "glow.min"}:
        second = _bound(second_op, result)
        if second is not None:
            lo, hi = (value, second[1]) if user.name == "glow.max" else (second[1], value)
            # max(min(x, hi), lo) is lo where lo > hi, which no clip [lo, hi] with lo <= hi gives.
            if lo <= hi:
                return "clip", [lo, hi], second_op
    if user.name == "glow.max":
        return ("relu", [], user) if value == 0 else ("clip", [value, math.inf], user)
    return "clip", [-math.inf, value], user


def _match_leaky_relu(y: ir.Value) -> Match | None:
    """select(cmp_lt(y, 0) or cmp_lte(y, 0), mul(y, alpha) or mul(alpha, y), y) -> leaky_relu [alpha]."""
    users = g.users(y)
    select = next((u for u in users if u.name == "glow.select"), None)
    if select is None or len(users) != 3 or select.operands[2] != y:
        return None
    compare, product = g.producer(select.operands[0]), g.producer(select.operands[1])
    if compare is None or product is None or {compare, product, select} != set(users):
        return None
    if compare.name not in ("glow.cmp_lt", "glow.cmp_lte") or compare.operands[0] != y:
        return None
    if not g.is_uniform(compare.operands[1], 0) or product.name != "glow.mul":
        return None
    if not (g.has_one_use(compare.results[0]) and g.has_one_use(product.results[0])):
        return None
    lhs, rhs = product.operands
    if lhs == rhs:
        return None
    alpha = g.uniform_value(rhs if lhs == y else lhs)
    if alpha is None or not _exact_f32(alpha):
        return None
    return "leaky_relu", [float(alpha)], select


@register("glow-fuse-activations")
def fuse_activations(module: ir.Module) -> None:
    """Fuse bias adds and activations into convolutions and matmul + batched_add (Glow's activation fusion)."""
    g.run_on_functions(module, fuse_function, fixed_point=False)
