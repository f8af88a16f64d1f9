"""glow-cpu-int8's residual rule (int8_residual.py): ResNet's blocks, quantized, compute `add(conv, shortcut)`
and the relu and quantization after it in the int8 convolution's epilogue (glow.cpu_int8_conv_nhwc_add), bit
for bit as the reference interpreter's chain of float ops."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from mlir import ir

import glow_mlir
from glow_mlir import ops
from glow_mlir import quantization as quant
from glow_mlir.backends.cpu import int8_rewrite
from glow_mlir.context import make_context
from glow_mlir.passes.graph import utils as g
from qdq_models import quantize_static

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


class _QdqBlocks(torch.nn.Module):
    """A stem, a projection block (strided body, 1x1 strided shortcut) and an identity block, then a 1x1 head:
    what onnxruntime's quantize_static writes as add(DQ(Q(conv)), DQ(shortcut)) -> Q, the adds' relus folded
    into their quantization. 20 channels: a partial column block."""

    def __init__(self) -> None:
        super().__init__()
        conv = torch.nn.Conv2d
        self.stem = conv(3, 12, 3, padding=1)
        self.a1, self.a2, self.short = conv(12, 8, 3, stride=2, padding=1), conv(8, 20, 1), conv(12, 20, 1, stride=2)
        self.b1, self.b2 = conv(20, 8, 3, padding=1), conv(8, 20, 1)
        self.head = conv(20, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.stem(x))
        h = torch.relu(self.a2(torch.relu(self.a1(h))) + self.short(h))
        h = torch.relu(h + self.b2(torch.relu(self.b1(h))))
        return self.head(h)


@needs_vnni
def test_imported_qdq_residual_blocks_fuse_into_the_epilogue(tmp_path) -> None:  # noqa: ANN001
    """The imported QDQ model's residual adds reach cpu_int8_conv_nhwc_add: the convolution's Q -> DQ in its
    epilogue (product_scale), the uint8 shortcut read as it is (addend_scale); no f32 add or quantization
    pass is left, and the compiled code equals the reference interpreter on the rewritten graph bit for bit."""
    torch.manual_seed(0)
    shape = (1, 3, 10, 10)
    quantized, _ = quantize_static(_QdqBlocks(), shape, tmp_path, rng, calibration=6)
    with glow_mlir.compile(glow_mlir.import_onnx(quantized), keep_ir=True, cache=False) as compiled:
        text = compiled.ir("glow-cpu-int8")
        fused = [line for line in text.splitlines() if "glow.cpu_int8_conv_nhwc_add" in line]
        assert len(fused) == 2
        assert not any("scale = 0.000000e+00" in line for line in fused)
        assert all("xui8>) -> tensor" in line and line.endswith("xui8>") for line in fused)
        assert '"glow.add"' not in text and '"glow.round"' not in text
        rewritten = ir.Module.parse(text, make_context())
        for seed in range(3):
            feed = {"x": np.random.default_rng(seed).standard_normal(shape).astype(np.float32)}
            np.testing.assert_array_equal(compiled.run(feed)["y"], glow_mlir.interpret(rewritten, feed)["y"])


class _QdqFire(torch.nn.Module):
    """SqueezeNet's fire module twice: a 1x1 squeeze, then 1x1 and 3x3 expands whose relu outputs are
    concatenated; quantize_static requantizes the concat of their two uint8 tensors (DQ, DQ -> Concat -> Q)."""

    def __init__(self) -> None:
        super().__init__()
        conv = torch.nn.Conv2d
        self.stem = conv(3, 16, 3, padding=1)
        self.fires = torch.nn.ModuleList(
            torch.nn.ModuleList([conv(c, 8, 1), conv(8, 16, 1), conv(8, 16, 3, padding=1)]) for c in (16, 32)
        )
        self.head = conv(32, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.stem(x))
        for squeeze, expand1, expand3 in self.fires:
            s = torch.relu(squeeze(h))
            h = torch.cat([torch.relu(expand1(s)), torch.relu(expand3(s))], 1)
        return self.head(h)


@needs_vnni
def test_imported_qdq_concat_is_quantized_in_nhwc(tmp_path) -> None:  # noqa: ANN001
    """A requantized concat of NHWC convolutions' outputs is quantized in NHWC (glow-sink-transpose moves the
    transposes through the concat and the elementwise cpu_quantize_u8): no transpose is left but the image's and
    the output's, where quantizing it in NCHW kept a pair around each concat's cpu_quantize_u8."""
    torch.manual_seed(0)
    shape = (1, 3, 10, 10)
    quantized, _ = quantize_static(_QdqFire(), shape, tmp_path, rng, calibration=6)
    with glow_mlir.compile(glow_mlir.import_onnx(quantized), keep_ir=True, cache=False) as compiled:
        text = compiled.ir("glow-lower")
        assert text.count('"glow.cpu_quantize_u8"') == 3 and text.count('"glow.concat"') == 2
        assert text.count('"glow.transpose"') == 2
        rewritten = ir.Module.parse(compiled.ir("glow-cpu-int8"), make_context())
        for seed in range(3):
            feed = {"x": np.random.default_rng(seed).standard_normal(shape).astype(np.float32)}
            np.testing.assert_array_equal(compiled.run(feed)["y"], glow_mlir.interpret(rewritten, feed)["y"])


class _QdqExcite(torch.nn.Module):
    """MobileNetV3's block twice: a hard-swished expansion, a depthwise layer, a squeeze-and-excite gate (mean,
    two 1x1 convolutions, hard sigmoid, product) and a projection; quantize_static puts a QuantizeLinear and
    DequantizeLinear after every float op between the convolutions (the float islands)."""

    def __init__(self) -> None:
        super().__init__()
        conv = torch.nn.Conv2d
        self.stem = conv(3, 16, 3, padding=1)
        self.blocks = torch.nn.ModuleList(
            torch.nn.ModuleList([conv(16, 32, 1), conv(32, 32, 3, padding=1, groups=32), conv(32, 8, 1),
                                 conv(8, 32, 1), conv(32, 16, 1)])  # fmt: skip
            for _ in range(2)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.stem(x))
        for expand, depthwise, reduce, restore, project in self.blocks:
            e = torch.nn.functional.hardswish(depthwise(torch.nn.functional.hardswish(expand(h))))
            gate = torch.nn.functional.hardsigmoid(restore(torch.relu(reduce(e.mean((2, 3), keepdim=True)))))
            h = h + project(e * gate)
        return h


@needs_vnni
def test_imported_qdq_float_islands_stay_elementwise_in_nhwc(tmp_path) -> None:  # noqa: ANN001
    """A uint8 quantization that is only read back as f32 (a float island's: the hard swish, the excitation's
    mean, gate and product) stays elementwise graph ops, which glow-quant-fold-convert-pairs folds into their
    neighbours, and glow-sink-transpose moves the layout transposes through them, the reductions and
    cpu_quantize_u8 until they cancel: the whole block runs in NHWC. At 7fcc0ea each island was a
    cpu_quantize_u8 of its own and the excitation stayed NCHW between transposes (6 left in the graph).
    The compiled code equals the reference interpreter on glow-cpu-int8's graph bit for bit."""
    torch.manual_seed(0)
    shape = (1, 3, 10, 10)
    quantized, _ = quantize_static(_QdqExcite(), shape, tmp_path, rng, calibration=6)
    with glow_mlir.compile(glow_mlir.import_onnx(quantized), keep_ir=True, cache=False) as compiled:
        lowered = ir.Module.parse(compiled.ir("glow-lower"), make_context())
        found = [op for op in ops.walk_ops(lowered.operation) if op.name.startswith("glow.")]
        names = [op.name for op in found]
        assert names.count("glow.cpu_int8_depthwise_nhwc") == 2 and names.count("glow.transpose") == 2
        passes = [op for op in found if op.name == "glow.cpu_quantize_u8"]
        # The quantizations left are those int8 products read (the excitation's mean, the gated product, the
        # residual sums): 7 of the 11 passes at 7fcc0ea.
        assert len(passes) == 7
        assert all(any(u.name != "glow.convert_to" for u in g.users(q.results[0])) for q in passes)
        rewritten = ir.Module.parse(compiled.ir("glow-cpu-int8"), make_context())
        for seed in range(3):
            feed = {"x": np.random.default_rng(seed).standard_normal(shape).astype(np.float32)}
            np.testing.assert_array_equal(compiled.run(feed)["y"], glow_mlir.interpret(rewritten, feed)["y"])
