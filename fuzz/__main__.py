"""`python -m fuzz [--cases N] [--seed S] [--targets ...] [--workers W] [--out DIR]`: a fuzzing campaign
against glow-mlir's input surface (see fuzz/__init__.py); exits with status 1 if any case failed."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fuzz import campaign, cases
from fuzz.targets import TARGETS, Result

PROGRESS_EVERY = 100


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__.splitlines()[0])
    p.add_argument("--cases", type=int, default=1000, help="how many cases to run (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="the campaign's seed: case i of seed s is always the same")
    p.add_argument("--targets", nargs="+", default=list(TARGETS), metavar="TARGET",
                   help=f"targets taking turns (default all: {' '.join(TARGETS)})")
    p.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--out", type=Path, default=Path("fuzz-out"), help="where failures are saved (default fuzz-out)")
    p.add_argument("--timeout", type=float, default=campaign.DEFAULT_TIMEOUT, help="seconds per case")
    p.add_argument("--only", type=int, nargs="+", metavar="INDEX", help="run only these case numbers")
    p.add_argument("--no-minimize", action="store_true", help="save failures as found")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        targets = cases.check_targets(args.targets)
    except ValueError as e:
        _parser().error(str(e))
    indices = args.only if args.only else list(range(args.cases))

    def progress(case: cases.Case, result: Result, summary: campaign.Summary) -> None:
        done = sum(sum(c.values()) for c in summary.counts.values())
        if result.status not in ("ok", "refused"):
            print(f"{case.id} ({case.seed}): {result.status}: {result.message.splitlines()[0][:200]}", file=sys.stderr)
        if done % PROGRESS_EVERY == 0 or args.only:
            print(f"[{done}/{len(indices)}] {len(summary.failures)} failure(s)", file=sys.stderr, flush=True)

    summary = campaign.run(
        indices, args.seed, targets, workers=args.workers, out=args.out, timeout=args.timeout,
        minimize_failures=not args.no_minimize, on_result=progress,
    )
    print(summary.table())
    print(f"{len(indices)} cases in {summary.seconds:.0f} s; {len(summary.failures)} failure(s)"
          + (f", saved under {args.out}/" if summary.failures else ""))
    return 1 if summary.failures else 0


if __name__ == "__main__":
    sys.exit(main())
