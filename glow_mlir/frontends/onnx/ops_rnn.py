"""ONNX RNN, GRU and LSTM, composed from glow ops inside a `glow.loop` over time.

seq_length is static, so each direction is one matmul projecting the input of every time step at once
(X x W^T plus the biases), then a `glow.loop` (glow_mlir/opdefs/control.py) over the projection's time steps
whose body is one step: a matmul with the recurrence weights and the elementwise gate arithmetic. The
generated code runs the body in an scf.for, so its size does not depend on seq_length; the weights are
constants inside the body (or the loop's invariants when they are graph inputs).

Supported: directions forward, reverse and bidirectional; every activation of the spec with its
activation_alpha / activation_beta (consumed in order by the activations that take them, as onnxruntime
does); clip (on the gates' pre-activations); LSTM input_forget and peepholes; GRU linear_before_reset;
initial_h / initial_c; layout 0 and 1; the outputs Y, Y_h and Y_c. sequence_lens must be known at compile
time: steps past a batch entry's length leave its state unchanged and its Y zero (the body compares the
iteration number with the lengths), and a reverse direction starts at each entry's last step (a gather
reorders each entry's steps before and after the loop).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from glow_mlir.frontends.onnx.node import NodeContext, Value, dtype, shape
from glow_mlir.frontends.onnx.ops_control import body_symbol, loop_op, stack, take
from glow_mlir.opdefs import control
from glow_mlir.frontends.onnx.registry import handles

Activation = Callable[[Value], Value]

# Activations by lower-case name: (alpha, beta) defaults, None where the activation takes no such parameter.
_PARAMETERS: dict[str, tuple[float | None, float | None]] = {
    "relu": (None, None), "tanh": (None, None), "sigmoid": (None, None), "softsign": (None, None),
    "softplus": (None, None), "affine": (1.0, 0.0), "leakyrelu": (0.01, None), "thresholdedrelu": (1.0, None),
    "scaledtanh": (1.0, 1.0), "hardsigmoid": (0.2, 0.5), "elu": (1.0, None),
}
# (gates, default activations) per op.
_KINDS = {"RNN": (1, ["Tanh"]), "GRU": (3, ["Sigmoid", "Tanh"]), "LSTM": (4, ["Sigmoid", "Tanh", "Tanh"])}


@dataclass
class _Cell:
    """What one direction computes with: its weights transposed, activations and options."""

    kind: str
    hidden: int
    w: Value  # [input, gates * hidden]
    r: Value  # [hidden, gates * hidden]
    bias_x: Value | None  # [gates * hidden], added to the input projection
    bias_h: Value | None  # GRU linear_before_reset: Rbh, inside the reset product
    peepholes: Value | None  # LSTM [3 * hidden]: i, o, f
    f: list[Activation]
    clip: float | None
    input_forget: bool  # LSTM: the forget gate is 1 - the input gate
    linear_before_reset: bool  # GRU: the reset gate multiplies H x Rh + Rbh rather than H


def _activation(ctx: NodeContext, name: str, alpha: float | None, beta: float | None) -> Activation:
    g = ctx.g

    def k(x: Value, value: float | None) -> Value:
        return ctx.scalar_like(x, float(value or 0.0))

    table: dict[str, Activation] = {
        "relu": g.relu, "tanh": g.tanh, "sigmoid": g.sigmoid,
        "softsign": lambda x: g.div(x, g.add(g.abs(x), k(x, 1))),
        "softplus": lambda x: g.log(g.add(g.exp(x), k(x, 1))),
        "affine": lambda x: g.add(g.mul(x, k(x, alpha)), k(x, beta)),
        "leakyrelu": lambda x: g.select(g.cmp_lt(x, k(x, 0)), g.mul(x, k(x, alpha)), x),
        "thresholdedrelu": lambda x: g.select(g.cmp_lt(k(x, alpha), x), x, k(x, 0)),
        "scaledtanh": lambda x: g.mul(g.tanh(g.mul(x, k(x, beta))), k(x, alpha)),
        "hardsigmoid": lambda x: g.min(g.max(g.add(g.mul(x, k(x, alpha)), k(x, beta)), k(x, 0)), k(x, 1)),
        "elu": lambda x: g.select(g.cmp_lt(x, k(x, 0)), g.mul(g.sub(g.exp(x), k(x, 1)), k(x, alpha)), x),
    }
    return table[name]


def _activations(ctx: NodeContext, count: int, directions: int) -> list[list[Activation]]:
    """The activation functions of each direction, their alphas and betas consumed in order."""
    names = ctx.attr("activations", _KINDS[ctx.op_type][1] * directions)
    if len(names) != count * directions:
        raise ctx.invalid(f"activations {names}: expected {count * directions} ({count} per direction)")
    alphas, betas = list(ctx.attr("activation_alpha", [])), list(ctx.attr("activation_beta", []))
    funcs: list[Activation] = []
    for name in names:
        key = name.lower()
        if key not in _PARAMETERS:
            raise ctx.unsupported("activations", f"'{name}' is not one of {sorted(_PARAMETERS)}")
        default_alpha, default_beta = _PARAMETERS[key]
        alpha = None if default_alpha is None else (alphas.pop(0) if alphas else default_alpha)
        beta = None if default_beta is None else (betas.pop(0) if betas else default_beta)
        funcs.append(_activation(ctx, key, alpha, beta))
    return [funcs[d * count:(d + 1) * count] for d in range(directions)]


@handles("RNN", "GRU", "LSTM")
def recurrent(ctx: NodeContext) -> list[Value]:
    kind = ctx.op_type
    gates, default_activations = _KINDS[kind]
    layout = ctx.attr("layout", 0)
    x = ctx.input(0)
    if len(shape(x)) != 3:
        raise ctx.invalid(f"X must have rank 3, got shape {list(shape(x))}")
    if layout:
        x = ctx.transpose(x, [1, 0, 2])
    seq, batch, _ = shape(x)
    if len(shape(ctx.input(1))) != 3 or len(shape(ctx.input(2))) != 3:
        raise ctx.invalid(f"W {list(shape(ctx.input(1)))} and R {list(shape(ctx.input(2)))} must have rank 3")
    hidden = ctx.attr("hidden_size", shape(ctx.input(2))[-1])
    direction = ctx.attr("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise ctx.unsupported("direction", f"'{direction}' is not forward, reverse or bidirectional")
    directions = 2 if direction == "bidirectional" else 1
    w, r = ctx.input(1), ctx.input(2)
    if shape(w)[:2] != (directions, gates * hidden) or shape(r) != (directions, gates * hidden, hidden):
        raise ctx.invalid(f"W {list(shape(w))} and R {list(shape(r))} do not match {directions} direction(s) of "
                          f"{gates} gate(s) of hidden size {hidden}")
    lengths = _sequence_lens(ctx, seq, batch)
    initial = [_state(ctx, i, layout, directions, batch, hidden, dtype(x)) for i in (5, 6)]
    activations = _activations(ctx, len(default_activations), directions)
    clip = ctx.attr("clip", None)
    ys, hs, cs = [], [], []
    for d in range(directions):
        cell = _cell(ctx, kind, d, hidden, activations[d], clip)
        reverse = direction == "reverse" or d == 1
        y, h, c = _run(ctx, cell, x, lengths, reverse, take(ctx, initial[0], 0, d),
                       take(ctx, initial[1], 0, d) if kind == "LSTM" else None)
        ys.append(y)
        hs.append(h)
        cs.append(c)
    y_all = stack(ctx, ys, 1)  # [seq, directions, batch, hidden]
    h_all, c_all = stack(ctx, hs, 0), (stack(ctx, cs, 0) if kind == "LSTM" else None)
    if layout:
        y_all = ctx.transpose(y_all, [2, 0, 1, 3])
        h_all = ctx.transpose(h_all, [1, 0, 2])
        c_all = None if c_all is None else ctx.transpose(c_all, [1, 0, 2])
    return [y_all, h_all] + ([c_all] if c_all is not None else [])


def _sequence_lens(ctx: NodeContext, seq: int, batch: int) -> list[int] | None:
    """Each batch entry's length, None when all are seq_length."""
    if ctx.optional(4) is None:
        return None
    lengths = ctx.ints(4, "sequence_lens")
    assert lengths is not None
    if len(lengths) != batch or not all(1 <= n <= seq for n in lengths):
        raise ctx.invalid(f"sequence_lens {lengths} must hold {batch} lengths in [1, {seq}]")
    return None if all(n == seq for n in lengths) else lengths


def _state(ctx: NodeContext, i: int, layout: int, directions: int, batch: int, hidden: int, dt: np.dtype
           ) -> Value:
    """initial_h (input 5) or initial_c (6) as [directions, batch, hidden]; zeros when absent."""
    v = ctx.optional(i)
    if v is None:
        return ctx.full([directions, batch, hidden], 0, dt)
    if layout:
        v = ctx.transpose(v, [1, 0, 2])
    if shape(v) != (directions, batch, hidden):
        raise ctx.invalid(f"input {i} has shape {list(shape(v))}, expected {[directions, batch, hidden]} "
                          f"(layout {layout})")
    return v


def _cell(ctx: NodeContext, kind: str, d: int, hidden: int, f: list[Activation], clip: float | None) -> _Cell:
    gates = _KINDS[kind][0]
    w = ctx.transpose(take(ctx, ctx.input(1), 0, d), [1, 0])
    r = ctx.transpose(take(ctx, ctx.input(2), 0, d), [1, 0])
    bias_x = bias_h = None
    linear_before_reset = kind == "GRU" and bool(ctx.attr("linear_before_reset", 0))
    if ctx.optional(3) is not None:
        b = take(ctx, ctx.input(3), 0, d)
        wb, rb = ctx.g.slice(b, [0], [gates * hidden]), ctx.g.slice(b, [gates * hidden], [gates * hidden])
        if linear_before_reset:
            # Rb of the hidden gate is multiplied by the reset gate, so it stays out of the projection.
            zr = ctx.g.slice(rb, [0], [2 * hidden])
            bias_x = ctx.g.add(wb, ctx.g.concat([zr, ctx.full([hidden], 0, dtype(rb))], 0))
            bias_h = ctx.g.slice(rb, [2 * hidden], [hidden])
        else:
            bias_x = ctx.g.add(wb, rb)
    peepholes = take(ctx, ctx.input(7), 0, d) if kind == "LSTM" and ctx.optional(7) is not None else None
    input_forget = kind == "LSTM" and bool(ctx.attr("input_forget", 0))
    return _Cell(kind, hidden, w, r, bias_x, bias_h, peepholes, f, clip, input_forget, linear_before_reset)


def _run(ctx: NodeContext, cell: _Cell, x: Value, lengths: list[int] | None, reverse: bool, h: Value,
         c: Value | None) -> tuple[Value, Value, Value | None]:
    """One direction over the sequence as a glow.loop: Y [seq, batch, hidden], the last H and C."""
    seq, batch, features = shape(x)
    width = shape(cell.w)[1]
    projected = ctx.g.matmul(ctx.reshape(x, [seq * batch, features]), cell.w)
    if cell.bias_x is not None:
        projected = ctx.g.add(projected, ctx.broadcast_to(cell.bias_x, [seq * batch, width]))
    projected = ctx.reshape(projected, [seq, batch, width])
    # With lengths, a reverse direction reads each entry's steps last first: the steps are reordered per
    # entry (an involution, so the same gather puts Y back) and the loop runs forward.
    reorder = lengths is not None and reverse and any(n != seq for n in lengths)
    if reorder:
        projected = _reorder(ctx, projected, lengths)
    backward = int(reverse and not reorder)
    carried = [h] if c is None else [h, c]
    spec = control.Loop(body_symbol(ctx), seq, len(carried), 1, 0, (0,), (backward,), (0,), (backward,))

    def step(args: list[Value]) -> list[Value]:
        iteration, h_in, c_in, xw = args[0], args[1], (args[2] if c is not None else None), args[-1]
        h_new, c_new = _step(ctx, cell, xw, h_in, c_in)
        if lengths is None:
            return [h_new, *([c_new] if c_new is not None else []), h_new]
        # Entry b takes step `iteration` when iteration < its length; else its state holds and its Y is zero.
        counts = np.array([[n] for n in lengths], np.int64).repeat(cell.hidden, 1)
        valid = ctx.g.cmp_lt(ctx.broadcast_to(iteration, [batch, cell.hidden]), counts)
        held = [ctx.g.select(valid, h_new, h_in)]
        if c_new is not None:
            held.append(ctx.g.select(valid, c_new, c_in))
        return [*held, ctx.g.select(valid, h_new, ctx.scalar_like(h_new, 0))]

    outs = loop_op(ctx, carried, [projected], spec, step)
    y = _reorder(ctx, outs[-1], lengths) if reorder else outs[-1]
    return y, outs[0], (outs[1] if c is not None else None)


def _reorder(ctx: NodeContext, table: Value, lengths: list[int]) -> Value:
    """[seq, batch, width] whose [t, b] is table[n_b - 1 - t, b] for t < n_b (entry b's length) and
    table[t, b] beyond: each entry's steps reversed. Applied twice it is the identity."""
    seq, batch, width = shape(table)
    rows = [(n - 1 - t if t < n else t) * batch + b for t in range(seq) for b, n in enumerate(lengths)]
    flat = ctx.g.gather(ctx.reshape(table, [seq * batch, width]), np.array(rows, np.int64), 0)
    return ctx.reshape(flat, [seq, batch, width])


def _gate(ctx: NodeContext, v: Value, k: int, hidden: int) -> Value:
    return ctx.g.slice(v, [0, k * hidden], [shape(v)[0], hidden])


def _clip(ctx: NodeContext, cell: _Cell, v: Value) -> Value:
    if cell.clip is None:
        return v
    return ctx.g.min(ctx.g.max(v, ctx.scalar_like(v, -cell.clip)), ctx.scalar_like(v, cell.clip))


def _step(ctx: NodeContext, cell: _Cell, xw: Value, h: Value, c: Value | None) -> tuple[Value, Value | None]:
    """One time step: the new H (and C), given the input's projection `xw` [batch, gates * hidden]."""
    g, n = ctx.g, cell.hidden
    f = cell.f
    if cell.kind == "RNN":
        return f[0](_clip(ctx, cell, g.add(xw, g.matmul(h, cell.r)))), None
    if cell.kind == "GRU":
        hr = g.matmul(h, cell.r)
        z = f[0](_clip(ctx, cell, g.add(_gate(ctx, xw, 0, n), _gate(ctx, hr, 0, n))))
        reset = f[0](_clip(ctx, cell, g.add(_gate(ctx, xw, 1, n), _gate(ctx, hr, 1, n))))
        if cell.linear_before_reset:
            recurrent = _gate(ctx, hr, 2, n)
            if cell.bias_h is not None:
                recurrent = g.add(recurrent, ctx.broadcast_to(cell.bias_h, shape(recurrent)))
            candidate_in = g.add(_gate(ctx, xw, 2, n), g.mul(reset, recurrent))
        else:
            rh = ctx.g.slice(cell.r, [0, 2 * n], [n, n])
            candidate_in = g.add(_gate(ctx, xw, 2, n), g.matmul(g.mul(reset, h), rh))
        candidate = f[1](_clip(ctx, cell, candidate_in))
        # H = (1 - z) * candidate + z * H, written as candidate + z * (H - candidate).
        return g.add(candidate, g.mul(z, g.sub(h, candidate))), None
    assert c is not None
    gates = g.add(xw, g.matmul(h, cell.r))
    peep = [None] * 3 if cell.peepholes is None else [
        ctx.broadcast_to(ctx.g.slice(cell.peepholes, [k * n], [n]), shape(h)) for k in range(3)]

    def pre(k: int, peephole: Value | None, state: Value) -> Value:
        v = _gate(ctx, gates, k, n)
        return _clip(ctx, cell, v if peephole is None else g.add(v, g.mul(peephole, state)))

    i = f[0](pre(0, peep[0], c))
    forget = g.sub(ctx.scalar_like(i, 1), i) if cell.input_forget else f[0](pre(2, peep[2], c))
    c_new = g.add(g.mul(forget, c), g.mul(i, f[1](pre(3, None, c))))
    o = f[0](pre(1, peep[1], c_new))
    return g.mul(o, f[2](c_new)), c_new
