"""The package's layout holds: no module over 600 lines, and no import cycle between its parts, counting
imports made through module-name strings (importlib) too.

A part is a subpackage (glow_mlir.passes.graph, glow_mlir.backends.cpu, glow_mlir.opdefs, ...) or a top-level
module (glow_mlir.builder). The package's __init__ is its public facade and imports everything, so it is
left out.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "glow_mlir"
MAX_LINES = 600


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(path: Path, name: str, modules: dict[str, Path]) -> set[str]:
    """The glow_mlir modules `path` imports, by statement or by a module-name string."""
    tree = ast.parse(path.read_text())
    # Imports only a type checker runs make no cycle at run time.
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            node.body = []
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                targets.add(full if full in modules else base)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if re.fullmatch(r"glow_mlir(\.\w+)+", node.value) and node.value in modules:
                targets.add(node.value)
    return {t for t in targets if t in modules and t != "glow_mlir"}


def _part(name: str, modules: dict[str, Path]) -> str:
    if modules[name].name == "__init__.py":
        return name
    parent = name.rsplit(".", 1)[0]
    return name if parent == "glow_mlir" else parent


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph`, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_module_is_over_600_lines() -> None:
    long = {name: n for name, path in _modules().items() if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_no_import_cycle_between_parts() -> None:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        if name == "glow_mlir":
            continue
        source = _part(name, modules)
        for target in _imports(path, name, modules):
            dest = _part(target, modules)
            if dest != source:
                graph.setdefault(source, set()).add(dest)
    assert _cycle(graph) is None, f"import cycle between parts: {' -> '.join(_cycle(graph) or [])}"


def test_no_import_cycle_between_modules() -> None:
    modules = _modules()
    graph = {name: _imports(path, name, modules) for name, path in modules.items() if name != "glow_mlir"}
    # A package's __init__ importing its own modules is how a package defines its contents.
    for name in graph:
        graph[name] = {t for t in graph[name] if not (modules[t].name == "__init__.py" and name.startswith(t + "."))}
    assert _cycle(graph) is None, f"import cycle between modules: {' -> '.join(_cycle(graph) or [])}"
