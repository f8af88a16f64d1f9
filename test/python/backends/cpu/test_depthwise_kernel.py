"""The f32 depthwise convolution kernel (depthwise_recipes.py) over its class, against onnxruntime: channel counts
that fill whole blocks of two registers, leave one whole register, a partial one of at most 8 lanes or more than 8
(masked), or only a partial one; rows of fewer pixels than a tile and not a multiple of it; 1x1 to 7x7 windows,
stride 2, dilation 2, non-square maps, batch 2; every fused activation and none, with and without bias; layers
that fit in L2 (bands of rows) and layers that do not (row by row, channel blocks innermost); windows that reach
far into the padding of an input whose border is known to be zeros (their dead taps skipped)."""

from __future__ import annotations

import re

import numpy as np
import onnxruntime
import pytest
from onnx import ModelProto, NodeProto, helper

import glow_mlir
from glow_mlir.backends.cpu.depthwise_recipes import ChannelBlocks, channel_blocks, phases
from glow_mlir.backends.cpu.depthwise_tiles import Interior, TileShape, interior_taps, tile_shape
from glow_mlir.frontends.onnx import import_model
import onnx_check

rng = np.random.default_rng(0)


def _model(c: int, hw: tuple[int, int], k: int, stride: int, dilation: int, batch: int, bias: bool,
           activation: str | None) -> ModelProto:  # fmt: skip
    initializers = {"w": (rng.standard_normal((c, 1, k, k)) / k).astype(np.float32)}
    if bias:
        initializers["b"] = rng.uniform(-0.5, 0.5, c).astype(np.float32)
    pad = dilation * (k // 2)
    nodes = [helper.make_node("Conv", ["x", "w", *(["b"] if bias else [])], ["y" if activation is None else "c"],
                              kernel_shape=[k, k], strides=[stride] * 2, pads=[pad] * 4, dilations=[dilation] * 2,
                              group=c)]  # fmt: skip
    if activation is not None:
        node, bounds = onnx_check.activation_node(activation, "c", "y", clip=(-0.5, 0.5))
        nodes.append(node)
        initializers |= bounds
    return onnx_check.model(nodes, {"x": np.zeros((batch, c, *hw), np.float32)}, ["y"], initializers)


CASES = [
    # c, (h, w), k, stride, dilation, batch, bias, activation
    (96, (14, 14), 3, 1, 1, 1, True, "Relu"),  # blocks of 32 channels
    (144, (13, 11), 3, 2, 1, 1, True, "Clip"),  # 4 blocks of 32, one whole register left; odd map, stride 2
    (88, (9, 30), 3, 1, 1, 2, False, "LeakyRelu"),  # phased flat rows (11 phases), rows of 9; batch 2
    (60, (12, 12), 5, 2, 1, 1, True, "Sigmoid"),  # 5x5: one register per tile; a masked partial of 12
    (40, (10, 7), 7, 1, 1, 1, True, None),  # 7x7, a row shorter than a tile
    (12, (9, 9), 3, 1, 1, 1, False, "Tanh"),  # phased flat rows of 108 floats: 6 vectors and a masked one
    (36, (27, 14), 3, 1, 1, 1, True, "Relu"),  # 9 phases; 27 rows: two tiles of 12 and one of 3
    (100, (14, 14), 3, 1, 2, 2, True, "Clip"),  # 25 phases, dilation 2, batch 2
    (20, (5, 7), 3, 1, 1, 1, True, None),  # 5 phases, fewer rows than a tile, no activation
    (12, (12, 12), 3, 2, 1, 1, True, "Relu"),  # stride 2 across the row: channel vectors (a masked register)
    (8, (20, 20), 3, 1, 1, 1, True, "Relu"),  # 8 channels: flat rows, two pixels per register
    (8, (9, 13), 3, 1, 1, 2, False, "Clip"),  # flat rows of 104 floats: a masked last vector; batch 2
    (4, (11, 10), 3, 1, 2, 1, True, "LeakyRelu"),  # 4 channels, dilation 2: 4 pixels per register
    (2, (7, 9), 3, 1, 1, 1, True, None),  # 2 channels: 8 pixels per register, one masked vector a row
    (4, (6, 30), 3, 1, 1, 1, True, "Tanh"),  # 4 channels, rows of 120 floats: 7 vectors and a masked one
    (8, (14, 14), 3, 2, 1, 1, True, "Relu"),  # stride 2 across the row: not flat (8 lanes)
    (3, (6, 5), 3, 1, 1, 1, True, "Relu"),  # 3 channels: phased flat rows (3 phases)
    (32, (16, 16), 3, 1, 2, 1, True, "Relu"),  # dilation 2
    (48, (8, 8), 1, 1, 1, 1, True, "Relu"),  # 1x1
    (96, (56, 56), 3, 1, 1, 1, True, "Relu"),  # 2.4 MB of input and output: bands of 21 rows and one of 14
    (72, (57, 57), 5, 2, 1, 1, True, "Clip"),  # 5x5 stride 2, a partial pixel tile
    (640, (40, 40), 5, 1, 1, 1, True, "Relu"),  # a 5-row window of 563 KB: row by row, blocks innermost
    (1152, (7, 7), 5, 1, 1, 1, True, "Relu"),  # bands of 6 rows and one of 1 (11 input rows of 50 KB)
]


@pytest.mark.parametrize(("c", "hw", "k", "stride", "dilation", "batch", "bias", "activation"), CASES)
def test_depthwise_kernel(c: int, hw: tuple[int, int], k: int, stride: int, dilation: int, batch: int, bias: bool,
                          activation: str | None) -> None:  # fmt: skip
    model = _model(c, hw, k, stride, dilation, batch, bias, activation)
    x = rng.standard_normal((batch, c, *hw)).astype(np.float32)
    with glow_mlir.compile(import_model(model), keep_ir=True) as compiled:
        scheduled = compiled.ir("glow-cpu-schedule")
        got = compiled.run({"x": x})["y"]
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    [want] = session.run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # One kernel computes the layer, its bias and activation: the only outlined function with FMAs, and neither
    # the convolution nor a bias or activation generic is left for loops (the padded input's border fills are).
    kernels = re.split(r"(?=func\.func private @)", scheduled)
    assert sum("vector.fma" in body for body in kernels) == 1
    assert "linalg.depthwise" not in scheduled and "linalg.generic" not in scheduled
    # Channels that are no whole number of registers, unit stride along the row, a held filter: flat rows. The
    # filter's C weights repeated across each register where C divides 16, else its phases' registers.
    flat = c % 16 != 0 and stride == 1 and k <= 3
    [conv] = [body for body in kernels if "vector.fma" in body]
    signature = conv.split("\n")[0]
    # Flat: the input and output (the kernel's last two buffers) as [N, H, W x C].
    x_type, y_type = re.findall(r"memref<([\dx]+)xf32", signature)[-2:]
    assert (x_type.count("x"), y_type.count("x")) == ((2, 2) if flat else (3, 3))
    if flat and 16 % c == 0:
        assert f"[{', '.join(str(lane % c) for lane in range(16))}]" in scheduled
    assert ("__glow_packed_flat_dw" in scheduled) == (flat and 16 % c != 0)


@pytest.mark.parametrize(("c", "m", "hw", "k", "stride"), [(24, 2, (16, 16), 7, 2), (6, 3, (9, 11), 3, 1)])
def test_channel_multiplier_runs_the_depthwise_kernel(c: int, m: int, hw: tuple[int, int], k: int,
                                                      stride: int) -> None:  # fmt: skip
    """A depthwise convolution with m filters per channel (MaxxViT-v2's 7x7 stride-2 layers: 2) reads its input
    with each channel repeated m times (glow-cpu-layout's gather), on which it is a depthwise convolution of one
    filter per channel: the depthwise kernel, where the multiplier's own form (linalg's _hwcm) ran as scalar
    loops."""
    w = (rng.standard_normal((c * m, 1, k, k)) / k).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[k, k], strides=[stride] * 2,
                              pads=[k // 2] * 4, group=c)]  # fmt: skip
    x = rng.standard_normal((1, c, *hw)).astype(np.float32)
    model = onnx_check.model(nodes, {"x": x}, ["y"], {"w": w, "b": rng.uniform(-0.5, 0.5, c * m).astype(np.float32)})
    scheduled = _scheduled_as_onnxruntime(model, x)
    assert sum("vector.fma" in body for body in re.split(r"(?=func\.func private @)", scheduled)) == 1


def test_depthwise_transposed_convolution_runs_the_depthwise_kernel() -> None:
    """BigVGAN's anti-aliased up-sampling: a depthwise ConvTranspose1d (kernel 12, stride 2) is one convolution
    of its 2 phases, 2 filters per channel (conv_transpose.py), so it too reads its channels repeated and runs
    the depthwise kernel, not scalar loops."""
    c, length = 16, 45
    nodes = [helper.make_node("ConvTranspose", ["x", "w"], ["y"], kernel_shape=[12], strides=[2], group=c)]
    x = rng.standard_normal((1, c, length)).astype(np.float32)
    model = onnx_check.model(nodes, {"x": x}, ["y"], {"w": (rng.standard_normal((c, 1, 12)) / 4).astype(np.float32)})
    _scheduled_as_onnxruntime(model, x)


def _scheduled_as_onnxruntime(model: ModelProto, x: np.ndarray) -> str:
    """The compiled model's IR after glow-cpu-schedule, once its output on `x` is checked against onnxruntime's
    and no depthwise op or scalar loop nest is left in it."""
    with glow_mlir.compile(import_model(model), keep_ir=True) as compiled:
        scheduled = compiled.ir("glow-cpu-schedule")
        got = compiled.run({"x": x})["y"]
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got, session.run(None, {"x": x})[0], rtol=1e-5, atol=1e-5)
    assert "linalg.depthwise" not in scheduled and "__glow_loops" not in scheduled
    return scheduled


@pytest.mark.parametrize(
    ("c", "vectors", "blocks"),
    [
        (96, 2, [ChannelBlocks(0, 32, 3, (16, 16))]),
        (144, 2, [ChannelBlocks(0, 32, 4, (16, 16)), ChannelBlocks(128, 16, 1, (16,))]),
        (88, 2, [ChannelBlocks(0, 32, 2, (16, 16)), ChannelBlocks(64, 16, 1, (16,)), ChannelBlocks(80, 8, 1, (8,))]),
        (60, 1, [ChannelBlocks(0, 16, 3, (16,)), ChannelBlocks(48, 12, 1, (12,))]),
        (8, 2, [ChannelBlocks(0, 8, 1, (8,))]),
        (40, 1, [ChannelBlocks(0, 16, 2, (16,)), ChannelBlocks(32, 8, 1, (8,))]),
    ],
)
def test_channel_blocks(c: int, vectors: int, blocks: list[ChannelBlocks]) -> None:
    assert channel_blocks(c, vectors) == blocks


@pytest.mark.parametrize(
    ("out", "vectors", "k", "stride", "shape"),
    [
        # A held 3x3 filter of two vectors leaves 11 accumulators: 2 x 2 loads 16 inputs per 36 multiply-adds
        # and vector, 1 x 4 18, 1 x 5 21 per 45.
        ((28, 28), 2, 3, 1, TileShape(2, 2, 2)),
        # One vector: 16 accumulators, 4 x 4 (6 x 6 inputs per 144 multiply-adds).
        ((28, 28), 1, 3, 1, TileShape(4, 4, 1)),
        # A map of 7 rows by 7: 4 x 4 would leave tiles of 3 on both sides.
        ((7, 7), 1, 3, 1, TileShape(4, 4, 1)),
        # 5x5 and 7x7 filters read by the tile one row at a time: rows cost their inputs once per filter row, the
        # filter's loads are shared by the tile's pixels, so wide rows of pixels win.
        ((28, 28), 1, 5, 1, TileShape(2, 7, 1)),
        ((56, 56), 1, 7, 1, TileShape(2, 8, 1)),
        # Rows shorter than the widest tile.
        ((1, 3), 1, 3, 1, TileShape(1, 3, 1)),
        # RepLKNet's 29x29 and 27x27 windows: a held filter row (29 registers) would leave one accumulator, so the
        # row streams and the tile is full (1 x 1 ran at 11 % of peak).
        ((28, 28), 1, 29, 1, TileShape(2, 7, 1)),
        ((14, 14), 1, 27, 1, TileShape(2, 7, 1)),
    ],
)
def test_tile_shape(out: tuple[int, int], vectors: int, k: int, stride: int, shape: TileShape) -> None:
    assert tile_shape(out, vectors, (k, k), (stride, stride), (1, 1)) == shape


@pytest.mark.parametrize(
    ("out", "k", "stride", "pad", "shape"),
    [
        # ConvNeXt's 7x7 on its last 7x7 map: tiles of one row would read no zero row, but their 7 accumulators
        # wait on the FMAs' latency (FMAS_IN_FLIGHT); 2 x 7 (14) as without the border.
        ((7, 7), 7, 1, 3, TileShape(2, 7, 1)),
        # RepLKNet's 27x27 on 28x28: every tile of pixels reads zeros with some of its input columns; counted
        # place by place, tiles of 2 x 8 do the least work (2 x 7 without the border).
        ((28, 28), 27, 1, 13, TileShape(2, 8, 1)),
        # A stride-2 7x7 window on 7x7: 2 x 4 (8 accumulators, enough in flight) reads fewer zero rows than 4 x 4.
        ((4, 4), 7, 2, 3, TileShape(2, 4, 1)),
    ],
)
def test_tile_shape_over_zeros(out: tuple[int, int], k: int, stride: int, pad: int, shape: TileShape) -> None:
    size = (out[0] - 1) * stride + k - 2 * pad
    interior = Interior(pad, pad, size, size)
    assert tile_shape(out, 1, (k, k), (stride, stride), (1, 1), interior) == shape


@pytest.mark.parametrize(("outputs", "stride", "taps", "dilation", "begin", "size"),
                         [(1, 1, 13, 1, 6, 7), (2, 1, 7, 1, 3, 7), (4, 2, 5, 1, 2, 14), (3, 1, 7, 3, 9, 9),
                          (2, 3, 9, 2, 8, 30), (1, 1, 27, 1, 13, 14)])  # fmt: skip
def test_interior_taps(outputs: int, stride: int, taps: int, dilation: int, begin: int, size: int) -> None:
    """The taps that read the interior for some of a tile's outputs, at every place of the tile: the span of
    those that do, by brute force."""
    for first in range(0, begin + size + taps * dilation, stride):
        live = [t for t in range(taps)
                if any(begin <= first + o * stride + t * dilation < begin + size for o in range(outputs))]  # fmt: skip
        lo, hi = interior_taps(first, outputs, stride, taps, dilation, begin, size)
        assert (lo, hi) == ((live[0], live[-1] + 1) if live else (lo, lo))


OVER_ZEROS = [
    # c, (h, w), (kh, kw), stride, dilation, pads, batch
    (32, (14, 14), (27, 27), 1, 1, [13] * 4, 1),  # RepLKNet's 27x27: 27 % of the taps read values
    (40, (7, 7), (13, 13), 1, 1, [6] * 4, 2),  # a block of 8 channels left, batch 2
    (48, (7, 7), (7, 7), 1, 1, [3] * 4, 1),  # ConvNeXt's last stage
    (24, (14, 14), (5, 5), 2, 1, [2] * 4, 1),  # EfficientNet's stride-2 5x5 on 14x14
    (16, (9, 9), (7, 7), 1, 3, [9] * 4, 1),  # VAN's dilated 7x7: trimmed to 5x5, most taps still on zeros
    (20, (12, 20), (11, 3), 1, 1, [5, 1, 5, 1], 1),  # a band of 11 rows (InceptionNeXt), a non-square map
    (16, (10, 9), (9, 9), 1, 1, [0, 8, 4, 2], 1),  # asymmetric pads
    (16, (30, 30), (9, 9), 3, 2, [8] * 4, 1),  # stride 3, dilation 2
    (64, (60, 60), (31, 31), 1, 1, [15] * 4, 1),  # 1.8 MB of input and output: row by row; pixel tiles in a loop
]


@pytest.mark.parametrize(("c", "hw", "window", "stride", "dilation", "pads", "batch"), OVER_ZEROS)
def test_windows_over_zeros(c: int, hw: tuple[int, int], window: tuple[int, int], stride: int, dilation: int,
                            pads: list[int], batch: int) -> None:  # fmt: skip
    """A window reaching into the zeros of the padding of a ReLU's output (written into the interior of the
    padded buffer): the kernel's loop over filter rows skips rows of zeros, against onnxruntime."""
    inits = {"w": (rng.standard_normal((c, 1, *window)) / np.prod(window) ** 0.5).astype(np.float32),
             "b": rng.uniform(-0.5, 0.5, c).astype(np.float32)}  # fmt: skip
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Conv", ["r", "w", "b"], ["y"], kernel_shape=list(window), strides=[stride] * 2,
                              pads=pads, dilations=[dilation] * 2, group=c)]  # fmt: skip
    x = rng.standard_normal((batch, c, *hw)).astype(np.float32)
    scheduled = _scheduled_against_onnxruntime(nodes, x, inits)
    [conv] = [body for body in re.split(r"(?=func\.func private @)", scheduled) if "vector.fma" in body]
    assert "arith.minsi" in conv


def _scheduled_against_onnxruntime(nodes: list[NodeProto], x: np.ndarray, inits: dict[str, np.ndarray]) -> str:
    """The IR after glow-cpu-schedule of the model of `nodes` (input x, output y), whose output on `x` must be
    onnxruntime's."""
    model = onnx_check.model(nodes, {"x": x}, ["y"], inits)
    with glow_mlir.compile(import_model(model), keep_ir=True) as compiled:
        scheduled = compiled.ir("glow-cpu-schedule")
        got = compiled.run({"x": x})["y"]
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got, session.run(None, {"x": x})[0], rtol=1e-5, atol=1e-5)
    return scheduled


def test_phases() -> None:
    """Register q of a phased filter holds channels 16q, 16q + 1, ... mod C; P = lcm(C, 16) / 16 of them."""
    taps = np.arange(2 * 12, dtype=np.float32).reshape(2, 12)
    got = phases(taps)
    assert got.shape == (3, 2, 16)
    for q in range(3):
        np.testing.assert_array_equal(got[q], taps[:, [(16 * q + lane) % 12 for lane in range(16)]])


@pytest.mark.parametrize("c", [8, 36])
def test_flat_rows_into_a_concatenation(c: int) -> None:
    """GhostNet's ghost module: a depthwise convolution whose output is the second half of a concatenation's
    channels, so its pixels are 2C floats apart, against onnxruntime. 8 channels run as flat rows (two pixels
    per register), each register's two pixels stored one by one; 36 in channel vectors (phased flat rows would
    take two masked stores per register)."""
    inits = {"w1": (rng.standard_normal((c, 4, 1, 1)) / 2).astype(np.float32),
             "w2": (rng.standard_normal((c, 1, 3, 3)) / 3).astype(np.float32),
             "b2": rng.uniform(-0.5, 0.5, c).astype(np.float32)}  # fmt: skip
    nodes = [helper.make_node("Conv", ["x", "w1"], ["p"], kernel_shape=[1, 1]),
             helper.make_node("Relu", ["p"], ["pr"]),
             helper.make_node("Conv", ["pr", "w2", "b2"], ["d"], kernel_shape=[3, 3], pads=[1] * 4, group=c),
             helper.make_node("Relu", ["d"], ["dr"]),
             helper.make_node("Concat", ["pr", "dr"], ["y"], axis=1)]  # fmt: skip
    x = rng.standard_normal((1, 4, 15, 13)).astype(np.float32)
    scheduled = _scheduled_against_onnxruntime(nodes, x, inits)
    [depthwise] = [body for body in re.split(r"(?=func\.func private @)", scheduled)
                   if f"memref<3x3x{c}xf32>" in body.split("\n")[0]]  # fmt: skip
    # Flat rows read [N, H, W x C] and store each register's pixels one by one; channel vectors read NHWC.
    x_type = re.findall(r"memref<([\dx]+)xf32", depthwise.split("\n")[0])[-2]
    assert (x_type.count("x"), "vector.extract_strided_slice" in depthwise) == ((2, True) if c == 8 else (3, False))
    assert "__glow_packed_flat_dw" not in scheduled
