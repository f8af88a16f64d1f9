"""ONNX GridSample and AffineGrid: glow-mlir against onnxruntime, or the spec's reference (spec=True) where
onnxruntime lacks a case (volumetric cubic). Grids reach beyond [-1, 1] so that every padding mode acts, and
some land exactly halfway between pixels so that nearest's round-half-to-even shows."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from onnx_check import check, check_node, model, rand

from glow_mlir.errors import InvalidNodeError, StaticInputRequired, UnsupportedAttributeError, UnsupportedTypeError
from glow_mlir.frontends.onnx import import_model

MODES = ["linear", "nearest", "cubic"]
PADDINGS = ["zeros", "border", "reflection"]


def _grid(*dims: int, reach: float = 1.6) -> np.ndarray:
    """A grid of random points within [-reach, reach], a few of them at halves and quarters of the span."""
    g = rand(*dims, low=-reach, high=reach)
    flat = g.reshape(-1)
    flat[: min(8, flat.size)] = np.float32([-0.5, 0.0, 0.5, -1.0, 1.0, 0.25, -0.25, 0.75])[: min(8, flat.size)]
    return g


def _ort_departs(mode: str, padding: str) -> bool:
    """onnxruntime's cubic border padding leaves a coordinate beyond the borders where it is and clamps its
    taps (as PyTorch does); the spec's reference clamps the coordinate first, so the weights differ."""
    return mode in ("cubic", "bicubic") and padding == "border"


@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("mode", MODES)
def test_grid_sample_2d(mode: str, padding: str, align: int) -> None:
    attrs = {"mode": mode, "padding_mode": padding, "align_corners": align}
    check_node("GridSample", {"x": rand(2, 3, 4, 5), "grid": _grid(2, 3, 6, 2)}, attrs, opset=20,
               spec=_ort_departs(mode, padding))


# The spec's reference does not know opset 16's mode names, so bicubic with border padding, where
# onnxruntime departs from the spec, is left to test_grid_sample_2d.
@pytest.mark.parametrize("mode,padding", [(m, p) for m in ["bilinear", "nearest", "bicubic"] for p in PADDINGS
                                          if not _ort_departs(m, p)])
def test_grid_sample_opset16_names(mode: str, padding: str) -> None:
    attrs = {"mode": mode, "padding_mode": padding}
    check_node("GridSample", {"x": rand(1, 2, 3, 4), "grid": _grid(1, 5, 4, 2)}, attrs, opset=16)


@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("mode", MODES)
def test_grid_sample_3d(mode: str, padding: str, align: int) -> None:
    attrs = {"mode": mode, "padding_mode": padding, "align_corners": align}
    # onnxruntime has no volumetric cubic.
    check_node("GridSample", {"x": rand(1, 2, 3, 4, 5), "grid": _grid(1, 2, 3, 4, 3)}, attrs, opset=22,
               spec=mode == "cubic")


@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("mode", MODES)
def test_grid_sample_reflection_far_outside(mode: str, align: int) -> None:
    """Points several spans away reflect back and forth (odd and even span counts)."""
    attrs = {"mode": mode, "padding_mode": "reflection", "align_corners": align}
    check_node("GridSample", {"x": rand(1, 2, 4, 3), "grid": _grid(1, 4, 5, 2, reach=7.0)}, attrs, opset=20,
               atol=1e-4)


@pytest.mark.parametrize("mode", MODES)
def test_grid_sample_one_pixel_axis(mode: str) -> None:
    """A one-pixel axis: with align_corners its borders meet, and reflection has no span to reflect by (the
    spec's reference divides by zero there; onnxruntime, like glow-mlir, reads the only pixel)."""
    for padding in PADDINGS:
        for align in (0, 1):
            attrs = {"mode": mode, "padding_mode": padding, "align_corners": align}
            check_node("GridSample", {"x": rand(1, 2, 1, 4), "grid": _grid(1, 3, 3, 2)}, attrs, opset=20,
                       spec=_ort_departs(mode, padding))


def test_grid_sample_double_and_float16() -> None:
    check_node("GridSample", {"x": rand(1, 2, 4, 4, dtype=np.float64), "grid": _grid(1, 3, 3, 2).astype(np.float64)},
               {"mode": "cubic", "padding_mode": "reflection"}, opset=20)
    check_node("GridSample", {"x": rand(1, 2, 4, 4, dtype=np.float16), "grid": _grid(1, 3, 3, 2).astype(np.float16)},
               {"mode": "linear"}, opset=20, spec=True, rtol=1e-3, atol=2e-3)


def test_grid_sample_nearest_integers() -> None:
    """Nearest only moves pixels, so it takes integer X (the zeros frame is integer too)."""
    x = rand(1, 2, 3, 4, low=-50, high=50, dtype=np.int32)
    check_node("GridSample", {"x": x, "grid": _grid(1, 4, 4, 2)}, {"mode": "nearest"}, opset=20, spec=True)


def test_grid_sample_after_affine_grid() -> None:
    """A spatial transformer: AffineGrid of a run-time theta, then GridSample."""
    theta = rand(2, 2, 3)
    size = np.array([2, 3, 5, 6], np.int64)
    nodes = [
        helper.make_node("AffineGrid", ["theta", "size"], ["grid"], name="affine"),
        helper.make_node("GridSample", ["x", "grid"], ["y"], name="sample", mode="cubic", padding_mode="reflection"),
    ]
    feeds = {"theta": theta, "x": rand(2, 3, 4, 4)}
    check(model(nodes, feeds, ["y"], {"size": size}, opset=20), feeds)


@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("size", [[2, 3, 4, 5], [1, 2, 3, 4, 5], [2, 1, 1, 3], [1, 1, 2, 1, 3]])
def test_affine_grid(size: list[int], align: int) -> None:
    k = len(size) - 2
    theta = rand(size[0], k, k + 1)
    check_node("AffineGrid", {"theta": theta}, {"align_corners": align}, {"size": np.array(size, np.int64)},
               opset=20)


def test_affine_grid_double() -> None:
    check_node("AffineGrid", {"theta": rand(2, 2, 3, dtype=np.float64)}, consts={"size": np.array([2, 1, 3, 4])},
               opset=20)


def test_affine_grid_run_time_size_is_refused() -> None:
    node = helper.make_node("AffineGrid", ["theta", "size"], ["y"], name="the_grid")
    m = model([node], {"theta": rand(1, 2, 3), "size": np.array([1, 1, 2, 2], np.int64)}, ["y"], opset=20)
    with pytest.raises(StaticInputRequired, match="the_grid.*'size'"):
        import_model(m)
    # Bound at compile time, the size is a constant again.
    check(m, {"theta": rand(1, 2, 3), "size": np.array([1, 1, 2, 2], np.int64)},
          static_inputs={"size": np.array([1, 1, 2, 2], np.int64)})


def _import(op: str, inputs: dict[str, np.ndarray], attrs: dict[str, object] | None = None, opset: int = 20,
            consts: dict[str, np.ndarray] | None = None) -> None:
    node = helper.make_node(op, [*inputs, *(consts or {})], ["y"], name="the_node", **(attrs or {}))
    import_model(model([node], inputs, ["y"], consts, opset=opset))


def test_grid_sample_errors() -> None:
    x, grid = rand(1, 2, 3, 4), rand(1, 2, 2, 2)
    with pytest.raises(UnsupportedAttributeError, match="the_node.*mode.*'area'"):
        _import("GridSample", {"x": x, "grid": grid}, {"mode": "area"})
    with pytest.raises(UnsupportedAttributeError, match="the_node.*padding_mode.*'wrap'"):
        _import("GridSample", {"x": x, "grid": grid}, {"padding_mode": "wrap"})
    with pytest.raises(InvalidNodeError, match="the_node.*grid \\[1, 2, 2, 3\\]"):
        _import("GridSample", {"x": x, "grid": rand(1, 2, 2, 3)})
    with pytest.raises(InvalidNodeError, match="the_node.*must be \\[N, C, H, W\\]"):
        _import("GridSample", {"x": rand(1, 2, 3, 4, 5), "grid": rand(1, 2, 2, 2, 3)}, opset=16)
    with pytest.raises(UnsupportedTypeError, match="the_node.*int32"):
        _import("GridSample", {"x": rand(1, 2, 3, 4, dtype=np.int32), "grid": grid})


def test_affine_grid_errors() -> None:
    with pytest.raises(InvalidNodeError, match="the_node.*theta \\[1, 2, 3\\] must be \\[1, 3, 4\\]"):
        _import("AffineGrid", {"theta": rand(1, 2, 3)}, consts={"size": np.array([1, 1, 2, 2, 2], np.int64)})
    with pytest.raises(InvalidNodeError, match="the_node.*size \\[1, 2\\]"):
        _import("AffineGrid", {"theta": rand(1, 2, 3)}, consts={"size": np.array([1, 2], np.int64)})
