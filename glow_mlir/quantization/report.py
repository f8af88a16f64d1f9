"""Accuracy you can see: each layer's SQNR between a float model and its quantized (or converted) form,
in the spirit of onnxruntime's qdq_loss_debug.

Both models run through the reference interpreter on the same feeds; every node whose name both have and
whose result is float in both (the quantized graph's product ops keep their node's name on their float
result, as do an ONNX QDQ model's nodes and the ops of a bf16/fp16 conversion) is compared:
SQNR = 10 log10(sum(ref^2) / sum((ref - got)^2)) in dB, over all feeds. Higher is better; about 6 dB per
bit, so a clean int8 layer shows 30-45 dB and a layer below 20 dB deserves keep_float.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

import numpy as np
from mlir import ir

from glow_mlir.interpreter import interpret
from glow_mlir.quantization.profile import Model, as_module, is_float, model_function, node_names


# Ops that only move data: a node's kind is its first op not among them.
_MOVES = ("glow.reshape", "glow.transpose", "glow.broadcast", "glow.slice")


@dataclasses.dataclass(frozen=True)
class LayerError:
    """One layer's comparison: its name and op kind, SQNR in dB (inf where equal), max |difference|."""

    name: str
    kind: str
    sqnr_db: float
    max_abs_error: float


@dataclasses.dataclass(frozen=True)
class Report:
    """Every compared layer in program order; `worst(n)` the n with the lowest SQNR."""

    layers: list[LayerError]

    def worst(self, n: int = 5) -> list[LayerError]:
        return sorted(self.layers, key=lambda layer: layer.sqnr_db)[:n]

    def __getitem__(self, name: str) -> LayerError:
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(f"no layer '{name}' was compared")

    def __str__(self) -> str:
        width = max([len("layer"), *(len(layer.name) for layer in self.layers)])
        lines = [f"{'layer':<{width}}  {'op':<22} {'SQNR dB':>8}  {'max |err|':>10}"]
        lines += [
            f"{layer.name:<{width}}  {layer.kind:<22} {layer.sqnr_db:>8.2f}  {layer.max_abs_error:>10.3g}"
            for layer in self.layers
        ]
        worst = ", ".join(f"{layer.name} ({layer.sqnr_db:.1f} dB)" for layer in self.worst(3))
        lines.append(f"worst layers: {worst}")
        return "\n".join(lines)


def _results(module: ir.Module, feeds: Mapping[str, np.ndarray]) -> dict[str, tuple[str, np.ndarray]]:
    """Each named op's float result (kind, array) on `feeds`."""
    names = node_names(model_function(module))
    found: dict[str, tuple[str, np.ndarray]] = {}

    def observe(op: ir.Operation, result: np.ndarray) -> None:
        if op.name not in ("glow.constant", "glow.splat") and is_float(result):
            found[names[op]] = (op.name, result)

    interpret(module, dict(feeds), observe=observe)
    return found


def _node_outputs(results: dict[str, tuple[str, np.ndarray]]) -> dict[str, tuple[str, np.ndarray]]:
    """One entry per model node: the ONNX importer names the extra ops of node X `X/1`, `X/2`, ..., and the
    last of them in program order computes the node's output (`X/quant/...` ops are not such)."""
    grouped: dict[str, tuple[str, np.ndarray]] = {}
    for name, (kind, array) in results.items():
        base, _, suffix = name.rpartition("/")
        node = base if suffix.isdigit() and base in results else name
        # The node's kind is its first op that computes (a Gemm's matmul, not the reshape around it).
        shown = grouped[node][0] if node in grouped and grouped[node][0] not in _MOVES else kind
        # Re-inserted, so that nodes stay in the program order of their outputs.
        grouped.pop(node, None)
        grouped[node] = (shown, array)
    return grouped


def report(
    reference: Model, candidate: Model, feeds: Iterable[Mapping[str, np.ndarray]], *, by_node: bool = True
) -> Report:
    """Per-layer SQNR of `candidate` (quantized or converted) against float `reference` over `feeds`.

    `by_node` compares each model node's output (for an ONNX model, each ONNX node's last output, under the
    kind of the node's first computing op); without it, every glow op the nodes were lowered to."""
    ref_module, cand_module = as_module(reference), as_module(candidate)
    signal: dict[str, float] = {}
    noise: dict[str, float] = {}
    worst: dict[str, float] = {}
    kinds: dict[str, str] = {}
    order: list[str] = []
    for sample in feeds:
        want, got = _results(ref_module, sample), _results(cand_module, sample)
        if by_node:
            want, got = _node_outputs(want), _node_outputs(got)
        for name, (kind, expected) in want.items():
            if name not in got or got[name][1].shape != expected.shape:
                continue
            e = expected.astype(np.float64)
            d = got[name][1].astype(np.float64) - e
            if name not in kinds:
                order.append(name)
                kinds[name], signal[name], noise[name], worst[name] = kind.removeprefix("glow."), 0.0, 0.0, 0.0
            signal[name] += float(np.sum(e * e))
            noise[name] += float(np.sum(d * d))
            worst[name] = max(worst[name], float(np.max(np.abs(d), initial=0.0)))
    layers = [
        LayerError(name, kinds[name], _sqnr(signal[name], noise[name]), worst[name]) for name in order
    ]
    return Report(layers)


def _sqnr(signal: float, noise: float) -> float:
    if noise == 0:
        return float("inf")
    if signal == 0:
        return float("-inf")
    return 10.0 * float(np.log10(signal / noise))
