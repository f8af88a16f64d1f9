"""What keeps a compile short (notes: "Where compile time goes"): loop nests that no recipe scheduled are
functions of their own, no outlined function is inlined back or has its loops unrolled by LLVM, weights reach
LLVM as bytes, the bindings never search for Python modules of the glow dialects, and recipes find an op's
chain or epilogue without listing its block. Each test fails if its mechanism stops working; the outputs are
checked against numpy where a model runs."""

from __future__ import annotations

import re
import sys
from importlib.machinery import ModuleSpec

import numpy as np
import pytest
from mlir import ir
from onnx import TensorProto, helper, numpy_helper

import glow_mlir
from glow_mlir import ops
from glow_mlir.backends.cpu import conv_recipes, elementwise_recipes
from glow_mlir.backends.cpu.recipes import CONV_ACTIVATION_ATTR, CONV_BIAS_ATTR
from glow_mlir.context import copy_module, make_context
from glow_mlir.frontends.onnx import import_model
from glow_mlir.pipeline.runner import COMPILE_PIPELINE, run_pipeline

RNG = np.random.default_rng(23)


def _model() -> tuple[glow_mlir.Graph, dict[str, np.ndarray], np.ndarray]:
    """A matmul with constant weights (a scheduled kernel) whose result, seen as [24, 7, 8], has its first two
    dims swapped (a transpose that keeps the innermost dim: a strided copy, a loop nest that no recipe
    schedules, transpose_recipes.py)."""
    x = RNG.standard_normal((24, 40)).astype(np.float32)
    w = RNG.standard_normal((40, 56)).astype(np.float32)
    g = glow_mlir.Graph("mm_t")
    product = g.reshape(g.matmul(g.input("x", x.shape), g.constant(w)), [24, 7, 8])
    g.output("y", g.transpose(product, [1, 0, 2]))
    return g, {"x": x}, (x.astype(np.float64) @ w.astype(np.float64)).reshape(24, 7, 8).transpose(1, 0, 2)


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


# Two chains in one shared buffer %y (exp, add, max; then add, max), an op on another buffer between them.
_T = "memref<4x64xf32>"
_CHAINS = f"""
func.func @chains(%a: {_T} {{glow.name = "a"}}, %b: {_T} {{glow.name = "b"}},
                  %t: {_T} {{glow.name = "t", glow.output}}, %y: {_T} {{glow.name = "y", glow.output}}) {{
  "glow_ir.element_exp"(%y, %b) {{roles = ["out", "in"]}} : ({_T}, {_T}) -> ()
  "glow_ir.element_add"(%y, %y, %b) {{roles = ["out", "in", "in"]}} : ({_T}, {_T}, {_T}) -> ()
  "glow_ir.element_max"(%y, %y, %a) {{roles = ["out", "in", "in"]}} : ({_T}, {_T}, {_T}) -> ()
  "glow_ir.element_mul"(%t, %a, %y) {{roles = ["out", "in", "in"]}} : ({_T}, {_T}, {_T}) -> ()
  "glow_ir.element_add"(%y, %t, %a) {{roles = ["out", "in", "in"]}} : ({_T}, {_T}, {_T}) -> ()
  "glow_ir.element_max"(%y, %y, %b) {{roles = ["out", "in", "in"]}} : ({_T}, {_T}, {_T}) -> ()
  return
}}
"""


def test_chains_are_found_without_listing_the_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """The elementwise recipe finds the chain an op ends among its destination's users: listing the whole block
    for every op made glow-cpu-schedule quadratic in the model's size. The proxy: no block is listed while the
    chains of a function are found, and they are the runs of marked ops before each op."""
    with make_context():
        module = ir.Module.parse(_CHAINS)
        run_pipeline(module, ["glow-ir-to-linalg"])
        function = ops.functions(module)[0]
        elementwise_recipes.mark_chains(function)
        generics = [op for op in ops.walk_ops(function) if op.name == "linalg.generic"]
        assert len(generics) == 6
        with monkeypatch.context() as patch:
            patch.setattr(ir.Block, "operations", property(lambda block: pytest.fail("a block was listed")))
            chains = [elementwise_recipes._chain_ending_at(op) for op in generics]
    positions = [[next(i for i, g in enumerate(generics) if g == op) for op in chain] for chain in chains]
    assert positions == [[0], [0, 1], [0, 1, 2], [3], [4], [4, 5]]


def test_chains_are_found_in_the_order_before_the_recipes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under chain_order, the chain an op ends is ordered by the function's order from before the recipes ran,
    not by MLIR, whose next comparison after a recipe's insertions numbered the whole block again, once per recipe
    (1.5 s of CSATv2 QDQ's compile). The first chain's recipe runs (new users of %y where its ops were); the
    second chain is then found whole with no comparison asked of MLIR."""
    with make_context():
        module = _lowered_chains()
        function = ops.functions(module)[0]
        elementwise_recipes.mark_chains(function)
        generics = [op for op in ops.walk_ops(function) if op.name == "linalg.generic"]
        with elementwise_recipes.chain_order(function):
            with generics[2].location, ir.InsertionPoint(generics[2]):
                assert elementwise_recipes.generic_recipe(generics[2]) is not None
            with monkeypatch.context() as patch:
                patch.setattr(ir.Operation, "is_before_in_block", lambda *_: pytest.fail("MLIR was asked the order"))
                chain = elementwise_recipes._chain_ending_at(generics[5])
        assert chain == [generics[4], generics[5]]


def _lowered_chains() -> ir.Module:
    """`_CHAINS` after glow-ir-to-linalg (call within a context; its function dies with the module)."""
    module = ir.Module.parse(_CHAINS)
    run_pipeline(module, ["glow-ir-to-linalg"])
    return module


def _counted(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> list[object]:
    """Replaces function `name` of module `owner` by one that records its first argument per call, in the list
    returned."""
    calls: list[object] = []
    derive = getattr(owner, name)

    def counted(first: object) -> object:
        calls.append(first)
        return derive(first)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_chains_derive_each_recipe_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """mark_chains asks each generic once whether it chains: deriving an elementwise recipe's steps twice per op
    was 3.5 s of HRM-Text QDQ's compile. The proxy: one derivation per generic of the six."""
    with make_context():
        module = _lowered_chains()
        function = ops.functions(module)[0]
        calls = _counted(monkeypatch, elementwise_recipes, "elementwise_recipe_steps")
        elementwise_recipes.mark_chains(function)
        assert len(calls) == len([op for op in ops.walk_ops(function) if op.name == "linalg.generic"]) == 6


def test_storage_types_are_derived_once_per_type(monkeypatch: pytest.MonkeyPatch) -> None:
    """signless_types derives each distinct type's storage type once (every value's memref type rebuilt was 2.2 s
    of HRM-Text QDQ's compile, 275k values): the function of the chains above, lowered, has a handful of types
    for its values and its generics' block arguments; beyond them, only the function's arguments and signature
    are asked for."""
    from glow_mlir.codegen import builders

    with make_context():
        module = _lowered_chains()
        function = ops.functions(module)[0]
        values = [v for op in ops.walk_ops(function)
                  for v in (*op.results, *(a for r in op.regions for b in r.blocks for a in b.arguments))]
        arguments = len(function.regions[0].blocks[0].arguments)
        calls = _counted(monkeypatch, builders, "storage_type")
        with ir.Location.unknown():
            builders.signless_types(function)
    # Deriving per value asked at least once per value (39 calls for these 23), per type far fewer.
    assert len(calls) < len(values) - arguments


def test_conv_epilogue_found_without_listing_the_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """A CPU convolution's bias op (before it) and activation op (after it) are found among the users of its
    output (conv_recipes.epilogue): listing the block for every convolution made glow-cpu-schedule quadratic
    (RegNetX-002's schedule: 2.1 -> 1.3 s CPU). Two convolutions with bias and ReLU each: both pairs found."""
    nodes, inits = [], []
    for i in range(2):
        nodes += [helper.make_node("Conv", [f"x{i}", f"w{i}", f"b{i}"], [f"c{i}"], pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"c{i}"], [f"x{i + 1}"])]
        inits += [numpy_helper.from_array(RNG.standard_normal((8, 8, 3, 3)).astype(np.float32), f"w{i}"),
                  numpy_helper.from_array(RNG.standard_normal(8).astype(np.float32), f"b{i}")]
    graph = helper.make_graph(nodes, "convs", [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [1, 8, 6, 6])],
                              [helper.make_tensor_value_info("x2", TensorProto.FLOAT, None)], inits)
    g = import_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    module = copy_module(g.module)
    with module.context:
        run_pipeline(module, list(COMPILE_PIPELINE[: COMPILE_PIPELINE.index("glow-ir-to-linalg") + 1]))
        convs = [op for op in ops.walk_ops(module.operation) if op.name == "linalg.conv_2d_nhwc_hwcf"]
        assert len(convs) == 2
        with monkeypatch.context() as patch:
            patch.setattr(ir.Block, "operations", property(lambda block: pytest.fail("a block was listed")))
            found = [conv_recipes.epilogue(op) for op in convs]
        for bias, activation in found:
            assert bias is not None and CONV_BIAS_ATTR in bias.attributes
            assert activation is not None and CONV_ACTIVATION_ATTR in activation.attributes


def test_kernels_differing_in_constants_compile_once() -> None:
    """Kernels alike but for the values of their constants of arithmetic (a QDQ model's scales: HRM-Text QDQ's
    1185 distinct kernel functions were 59 but for them) are one function that reads the values from a table each
    call passes (constant_args.py); the reads stay in the loops, where LLVM folds them into the arithmetic as it
    folded the constants. A clamp's bound stays a constant (outputs checked against numpy)."""
    g = glow_mlir.Graph("scales")
    feeds: dict[str, np.ndarray] = {}
    want: dict[str, np.ndarray] = {}
    bound = np.full((16, 64), 8, np.float32)
    # One input and output per scale: nothing between them for the graph passes to fold.
    for i, scale in enumerate((0.5, 0.25, 0.125)):
        feeds[f"x{i}"] = RNG.standard_normal((16, 64)).astype(np.float32)
        quotient = g.div(g.input(f"x{i}", (16, 64)), g.constant(np.full((16, 64), scale, np.float32)))
        g.output(f"y{i}", g.min(g.max(quotient, g.constant(-bound)), g.constant(bound)))
        want[f"y{i}"] = np.clip(feeds[f"x{i}"] / np.float32(scale), -8, 8)
    with glow_mlir.compile(g, keep_ir=True, cache=False) as model:
        outputs = model.run(feeds)
        for name, expected in want.items():
            np.testing.assert_allclose(outputs[name], expected, rtol=1e-6)
        scheduled = model.ir("glow-cpu-schedule")
    functions, _ = _outlined(scheduled)
    dividing = [name for name in functions if "arith.divf" in _function(scheduled, name)]
    assert len(dividing) == 1, dividing
    assert len(re.findall(rf"call @{dividing[0]}\(", scheduled)) == 3
    body = _function(scheduled, dividing[0])
    assert re.search(r"scf\.for[^\n]*\n(.*\n)*.*memref\.load %arg\d+\[%c\d+\] : memref<1xf32>", body), body
    assert "arith.constant dense<-8.000000e+00>" in body, body
    assert len(re.findall(r"memref\.global \"private\" constant @__glow_constants_", scheduled)) == 3
