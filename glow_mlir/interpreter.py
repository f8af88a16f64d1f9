"""The numpy reference interpreter for `glow` dialect modules: the oracle every backend is tested against.

`interpret(module, feeds)` runs a model function op by op; `evaluate(op, operands)` computes one `glow` op
(also the constant folder's engine) with the evaluator its definition names (glow_mlir/opdefs; the numpy
code is in glow_mlir/opdefs/reference.py).

Every result has its op's element type (docs/ARCHITECTURE.md) and integers behave as compiled code's do:
they wrap on overflow and divide truncating toward zero (C, ONNX), not flooring as numpy does. Float sums,
products and transcendental functions are computed in float64 and rounded once to the result type, so the
oracle is at least as accurate as the code it checks.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.errors import UnsupportedError
from glow_mlir.opdefs import control, glow_ops, random

Array = np.ndarray


def interpret(
    module: ir.Module,
    feeds: dict[str, Array],
    function: str | None = None,
    observe: Callable[[ir.Operation, Array], None] | None = None,
    *,
    random_run: int = 0,
    random_seed: int = 0,
) -> dict[str, Array]:
    """Runs the module's model function on `feeds` (by input glow.name); returns its outputs by glow.name.

    `function` names the func.func to run when the module holds more than one. `observe(op, result)`, when
    given, sees every op's result as it is computed (glow_mlir.quantization's profiler records ranges there).
    Random ops draw what a compiled model's run number `random_run` (0: its first) draws with session seed
    `random_seed` (CompiledModel.random_seed; only ops without an ONNX seed read it; glow_mlir/opdefs/random.py).
    """
    token = random.DRAW.set((random_run, random_seed))
    try:
        return _interpret(module, feeds, function, observe)
    finally:
        random.DRAW.reset(token)


def _interpret(
    module: ir.Module,
    feeds: dict[str, Array],
    function: str | None,
    observe: Callable[[ir.Operation, Array], None] | None,
) -> dict[str, Array]:
    fn = _function(module, function)
    block = fn.regions[0].blocks[0]
    input_names = _names(fn, "arg_attrs", len(block.arguments), "input")
    env: dict[ir.Value, Array] = {}
    for arg, name in zip(block.arguments, input_names, strict=True):
        env[arg] = _checked_feed(name, arg.type, feeds)
    extra = sorted(set(feeds) - set(input_names))
    if extra:
        raise ValueError(f"unknown inputs {extra}; the model's inputs are {input_names}")
    for op in block.operations:
        op = op.operation
        if op.name == "func.return":
            output_names = _names(fn, "res_attrs", len(op.operands), "output")
            return {name: env[v] for name, v in zip(output_names, op.operands, strict=True)}
        if op.name == control.LOOP:
            env.update(zip(op.results, _loop(op, [env[v] for v in op.operands]), strict=True))
            continue
        result = evaluate(op, [env[v] for v in op.operands])
        expected = ops.shape(op.results[0])
        if result.shape != expected:
            raise ValueError(
                f"{ops.location_text(op)}: '{op.name}' computed shape {list(result.shape)} but its type says "
                f"{list(expected)} (run glow-verify)"
            )
        env[op.results[0]] = result
        if observe is not None:
            observe(op, result)
    raise ValueError(f"function '{_symbol(fn)}' has no func.return")


def _loop(op: ir.Operation, operands: list[Array]) -> list[Array]:
    """A glow.loop's results: its body function run once per iteration (glow_mlir/opdefs/control.py)."""
    body = control.body_function(op)
    arguments = list(body.regions[0].blocks[0].arguments)

    def run_body(values: list[Array]) -> list[Array]:
        env = {a: np.asarray(v, dtype=_dtype(a)) for a, v in zip(arguments, values, strict=True)}
        for inner in body.regions[0].blocks[0].operations:
            inner = inner.operation
            if inner.name == "func.return":
                return [env[v] for v in inner.operands]
            inputs = [env[v] for v in inner.operands]
            env.update(zip(inner.results, _loop(inner, inputs) if inner.name == control.LOOP
                           else [evaluate(inner, inputs)], strict=True))
        raise ValueError(f"loop body '{_symbol(body)}' has no func.return")

    return control.evaluate(control.Loop.of(op), operands, len(op.results), run_body)


def evaluate(op: ir.Operation | ir.OpView, operands: list[Array]) -> Array:
    """The result of one `glow` op applied to numpy operands, in the op's result element type.

    Operands are taken as the element types the op declares for them.
    """
    op = op.operation if isinstance(op, ir.OpView) else op
    definition = glow_ops().get(op.name.removeprefix(ops.GLOW)) if op.name.startswith(ops.GLOW) else None
    if definition is None:
        raise UnsupportedError(f"{ops.location_text(op)}: the interpreter cannot run '{op.name}'")
    typed = [np.asarray(a, dtype=_dtype(v)) for a, v in zip(operands, op.operands, strict=True)]
    # IEEE semantics, as compiled code has them: 1/0 is inf and sqrt(-1) is nan, without numpy warnings;
    # integers wrap silently as machine integers do.
    with np.errstate(all="ignore"):
        result = definition.evaluate(op, typed)
        # Not ascontiguousarray: it would turn a rank-0 result (a full reduction) into shape [1].
        return np.asarray(result, dtype=_dtype(op.results[0]), order="C")


def _dtype(value: ir.Value) -> np.dtype:
    return ops.numpy_dtype(ops.element_type(value))


def _function(module: ir.Module, name: str | None) -> ir.Operation:
    fns = ops.functions(module)
    if name is None:
        # Loop bodies (glow_mlir/opdefs/control.py) are private functions the model calls.
        fns = [f for f in fns if "sym_visibility" not in f.attributes]
    else:
        fns = [f for f in fns if _symbol(f) == name]
        if not fns:
            raise ValueError(f"the module has no function '{name}'")
    if len(fns) != 1:
        raise ValueError(f"expected one func.func, found {len(fns)}: name the one to run with function=")
    return fns[0]


def _symbol(fn: ir.Operation) -> str:
    return ir.StringAttr(fn.attributes["sym_name"]).value


def _names(fn: ir.Operation, attr: str, count: int, what: str) -> list[str]:
    """The glow.name of each argument or result; a model without them cannot be fed by name."""
    dicts = list(ir.ArrayAttr(fn.attributes[attr])) if attr in fn.attributes else [None] * count
    names = []
    for i, d in enumerate(dicts):
        if d is None or "glow.name" not in ir.DictAttr(d):
            raise ValueError(f"{what} {i} of function '{_symbol(fn)}' has no glow.name")
        names.append(ir.StringAttr(ir.DictAttr(d)["glow.name"]).value)
    return names


def _checked_feed(name: str, type_: ir.Type, feeds: dict[str, Array]) -> Array:
    if name not in feeds:
        raise ValueError(f"missing input '{name}'")
    given = np.asarray(feeds[name])
    shape = ops.shape(type_)
    dtype = ops.numpy_dtype(ops.element_type(type_))
    if given.shape != shape:
        raise ValueError(f"input '{name}': expected shape {list(shape)}, given {list(given.shape)}")
    if given.dtype != dtype:
        raise ValueError(f"input '{name}': expected dtype {dtype}, given {given.dtype}")
    return given
