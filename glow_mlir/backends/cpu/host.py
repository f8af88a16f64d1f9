"""What the host CPU has: the JIT compiles for the host, so a kernel using an instruction the CPU lacks cannot
be selected (LLVM fails) or would fault; the CPU backend asks here before it uses one."""

from __future__ import annotations

from functools import cache
from pathlib import Path


@cache
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags as Linux lists them (`flags` in /proc/cpuinfo); empty where it cannot tell."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    return frozenset(next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")),
                          []))
