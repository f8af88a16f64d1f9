"""passes/ir/utils.Positions: order keys that follow the block's order through moves, insertions and erasures
without listing the block again, and that know an op by its address (test_ir_optimizations.py checks that the
IR passes rewrite with them as with a block walk)."""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir

from glow_mlir.passes.ir import utils as u

COUNT = 40


def _block(context: ir.Context) -> tuple[ir.Module, ir.Block]:
    context.allow_unregistered_dialects = True
    body = "\n".join(f'"x.op"() {{i = {i}}} : () -> ()' for i in range(COUNT))
    module = ir.Module.parse(f"func.func @f() {{\n{body}\nreturn\n}}")
    return module, module.body.operations[0].regions[0].blocks[0]


def _check(positions: u.Positions, block: ir.Block) -> None:
    """The keys, `at` and `after` agree with the block's own order."""
    order = positions.order
    assert [u.address(op) for op in order] == [u.address(op) for op in u.block_ops(block)]
    keys = [positions[op] for op in order]
    assert keys == sorted(set(keys))
    assert all(positions.at(positions[op]) == op for op in order)
    assert all(positions.after(a) == b for a, b in zip(order, [*order[1:], None], strict=True))


def test_edits_keep_the_block_order_without_listing_it(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    renumbers: list[None] = []
    renumber = u.Positions._renumber

    def counted(self: u.Positions) -> None:
        renumbers.append(None)
        renumber(self)

    monkeypatch.setattr(u.Positions, "_renumber", counted)
    with ir.Context() as context, ir.Location.unknown():
        module, block = _block(context)
        positions = u.Positions(block)
        for step in range(120):
            order = positions.order[:-1]  # the return stays last
            op, anchor = (order[i] for i in rng.choice(len(order), 2, replace=False))
            with monkeypatch.context() as patch:
                patch.setattr(ir.Block, "operations", property(lambda _: pytest.fail("the block was listed")))
                if step % 4 == 0:
                    positions.move_before(op, anchor)
                elif step % 4 == 1:
                    positions.move_after(op, anchor)
                elif step % 4 == 2:
                    with ir.InsertionPoint(anchor):
                        new = ir.Operation.create("x.new")
                    positions.inserted_before(new, anchor)
                else:
                    positions.erase(op)
            _check(positions, block)
        assert len(renumbers) == 1  # the constructor's
        # Twenty ops inserted in one place: 16 halvings of the gap fit, then the block is renumbered once.
        anchor = positions.order[3]
        for _ in range(20):
            with ir.InsertionPoint(anchor):
                new = ir.Operation.create("x.new")
            positions.inserted_before(new, anchor)
        _check(positions, block)
        assert len(renumbers) == 2
        module.operation.verify()


def test_an_op_stays_known_when_its_operands_change() -> None:
    """The bindings' hash of an Operation changes when a value it reads is replaced, so Positions knows ops by
    address."""
    with ir.Context() as context, ir.Location.unknown():
        context.allow_unregistered_dialects = True
        module = ir.Module.parse('func.func @f(%a: i32, %b: i32) {\n"x.use"(%a) : (i32) -> ()\nreturn\n}')
        block = module.body.operations[0].regions[0].blocks[0]
        positions = u.Positions(block)
        user = u.block_ops(block)[0]
        before = hash(user)
        block.arguments[0].replace_all_uses_with(block.arguments[1])
        assert hash(user) != before
        assert user in positions and positions.at(positions[user]) == user
        # Another Python object for the same op is the same op to Positions.
        assert positions[u.block_ops(block)[0]] == positions[user]
