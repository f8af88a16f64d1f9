"""Shrinks a failing input while it keeps failing the same way (the same `Result.signature`).

Delta debugging (Zeller's ddmin, complement removal only) over the parts of the input: for a `graph` case
the top graph's nodes, every attribute and every initializer; for a `protobuf` case the bytes; for an
`mlir` case the lines. `feed` and `cache` cases are one named mutation of a fixed seed and are kept as they
are. Every candidate runs in the worker like a case, so a crash while minimizing costs nothing but a worker.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import onnx
from google.protobuf.message import DecodeError

from fuzz.runner import CaseRunner

T = TypeVar("T")
# Candidate runs per failing case: enough to drop most of a small model, bounded in time.
BUDGET = 80


def ddmin(items: Sequence[T], fails: Callable[[list[T]], bool], budget: int = BUDGET) -> list[T]:
    """A subsequence of `items` for which `fails` holds, 1-minimal when the budget allows."""
    current = list(items)
    n = 2
    while len(current) >= 2 and budget > 0:
        size = math.ceil(len(current) / n)
        for start in range(0, len(current), size):
            candidate = current[:start] + current[start + size:]
            budget -= 1
            if fails(candidate):
                current, n = candidate, max(n - 1, 2)
                break
            if budget <= 0:
                break
        else:
            if n >= len(current):
                break
            n = min(len(current), 2 * n)
    return current


def _graph_parts(model: onnx.ModelProto) -> list[tuple[Any, ...]]:
    g = model.graph
    return [
        *(("node", i) for i in range(len(g.node))),
        *(("attribute", i, j) for i, n in enumerate(g.node) for j in range(len(n.attribute))),
        *(("initializer", k) for k in range(len(g.initializer))),
    ]


def _graph_with(model: onnx.ModelProto, keep: list[tuple[Any, ...]]) -> bytes:
    kept = set(keep)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    g = out.graph
    nodes = []
    for i, node in enumerate(model.graph.node):
        if ("node", i) not in kept:
            continue
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        del copy.attribute[:]
        copy.attribute.extend(a for j, a in enumerate(node.attribute) if ("attribute", i, j) in kept)
        nodes.append(copy)
    del g.node[:]
    g.node.extend(nodes)
    inits = [t for k, t in enumerate(model.graph.initializer) if ("initializer", k) in kept]
    del g.initializer[:]
    g.initializer.extend(inits)
    return out.SerializeToString()


def minimize(target: str, payload: dict[str, Any], signature: str, runner: CaseRunner) -> dict[str, Any]:
    """The smallest payload found that fails with `signature`; `payload` itself for feed and cache cases."""

    def fails(candidate: dict[str, Any]) -> bool:
        return runner.run(target, candidate).signature == signature

    if target == "mlir":
        lines = payload["text"].split("\n")
        kept = ddmin(lines, lambda ls: fails({**payload, "text": "\n".join(ls)}))
        return {**payload, "text": "\n".join(kept)}
    if target == "protobuf":
        data = payload["model"]
        kept_bytes = ddmin(list(data), lambda bs: fails({**payload, "model": bytes(bs)}))
        return {**payload, "model": bytes(kept_bytes)}
    if target == "graph":
        model = onnx.ModelProto()
        try:
            model.ParseFromString(payload["model"])
        except DecodeError:
            return payload
        parts = ddmin(_graph_parts(model), lambda keep: fails({**payload, "model": _graph_with(model, keep)}))
        return {**payload, "model": _graph_with(model, parts)}
    return payload
