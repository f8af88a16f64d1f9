"""Renders the `glow` and `glow_ir` dialects in IRDL from the op definitions.

The files in dialects/ are this module's output (`python -m glow_mlir.opdefs.irdl` rewrites them); a test
checks they are current, so the dialect MLIR loads never disagrees with the definitions the stages read. Each
operand, result and attribute gets its own constraint value (IRDL unifies values that share one), and an
instruction's `roles` attribute is fixed with `irdl.is`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from glow_mlir.opdefs import control
from glow_mlir.opdefs.base import Attr, IrDef, OpDef, glow_ops, ir_ops
from glow_mlir.ops import CONCAT_GROUPS

TENSOR = 'irdl.base "!builtin.tensor"'
MEMREF = 'irdl.base "!builtin.memref"'

GLOW_HEADER = """\
// The high-level `glow` dialect: a strongly typed dataflow graph on tensors with static shapes.
// Ops print in MLIR's generic form. Attribute names follow Glow's node definitions (NodeGen.cpp).
// Semantic rules IRDL cannot state (result shapes, broadcast rules, attribute ranges) are checked by
// the glow-verify pass (glow_mlir/passes/graph/verify.py).
// Generated from the op definitions (glow_mlir/opdefs) by `python -m glow_mlir.opdefs.irdl`: do not edit.
"""
GLOW_IR_HEADER = """\
// The low-level, address-only `glow_ir` dialect (Glow's IR): instructions read and write memref buffers and
// return nothing. The `roles` attribute of each instruction is fixed by this definition (irdl.is) and names
// each operand's role, as Glow's @in/@out/@inout.
// Generated from the op definitions (glow_mlir/opdefs) by `python -m glow_mlir.opdefs.irdl`: do not edit.
"""


def _operation(name: str, doc: str, values: list[tuple[str, str]], lines: list[str]) -> list[str]:
    out = [f"  // {doc}"] if doc else []
    out.append(f"  irdl.operation @{name} {{")
    out += [f"    %{value} = {constraint}" for value, constraint in values]
    out += [f"    {line}" for line in lines]
    out.append("  }")
    return out


def _attributes(attrs: list[tuple[str, str]]) -> str:
    return "irdl.attributes {" + ", ".join(f'"{a}" = %{a}' for a, _ in attrs) + "}"


def _glow_op(op: OpDef) -> list[str]:
    values: list[tuple[str, str]] = []
    lines: list[str] = []
    if op.variadic:
        groups = [f"{op.operands[0]}{i}" for i in range(CONCAT_GROUPS)]
        values += [(g, TENSOR) for g in groups]
        operands = ", ".join(f"{g}: variadic %{g}" for g in groups)
    else:
        values += [(o, TENSOR) for o in op.operands]
        operands = ", ".join(f"{o}: %{o}" for o in op.operands)
    values += [(r, TENSOR) for r in op.results]
    attrs = [(name, kind.irdl) for name, kind in op.attrs]
    values += attrs
    if op.operands:
        lines.append(f"irdl.operands({operands})")
    lines.append("irdl.results(" + ", ".join(f"{r}: %{r}" for r in op.results) + ")")
    if attrs:
        lines.append(_attributes(attrs))
    return _operation(op.name, op.doc, values, lines)


def _ir_op(instr: IrDef) -> list[str]:
    graph = glow_ops().get(instr.graph) if instr.graph else None
    kinds = dict(graph.attrs) if graph else {}
    kinds.update(dict(instr.attr_kinds))
    values = [(name, MEMREF) for name, _ in instr.operands] + [(r, MEMREF) for r in instr.results]
    attrs = [(name, kinds.get(name, Attr.ANY).irdl) for name in instr.attrs]
    if instr.roles:
        attrs.append(("roles", "irdl.is [" + ", ".join(f'"{r}"' for r in instr.role_list) + "]"))
    values += attrs
    lines = []
    if instr.operands:
        lines.append("irdl.operands(" + ", ".join(f"{n}: %{n}" for n, _ in instr.operands) + ")")
    if instr.results:
        lines.append("irdl.results(" + ", ".join(f"{r}: %{r}" for r in instr.results) + ")")
    if attrs:
        lines.append(_attributes(attrs))
    return _operation(instr.name, instr.doc, values, lines)


def render(dialect: str) -> str:
    """The IRDL text of dialect `glow` or `glow_ir`, from every definition registered."""
    if dialect == "glow":
        header, bodies = GLOW_HEADER, [_glow_op(op) for op in glow_ops().values()]
    elif dialect == "glow_ir":
        header, bodies = GLOW_IR_HEADER, [_ir_op(instr) for instr in ir_ops().values()]
    else:
        raise ValueError(f"unknown dialect '{dialect}': glow or glow_ir")
    # The loop's operands and results have any number and types, which an OpDef does not state.
    bodies.append(control.irdl(dialect))
    ops = "\n\n".join("\n".join(body) for body in bodies)
    return f"{header}irdl.dialect @{dialect} {{\n{ops}\n}}\n"


def main() -> None:
    parser = argparse.ArgumentParser(description="Writes dialects/*.irdl.mlir from the op definitions.")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[2] / "dialects"))
    args = parser.parse_args()
    import glow_mlir  # noqa: F401  (loads every backend, so their ops are defined too)

    for dialect in ("glow", "glow_ir"):
        path = Path(args.out) / f"{dialect}.irdl.mlir"
        path.write_text(render(dialect))
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
