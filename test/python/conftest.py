"""pytest set-up for test/python: makes the helper packages kept in test/ importable from the tests here
(`onnx_backend`, onnx's backend test suite driver; `models`, the real networks defined in PyTorch), and keeps
the compile cache off."""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Tests compile thousands of throw-away models: the on-disk compile cache stays off unless a test turns it on
# (test_compile_cache.py does, in a folder of its own).
os.environ["GLOW_MLIR_CACHE"] = "0"

# test/ holds the helper packages; test/python the helper modules shared by tests in its subfolders
# (onnx_check), which mirror the source tree.
HERE = Path(__file__).resolve().parent
for folder in (str(HERE.parent), str(HERE)):
    if folder not in sys.path:
        sys.path.insert(0, folder)
