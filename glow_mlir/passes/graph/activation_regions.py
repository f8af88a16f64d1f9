"""GELU (both forms), SiLU and HardSwish as fused activations, and the matcher that finds them in lowered
arithmetic.

ONNX before opset 20 has no Gelu: PyTorch exports nn.GELU as x * 0.5 * (1 + erf(x / sqrt 2)) (BERT, ViT, DeiT,
Whisper) and GPT-2's "gelu_new" as 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))), five to nine
elementwise ops, each one more pass over the widest activation of a transformer block (the FFN's inner one),
and erf was generated in f64, whose exp LLVM calls from libm one element at a time: on a BERT encoder
(hidden 256, seq 64) that erf alone was a third of the run time. As an activation of the producing matmul it
is one vectorized pass in f32, in place on the product.

- "gelu_erf" (erf form) and "gelu_tanh" are defined here with `define_activation` (codegen body and numpy
  meaning); glow-fuse-activations imports this module, so both exist wherever a fused op can carry them.
- The body computes erf with opdefs/scalar's `erf` (in f32 the rational approximation of Eigen/XLA, within
  5e-7 of erf, checked against math.erf in test/python/passes/graph/test_fuse_transformer.py; in f64 for
  other float types). tanh goes through math.tanh, which glow-cpu-schedule replaces by fastmath's.
- "silu" (x * sigmoid(x): EfficientNet's, the ts ResNets', Llama's gate; exported as Sigmoid and Mul) and
  "hard_swish" (x * clip(x / 6 + 0.5, 0, 1): MobileNetV3's, which the importer writes as Mul, Add, Max, Min,
  Mul) are defined here too: unfused, each was two to five passes over the activation after its producer
  (EfficientNet-B0's Sigmoid kernels alone took 4 % of its run).
- `match_region(y)` finds the elementwise ops after y that compute one of these forms whatever their order
  and spelling (x / sqrt 2 or x * 1 / sqrt 2, 0.5 first or last, x^3 as pow or products): it collects the
  connected region of elementwise ops reading y and uniform constants, with at most one erf, tanh or sigmoid
  and one value leaving it, and evaluates that region (with the interpreter's evaluators) at sample points over
  [-8, 8], against each form with that transcendental (or none): a region that agrees everywhere to f32
  rounding is that form.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from mlir import ir
from mlir.dialects import arith
from mlir.dialects import math as mmath

from glow_mlir import ops
from glow_mlir.interpreter import evaluate
from glow_mlir.opdefs import scalar as s
from glow_mlir.opdefs.base import Activation, define_activation
from glow_mlir.passes.graph import utils as g

SQRT_HALF = 1.0 / math.sqrt(2.0)
TANH_SCALE = math.sqrt(2.0 / math.pi)
TANH_CUBIC = 0.044715
# The ops a GELU region may hold besides its one erf or tanh, and the most ops it has (ONNX's tanh Gelu: 9).
_ARITHMETIC = ("glow.add", "glow.sub", "glow.mul", "glow.div", "glow.pow", "glow.neg", "glow.max", "glow.min")
_TRANSCENDENTAL = ("glow.erf", "glow.tanh", "glow.sigmoid")
_MAX_REGION = 10
# Sample points of the numeric identification, and its tolerance (f32 rounding of ~10 ops, relative).
_SAMPLES = np.concatenate([np.linspace(-8.0, 8.0, 161), [-0.3, 0.1, 0.7071, 1.5, 2.5, 3.3]])
_RTOL = 2e-5


def _half_x_times(x: ir.Value, inner: ir.Value) -> ir.Value:
    """0.5 * x * (1 + inner)."""
    one_plus = arith.addf(s.constant(x.type, 1.0), inner)
    return arith.mulf(arith.mulf(x, s.constant(x.type, 0.5)), one_plus)


def gelu_scalar(x: ir.Value, _: list[float]) -> ir.Value:
    """x * 0.5 * (1 + erf(x / sqrt 2))."""
    return _half_x_times(x, s.erf(arith.mulf(x, s.constant(x.type, SQRT_HALF))))


def gelu_tanh_scalar(x: ir.Value, _: list[float]) -> ir.Value:
    """0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))."""
    cube = arith.mulf(arith.mulf(x, x), x)
    inner = arith.addf(x, arith.mulf(s.constant(x.type, TANH_CUBIC), cube))
    return _half_x_times(x, mmath.tanh(arith.mulf(s.constant(x.type, TANH_SCALE), inner)))


_erf64 = np.vectorize(math.erf, otypes=[np.float64])


def gelu_reference(y: np.ndarray, _: list[float] | None = None) -> np.ndarray:
    y = np.asarray(y, np.float64)
    return 0.5 * y * (1.0 + _erf64(y * SQRT_HALF))


def gelu_tanh_reference(y: np.ndarray, _: list[float] | None = None) -> np.ndarray:
    y = np.asarray(y, np.float64)
    return 0.5 * y * (1.0 + np.tanh(TANH_SCALE * (y + TANH_CUBIC * y**3)))


def silu_scalar(x: ir.Value, _: list[float]) -> ir.Value:
    """x * sigmoid(x)."""
    return arith.mulf(x, s.sigmoid(x))


def silu_reference(y: np.ndarray, _: list[float] | None = None) -> np.ndarray:
    y = np.asarray(y, np.float64)
    with np.errstate(over="ignore"):  # exp(-y) is inf for y below -709: the result is -0, as in the body
        return y / (1.0 + np.exp(-y))


def hard_swish_scalar(x: ir.Value, _: list[float]) -> ir.Value:
    """x * clip(x / 6 + 0.5, 0, 1), NaN kept."""
    linear = arith.addf(arith.mulf(x, s.constant(x.type, 1.0 / 6.0)), s.constant(x.type, 0.5))
    return arith.mulf(x, s.clip(linear, 0.0, 1.0))


def hard_swish_reference(y: np.ndarray, _: list[float] | None = None) -> np.ndarray:
    y = np.asarray(y, np.float64)
    return y * np.clip(y / 6.0 + 0.5, 0.0, 1.0)


def silu_f16_scalar(x: ir.Value, _: list[float]) -> ir.Value:
    """An f16 model's SiLU as glow-lower's widen_half computes it: z = round(x), round(z * round(sigmoid(z)))."""
    z = s.round_f16(x)
    return s.round_f16(arith.mulf(z, s.round_f16(s.sigmoid(z))))


def silu_f16_reference(y: np.ndarray, _: list[float] | None = None) -> np.ndarray:
    # sigmoid as the interpreter evaluates it (f64, then f32); z * round(sigmoid z) is exact in f32 (11-bit factors).
    z = np.asarray(y).astype(np.float16).astype(np.float32)
    sigmoid = (1.0 / (1.0 + np.exp(-z.astype(np.float64)))).astype(np.float32)
    return (z * sigmoid.astype(np.float16).astype(np.float32)).astype(np.float16).astype(np.float64)


define_activation(Activation("gelu_erf", (), gelu_scalar, gelu_reference))
define_activation(Activation("gelu_tanh", (), gelu_tanh_scalar, gelu_tanh_reference))
define_activation(Activation("silu", (), silu_scalar, silu_reference))
define_activation(Activation("hard_swish", (), hard_swish_scalar, hard_swish_reference))
define_activation(Activation("silu_f16", (), silu_f16_scalar, silu_f16_reference))
# The form of a region by its one transcendental op (None: none).
_FORMS = {
    "glow.erf": ("gelu_erf", gelu_reference),
    "glow.tanh": ("gelu_tanh", gelu_tanh_reference),
    "glow.sigmoid": ("silu", silu_reference),
    None: ("hard_swish", hard_swish_reference),
}
# The forms of regions holding round_f16 (an f16 model's ops, each result rounded: widen_half), which start by
# rounding y: SiLU (EfficientNet's, YOLO's in fp16). Their results agree with the region's to an f16 step.
_ROUNDING = "glow.round_f16"
_F16_FORMS = {"glow.sigmoid": ("silu_f16", silu_f16_reference)}
_F16_RTOL = 2.0**-10


def match_region(y: ir.Value) -> tuple[str, list[float], ir.Operation] | None:
    """(the form's name, [], the op whose result is the form of y) when the elementwise ops reading y compute
    GELU, SiLU or HardSwish and nothing else reads their intermediate results; else None."""
    closure = _closure(y)
    if closure is None:
        return None
    for last in closure:
        region = _ancestors(last, closure)
        if not _self_contained(y, region, last):
            continue
        kinds = [op.name for op in region if op.name in _TRANSCENDENTAL]
        if len(kinds) > 1:
            continue
        kind = kinds[0] if kinds else None
        rounded = any(op.name == _ROUNDING for op in region)
        if rounded and (kind not in _F16_FORMS or region[0].name != _ROUNDING or region[0].operands[0] != y
                        or last.name != _ROUNDING):
            continue
        name, reference = _F16_FORMS[kind] if rounded else _FORMS[kind]
        tolerance = _F16_RTOL if rounded else _RTOL
        got = _evaluate(y, region, last)
        if got is not None and np.allclose(got, reference(_SAMPLES), rtol=tolerance, atol=tolerance):
            return name, [], last
    return None


def _closure(y: ir.Value) -> list[ir.Operation] | None:
    """The elementwise ops (program order) reachable from y through ops whose every other operand is a
    uniform constant or a value computed from y; None when y has no such reader or the region is too big."""
    if not isinstance(ops.element_type(y), ir.FloatType):
        return None
    inside: list[ir.Operation] = []
    values = [y]
    frontier = [y]
    while frontier:
        value = frontier.pop()
        for user in g.users(value):
            if user in inside or user.name not in (*_ARITHMETIC, *_TRANSCENDENTAL, _ROUNDING):
                continue
            if user.results[0].type != y.type:
                continue
            if not all(any(v == known for known in values) or g.uniform_value(v) is not None for v in user.operands):
                continue
            inside.append(user)
            if len(inside) > _MAX_REGION:
                return None
            values.append(user.results[0])
            frontier.append(user.results[0])
    if not inside:
        return None
    # A few ops, ordered by MLIR's own order within the block (an index of the whole block per closure was
    # quadratic in the function: 0.8 s of MobileNetV5-300M's 4700 ops).
    return sorted(inside, key=functools.cmp_to_key(lambda a, b: -1 if a.is_before_in_block(b) else 1))


def _ancestors(last: ir.Operation, closure: list[ir.Operation]) -> list[ir.Operation]:
    """The ops of `closure` that `last` depends on, `last` included, in program order."""
    needed = {last}
    for op in reversed(closure):
        if op in needed:
            for v in op.operands:
                source = g.producer(v)
                if source is not None and source in closure:
                    needed.add(source)
    return [op for op in closure if op in needed]


def _self_contained(y: ir.Value, region: list[ir.Operation], last: ir.Operation) -> bool:
    """Whether y is read only inside `region` and every result in it but `last`'s only inside it."""
    if any(user not in region for user in g.users(y)):
        return False
    return all(all(user in region for user in g.users(op.results[0])) for op in region if op != last)


def _evaluate(y: ir.Value, region: list[ir.Operation], last: ir.Operation) -> np.ndarray | None:
    """`region` applied to the sample points (each op by its own evaluator, in y's element type)."""
    dtype = ops.numpy_dtype(ops.element_type(y))
    known: list[tuple[ir.Value, np.ndarray]] = [(y, _SAMPLES.astype(dtype))]

    def lookup(value: ir.Value) -> np.ndarray:
        for candidate, array in known:
            if candidate == value:
                return array
        return np.full(_SAMPLES.shape, g.uniform_value(value), dtype)

    for op in region:
        known.append((op.results[0], evaluate_samples(op, [lookup(v) for v in op.operands])))
    result = lookup(last.results[0]).astype(np.float64)
    return result if np.all(np.isfinite(result)) else None


def evaluate_samples(op: ir.Operation, operands: list[np.ndarray]) -> np.ndarray:
    """One elementwise op on 1-D sample arrays (its evaluator broadcasts like numpy)."""
    return np.asarray(evaluate(op, operands)).reshape(_SAMPLES.shape)
