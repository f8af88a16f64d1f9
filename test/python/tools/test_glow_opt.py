"""glow-opt as a user meets it: the console script, its flags and its errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from glow_mlir.pipeline import catalog
from glow_mlir.tools import diagnostics

GLOW_OPT = str(Path(sys.executable).parent / "glow-opt")

DEAD_RELU = """
func.func @f(%x: tensor<4xf32> {glow.name = "x"}) -> (tensor<4xf32> {glow.name = "y"}) {
  %dead = "glow.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %0 = "glow.sigmoid"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


def glow_opt(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([GLOW_OPT, *args], input=stdin, capture_output=True, text=True, timeout=120)


def test_list_passes_lists_every_registered_pass() -> None:
    result = glow_opt("--list-passes")
    assert result.returncode == 0
    # A pass's name starts a line; its description is indented below it.
    listed = [line for line in result.stdout.splitlines() if line and not line[0].isspace()]
    assert listed == list(catalog.passes())
    for name in ("glow-verify", "glow-dce", "glow-lower", "glow-irgen", "glow-allocate", "glow-ir-to-linalg", "glow-to-llvm"):
        assert name in listed


def test_list_passes_shows_whole_descriptions() -> None:
    result = glow_opt("--list-passes")
    assert result.returncode == 0
    for p in catalog.passes().values():
        assert p.doc.splitlines()[0] == p.description
        indented = "\n".join(f"    {line}" if line else "" for line in p.doc.splitlines())
        assert f"{p.name}\n{indented}\n" in result.stdout
    # A pass whose docstring runs over several lines is listed whole, not cut to its first line.
    assert any(len(p.doc.splitlines()) > 1 for p in catalog.passes().values())


def test_pipeline_mixes_glow_and_upstream_passes() -> None:
    result = glow_opt("-", "--pass-pipeline=builtin.module(glow-dce,canonicalize,glow-verify)", stdin=DEAD_RELU)
    assert result.returncode == 0, result.stderr
    assert "glow.relu" not in result.stdout
    assert "glow.sigmoid" in result.stdout


def test_print_ir_after_all_and_stats() -> None:
    result = glow_opt("-", "--pass-pipeline=builtin.module(glow-dce,cse)", "--print-ir-after-all", "--glow-stats", stdin=DEAD_RELU)
    assert result.returncode == 0, result.stderr
    assert "IR Dump After glow-dce" in result.stderr
    assert "IR Dump After cse" in result.stderr
    assert "glow-dce" in result.stderr and "ops" in result.stderr


def test_parse_error_is_located(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text('func.func @f() {\n  %0 = "glow.relu"() : () -> tensor<2xf32>\n  return\n}\n')
    result = glow_opt(str(bad))
    assert result.returncode == 1
    assert f"{bad}:2:8: error: op expects exactly 1 operands, but got 0" in result.stderr


def test_verify_error_is_located(tmp_path: Path) -> None:
    bad = tmp_path / "shape.mlir"
    bad.write_text(
        "func.func @f(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {\n"
        '  %0 = "glow.matmul"(%a, %b) : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>\n'
        "  return %0 : tensor<2x5xf32>\n}\n"
    )
    result = glow_opt(str(bad), "--pass-pipeline=builtin.module(glow-verify)")
    assert result.returncode == 1
    assert f"{bad}:2:8: error: 'glow.matmul'" in result.stderr


@pytest.mark.parametrize("pipeline", ["builtin.module(no-such-pass)", "builtin.module(glow-dce"])
def test_bad_pipeline_is_an_error(pipeline: str) -> None:
    result = glow_opt("-", f"--pass-pipeline={pipeline}", stdin=DEAD_RELU)
    assert result.returncode == 1
    assert "error" in result.stderr and "Traceback" not in result.stderr


def test_output_file_is_written_whole_or_not_at_all(tmp_path: Path) -> None:
    out = tmp_path / "out.mlir"
    assert glow_opt("-", "--pass-pipeline=builtin.module(glow-dce)", "-o", str(out), stdin=DEAD_RELU).returncode == 0
    assert "glow.sigmoid" in out.read_text()
    failed = tmp_path / "failed.mlir"
    assert glow_opt("-", "--pass-pipeline=builtin.module(no-such-pass)", "-o", str(failed), stdin=DEAD_RELU).returncode == 1
    assert not failed.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["out.mlir"]


def test_missing_input_file() -> None:
    result = glow_opt("/no/such/file.mlir")
    assert result.returncode == 1
    assert "cannot read" in result.stderr


def test_expectations_match_warnings_and_notes_by_line_and_kind() -> None:
    chunk = diagnostics.Chunk(
        10,
        "op a\n"
        "// expected-warning @-1 {{slow}}\n"
        "// expected-note @below {{here}}\n"
        "// expected-remark {{never}}\n"
        "op b\n",
    )
    expected = diagnostics.expectations(chunk)
    assert [(e.severity, e.line) for e in expected] == [("warning", 10), ("note", 14), ("remark", 13)]
    found = [
        diagnostics.Diagnostic("warning", "a slow op", "f.mlir:10:1", 10),
        diagnostics.Diagnostic("note", "defined here", "f.mlir:14:1", 14),
        diagnostics.Diagnostic("note", "see current operation: op b", "f.mlir:14:1", 14),
        diagnostics.Diagnostic("error", "slow", "f.mlir:10:1", 10),
    ]
    assert diagnostics.check(found, expected, "f.mlir") == [
        "f.mlir:10:1: error: unexpected error: slow",
        'f.mlir:13: error: expected remark "never" was not produced',
    ]


def test_split_input_keeps_line_numbers() -> None:
    chunks = diagnostics.split_input("a\n// -----\nb\nc\n  // -----  \nd")
    assert [(c.first_line, c.text) for c in chunks] == [(1, "a\n"), (3, "b\nc\n"), (6, "d")]
    assert chunks[2].padded().split("\n").index("d") + 1 == 6
