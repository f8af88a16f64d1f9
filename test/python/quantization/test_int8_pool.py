"""glow-cpu-int8's pooling rule (int8_pool.py): a max pool before a uint8 quantization pools the uint8 activation,
which the convolution before it writes in its epilogue, bit for bit as the reference interpreter's float pool
between the convolution and the quantization."""

from __future__ import annotations

import numpy as np
import pytest

import glow_mlir
from glow_mlir import quantization as quant
from glow_mlir.backends.cpu import int8_rewrite

needs_vnni = pytest.mark.skipif(not int8_rewrite.host_has_vnni(), reason="the host CPU has no avx512_vnni")
rng = np.random.default_rng(1415)


def _stem(channels: int, hw: int) -> glow_mlir.Graph:
    """conv 3x3 -> relu -> max pool 3x3 stride 2 pad 1 -> conv 1x1: ResNet's stem; `channels` not a multiple of 64
    leaves a masked vector of channels, and an odd `hw` windows clipped at the bottom and right."""
    g = glow_mlir.Graph("stem")
    x = g.input("x", (1, 3, hw, hw))
    w = (rng.standard_normal((channels, 3, 3, 3)) / np.sqrt(27)).astype(np.float32)
    h = g.relu(g.convolution(x, g.constant(w), g.constant(rng.standard_normal(channels).astype(np.float32)),
                             pads=(1, 1, 1, 1), name="stem"))  # fmt: skip
    h = g.max_pool(h, kernels=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1), name="pool")
    w2 = (rng.standard_normal((8, channels, 1, 1)) / np.sqrt(channels)).astype(np.float32)
    g.output("y", g.convolution(h, g.constant(w2), g.constant(np.zeros(8, np.float32)), name="head"))
    return g


@needs_vnni
@pytest.mark.parametrize(("channels", "hw"), [(64, 8), (70, 9), (12, 7)])
def test_max_pool_runs_on_the_uint8_activation(channels: int, hw: int) -> None:
    g = _stem(channels, hw)
    feeds = [{"x": rng.standard_normal((1, 3, hw, hw)).astype(np.float32)} for _ in range(3)]
    q = quant.quantize(g, quant.profile(g, feeds[:2]))
    with glow_mlir.compile(q, keep_ir=True, cache=False) as compiled:
        text = compiled.ir("glow-cpu-int8")
        [pool] = [line for line in text.splitlines() if "glow.cpu_max_pool_u8_nhwc" in line]
        assert "glow.max_pool" not in text and '"glow.round"' not in text
        # The stem convolution writes the uint8 activation the pool reads.
        [stem] = [line for line in text.splitlines() if "glow.cpu_int8_conv_nhwc" in line and "relu = true" in line]
        assert stem.endswith("xui8>")
        for feed in feeds:
            np.testing.assert_array_equal(compiled.run(feed)["y"], glow_mlir.interpret(q, feed)["y"])
