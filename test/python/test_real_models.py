"""Real networks, exported from PyTorch (test/models/torch_models.py), through glow_mlir.InferenceSession
against onnxruntime, rtol = atol = 1e-4.

Each test prints the compile time (creating the session: import and compile) and the time of one inference,
for the record, and adds them to the JUnit XML as properties; nothing asserts on time. `pytest -rP` shows
the prints of passing tests, with or without pytest-xdist (`-s` too, without it). The CNNs at 224x224 are
marked slow; they still run in CI.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import onnxruntime
import pytest
from models import torch_models

import glow_mlir

RTOL = ATOL = 1e-4


@pytest.mark.parametrize(
    "name",
    [
        "bert",
        "squeezenet1_1",
        pytest.param("mobilenetv2", marks=pytest.mark.slow),
        pytest.param("resnet18", marks=pytest.mark.slow),
        pytest.param("resnet50", marks=pytest.mark.slow),
    ],
)
def test_matches_onnxruntime(name: str, record_property: Callable[[str, object], None]) -> None:
    path = str(torch_models.exported(name))
    feeds = torch_models.example_inputs(name)
    reference = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    expected = reference.run(None, feeds)

    start = time.perf_counter()
    session = glow_mlir.InferenceSession(path)
    compile_seconds = time.perf_counter() - start
    start = time.perf_counter()
    got = session.run(None, feeds)
    inference_seconds = time.perf_counter() - start
    print(f"\n{name}: compile {compile_seconds:.2f} s, one inference {inference_seconds * 1e3:.1f} ms")
    record_property("compile_seconds", round(compile_seconds, 3))
    record_property("inference_seconds", round(inference_seconds, 4))

    assert [o.name for o in session.get_outputs()] == [o.name for o in reference.get_outputs()]
    assert len(got) == len(expected)
    for output, want, have in zip(reference.get_outputs(), expected, got, strict=True):
        assert have.shape == want.shape and have.dtype == want.dtype, output.name
        np.testing.assert_allclose(have, want, rtol=RTOL, atol=ATOL, err_msg=f"{name}: output '{output.name}'")
