"""The IR passes' work grows linearly with the model: counted in the uses they list, never timed. Quantized (QDQ)
models end in long runs of elementwise instructions that glow-ir-share-buffers puts in one buffer (HRM-Text QDQ's
residual stream: 583 instructions), where asking each instruction for all of the buffer's accesses is quadratic."""

from __future__ import annotations

import pytest
from mlir import ir

from glow_mlir import ops
from glow_mlir.context import make_context
from glow_mlir.passes.ir import utils as u
from glow_mlir.pipeline.runner import run_pipeline

_T = "memref<64xf32>"


def _chain(length: int) -> str:
    """`length` unary instructions in a row, each writing a fresh activation from the previous one, which dies
    there: glow-ir-share-buffers puts them all in the first one's buffer."""
    lines = ['%a0 = "glow_ir.alloc_activation"() : () -> ' + _T,
             f'"glow_ir.element_exp"(%a0, %x) {{roles = ["out", "in"]}} : ({_T}, {_T}) -> ()']  # fmt: skip
    for i in range(1, length):
        lines += [
            f'%a{i} = "glow_ir.alloc_activation"() : () -> {_T}',
            f'"glow_ir.element_neg"(%a{i}, %a{i - 1}) {{roles = ["out", "in"]}} : ({_T}, {_T}) -> ()',
            f'"glow_ir.dealloc_activation"(%a{i - 1}) {{roles = ["out"]}} : ({_T}) -> ()',
        ]
    lines += [
        f'"glow_ir.copy"(%y, %a{length - 1}) {{roles = ["out", "in"]}} : ({_T}, {_T}) -> ()',
        f'"glow_ir.dealloc_activation"(%a{length - 1}) {{roles = ["out"]}} : ({_T}) -> ()',
    ]
    body = "\n  ".join(lines)
    return (f'func.func @chain(%x: {_T} {{glow.name = "x"}}, %y: {_T} {{glow.name = "y", glow.output}}) {{\n'
            f"  {body}\n  return\n}}")  # fmt: skip


def _uses_listed(length: int, monkeypatch: pytest.MonkeyPatch) -> int:
    """How many uses glow-ir-share-buffers lists (`u.users`) on a chain of `length`; checks it shared them all."""
    listed = 0
    users = u.users

    def counted(value: ir.Value) -> list[ir.Operation]:
        nonlocal listed
        found = users(value)
        listed += len(found)
        return found

    with make_context():
        module = ir.Module.parse(_chain(length))
        with monkeypatch.context() as patch:
            patch.setattr(u, "users", counted)
            run_pipeline(module, ["glow-ir-share-buffers"])
        run_pipeline(module, ["glow-ir-verify"])
        names = [op.name for op in ops.walk_ops(ops.functions(module)[0])]
    assert names.count(u.ALLOC) == 1 and names.count(u.DEALLOC) == 1
    return listed


def test_share_buffers_lists_uses_linearly_in_a_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each instruction of a chain shares the buffer its operand dies in; that the operand dies there, and where
    the buffer's dealloc is, are kept per buffer for the sweep, not found among its users (all the chain's
    instructions so far): the uses listed for 200 instructions are twice those for 100, not four times."""
    short, long = _uses_listed(100, monkeypatch), _uses_listed(200, monkeypatch)
    assert long <= 2.1 * short, (short, long)
