"""What keeps a compile short (notes: "Where compile time goes"): loop nests that no recipe scheduled are
functions of their own, no outlined function is inlined back or has its loops unrolled by LLVM, weights reach
LLVM as bytes, and the bindings never search for Python modules of the glow dialects. Each test fails if its
mechanism stops working; the outputs are checked against numpy at the same time."""

from __future__ import annotations

import re
import sys
from importlib.machinery import ModuleSpec

import numpy as np

import glow_mlir

RNG = np.random.default_rng(23)


def _model() -> tuple[glow_mlir.Graph, dict[str, np.ndarray], np.ndarray]:
    """A matmul with constant weights (a scheduled kernel) whose result is transposed (a loop nest that no
    recipe schedules)."""
    x = RNG.standard_normal((24, 40)).astype(np.float32)
    w = RNG.standard_normal((40, 56)).astype(np.float32)
    g = glow_mlir.Graph("mm_t")
    g.output("y", g.transpose(g.matmul(g.input("x", x.shape), g.constant(w)), [1, 0]))
    return g, {"x": x}, (x.astype(np.float64) @ w.astype(np.float64)).T


def _function(text: str, name: str) -> str:
    """The text of function `name` in a module's text (up to the next function)."""
    start = text.index(f"@{name}(")
    following = text.find("func.func", start)
    return text[start : following if following >= 0 else len(text)]


def _llvm_function(text: str, name: str) -> str:
    """The text of llvm.func `name` (up to the next function)."""
    start = text.index(f"llvm.func @{name}(")
    following = text.find("llvm.func", start + 1)
    return text[start : following if following >= 0 else len(text)]


def test_leftover_loop_nests_are_outlined_and_never_inlined() -> None:
    g, feeds, want = _model()
    with glow_mlir.compile(g, keep_ir=True, cache=False) as model:
        np.testing.assert_allclose(model.run(feeds)["y"], want, rtol=1e-4, atol=1e-4)
        scheduled = model.ir("glow-cpu-schedule")
        lowered = model.ir("glow-to-llvm")
    entry = _function(scheduled, "mm_t")
    assert "linalg." not in entry
    assert "call @__glow_kernel" in entry and "call @__glow_loops_mm_t_0" in entry
    outlined = re.findall(r"llvm\.func @(__glow_\w+)\(.*", lowered)
    assert len(outlined) >= 2
    for line in re.findall(r"llvm\.func @__glow_\w+\(.*", lowered):
        assert "no_inline" in line, line
    # Every loop of an outlined function carries, on its back edge, the metadata that keeps LLVM from
    # unrolling it.
    for name in outlined:
        body = _llvm_function(lowered, name)
        back_edges = len(re.findall(r"llvm\.br \^bb", body))
        assert body.count("loop_annotation = ") >= 1 and back_edges >= 1, name


def test_weights_reach_llvm_as_bytes() -> None:
    """The packed weights of the matmul are an i8 array holding the bytes of the f32 values."""
    g, feeds, want = _model()
    with glow_mlir.compile(g, keep_ir=True, cache=False) as model:
        np.testing.assert_allclose(model.run(feeds)["y"], want, rtol=1e-4, atol=1e-4)
        lowered = model.ir("glow-to-llvm")
    globals_ = re.findall(r"llvm\.mlir\.global .*", lowered)
    assert globals_
    for line in globals_:
        if "dense<" in line and "xf32>" in line:
            # Only splats (one value, which LLVM emits as a fill) keep their element type.
            assert re.search(r"dense<[^\[]", line), line[:200]
    assert any(re.search(r": tensor<\d+xi8>\).*!llvm\.array<\d+ x i8>", line) for line in globals_)


class _ImportSpy:
    """A meta path finder that records the module names Python searches for, and finds none of them."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def find_spec(self, name: str, path: object = None, target: object = None) -> ModuleSpec | None:
        self.names.append(name)
        return None


def test_compiling_imports_no_dialect_module() -> None:
    """The bindings look for `mlir.dialects.glow_ir` at every view of a glow_ir op and retry a miss each time
    (glow_mlir/context.py registers empty ones): without them, this compile searches tens of thousands of
    times."""
    g, feeds, want = _model()
    spy = _ImportSpy()
    sys.meta_path.insert(0, spy)
    try:
        with glow_mlir.compile(g, cache=False) as model:
            np.testing.assert_allclose(model.run(feeds)["y"], want, rtol=1e-4, atol=1e-4)
    finally:
        sys.meta_path.remove(spy)
    assert not [name for name in spy.names if name.startswith("mlir.dialects.glow")]


def _layers(count: int) -> tuple[glow_mlir.Graph, dict[str, np.ndarray], np.ndarray]:
    """`count` identical layers (matmul with weights of their own, bias add, tanh, transpose) in a row."""
    x = RNG.standard_normal((32, 32)).astype(np.float32)
    g = glow_mlir.Graph("layers")
    y = g.input("x", x.shape)
    want = x.astype(np.float64)
    for _ in range(count):
        w = (RNG.standard_normal((32, 32)) / 8).astype(np.float32)
        b = RNG.standard_normal((32, 32)).astype(np.float32)
        y = g.transpose(g.tanh(g.add(g.matmul(y, g.constant(w)), g.constant(b))), [1, 0])
        want = np.tanh(want @ w + b).T
    g.output("y", y)
    return g, {"x": x}, want


def _outlined(scheduled: str) -> tuple[set[str], int]:
    """The outlined functions of a scheduled module's text, and how many calls call them."""
    functions = set(re.findall(r"func\.func private @(__glow_\w+)\(", scheduled))
    return functions, len(re.findall(r"call @__glow_", scheduled))


def test_repeated_layers_compile_once() -> None:
    """Compile time grows linearly with the model, by no more than each layer's call sites: the kernels of
    identical layers (the same ops, shapes and attributes; weights of their own) are scheduled and compiled
    once (outline.py: `Outlined`). The proxy: the outlined functions of 2 and 4 layers are the same ones, and
    the LLVM module grows by the same op count per layer, less than the layer's kernels would add."""
    functions: dict[int, set[str]] = {}
    llvm_ops: dict[int, int] = {}
    for count in (2, 3, 4):
        g, feeds, want = _layers(count)
        with glow_mlir.compile(g, keep_ir=True, cache=False) as model:
            np.testing.assert_allclose(model.run(feeds)["y"], want, rtol=1e-4, atol=1e-4)
            functions[count], calls = _outlined(model.ir("glow-cpu-schedule"))
            assert calls >= 2 * count and len(functions[count]) < calls
            llvm_ops[count] = next(p["ops_after"] for p in model.report["passes"] if p["name"] == "glow-to-llvm")
            lowered = model.ir("glow-to-llvm")
    assert functions[2] == functions[4]
    per_layer = llvm_ops[4] - llvm_ops[3]
    assert llvm_ops[3] - llvm_ops[2] == per_layer
    # Lines of the outlined functions, about one op each: what every layer would add if compiled anew.
    kernel_lines = sum(_llvm_function(lowered, name).count("\n") for name in functions[4])
    assert per_layer < kernel_lines
