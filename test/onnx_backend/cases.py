"""The cases of onnx's official backend test suite, and running one of them through `glow_mlir.onnx_backend`.

A case is named `<kind>/<test name>`, e.g. `node/test_abs` or `pytorch-converted/test_Conv2d`. Kinds:

- `node`: onnx 1.23's wheel ships no data for these, so they are generated in-process with
  `onnx.backend.test.case.node.collect_testcases` (one model and data set per case; ~5 s for all);
- `simple`, `pytorch-converted`, `pytorch-operator`: the data shipped under onnx/backend/test/data, a
  `model.onnx` and `test_data_set_*/{input,output}_<i>.pb` per case, loaded as onnx's runner loads them.

`run_case` prepares the model with `GlowBackend`, runs every data set and compares like onnx's runner
(`rtol`/`atol` from the case, by default 1e-3 / 1e-7, NaNs equal), except that it checks shape and dtype
strictly. `outcome` turns that into a `status` for the report: `pass`, `fail` (ran, wrong result),
`unsupported` (the importer or compiler refused the model with an UnsupportedError or DynamicShapeError),
`error` (any other exception: a bug to route). The runner adds `crash` and `timeout`.
"""

from __future__ import annotations

import functools
import time
import traceback
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnx.backend.test
import onnx.numpy_helper
from onnx.backend.test.case.node import collect_testcases
from onnx.backend.test.case.test_case import TestCase
from onnx.backend.test.loader import load_model_tests

from glow_mlir.onnx_backend import GlowBackend
from glow_mlir.errors import DynamicShapeError, UnsupportedError

KINDS = ("node", "simple", "pytorch-converted", "pytorch-operator")
DATA_KINDS = KINDS[1:]
DATA_DIR = Path(onnx.backend.test.__file__).parent / "data"
# The cases that pass, one id a line (written by update.py, kept passing by test/python/test_onnx_backend.py).
PASSING = Path(__file__).resolve().parent / "passing.txt"
STATUSES = ("pass", "fail", "unsupported", "error", "crash", "timeout")
# Longest failure message kept in an Outcome (the runner passes outcomes between processes as JSON lines).
MESSAGE_LIMIT = 4000


@dataclass(frozen=True)
class Case:
    """One loaded case: its model, data sets of (inputs, expected outputs) and tolerances."""

    id: str
    kind: str
    model: onnx.ModelProto
    data_sets: list[tuple[list[Any], list[Any]]]
    rtol: float
    atol: float


@dataclass(frozen=True)
class Outcome:
    """The result of running one case; `message` is empty for a pass."""

    id: str
    status: str
    message: str
    seconds: float


@functools.cache
def _node_cases() -> dict[str, TestCase]:
    with warnings.catch_warnings():
        # Some generators overflow or divide by zero on purpose to make their expected outputs.
        warnings.simplefilter("ignore", RuntimeWarning)
        return {f"node/{c.name}": c for c in collect_testcases(None)}


@functools.cache
def _data_cases() -> dict[str, TestCase]:
    return {f"{kind}/{c.name}": c for kind in DATA_KINDS for c in load_model_tests(str(DATA_DIR), kind)}


def case_ids(kinds: Sequence[str] = KINDS) -> list[str]:
    """Every case id of the given kinds, sorted."""
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"unknown kind(s) {unknown} (known: {', '.join(KINDS)})")
    ids = list(_node_cases()) if "node" in kinds else []
    ids += [i for i in _data_cases() if i.split("/", 1)[0] in kinds]
    return sorted(ids)


def read_passing(path: Path = PASSING) -> list[str]:
    """The case ids listed in passing.txt (one a line; `#` starts a comment)."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def load(case_id: str) -> Case:
    """The case `case_id` with its model and data loaded."""
    kind = case_id.split("/", 1)[0]
    if kind == "node":
        c = _node_cases()[case_id]
        assert c.model is not None and c.data_sets is not None
        data_sets = [([_array(x) for x in inputs], [_array(y) for y in outputs]) for inputs, outputs in c.data_sets]
        return Case(case_id, kind, c.model, data_sets, c.rtol, c.atol)
    c = _data_cases()[case_id]
    assert c.model_dir is not None
    folder = Path(c.model_dir)
    model = onnx.load(folder / "model.onnx")
    data_sets = [
        (_load_protos(d, "input", model.graph.input), _load_protos(d, "output", model.graph.output))
        for d in sorted(folder.glob("test_data_set*"))
    ]
    return Case(case_id, kind, model, data_sets, c.rtol, c.atol)


def _array(value: np.ndarray | onnx.TensorProto) -> np.ndarray:
    return onnx.numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) else value


def _load_protos(folder: Path, prefix: str, infos: Sequence[onnx.ValueInfoProto]) -> list[Any]:
    """`<prefix>_<i>.pb` for i = 0, 1, ... read by the type of the i-th graph input or output."""
    values: list[Any] = []
    for i in range(len(list(folder.glob(f"{prefix}_*.pb")))):
        data = (folder / f"{prefix}_{i}.pb").read_bytes()
        value_type = infos[i].type
        if value_type.HasField("sequence_type"):
            sequence = onnx.SequenceProto()
            sequence.ParseFromString(data)
            values.append(onnx.numpy_helper.to_list(sequence))
        elif value_type.HasField("optional_type"):
            optional = onnx.OptionalProto()
            optional.ParseFromString(data)
            values.append(onnx.numpy_helper.to_optional(optional))
        else:
            tensor = onnx.TensorProto()
            tensor.ParseFromString(data)
            values.append(onnx.numpy_helper.to_array(tensor))
    return values


def assert_similar(expected: Sequence[Any], got: Sequence[Any], rtol: float, atol: float) -> None:
    """Raises AssertionError unless `got` matches `expected` output by output (onnx's runner, stricter)."""
    assert len(got) == len(expected), f"expected {len(expected)} output(s), got {len(got)}"
    for i, (ref, out) in enumerate(zip(expected, got, strict=True)):
        if isinstance(ref, list):
            assert isinstance(out, list | tuple), f"output {i}: expected a sequence, got {type(out).__name__}"
            assert_similar(ref, list(out), rtol, atol)
            continue
        assert isinstance(out, np.ndarray), f"output {i}: expected an ndarray, got {type(out).__name__}"
        assert out.shape == ref.shape, f"output {i}: expected shape {ref.shape}, got {out.shape}"
        if ref.dtype == object:
            np.testing.assert_array_equal(out, ref, err_msg=f"output {i}")
            continue
        assert out.dtype == ref.dtype, f"output {i}: expected dtype {ref.dtype}, got {out.dtype}"
        output_rtol = rtol
        if out.dtype.name == "bfloat16":
            # As onnx's runner (assert_similar_outputs): two bf16 steps, since the suite's rtol is below one
            # step and its expected values round numpy's own order of bf16 operations.
            output_rtol = max(rtol, 2**-6)
            out, ref = out.astype(np.float32), ref.astype(np.float32)
        np.testing.assert_allclose(out, ref, rtol=output_rtol, atol=atol, err_msg=f"output {i}")


def run_case(case: Case) -> None:
    """Runs every data set of `case` through GlowBackend; raises on a refusal, an error or a wrong result."""
    rep = GlowBackend.prepare(case.model, "CPU")
    try:
        for inputs, expected in case.data_sets:
            assert_similar(expected, list(rep.run(inputs)), case.rtol, case.atol)
    finally:
        rep.close()


def outcome(case_id: str) -> Outcome:
    """Loads and runs one case and classifies the result (see the module docstring)."""
    start = time.perf_counter()
    try:
        run_case(load(case_id))
    except AssertionError as e:
        return Outcome(case_id, "fail", _clip(str(e)), time.perf_counter() - start)
    except (UnsupportedError, DynamicShapeError) as e:
        return Outcome(case_id, "unsupported", _clip(f"{type(e).__name__}: {e}"), time.perf_counter() - start)
    except Exception as e:  # noqa: BLE001 - every other exception is an error to report, not to raise
        text = "".join(traceback.format_exception(e))
        return Outcome(case_id, "error", _clip(f"{type(e).__name__}: {e}\n{text}"), time.perf_counter() - start)
    return Outcome(case_id, "pass", "", time.perf_counter() - start)


def _clip(text: str) -> str:
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 20] + "\n... (clipped)"


# Describing cases for docs/SupportedOps.md.


@dataclass(frozen=True)
class CaseInfo:
    """What the report says about a case: the ONNX op it tests (node kind), the ops and types it uses."""

    id: str
    kind: str
    op: str
    ops: tuple[str, ...]
    types: tuple[str, ...]


def describe(case_id: str) -> CaseInfo:
    """For a node case, `op` is the op type of the node it tests: an `_expanded` case (the op's function
    body inlined) is counted under the op of the case it expands. Other kinds test whole models; their `op`
    is empty and `ops` lists the op types used."""
    kind = case_id.split("/", 1)[0]
    case = load(case_id)
    ops = tuple(sorted({_qualified(n) for n in case.model.graph.node}))
    op = ""
    if kind == "node":
        name = case_id.split("/", 1)[1]
        base = name[: name.index("_expanded")] if "_expanded" in name else name
        op = _qualified(_node_cases()[f"node/{base}"].model.graph.node[0])
    values = [*case.model.graph.input, *case.model.graph.output]
    types = tuple(sorted({_type_name(v.type) for v in values} - {""}))
    return CaseInfo(case_id, kind, op, ops, types)


def _qualified(node: onnx.NodeProto) -> str:
    return node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"


def _type_name(value_type: onnx.TypeProto) -> str:
    """ONNX's name of a tensor's element type (`float`, `int64`, `uint8`, ...), else the kind of value."""
    if value_type.HasField("tensor_type"):
        return onnx.TensorProto.DataType.Name(value_type.tensor_type.elem_type).lower()
    field = value_type.WhichOneof("value")
    return field.removesuffix("_type") if field else ""
