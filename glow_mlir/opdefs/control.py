"""`glow.loop` and `glow_ir.loop`: a counted loop whose body is a function, stated once for every stage.

A loop runs its body `trip_count` times. The body is a private `func.func` (the `body` symbol) on tensors,
a glow function like any other, so every graph pass and IRGen treat it as they treat the model:

    body(%i: tensor<i64>, carried..., scan slices..., invariants...) -> (carried..., scan output slices...)

`glow.loop`'s operands are the carried values' initial values (`num_carried`), the scan inputs
(`num_scan_inputs`), each sliced along `scan_input_axes[k]` per iteration (the last slice first where
`scan_input_directions[k]` is 1), and the invariants, passed whole to every iteration. Its results are the
carried values after the last iteration, then the scan outputs: the body's per-iteration slices stacked
along `scan_output_axes[k]` (the last iteration first where `scan_output_directions[k]` is 1). This is ONNX
Scan's contract, which also covers Loop with a static trip count and RNN/GRU/LSTM. With `condition` 1 the
body's first result is a `tensor<i1>`, and the loop ends after the first iteration that makes it false, or
after `trip_count` iterations (ONNX Loop with a computed condition); such a loop has no scan outputs, whose
length would be known only at run time.

Operands and results have any types: IRDL variadic groups are homogeneous, so they sit in up to `GROUPS`
groups of consecutive equal-typed values (`operandSegmentSizes`, `resultSegmentSizes`), as glow.concat's.

`glow_ir.loop` is its instruction: operands are the results' buffers (@out), then the operands' buffers
(@in), in the same order; `roles` lists them, so the IR memory passes see an ordinary instruction. Its body is
the bufferized body function, `(i, carried in..., scan slices..., invariants..., carried out..., scan output
slices...)`; glow-allocate (glow_mlir/passes/ir/allocate.py) places the body's activations and per-iteration
slices in the model's arena once, at the loop, and rewrites the instruction into an `scf.for` around the
body's instructions (`glow_mlir/codegen/control.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.opdefs.shapes import ShapeError, require

LOOP = "glow.loop"
IR_LOOP = "glow_ir.loop"
# Marks a body function, so that one whose loop a graph pass erased (its results unused) goes with it.
BODY_ATTR = "glow.loop_body"
# Groups of consecutive equal-typed operands (and results) one loop holds.
GROUPS = 16
_INTS = 'irdl.base "#builtin.dense_array"'
_INT = 'irdl.base "#builtin.integer"'
_SYMBOL = 'irdl.base "#builtin.symbol_ref"'
_INT_ATTRS = ("trip_count", "num_carried", "num_scan_inputs", "condition")
_ATTRS = (
    ("body", _SYMBOL), *((name, _INT) for name in _INT_ATTRS),
    ("scan_input_axes", _INTS), ("scan_input_directions", _INTS), ("scan_output_axes", _INTS),
    ("scan_output_directions", _INTS),
)
DOC = ("A counted loop whose body is the function `body`: carried values, scan inputs sliced per iteration, "
       "invariants; results are the final carried values and the stacked scan outputs.")


def irdl(dialect: str) -> list[str]:
    """The IRDL lines of the loop op of `dialect` (`glow` or `glow_ir`), for glow_mlir.opdefs.irdl."""
    base = '"!builtin.tensor"' if dialect == "glow" else '"!builtin.memref"'
    values = [(f"in{i}", f"irdl.base {base}") for i in range(GROUPS)]
    lines = ["irdl.operands(" + ", ".join(f"in{i}: variadic %in{i}" for i in range(GROUPS)) + ")"]
    if dialect == "glow":
        values += [(f"out{i}", f"irdl.base {base}") for i in range(GROUPS)]
        lines.append("irdl.results(" + ", ".join(f"out{i}: variadic %out{i}" for i in range(GROUPS)) + ")")
        doc = DOC
    else:
        doc = "glow.loop's instruction: @out the results' buffers, @in the operands'; `roles` lists them."
    attrs = list(_ATTRS) + ([] if dialect == "glow" else [("roles", 'irdl.base "#builtin.array"')])
    values += attrs
    lines.append("irdl.attributes {" + ", ".join(f'"{a}" = %{a}' for a, _ in attrs) + "}")
    out = [f"  // {doc}", "  irdl.operation @loop {"]
    out += [f"    %{v} = {c}" for v, c in values] + [f"    {line}" for line in lines] + ["  }"]
    return out


def segments(types: Sequence[ir.Type], what: str) -> ir.DenseI32ArrayAttr:
    """The segment sizes that put values of `types` into GROUPS groups of consecutive equal types."""
    runs = ops.concat_segments(types) if types else []
    if len(runs) > GROUPS:
        raise ShapeError(f"a loop holds at most {GROUPS} runs of equal-typed {what}, got {len(runs)}")
    return ir.DenseI32ArrayAttr.get(runs + [0] * (GROUPS - len(runs)))


@dataclass(frozen=True)
class Loop:
    """A loop's attributes as the stages read them."""

    body: str
    trip_count: int
    num_carried: int
    num_scan_inputs: int
    # 1: the body's first result is an i1 that ends the loop when false (a while loop, at most trip_count).
    condition: int
    scan_input_axes: tuple[int, ...]
    scan_input_directions: tuple[int, ...]
    scan_output_axes: tuple[int, ...]
    scan_output_directions: tuple[int, ...]

    @staticmethod
    def of(op: ir.Operation) -> Loop:
        a = op.attributes
        return Loop(
            ir.FlatSymbolRefAttr(a["body"]).value, *(ops.integer(op, k) for k in _INT_ATTRS),
            *(tuple(ops.ints(op, k)) for k, _ in _ATTRS[1 + len(_INT_ATTRS):]),
        )

    def attributes(self) -> dict[str, ir.Attribute]:
        """The op's attributes (segment sizes aside); needs an active context."""
        values = {"body": ir.FlatSymbolRefAttr.get(self.body)}
        values |= {k: ops.i64(getattr(self, k)) for k in _INT_ATTRS}
        return values | {k: ops.i64_array(getattr(self, k)) for k, _ in _ATTRS[1 + len(_INT_ATTRS):]}

    def slice_index(self, i: int, direction: int) -> int:
        return self.trip_count - 1 - i if direction else i


def body_function(op: ir.Operation) -> ir.Operation:
    """The func.func a loop's `body` names, in the loop's module."""
    name = ir.FlatSymbolRefAttr(op.attributes["body"]).value
    module = op.parent
    while module.name != "builtin.module":
        module = module.parent
    for fn in ops.functions(module):
        if ir.StringAttr(fn.attributes["sym_name"]).value == name:
            return fn
    raise ShapeError(f"names body @{name}, which the module does not define")


Typed = tuple[tuple[int, ...], str]


def _text(t: Typed) -> str:
    return f"{t[1]} {list(t[0])}"


def check(loop: Loop, operands: Sequence[Typed], results: Sequence[Typed], body_in: Sequence[Typed],
          body_out: Sequence[Typed]) -> None:
    """The loop's operands and results agree with its attributes and its body's signature (ShapeError if not)."""
    c, s = loop.num_carried, loop.num_scan_inputs
    require(loop.trip_count >= 1, lambda: f"trip_count {loop.trip_count} must be at least 1")
    require(c + s <= len(operands) and c <= len(results), lambda: f"num_carried {c} and num_scan_inputs {s} exceed the "
            f"{len(operands)} operands / {len(results)} results")
    n_out = len(results) - c
    cond = loop.condition
    require(cond in (0, 1) and not (cond and n_out),
            lambda: f"condition {cond} must be 0, or 1 in a loop without scan outputs")
    require(len(loop.scan_input_axes) == s == len(loop.scan_input_directions),
            lambda: f"scan_input_axes and scan_input_directions must hold {s} values")
    require(len(loop.scan_output_axes) == n_out == len(loop.scan_output_directions),
            lambda: f"scan_output_axes and scan_output_directions must hold {n_out} values")
    require(len(body_in) == 1 + len(operands) and len(body_out) == cond + len(results),
            lambda: f"the body takes {len(body_in)} arguments and gives {len(body_out)} results; the loop needs "
            f"{1 + len(operands)} and {cond + len(results)}")
    require(not cond or body_out[0] == ((), "i1"),
            lambda: f"the body's condition must be i1 [], got {_text(body_out[0])}")
    body_out = body_out[cond:]
    require(body_in[0] == ((), "i64"),
            lambda: f"the body's first argument (the iteration) must be i64 [], got {_text(body_in[0])}")
    for k in range(c):
        require(operands[k] == body_in[1 + k] == body_out[k] == results[k],
                lambda: f"carried value {k}: initial {_text(operands[k])}, body {_text(body_in[1 + k])} -> "
                f"{_text(body_out[k])}, result {_text(results[k])} must agree")
    for k in range(s):
        (dims, elt), axis = operands[c + k], loop.scan_input_axes[k]
        require(0 <= axis < len(dims) and dims[axis] == loop.trip_count,
                lambda: f"scan input {k} {list(dims)} must have {loop.trip_count} slices along axis {axis}")
        require(body_in[1 + c + k] == (dims[:axis] + dims[axis + 1:], elt),
                lambda: f"scan input {k}: the body takes {_text(body_in[1 + c + k])}, a slice is "
                f"{_text((dims[:axis] + dims[axis + 1:], elt))}")
    for k in range(c + s, len(operands)):
        require(operands[k] == body_in[1 + k],
                lambda: f"invariant {k - c - s}: {_text(operands[k])} but the body takes {_text(body_in[1 + k])}")
    for k in range(n_out):
        (dims, elt), axis = body_out[c + k], loop.scan_output_axes[k]
        require(0 <= axis <= len(dims), lambda: f"scan output {k}: axis {axis} out of range for rank {len(dims) + 1}")
        stacked = dims[:axis] + (loop.trip_count,) + dims[axis:]
        require(results[c + k] == (stacked, elt),
                lambda: f"scan output {k}: result {_text(results[c + k])}, the stacked slices are "
                        f"{_text((stacked, elt))}")


def evaluate(loop: Loop, operands: Sequence[np.ndarray], n_results: int,
             run_body: Callable[[list[np.ndarray]], list[np.ndarray]]) -> list[np.ndarray]:
    """The loop's results: `run_body` (the interpreter running the body function) called per iteration."""
    c, s = loop.num_carried, loop.num_scan_inputs
    carried = list(operands[:c])
    scanned, invariants = operands[c:c + s], list(operands[c + s:])
    stacks: list[list[np.ndarray]] = [[] for _ in range(n_results - c)]
    for i in range(loop.trip_count):
        slices = [np.take(x, loop.slice_index(i, d), axis=a)
                  for x, a, d in zip(scanned, loop.scan_input_axes, loop.scan_input_directions)]
        outs = run_body([np.array(i, np.int64), *carried, *slices, *invariants])
        if loop.condition:
            keep_going, outs = bool(outs[0]), outs[1:]
        carried = outs[:c]
        for values, value in zip(stacks, outs[c:]):
            values.append(value)
        if loop.condition and not keep_going:
            break
    stacked = [np.stack(v[::-1] if d else v, axis=a)
               for v, a, d in zip(stacks, loop.scan_output_axes, loop.scan_output_directions)]
    return [*carried, *stacked]
