"""The op-definition layer: every `glow` op and `glow_ir` instruction stated once, read by every stage.

    from glow_mlir import opdefs
    opdefs.glow_op("glow.relu").scalar        # the definition of one op (KeyError naming it if undefined)
    opdefs.ELEMENTWISE, opdefs.IN_PLACE, ...  # the tables stages read, derived from the definitions

The definitions live by category in `math`, `nn` and `tensor` (a backend defines its own ops in its folder,
e.g. `glow_mlir.backends.cpu.ops`); `base` says what a definition holds, `shapes` and `types` hold the rules
they name, `reference` the numpy evaluators, `scalar` the scalar bodies of elementwise code, and `irdl`
renders the dialect files from them. docs/NewOperators.md says how to add an op.
"""

from __future__ import annotations

from typing import TypeVar

from glow_mlir.opdefs import math, nn, random, tensor  # noqa: F401  (importing a category defines its ops)
from glow_mlir.opdefs.base import (
    Activation,
    IrDef,
    OpDef,
    Trait,
    activations,
    glow_ops,
    ir_ops,
)

T = TypeVar("T")

__all__ = ["Activation", "IrDef", "OpDef", "Trait", "activations", "glow_op", "glow_ops", "ir_op", "ir_ops"]


def glow_op(name: str) -> OpDef:
    """The definition of glow op `name` (with or without the `glow.` prefix)."""
    return _lookup(glow_ops(), "glow", name, "op")


def ir_op(name: str) -> IrDef:
    """The definition of glow_ir instruction `name` (with or without the `glow_ir.` prefix)."""
    return _lookup(ir_ops(), "glow_ir", name, "instruction")


def _lookup(table: dict[str, T], dialect: str, name: str, what: str) -> T:
    key = name.removeprefix(f"{dialect}.")
    if key not in table:
        raise KeyError(f"{dialect}.{key} has no {what} definition (glow_mlir/opdefs)")
    return table[key]


def with_trait(trait: Trait) -> frozenset[str]:
    """Full names of the glow ops that have `trait` (backend ops included once their backend is loaded)."""
    return frozenset(op.full_name for op in glow_ops().values() if op.has(trait))


def elementwise(arity: int | None = None) -> frozenset[str]:
    """Full names of the elementwise glow ops, of `arity` operands when given."""
    return frozenset(
        op.full_name
        for op in glow_ops().values()
        if op.has(Trait.ELEMENTWISE) and (arity is None or len(op.operands) == arity)
    )


def in_place() -> frozenset[str]:
    """Full names of the glow_ir instructions whose destination may be one of their @in buffers."""
    return frozenset(instr.full_name for instr in ir_ops().values() if instr.in_place)


def graph_rules_of(instr: IrDef) -> OpDef | None:
    """The glow op whose shape and type rules instruction `instr` follows, or None (it states its own)."""
    return glow_ops()[instr.graph] if instr.graph is not None else None
