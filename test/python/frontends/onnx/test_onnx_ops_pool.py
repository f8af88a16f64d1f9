"""ONNX 3-D MaxPool / AveragePool, LpPool, MaxPool's Indices output and RoiAlign: glow-mlir against onnxruntime
(or the spec's reference where onnxruntime lacks a case). 1-D and 2-D MaxPool / AveragePool are in
test_onnx_ops_nn.py."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from onnx_check import check, check_node, model, rand

import glow_mlir
from glow_mlir.errors import InvalidNodeError, UnsupportedAttributeError
from glow_mlir.frontends.onnx import import_model

POOL_3D = [
    {"kernel_shape": [2, 2, 2]},
    {"kernel_shape": [3, 2, 3], "strides": [2, 1, 2], "pads": [1, 0, 1, 1, 1, 0]},
    {"kernel_shape": [2, 3, 2], "strides": [2, 2, 2], "ceil_mode": 1},
    {"kernel_shape": [2, 2, 2], "dilations": [2, 1, 2]},
    {"kernel_shape": [3, 3, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2, 2]},
    # S3D's: a spatial-only window (one 2-D pool of the planes), a temporal-only one (one pool across them)
    {"kernel_shape": [1, 3, 3], "strides": [1, 2, 2], "pads": [0, 1, 1, 0, 1, 1]},
    {"kernel_shape": [3, 1, 1], "strides": [2, 1, 1], "pads": [1, 0, 0, 1, 0, 0]},
]


@pytest.mark.parametrize("attrs", POOL_3D)
def test_max_pool_3d(attrs: dict[str, object]) -> None:
    check_node("MaxPool", {"x": rand(1, 2, 5, 6, 7)}, attrs, opset=12)


@pytest.mark.parametrize("attrs", POOL_3D)
@pytest.mark.parametrize("count_include_pad", [0, 1])
def test_average_pool_3d(attrs: dict[str, object], count_include_pad: int) -> None:
    check_node("AveragePool", {"x": rand(2, 1, 5, 6, 7)}, {**attrs, "count_include_pad": count_include_pad},
               opset=19)


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("shape,attrs", [
    ((1, 2, 9), {"kernel_shape": [3]}),
    ((1, 2, 9), {"kernel_shape": [2], "strides": [2], "pads": [1, 1]}),
    ((2, 3, 5, 6), {"kernel_shape": [2, 3]}),
    ((2, 3, 5, 6), {"kernel_shape": [3, 3], "strides": [2, 1], "pads": [1, 1, 1, 0]}),
    ((1, 2, 6, 7), {"kernel_shape": [2, 2], "auto_pad": "SAME_LOWER"}),
    ((1, 2, 4, 5, 6), {"kernel_shape": [2, 2, 3], "strides": [1, 2, 2]}),
])
def test_lp_pool(p: int, shape: tuple[int, ...], attrs: dict[str, object]) -> None:
    check_node("LpPool", {"x": rand(*shape)}, {**attrs, "p": p}, opset=11, rtol=1e-4)


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [3, 3], "dilations": [2, 1]},
    {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1},
])
def test_lp_pool_opset18(attrs: dict[str, object]) -> None:
    """Dilations and ceil_mode came with opset 18. Cells past the input add nothing to the p-norm, as in
    onnxruntime; the spec's reference scales an average over the input cells by the window size instead."""
    check_node("LpPool", {"x": rand(1, 2, 7, 7)}, {**attrs, "p": 2}, opset=18, rtol=1e-4)


@pytest.mark.parametrize("storage_order", [0, 1])
@pytest.mark.parametrize("shape,attrs", [
    ((1, 2, 8), {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
    ((2, 2, 5, 6), {"kernel_shape": [2, 2]}),
    ((1, 3, 6, 7), {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 1]}),
    ((1, 2, 7, 7), {"kernel_shape": [2, 3], "strides": [2, 2], "ceil_mode": 1}),
    ((1, 2, 7, 7), {"kernel_shape": [2, 2], "dilations": [2, 2]}),
    ((1, 2, 4, 5, 6), {"kernel_shape": [2, 2, 2], "strides": [1, 2, 2], "pads": [0, 1, 0, 1, 0, 1]}),
])
def test_max_pool_indices(storage_order: int, shape: tuple[int, ...], attrs: dict[str, object]) -> None:
    """Indices are flat over N, C and the unpadded spatial dims, row-major or column-major over the latter."""
    x = rand(*shape)
    spec = storage_order == 1 and len(shape) != 4  # onnxruntime honours storage_order in 2-D only
    check_node("MaxPool", {"x": x}, {**attrs, "storage_order": storage_order}, opset=12, outputs=2, spec=spec)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize(("shape", "attrs", "outputs"), [
    ((1, 3, 7, 7), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, 1),  # ResNet's stem pool
    ((2, 2, 6, 5), {"kernel_shape": [2, 2], "ceil_mode": 1, "strides": [2, 2]}, 2),  # with Indices
    ((1, 2, 9), {"kernel_shape": [3], "dilations": [2]}, 1),
])  # fmt: skip
def test_max_pool_of_8_bit_integers(dtype: type, shape: tuple[int, ...], attrs: dict[str, object],
                                    outputs: int) -> None:  # fmt: skip
    """ONNX's int8 / uint8 MaxPool (onnxruntime's QOperator models pool their quantized maps), extremes included."""
    info = np.iinfo(dtype)
    x = rand(*shape, low=info.min, high=info.max, dtype=dtype)
    x.flat[:2] = [info.min, info.max]
    check_node("MaxPool", {"x": x}, attrs, opset=12, outputs=outputs)


@pytest.mark.parametrize("shape,attrs,output_shape", [
    ((2, 3, 8, 10), {"kernel_shape": [2, 2], "strides": [2, 2]}, None),  # SegNet's encoder and decoder
    ((1, 4, 9, 9), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, None),
    ((1, 2, 7, 7), {"kernel_shape": [2, 2], "strides": [2, 2]}, [1, 2, 7, 7]),  # odd sizes: output_shape
])  # fmt: skip
def test_max_unpool(shape: tuple[int, ...], attrs: dict[str, object], output_shape: list[int] | None) -> None:
    """MaxPool with Indices, then MaxUnpool: each maximum back at its place, zeros elsewhere."""
    unpool_inputs = ["p", "i"] + (["s"] if output_shape else [])
    nodes = [helper.make_node("MaxPool", ["x"], ["p", "i"], **attrs),
             helper.make_node("MaxUnpool", unpool_inputs, ["y"], **attrs)]  # fmt: skip
    feeds = {"x": rand(*shape)}
    consts = {"s": np.array(output_shape, np.int64)} if output_shape else {}
    check(model(nodes, feeds, ["y"], consts, opset=11), feeds)


def test_max_pool_indices_only_for_max_pool() -> None:
    """The importer checks every node's output count against its schema before any handler runs."""
    node = helper.make_node("AveragePool", ["x"], ["y", "i"], name="avg", kernel_shape=[2, 2])
    with pytest.raises(InvalidNodeError, match=r"'avg' \(AveragePool\): has 2 outputs, the op takes 1"):
        import_model(model([node], {"x": rand(1, 1, 4, 4)}, ["y", "i"], opset=12))


def test_pool_4d_window_is_refused() -> None:
    node = helper.make_node("MaxPool", ["x"], ["y"], name="pool4", kernel_shape=[2, 2, 2, 2])
    with pytest.raises(UnsupportedAttributeError, match="pool4.*4-D windows"):
        import_model(model([node], {"x": rand(1, 1, 3, 3, 3, 3)}, ["y"], opset=12))


def test_lp_pool_needs_positive_p() -> None:
    node = helper.make_node("LpPool", ["x"], ["y"], name="lp", kernel_shape=[2, 2], p=0)
    with pytest.raises(InvalidNodeError, match="lp.*p must be positive"):
        import_model(model([node], {"x": np.ones((1, 1, 4, 4), np.float32)}, ["y"], opset=11))


# Boxes inside the image, across its edges, far beyond it, nearly empty; in two images.
BOXES = np.float32([[0, 0, 9, 9], [1.3, 2.7, 7.1, 8.4], [-3, -2, 15, 13], [5, 5, 5.2, 5.1], [12, 1, 40, 4.5]])
BOX_IMAGES = np.int64([0, 1, 1, 0, 1])


@pytest.mark.parametrize("scale", [1.0, 0.5])
@pytest.mark.parametrize("ratio", [0, 2, 3])
@pytest.mark.parametrize("transform", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("mode", ["avg", "max"])
def test_roi_align(mode: str, transform: str, ratio: int, scale: float) -> None:
    """Ratio 0 samples each cell ceil(box / output) times along each axis (1 to 6 here)."""
    attrs = {"mode": mode, "coordinate_transformation_mode": transform, "sampling_ratio": ratio,
             "spatial_scale": scale, "output_height": 3, "output_width": 4}  # fmt: skip
    check_node("RoiAlign", {"x": rand(2, 19, 10, 12), "rois": BOXES, "bi": BOX_IMAGES}, attrs, opset=16)


@pytest.mark.parametrize("mode", ["avg", "max"])
def test_roi_align_inverted_and_outside_boxes(mode: str) -> None:
    """A box whose corners are swapped gets no samples along that axis (0); one wholly beyond the image
    weighs every sample 0. onnxruntime overflows on the inverted box with an adaptive grid; the spec's
    reference gives 0."""
    rois = np.float32([[8, 2, 3, 9], [-30, -30, -20, -25], [2, 9, 6, 1], [1, 1, 6, 8]])
    attrs = {"mode": mode, "output_height": 2, "output_width": 3, "spatial_scale": 0.8}
    check_node("RoiAlign", {"x": rand(2, 2, 8, 9), "rois": rois, "bi": np.int64([1, 0, 0, 1])}, attrs, opset=16,
               spec=True)  # fmt: skip


def test_roi_align_f64_and_opset10() -> None:
    """Opset 10 has no coordinate_transformation_mode: its boxes are not shifted by half a pixel."""
    inputs = {"x": rand(2, 3, 10, 12, dtype=np.float64), "rois": BOXES.astype(np.float64), "bi": BOX_IMAGES}
    check_node("RoiAlign", inputs, {"output_height": 2, "output_width": 2}, opset=10)


def test_roi_align_f16_is_computed_in_f32() -> None:
    boxes = BOXES[:3].astype(np.float16)
    inputs = {"x": rand(1, 2, 6, 7, dtype=np.float16), "rois": boxes, "bi": np.zeros(3, np.int64)}
    check_node("RoiAlign", inputs, {"output_height": 2, "output_width": 3, "sampling_ratio": 2}, opset=16,
               spec=True, rtol=2e-3, atol=2e-3)  # fmt: skip


def test_roi_align_of_constant_boxes_folds() -> None:
    """Every input known at compile time: the interpreter's evaluator computes the node."""
    feeds = {"x": rand(2, 3, 10, 12), "rois": BOXES, "bi": BOX_IMAGES}
    node = helper.make_node("RoiAlign", ["x", "rois", "bi"], ["y"], output_height=3, output_width=2, mode="max")
    check(model([node], feeds, ["y"], opset=16), feeds, static_inputs=feeds)


def test_roi_align_without_boxes_is_empty() -> None:
    """No boxes: an empty result, which a following Concat drops (glow has no empty tensors)."""
    nodes = [helper.make_node("RoiAlign", ["x", "rois", "bi"], ["r"], output_height=2, output_width=2),
             helper.make_node("Concat", ["r", "more"], ["y"], axis=0)]  # fmt: skip
    feeds = {"x": rand(1, 3, 4, 4), "rois": np.zeros((0, 4), np.float32), "bi": np.zeros(0, np.int64),
             "more": rand(2, 3, 2, 2)}  # fmt: skip
    check(model(nodes, feeds, ["y"], opset=16), feeds, static_inputs={k: feeds[k] for k in ("rois", "bi")})


def test_roi_align_checks_its_boxes() -> None:
    node = helper.make_node("RoiAlign", ["x", "rois", "bi"], ["y"], name="roi")
    feeds = {"x": rand(1, 3, 4, 4), "rois": rand(2, 5), "bi": np.zeros(2, np.int64)}
    with pytest.raises(InvalidNodeError, match=r"'roi' \(RoiAlign\).*rois \[2, 5\].*\[R, 4\]"):
        import_model(model([node], feeds, ["y"], opset=16))


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("shape", [(2, 3, 5, 6), (1, 4, 7), (1, 2, 3, 4, 5)])
def test_global_lp_pool(p: int, shape: tuple[int, ...]) -> None:
    check_node("GlobalLpPool", {"x": rand(*shape)}, {"p": p}, opset=17, rtol=1e-4)


def test_roi_align_of_an_absurd_box_stays_on_the_stack() -> None:
    """A box a million times the map with an adaptive grid would take 10^5 samples per cell along each axis
    (the spec's reference allocates them all); glow takes at most 1024, in the kernel and the evaluator alike,
    and a finite result comes back instead of a stack overflow."""
    node = helper.make_node("RoiAlign", ["x", "rois", "bi"], ["y"], output_height=2, output_width=2)
    feeds = {"x": rand(1, 2, 4, 4), "rois": np.float32([[-1e6, -1e6, 1e6, 1e6], [0, 0, 3, 3]]),
             "bi": np.zeros(2, np.int64)}  # fmt: skip
    graph = import_model(model([node], feeds, ["y"], opset=16))
    with glow_mlir.compile(graph) as compiled:
        got = compiled.run(feeds)["y"]
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, glow_mlir.interpret(graph.module, feeds)["y"], rtol=1e-5, atol=1e-6)
