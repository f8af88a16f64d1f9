"""glow-opt: runs a pass pipeline over an MLIR file that may hold `glow` and `glow_ir` ops.

    glow-opt FILE|- [--pass-pipeline='builtin.module(glow-lower,canonicalize,...)']
             [--split-input-file] [--verify-diagnostics]
             [--list-passes] [--print-ir-after-all] [--glow-stats] [-o FILE]

One pipeline string may mix glow-mlir passes (from the pass registry) with any upstream MLIR pass. Parse,
verify and pass errors print as `file:line:col: error: ...` and exit with status 1. As in mlir-opt,
--split-input-file runs each part of the input between `// -----` lines on its own, and --verify-diagnostics
checks the diagnostics against the input's `// expected-error {{...}}` comments instead of printing them.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from mlir import ir

from glow_mlir.context import make_context
from glow_mlir.errors import GlowError
from glow_mlir.passes.graph.verify import verify
from glow_mlir.pipeline import catalog
from glow_mlir.pipeline.runner import PipelineStats, run_pipeline
from glow_mlir.tools import diagnostics
from glow_mlir.tools.diagnostics import Chunk, Diagnostic


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="glow-opt", description=__doc__.splitlines()[0])
    p.add_argument("input", nargs="?", default="-", help="input .mlir file, or - for standard input")
    p.add_argument("--pass-pipeline", default="", help="e.g. 'builtin.module(glow-lower,canonicalize)'")
    p.add_argument(
        "--split-input-file",
        action="store_true",
        help=f"run each part of the input between '{diagnostics.SPLIT_MARKER}' lines on its own",
    )
    p.add_argument(
        "--verify-diagnostics",
        action="store_true",
        help="check diagnostics against the input's expected-error/warning/note comments",
    )
    p.add_argument("--list-passes", action="store_true", help="list glow-mlir's passes and exit")
    p.add_argument("--print-ir-after-all", action="store_true", help="print the IR after every pass, to stderr")
    p.add_argument("--glow-stats", action="store_true", help="print op counts and time per pass, to stderr")
    p.add_argument("-o", dest="output", default="-", help="output file (default: standard output)")
    return p


def list_passes() -> str:
    """Each pass's name, then its whole description indented below it, passes separated by a blank line."""
    entries = (f"{p.name}\n{textwrap.indent(p.doc or p.description, '    ')}\n" for p in catalog.passes().values())
    return "\n".join(entries)


def _write_atomically(path: str, text: str) -> None:
    """Writes `text` to `path` so that a failure never leaves a half-written file behind."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".glow-opt-")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


@dataclass
class _Outcome:
    """What running one chunk gave: the output module's text (None when it failed) and every diagnostic."""

    output: str | None
    diagnostics: list[Diagnostic]


# Dense arrays of other element types than these break the process, not just the parse: MLIR 22's parser
# aborts (a failed assertion) on `array<index: ...>`, and the Python bindings raise TypeError, or abort,
# wherever a pass reads an attribute such as `array<ui8: ...>` or `array<bf16: ...>`, for which they have no
# class. glow-opt refuses them (outside comments) before the parser sees the input.
_READABLE_ARRAY_TYPES = ("i1", "i8", "i16", "i32", "i64", "f32", "f64")
_UNREADABLE_ARRAY = re.compile(
    r"^(?P<head>(?:(?!//).)*?)\barray<\s*(?!(?:" + "|".join(_READABLE_ARRAY_TYPES) + r")\s*[:>])(?P<type>[^\s:>]*)",
    re.MULTILINE,
)


def _refuse_array(text: str, match: re.Match[str], source: str) -> Diagnostic:
    offset = match.start() + len(match["head"])
    line = text.count("\n", 0, offset) + 1
    message = f"dense arrays of '{match['type']}' elements are not supported (only {', '.join(_READABLE_ARRAY_TYPES)})"
    return Diagnostic("error", message, f"{source}:{line}:{len(match['head']) + 1}", line)


def _run_chunk(chunk: Chunk, source: str, args: argparse.Namespace) -> _Outcome:
    """Parses `chunk` into a fresh module in a fresh context and runs the pipeline on it."""
    found: list[Diagnostic] = []

    def collect(d: ir.Diagnostic) -> bool:
        # Diagnostics that no MLIRError captures (warnings, remarks) come here, to be printed or checked.
        found.extend(diagnostics.from_mlir(d, source))
        return True

    def print_after(name: str, m: ir.Module) -> None:
        print(f"// -----// IR Dump After {name} //----- //\n{m}", file=sys.stderr)

    unreadable = _UNREADABLE_ARRAY.search(chunk.padded())
    if unreadable is not None:
        return _Outcome(None, [_refuse_array(chunk.padded(), unreadable, source)])
    ctx = make_context()
    handler = ctx.attach_diagnostic_handler(collect)
    stats = PipelineStats() if args.glow_stats else None
    try:
        with ctx:
            module = ir.Module.parse(chunk.padded())
            if args.pass_pipeline:
                # glow's passes assume IR that keeps the dialects' semantic rules (a transpose's perm is a
                # permutation, ...), which the parser does not check: as mlir-opt verifies what it parses.
                verify(module)
                run_pipeline(
                    module,
                    args.pass_pipeline,
                    after_each=print_after if args.print_ir_after_all else None,
                    stats=stats,
                )
            module.operation.verify()
            output = str(module)
    except ir.MLIRError as e:
        return _Outcome(None, found + diagnostics.from_mlir_error(e, source))
    except GlowError as e:
        return _Outcome(None, found + diagnostics.from_glow_error(e, source))
    finally:
        handler.detach()
    if stats is not None:
        for r in stats.records:
            print(f"{r.name:<28} ops {r.ops_before:>6} -> {r.ops_after:<6} {r.seconds * 1e3:9.2f} ms", file=sys.stderr)
    return _Outcome(output, found)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.list_passes:
        sys.stdout.write(list_passes())
        return 0
    if args.input == "-":
        text = sys.stdin.read()
    elif not os.path.isfile(args.input):
        print(f"glow-opt: error: cannot read '{args.input}': no such file", file=sys.stderr)
        return 1
    else:
        with open(args.input) as f:
            text = f.read()
    chunks = diagnostics.split_input(text) if args.split_input_file else [Chunk(1, text)]
    outputs: list[str] = []
    failed = False
    for chunk in chunks:
        outcome = _run_chunk(chunk, args.input, args)
        if args.verify_diagnostics:
            problems = diagnostics.check(outcome.diagnostics, diagnostics.expectations(chunk), args.input)
        else:
            problems = [str(d) for d in outcome.diagnostics]
            failed |= outcome.output is None
        for line in problems:
            print(line, file=sys.stderr)
        failed |= args.verify_diagnostics and bool(problems)
        outputs.append(outcome.output or "")
    result = f"{diagnostics.SPLIT_MARKER}\n".join(outputs)
    if args.output == "-":
        sys.stdout.write(result)
    elif not failed:
        # An output file is written whole or not at all.
        _write_atomically(args.output, result)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
