"""pytest set-up for test/python: makes the helper packages kept in test/ importable from the tests here
(`onnx_backend`, onnx's backend test suite driver; `models`, the real networks defined in PyTorch), and keeps
the compile cache off and poisons every run's arena."""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Tests compile thousands of throw-away models: the on-disk compile cache stays off unless a test turns it on
# (test_compile_cache.py does, in a folder of its own).
os.environ["GLOW_MLIR_CACHE"] = "0"

# Every run fills its arena and outputs with NaN bytes first (glow_mlir/library.py, GLOW_MLIR_POISON), so that
# every test comparing outputs also catches a kernel that reads bytes nothing wrote (or leaves an output byte
# unwritten), which a fresh arena's zeros would hide.
os.environ.setdefault("GLOW_MLIR_POISON", "0xff")

# test/ holds the helper packages; test/python the helper modules shared by tests in its subfolders
# (onnx_check), which mirror the source tree.
HERE = Path(__file__).resolve().parent
for folder in (str(HERE.parent), str(HERE)):
    if folder not in sys.path:
        sys.path.insert(0, folder)
