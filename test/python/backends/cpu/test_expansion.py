"""An inverted residual's 1x1 expansion and depthwise convolution as one kernel (glow-cpu-fuse-expansion,
expansion.py; the kernel in expansion_recipes.py) over the class, against onnxruntime: channel counts that fill
the ring's blocks of four registers, leave blocks of two, one whole register, a partial one of at most 8 lanes or
more than 8 (masked); 3x3 to 7x7 windows, stride 1 and 2, dilation 2, asymmetric ("same") padding and none, odd
and non-square maps, maps wide enough that the ring holds one register and one band row, batch 2; every kind of
activation on either convolution (SiLU and HardSwish as exporters write them) and none, with and without the
expansion's bias. Then what must not fuse, and the thread split."""

from __future__ import annotations

import re

import numpy as np
import onnxruntime
import pytest
from onnx import ModelProto, helper

import glow_mlir
from glow_mlir.backends.cpu.expansion_recipes import RING_BYTES
from glow_mlir.frontends.onnx import import_model
import onnx_check

rng = np.random.default_rng(0)


def _activation(kind: str | None, src: str, dst: str) -> tuple[list, dict[str, np.ndarray]]:
    """The nodes applying `kind` to `src` into `dst`: SiLU as PyTorch exports nn.SiLU (Sigmoid, Mul), the others
    as onnx_check.activation_node writes them (Clip to [0, 6], as ReLU6)."""
    if kind is None:
        return [helper.make_node("Identity", [src], [dst])], {}
    if kind == "SiLU":
        return [helper.make_node("Sigmoid", [src], [f"{dst}_s"]), helper.make_node("Mul", [src, f"{dst}_s"], [dst])], {}
    node, bounds = onnx_check.activation_node(kind, src, dst, clip=(0.0, 6.0))
    return [node], bounds


def _block(cin: int, e: int, hw: tuple[int, int], k: int, stride: int, dilation: int, pads: list[int] | None,
           batch: int, bias: bool, act1: str | None, act2: str | None,
           extra_user: bool = False) -> ModelProto:  # fmt: skip
    """x -> Conv 1x1 (cin -> e) -> act1 -> depthwise Conv k x k -> act2 -> y; with `extra_user`, the expanded
    map is also an output."""
    inits = {"w1": (rng.standard_normal((e, cin, 1, 1)) / np.sqrt(cin)).astype(np.float32),
             "w2": (rng.standard_normal((e, 1, k, k)) / k).astype(np.float32),
             "b2": rng.uniform(-0.5, 0.5, e).astype(np.float32)}  # fmt: skip
    if bias:
        inits["b1"] = rng.uniform(-0.5, 0.5, e).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1", *(["b1"] if bias else [])], ["e"], kernel_shape=[1, 1])]
    first, bounds = _activation(act1, "e", "a")
    nodes += first
    inits |= bounds
    if pads is None:
        pads = [dilation * (k // 2)] * 4
    nodes.append(helper.make_node("Conv", ["a", "w2", "b2"], ["d"], kernel_shape=[k, k], strides=[stride] * 2,
                                  pads=pads, dilations=[dilation] * 2, group=e))  # fmt: skip
    second, bounds = _activation(act2, "d", "y")
    nodes += second
    inits |= bounds
    outputs = ["y", "a"] if extra_user else ["y"]
    return onnx_check.model(nodes, {"x": np.zeros((batch, cin, *hw), np.float32)}, outputs, inits)


CASES = [
    # cin, e, (h, w), k, stride, dilation, pads, batch, bias, act1, act2
    (16, 96, (28, 28), 3, 2, 1, None, 1, True, "Clip", "Clip"),  # MobileNetV2's down block: ring of 4 registers
    (24, 144, (14, 13), 3, 1, 1, None, 2, True, "Relu", None),  # odd map, batch 2; 128 + one register
    (40, 72, (12, 12), 5, 2, 1, None, 1, True, "SiLU", "SiLU"),  # 5x5; 64 + a partial register of 8
    (20, 88, (9, 30), 3, 1, 2, None, 1, False, "HardSwish", "Relu"),  # dilation 2, no expansion bias
    (8, 40, (10, 7), 7, 1, 1, None, 1, True, None, "Sigmoid"),  # 7x7, rows shorter than a tile
    (32, 12, (9, 9), 3, 1, 1, None, 1, True, "LeakyRelu", "Tanh"),  # only a partial register, masked
    (16, 8, (20, 20), 3, 2, 1, [0, 0, 1, 1], 1, True, "Relu", "Relu"),  # 8 lanes; TensorFlow's "same" at stride 2
    (3, 32, (112, 112), 3, 2, 1, None, 1, True, "Clip", None),  # a wide map: a ring of one register
    (24, 48, (11, 11), 3, 1, 1, [0, 0, 0, 0], 1, True, "Relu", "Relu"),  # no padding: the 1x1 writes no border
    # Windows over maps not much larger (EfficientNet's and MixNet's last stages at low resolution): the tiles
    # skip the ring's zero rows and columns.
    (32, 64, (7, 7), 5, 1, 1, None, 1, True, "SiLU", "SiLU"),  # 5x5 on 7x7
    (16, 48, (4, 4), 7, 1, 1, None, 2, True, "Relu", None),  # 7x7 on 4x4, batch 2
    (16, 40, (9, 9), 9, 2, 1, [3, 4, 5, 2], 1, False, "Relu", "Relu"),  # 9x9 stride 2, asymmetric pads
    (8, 32, (6, 6), 5, 1, 2, None, 1, True, "Clip", "Clip"),  # dilation 2 over a 6x6 map
]


@pytest.mark.parametrize(("cin", "e", "hw", "k", "stride", "dilation", "pads", "batch", "bias", "act1", "act2"),
                         CASES)  # fmt: skip
def test_expansion_kernel(cin: int, e: int, hw: tuple[int, int], k: int, stride: int, dilation: int,
                          pads: list[int] | None, batch: int, bias: bool, act1: str | None,
                          act2: str | None) -> None:  # fmt: skip
    model = _block(cin, e, hw, k, stride, dilation, pads, batch, bias, act1, act2)
    x = rng.standard_normal((batch, cin, *hw)).astype(np.float32)
    with glow_mlir.compile(import_model(model), keep_ir=True) as compiled:
        fused = compiled.ir("glow-cpu-fuse-expansion")
        scheduled = compiled.ir("glow-cpu-schedule")
        got = compiled.run({"x": x})["y"]
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    [want] = session.run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # One instruction, one kernel: no convolution left for loops, no buffer of the expanded map, and rings of
    # at most RING_BYTES on the helpers' stacks (the wide map's: one register, one band row).
    assert fused.count("glow_ir.cpu_expand_depthwise_nhwc") == 1 and "glow_ir.cpu_conv_nhwc" not in fused
    assert "linalg.conv" not in scheduled and "linalg.depthwise" not in scheduled and "memref.alloc(" not in scheduled
    rings = re.findall(r"memref\.alloca\(\) \{alignment = 64 : i64\} : memref<1x(\d+)x(\d+)x(\d+)xf32>", scheduled)
    assert rings and all(int(np.prod([int(d) for d in ring])) * 4 <= RING_BYTES for ring in rings)
    # A filter read by the tiles (5x5 and larger) runs the filter rows that read the ring's values.
    assert ("arith.minsi" in scheduled) == (k >= 5)


def test_expanded_map_read_elsewhere_is_not_fused() -> None:
    """The expanded map is also an output: it must be a buffer, so the two convolutions stay two kernels."""
    model = _block(8, 32, (10, 10), 3, 1, 1, None, 1, True, "Relu", "Relu", extra_user=True)
    x = rng.standard_normal((1, 8, 10, 10)).astype(np.float32)
    with glow_mlir.compile(import_model(model), keep_ir=True) as compiled:
        assert "cpu_expand_depthwise_nhwc" not in compiled.ir("glow-cpu-fuse-expansion")
        got = compiled.run({"x": x})
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for name, want in zip(("y", "a"), session.run(None, {"x": x}), strict=True):
        np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-5)


def test_arena_loses_the_expanded_map() -> None:
    """Fused, the arena holds the block's input and output only, not the padded 28x28x96 map (~330 KB)."""
    model = _block(16, 96, (28, 28), 3, 2, 1, None, 1, True, "Clip", "Clip")
    with glow_mlir.compile(import_model(model), cache=False) as compiled:
        assert compiled.report["arena_bytes"] < 30 * 30 * 96 * 4


@pytest.mark.parametrize("batch", [1, 2])
def test_threads_split_the_blocks(batch: int) -> None:
    """The (channel block, image) calls each have a ring of their own: split across threads, the output is the
    one-thread output bit for bit."""
    model = _block(24, 144, (15, 15), 3, 2, 1, None, batch, True, "Clip", "Clip")
    x = rng.standard_normal((batch, 24, 15, 15)).astype(np.float32)
    outputs = []
    for threads in (1, 2, 3):
        with glow_mlir.compile(import_model(model), threads=threads, cache=False, keep_ir=True) as compiled:
            outputs.append(compiled.run({"x": x})["y"])
            if threads > 1:
                assert "omp.parallel" in compiled.ir("glow-cpu-parallelize")
    assert all(np.array_equal(outputs[0], o) for o in outputs[1:])


def test_computed_expansion_bias_lives_through_the_kernel() -> None:
    """The expansion's bias computed at run time (Abs of an input): the fused instruction reads it where the
    depthwise convolution was, so its buffer must live until then (its dealloc moves after the instruction)."""
    nodes = [helper.make_node("Abs", ["b"], ["b_abs"]),
             helper.make_node("Conv", ["x", "w1", "b_abs"], ["e"], kernel_shape=[1, 1]),
             helper.make_node("Relu", ["e"], ["a"]),
             helper.make_node("Conv", ["a", "w2", "b2"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4,
                              group=32)]  # fmt: skip
    inits = {"w1": (rng.standard_normal((32, 8, 1, 1)) / 3).astype(np.float32),
             "w2": (rng.standard_normal((32, 1, 3, 3)) / 3).astype(np.float32),
             "b2": rng.uniform(-0.5, 0.5, 32).astype(np.float32)}  # fmt: skip
    feeds = {"x": rng.standard_normal((1, 8, 20, 20)).astype(np.float32),
             "b": rng.standard_normal(32).astype(np.float32)}  # fmt: skip
    model = onnx_check.model(nodes, feeds, ["y"], inits)
    with glow_mlir.compile(import_model(model), keep_ir=True, cache=False) as compiled:
        fused = compiled.ir("glow-cpu-fuse-expansion")
        got = compiled.run(feeds)["y"]
    assert "glow_ir.cpu_expand_depthwise_nhwc" in fused
    instruction = fused.index("glow_ir.cpu_expand_depthwise_nhwc")
    bias = re.search(r"(%\w+) = \"glow_ir.alloc_activation\"\(\) : \(\) -> memref<32xf32>", fused)
    assert bias is not None and fused.index(f'"glow_ir.dealloc_activation"({bias.group(1)})') > instruction
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got, session.run(None, feeds)[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("c", "size", "stride", "dw_stride", "act"),
                         [(16, 30, 2, 2, "HardSwish"), (24, 17, 1, 1, "Relu")])  # fmt: skip
def test_stem_and_depthwise_as_one_kernel(c: int, size: int, stride: int, dw_stride: int, act: str) -> None:
    """A network's stem (3x3 over RGB: 27 multiply-adds per output, at most STEM_TAPS) and the depthwise layer
    after it fuse like an expansion: the ring's rows come from the stem's taps (its own stride and padding,
    the latter in its padded input), against onnxruntime. The padded input is filled at its border only: the
    fused kernel's calls take their view of it inside their loop over images, after the input's transpose writes
    its interior (padding.fill_borders)."""
    inits = {"w1": (rng.standard_normal((c, 3, 3, 3)) / 5).astype(np.float32),
             "b1": rng.uniform(-0.5, 0.5, c).astype(np.float32),
             "w2": (rng.standard_normal((c, 1, 3, 3)) / 3).astype(np.float32),
             "b2": rng.uniform(-0.5, 0.5, c).astype(np.float32)}  # fmt: skip
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["s"], kernel_shape=[3, 3], strides=[stride] * 2,
                              pads=[1] * 4),
             helper.make_node(act, ["s"], ["a"]),
             helper.make_node("Conv", ["a", "w2", "b2"], ["y"], kernel_shape=[3, 3], strides=[dw_stride] * 2,
                              pads=[1] * 4, group=c)]  # fmt: skip
    x = rng.standard_normal((1, 3, size, size)).astype(np.float32)
    model = onnx_check.model(nodes, {"x": x}, ["y"], inits)
    with glow_mlir.compile(import_model(model), keep_ir=True, cache=False) as compiled:
        fused, scheduled = compiled.ir("glow-cpu-fuse-expansion"), compiled.ir("glow-cpu-schedule")
        got = compiled.run({"x": x})["y"]
    assert "expandKernels = array<i64: 3, 3>" in fused and f"expandStrides = array<i64: {stride}, {stride}>" in fused
    padded = f"memref<1x{size + 2}x{size + 2}x3xf32>"
    assert f"to {padded}" in scheduled and not re.search(rf"linalg\.fill .* outs\(%\w+ : {padded}\)", scheduled)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got, session.run(None, {"x": x})[0], rtol=1e-5, atol=1e-5)
