"""ONNX convolution, pooling, normalization, Gemm/MatMul and Dropout: glow-mlir against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from onnx_check import check, check_node, model, rand

from glow_mlir.errors import InvalidNodeError
from glow_mlir.frontends.onnx import import_model

# Conv.


@pytest.mark.parametrize("attrs", [
    {},
    {"pads": [1, 1, 1, 1]},
    {"pads": [0, 1, 2, 1], "strides": [2, 1]},
    {"dilations": [2, 2], "pads": [2, 2, 2, 2]},
    {"strides": [2, 2], "auto_pad": "SAME_UPPER"},
    {"strides": [2, 2], "auto_pad": "SAME_LOWER"},
    {"kernel_shape": [3, 3], "auto_pad": "VALID"},
])
@pytest.mark.parametrize("bias", [True, False])
def test_conv(attrs: dict[str, object], bias: bool) -> None:
    consts = {"w": rand(4, 3, 3, 3), "b": rand(4) if bias else None}
    check_node("Conv", {"x": rand(2, 3, 7, 8)}, attrs, consts, opset=11, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("x", "attrs"), [
    ((1, 8, 4, 4), {"dilations": [6, 6], "pads": [6, 6, 6, 6]}),  # ASPP on a small map: the centre tap only
    ((1, 8, 5, 7), {"dilations": [3, 4], "pads": [3, 4, 3, 0], "strides": [1, 2]}),  # some outer taps dead
    ((1, 8, 4, 4), {"dilations": [6, 6], "pads": [6, 6, 6, 6], "group": 8}),  # depthwise
    # dead for some outputs only: the CPU backend splits them into regions that share their live taps
    ((1, 8, 16, 16), {"dilations": [12, 12], "pads": [12, 12, 12, 12]}),  # DeepLab's ASPP, rate 12 on 16x16
    ((1, 8, 12, 12), {"dilations": [6, 6], "pads": [6, 6, 6, 6], "group": 2}),  # 2 x 2 regions, grouped
])
def test_conv_taps_in_padding(x: tuple[int, ...], attrs: dict[str, object]) -> None:
    """Dilated convolutions whose outer taps read only padding for every output (glow-trim-conv-window drops
    them) or for some (backends/cpu/conv_regions.py)."""
    group = attrs.get("group", 1)
    consts = {"w": rand(8, 8 // group, 3, 3), "b": rand(8)}
    check_node("Conv", {"x": rand(*x)}, attrs, consts, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("x", "w", "attrs"), [
    ((1, 16, 20, 37), (3, 16, 9, 9), {"pads": [4, 4, 4, 4]}),  # a style transfer network's last layer, rows of 37
    ((2, 8, 12, 40), (1, 8, 3, 3), {"pads": [2, 2, 2, 2], "strides": [2, 1], "dilations": [2, 2]}),
    ((1, 6, 5, 33), (15, 6, 3, 5), {"pads": [1, 2, 1, 2]}),  # 15 outputs, a non-square window
    ((1, 32, 100), (1, 32, 7), {"pads": [3, 3]}),  # a vocoder's last layer to one waveform
])
@pytest.mark.parametrize("bias", [True, False])
def test_conv_narrow(x: tuple[int, ...], w: tuple[int, ...], attrs: dict[str, object], bias: bool) -> None:
    """Fewer output channels than a vector's lanes: the CPU backend keeps the convolution NCHW and vectorizes
    along its rows (backends/cpu/narrow_conv_recipes.py)."""
    consts = {"w": rand(*w), "b": rand(w[0]) if bias else None}
    # Sums of up to 1296 products of magnitude ~12, in another order than onnxruntime's: a few 1e-5 apart.
    check_node("Conv", {"x": rand(*x)}, attrs, consts, rtol=1e-4, atol=1e-4)


def test_conv_narrow_runtime_filter_and_activation() -> None:
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Tanh", ["c"], ["y"])]  # fmt: skip
    feeds = {"x": rand(1, 4, 6, 20), "w": rand(3, 4, 3, 3), "b": rand(3)}
    check(model(nodes, feeds, ["y"]), feeds, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("x,w,attrs", [
    ((8, 1, 40, 32), (50, 1, 6, 32), {}),  # LSTNet's layer, smaller
    ((2, 3, 21, 7), (20, 3, 3, 7), {"strides": [2, 1], "pads": [1, 0, 2, 0]}),
    ((1, 2, 30, 16), (17, 2, 3, 16), {"dilations": [3, 1]}),
    ((1, 1, 9, 5), (4, 1, 9, 5), {}),  # one output pixel
    ((1, 2, 12, 6), (5, 2, 3, 6), {"pads": [1, 1, 1, 1]}),  # padded width: stays 2-D
])  # fmt: skip
def test_conv_full_width(x: tuple[int, ...], w: tuple[int, ...], attrs: dict[str, object]) -> None:
    """A window as wide as the input runs as a 1-D convolution over width x channels (glow-cpu-layout)."""
    check_node("Conv", {"x": rand(*x)}, attrs, {"w": rand(*w), "b": rand(w[0])}, rtol=1e-4, atol=1e-4)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], **attrs), helper.make_node("Relu", ["c"], ["y"])]
    feeds = {"x": rand(*x), "w": rand(*w)}
    check(model(nodes, feeds, ["y"]), feeds, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("x,k,pads,strides,expanded", [
    ((1, 48, 120), [33], [16, 16], [1], False),  # QuartzNet's 1-D depthwise windows of 33 to 87
    ((1, 32, 200), [87], [86, 86], [2], True),  # after a 1x1 expansion and Relu: the fused kernel
    ((1, 40, 20, 20), [13, 13], [6, 6, 6, 6], [1, 1], False),  # a RepLKNet-sized window
])  # fmt: skip
def test_depthwise_windows_wider_than_the_registers(x: tuple[int, ...], k: list[int], pads: list[int],
                                                     strides: list[int], expanded: bool) -> None:  # fmt: skip
    """A filter row too long to hold beside any register tile streams a tap's vector at a time (the tile rule
    found no tile and the compile stopped on an assertion)."""
    c = x[1]
    nodes = [helper.make_node("Conv", ["a", "w", "b"], ["y"], group=c, pads=pads, strides=strides)]
    consts = {"w": rand(c, 1, *k), "b": rand(c)}
    if expanded:
        nodes = [helper.make_node("Conv", ["x", "e"], ["p"]), helper.make_node("Relu", ["p"], ["a"]), *nodes]
        consts["e"] = rand(c, c // 2, *[1] * len(k))
        x = (x[0], c // 2, *x[2:])
    else:
        nodes = [helper.make_node("Identity", ["x"], ["a"]), *nodes]
    feeds = {"x": rand(*x)}
    check(model(nodes, feeds, ["y"], consts), feeds, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("group,channels,outputs", [(2, 4, 6), (4, 4, 4), (4, 4, 8)])
def test_conv_groups_and_depthwise(group: int, channels: int, outputs: int) -> None:
    consts = {"w": rand(outputs, channels // group, 3, 3), "b": rand(outputs)}
    check_node("Conv", {"x": rand(1, channels, 6, 6)}, {"group": group, "pads": [1, 1, 1, 1]}, consts,
               rtol=1e-4)


@pytest.mark.parametrize("attrs", [{}, {"pads": [1, 2], "strides": [2]}, {"dilations": [2]}])
def test_conv_1d(attrs: dict[str, object]) -> None:
    check_node("Conv", {"x": rand(2, 3, 10)}, attrs, {"w": rand(4, 3, 3), "b": rand(4)}, rtol=1e-4)


def test_conv_runtime_weights() -> None:
    check_node("Conv", {"x": rand(1, 2, 5, 5), "w": rand(3, 2, 3, 3)}, {"pads": [1, 1, 1, 1]}, rtol=1e-4)


@pytest.mark.parametrize("attrs", [
    {},
    {"pads": [1, 0, 1, 2, 1, 0], "strides": [2, 1, 2]},
    {"dilations": [2, 1, 2], "pads": [2, 1, 1, 0, 1, 2]},
    {"strides": [2, 2, 2], "auto_pad": "SAME_UPPER"},
    {"group": 2},
])
@pytest.mark.parametrize("bias", [True, False])
def test_conv_3d(attrs: dict[str, object], bias: bool) -> None:
    """NCDHW: the sum over the filter's depth of 2-D convolutions of the planes each output plane reads."""
    w = rand(4, 4 // attrs.get("group", 1), 3, 2, 3)
    consts = {"w": w, "b": rand(4)} if bias else {"w": w}
    check_node("Conv", {"x": rand(2, 4, 6, 5, 7)}, attrs, consts, rtol=1e-4)


@pytest.mark.parametrize(("window", "attrs"), [
    # the temporal half of a separable 3-D layer: one 2-D convolution of the (D, H x W) planes
    ((3, 1, 1), {"pads": [1, 0, 0, 1, 0, 0]}),
    ((7, 1, 1), {"pads": [3, 0, 0, 3, 0, 0], "strides": [2, 1, 1]}),
    ((2, 1, 1), {"dilations": [2, 1, 1], "group": 2}),
    # the spatial half: a filter of depth 1 reads every plane (no gather left)
    ((1, 3, 3), {"pads": [0, 1, 1, 0, 1, 1], "strides": [1, 2, 2]}),
    ((1, 1, 1), {"strides": [1, 2, 1]}),  # 1x1x1 with a spatial stride: the general path
])
def test_conv_3d_separable(window: tuple[int, int, int], attrs: dict[str, object]) -> None:
    w = rand(4, 4 // attrs.get("group", 1), *window)
    check_node("Conv", {"x": rand(2, 4, 6, 5, 7)}, attrs, {"w": w, "b": rand(4)}, rtol=1e-4)


def test_conv_3d_runtime_weights() -> None:
    check_node("Conv", {"x": rand(1, 2, 4, 5, 5), "w": rand(3, 2, 2, 3, 3)}, {"pads": [1, 1, 1, 0, 1, 1]},
               rtol=1e-4)


# ConvTranspose.


@pytest.mark.parametrize("attrs", [
    {},
    {"strides": [2, 2]},
    {"strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"strides": [2, 2], "pads": [1, 0, 1, 2], "output_padding": [1, 1]},
    {"strides": [3, 2], "output_padding": [2, 1]},
    {"strides": [2, 2], "pads": [0, 0, 0, 0], "output_padding": [1, 0], "dilations": [2, 2]},
    {"strides": [2, 2], "output_shape": [10, 11]},
    {"strides": [2, 2], "output_shape": [8, 9]},
    {"strides": [2, 2], "auto_pad": "SAME_UPPER"},
    {"strides": [2, 2], "auto_pad": "SAME_LOWER"},
    {"strides": [2, 2], "auto_pad": "VALID"},
    {"group": 2},
])
@pytest.mark.parametrize("bias", [True, False])
def test_conv_transpose(attrs: dict[str, object], bias: bool) -> None:
    group = attrs.get("group", 1)
    consts = {"w": rand(4, 6 // group, 3, 3), "b": rand(6) if bias else None}
    check_node("ConvTranspose", {"x": rand(2, 4, 4, 5)}, attrs, consts, rtol=1e-4)


@pytest.mark.parametrize(("x", "w", "attrs"), [
    ((1, 4, 3, 4, 5), (4, 2, 2, 2, 2), {"strides": [2, 2, 2]}),  # a 3-D UNet's up-convolution: planes interleave
    ((1, 3, 4, 3, 3), (3, 2, 3, 3, 3), {"strides": [2, 1, 2], "pads": [1, 1, 0, 1, 0, 1],
                                        "output_padding": [1, 0, 1]}),  # overlapping planes, cropped, extended
    ((2, 4, 3, 3, 2), (4, 1, 2, 2, 2), {"dilations": [2, 1, 1], "group": 2}),
])
@pytest.mark.parametrize("bias", [True, False])
def test_conv_transpose_3d(x: tuple[int, ...], w: tuple[int, ...], attrs: dict[str, object], bias: bool) -> None:
    """3-D transposed convolutions as 2-D ones per filter plane, their planes interleaved or summed."""
    consts = {"w": rand(*w), "b": rand(w[1] * attrs.get("group", 1)) if bias else None}
    check_node("ConvTranspose", {"x": rand(*x)}, attrs, consts, rtol=1e-4, atol=1e-5)


def test_conv_transpose_3d_runtime_filter() -> None:
    check_node("ConvTranspose", {"x": rand(1, 2, 3, 3, 3), "w": rand(2, 3, 2, 2, 2), "b": rand(3)},
               {"strides": [2, 2, 2]}, rtol=1e-4, atol=1e-5)


def test_conv_transpose_1d() -> None:
    check_node("ConvTranspose", {"x": rand(1, 2, 5)}, {"strides": [2], "output_padding": [1]},
               {"w": rand(2, 3, 3), "b": rand(3)}, rtol=1e-4)


# The CPU backend's phase forms of ConvTranspose (backends/cpu/conv_transpose.py): one convolution of the
# stride's phases and their interleave, the pads a crop of it ("combined"), or one convolution per output
# phase of exactly the outputs kept ("per phase"), whichever computes fewer vector products.


@pytest.mark.parametrize(("x", "w", "attrs"), [
    ((1, 8, 5, 6), (8, 4, 2, 2), {"strides": [2, 2]}),  # a UNet's up-convolution: 1x1 phases (combined)
    ((2, 6, 4, 4), (6, 5, 4, 4), {"strides": [2, 2], "pads": [1, 1, 1, 1]}),  # 2x2 phases, a crop (combined)
    ((1, 8, 4, 4), (8, 16, 4, 4), {"strides": [2, 2], "pads": [1, 1, 1, 1]}),  # DCGAN's layer (per phase)
    ((1, 4, 5, 3), (4, 3, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1],
                                  "group": 2}),  # 3x3 of stride 2: 4, 2, 2 and 1 taps (per phase), groups
    ((1, 3, 6, 5), (3, 2, 5, 3), {"strides": [3, 2], "pads": [4, 0, 2, 3]}),  # phase rows cropped (combined)
    ((1, 4, 4, 4), (4, 1, 3, 3), {"strides": [2, 2], "dilations": [2, 2], "group": 4}),  # dilated depthwise
])
def test_conv_transpose_phases(x: tuple[int, ...], w: tuple[int, ...], attrs: dict[str, object]) -> None:
    outputs = w[1] * attrs.get("group", 1)
    check_node("ConvTranspose", {"x": rand(*x)}, attrs, {"w": rand(*w), "b": rand(outputs)}, rtol=1e-4)


@pytest.mark.parametrize("outputs", [3, 16])  # combined, per phase
def test_conv_transpose_runtime_filter(outputs: int) -> None:
    """A filter fed at run time is rearranged into the phases by a gather in the compiled code."""
    check_node("ConvTranspose", {"x": rand(1, 4, 3, 4), "w": rand(4, outputs, 4, 3)},
               {"strides": [2, 2], "pads": [1, 1, 1, 1], "group": 2}, rtol=1e-4)


def test_conv_transpose_batch_norm_relu() -> None:
    """ConvTranspose, BatchNormalization, Relu (a generator's layer): the batch norm folds into the transposed
    convolution, the relu into its phase convolution through the interleave and crop."""
    c, f = 6, 4
    nodes = [helper.make_node("ConvTranspose", ["x", "w", "b"], ["t"], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["t", "scale", "shift", "mean", "var"], ["n"]),
             helper.make_node("Relu", ["n"], ["y"])]  # fmt: skip
    consts = {"w": rand(c, f, 4, 4), "b": rand(f), "scale": rand(f), "shift": rand(f), "mean": rand(f),
              "var": np.abs(rand(f)) + 0.5}  # fmt: skip
    inputs = {"x": rand(1, c, 5, 5)}
    check(model(nodes, inputs, ["y"], consts), inputs, rtol=1e-4, atol=1e-5)


# Col2Im.


@pytest.mark.parametrize(("image", "block", "attrs"), [
    ((8, 6), (2, 2), {"strides": [2, 2]}),  # MobileViTV2's fold: non-overlapping patches
    ((7, 7), (3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]}),  # VOLO's: overlapping windows, padded
    ((6, 9), (3, 2), {"dilations": [2, 1], "pads": [2, 0, 1, 1]}),  # dilation, asymmetric pads
    ((10, 8), (3, 3), {"strides": [3, 2]}),  # the last image row and column past every window: zeros
])
def test_col2im(image: tuple[int, int], block: tuple[int, int], attrs: dict[str, object]) -> None:
    strides, dilations = attrs.get("strides", [1, 1]), attrs.get("dilations", [1, 1])
    pads = attrs.get("pads", [0, 0, 0, 0])
    windows = [(i + pads[a] + pads[a + 2] - (b - 1) * d - 1) // s + 1
               for a, (i, b, d, s) in enumerate(zip(image, block, dilations, strides))]  # fmt: skip
    consts = {"image_shape": np.array(image, np.int64), "block_shape": np.array(block, np.int64)}
    x = rand(2, 3 * block[0] * block[1], windows[0] * windows[1])
    check_node("Col2Im", {"x": x}, attrs, consts, opset=18, rtol=1e-4)


# Pooling.

POOLS = [
    {"kernel_shape": [2, 2]},
    {"kernel_shape": [3, 3], "strides": [2, 2]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 0, 1]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1},
    {"kernel_shape": [2, 2], "strides": [3, 3], "ceil_mode": 1},
    {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"},
    {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_LOWER"},
    {"kernel_shape": [2, 2], "auto_pad": "VALID"},
]


@pytest.mark.parametrize("attrs", POOLS)
def test_max_pool(attrs: dict[str, object]) -> None:
    check_node("MaxPool", {"x": rand(2, 3, 8, 9)}, attrs, opset=12)


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [2, 2], "dilations": [2, 2]},
    {"kernel_shape": [3, 3], "dilations": [2, 1], "pads": [1, 1, 2, 1], "strides": [2, 1]},
    {"kernel_shape": [2, 2], "dilations": [2, 2], "strides": [2, 2], "ceil_mode": 1},
])
def test_max_pool_dilations(attrs: dict[str, object]) -> None:
    check_node("MaxPool", {"x": rand(1, 2, 9, 8)}, attrs, opset=12)


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_dilated_pool_is_separable(op: str) -> None:
    """pytorch-converted/test_MaxPool2d_stride_padding_dilation's geometry, scaled down: a dilated pool is one
    gather per kernel row and one per kernel column (kh + kw), not one per tap (kh * kw)."""
    attrs = {"kernel_shape": [6, 8], "dilations": [3, 3], "strides": [3, 3], "pads": [3, 6, 3, 6]}
    x = rand(1, 2, 60, 70)
    check_node(op, {"x": x}, attrs, opset=19)
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    assert str(import_model(model([node], {"x": x}, ["y"], opset=19)).module).count('"glow.gather"') == 6 + 8


@pytest.mark.parametrize("attrs", POOLS)
@pytest.mark.parametrize("count_include_pad", [0, 1])
def test_average_pool(attrs: dict[str, object], count_include_pad: int) -> None:
    check_node("AveragePool", {"x": rand(2, 3, 8, 9)}, {**attrs, "count_include_pad": count_include_pad}, opset=11)


@pytest.mark.parametrize("count_include_pad", [0, 1])
def test_average_pool_dilations(count_include_pad: int) -> None:
    attrs = {"kernel_shape": [2, 3], "dilations": [2, 2], "pads": [1, 1, 1, 1], "strides": [2, 2],
             "count_include_pad": count_include_pad, "ceil_mode": 1}
    check_node("AveragePool", {"x": rand(1, 2, 9, 10)}, attrs, opset=19)


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_pool_1d(op: str) -> None:
    check_node(op, {"x": rand(2, 3, 11)}, {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}, opset=11)


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (2, 3, 7)])
def test_global_pool(op: str, shape: tuple[int, ...]) -> None:
    check_node(op, {"x": rand(*shape)})


# Linear algebra.


@pytest.mark.parametrize("attrs", [
    {}, {"transA": 1}, {"transB": 1}, {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}, {"alpha": 3.0},
])
@pytest.mark.parametrize("c_shape", [None, (5,), (1, 5), (3, 5), (3, 1), ()])
def test_gemm(attrs: dict[str, object], c_shape: tuple[int, ...] | None) -> None:
    a = rand(4, 3) if attrs.get("transA") else rand(3, 4)
    b = rand(5, 4) if attrs.get("transB") else rand(4, 5)
    consts = {"b": b, "c": None if c_shape is None else rand(*c_shape)}
    check_node("Gemm", {"a": a}, attrs, consts, opset=11)


def test_gemm_runtime_operands() -> None:
    check_node("Gemm", {"a": rand(3, 4), "b": rand(5, 4), "c": rand(5)}, {"transB": 1, "alpha": 0.5})


def test_gemm_of_a_vector_is_refused() -> None:
    """Gemm takes matrices; a 1-D B (fuzz seed 2439, graph-2620) is refused naming the node, not an IndexError."""
    m = model([helper.make_node("Gemm", ["a", "b"], ["y"], name="g")], {"a": rand(2, 10), "b": rand(10)}, ["y"])
    with pytest.raises(InvalidNodeError, match=r"node 'g' \(Gemm\).*\[2, 10\] and \[10\]"):
        import_model(m)


@pytest.mark.parametrize("shapes", [
    ((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)), ((2, 3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (3, 4, 5)), ((4,), (2, 4, 5)), ((2, 3, 4), (4,)), ((1, 3, 4), (2, 4, 5)),
])
def test_matmul(shapes: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    a, b = shapes
    check_node("MatMul", {"a": rand(*a), "b": rand(*b)})


@pytest.mark.parametrize(("a", "b", "constant"), [
    ((128, 96), (96, 9), True),  # a token-classification head
    ((40, 20), (20, 7), False),
    ((2, 24, 12), (2, 12, 5), False),  # batched
    ((3, 10, 33), (33, 13), True),  # broadcast over a batch
    ((300, 64), (64, 1), True),  # one column, a Linear(64, 1) scoring rows
    ((40, 20), (20, 1), False),
    ((6, 24, 12), (6, 12, 1), False),
    ((2, 1152, 16, 8), (2, 1152, 8, 1), False),  # capsule predictions
    ((3, 10, 33), (33, 1), True),
    ((1, 40), (40, 1), False),  # one row: a dot product, left to the matmul
])
def test_matmul_few_columns(a: tuple[int, ...], b: tuple[int, ...], constant: bool) -> None:
    """Fewer than 16 columns, no power of two: the CPU backend multiplies them padded to 16; one column: it
    sums A * B^T along rows (narrow_matmul.py)."""
    feeds = {"a": rand(*a)} | ({} if constant else {"b": rand(*b)})
    consts = {"b": rand(*b)} if constant else {}
    check(model([helper.make_node("MatMul", ["a", "b"], ["y"])], feeds, ["y"], consts), feeds, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("experts,pairs,gathered_lhs,columns", [
    (4, 12, True, 1),  # transformers' batched_mm experts: W[e] @ x, one column
    (4, 12, False, 3),  # x @ W[e], 3 columns
    (8, 2, True, 1),  # 8 experts for 2 pairs: the gather stays
    (20, 32, False, 1),  # more experts than MAX_EXPERTS: the gather stays
])  # fmt: skip
def test_matmul_of_gathered_experts(experts: int, pairs: int, gathered_lhs: bool, columns: int) -> None:
    """A batched product with each pair's expert weights gathered from a constant: against every expert, then
    each pair's own (expert_matmul.py) where the rule takes it; ids in range and repeated."""
    k, n = 24, 20
    weights = rand(experts, n, k) if gathered_lhs else rand(experts, k, n)
    x = rand(pairs, k, columns) if gathered_lhs else rand(pairs, columns, k)
    ids = np.arange(pairs, dtype=np.int64) * 7 % experts
    nodes = [helper.make_node("Gather", ["w", "ids"], ["g"], axis=0),
             helper.make_node("MatMul", ["g", "x"] if gathered_lhs else ["x", "g"], ["y"])]  # fmt: skip
    feeds = {"ids": ids, "x": x}
    check(model(nodes, feeds, ["y"], {"w": weights}), feeds, rtol=1e-4, atol=1e-4)


def test_gemm_few_columns() -> None:
    feeds = {"x": rand(32, 48)}
    nodes = [helper.make_node("Gemm", ["x", "w", "c"], ["y"], transB=1)]
    check(model(nodes, feeds, ["y"], {"w": rand(10, 48), "c": rand(10)}), feeds, rtol=1e-4, atol=1e-4)


def test_gemm_one_column() -> None:
    feeds = {"x": rand(32, 48)}
    nodes = [helper.make_node("Gemm", ["x", "w", "c"], ["y"], transB=1, alpha=0.5)]
    check(model(nodes, feeds, ["y"], {"w": rand(1, 48), "c": rand(1)}), feeds, rtol=1e-4, atol=1e-4)


def test_matmul_constant_weights_and_integers() -> None:
    check_node("MatMul", {"a": rand(2, 3, 4)}, consts={"b": rand(4, 5)})
    check_node("MatMul", {"a": rand(3, 4, low=-5, high=5, dtype=np.int32), "b": rand(4, 2, low=-5, high=5,
                                                                                     dtype=np.int32)})


# Normalization.


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3), (2, 3, 6)])
@pytest.mark.parametrize("opset", [7, 15])
def test_batch_normalization(shape: tuple[int, ...], opset: int) -> None:
    c = shape[1]
    consts = {"scale": rand(c), "bias": rand(c), "mean": rand(c), "var": rand(c, low=0.5, high=2)}
    check_node("BatchNormalization", {"x": rand(*shape)}, {"epsilon": 1e-3}, consts, opset=opset, rtol=1e-4)


@pytest.mark.parametrize("axis", [-1, 1, 2])
@pytest.mark.parametrize("bias", [True, False])
def test_layer_normalization(axis: int, bias: bool) -> None:
    x = rand(2, 3, 4)
    dims = x.shape[axis:]
    consts = {"scale": rand(*dims), "bias": rand(*dims) if bias else None}
    check_node("LayerNormalization", {"x": x}, {"axis": axis, "epsilon": 1e-4}, consts, rtol=1e-4, atol=1e-5)


def test_layer_normalization_mean_and_inv_std_outputs() -> None:
    check_node("LayerNormalization", {"x": rand(2, 3, 4)}, {"axis": 1}, {"scale": rand(3, 4), "bias": rand(3, 4)},
               outputs=["y", "mean", "inv_std"], rtol=1e-4)


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3, 7)])
def test_instance_normalization(shape: tuple[int, ...]) -> None:
    check_node("InstanceNormalization", {"x": rand(*shape)}, {"epsilon": 1e-3}, {"s": rand(3), "b": rand(3)},
               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("attrs", [{"size": 3}, {"size": 5, "alpha": 0.01, "beta": 0.5, "bias": 2.0}, {"size": 1}])
def test_lrn(attrs: dict[str, object]) -> None:
    check_node("LRN", {"x": rand(2, 5, 3, 4)}, attrs, rtol=1e-4)


@pytest.mark.parametrize("opset", [7, 12, 13])
@pytest.mark.parametrize("mask", [False, True])
def test_dropout(opset: int, mask: bool) -> None:
    check_node("Dropout", {"x": rand(3, 4)}, {}, outputs=["y", "mask"] if mask else 1, opset=opset)


# Float16: the ops that sum many terms accumulate in float32 and round once, as the spec's reference does.

F16 = np.float16


@pytest.mark.parametrize("op,inputs,attrs,consts", [
    ("MatMul", {"a": rand(3, 512, dtype=F16)}, {}, {"b": rand(512, 4, dtype=F16)}),
    ("MatMul", {"a": rand(2, 3, 512, dtype=F16), "b": rand(2, 512, 4, dtype=F16)}, {}, {}),
    ("Gemm", {"a": rand(3, 512, dtype=F16)}, {"transB": 1}, {"b": rand(4, 512, dtype=F16), "c": rand(4, dtype=F16)}),
    ("Conv", {"x": rand(1, 64, 6, 6, dtype=F16)}, {"pads": [1, 1, 1, 1]},
     {"w": rand(4, 64, 3, 3, dtype=F16), "b": rand(4, dtype=F16)}),
    ("ReduceSum", {"x": rand(4, 1024, low=0, high=1, dtype=F16)}, {"keepdims": 0},
     {"axes": np.array([1], np.int64)}),
    ("ReduceMean", {"x": rand(4, 1024, low=0, high=1, dtype=F16)}, {}, {"axes": np.array([1], np.int64)}),
    ("Softmax", {"x": rand(4, 1024, low=-3, high=3, dtype=F16)}, {}, {}),
    ("LogSoftmax", {"x": rand(4, 1024, low=-3, high=3, dtype=F16)}, {}, {}),
])
def test_float16_sums_accumulate_in_float32(
    op: str, inputs: dict[str, np.ndarray], attrs: dict[str, object], consts: dict[str, np.ndarray]
) -> None:
    """Long float16 sums match onnx's reference implementation (numpy, which accumulates float16 in float32)
    to within an ulp; summed in float16 they drift by many ulps."""
    check_node(op, inputs, attrs, consts, opset=18, rtol=1e-3, atol=1e-3, spec=True)


@pytest.mark.parametrize("axis", [-1, -2, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_rms_normalization(axis: int, dtype: type) -> None:
    x = rand(2, 3, 8, dtype=dtype)
    scale = rand(*(x.shape[axis:] if axis >= 0 else x.shape[axis:]), dtype=dtype)
    tolerance = 2e-3 if dtype == np.float16 else 1e-5
    check_node("RMSNormalization", {"x": x, "scale": scale}, {"axis": axis, "epsilon": 1e-3}, opset=23,
               rtol=tolerance, atol=tolerance)
