"""The backend interface: the CPU backend answers it, the compile pipeline is built from it, and glow-lower
asks it which ops to break down."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import glow_mlir
from glow_mlir import opdefs
from glow_mlir.backends.base import Backend, backends, get_backend, register_backend
from glow_mlir.errors import PipelineError
from glow_mlir.pipeline.runner import COMPILE_PIPELINE, compile_pipeline, run_pipeline


def test_the_cpu_backend_compiles_every_defined_op() -> None:
    cpu = get_backend("cpu")
    unsupported = [name for name in opdefs.glow_ops() if not cpu.supports(f"glow.{name}")]
    assert not unsupported
    assert not cpu.supports("glow.hard_swish")


def test_the_compile_pipeline_comes_from_the_backend() -> None:
    cpu = get_backend("cpu")
    assert COMPILE_PIPELINE == compile_pipeline(cpu)
    assert COMPILE_PIPELINE[-len(cpu.codegen) :] == cpu.codegen
    layout = COMPILE_PIPELINE.index(cpu.layout[0])
    assert COMPILE_PIPELINE[layout : layout + len(cpu.layout)] == cpu.layout
    assert "glow-lower{backend=cpu}" in COMPILE_PIPELINE


def _relu_graph() -> glow_mlir.Graph:
    g = glow_mlir.Graph("r")
    g.output("y", g.relu(g.input("x", (2, 3))))
    return g


def test_glow_lower_asks_the_backend() -> None:
    keeps_relu = Backend(
        "keeps-relu", "test backend", layout=(), codegen=(), should_lower=lambda op: op.name != "glow.relu"
    )
    if "keeps-relu" not in backends():
        register_backend(keeps_relu)
    g = _relu_graph()
    module = g.module
    run_pipeline(module, ["glow-lower{backend=keeps-relu}"])
    assert "glow.relu" in str(module) and "glow.max" not in str(module)
    run_pipeline(module, ["glow-lower{backend=cpu}"])
    assert "glow.relu" not in str(module) and "glow.max" in str(module)


def test_bad_backend_option_is_an_error() -> None:
    module = _relu_graph().module
    with pytest.raises(PipelineError, match="unknown backend 'gpu'"):
        run_pipeline(module, ["glow-lower{backend=gpu}"])
    with pytest.raises(PipelineError, match="has no option 'level=3'"):
        run_pipeline(module, ["glow-lower{level=3}"])
    with pytest.raises(PipelineError, match="has no option"):
        run_pipeline(module, ["glow-dce{backend=cpu}"])


def test_a_registered_backend_is_frozen() -> None:
    cpu = get_backend()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cpu.name = "x"  # type: ignore[misc]
    with pytest.raises(ValueError, match="registered twice"):
        register_backend(cpu)
    with glow_mlir.compile(_relu_graph()) as model:
        np.testing.assert_array_equal(model.run({"x": -np.ones((2, 3), np.float32)})["y"], np.zeros((2, 3)))
