"""glow-dce: erases `glow` ops whose results are never used.

Every `glow` op is pure, but IRDL gives its ops no side-effect interface, so upstream DCE (and
`canonicalize`) must assume they have effects and keeps them. This pass knows better: it erases each
`glow.*` op none of whose results has a use, including constants and splats left behind by other rewrites.
"""

from __future__ import annotations

from mlir import ir

from glow_mlir import ops
from glow_mlir.passes.registry import register


@register("glow-dce")
def dce(module: ir.Module) -> None:
    """Erase glow ops whose results are unused."""
    # A use follows its definition (SSA dominance), so visiting ops in reverse order sees every user before
    # the op it uses: erasing the users first lets a whole dead chain go in this single sweep.
    for op in reversed(ops.walk_ops(module.operation)):
        if op.name.startswith(ops.GLOW) and not any(_has_uses(r) for r in op.results):
            op.erase()


def _has_uses(value: ir.Value) -> bool:
    return any(True for _ in value.uses)
