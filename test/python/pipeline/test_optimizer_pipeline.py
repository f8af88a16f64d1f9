"""The compile pipeline's optimizations (docs/OPTIMIZATIONS.md) end to end on real networks exported from
PyTorch: the outputs still match onnxruntime, and the model needs fewer instructions and a smaller arena
than without the optimizations."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from models import torch_models

from glow_mlir import ops, runtime
from glow_mlir.frontends.onnx.importer import import_model, load
from glow_mlir.pipeline.runner import COMPILE_PIPELINE, run_pipeline

# Without the optimizer: what the compile pipeline was before Glow's passes joined it.
BASELINE = ["glow-verify", "glow-dce", "glow-lower", "glow-verify", "glow-dce", "glow-irgen", "glow-allocate"]
# The compile pipeline up to the memory plan, where arena size and instruction count are settled.
OPTIMIZED = list(COMPILE_PIPELINE[: COMPILE_PIPELINE.index("glow-allocate") + 1])


def _compiled(path: str, pipeline: list[str]) -> tuple[runtime.CompiledModel, int]:
    module = import_model(load(path)).module
    with module.context:
        run_pipeline(module, pipeline)
    function = ops.functions(module)[0]
    body = function.regions[0].blocks[0].operations
    instructions = sum(1 for op in body if op.operation.name.startswith(ops.GLOW_IR))
    return runtime.compile_allocated(module), instructions


@pytest.mark.parametrize("name", ["bert", pytest.param("squeezenet1_1", marks=pytest.mark.slow)])
def test_compile_pipeline_optimizes_real_models(name: str) -> None:
    path = str(torch_models.exported(name))
    feeds = torch_models.example_inputs(name)
    expected = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    base, base_instructions = _compiled(path, BASELINE)
    optimized, instructions = _compiled(path, OPTIMIZED)
    with base, optimized:
        got = optimized.run(feeds)
        for want, have in zip(expected, got.values(), strict=True):
            np.testing.assert_allclose(have, want, rtol=1e-4, atol=1e-4)
        print(f"\n{name}: arena {base.abi.arena_bytes} -> {optimized.abi.arena_bytes} bytes, "
              f"glow_ir ops {base_instructions} -> {instructions}")
        assert optimized.abi.arena_bytes < base.abi.arena_bytes
        assert instructions < base_instructions
