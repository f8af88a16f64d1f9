"""The catalogue of every glow-mlir pass, read by glow-opt, the compile pipeline and the docs.

Importing a pass module registers its passes (`glow_mlir.passes.registry.register`); this module imports
them all, stage by stage, so that the catalogue is complete whoever asks first. It sits above every stage:
no pass module imports it.
"""

from __future__ import annotations

# Imported in pipeline order, which is the order glow-opt --list-passes and the docs show them in.
# isort: off
from glow_mlir.passes.graph import verify  # noqa: F401
from glow_mlir.passes.graph import dce  # noqa: F401
from glow_mlir.passes.lowering import lower  # noqa: F401
from glow_mlir.passes.graph import cse  # noqa: F401
from glow_mlir.passes.graph import constant_fold  # noqa: F401
from glow_mlir.passes.graph import fold_batchnorm  # noqa: F401
from glow_mlir.passes.graph import simplify_arithmetic  # noqa: F401
from glow_mlir.passes.graph import eliminate_noop  # noqa: F401
from glow_mlir.passes.graph import merge_reshape  # noqa: F401
from glow_mlir.passes.graph import sink_transpose  # noqa: F401
from glow_mlir.passes.graph import merge_concat  # noqa: F401
from glow_mlir.passes.graph import merge_pad  # noqa: F401
from glow_mlir.passes.graph import fold_transpose_weights  # noqa: F401
from glow_mlir.passes.graph import fuse_activations  # noqa: F401
from glow_mlir.backends.cpu import layout  # noqa: F401
from glow_mlir.passes.lowering import memory_schedule  # noqa: F401
from glow_mlir.passes.lowering import irgen  # noqa: F401
from glow_mlir.passes.ir import verify as ir_verify  # noqa: F401
from glow_mlir.passes.ir import share_buffers  # noqa: F401
from glow_mlir.passes.ir import copy_elim  # noqa: F401
from glow_mlir.passes.ir import dse  # noqa: F401
from glow_mlir.passes.ir import live_ranges  # noqa: F401
from glow_mlir.passes.ir import optimize_inserts  # noqa: F401
from glow_mlir.passes.ir import allocate  # noqa: F401
from glow_mlir.codegen import to_linalg  # noqa: F401
from glow_mlir.backends.cpu import lowerings  # noqa: F401
from glow_mlir.backends.cpu import schedule  # noqa: F401
from glow_mlir.backends.cpu import llvm  # noqa: F401
# isort: on
from glow_mlir.passes.registry import Pass, registered


def passes() -> dict[str, Pass]:
    """Every registered pass, by name, in registration order."""
    return registered()


def get(name: str) -> Pass | None:
    return registered().get(name)
