"""A short fixed-seed slice of the fuzzing campaign (fuzz/, docs/Fuzzing.md): every target, no failure.

A failure here is an input that crashed, hung, or leaked a Python internal exception or an unlocated
diagnostic; the test's message lists each, and its input is saved under the test's temporary folder with a
case.json that says how to run it again (`python -m fuzz --seed 2026 --targets ... --only N`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

import glow_mlir
from glow_mlir import library
from glow_mlir.errors import InvalidNodeError

# The fuzzer is a top-level package of the repository, beside bench/.
ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from fuzz import campaign, mutate_model
from fuzz.targets import FAILING, TARGETS, _refused, draws_random, run

CI_SEED = 2026
CI_CASES = 200


def test_a_fixed_seed_slice_has_no_failure(tmp_path: Path) -> None:
    summary = campaign.run(range(CI_CASES), CI_SEED, TARGETS, workers=1, out=tmp_path, minimize_failures=False)
    assert set(summary.counts) == set(TARGETS)
    assert sum(sum(c.values()) for c in summary.counts.values()) == CI_CASES
    found = [f"{case.id} ({case.seed}; {'; '.join(case.mutations)}): {result.status}: {result.message[:300]}"
             for case, result in summary.failures]
    assert not found, f"{len(found)} failure(s), saved under {tmp_path}:\n" + "\n".join(found)


def test_an_escaped_exception_is_a_failure() -> None:
    # A payload the feed target cannot read makes a KeyError inside the target: an escape, not a pass.
    result = run("feed", {})
    assert result.status == "internal" and result.status in FAILING
    assert result.signature.startswith("internal KeyError")


def test_a_refusal_must_name_what_it_refuses() -> None:
    assert _refused(InvalidNodeError("node 'conv1' (Conv): bad pads"), {"conv1"}).status == "refused"
    assert _refused(InvalidNodeError("bad pads"), {"conv1"}).status == "unnamed"


def test_the_dims_mutator_describes_a_value_of_no_element_type() -> None:
    # Seed 2437 stopped the campaign ("the fuzzer itself failed"): another mutation had set an element type of
    # -3, and describing the new shape through onnx's printable_type raised on it.
    value = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    value.type.tensor_type.elem_type = -3
    model = helper.make_model(helper.make_graph([], "g", [value], []))
    for seed in range(8):
        assert mutate_model.dims(model, np.random.default_rng(seed)).startswith("value 'x' now of shape")


def _model(op_type: str, **attributes: object) -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    node = helper.make_node(op_type, ["x"], ["y"], **attributes)
    return helper.make_model(helper.make_graph([node], "g", [x], [y])).SerializeToString()


def test_outputs_that_change_with_the_poison_byte_are_a_garbage_read(monkeypatch: pytest.MonkeyPatch) -> None:
    # A model runs twice, its arena and outputs poisoned with another byte each time (glow_mlir/library.py):
    # a kernel reading bytes nothing wrote gives outputs that depend on the byte, stood in for here by a run
    # that returns the byte.
    payload = {"model": _model("Relu"), "feed": {"x": np.ones((2, 3), np.float32)}}
    assert run("graph", payload).status == "ok"
    monkeypatch.setattr(glow_mlir.InferenceSession, "run", lambda *_: [np.full(3, library.POISON, np.uint8)])
    result = run("graph", payload)
    assert result.status == "wrong" and result.signature == "wrong garbage read"
    assert result.message == (
        "a garbage read: output 0 differs between runs whose arena and outputs start as bytes 0xff and 0x00"
    )


def test_models_that_draw_random_numbers_are_run_once() -> None:
    # RandomNormalLike draws new numbers on every run: no garbage read for outputs that change.
    assert draws_random(_model("RandomNormalLike")) and not draws_random(_model("Relu"))
    payload = {"model": _model("RandomNormalLike"), "feed": {"x": np.ones((2, 3), np.float32)}}
    assert run("graph", payload).status == "ok"
