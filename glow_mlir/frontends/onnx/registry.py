"""The table of ONNX op handlers: op_type -> function(NodeContext) -> output values.

Handler modules register themselves with `@handles("Relu", ...)`; the importer imports them all, then scans a
model against this table before building anything, so every unsupported op is reported at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from glow_mlir.frontends.onnx.node import NodeContext, Value

Handler = Callable[[NodeContext], Sequence[Value]]

HANDLERS: dict[str, Handler] = {}


def handles(*op_types: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for op in op_types:
            if op in HANDLERS:
                raise RuntimeError(f"two handlers for ONNX op {op}")
            HANDLERS[op] = fn
        return fn

    return register
