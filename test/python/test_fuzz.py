"""A short fixed-seed slice of the fuzzing campaign (fuzz/, docs/Fuzzing.md): every target, no failure.

A failure here is an input that crashed, hung, or leaked a Python internal exception or an unlocated
diagnostic; the test's message lists each, and its input is saved under the test's temporary folder with a
case.json that says how to run it again (`python -m fuzz --seed 2026 --targets ... --only N`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper

from glow_mlir.errors import InvalidNodeError

# The fuzzer is a top-level package of the repository, beside bench/.
ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from fuzz import campaign, mutate_model
from fuzz.targets import FAILING, TARGETS, _refused, run

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
