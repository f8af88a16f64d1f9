"""glow-mlir: the package's housekeeping command.

    glow-mlir cache info      where the compile cache is, its entries, their size against the cap
    glow-mlir cache list      one line per entry, least recently used first
    glow-mlir cache clear     deletes every entry
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from glow_mlir import cache


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="glow-mlir", description=__doc__.splitlines()[0])
    commands = p.add_subparsers(dest="command", required=True)
    cache_command = commands.add_parser("cache", help="the compile cache (glow_mlir/cache.py)")
    cache_command.add_argument("action", choices=("info", "list", "clear"))
    return p


def _megabytes(count: int) -> str:
    return f"{count / 1e6:.1f} MB"


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        limit = cache.max_bytes()
    except ValueError as e:
        print(f"glow-mlir: error: {e}", file=sys.stderr)
        return 1
    if args.action == "info":
        present = cache.entries()
        state = "on" if cache.enabled(None) else "off (GLOW_MLIR_CACHE=0)"
        print(f"directory: {cache.directory()}")
        print(f"cache: {state}")
        print(f"entries: {len(present)}, {_megabytes(sum(e.bytes for e in present))} of a {_megabytes(limit)} cap")
    elif args.action == "list":
        for entry in cache.entries():
            used = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.last_used))
            print(f"{entry.key[:16]}  {_megabytes(entry.bytes):>10}  last used {used}  {entry.function}")
    else:
        print(f"deleted {cache.clear()} entries from {cache.directory()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
