"""What the host has: the JIT compiles for the host, so a kernel using an instruction the CPU lacks cannot be
selected (LLVM fails) or would fault; the CPU backend asks here before it uses one. And its physical memory,
which bounds what a compile may fold and what a compiled model may need to run."""

from __future__ import annotations

import os
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


@cache
def physical_memory() -> int:
    """The machine's physical memory in bytes."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
