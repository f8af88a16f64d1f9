"""MLIR contexts with the `glow` and `glow_ir` dialects loaded from their IRDL definitions."""

from __future__ import annotations

import io
import sys
import types
from functools import cache
from importlib import resources

from mlir import ir
from mlir.dialects import irdl

DIALECT_FILES = ("glow.irdl.mlir", "glow_ir.irdl.mlir")

# MLIR's bindings import `mlir.dialects.<namespace>` whenever they make a Python view of an op, and search
# for a module they did not find again every time: 341,000 failed imports (seconds) in a DenseNet-121
# compile. An empty module per glow dialect is found at once, and then never looked up again.
for _namespace in ("glow", "glow_ir"):
    sys.modules.setdefault(f"mlir.dialects.{_namespace}", types.ModuleType(f"mlir.dialects.{_namespace}"))


@cache
def dialect_sources() -> tuple[str, ...]:
    """The IRDL text of each dialect, read once from the installed package."""
    folder = resources.files("glow_mlir.dialects")
    return tuple(folder.joinpath(name).read_text() for name in DIALECT_FILES)


def copy_module(module: ir.Module) -> ir.Module:
    """A copy of `module` in a new context of its own (through bytecode), for passes that must leave the
    original untouched."""
    data = io.BytesIO()
    module.operation.write_bytecode(data)
    return ir.Module.parse(data.getvalue(), context=make_context())


def make_context() -> ir.Context:
    """A new context in which every upstream dialect and both glow dialects parse and verify."""
    ctx = ir.Context()
    with ctx, ir.Location.unknown():
        for source in dialect_sources():
            irdl.load_dialects(ir.Module.parse(source))
    return ctx
