"""Where glow-mlir's passes register themselves: the `Pass` record and the `register` decorator.

A leaf module: pass modules import it, and nothing here imports a pass. The catalogue of every pass, which
imports all pass modules, is `glow_mlir.pipeline.catalog`. A pass is a plain object: a name, a one-line
description and the whole text, both taken from its function's docstring, and a function that rewrites a module
in place. Passes raise `GlowError` subclasses for bad input; they never print.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass


# Called with the module and the pass's options as keyword arguments (strings), if it declares any.
PassFn = Callable[..., None]


@dataclass(frozen=True)
class Pass:
    name: str
    # The docstring's first line, for one-line listings.
    description: str
    run: PassFn
    # Glow's distinction: a pass that runs once, or one the driver repeats until the IR stops changing.
    fixed_point: bool = False
    # The whole docstring, dedented (`glow-opt --list-passes`).
    doc: str = ""
    # The options it takes, as `name{option=value}` in a pipeline (mlir-opt's syntax).
    options: tuple[str, ...] = ()


_PASSES: dict[str, Pass] = {}


def register(
    name: str, *, fixed_point: bool = False, options: tuple[str, ...] = ()
) -> Callable[[PassFn], PassFn]:
    """Registers `fn` as pass `name`; `fn`'s docstring is the pass's text, its first line the description."""

    def wrap(fn: PassFn) -> PassFn:
        if name in _PASSES:
            raise ValueError(f"pass '{name}' is registered twice")
        doc = inspect.cleandoc(fn.__doc__) if fn.__doc__ else ""
        description = doc.splitlines()[0] if doc else ""
        _PASSES[name] = Pass(name, description, fn, fixed_point, doc, options)
        return fn

    return wrap


def registered() -> dict[str, Pass]:
    """The passes registered so far; `glow_mlir.pipeline.catalog.passes()` imports every pass module first."""
    return dict(_PASSES)
