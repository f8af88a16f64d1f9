"""Where glow-mlir's passes register themselves: the `Pass` record and the `register` decorator.

A leaf module: pass modules import it, and nothing here imports a pass. The catalogue of every pass, which
imports all pass modules, is `glow_mlir.pipeline.catalog`. A pass is a plain object: a name, a one-line description taken from its module's docstring, and a function
that rewrites a module in place. Passes raise `GlowError` subclasses for bad input; they never print.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mlir import ir

PassFn = Callable[[ir.Module], None]


@dataclass(frozen=True)
class Pass:
    name: str
    description: str
    run: PassFn
    # Glow's distinction: a pass that runs once, or one the driver repeats until the IR stops changing.
    fixed_point: bool = False


_PASSES: dict[str, Pass] = {}


def register(name: str, *, fixed_point: bool = False) -> Callable[[PassFn], PassFn]:
    """Registers `fn` as pass `name`; the first line of `fn`'s docstring is the pass's description."""

    def wrap(fn: PassFn) -> PassFn:
        if name in _PASSES:
            raise ValueError(f"pass '{name}' is registered twice")
        description = (fn.__doc__ or "").strip().splitlines()[0] if fn.__doc__ else ""
        _PASSES[name] = Pass(name, description, fn, fixed_point)
        return fn

    return wrap


def registered() -> dict[str, Pass]:
    """The passes registered so far; `glow_mlir.pipeline.catalog.passes()` imports every pass module first."""
    return dict(_PASSES)
