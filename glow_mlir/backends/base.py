"""The backend interface (Glow's `Backend`): what a backend tells the compiler, and the registry of backends.

A backend chooses which graph ops glow-lower breaks down (`should_lower`, Glow's `shouldLower`), runs its own
layout pass on the optimized graph (Glow's post-lowering transform; here before glow-lower, so that pads are
still attributes there), and owns everything from linalg to machine code (`codegen` passes: its schedules and
its LLVM pipeline). `supports` answers Glow's `isOpSupported`. The compile pipeline is built from these
(`glow_mlir.pipeline.runner.compile_pipeline`); passes that need the backend take its name as an option
(`glow-lower{backend=cpu}`).

A leaf module: backends register themselves here when imported (the pass catalogue imports them), and
passes look them up by name without importing any backend.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mlir import ir


def lower_everything(op: ir.Operation) -> bool:
    """A backend that implements only the primitives lowers every op that has a lowering rule."""
    return True


@dataclass(frozen=True)
class Backend:
    name: str
    description: str
    # Pass pipeline elements run on the optimized graph before glow-lower (layout changes, the backend's ops).
    layout: tuple[str, ...]
    # Pass pipeline elements from linalg on memrefs (after glow-ir-to-linalg) to the backend's code.
    codegen: tuple[str, ...]
    # Pass pipeline elements on glow_ir right before glow-allocate (the backend's own instructions).
    memory: tuple[str, ...] = ()
    should_lower: Callable[[ir.Operation], bool] = lower_everything
    # Whether the backend compiles glow op `name` (with its `glow.` prefix).
    supports: Callable[[str], bool] = lambda name: True
    # Whether the backend computes bf16 product `op` on its bf16 factors into an f32 result (glow-lower's
    # widen_half then keeps it so instead of computing it in f32).
    native_bf16: Callable[[ir.Operation], bool] = lambda op: False


_BACKENDS: dict[str, Backend] = {}

DEFAULT = "cpu"


def register_backend(backend: Backend) -> Backend:
    if backend.name in _BACKENDS:
        raise ValueError(f"backend '{backend.name}' is registered twice")
    _BACKENDS[backend.name] = backend
    return backend


def get_backend(name: str = DEFAULT) -> Backend:
    """The backend named `name`; KeyError listing the known ones otherwise."""
    try:
        return _BACKENDS[name]
    except KeyError:
        raise KeyError(f"unknown backend '{name}'; known: {', '.join(_BACKENDS) or 'none loaded'}") from None


def backends() -> dict[str, Backend]:
    return dict(_BACKENDS)
