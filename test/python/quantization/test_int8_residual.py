"""glow-cpu-int8's residual rule (int8_residual.py): ResNet's blocks, quantized, compute `add(conv, shortcut)`
and the relu and quantization after it in the int8 convolution's epilogue (glow.cpu_int8_conv_nhwc_add), bit
for bit as the reference interpreter's chain of float ops."""

from __future__ import annotations

import numpy as np
import pytest

import glow_mlir
from glow_mlir import quantization as quant
from glow_mlir.backends.cpu import int8_rewrite

needs_vnni = pytest.mark.skipif(not int8_rewrite.host_has_vnni(), reason="the host CPU has no avx512_vnni")
rng = np.random.default_rng(1414)


def _conv(g: glow_mlir.Graph, t: glow_mlir.Tensor, o: int, k: int, stride: int, name: str) -> glow_mlir.Tensor:
    w = (rng.standard_normal((o, t.shape[1], k, k)) / np.sqrt(t.shape[1] * k * k)).astype(np.float32)
    return g.convolution(t, g.constant(w), g.constant(rng.standard_normal(o).astype(np.float32)),
                         strides=(stride, stride), pads=(k // 2,) * 4, name=name)  # fmt: skip


def _blocks(channels: int) -> glow_mlir.Graph:
    """A projection block (strided 3x3 body, strided 1x1 shortcut) then an identity block, whose input feeds
    both its body and its add, then a 1x1 head: `channels` not a multiple of 16 gives partial column blocks."""
    g = glow_mlir.Graph("blocks")
    x = g.input("x", (1, 8, 9, 9))
    h = g.relu(_conv(g, x, 12, 3, 1, "stem"))
    body = _conv(g, g.relu(_conv(g, h, 8, 3, 2, "a1")), channels, 1, 1, "a2")
    h = g.relu(g.add(body, _conv(g, h, channels, 1, 2, "short"), name="add1"))
    body = _conv(g, g.relu(_conv(g, h, 8, 3, 1, "b1")), channels, 1, 1, "b2")
    h = g.relu(g.add(h, body, name="add2"))
    g.output("y", _conv(g, h, 4, 1, 1, "head"))
    return g


@needs_vnni
@pytest.mark.parametrize("channels", [16, 20])
@pytest.mark.parametrize("schema", ["asymmetric", "symmetric"])
def test_residual_add_fuses_into_the_epilogue(channels: int, schema: str) -> None:
    g = _blocks(channels)
    feeds = [{"x": rng.standard_normal((1, 8, 9, 9)).astype(np.float32)} for _ in range(3)]
    q = quant.quantize(g, quant.profile(g, feeds[:2]), schema=schema)
    with glow_mlir.compile(q, keep_ir=True, cache=False) as compiled:
        text = compiled.ir("glow-cpu-int8")
        fused = [line for line in text.splitlines() if "glow.cpu_int8_conv_nhwc_add" in line]
        # Both adds; the last block's relu and the head's quantization too (uint8), the first block's output
        # feeding the second's add as well as its body stays f32 with the relu.
        assert len(fused) == 2
        assert all("relu = true" in line for line in fused)
        assert fused[0].endswith("xf32>") and fused[1].endswith("xui8>")
        # The first block's output is quantized for the second's body in one pass of its own, as the image is.
        assert text.count('"glow.cpu_quantize_u8"') == 2 and '"glow.round"' not in text
        for feed in feeds:
            np.testing.assert_array_equal(compiled.run(feed)["y"], glow_mlir.interpret(q, feed)["y"])
