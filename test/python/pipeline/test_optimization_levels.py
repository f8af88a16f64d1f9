"""The compile pipeline at onnxruntime's graph optimization levels (pipeline/runner.py)."""

from __future__ import annotations

from glow_mlir.backends.cpu.backend import CPU
from glow_mlir.pipeline.runner import COMPILE_PIPELINE, GraphOptimizationLevel, compile_pipeline, stage_name

REQUIRED = {"glow-verify", "glow-cpu-layout", "glow-lower", "glow-schedule", "glow-irgen", "glow-allocate"}


def names(level: GraphOptimizationLevel) -> list[str]:
    return [stage_name(e) for e in compile_pipeline(CPU, level)]


def test_full_level_is_the_compile_pipeline() -> None:
    assert compile_pipeline(CPU, GraphOptimizationLevel.ORT_ENABLE_ALL) == COMPILE_PIPELINE
    assert names(GraphOptimizationLevel.ORT_ENABLE_EXTENDED) == names(GraphOptimizationLevel.ORT_ENABLE_ALL)


def test_disable_all_keeps_only_what_code_generation_needs() -> None:
    disabled = names(GraphOptimizationLevel.ORT_DISABLE_ALL)
    assert REQUIRED <= set(disabled)
    assert not {"glow-constant-fold", "glow-cse", "glow-sink-transpose", "glow-fuse-activations"} & set(disabled)
    assert all(a != b for a, b in zip(disabled, disabled[1:])), "a pass twice in a row"


def test_basic_folds_but_does_not_restructure() -> None:
    basic = set(names(GraphOptimizationLevel.ORT_ENABLE_BASIC))
    assert {"glow-constant-fold", "glow-cse", "glow-dce", "glow-eliminate-noop"} <= basic
    assert not {"glow-sink-transpose", "glow-fuse-activations", "glow-fold-batchnorm"} & basic
    assert set(names(GraphOptimizationLevel.ORT_DISABLE_ALL)) < basic < set(names(GraphOptimizationLevel.ORT_ENABLE_ALL))
