"""glow-lower's rule for glow.softmax on the CPU: row reductions and elementwise ops that the vector recipes take.

glow_ir.softmax's own lowering (codegen/math.py) is three scalar scf loops per row (max, exp and sum, divide),
which no recipe schedules: one element per iteration, the exp and the sum each a dependency chain, and
stores into dest interleaved with loads from src, which are 4 KiB-aliased when the allocator puts them next
to each other. Attention's softmax over [batch, heads, seq, seq] then ran at about 5 ns per element, and on
GPT-2 at seq 64 it was most of the model's native time. As

    m = batched_reduce_max(x, last axis);  e = exp(x - broadcast(m));  s = batched_reduce_add(e, last axis)
    y = e / broadcast(s)

it is five vector kernels (glow-cpu-schedule reads the broadcasts in place: elementwise_recipes.
forward_broadcasts), the same arithmetic in the same order per element; only the sums' association differs
(vector partial sums), as in any vectorized softmax.

Only f32 rows of 16 elements or more: shorter rows would run as masked vectors, and other float types have
no vector recipe; those keep the instruction.
"""

from __future__ import annotations

from mlir import ir

from glow_mlir import ops
from glow_mlir.passes.lowering.lower import register_rules

# The shortest row worth the decomposition: one whole zmm register of f32.
MIN_ROW = 16


def _make(name: str, operands: list[ir.Value], dims: tuple[int, ...], attributes: dict | None = None) -> ir.Value:
    result = ops.tensor_type(dims, ir.F32Type.get())
    return ops.create(name, operands, [result], attributes).results[0]


def _over_rows(value: ir.Value, dims: tuple[int, ...]) -> ir.Value:
    """The per-row `value` ([..., rows]) broadcast back along the last dim of `dims`."""
    column = _make("glow.reshape", [value], (*dims[:-1], 1), {"dims": ops.i64_array([*dims[:-1], 1])})
    return _make("glow.broadcast", [column], dims, {"axis": ops.i64(0)})


def lower_softmax(op: ir.Operation) -> ir.Value | None:
    """softmax(x) over the last dim as max, exp(x - max), sum and divide; None (kept) for other than f32 rows of
    MIN_ROW or more."""
    x = op.operands[0]
    dims = ops.shape(x)
    if not dims or dims[-1] < MIN_ROW or ops.element_type(x) != ir.F32Type.get():
        return None
    last = {"axes": ops.i64_array([len(dims) - 1])}
    row_max = _make("glow.batched_reduce_max", [x], dims[:-1], last)
    e = _make("glow.exp", [_make("glow.sub", [x, _over_rows(row_max, dims)], dims)], dims)
    total = _make("glow.batched_reduce_add", [e], dims[:-1], last)
    return _make("glow.div", [e, _over_rows(total, dims)], dims)


register_rules({"glow.softmax": lower_softmax})
