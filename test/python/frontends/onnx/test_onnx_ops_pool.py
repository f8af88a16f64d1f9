"""ONNX 3-D MaxPool / AveragePool, LpPool and MaxPool's Indices output: glow-mlir against onnxruntime (or the
spec's reference where onnxruntime lacks a case). 1-D and 2-D MaxPool / AveragePool are in
test_onnx_ops_nn.py."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from onnx_check import check, check_node, model, rand

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
