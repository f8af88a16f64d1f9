"""The pictures of a compiled model (glow_mlir/tools/pictures.py, glow-run --graph / --memory-plan)."""

from __future__ import annotations

import re
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import onnx
import pytest
from mlir import ir
from onnx import TensorProto, helper, numpy_helper

from glow_mlir import ops
from glow_mlir.errors import UnsupportedError
from glow_mlir.frontends.onnx.importer import import_model
from glow_mlir.passes.ir.allocate import ALIGNMENT, align, check_plan, live_together
from glow_mlir.runtime import compile
from glow_mlir.tools import glow_run, pictures
from glow_mlir.tools.pictures import FUSED_BORDER, NHWC_FILL, TRANSPOSE_FILL, PictureError

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's `dot` is not installed")

# A fixed graph: a value used twice, a constant, a fused location, both layout transposes. Six edges:
# x -> to_nhwc -> conv -> double (twice) -> to_nchw -> y.
HAND_WRITTEN = """
func.func @f(%x: tensor<1x2x4x4xf32> {glow.name = "x"}) -> (tensor<1x3x4x4xf32> {glow.name = "y"}) {
  %b = "glow.constant"() {value = dense<0.5> : tensor<3xf32>} : () -> tensor<3xf32>
  %w = "glow.constant"() {value = dense<1.0> : tensor<1x1x2x3xf32>} : () -> tensor<1x1x2x3xf32>
  %t = "glow.transpose"(%x) {shuffle = array<i64: 0, 2, 3, 1>} : (tensor<1x2x4x4xf32>) -> tensor<1x4x4x2xf32>
    loc("to_nhwc")
  %c = "glow.cpu_conv_nhwc"(%t, %w, %b) {activation = "relu", activationArgs = array<f32>,
    dilation = array<i64: 1, 1>, group = 1 : i64, kernels = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>,
    strides = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<1x1x2x3xf32>, tensor<3xf32>) -> tensor<1x4x4x3xf32>
    loc(fused["conv", "relu"])
  %s = "glow.add"(%c, %c) : (tensor<1x4x4x3xf32>, tensor<1x4x4x3xf32>) -> tensor<1x4x4x3xf32> loc("double")
  %o = "glow.transpose"(%s) {shuffle = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x3xf32>) -> tensor<1x3x4x4xf32>
    loc("to_nchw")
  return %o : tensor<1x3x4x4xf32>
}
"""

NODE = re.compile(r"^  (\w+) \[label=(.*)\];$")
EDGE = re.compile(r"^  (\w+) -> (\w+);$")


def small_model() -> onnx.ModelProto:
    """Conv + Relu (fused, NHWC on the CPU), MaxPool, Flatten, Gemm + Relu (a fused matmul)."""
    rng = np.random.default_rng(0)
    weights = [
        numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w1"),
        numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b1"),
        numpy_helper.from_array(rng.standard_normal((10, 64)).astype(np.float32), "w2"),
        numpy_helper.from_array(rng.standard_normal(10).astype(np.float32), "b2"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c"], "conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], "relu1"),
        helper.make_node("MaxPool", ["r"], ["p"], "pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], "flatten"),
        helper.make_node("Gemm", ["f", "w2", "b2"], ["g"], "fc", transB=1),
        helper.make_node("Relu", ["g"], ["y"], "relu2"),
    ]
    graph = helper.make_graph(
        nodes, "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], weights,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def stages() -> pictures.Stages:
    return pictures.compile_stages(import_model(small_model()).module)


def parse_dot(dot: str) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """The top-level nodes (id -> attributes) and the edges of graph_dot's output; legend nodes are indented
    deeper and so left out."""
    nodes = {m[1]: m[2] for m in map(NODE.match, dot.splitlines()) if m}
    edges = [(m[1], m[2]) for m in map(EDGE.match, dot.splitlines()) if m]
    return nodes, edges


def test_hand_written_graph_has_one_box_per_op_and_one_edge_per_use() -> None:
    nodes, edges = parse_dot(pictures.graph_dot(HAND_WRITTEN))
    assert edges == [("in0", "n2"), ("n2", "n3"), ("n3", "n4"), ("n3", "n4"), ("n4", "n5"), ("n5", "out0")]
    # Constants are no boxes: the convolution lists them.
    assert sorted(nodes) == ["in0", "n2", "n3", "n4", "n5", "out0"]
    conv = nodes["n3"]
    assert "glow.cpu_conv_nhwc + relu" in conv and FUSED_BORDER in conv and NHWC_FILL in conv
    # Both nodes of the fused location, the result type and the constants read.
    assert ">conv<" in conv and ">relu<" in conv and "1x4x4x3 f32" in conv
    assert "const 1x1x2x3 f32, const 3 f32" in conv
    assert "glow.add" in nodes["n4"] and FUSED_BORDER not in nodes["n4"] and NHWC_FILL not in nodes["n4"]
    assert TRANSPOSE_FILL in nodes["n2"] and "to_nhwc" in nodes["n2"]
    assert "input x" in nodes["in0"] and "output y" in nodes["out0"]


def test_optimized_graph_marks_fusion_layout_and_names_nodes(stages: pictures.Stages) -> None:
    dot = pictures.graph_dot(stages.optimized)
    nodes, edges = parse_dot(dot)
    by_title = {re.search(r"<B>(.*?)</B>", attrs)[1]: attrs for attrs in nodes.values()}  # type: ignore[index]
    conv = by_title["glow.cpu_conv_nhwc + relu"]
    assert FUSED_BORDER in conv and NHWC_FILL in conv and "relu1" in conv
    assert NHWC_FILL in by_title["glow.cpu_max_pool_nhwc"] and FUSED_BORDER not in by_title["glow.cpu_max_pool_nhwc"]
    matmul = by_title["glow.fused_matmul + relu"]
    assert FUSED_BORDER in matmul and "1x10 f32" in matmul
    # One edge per use of a value that is not a constant, counted on the module itself.
    func = ops.functions(stages.optimized)[0]
    block = func.regions[0].blocks[0]
    drawn = [op for op in block.operations if op.operation.name not in pictures.CONSTANT_OPS]
    uses = sum(
        1
        for op in drawn
        for v in op.operation.operands
        if not (isinstance(v.owner, ir.OpView) and v.owner.operation.name in pictures.CONSTANT_OPS)
    )
    assert len(edges) == uses
    # Every edge joins drawn boxes, and every box but the input feeds on something.
    assert all(a in nodes and b in nodes for a, b in edges)
    assert {b for _, b in edges} == set(nodes) - {"in0"}


@needs_dot
def test_render_writes_an_svg_with_every_box_and_edge(tmp_path: Path) -> None:
    dot = pictures.graph_dot(HAND_WRITTEN)
    nodes, edges = parse_dot(dot)
    target = tmp_path / "graph.svg"
    pictures.render(dot, target)
    root = ET.parse(target).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    groups = [g.get("class") for g in root.iter("{http://www.w3.org/2000/svg}g")]
    # The legend's five boxes are nodes too.
    assert groups.count("node") == len(nodes) + 5
    assert groups.count("edge") == len(edges)
    assert [p.name for p in tmp_path.iterdir()] == ["graph.svg"]


@needs_dot
def test_render_fails_whole_on_bad_dot(tmp_path: Path) -> None:
    with pytest.raises(PictureError, match="dot failed"):
        pictures.render("digraph { a -> }", tmp_path / "graph.svg")
    assert list(tmp_path.iterdir()) == []


def test_render_errors_name_what_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(PictureError, match=r"\.svg, \.png, \.pdf"):
        pictures.render("digraph {}", tmp_path / "graph.txt")
    monkeypatch.setattr(pictures.shutil, "which", lambda _: None)
    with pytest.raises(UnsupportedError, match="apt-get install graphviz"):
        pictures.render("digraph {}", tmp_path / "graph.svg")
    assert list(tmp_path.iterdir()) == []


def test_graph_dot_rejects_what_it_cannot_draw() -> None:
    with pytest.raises(PictureError, match="cannot parse"):
        pictures.graph_dot("func.func @f(")
    with pytest.raises(PictureError, match="no function 'g'"):
        pictures.graph_dot(HAND_WRITTEN, function="g")
    with pytest.raises(PictureError, match="no memory plan"):
        pictures.plan_rectangles(HAND_WRITTEN)


def test_memory_plan_rectangles_are_the_allocators_plan(stages: pictures.Stages) -> None:
    plan = pictures.plan_rectangles(stages.allocated)
    buffers = plan.buffers
    assert len(buffers) == str(stages.allocated).count("memref.view")
    assert all(b.offset % ALIGNMENT == 0 and 0 <= b.start <= b.end < plan.instructions for b in buffers)
    # No two buffers live at one instruction share a byte; all lie inside the arena.
    for i, a in enumerate(buffers):
        for b in buffers[i + 1 :]:
            if a.start <= b.end and b.start <= a.end:
                assert a.offset + a.size <= b.offset or b.offset + b.size <= a.offset, (a, b)
    assert max(b.offset + b.size for b in buffers) <= plan.arena_bytes
    # The allocator's own check agrees, and its lower bound holds at every instruction drawn.
    intervals = [(b.size, b.start, b.end) for b in buffers]
    check_plan(intervals, [b.offset for b in buffers], plan.arena_bytes)
    for t in range(plan.instructions):
        live = sum(align(b.size) for b in buffers if live_together((0, t, t), (b.size, b.start, b.end)))
        assert live <= plan.peak_live_bytes <= plan.arena_bytes <= plan.naive_bytes
    # The plan read from compile()'s kept IR text is the same, and matches its report.
    with compile(import_model(small_model()), keep_ir=True) as model:
        # The text has no locations, so its buffers are labelled by type rather than by node.
        kept = pictures.plan_rectangles(model.ir("glow-allocate")).buffers
        def spans(rectangles: tuple[pictures.Rectangle, ...]) -> list[tuple[int, int, int, int]]:
            return [(b.start, b.end, b.offset, b.size) for b in rectangles]

        assert spans(kept) == spans(buffers)
        assert model.report["arena_bytes"] == plan.arena_bytes
        assert model.report["peak_live_bytes"] == plan.peak_live_bytes


def test_memory_plan_png(stages: pictures.Stages, tmp_path: Path) -> None:
    from PIL import Image

    target = tmp_path / "plan.png"
    pictures.memory_plan(pictures.plan_rectangles(stages.allocated), target)
    with Image.open(target) as image:
        assert image.format == "PNG" and image.size == (12 * 120, 6 * 120)
    assert [p.name for p in tmp_path.iterdir()] == ["plan.png"]


def test_memory_plan_without_matplotlib(stages: pictures.Stages, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes the import fail, as when matplotlib is not installed.
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(UnsupportedError, match=r"glow-mlir\[viz\]"):
        pictures.memory_plan(pictures.plan_rectangles(stages.allocated), tmp_path / "plan.png")
    assert list(tmp_path.iterdir()) == []


def test_memory_plan_that_cannot_be_written_leaves_nothing(stages: pictures.Stages, tmp_path: Path) -> None:
    (tmp_path / "plan.png").mkdir()
    with pytest.raises(PictureError, match="cannot write"):
        pictures.memory_plan(pictures.plan_rectangles(stages.allocated), tmp_path / "plan.png")
    with pytest.raises(PictureError, match="cannot write"):
        pictures.memory_plan(pictures.plan_rectangles(stages.allocated), tmp_path / "missing" / "plan.png")
    assert [p.name for p in tmp_path.iterdir()] == ["plan.png"] and not any((tmp_path / "plan.png").iterdir())


@needs_dot
def test_glow_run_draws_both(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "small.onnx"
    onnx.save(small_model(), model)
    graph, plan = tmp_path / "graph.svg", tmp_path / "plan.png"
    assert glow_run.main([str(model), "--random-inputs", "--graph", str(graph), "--memory-plan", str(plan)]) == 0
    assert ET.parse(graph).getroot().tag.endswith("svg") and plan.read_bytes().startswith(b"\x89PNG")
    assert f"drew {graph} and {plan}" in capsys.readouterr().err


def test_glow_run_rejects_a_bad_picture_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "small.onnx"
    onnx.save(small_model(), model)
    assert glow_run.main([str(model), "--random-inputs", "--memory-plan", str(tmp_path / "plan.bmp")]) == 1
    assert "cannot draw a memory plan as 'plan.bmp'" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["small.onnx"]
