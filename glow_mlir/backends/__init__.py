"""Backends: each keeps its own ops, layout pass, lowerings, schedules and its LLVM pipeline."""
