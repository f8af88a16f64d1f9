"""ONNX Resize with the cubic filter, antialiasing and tf_crop_and_resize: glow-mlir against onnxruntime (or
the spec's reference where onnxruntime departs from it). Nearest and linear are in test_onnx_ops_tensor.py."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from onnx_check import check_node, model, rand

from glow_mlir.errors import InvalidNodeError, UnsupportedTypeError
from glow_mlir.frontends.onnx import import_model

TRANSFORMS = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "half_pixel_symmetric"]
SCALES = [(1, 1, 2, 3), (1, 1, 0.5, 1.5), (1, 1, 1.7, 0.6)]


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("scales", SCALES)
def test_resize_cubic(transform: str, scales: tuple[float, ...]) -> None:
    attrs = {"mode": "cubic", "coordinate_transformation_mode": transform}
    consts = {"roi": None, "scales": np.array(scales, np.float32)}
    check_node("Resize", {"x": rand(1, 2, 4, 5)}, attrs, consts, opset=19)


@pytest.mark.parametrize("a,exclude_outside", [(-0.5, 1), (-0.5, 0), (-0.75, 1)])
@pytest.mark.parametrize("scales", SCALES)
def test_resize_cubic_coefficient_and_exclude_outside(a: float, exclude_outside: int,
                                                      scales: tuple[float, ...]) -> None:
    attrs = {"mode": "cubic", "cubic_coeff_a": a, "exclude_outside": exclude_outside}
    consts = {"roi": None, "scales": np.array(scales, np.float32)}
    check_node("Resize", {"x": rand(1, 2, 4, 5)}, attrs, consts, opset=19)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("sizes", [(3, 2), (5, 7), (2, 9)])
def test_resize_antialias(mode: str, sizes: tuple[int, int]) -> None:
    """Downsampling widens the filter to 1/scale taps each side; upsampling ignores antialias."""
    attrs = {"mode": mode, "antialias": 1, "axes": [2, 3]}
    consts = {"roi": None, "scales": None, "sizes": np.array(sizes, np.int64)}
    check_node("Resize", {"x": rand(1, 2, 8, 6)}, attrs, consts, opset=18, rtol=1e-4)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("roi,sizes", [
    ([0, 0, 0.4, 0.6, 1, 1, 0.6, 0.8], [1, 2, 3, 3]),        # inside the input
    ([0, 0, -0.3, 0.2, 1, 1, 1.2, 0.9], [1, 2, 5, 4]),       # partly outside: extrapolated
    ([0, 0, 0.2, 0.1, 1, 1, 0.7, 1.3], [1, 2, 1, 6]),        # one output row reads the window's centre
])
def test_resize_tf_crop_and_resize(mode: str, roi: list[float], sizes: list[int]) -> None:
    attrs = {"mode": mode, "coordinate_transformation_mode": "tf_crop_and_resize", "extrapolation_value": 7.5}
    consts = {"roi": np.array(roi, np.float32), "scales": None, "sizes": np.array(sizes, np.int64)}
    check_node("Resize", {"x": rand(1, 2, 4, 5)}, attrs, consts, opset=19)


def test_resize_tf_crop_and_resize_axes() -> None:
    """With axes, roi holds the starts then the ends of those axes only."""
    attrs = {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize", "axes": [3, 2]}
    consts = {"roi": np.array([0.1, -0.2, 0.9, 0.8], np.float32), "scales": None,
              "sizes": np.array([3, 4], np.int64)}
    check_node("Resize", {"x": rand(1, 2, 4, 5)}, attrs, consts, opset=19, spec=True)


def _resize_model(x: np.ndarray, attrs: dict[str, object], consts: dict[str, np.ndarray]) -> object:
    inputs = ["x", *consts]
    node = helper.make_node("Resize", inputs, ["y"], name="resize", **attrs)
    return model([node], {"x": x}, ["y"], consts, opset=19)


def test_resize_tf_crop_and_resize_needs_roi() -> None:
    attrs = {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"}
    m = _resize_model(rand(1, 1, 4, 4), attrs, {"roi": np.array([0, 1], np.float32),
                                                "scales": np.array([1, 1, 2, 2], np.float32)})
    with pytest.raises(InvalidNodeError, match="resize.*roi of 8 values"):
        import_model(m)


def test_resize_cubic_refuses_integers() -> None:
    m = _resize_model(np.zeros((1, 1, 4, 4), np.uint8), {"mode": "cubic"},
                      {"roi": np.zeros(0, np.float32), "scales": np.array([1, 1, 2, 2], np.float32)})
    with pytest.raises(UnsupportedTypeError, match="resize.*uint8"):
        import_model(m)
