"""Grouped and depthwise convolutions as one kernel each, bias and activation fused (grouped_recipes.py
`grouped_recipe`, depthwise_recipes.py `depthwise_recipe`), against onnxruntime over the shape class: groups of 2 to 64 channels,
odd group counts, input and output widths that differ, stride 2, dilation 2, 1x1 to 7x7 windows, padding,
with and without bias and activation, and a filter that is an input (not packed)."""

from __future__ import annotations

import re

import numpy as np
import onnxruntime
import pytest
from onnx import ModelProto, TensorProto, helper, numpy_helper

import glow_mlir
from glow_mlir.backends.cpu import grouped_interleaved, grouped_narrow, grouped_pointwise, openmp, parallel
from glow_mlir.backends.cpu.host import cpu_flags
from glow_mlir.frontends.onnx import import_model

rng = np.random.default_rng(0)


def _conv_model(
    c: int, f: int, size: int, k: int, stride: int, group: int, *, dilation: int = 1, bias: bool = True,
    activation: str | None = "Relu", filter_input: bool = False,
) -> tuple[ModelProto, dict[str, np.ndarray]]:
    """Conv (NCHW, "same" pads) [+ Relu or Clip(0, 6)] and its feeds."""
    w = (rng.standard_normal((f, c // group, k, k)) / np.sqrt(k * k * c / group)).astype(np.float32)
    b = rng.uniform(-0.5, 0.5, f).astype(np.float32)
    feeds = {"x": rng.standard_normal((1, c, size, size)).astype(np.float32)}
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, size, size])]
    initializers = [numpy_helper.from_array(b, "b")] if bias else []
    if filter_input:
        feeds["w"] = w
        inputs.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, list(w.shape)))
    else:
        initializers.append(numpy_helper.from_array(w, "w"))
    pad = dilation * (k // 2)
    nodes = [helper.make_node("Conv", ["x", "w", *(["b"] if bias else [])], ["c"], kernel_shape=[k, k],
                              strides=[stride] * 2, pads=[pad] * 4, dilations=[dilation] * 2, group=group)]
    if activation == "Relu":
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    elif activation == "Clip":
        initializers += [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("lo", 0), ("hi", 6))]
        nodes.append(helper.make_node("Clip", ["c", "lo", "hi"], ["y"]))
    else:
        nodes[0].output[0] = "y"
    graph = helper.make_graph(nodes, "conv", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model, feeds


def _run(model: ModelProto, feeds: dict[str, np.ndarray]) -> str:
    """Compiles and runs `model`, checks it against onnxruntime, returns the scheduled IR."""
    with glow_mlir.compile(import_model(model), keep_ir=True) as compiled:
        scheduled = compiled.ir("glow-cpu-schedule")
        got = compiled.run(feeds)["y"]
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    [want] = session.run(None, feeds)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    return scheduled


def _kernels(scheduled: str) -> dict[str, str]:
    """The outlined kernels' bodies by name."""
    parts = re.split(r"(?=func\.func private @)", scheduled)
    return {re.match(r"func\.func private @(\w+)", p).group(1): p for p in parts if p.startswith("func.func private")}


def _conv_kernels(scheduled: str) -> list[str]:
    return [body for body in _kernels(scheduled).values() if "vector.fma" in body]


@pytest.mark.parametrize(
    ("c", "f", "size", "k", "stride", "group", "dilation", "packed"),
    [
        (36, 36, 10, 3, 2, 9, 1, "9x3x3x4x4"),  # 9 groups of 4 (36 channels fill 3/4 of 3 registers), stride 2
        (24, 24, 11, 3, 2, 3, 1, "3x3x3x8x8"),  # 3 groups of 8 at stride 2: an odd count, one per tile
        (48, 48, 7, 5, 1, 4, 1, "1x5x5x48x48"),  # 12-channel groups, 5x5
        (40, 40, 9, 3, 2, 20, 1, "5x3x3x8x8"),  # 20 groups of 2 at stride 2: 4 per tile (8 does not divide 20)
        (256, 256, 7, 3, 1, 4, 1, "4x3x3x64x64"),  # 64-channel groups
        (24, 48, 9, 7, 1, 2, 1, "2x7x7x12x24"),  # 7x7, output groups of 24: 16 + 8 channels
        (112, 112, 8, 3, 1, 2, 1, "2x3x3x56x56"),  # RegNetX-6.4GF's 56-channel groups: 48 + 8
        (48, 48, 9, 3, 1, 4, 2, "1x3x3x48x48"),  # dilation 2
    ],
)
def test_grouped_conv_is_one_fused_kernel(
    c: int, f: int, size: int, k: int, stride: int, group: int, dilation: int, packed: str
) -> None:
    model, feeds = _conv_model(c, f, size, k, stride, group, dilation=dilation)
    scheduled = _run(model, feeds)
    # The tiles' dense block-diagonal filters: [tiles, KH, KW, tile inputs, tile outputs].
    assert re.findall(r"memref.global [^@]*@__glow_packed_gconv_(\w+)", scheduled) == [packed]
    kernels = _kernels(scheduled)
    convs = [name for name, body in kernels.items() if "vector.fma" in body]
    # A tile of more than 16 output channels that 16 does not divide is two kernels: 16-lane registers, then the
    # rest (conv_recipes.channel_parts); any other tile one kernel of the widest registers its width allows.
    width = int(packed.split("x")[-1])
    lanes = [int(re.findall(r"vector\.fma .* : vector<(\d+)xf32>", kernels[name])[0]) for name in convs]
    if width > 16 and width % 16:
        assert len(lanes) == 2 and lanes[0] % 16 == 0 and lanes[1] == width % 16
    else:
        assert len(lanes) == 1
    # The ReLU is in the convolution's kernels and in no other.
    assert [name for name, body in kernels.items() if "arith.cmpf uge" in body] == convs
    assert "glow.grouped_conv" not in scheduled


@pytest.mark.parametrize(
    ("c", "size", "group", "activation", "bias"),
    [
        (128, 9, 16, "Relu", True),  # 1x1 groups of 8: not the pointwise kernel's half-empty registers
        (64, 10, 32, None, False),  # 1x1 groups of 2
        (64, 6, 16, "Clip", True),  # 1x1 groups of 4
    ],
)
def test_narrow_groups_shuffle_their_inputs(c: int, size: int, group: int, activation: str | None,
                                            bias: bool) -> None:  # fmt: skip
    """1x1 groups of 2, 4 or 8 channels (grouped_narrow.NarrowGroupKernel): whole groups per register, the input
    shuffled per channel of its group, the filter packed as [KH, KW, FG, C], no block-diagonal tile; the bias
    and activation in the kernel."""
    model, feeds = _conv_model(c, c, size, 1, 1, group, bias=bias, activation=activation)
    scheduled = _run(model, feeds)
    fg, lanes = c // group, -(-c // 16) * 16
    assert re.findall(r"memref.global [^@]*@__glow_packed_narrow_gconv_(\w+)", scheduled) == [f"1x1x{fg}x{lanes}"]
    assert "__glow_packed_gconv" not in scheduled and "glow.grouped_conv" not in scheduled
    [conv] = _conv_kernels(scheduled)
    # Input channel j of each group reaches its group's lanes: lane i takes lane (i // FG) * FG + j, by a shuffle
    # within 128-bit lanes, or across them (groups of 8) by vpermps with index rows from a non-constant global.
    _assert_lane_patterns(scheduled, conv, "shuffles", fg, [[i // fg * fg + j for i in range(16)] for j in range(fg)])
    clamp = {"Relu": "arith.cmpf uge", "Clip": "arith.cmpf ule", None: None}[activation]
    if clamp is not None:
        assert [body for body in _kernels(scheduled).values() if clamp in body] == [conv]


def _assert_lane_patterns(scheduled: str, conv: str, table: str, fg: int, patterns: list[list[int]]) -> None:
    """The kernel's shuffles: vpermps with index rows `patterns` from global __glow_packed_<table>_8 for groups of
    8 (AVX-512), else vector.shuffle with each pattern."""
    if fg > 4 and "avx512f" in cpu_flags():
        assert grouped_narrow.PERMUTE in conv and "vector.shuffle" not in conv
        [data] = re.findall(rf'memref.global "private" @__glow_packed_{table}_8 : memref<8x16xi32> = dense<"0x(\w+)"',
                            scheduled)  # fmt: skip
        assert np.frombuffer(bytes.fromhex(data), "<i4").reshape(8, 16).tolist() == patterns
    else:
        for lanes in patterns:
            assert f"[{', '.join(map(str, lanes))}]" in conv


@pytest.mark.parametrize(
    ("c", "size", "k", "stride", "group", "dilation", "activation", "bias"),
    [
        (128, 9, 3, 1, 32, 1, "Relu", True),  # ResNeXt's 4-channel groups, 4 per register
        (64, 10, 3, 2, 8, 1, "Relu", True),  # 8-channel groups, stride 2
        (56, 15, 3, 1, 7, 1, "Clip", True),  # RegNetX-200MF's 7 groups of 8: the last register half masked
        (32, 9, 3, 1, 4, 2, None, False),  # dilation 2, no bias or activation
        (32, 13, 5, 1, 16, 1, "Relu", True),  # 16 groups of 2, a 5x5 window
        (64, 30, 3, 1, 16, 1, "Relu", True),  # rows of 30 pixels: blocks of one row, tiles of 3
        (48, 5, 3, 1, 6, 1, "Relu", True),  # rows of 5: one block of all 5 rows, tiles of 2 (1 left)
    ],
)
def test_narrow_groups_by_diagonals(
    c: int, size: int, k: int, stride: int, group: int, dilation: int, activation: str | None, bias: bool
) -> None:
    """KxK groups of 2, 4 or 8 channels (grouped_narrow.DiagonalGroups): the input as loaded times the filter's
    diagonals, packed vector-major [vectors, KH, KW, FG, 16], each pixel's FG accumulators rotated into place and
    summed (vpermps rows from a non-constant global for groups of 8); the bias and activation in the kernel."""
    model, feeds = _conv_model(c, c, size, k, stride, group, dilation=dilation, bias=bias, activation=activation)
    scheduled = _run(model, feeds)
    fg, vectors = c // group, -(-c // 16)
    packed = r"memref.global [^@]*@__glow_packed_diagonal_gconv_(\w+) : memref<(\w+)xf32>"
    assert re.findall(packed, scheduled) == [(f"{vectors}x{k}x{k}x{fg}", f"{vectors}x{k}x{k}x{fg}x16")]
    assert "__glow_packed_narrow_gconv" not in scheduled and "__glow_packed_gconv" not in scheduled
    [conv] = _conv_kernels(scheduled)
    rotations = [[i // fg * fg + (i % fg + r) % fg for i in range(16)] for r in range(fg)]
    _assert_lane_patterns(scheduled, conv, "rotations", fg, rotations[1:] if fg <= 4 else rotations)
    assert "vector.shuffle" in conv or fg > 4
    clamp = {"Relu": "arith.cmpf uge", "Clip": "arith.cmpf ule", None: None}[activation]
    if clamp is not None:
        assert [body for body in _kernels(scheduled).values() if clamp in body] == [conv]


def test_narrow_groups_by_diagonals_over_a_batch() -> None:
    """DiagonalGroups' blocks of rows run across images (a batch of 2 of 4 x 6 maps: one block of all 8 rows),
    against onnxruntime."""
    scheduled = _run(*_batch_conv_model(32, 4, (2, 32, 4, 6), [1, 1]))
    assert "__glow_packed_diagonal_gconv_2x3x3x8" in scheduled


@pytest.mark.parametrize(
    ("fg", "k", "stride", "width", "diagonal"),
    [(8, 3, 1, 28, True), (8, 3, 2, 28, True), (4, 3, 1, 56, True), (2, 5, 1, 14, True), (8, 1, 1, 28, False),
     (4, 1, 1, 28, False), (2, 1, 1, 28, False)],
)
def test_diagonal_rule(fg: int, k: int, stride: int, width: int, diagonal: bool) -> None:
    """By diagonals where the input shuffles (FG per filter row and input column) outnumber the rotations and adds
    (2 x (FG - 1) per output vector): every window but 1x1."""
    assert grouped_narrow.by_diagonals(fg, k, k, stride, 1, width) == diagonal


@pytest.mark.parametrize(
    ("c", "size", "k", "group", "dilation", "activation", "bias"),
    [
        (24, 11, 3, 3, 1, "Relu", True),  # RegNetX-200MF's 3 groups of 8: 3 phases, rows of 264 floats
        (40, 27, 3, 20, 1, "Clip", True),  # 20 groups of 2 (5 phases); 27 rows: tiles of 12, 12 and 3
        (24, 13, 5, 6, 2, None, False),  # 6 groups of 4, 5x5, dilation 2, no bias or activation
        (12, 10, 3, 3, 1, "Relu", True),  # 3 groups of 4: fewer channels than a register, a masked last vector
        (24, 12, 1, 3, 1, "Relu", True),  # 1x1: 3 groups of 8
    ],
)
def test_flat_narrow_groups(c: int, size: int, k: int, group: int, dilation: int, activation: str | None,
                            bias: bool) -> None:  # fmt: skip
    """Narrow groups whose channel vectors would leave more than 1/8 of their lanes empty, unit stride
    (grouped_narrow.FlatNarrowGroups): the rows as flat runs of floats, the filter packed as its phases'
    registers [P, KH, KW, FG, 16], one kernel with the bias and activation, against onnxruntime."""
    model, feeds = _conv_model(c, c, size, k, 1, group, dilation=dilation, bias=bias, activation=activation)
    scheduled = _run(model, feeds)
    fg, phases = c // group, np.lcm(c, 16) // 16
    assert re.findall(r"memref.global [^@]*@__glow_packed_flat_gconv_(\w+) : memref<(\w+)xf32>", scheduled)[0] == (
        f"{k}x{k}x{fg}", f"{phases}x{k}x{k}x{fg}x16")
    assert "__glow_packed_gconv" not in scheduled and "__glow_packed_narrow_gconv" not in scheduled
    assert "memref.collapse_shape" in scheduled
    [conv] = _conv_kernels(scheduled)
    if activation is not None:
        clamp = {"Relu": "arith.cmpf uge", "Clip": "arith.cmpf ule"}[activation]
        assert [body for body in _kernels(scheduled).values() if clamp in body] == [conv]


def test_flat_narrow_groups_batch_and_row_stride() -> None:
    """FlatNarrowGroups over a batch of 2, with stride 2 down the rows (1 along them), against onnxruntime."""
    scheduled = _run(*_batch_conv_model(24, 3, (2, 24, 9, 11), [2, 1]))
    assert "__glow_packed_flat_gconv_3x3x8" in scheduled


def _batch_conv_model(c: int, group: int, shape: tuple[int, ...], strides: list[int]
                      ) -> tuple[ModelProto, dict[str, np.ndarray]]:  # fmt: skip
    """A 3x3 grouped Conv ("same" pads, no bias) of `c` channels on input `shape`, and its feeds."""
    w = (rng.standard_normal((c, c // group, 3, 3)) / 3).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w"], ["y"], group=group, pads=[1] * 4, strides=strides)
    graph = helper.make_graph([node], "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w")])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model, {"x": rng.standard_normal(shape).astype(np.float32)}


@pytest.mark.parametrize(
    ("cg", "fg", "groups", "narrow"),
    [(4, 4, 32, True), (8, 8, 7, True), (8, 8, 3, False), (4, 4, 9, False), (16, 16, 8, False), (8, 4, 8, False)],
)
def test_narrow_group_rule(cg: int, fg: int, groups: int, narrow: bool) -> None:
    """Groups of 2, 4 or 8 input and output channels whose vectors are at least 7/8 busy."""
    assert grouped_narrow.narrow_groups(cg, fg, groups) == narrow


def test_narrow_group_tiles_fit_the_registers() -> None:
    # Accumulators + input columns + filter vectors + the shuffled input within 32 registers.
    assert [grouped_narrow.narrow_pixels(s, k, d) for s, k, d in [(1, 3, 1), (2, 3, 1), (1, 5, 1), (1, 3, 2)]] == [
        13, 9, 11, 12]


@pytest.mark.parametrize(
    ("c", "f", "group", "tiles", "tile"),
    [
        (96, 64, 2, 2, "48x32"),  # 48 input and 32 output channels per group
        (240, 60, 5, 5, "48x12"),  # 12 outputs per group, its own tile (12 lanes masked); odd, so not across groups
    ],
)
def test_grouped_1x1_tiles_are_pointwise_kernels(c: int, f: int, group: int, tiles: int, tile: str) -> None:
    """A grouped 1x1 convolution with a constant filter: each group is pointwise_recipes.py's kernel on its
    channel slices, the ReLU in it (narrow groups are not packed together: the kernel masks their vectors), where
    its empty lanes cost less than the transposes of PixelGroups (below)."""
    model, feeds = _conv_model(c, f, 7, 1, 1, group)
    scheduled = _run(model, feeds)
    assert re.findall(r"memref.global [^@]*@__glow_packed_pointwise_(\d+x\d+)", scheduled) == [tile] * tiles
    assert "__glow_packed_gconv" not in scheduled and "glow.grouped_conv" not in scheduled
    kernels = _kernels(scheduled)
    fma = {name for name, body in kernels.items() if "vector.fma" in body}
    assert fma and {name for name, body in kernels.items() if "arith.cmpf uge" in body} == fma


@pytest.mark.parametrize(
    ("c", "f", "size", "group", "activation", "bias"),
    [
        (240, 60, 9, 3, "Relu", True),  # ShuffleNet v1 g3: 80 -> 20 per group; 81 pixels, tiles of 16
        (96, 60, 4, 3, "Clip", True),  # 32 -> 20, one tile of 16 pixels
        (128, 18, 9, 2, None, False),  # 64 -> 9: tiles of 32 pixels (two vectors), the last of 17
        (512, 72, 5, 2, "Relu", True),  # 256 -> 36: two passes of 18 output channels over one scratch block
    ],
)
def test_grouped_1x1_along_pixels(c: int, f: int, size: int, group: int, activation: str | None, bias: bool) -> None:
    """A grouped 1x1 convolution whose groups fill channel vectors poorly (grouped_pointwise.PixelGroups): the
    filter packed per group, one helper per group on registers of 16 pixels, input and output transposed in
    registers, the bias and activation in it, against onnxruntime."""
    model, feeds = _conv_model(c, f, size, 1, 1, group, activation=activation, bias=bias)
    scheduled = _run(model, feeds)
    cg, fg = c // group, f // group
    assert re.findall(r"memref.global [^@]*@__glow_packed_pixel_groups_(\w+) : memref<(\w+)xf32>", scheduled) == [
        (f"{cg}x{fg}", f"{group}x{cg}x{fg}")]
    assert "__glow_packed_pointwise" not in scheduled and "glow.grouped_conv" not in scheduled
    [helper_] = [body for name, body in _kernels(scheduled).items() if name.startswith("__glow_pixel_groups")]
    assert f"memref.alloca() {{alignment = 64 : i64}} : memref<{-(-cg // 16) * 16}x" in helper_
    assert "vector.shuffle" in helper_ and "vector.broadcast" in helper_
    clamp = {"Relu": "arith.cmpf uge", "Clip": "arith.cmpf ule", None: None}[activation]
    if clamp is not None:
        assert [body for body in _kernels(scheduled).values() if clamp in body] == [helper_]


@pytest.mark.parametrize(
    ("cg", "fg", "along"),
    [(80, 20, True), (64, 9, True), (256, 36, True), (48, 12, False), (40, 40, False), (24, 24, False),
     (16, 16, False)],
)
def test_along_pixels_rule(cg: int, fg: int, along: bool) -> None:
    """Along the pixels where the pointwise kernel's empty lanes cost more than the transposes' shuffles."""
    assert grouped_pointwise.pays(cg, fg) == along


@pytest.mark.parametrize(
    ("bias", "activation", "filter_input"), [(False, None, False), (True, "Clip", False), (True, "Relu", True)]
)
def test_grouped_conv_epilogues_and_filter_inputs(bias: bool, activation: str | None, filter_input: bool) -> None:
    model, feeds = _conv_model(32, 48, 9, 3, 1, 4, bias=bias, activation=activation, filter_input=filter_input)
    scheduled = _run(model, feeds)
    # A filter given at run time is read in place (no packed copy), one group of 8 inputs per tile.
    assert ("__glow_packed_gconv" not in scheduled) == filter_input
    assert len(_conv_kernels(scheduled)) == 1


@pytest.mark.parametrize(
    ("channels", "size", "k", "stride", "bias", "activation"),
    [
        (88, 14, 3, 1, True, "Relu"),  # 64 + 16 + 8 channels
        (40, 12, 7, 1, True, None),  # ConvNeXt: no activation
        (60, 12, 5, 2, True, "Clip"),
        (12, 9, 3, 1, False, "Relu"),
        (96, 28, 3, 2, True, "Relu"),
    ],
)
def test_depthwise_fuses_bias_and_activation(
    channels: int, size: int, k: int, stride: int, bias: bool, activation: str | None
) -> None:
    model, feeds = _conv_model(channels, channels, size, k, stride, channels, bias=bias, activation=activation)
    scheduled = _run(model, feeds)
    [conv] = _conv_kernels(scheduled)
    clamp = {"Relu": "arith.cmpf uge", "Clip": "arith.cmpf ule", None: None}[activation]
    if clamp is not None:
        # The activation runs in the convolution kernel only: no pass of its own over the output.
        assert clamp in conv
        assert sum(clamp in body for body in _kernels(scheduled).values()) == 1


@pytest.mark.parametrize(
    ("c", "f", "size", "group", "activation", "bias"),
    [
        (384, 96, 9, 8, "Relu", True),  # ShuffleNet v1 g8: 48 -> 12, 2 sets of 4; 81 pixels: a block of 60, 21 left
        (272, 68, 5, 4, "Clip", True),  # 68 -> 17: 4 input channels in the last block, a register of one output each
        (180, 120, 4, 6, None, False),  # 6 groups of 30 -> 20: 3 sets of 2, 14 input channels in the last block
        (96, 144, 3, 12, "Relu", True),  # 12 groups of 8 -> 12: 3 sets of 4, one partial block of input channels
    ],
)
def test_grouped_1x1_across_groups(c: int, f: int, size: int, group: int, activation: str | None, bias: bool) -> None:
    """An even number of groups whose outputs fill channel vectors poorly (grouped_interleaved.InterleavedGroups):
    the filter packed per set of groups as [sets, CG, registers, 16], a helper per block of pixels whose tiles'
    input is interleaved in two buffers, the bias and activation in it, against onnxruntime."""
    model, feeds = _conv_model(c, f, size, 1, 1, group, activation=activation, bias=bias)
    scheduled = _run(model, feeds)
    cg, fg = c // group, f // group
    sets = group // grouped_interleaved.set_size(group)
    count = grouped_interleaved.registers(group // sets, fg)
    packed = r"memref.global [^@]*@__glow_packed_interleaved_groups_(\w+) : memref<(\w+)xf32>"
    assert re.findall(packed, scheduled) == [(f"{group}x{cg}x{fg}", f"{sets}x{cg}x{count}x16")]
    assert "__glow_packed_pointwise" not in scheduled and "__glow_packed_pixel_groups" not in scheduled
    helpers = [body for name, body in _kernels(scheduled).items() if name.startswith("__glow_interleaved_groups")]
    tile = min(grouped_interleaved.PIXEL_TILE, grouped_interleaved.MAX_ACCUMULATORS // count)
    assert helpers and all(f"memref<2x{tile}x{-(-cg // 16) * 16 * group // sets}xf32>" in body for body in helpers)
    # The bias registers gathered per set (lane j x S + g: output j of group g).
    assert not bias or all("vector.gather" in body for body in helpers)
    clamp = {"Relu": "arith.cmpf uge", "Clip": "arith.cmpf ule", None: None}[activation]
    if clamp is not None:
        assert {body for body in _kernels(scheduled).values() if clamp in body} == set(helpers)


@pytest.mark.parametrize(
    ("groups", "cg", "fg", "across"),
    [(8, 48, 12, True), (4, 68, 17, True), (6, 30, 20, True), (8, 96, 24, True), (3, 80, 20, False),
     (8, 192, 48, False), (2, 100, 25, False), (4, 136, 34, False), (2, 256, 36, False)],
)
def test_across_groups_rule(groups: int, cg: int, fg: int, across: bool) -> None:
    """Across the groups where G is even, the pointwise kernel's registers hold the groups' outputs more poorly,
    a pixel's outputs of a set fit MAX_REGISTERS registers (4 groups of 34: 9) and the set's filter L1 (2 groups
    of 256 -> 36: 80 KB)."""
    assert grouped_interleaved.interleaves(groups, cg, fg) == across


@pytest.mark.skipif(openmp.runtime_library() is None, reason="intel-openmp is not installed")
def test_across_groups_blocks_split_across_threads() -> None:
    """The kernel's loop over blocks of pixels is the one glow-cpu-parallelize splits (each helper call's tiles
    and sets stay on its thread, the overlapping last tile included): outputs bitwise equal on 1 and 2 threads."""
    model, feeds = _conv_model(384, 96, 28, 1, 1, 8)
    outputs = {}
    for threads in (1, 2):
        with glow_mlir.compile(import_model(model), cache=False, keep_ir=True, threads=threads) as compiled:
            outputs[threads] = compiled.run(feeds)["y"]
            if threads > 1:
                functions = re.split(r"(?=func\.func )", compiled.ir(parallel.PASS_NAME))
                [kernel] = [f for f in functions if "call @__glow_interleaved_groups" in f]
                assert "omp.parallel" in kernel
    np.testing.assert_array_equal(outputs[2], outputs[1])
