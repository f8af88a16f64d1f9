"""The table of ONNX op handlers: op_type -> function(NodeContext) -> output values.

Handler modules register themselves with `@handles("Relu", ...)`; the importer imports them all, then scans a
model against this table before building anything, so every unsupported op is reported at once. Ops of glow's
own domain (GLOW_DOMAIN), which glow-mlir writes into the models it splits at data-dependent ops
(frontends/onnx/stages.py), have a table of their own (`handles_glow`), so that no ONNX op reaches them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from glow_mlir.frontends.onnx.loading import DEFAULT_DOMAINS
from glow_mlir.frontends.onnx.node import GLOW_DOMAIN, NodeContext, Value

Handler = Callable[[NodeContext], Sequence[Value]]

HANDLERS: dict[str, Handler] = {}
GLOW_HANDLERS: dict[str, Handler] = {}


def handles(*op_types: str, table: dict[str, Handler] = HANDLERS) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for op in op_types:
            if op in table:
                raise RuntimeError(f"two handlers for op {op}")
            table[op] = fn
        return fn

    return register


def handles_glow(*op_types: str) -> Callable[[Handler], Handler]:
    """Registers the handler of ops of GLOW_DOMAIN."""
    return handles(*op_types, table=GLOW_HANDLERS)


def handler(domain: str, op_type: str) -> Handler | None:
    """The handler of a node of `domain` (GLOW_DOMAIN's table, the ONNX ops' for a default domain), or None
    (another domain's op of the same name, such as onnxruntime's com.microsoft.Gelu, is not the ONNX op)."""
    if domain == GLOW_DOMAIN:
        return GLOW_HANDLERS.get(op_type)
    return HANDLERS.get(op_type) if domain in DEFAULT_DOMAINS else None
