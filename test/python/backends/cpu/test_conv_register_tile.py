"""The direct convolution schedule's register tile (conv_recipes.register_tile): up to ACCUMULATORS accumulators,
and with the tile's filter vectors and the broadcast input within AVX-512's REGISTERS, the most output lanes per
step; ResNet's 3x3 layers get 14 pixels x 32 channels (28 accumulators) where 4 x 64 (16) was the rule, an input
beyond L2_INPUT_BYTES LARGE_INPUT_ACCUMULATORS, and the scheduled kernels have those FMAs and compute what
onnxruntime computes."""

from __future__ import annotations

import re

import numpy as np
import onnxruntime
import pytest

import glow_mlir
from glow_mlir.backends.cpu.conv_recipes import (
    ACCUMULATORS,
    CHANNEL_TILES,
    LANES,
    LARGE_INPUT_ACCUMULATORS,
    REGISTERS,
    SPLIT_STEPS,
    register_tile,
    width_parts,
)
from glow_mlir.frontends.onnx import import_model
from onnx_check import conv_model

rng = np.random.default_rng(0)


def _fits(pixels: int, width: int, accumulators: int) -> bool:
    vectors = -(-width // LANES)
    return pixels * vectors <= accumulators and pixels * vectors + vectors + 1 <= REGISTERS


@pytest.mark.parametrize("large_input", [False, True])
@pytest.mark.parametrize("channels", [8, 16, 24, 32, 40, 48, 64, 96, 128, 512, 2048])
def test_register_tile_computes_the_most_lanes_that_fit(channels: int, large_input: bool) -> None:
    accumulators = LARGE_INPUT_ACCUMULATORS if large_input else ACCUMULATORS
    widths = [w for w in CHANNEL_TILES if channels % w == 0]
    for ow in range(1, 120):
        pixels, width = register_tile(ow, channels, large_input)
        assert ow % pixels == 0 and channels % width == 0, (ow, channels)
        assert _fits(pixels, width, accumulators), (ow, channels, pixels, width)
        # No tile that fits computes more lanes, and none as many with fewer sweeps of the input (wider).
        others = [(p * w, w) for w in widths for p in range(1, ow + 1) if ow % p == 0 and _fits(p, w, accumulators)]
        assert (pixels * width, width) >= max(others, default=(0, 0)), (ow, channels, pixels, width)


# (OW, channels) of ResNet's 3x3 layers -> (pixels, channels) of the register tile.
RESNET = {(56, 64): (14, 32), (28, 128): (14, 32), (14, 256): (14, 32), (7, 512): (7, 32), (6, 64): (6, 64)}
# Inputs beyond L2_INPUT_BYTES (ResNet-50 at batch 8): the 16-accumulator tiles.
RESNET_LARGE_INPUT = {(56, 64): (4, 64), (28, 128): (4, 64), (14, 256): (7, 32), (7, 512): (7, 32)}


@pytest.mark.parametrize("shape", sorted(RESNET))
def test_resnet_register_tiles(shape: tuple[int, int]) -> None:
    assert register_tile(*shape) == RESNET[shape]
    if shape in RESNET_LARGE_INPUT:
        assert register_tile(*shape, large_input=True) == RESNET_LARGE_INPUT[shape]


# (C, H, F) of a 5x5 convolution with bias and ReLU -> its kernel's FMAs per step (pixels) and their lanes.
# (A 3x3 one of these shapes is the Winograd kernel's, winograd_recipes.py.)
KERNELS = {
    # 60 x 60 x 64 padded input floats (900 KiB): 14 pixels x 32 channels.
    "56x56_64_to_64": ((64, 56, 64), (14, 32)),
    # 60 x 60 x 256 (3.5 MiB) is swept once per channel tile: one tile of 64, 4 pixels.
    "56x56_256_to_64": ((256, 56, 64), (4, 64)),
}


@pytest.mark.parametrize("case", sorted(KERNELS))
def test_kernel_has_the_register_tile(case: str) -> None:
    """The innermost step of the kernel is one FMA per pixel of the tile's channels, and the result is
    onnxruntime's."""
    (c, h, f), (pixels, lanes) = KERNELS[case]
    model = conv_model(c, h, h, f, 5, 1, "relu")
    x = rng.standard_normal((1, c, h, h)).astype(np.float32)
    with glow_mlir.compile(import_model(model), keep_ir=True) as compiled:
        scheduled = compiled.ir("glow-cpu-schedule")
        [got] = compiled.run({"x": x}).values()
    [kernel] = [f for f in re.split(r"(?=func\.func)", scheduled) if "vector.fma" in f]
    assert re.findall(r"vector\.fma .*: (vector<\d+xf32>)", kernel) == [f"vector<{lanes}xf32>"] * pixels, kernel
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got, session.run(None, {"x": x})[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("channels", [32, 64, 96, 256])
def test_width_parts_cover_the_row_in_fewer_steps(channels: int) -> None:
    """A row is one part at register_tile's tiles, or two contiguous parts at one channel tile, each with a tile
    that divides it and fits, together in at most SPLIT_STEPS of the whole row's steps; rows with a wide divisor
    (ResNet's and MobileNet's 7 to 224) stay whole, a prime one is split."""
    for ow in range(1, 120):
        f_tile, parts = width_parts(ow, channels)
        assert [p[0] for p in parts] == [0, *(p[0] + p[1] for p in parts[:-1])] and sum(p[1] for p in parts) == ow
        assert len(parts) <= 2 and channels % f_tile == 0
        for _, pixels, tile in parts:
            assert pixels % tile == 0 and _fits(tile, f_tile, ACCUMULATORS), (ow, parts)
        if len(parts) == 2:
            whole_tile, whole_f = register_tile(ow, channels)
            split = sum(pixels // tile for _, pixels, tile in parts) * (channels // f_tile)
            assert split <= SPLIT_STEPS * (ow // whole_tile) * (channels // whole_f), (ow, parts)
    for ow in (7, 14, 28, 56, 112, 224):
        assert len(width_parts(ow, channels)[1]) == 1
    assert len(width_parts(61, channels)[1]) == 2


def test_prime_row_runs_in_two_parts() -> None:
    """A 5x5 convolution on rows of 31 pixels (64 channels: one pixel per tile whole) runs as two kernels, 6 and
    5 pixels per step, on the row's first 6 and last 25 pixels, and computes what onnxruntime computes."""
    model = conv_model(64, 9, 31, 64, 5, 1, "relu")
    x = rng.standard_normal((1, 64, 9, 31)).astype(np.float32)
    with glow_mlir.compile(import_model(model), keep_ir=True) as compiled:
        scheduled = compiled.ir("glow-cpu-schedule")
        [got] = compiled.run({"x": x}).values()
    kernels = [f for f in re.split(r"(?=func\.func)", scheduled) if "vector.fma" in f]
    assert sorted(len(re.findall(r"vector\.fma .*: vector<64xf32>", k)) for k in kernels) == [5, 6], kernels
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got, session.run(None, {"x": x})[0], rtol=1e-4, atol=1e-4)
