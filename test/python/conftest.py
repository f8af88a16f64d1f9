"""pytest set-up for test/python: makes the helper packages kept in test/ importable from the tests here
(`onnx_backend`, onnx's backend test suite driver; `models`, the real networks defined in PyTorch)."""

from __future__ import annotations

import sys
from pathlib import Path

TEST_DIR = str(Path(__file__).resolve().parent.parent)
if TEST_DIR not in sys.path:
    sys.path.insert(0, TEST_DIR)
