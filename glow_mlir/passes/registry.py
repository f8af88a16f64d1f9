"""The one registry of glow-mlir passes, read by glow-opt, the compile pipeline and the docs.

A pass is a plain object: a name, a one-line description taken from its module's docstring, and a function
that rewrites a module in place. Passes raise `GlowError` subclasses for bad input; they never print.
"""

from __future__ import annotations

import importlib
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

# Modules that define passes; importing one registers its passes. Listed here so that the registry is
# complete whoever asks first (glow-opt, compile, or a test).
PASS_MODULES = (
    "glow_mlir.passes.verify",
    "glow_mlir.passes.dce",
    "glow_mlir.passes.lower",
    "glow_mlir.passes.cse",
    "glow_mlir.passes.constant_fold",
    "glow_mlir.passes.fold_batchnorm",
    "glow_mlir.passes.simplify_arithmetic",
    "glow_mlir.passes.eliminate_noop",
    "glow_mlir.passes.merge_reshape",
    "glow_mlir.passes.sink_transpose",
    "glow_mlir.passes.merge_concat",
    "glow_mlir.passes.merge_pad",
    "glow_mlir.passes.fold_transpose_weights",
    "glow_mlir.passes.fuse_activations",
    "glow_mlir.passes.cpu_layout",
    "glow_mlir.passes.schedule",
    "glow_mlir.passes.irgen",
    "glow_mlir.passes.ir_verify",
    "glow_mlir.passes.ir_share_buffers",
    "glow_mlir.passes.ir_copy_elim",
    "glow_mlir.passes.ir_dse",
    "glow_mlir.passes.ir_live_ranges",
    "glow_mlir.passes.ir_optimize_inserts",
    "glow_mlir.passes.allocate",
    "glow_mlir.codegen.linalg",
    "glow_mlir.codegen.schedule",
    "glow_mlir.codegen.llvm",
)


def register(name: str, *, fixed_point: bool = False) -> Callable[[PassFn], PassFn]:
    """Registers `fn` as pass `name`; the first line of `fn`'s docstring is the pass's description."""

    def wrap(fn: PassFn) -> PassFn:
        if name in _PASSES:
            raise ValueError(f"pass '{name}' is registered twice")
        description = (fn.__doc__ or "").strip().splitlines()[0] if fn.__doc__ else ""
        _PASSES[name] = Pass(name, description, fn, fixed_point)
        return fn

    return wrap


def _load_all() -> None:
    for module in PASS_MODULES:
        importlib.import_module(module)


def passes() -> dict[str, Pass]:
    """Every registered pass, by name, in registration order."""
    _load_all()
    return dict(_PASSES)


def get(name: str) -> Pass | None:
    _load_all()
    return _PASSES.get(name)
