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
- matmul(x, W) + batched_add(., b) -> glow.fused_matmul(x, W, b) (float only); also matmul(x, W), reshapes, then
  add of a constant c along the last dim only (a Linear layer on 3-D activations as PyTorch exports it) ->
  fused_matmul(x, W, c[n]) and the reshapes; a matmul without a bias add but with an activation after it
  (SwiGLU's gate, T5's ReLU) -> fused_matmul(x, W, 0), which the activation then fuses into;
- scale: fused_matmul(x, W, b) with constant W and b, reshapes, then mul or div by a constant s along the
  columns only (uniform or per column) -> fused_matmul(x, W s, b s) (attention's query and key scaling, a
  layer scale); a convolution with constant W and b, transposes, then mul by a constant k[channel] (a layer
  scale) -> the convolution with W's output channels and b scaled by k (the producer's
  `filter_channel_axis` says which dim of W); bias adds and scales fold in any order and number;
- input affine map: a convolution without padding that reads u * k[c] + s[c] (constants per input channel,
  through transposes) -> the convolution of u with W and b folded (fold_input_affine.py: a normalization's
  scale and shift cost no pass over the activation);
- activation: an op defined as an activation (glow.relu, glow.sigmoid, glow.tanh, ...: `activation=True` in
  glow_mlir/opdefs), relu as max(x, 0), clip (min(max(x, lo), hi); max(min(x, hi), lo) with lo <= hi; max or
  min alone as a half-open clip), leaky_relu, GELU in its erf and tanh forms, SiLU and HardSwish
  (activation_regions.py) -> the fused producer with `activation` / `activationArgs` set, also through
  transposes, reshapes and slices of the producer's result (which then follow the fused op). A clip or leaky_relu
  argument must be exact in f32 (activationArgs is an array<f32>); relu and clip keep max's and min's NaN
  propagation.

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
from glow_mlir.passes.graph.activation_regions import match_region
from glow_mlir.passes.graph.fold_input_affine import fold_input_affine
from glow_mlir.passes.registry import register

NONE = "none"
# The ops that are activations themselves (their definitions say `activation=True`): relu, sigmoid, tanh, ...
ACTIVATION_OPS = frozenset(f"glow.{name}" for name, op in opdefs.glow_ops().items() if op.activation)
MATMUL = "glow.matmul"
FUSED_MATMUL = "glow.fused_matmul"
BATCHED_ADD = "glow.batched_add"


def producers() -> dict[str, Producer]:
    """The ops that take a fused bias add and activation, from their definitions (`producer`): a convolution
    becomes glow.fused_convolution; a fused op without an activation yet (fused_convolution, fused_matmul, a
    backend's convolution) gets one."""
    return {op.full_name: op.producer for op in opdefs.glow_ops().values() if op.producer is not None}


# Ops that only move elements, which an elementwise activation with scalar arguments commutes with: the
# transposes glow-cpu-layout puts after an NHWC convolution, where glow-sink-transpose cannot move them past
# an activation that reads the transposed value more than once (LeakyRelu's select), and the interleave and
# crop of a transposed convolution's phases (a slice: the producer computes the cropped elements anyway).
VIEWS = ("glow.transpose", "glow.reshape", "glow.slice")

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
    if op.name in table:
        # A constant per-channel affine map before an unpadded convolution (a normalization's scale and shift).
        folded = fold_input_affine(op, table[op.name])
        if folded is not None:
            op, changed = folded, True
    if op.name == MATMUL:
        op = _fuse_matmul_bias(op) or _bias_free_matmul(op)
        if op is None:
            return False
        changed = True
    if _activation_of(op) != NONE:
        return changed
    # The constant affine ops after the producer, in any order and number (conv, bias add, layer scale).
    while (folded := _fold_affine(op, table)) is not None:
        op, changed = folded, True
    # An activation commutes with layout changes: act(transpose(y)) = transpose(act(y)).
    views = _views_after(op.results[0])
    value = views[-1].results[0] if views else op.results[0]
    match = _match_activation(value)
    if match is None:
        return changed
    name, args, last = match
    attributes = g.attributes(op) | {
        "activation": ir.StringAttr.get(name),
        "activationArgs": ir.DenseF32ArrayAttr.get(args),
    }
    # The fused op computes both nodes: its location names both (profiles and pictures list them).
    with ir.InsertionPoint(last), ir.Location.fused([op.location, last.location]):
        fused = g.make(table[op.name].fused, list(op.operands), op.results[0].type, attributes)
    g.replace(last, _reapply_views(fused, views, last))
    return True


def _views_after(value: ir.Value) -> list[ir.Operation]:
    """The chain of transposes and reshapes that alone read `value`, then each other's result (BERT's
    product is reshaped to [batch, seq, hidden] and then to [batch, seq, heads, head_dim])."""
    chain: list[ir.Operation] = []
    view = _single_user(value)
    while view is not None and view.name in VIEWS:
        chain.append(view)
        view = _single_user(view.results[0])
    return chain


def _leading_views(value: ir.Value, name: str) -> list[ir.Operation]:
    """The leading ops named `name` of `_views_after(value)`: reshapes, along which a bias along the last dim
    stays along it, or transposes, which move a channel dim to a known place."""
    views = _views_after(value)
    count = next((i for i, v in enumerate(views) if v.name != name), len(views))
    return views[:count]


def _reapply_views(value: ir.Value, views: list[ir.Operation], before: ir.Operation) -> ir.Value:
    """`value` through copies of `views` (a chain `_views_after` found), built before `before`."""
    for view in views:
        with ir.InsertionPoint(before), view.location:
            value = g.make(view.name, [value], view.results[0].type, g.attributes(view))
    return value


def _activation_of(op: ir.Operation) -> str:
    """The activation an op already applies: "none" for a plain convolution or a fused op without one."""
    if "activation" not in op.attributes:
        return NONE
    return ir.StringAttr(op.attributes["activation"]).value


def _no_activation() -> dict[str, ir.Attribute]:
    """The activation attributes of a fused_matmul made before its activation is matched."""
    return {"activation": ir.StringAttr.get(NONE), "activationArgs": ir.DenseF32ArrayAttr.get([])}


def _fuse_matmul_bias(matmul: ir.Operation) -> ir.Operation | None:
    """batched_add(matmul(x, W), b) -> fused_matmul(x, W, b) without activation, when the product has no other
    user and is float; returns the new op."""
    product = matmul.results[0]
    if not g.has_one_use(product) or not _is_float(product):
        return None
    views = _leading_views(product, "glow.reshape")
    reshaped = views[-1].results[0] if views else product
    add = _single_user(reshaped)
    if add is None:
        return None
    attributes = _no_activation()
    if add.name == BATCHED_ADD and add.operands[0] == product:
        with ir.InsertionPoint(add), ir.Location.fused([matmul.location, add.location]):
            fused = g.make(FUSED_MATMUL, [*matmul.operands, add.operands[1]], add.results[0].type, attributes)
        g.replace(add, fused)
        return g.producer(fused)
    bias = _column_bias(add, reshaped, ops.shape(product)[-1])
    if bias is None:
        return None
    # product + c, with c constant along every dim but the columns (ONNX MatMul then Add, as transformers
    # export a Linear layer on 3-D activations: the product is reshaped to [batch, seq, n] first).
    with ir.InsertionPoint(add), ir.Location.fused([matmul.location, add.location]):
        bias_value = g.materialize(bias, ops.tensor_type(bias.shape, ops.element_type(product)), prefer_splat=False)
        fused = g.make(FUSED_MATMUL, [*matmul.operands, bias_value], product.type, attributes)
    g.replace(add, _reapply_views(fused, views, add))
    return g.producer(fused)


def _bias_free_matmul(matmul: ir.Operation) -> ir.Operation | None:
    """matmul(x, W) followed (through reshapes and transposes) by an activation -> fused_matmul(x, W, 0) without
    activation, which the activation then fuses into as into any producer: a bias-free projection before its
    activation (the SiLU of SwiGLU's gate in Llama-style MLPs, T5's ReLU). None when no activation follows."""
    product = matmul.results[0]
    # The activation's pattern may read the product more than once (SiLU: x * sigmoid(x)); it reads nothing
    # else of it, which _match_activation checks.
    views = _views_after(product)
    if _match_activation(views[-1].results[0] if views else product) is None:
        return None
    attributes = _no_activation()
    columns = ops.shape(product)[-1]
    with ir.InsertionPoint(matmul), matmul.location:
        bias_type = ops.tensor_type((columns,), ops.element_type(product))
        zero = g.materialize(np.zeros(columns), bias_type, prefer_splat=False)
        fused = g.make(FUSED_MATMUL, [*matmul.operands, zero], product.type, attributes)
    g.replace(matmul, fused)
    return g.producer(fused)


def _column_bias(add: ir.Operation, value: ir.Value, columns: int) -> np.ndarray | None:
    """c[n] when `add` is value + c or c + value with c constant along every dim but the last, which is the
    product's column dim (`columns` long); else None."""
    if add.name != "glow.add" or add.operands[0] == add.operands[1]:
        return None
    dims = ops.shape(value)
    if not dims or dims[-1] != columns or add.results[0].type != value.type:
        return None
    other = add.operands[1] if add.operands[0] == value else add.operands[0]
    return g.channel_vector(other, len(dims) - 1)


def _fold_scale(op: ir.Operation) -> ir.Operation | None:
    """fused_matmul(x, W, b) (through reshapes that keep its columns last) times or divided by a constant s
    along the columns only (uniform, or per column: a layer scale) -> fused_matmul(x, W s, b s), when W and b
    are constants: attention's 1 / sqrt(head_dim) scaling of the queries (and keys) and a Linear layer's layer
    scale cost no pass over the activation. Rounds once where the two steps rounded twice."""
    views = _leading_views(op.results[0], "glow.reshape")
    value = views[-1].results[0] if views else op.results[0]
    scale_op = _single_user(value)
    if scale_op is None or scale_op.name not in ("glow.mul", "glow.div"):
        return None
    # Read only once a scale follows, as views: the scaled copy below is the only one made of the weights.
    weights, bias = g.constant_array(op.operands[1], copy=False), g.constant_array(op.operands[2])
    if weights is None or bias is None:
        return None
    lhs, rhs = scale_op.operands
    dims = ops.shape(value)
    if lhs == rhs or (scale_op.name == "glow.div" and lhs != value) or scale_op.results[0].type != value.type:
        return None
    other = rhs if lhs == value else lhs
    uniform = g.uniform_value(other)
    if uniform is not None:
        factor = np.full(ops.shape(op.results[0])[-1], float(uniform))
    elif dims and dims[-1] == ops.shape(op.results[0])[-1]:
        factor = g.channel_vector(other, len(dims) - 1)
    else:
        return None
    if factor is None or not np.all(np.isfinite(factor)) or not np.all(factor != 0):
        return None
    factor = factor.astype(np.float64)
    factor = factor if scale_op.name == "glow.mul" else 1.0 / factor
    with ir.InsertionPoint(scale_op), ir.Location.fused([op.location, scale_op.location]):
        new_weights = g.materialize(_scaled(weights, factor), op.operands[1].type, prefer_splat=False)
        new_bias = g.materialize(bias.astype(np.float64) * factor, op.operands[2].type, prefer_splat=False)
        new = g.make(op.name, [op.operands[0], new_weights, new_bias], op.results[0].type, g.attributes(op))
    g.replace(scale_op, _reapply_views(new, views, scale_op))
    return g.producer(new)


def _fold_affine(op: ir.Operation, table: dict[str, Producer]) -> ir.Operation | None:
    """The producer with the constant bias add or scale after it folded in; None when neither follows."""
    with_bias = _fold_bias_add(op, table)
    if with_bias is not None:
        return with_bias
    return _fold_scale(op) if op.name == FUSED_MATMUL else _fold_channel_scale(op, table)


def _fold_channel_scale(op: ir.Operation, table: dict[str, Producer]) -> ir.Operation | None:
    """op * (constant per channel) -> op with its filter's output channels and its bias scaled by it, when
    the filter and bias are constants: a layer scale (PoolFormer's, ConvNeXt's x * gamma) or a per-channel
    affine map after a convolution costs no pass over the activation. Rounds once where the two steps
    rounded twice."""
    producer = table[op.name]
    axis, filter_axis = producer.channel_axis, producer.filter_channel_axis
    if axis is None or filter_axis is None:
        return None
    # Through the transposes glow-cpu-layout leaves after an NHWC convolution, which move the channel dim.
    views = _leading_views(op.results[0], "glow.transpose")
    for view in views:
        axis = ops.ints(view, "shuffle").index(axis)
    value = views[-1].results[0] if views else op.results[0]
    mul = _single_user(value)
    if mul is None or mul.name != "glow.mul" or mul.results[0].type != value.type:
        return None
    other = mul.operands[1] if mul.operands[0] == value else mul.operands[0]
    if other == value:
        return None
    scale = g.channel_vector(other, axis)
    weights, bias = g.constant_array(op.operands[1], copy=False), g.constant_array(op.operands[2])
    if scale is None or weights is None or bias is None:
        return None
    along = [1] * weights.ndim
    along[filter_axis] = -1
    scale = scale.astype(np.float64)
    with ir.InsertionPoint(mul), ir.Location.fused([op.location, mul.location]):
        new_weights = g.materialize(_scaled(weights, scale.reshape(along)), op.operands[1].type, prefer_splat=False)
        new_bias = g.materialize(bias.astype(np.float64) * scale, op.operands[2].type, prefer_splat=False)
        new = g.make(op.name, [op.operands[0], new_weights, new_bias], op.results[0].type, g.attributes(op))
    g.replace(mul, _reapply_views(new, views, mul))
    return g.producer(new)


def _scaled(weights: np.ndarray, factor: np.ndarray) -> np.ndarray:
    """weights * factor in float64, multiplied in place: the one float64 copy is the only one (the product of a
    copy was a second, fresh memory for every byte of GB-scale weights)."""
    product = weights.astype(np.float64)
    product *= factor
    return product


def _fold_bias_add(op: ir.Operation, table: dict[str, Producer]) -> ir.Operation | None:
    """op + (constant per channel) -> op with its constant bias increased by it; returns the new op."""
    axis, at = table[op.name].channel_axis, table[op.name].bias_operand
    result = op.results[0]
    if axis is None or not g.has_one_use(result):
        return None
    add = g.users(result)[0]
    if add.name != "glow.add":
        return None
    other = add.operands[1] if add.operands[0] == result else add.operands[0]
    if other == result:
        return None
    per_channel = g.channel_vector(other, axis)
    bias = g.constant_array(op.operands[at])
    if per_channel is None or bias is None:
        return None
    with ir.InsertionPoint(add), ir.Location.fused([op.location, add.location]):
        new_bias = g.materialize(
            bias.astype(np.float64) + per_channel.astype(np.float64), op.operands[at].type, prefer_splat=False
        )
        operands = list(op.operands)
        operands[at] = new_bias
        new = g.make(op.name, operands, result.type, g.attributes(op))
    g.replace(add, new)
    return g.producer(new)


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
    region = match_region(y)
    if region is not None:
        return region
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
