"""The table of glow-ir-to-linalg: which function lowers each `glow_ir` instruction, and its error helper.

A leaf of the codegen package, as `glow_mlir.passes.registry` is for passes: the category modules
(codegen/math.py, nn.py, tensor.py, scalar.py) and the backends (glow_mlir/backends/cpu/lowerings.py for the
CPU backend's NHWC instructions) add their entries here with `lowering` or `register_lowerings`, and the pass
driver (codegen/to_linalg.py) reads it. Nothing here imports a lowering.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from mlir import ir

from glow_mlir import ops
from glow_mlir.errors import VerificationError

# Rewrites one instruction in place: called with the insertion point before it and its location; the
# driver erases the instruction afterwards.
Lowering = Callable[[ir.Operation], None]

# By instruction name without the `glow_ir.` prefix.
LOWERINGS: dict[str, Lowering] = {}


def register_lowerings(entries: Mapping[str, Lowering]) -> None:
    """Adds `entries` (instruction name without `glow_ir.` -> lowering) to the table."""
    for name, fn in entries.items():
        if name in LOWERINGS:
            raise ValueError(f"glow_ir.{name} has two lowerings")
        LOWERINGS[name] = fn


def lowering(name: str) -> Callable[[Lowering], Lowering]:
    """Registers the decorated function as the lowering of `glow_ir.<name>`."""

    def wrap(fn: Lowering) -> Lowering:
        register_lowerings({name: fn})
        return fn

    return wrap


def fail(op: ir.Operation, rule: str) -> VerificationError:
    """The located error of a lowering whose instruction breaks `rule` (the caller raises it)."""
    return VerificationError(op.name, ops.location_text(op), rule)
