"""onnx's backend test suite: every case listed in test/onnx_backend/passing.txt must still pass.

The list comes from a full run (`python test/onnx_backend/update.py`, which also rewrites
docs/SupportedOps.md); this test keeps those cases from regressing. Each pytest process runs its cases in
one worker process of its own (onnx_backend.runner.CaseRunner), so a case that crashes or hangs fails alone
instead of ending the session; under pytest-xdist (`-n auto`, as `make test` runs) the cases spread over
the xdist workers.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from onnx_backend import cases, runner

PASSING = cases.read_passing()


@pytest.fixture(scope="module")
def case_runner() -> Iterator[runner.CaseRunner]:
    case_runner = runner.CaseRunner()
    yield case_runner
    case_runner.close()


def test_passing_list_is_sorted_and_known() -> None:
    assert PASSING == sorted(set(PASSING)), "passing.txt must be sorted, without duplicates"
    unknown = sorted(set(PASSING) - set(cases.case_ids()))
    assert not unknown, f"passing.txt names cases that do not exist: {unknown}"


@pytest.mark.parametrize("case_id", PASSING)
def test_case(case_id: str, case_runner: runner.CaseRunner) -> None:
    outcome = case_runner.run(case_id)
    assert outcome.status == "pass", f"{case_id}: {outcome.status}\n{outcome.message}"
