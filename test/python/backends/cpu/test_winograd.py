"""The Winograd kernel of dense 3x3 stride-1 convolutions (winograd_recipes.py) against onnxruntime over its
class, in both loop orders (rows of tiles; bands of rows): even and odd maps (tiles past the edge), channel
counts that are and are not multiples of 16 (masked vectors), output channels in several blocks, batch, with
and without bias, ReLU and Clip fused; the rule that takes a layer and picks the order; the transforms against
a direct convolution in numpy; and bitwise equal outputs at 1, 2 and 3 threads."""

from __future__ import annotations

import re

import numpy as np
import onnxruntime
import pytest
from onnx import ModelProto, TensorProto, helper, numpy_helper

import glow_mlir
from glow_mlir.backends.cpu import winograd_recipes
from glow_mlir.frontends.onnx import import_model
from onnx_check import conv_model

rng = np.random.default_rng(0)


def _conv_model(
    c: int, f: int, h: int, w: int, *, n: int = 1, k: int = 3, stride: int = 1, dilation: int = 1,
    bias: bool = True, activation: str | None = "relu",
) -> tuple[ModelProto, dict[str, np.ndarray]]:
    """onnx_check.conv_model's layer (Conv, "same" pads, + ReLU or Clip) and its feeds."""
    model = conv_model(c, h, w, f, k, stride, activation, bias, n=n, dilation=dilation)
    return model, {"x": rng.standard_normal((n, c, h, w)).astype(np.float32)}


def _run(model: ModelProto, feeds: dict[str, np.ndarray], threads: int = 1) -> tuple[np.ndarray, str]:
    """Compiles and runs `model`, checks it against onnxruntime, returns its output and scheduled IR."""
    with glow_mlir.compile(import_model(model), keep_ir=True, threads=threads) as compiled:
        scheduled = compiled.ir("glow-cpu-schedule")
        [got] = compiled.run(feeds).values()
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    [want] = session.run(None, feeds)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    return got, scheduled


def _functions(scheduled: str, kind: str) -> list[str]:
    """The bodies of the Winograd functions of `kind` (row, band, block)."""
    parts = re.split(r"(?=func\.func private @)", scheduled)
    return [p for p in parts if p.startswith(f"func.func private @__glow_winograd_{kind}_")]


def _row_functions(scheduled: str) -> list[str]:
    return _functions(scheduled, "row")


@pytest.mark.parametrize(
    ("c", "f", "h", "w", "n", "bias", "activation", "layout"),
    [
        (64, 64, 16, 16, 1, True, "relu", "row"),  # ResNet's class: whole registers, even map
        (32, 48, 9, 11, 1, True, "relu", "row"),  # odd map: the last tile row and column reach past it
        (24, 40, 15, 10, 1, False, None, "row"),  # 24 inputs (a masked vector), 40 outputs (a masked block), no bias
        (3, 16, 12, 12, 1, True, "clip", "row"),  # 3 input channels (an RGB stem), Clip fused
        (16, 128, 8, 8, 2, True, "relu", "row"),  # a batch; 128 outputs in two blocks
        (48, 96, 7, 7, 1, True, "relu", "row"),  # a 7x7 map: 4 x 4 tiles for 7 x 7 pixels
        # Transformed filters beyond half of L2: per band of rows of tiles, its V, then the channel blocks.
        (192, 200, 9, 11, 1, True, "relu", "band"),  # odd map, 200 outputs (a masked block)
        (136, 256, 8, 8, 1, False, "clip", "band"),  # 136 inputs (a masked vector), no bias
        (512, 64, 13, 23, 2, True, "relu", "band"),  # bands of 2 rows of tiles, the last one of 1 (odd), a batch
    ],
)
def test_winograd_matches_onnxruntime(
    c: int, f: int, h: int, w: int, n: int, bias: bool, activation: str | None, layout: str
) -> None:
    model, feeds = _conv_model(c, f, h, w, n=n, bias=bias, activation=activation)
    _, scheduled = _run(model, feeds)
    computing = _functions(scheduled, "row" if layout == "row" else "block")
    assert computing, f"not the Winograd kernel's {layout} loop order"
    assert "@__glow_packed_winograd_" in scheduled
    assert "linalg.conv_2d_nhwc_hwcf" not in scheduled
    # The activation is in the function that stores the outputs, not a pass of its own.
    if activation is not None:
        assert all("arith.cmpf uge" in body for body in computing)


@pytest.mark.parametrize(
    ("c", "f", "h", "k", "stride", "dilation", "n", "layout"),
    [
        (64, 64, 56, 3, 1, 1, 1, "row"),
        (128, 128, 28, 3, 1, 1, 1, "row"),  # the transformed filter (1 MiB) fits half of L2
        (128, 128, 28, 3, 1, 1, 2, "row"),
        (256, 256, 14, 3, 1, 1, 1, "band"),  # 4 MiB: one band, its V (784 KiB) read once per channel block
        (256, 256, 14, 3, 1, 1, 2, "band"),  # a batch of them
        (256, 256, 28, 3, 1, 1, 1, "band"),  # V of 229 KiB per row of tiles: bands of 4 rows
        # 512 -> 512 on 7x7: 16 tiles, and the transformed filter (16 MiB) comes from memory (the model's weights
        # outgrow L2): reading it would take longer than the direct schedule's arithmetic.
        (512, 512, 7, 3, 1, 1, 1, None),
        (64, 64, 56, 3, 2, 1, 1, None),  # stride 2
        (64, 64, 56, 3, 1, 2, 1, None),  # dilation 2
        (64, 64, 56, 5, 1, 1, 1, None),  # 5x5
        (64, 64, 6, 3, 1, 1, 1, "band"),  # 3 tiles per row, 9 in the band
        (64, 64, 4, 3, 1, 1, 1, None),  # 4 tiles in the image
    ],
)
def test_the_rule(c: int, f: int, h: int, k: int, stride: int, dilation: int, n: int, layout: str | None) -> None:
    model, feeds = _conv_model(c, f, h, h, n=n, k=k, stride=stride, dilation=dilation)
    _, scheduled = _run(model, feeds)
    found = [kind for kind in ("row", "band") if _functions(scheduled, kind)]
    assert found == ([layout] if layout else [])


def test_transforms_compute_the_convolution() -> None:
    """Y = A^T [(G g G^T) . (B^T d B)] A of F(2x2, 3x3) equals the direct correlation, per tile."""
    minimal = winograd_recipes.F2X3
    g = rng.standard_normal((3, 3, 5, 7))
    d = rng.standard_normal((4, 4, 5))
    u = winograd_recipes.transformed_filter(g, minimal).astype(np.float64).reshape(4, 4, 5, 7)
    bt, at = np.asarray(minimal.bt), np.asarray(minimal.at)
    v = np.einsum("ik,klc,jl->ijc", bt, d, bt)
    y = np.einsum("ik,klf,jl->ijf", at, np.einsum("ijc,ijcf->ijf", v, u), at)
    direct = np.array([[np.einsum("klc,klcf->f", d[i : i + 3, j : j + 3], g) for j in range(2)] for i in range(2)])
    np.testing.assert_allclose(y, direct, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("c", "f", "size", "splits"),
    [
        # Rows of tiles, each a call with its scratch on its own stack.
        (64, 64, 20, [r"trips = array<i64: 10>"]),
        # One band: its 16 tiles into V, then the channel blocks: two regions, one after the other.
        (224, 224, 8, [r"d1 of 16x16x224", r"d2 of 8x8x224"]),
    ],
)
def test_split_across_threads_bitwise_equal(c: int, f: int, size: int, splits: list[str]) -> None:
    """The kernel's loops run on several threads, the functions they call never split again (glow.serial),
    and every output is computed alike at any thread count."""
    model, feeds = _conv_model(c, f, size, size)
    results = [_run(model, feeds, threads)[0] for threads in (1, 2, 3)]
    for other in results[1:]:
        assert np.array_equal(results[0], other)
    with glow_mlir.compile(import_model(model), keep_ir=True, threads=2) as compiled:
        split = compiled.ir("glow-cpu-parallelize")
    found = re.findall(r"glow.split = \{[^\n]*", split)
    for pattern in splits:
        assert any(re.search(pattern, s) for s in found), found
    for part in re.split(r"(?=func\.func private @)", split):
        if part.startswith("func.func private @__glow_winograd_") and "glow.serial" in part.split("\n", 1)[0]:
            assert "omp.parallel" not in part


def test_identical_layers_share_one_row_function() -> None:
    """Layers of one shape (different weights) whose buffers have one layout call one row function: of three
    chained layers, the first two write into the next one's padded input, the last into the model's output."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 12, 12])
    weights = [numpy_helper.from_array((rng.standard_normal((32, 32, 3, 3)) / 17).astype(np.float32), f"w{i}")
               for i in range(3)]  # fmt: skip
    names = ["x", "h0", "h1", "y"]
    nodes = [helper.make_node("Conv", [names[i], f"w{i}"], [names[i + 1]], kernel_shape=[3, 3], pads=[1] * 4)
             for i in range(3)]  # fmt: skip
    graph = helper.make_graph(nodes, "three", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              weights)  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    _, scheduled = _run(model, {"x": rng.standard_normal((1, 32, 12, 12)).astype(np.float32)})
    assert len(_row_functions(scheduled)) == 2
    assert len(re.findall(r"memref.global [^@]*@__glow_packed_winograd_", scheduled)) == 3
