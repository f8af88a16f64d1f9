"""Renders docs/DIALECTS.md from the IRDL definitions, so the op reference cannot drift from the dialects.

    python -m glow_mlir.tools.dialect_docs > docs/DIALECTS.md

Each op's semantics is the `//` comment written above it in its `.irdl.mlir` file; operands, results,
attributes and glow_ir operand roles are read from the definition itself.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from glow_mlir.context import DIALECT_FILES, dialect_sources

_KINDS = {
    '"#builtin.dense_array"': "dense array",
    '"#builtin.integer"': "integer",
    '"#builtin.float"': "f32",
    '"!builtin.tensor"': "tensor",
    '"!builtin.memref"': "memref",
}


@dataclass
class OpDoc:
    name: str
    doc: str
    operands: list[str]
    results: list[str]
    attributes: list[str]
    roles: list[str]


def _constraint(defs: dict[str, str], var: str) -> str:
    text = defs.get(var, "any")
    base = re.match(r"irdl\.base (.*)", text)
    return _KINDS.get(base.group(1), base.group(1)) if base else "any"


def parse_ops(source: str) -> tuple[str, list[OpDoc]]:
    """The dialect's name and its ops, in file order."""
    dialect = re.search(r"irdl\.dialect @(\w+)", source)
    assert dialect is not None, "not an IRDL dialect"
    ops = []
    pending: list[str] = []
    lines = iter(source.splitlines())
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("//") and line.startswith("  "):
            pending.append(stripped[2:].strip())
            continue
        start = re.match(r"irdl\.operation @(\w+) \{", stripped)
        if not start:
            pending = [] if not stripped.startswith("//") else pending
            continue
        defs: dict[str, str] = {}
        operands: list[str] = []
        results: list[str] = []
        attributes: list[str] = []
        roles: list[str] = []
        for body in lines:
            body = body.strip()
            if body == "}":
                break
            if m := re.match(r"%(\w+) = (.*)", body):
                defs[m.group(1)] = m.group(2)
                if m.group(1) == "roles":
                    # Fixed roles (irdl.is), or any array where the operand count varies (glow_ir.loop).
                    roles = re.findall(r'"(\w+)"', m.group(2)) or ["given by `roles`"]
            elif m := re.match(r"irdl\.(operands|results)\((.*)\)", body):
                target = operands if m.group(1) == "operands" else results
                for item in m.group(2).split(", "):
                    name, var = item.split(": ")
                    variadic = var.startswith("variadic ")
                    kind = _constraint(defs, var.split("%")[1])
                    target.append(f"`{name}`: {'variadic ' if variadic else ''}{kind}")
            elif m := re.match(r"irdl\.attributes \{(.*)\}", body):
                for item in m.group(1).split(", "):
                    name, var = item.split(" = ")
                    if name.strip('"') != "roles":
                        attributes.append(f"`{name.strip(chr(34))}`: {_constraint(defs, var[1:])}")
        ops.append(OpDoc(start.group(1), " ".join(pending), operands, results, attributes, roles))
        pending = []
    return dialect.group(1), ops


def render() -> str:
    out = [
        "# The glow and glow_ir dialects",
        "",
        "Generated from `dialects/*.irdl.mlir` by `python -m glow_mlir.tools.dialect_docs`; a test keeps it",
        "in step. Ops print in MLIR's generic form. Rules IRDL cannot state (result shapes, broadcast rules,",
        "attribute ranges) are checked by the `glow-verify` pass.",
    ]
    for filename, source in zip(DIALECT_FILES, dialect_sources()):
        name, ops = parse_ops(source)
        out += ["", f"## `{name}` (`dialects/{filename}`)", ""]
        header = [line[3:] for line in source.splitlines() if line.startswith("// ")]
        out += [" ".join(header), ""]
        out += ["| op | operands | results | attributes | semantics |", "| --- | --- | --- | --- | --- |"]
        for op in ops:
            operands = op.operands
            if len(op.roles) == len(op.operands):
                operands = [f"@{role} {o}" for role, o in zip(op.roles, op.operands)]
            out.append(
                f"| `{name}.{op.name}` | {'<br>'.join(operands) or '-'} | {'<br>'.join(op.results) or '-'} "
                f"| {'<br>'.join(op.attributes) or '-'} | {op.doc} |"
            )
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
