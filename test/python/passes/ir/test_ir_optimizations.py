"""The glow_ir memory optimizations: every one keeps what the compiled model computes (JIT outputs equal the
interpreter's with and without it), keeps the memory discipline that glow-ir-verify checks, and makes the
arena smaller on the graphs it targets. glow-ir-verify rejects each kind of broken discipline."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from mlir import ir

from glow_mlir import ops, runtime
from glow_mlir.builder import Graph
from glow_mlir.context import copy_module, make_context
from glow_mlir.errors import VerificationError
from glow_mlir.interpreter import interpret
from glow_mlir.passes.ir import utils as u
from glow_mlir.pipeline.runner import COMPILE_PIPELINE, run_pipeline

RNG = np.random.default_rng(5)

IR_PASSES = [
    "glow-ir-copy-elim",
    "glow-ir-share-buffers",
    "glow-ir-dse",
    "glow-ir-hoist-dealloc",
    "glow-ir-sink-alloc",
    "glow-ir-optimize-inserts",
]
# The compile pipeline's IR passes, in its order, between IRGen and allocation (_compile verifies last).
_IR_STAGE = COMPILE_PIPELINE[COMPILE_PIPELINE.index("glow-irgen") + 1 : COMPILE_PIPELINE.index("glow-allocate")]
ALL_IR_PASSES = [p for p in _IR_STAGE if p != "glow-ir-verify"]
FRONT = ["glow-verify", "glow-dce", "glow-lower", "glow-verify", "glow-dce", "glow-irgen", "glow-ir-verify"]


def _random(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _chain() -> Graph:
    """Elementwise work on one shape: each step can run in its operand's buffer."""
    g = Graph("chain")
    x = g.input("x", (16, 16))
    h = g.add(x, x)
    for step in (g.sigmoid, g.tanh, g.exp, g.sqrt):
        h = step(h)
    g.output("y", g.mul(h, g.constant(_random(16, 16))))
    return g


def _inserts() -> Graph:
    """insert_tensor copies its `big` operand first; here `big` dies at the copy."""
    g = Graph("inserts")
    x = g.input("x", (8, 8))
    s = g.input("s", (2, 8))
    e = g.exp(x)
    i = g.insert_tensor(e, s, (3, 0))
    g.output("y", g.tanh(g.insert_tensor(i, g.sigmoid(s), (5, 0))))
    return g


def _outputs() -> Graph:
    """Returned views, a value returned twice, an input and a constant returned: IRGen's copies."""
    g = Graph("outputs")
    x = g.input("x", (4, 6))
    e = g.exp(x)
    g.output("e1", e)
    g.output("e2", e)
    g.output("view", g.reshape(g.tanh(x), (6, 4)))
    g.output("x", x)
    g.output("c", g.constant(_random(2, 2)))
    return g


def _network() -> Graph:
    g = Graph("net")
    x = g.input("x", (1, 2, 6, 6))
    c = g.relu(g.convolution(x, _random(4, 2, 3, 3), _random(4), pads=(1, 1, 1, 1)))
    p = g.max_pool(c, (2, 2))
    flat = g.reshape(p, (1, 36))
    y = g.softmax(g.fully_connected(flat, _random(36, 5), _random(5)))
    head = g.sigmoid(g.slice(y, (0, 0), (1, 2)))
    g.output("y", y)
    g.output("cat", g.concat([g.slice(y, (0, 1), (1, 3)), head], 1))
    g.output("flat", flat)
    return g


def _fire() -> Graph:
    """SqueezeNet's fire module in NHWC: a squeeze convolution, then a 1x1 and a padded 3x3 expand
    convolution, concatenated along the channels."""
    g = Graph("fire")
    x = g.input("x", (1, 5, 6, 8))
    squeeze = g.cpu_conv_nhwc(x, _random(1, 1, 8, 4), _random(4), activation="relu")
    one = g.cpu_conv_nhwc(squeeze, _random(1, 1, 4, 16), _random(16), activation="relu")
    three = g.cpu_conv_nhwc(squeeze, _random(3, 3, 4, 16), _random(16), pads=(1, 1, 1, 1), activation="relu")
    g.output("y", g.concat([one, three], 3))
    return g


def _feeds(g: Graph) -> dict[str, np.ndarray]:
    function = ops.functions(g.module)[0]
    block = function.regions[0].blocks[0]
    names = [ir.StringAttr(ir.DictAttr(d)["glow.name"]).value for d in ir.ArrayAttr(function.attributes["arg_attrs"])]
    return {name: _random(*ops.shape(arg)) for name, arg in zip(names, block.arguments)}


GRAPHS: dict[str, Callable[[], Graph]] = {
    "chain": _chain,
    "inserts": _inserts,
    "outputs": _outputs,
    "net": _network,
    "fire": _fire,
}


def _compile(g: Graph, passes: list[str]) -> tuple[runtime.CompiledModel, str]:
    """The graph compiled with `passes` between IRGen and allocation; also the IR just before allocation."""
    module = copy_module(g.module)
    with module.context:
        run_pipeline(module, [*FRONT, *passes, "glow-ir-verify", "glow-verify"])
        text = str(module)
        run_pipeline(module, ["glow-allocate"])
    return runtime.compile_allocated(module), text


def _check_outputs(model: runtime.CompiledModel, g: Graph, feeds: dict[str, np.ndarray]) -> None:
    expected = interpret(g.module, feeds)
    got = model.run(feeds)
    # Convolutions sum dozens of f32 products in another order than the interpreter's float64.
    atol = 1e-5 if "cpu_conv_nhwc" in str(g.module) else 1e-6
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=atol, err_msg=name)


@pytest.mark.parametrize("graph", GRAPHS)
@pytest.mark.parametrize("passes", [[p] for p in IR_PASSES] + [ALL_IR_PASSES], ids=[*IR_PASSES, "all"])
def test_ir_passes_keep_the_outputs(graph: str, passes: list[str]) -> None:
    g = GRAPHS[graph]()
    feeds = _feeds(g)
    model, _ = _compile(g, passes)
    with model:
        _check_outputs(model, g, feeds)


@pytest.mark.parametrize(
    ("graph", "passes", "removed"),
    [
        ("chain", ["glow-ir-share-buffers"], "glow_ir.alloc_activation"),
        ("inserts", ["glow-ir-copy-elim"], "glow_ir.copy"),
        ("outputs", ["glow-ir-copy-elim"], "glow_ir.copy"),
        ("net", ALL_IR_PASSES, "glow_ir.alloc_activation"),
    ],
)
def test_arena_shrinks(graph: str, passes: list[str], removed: str) -> None:
    """Arena bytes before and after, on graphs the passes target; the instructions they remove are gone."""
    g = GRAPHS[graph]()
    before, text_before = _compile(g, [])
    after, text_after = _compile(g, passes)
    with before, after:
        assert after.abi.arena_bytes < before.abi.arena_bytes, (before.abi.arena_bytes, after.abi.arena_bytes)
        assert text_after.count(removed) < text_before.count(removed)
        _check_outputs(after, g, _feeds(g))


# Hand-written glow_ir functions for what IRGen does not emit: dead stores, loose alloc/dealloc brackets.
LOOSE = """
func.func @loose(%x: memref<16xf32> {glow.name = "x"}, %y: memref<16xf32> {glow.name = "y", glow.output}) {
  %a = "glow_ir.alloc_activation"() : () -> memref<16xf32>
  %b = "glow_ir.alloc_activation"() : () -> memref<16xf32>
  %c = "glow_ir.alloc_activation"() : () -> memref<16xf32>
  %d = "glow_ir.alloc_activation"() : () -> memref<16xf32>
  "glow_ir.tanh"(%d, %x) {roles = ["out", "in"]} : (memref<16xf32>, memref<16xf32>) -> ()
  "glow_ir.element_neg"(%a, %x) {roles = ["out", "in"]} : (memref<16xf32>, memref<16xf32>) -> ()
  "glow_ir.element_exp"(%b, %a) {roles = ["out", "in"]} : (memref<16xf32>, memref<16xf32>) -> ()
  "glow_ir.sigmoid"(%c, %b) {roles = ["out", "in"]} : (memref<16xf32>, memref<16xf32>) -> ()
  "glow_ir.element_add"(%y, %c, %x) {roles = ["out", "in", "in"]} : (memref<16xf32>, memref<16xf32>, memref<16xf32>) -> ()
  "glow_ir.dealloc_activation"(%d) {roles = ["out"]} : (memref<16xf32>) -> ()
  "glow_ir.dealloc_activation"(%c) {roles = ["out"]} : (memref<16xf32>) -> ()
  "glow_ir.dealloc_activation"(%b) {roles = ["out"]} : (memref<16xf32>) -> ()
  "glow_ir.dealloc_activation"(%a) {roles = ["out"]} : (memref<16xf32>) -> ()
  return
}
"""


def _loose_expected(x: np.ndarray) -> np.ndarray:
    return (1 / (1 + np.exp(-np.exp(-x.astype(np.float64)))) + x).astype(np.float32)


def test_producers_write_inserted_blocks_in_place() -> None:
    """The fire module's padding and concat: the squeeze writes the padded buffer's interior and both expands
    write their halves of the concat through block views; no insert or copy is left."""
    g = _fire()
    feeds = _feeds(g)
    model, text = _compile(g, ALL_IR_PASSES)
    with model:
        _check_outputs(model, g, feeds)
    assert "glow_ir.insert_tensor" not in text and "glow_ir.copy" not in text
    assert text.count('"glow_ir.block_view"') == 3


@pytest.mark.parametrize(
    "passes",
    [["glow-ir-dse"], ["glow-ir-hoist-dealloc", "glow-ir-sink-alloc"], ["glow-ir-dse", *ALL_IR_PASSES]],
)
def test_hand_written_ir_shrinks_and_keeps_outputs(passes: list[str]) -> None:
    x = _random(16)
    arenas = []
    for pipeline in ([], passes):
        with make_context():
            module = ir.Module.parse(LOOSE)
        with module.context:
            run_pipeline(module, [*pipeline, "glow-ir-verify", "glow-allocate"])
        with runtime.compile_allocated(module) as model:
            arenas.append(model.abi.arena_bytes)
            np.testing.assert_allclose(model.run({"x": x})["y"], _loose_expected(x), rtol=1e-5, atol=1e-6)
    assert arenas[1] < arenas[0], arenas


@pytest.mark.parametrize("graph", GRAPHS)
def test_irgen_output_keeps_the_discipline(graph: str) -> None:
    module = copy_module(GRAPHS[graph]().module)
    with module.context:
        run_pipeline(module, [*FRONT, "glow-ir-verify"])


ARGS = '%x: memref<4xf32> {glow.name = "x"}, %y: memref<4xf32> {glow.name = "y", glow.output}'


def _function(body: str) -> str:
    return f"func.func @f({ARGS}) {{\n{body}\n  return\n}}"


ALLOC = '%a = "glow_ir.alloc_activation"() : () -> memref<4xf32>'
FREE = '"glow_ir.dealloc_activation"(%a) {roles = ["out"]} : (memref<4xf32>) -> ()'
EXP_A = '"glow_ir.element_exp"(%a, %x) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()'
COPY_Y = '"glow_ir.copy"(%y, %a) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> () loc("bad")'


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("\n".join([ALLOC + ' loc("bad")', EXP_A, COPY_Y]), "is never deallocated"),
        ("\n".join([ALLOC, EXP_A, FREE, COPY_Y]), "reads %0 after its dealloc"),
        ("\n".join([ALLOC, COPY_Y, FREE]), "reads %0 before any instruction wrote it"),
        (
            '"glow_ir.element_neg"(%y, %y) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> () loc("bad")',
            "reads %arg1 before any instruction wrote it",
        ),
        ('"glow_ir.element_exp"(%x, %y) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> () loc("bad")',
         "writes %arg0, which is an input argument"),
        (
            "\n".join([ALLOC, EXP_A, '%v = "glow_ir.tensor_view"(%a) : (memref<4xf32>) -> memref<2x2xf32>',
                       '"glow_ir.transpose"(%v, %v) {roles = ["out", "in"], shuffle = array<i64: 1, 0>} : '
                       '(memref<2x2xf32>, memref<2x2xf32>) -> () loc("bad")', FREE]),
            "only an elementwise instruction may work in place",
        ),
        (
            "\n".join([ALLOC, EXP_A, '%v = "glow_ir.tensor_view"(%a) : (memref<4xf32>) -> memref<2x2xf32>',
                       '%w = "glow_ir.tensor_view"(%a) : (memref<4xf32>) -> memref<4x1xf32>',
                       '"glow_ir.element_neg"(%w, %v) {roles = ["out", "in"]} : '
                       '(memref<4x1xf32>, memref<2x2xf32>) -> () loc("bad")', FREE]),
            "only an elementwise instruction may work in place",
        ),
        (
            "\n".join([ALLOC, EXP_A, FREE, FREE.replace("-> ()", '-> () loc("bad")')]),
            "deallocates %0 a second time",
        ),
    ],
)
def test_ir_verify_rejects(body: str, message: str) -> None:
    with make_context():
        module = ir.Module.parse(_function(body))
    with module.context, pytest.raises(VerificationError, match=message) as error:
        run_pipeline(module, ["glow-ir-verify"])
    assert error.value.location == "bad"


def test_ir_verify_accepts_in_place_elementwise_and_partial_inserts() -> None:
    body = "\n".join(
        [
            ALLOC,
            '"glow_ir.insert_tensor"(%a, %x) {roles = ["inout", "in"], start = array<i64: 0>} : '
            "(memref<4xf32>, memref<4xf32>) -> ()",
            '"glow_ir.element_exp"(%a, %a) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()',
            '"glow_ir.copy"(%y, %a) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()',
            FREE,
        ]
    )
    with make_context():
        module = ir.Module.parse(_function(body))
    with module.context:
        run_pipeline(module, ["glow-ir-verify"])


def _wide() -> Graph:
    """Many edits in one block: a long elementwise chain (a share per step), and a concatenation of 24
    slices, each computed into its block of the result (optimize-inserts moves allocs before each writer)."""
    g = Graph("wide")
    x = g.input("x", (24, 8))
    h = x
    for step in range(30):
        h = (g.sigmoid, g.tanh, g.exp)[step % 3](h)
    parts = [g.sigmoid(g.slice(h, (row, 0), (1, 8))) for row in range(24)]
    g.output("y", g.concat(parts, 0))
    g.output("h", h)
    return g


class _Walking(u.Positions):
    """The reference for `utils.Positions`' order keys: every query lists the block again, an op's position
    being its index in the listing; edits only edit the block."""

    def __init__(self, block: ir.Block) -> None:
        self.block = block

    @property
    def order(self) -> list[ir.Operation]:
        return u.block_ops(self.block)

    def __contains__(self, op: ir.Operation) -> bool:
        return any(o == op for o in self.order)

    def __getitem__(self, op: ir.Operation) -> int:
        return next(i for i, o in enumerate(self.order) if o == op)

    def at(self, key: int) -> ir.Operation:
        return self.order[key]

    def after(self, op: ir.Operation) -> ir.Operation | None:
        order = self.order
        following = self[op] + 1
        return order[following] if following < len(order) else None

    def move_before(self, op: ir.Operation, anchor: ir.Operation) -> None:
        op.move_before(anchor)

    def move_after(self, op: ir.Operation, anchor: ir.Operation) -> None:
        op.move_after(anchor)

    def inserted_before(self, op: ir.Operation, anchor: ir.Operation) -> None:
        pass

    def erase(self, op: ir.Operation) -> None:
        op.erase()


@pytest.mark.parametrize("graph", [*GRAPHS, "wide"])
def test_order_keys_give_the_ir_that_walking_the_block_gives(graph: str, monkeypatch: pytest.MonkeyPatch) -> None:
    g = _wide() if graph == "wide" else GRAPHS[graph]()
    _, with_keys = _compile(g, ALL_IR_PASSES)
    monkeypatch.setattr(u, "Positions", _Walking)
    _, walking = _compile(g, ALL_IR_PASSES)
    assert with_keys == walking
    assert with_keys != _compile(g, [])[1]  # the passes did edit the block


def test_copy_elim_records_the_view_it_makes_an_output_take() -> None:
    """The first copy into y (of another shape than its source's buffer) makes that buffer a view of y; the
    second copy into y then asks which ops used y before it, the new view among them."""
    view = '%v = "glow_ir.tensor_view"(%a) : (memref<4xf32>) -> memref<2x2xf32>'
    body = "\n".join(
        [
            ALLOC,
            EXP_A,
            view,
            '"glow_ir.copy"(%y, %v) {roles = ["out", "in"]} : (memref<2x2xf32>, memref<2x2xf32>) -> ()',
            FREE,
            '%b = "glow_ir.alloc_activation"() : () -> memref<2x2xf32>',
            '"glow_ir.element_exp"(%b, %y) {roles = ["out", "in"]} : (memref<2x2xf32>, memref<2x2xf32>) -> ()',
            '"glow_ir.copy"(%y, %b) {roles = ["out", "in"]} : (memref<2x2xf32>, memref<2x2xf32>) -> ()',
            '"glow_ir.dealloc_activation"(%b) {roles = ["out"]} : (memref<2x2xf32>) -> ()',
        ]
    )
    args = '%x: memref<4xf32> {glow.name = "x"}, %y: memref<2x2xf32> {glow.name = "y", glow.output}'
    with make_context():
        module = ir.Module.parse(_function(body).replace(ARGS, args))
    with module.context:
        run_pipeline(module, ["glow-ir-copy-elim", "glow-ir-verify", "glow-allocate"])
        assert str(module).count('"glow_ir.copy"') == 1
    x = _random(4)
    with runtime.compile_allocated(module) as model:
        np.testing.assert_allclose(model.run({"x": x})["y"], np.exp(np.exp(x)).reshape(2, 2), rtol=1e-5)
