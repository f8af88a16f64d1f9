"""glow-opt's diagnostics, and its `--split-input-file` and `--verify-diagnostics` modes (as mlir-opt's).

Every problem glow-opt reports becomes a `Diagnostic`: the MLIR diagnostics of the bindings (parse, verify,
upstream passes) and glow-mlir's own `GlowError`s, whose location is text (`f.mlir:12:3`, or a node name).
`split_input` cuts an input at `// -----` lines into chunks that keep the line numbers of the whole file.
`expectations` reads a chunk's `// expected-error@+1 {{text}}` comments and `check` matches the chunk's
diagnostics against them, each diagnostic against one unmet expectation on its line whose text is a
substring of the message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mlir import ir

from glow_mlir.errors import GlowError, PipelineError, VerificationError
from glow_mlir.ops import location_text

SPLIT_MARKER = "// -----"

# The name MLIR gives a buffer parsed from a string (`ir.Module.parse`), which is how glow-opt parses input.
_STRING_BUFFER = "-"

_SEVERITY = {
    ir.DiagnosticSeverity.ERROR: "error",
    ir.DiagnosticSeverity.WARNING: "warning",
    ir.DiagnosticSeverity.NOTE: "note",
    ir.DiagnosticSeverity.REMARK: "remark",
}

# mlir-opt's syntax: `expected-error@+1 {{text}}`, `@-2`, `@above`, `@below`, or no `@` for the same line.
_EXPECTED = re.compile(r"expected-(error|warning|note|remark) *(?:@([+-]\d+|above|below))? *\{\{(.*)\}\}\s*$")
# A position as `location_text` writes it, and a message that starts with one (`GlowError("f.mlir:3:7: ...")`).
_POSITION = re.compile(r"(?P<file>.+):(?P<line>\d+):(?P<col>\d+)")
_POSITIONED_MESSAGE = re.compile(r"(?P<file>\S+?):(?P<line>\d+):(?P<col>\d+): (?P<message>.*)", re.DOTALL)
# MLIR adds this note to a verifier error when the context prints ops on diagnostics; mlir-opt turns that off
# under --verify-diagnostics, which the bindings cannot, so the checker ignores the note instead.
_OP_DUMP_NOTE = "see current operation: "


@dataclass(frozen=True)
class Diagnostic:
    """One problem as glow-opt prints it: `location: severity: message`."""

    severity: str
    message: str
    # As the user reads it: `f.mlir:3:7`, a node name, or `glow-opt` for a problem with no location.
    location: str
    # The line of the input it points at; None for a name, another file or no location.
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.location}: {self.severity}: {self.message}"


@dataclass(frozen=True)
class Chunk:
    """A part of the input between `// -----` lines; `first_line` is its first line's number in the whole input."""

    first_line: int
    text: str

    def padded(self) -> str:
        """The text behind as many empty lines as precede it, so that parsed locations count whole-file lines."""
        return "\n" * (self.first_line - 1) + self.text


@dataclass
class Expectation:
    severity: str
    text: str
    # The line the diagnostic must point at (0 when the comment names no line), and the comment's own line.
    line: int
    comment_line: int
    met: bool = False


def split_input(text: str) -> list[Chunk]:
    """`text` cut at lines that read `// -----`; the marker lines belong to no chunk."""
    chunks: list[Chunk] = []
    first = 1
    current: list[str] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip() == SPLIT_MARKER:
            chunks.append(Chunk(first, "\n".join(current) + "\n"))
            first, current = number + 1, []
        else:
            current.append(line)
    chunks.append(Chunk(first, "\n".join(current)))
    return chunks


def _file_position(loc: ir.Location) -> tuple[str, int, int] | None:
    """The file position a location points at, looking through names, call sites and fusions as MLIR does."""
    if loc.is_a_file():
        return loc.filename, loc.start_line, loc.start_col
    if loc.is_a_name():
        return _file_position(loc.child_loc)
    if loc.is_a_callsite():
        return _file_position(loc.callee)
    if loc.is_a_fused():
        return next(filter(None, (_file_position(inner) for inner in loc.locations)), None)
    return None


def _positioned(file: str, line: int, col: int, source: str) -> tuple[str, int | None]:
    """Location text and input line of a file position; positions in other files have no input line."""
    if file in (_STRING_BUFFER, source):
        return f"{source}:{line}:{col}", line
    return f"{file}:{line}:{col}", None


def from_mlir(diagnostic: ir.Diagnostic | ir.DiagnosticInfo, source: str) -> list[Diagnostic]:
    """An MLIR diagnostic and its notes, with locations in the input `source` named after it."""
    position = _file_position(diagnostic.location)
    location, line = (
        _positioned(*position, source) if position is not None else (location_text(diagnostic.location), None)
    )
    found = [Diagnostic(_SEVERITY[diagnostic.severity], diagnostic.message, location, line)]
    for note in diagnostic.notes:
        found.extend(from_mlir(note, source))
    return found


def from_mlir_error(error: ir.MLIRError, source: str) -> list[Diagnostic]:
    found = [d for info in error.error_diagnostics for d in from_mlir(info, source)]
    return found or [Diagnostic("error", str(error), "glow-opt")]


def from_glow_error(error: GlowError, source: str) -> list[Diagnostic]:
    """The diagnostics of a glow-mlir error: located when its location text is a file position."""
    if isinstance(error, VerificationError):
        message, where = f"'{error.op_name}' {error.rule}", _POSITION.fullmatch(error.location)
        if where is None:
            return [Diagnostic("error", message, error.location)]
        location, line = _positioned(where["file"], int(where["line"]), int(where["col"]), source)
        return [Diagnostic("error", message, location, line)]
    if isinstance(error, PipelineError) and isinstance(error.__context__, ir.MLIRError):
        # An upstream pass failed: the runner raises `from None`, which keeps the MLIR error as the context.
        # Its diagnostics point into the input when the pass reported them on input ops.
        located = from_mlir_error(error.__context__, source)
        if any(d.line is not None for d in located):
            return located
    where = _POSITIONED_MESSAGE.fullmatch(str(error))
    if where is None:
        return [Diagnostic("error", str(error), "glow-opt")]
    location, line = _positioned(where["file"], int(where["line"]), int(where["col"]), source)
    return [Diagnostic("error", where["message"], location, line)]


def expectations(chunk: Chunk) -> list[Expectation]:
    """The `expected-*` comments of a chunk, each with the line it designates (mlir-opt's rules)."""
    found: list[Expectation] = []
    below: list[Expectation] = []
    last_plain = 0  # the last line without an expectation, which `@above` designates
    for number, line in enumerate(chunk.text.split("\n"), start=chunk.first_line):
        match = _EXPECTED.search(line)
        if match is None:
            for e in below:
                e.line = number
            below, last_plain = [], number
            continue
        severity, where, text = match.groups()
        if where is None:
            target = number
        elif where == "above":
            target = last_plain
        elif where == "below":
            target = 0  # set by the next line without an expectation
        else:
            target = number + int(where)
        expectation = Expectation(severity, text.strip(), target, number)
        found.append(expectation)
        if where == "below":
            below.append(expectation)
    return found


def check(diagnostics: list[Diagnostic], expected: list[Expectation], source: str) -> list[str]:
    """What does not match, as `file:line: error: ...` lines: diagnostics that no expectation met, then
    expectations that no diagnostic met. Empty when everything matches."""
    problems: list[str] = []
    for d in diagnostics:
        if d.severity == "note" and d.message.startswith(_OP_DUMP_NOTE):
            continue
        match = next(
            (
                e
                for e in expected
                if not e.met and d.line is not None and e.line == d.line and e.severity == d.severity
                and e.text in d.message
            ),
            None,
        )
        if match is None:
            problems.append(f"{d.location}: error: unexpected {d.severity}: {d.message}")
        else:
            match.met = True
    problems.extend(
        f'{source}:{e.comment_line}: error: expected {e.severity} "{e.text}" was not produced'
        for e in expected
        if not e.met
    )
    return problems
