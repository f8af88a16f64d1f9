"""glow-opt: runs a pass pipeline over an MLIR file that may hold `glow` and `glow_ir` ops.

    glow-opt FILE|- [--pass-pipeline='builtin.module(glow-lower,canonicalize,...)']
             [--list-passes] [--print-ir-after-all] [--glow-stats] [-o FILE]

One pipeline string may mix glow-mlir passes (from the pass registry) with any upstream MLIR pass. Parse,
verify and pass errors print as `file:line:col: error: ...` and exit with status 1.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence

from mlir import ir

from glow_mlir.context import make_context
from glow_mlir.ops import location_text
from glow_mlir.errors import GlowError, VerificationError
from glow_mlir.pipeline import catalog
from glow_mlir.pipeline.runner import PipelineStats, run_pipeline


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="glow-opt", description=__doc__.splitlines()[0])
    p.add_argument("input", nargs="?", default="-", help="input .mlir file, or - for standard input")
    p.add_argument("--pass-pipeline", default="", help="e.g. 'builtin.module(glow-lower,canonicalize)'")
    p.add_argument("--list-passes", action="store_true", help="list glow-mlir's passes and exit")
    p.add_argument("--print-ir-after-all", action="store_true", help="print the IR after every pass, to stderr")
    p.add_argument("--glow-stats", action="store_true", help="print op counts and time per pass, to stderr")
    p.add_argument("-o", dest="output", default="-", help="output file (default: standard output)")
    return p


def list_passes() -> str:
    rows = catalog.passes().values()
    width = max(len(p.name) for p in rows)
    return "\n".join(f"  {p.name:<{width}}  {p.description}" for p in rows) + "\n"


def _format_mlir_error(error: ir.MLIRError) -> str:
    lines = []
    for d in error.error_diagnostics:
        lines.append(f"{location_text(d.location)}: error: {d.message}")
        lines.extend(f"{location_text(n.location)}: note: {n.message}" for n in d.notes)
    return "\n".join(lines) or str(error)


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


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.list_passes:
        sys.stdout.write(list_passes())
        return 0
    ctx = make_context()
    with ctx:
        try:
            if args.input == "-":
                module = ir.Module.parse(sys.stdin.read())
            elif not os.path.isfile(args.input):
                print(f"glow-opt: error: cannot read '{args.input}': no such file", file=sys.stderr)
                return 1
            else:
                module = ir.Module.parseFile(args.input)
        except ir.MLIRError as e:
            print(_format_mlir_error(e), file=sys.stderr)
            return 1

        def print_after(name: str, m: ir.Module) -> None:
            print(f"// -----// IR Dump After {name} //----- //\n{m}", file=sys.stderr)

        stats = PipelineStats() if args.glow_stats else None
        try:
            if args.pass_pipeline:
                run_pipeline(
                    module,
                    args.pass_pipeline,
                    after_each=print_after if args.print_ir_after_all else None,
                    stats=stats,
                )
            module.operation.verify()
        except VerificationError as e:
            print(f"{e.location}: error: '{e.op_name}' {e.rule}", file=sys.stderr)
            return 1
        except GlowError as e:
            print(f"glow-opt: error: {e}", file=sys.stderr)
            return 1
        except ir.MLIRError as e:
            print(_format_mlir_error(e), file=sys.stderr)
            return 1
        if stats is not None:
            for r in stats.records:
                print(f"{r.name:<28} ops {r.ops_before:>6} -> {r.ops_after:<6} {r.seconds * 1e3:9.2f} ms", file=sys.stderr)
        text = str(module)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        _write_atomically(args.output, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
