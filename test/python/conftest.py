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

TEST_DIR = str(Path(__file__).resolve().parent.parent)
if TEST_DIR not in sys.path:
    sys.path.insert(0, TEST_DIR)
