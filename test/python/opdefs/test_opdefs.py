"""The op definitions are complete and agree with everything built from them."""

from __future__ import annotations

from pathlib import Path

import pytest

import glow_mlir
from glow_mlir import opdefs
from glow_mlir.codegen.table import LOWERINGS
from glow_mlir.opdefs import irdl
from glow_mlir.opdefs.base import Trait
from glow_mlir.passes.lowering import irgen

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("dialect", ["glow", "glow_ir"])
def test_dialect_files_are_generated_from_the_definitions(dialect: str) -> None:
    committed = (ROOT / "dialects" / f"{dialect}.irdl.mlir").read_text()
    assert committed == irdl.render(dialect), (
        f"dialects/{dialect}.irdl.mlir is stale: run `python -m glow_mlir.opdefs.irdl`"
    )


def test_every_instruction_follows_a_rule() -> None:
    for instr in opdefs.ir_ops().values():
        if not instr.role_list or instr.name == "dealloc_activation":
            continue
        graph = opdefs.graph_rules_of(instr)
        assert (instr.shape or (graph and graph.shape)) is not None, instr.name
        assert (instr.types or (graph and graph.types)) is not None, instr.name
        for attr in instr.attrs:
            assert graph is not None and attr in dict(graph.attrs) or attr in dict(instr.attr_kinds), (instr, attr)


def test_every_graph_op_is_irgen_or_lowered() -> None:
    """IRGen takes every op with an instruction; the rest are lowered first (glow-lower) or are leaves."""
    taken = set(irgen.rewrites()) | {irgen.CONSTANT}
    for op in opdefs.glow_ops().values():
        if op.ir is not None:
            assert op.full_name in taken


def test_elementwise_ops_state_scalar_bodies_and_in_place_instructions() -> None:
    for op in opdefs.glow_ops().values():
        if not op.has(Trait.ELEMENTWISE):
            continue
        if op.backend is not None and op.scalar is None:
            # A backend's elementwise op may bring its own lowering instead (the CPU backend's one-pass uint8
            # quantization, elementwise for glow-sink-transpose).
            assert op.ir is not None and op.ir.name in LOWERINGS, op.name
            continue
        assert op.scalar is not None, op.name
        if op.ir is not None:
            assert op.ir.in_place, op.name


def test_elementwise_ops_are_builder_methods() -> None:
    """The shared graph's elementwise ops; a backend's own ops are made by its passes."""
    for op in opdefs.glow_ops().values():
        if op.has(Trait.ELEMENTWISE) and op.backend is None:
            assert callable(getattr(glow_mlir.Graph, op.method_name)), op.name


def test_an_undefined_op_is_named() -> None:
    with pytest.raises(KeyError, match="glow.hard_swish has no op definition"):
        opdefs.glow_op("glow.hard_swish")
    with pytest.raises(ValueError, match="defined twice"):
        opdefs.base.define(opdefs.glow_op("add"))


def test_activations_cover_the_fusable_ops() -> None:
    assert {"relu", "sigmoid", "tanh", "clip", "leaky_relu"} <= set(opdefs.activations())


def test_fusable_producers_become_ops_that_take_an_activation() -> None:
    producers = {op.full_name: op.producer for op in opdefs.glow_ops().values() if op.producer is not None}
    assert {"glow.convolution", "glow.fused_convolution", "glow.fused_matmul", "glow.cpu_conv_nhwc"} <= set(producers)
    for producer in producers.values():
        fused = opdefs.glow_op(producer.fused)
        assert {"activation", "activationArgs"} <= set(dict(fused.attrs)), fused.name
