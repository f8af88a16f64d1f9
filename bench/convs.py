"""Depthwise, grouped and dense 3x3 convolutions as kernel classes: `python -m bench.convs [--shapes a,b] [--quick]`.

Each shape is a one-layer ONNX model, Conv (with bias) and optionally Relu, NCHW as users feed it. Three
runners alternate in one process (bench/run.py's `measure`, thread CPU time):

- `glow`: glow-mlir (`compile(threads=1)`) on the NCHW model: the convolution plus the two layout transposes at
  the graph's boundary (NCHW -> NHWC and back), which a network pays once, not per layer;
- `glow nhwc`: the same layer between the transposes NHWC -> NCHW and back, which cancel against glow-mlir's
  own, fed its input already zero-padded (and so with no pads of its own): the layer as it runs inside a
  network, where the producer writes its output into the padded buffer of the next layer's input. Without
  that, copying the input into a padded buffer took most of the time of the depthwise layers;
- `ort`: onnxruntime (one intra-op and one inter-op thread, ORT_ENABLE_ALL) on the NCHW model.

Per shape: the three medians, ort/glow (both on the NCHW model), the layer's kernel time (`kernel ms`: the
layer inside a network, where a producer (here an Abs) writes its output into the interior of the layer's padded
input buffer, whose border is then known to be zeros (a depthwise kernel skips the taps that read it); compiled in
the profiling variant, whose generated code times each kernel call, and summed over the layer's kernels (the
convolution's and its border fills'), so that neither the producer nor the call from Python (1-3 microseconds,
15-40 % of a 7x7 or 14x14 layer's `glow nhwc` time) is in it), the GFLOP/s and % of
peak (bench/peak.py, measured at the start) of that kernel time, and a roofline bound for it so that "% of peak"
is read honestly: a
depthwise layer does k*k multiply-adds per output element and per input element read, too few to reach the
FMA peak from any cache level. The bound is max(FLOPs / peak, bytes / bandwidth), with bytes the f32 input,
output and filter, and the bandwidth that of numpy copying a buffer of the same footprint on this machine
(measured per shape, so it is the bandwidth of the cache level the layer's data sits in when the layer runs
again and again, named in the `level` column). "% bound" is that bound over the kernel time.

FLOPs are bench/flops.py's: 2 x |output| x (C / group) x KH x KW.

The `e<E>>dw...` shapes are inverted residual blocks: the depthwise layer of the same name with the 1x1
expansion from E channels (and ReLU6) before it, which glow-mlir runs as one kernel (expansion_recipes.py): their
input is the expansion's (the `glow nhwc` model's not padded: the 1x1 convolution reads it), their FLOPs both
convolutions', their bytes the block's input, output and filters.

`--base REV` compares two compilers instead: each shape's `kernel ms` model compiled by the git revision REV
(extracted with `git archive`) and by the working tree, in child processes (bench/ab.py's `compile_in`), then
timed alternately in this process, round by round; it prints base ms, new ms and base/new per shape.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

import glow_mlir
from bench.ab import ROOT, compile_in, per_call
from bench.flops import count_flops
from bench.peak import measure_peak
from bench.run import CLOCKS, _error_text, compare, finish, machine, measure, provenance
from glow_mlir.backends.cpu.profile import NS_ROW
from glow_mlir.frontends.onnx import import_model
from glow_mlir.library import aligned_bytes, open_entry

BUDGET_SECONDS = 2.0
# Rounds of the `--base` comparison, each timing both compilers once.
AB_ROUNDS = 7
QUICK_BUDGET_SECONDS = 0.3
WARMUP_SECONDS = 0.2
QUICK_WARMUP_SECONDS = 0.02
# Copies timed per footprint for the bandwidth (`bandwidth`), the median taken.
COPY_REPEATS = 7
# Blocks of profiled runs for the kernel time (`kernel_ms`), the median taken.
KERNEL_BLOCKS = 5
CACHE_DIR = Path("/sys/devices/system/cpu/cpu0/cache")


@dataclass(frozen=True)
class ConvShape:
    """One convolution: C input channels on a size x size map (batch 1), F filters of k x k, stride, pads
    k // 2 for odd windows (the networks' "same" padding) and none for even ones (patchify layers: ConvNeXt's
    2x2/s2 downsampling, 4x4/s4 stems), `group` groups; `relu` appends a Relu. With `expansion`, the layer is
    an inverted residual's depthwise convolution with the 1x1 expansion from that many channels (+ ReLU6) before
    it: the model is the block, which glow-mlir runs as one kernel (expansion_recipes.py). `source` says where
    the shape comes from."""

    name: str
    source: str
    c: int
    f: int
    size: int
    k: int
    stride: int
    group: int
    relu: bool = True
    expansion: int = 0

    @property
    def pad(self) -> int:
        return self.k // 2 if self.k % 2 else 0

    @property
    def out_size(self) -> int:
        return (self.size + 2 * self.pad - self.k) // self.stride + 1

    @property
    def in_channels(self) -> int:
        """The model's input channels: the expansion's, else the layer's."""
        return self.expansion or self.c

    @property
    def in_pad(self) -> int:
        """The padding of the `glow nhwc` model's input: the layer's, but where a 1x1 expansion reads it."""
        return 0 if self.expansion else self.pad


def _dw(c: int, size: int, k: int, stride: int, source: str, relu: bool = True) -> ConvShape:
    return ConvShape(f"dw{k}x{k}-s{stride}-{c}@{size}", source, c, c, size, k, stride, c, relu)


def _block(e: int, c: int, size: int, k: int, stride: int, source: str) -> ConvShape:
    return ConvShape(f"e{e}>dw{k}x{k}-s{stride}-{c}@{size}", source, c, c, size, k, stride, c, expansion=e)


def _dense(c: int, f: int, size: int, source: str) -> ConvShape:
    return ConvShape(f"conv3x3-s1-{c}>{f}@{size}", source, c, f, size, 3, 1, 1)


def _grouped(c: int, f: int, size: int, k: int, stride: int, group: int, source: str) -> ConvShape:
    return ConvShape(f"g{group}x{c // group}-{k}x{k}-s{stride}-{c}>{f}@{size}", source, c, f, size, k, stride, group)


# Chosen for the class before any tuning, from the networks' published layer tables at 224x224 input:
# windows 3, 5 and 7, strides 1 and 2, maps 112 to 7, channels that are multiples of 16 and ones that are not,
# group widths 1 (depthwise), 4 to 56 and wider.
SHAPES: dict[str, ConvShape] = {
    s.name: s
    for s in (
        # MobileNetV2 (Sandler et al. 2018, table 2): 3x3 throughout.
        _dw(32, 112, 3, 1, "MobileNetV2 block 1"),
        _dw(96, 112, 3, 2, "MobileNetV2 stage 2 down"),
        _dw(144, 56, 3, 1, "MobileNetV2 stage 2"),
        _dw(192, 28, 3, 1, "MobileNetV2 stage 3"),
        _dw(384, 14, 3, 1, "MobileNetV2 stage 4"),
        _dw(576, 14, 3, 2, "MobileNetV2 stage 6 down"),
        _dw(960, 7, 3, 1, "MobileNetV2 stage 7"),
        # MobileNetV1 (Howard et al. 2017, table 1), added at the thirty-eighth session before any tuning for it:
        # 3x3 throughout, channels multiples of 64 up to 1024 (a multiple of 512: pixels 2 or 4 KB apart, whose
        # channel blocks alias in L1).
        _dw(64, 112, 3, 2, "MobileNetV1 block 2 down"),
        _dw(128, 56, 3, 1, "MobileNetV1 block 3"),
        _dw(256, 28, 3, 1, "MobileNetV1 block 5"),
        _dw(512, 14, 3, 1, "MobileNetV1 blocks 7-11"),
        _dw(512, 14, 3, 2, "MobileNetV1 block 12 down"),
        _dw(1024, 7, 3, 1, "MobileNetV1 block 13"),
        # MobileNetV3-small / -large (Howard et al. 2019, tables 1-2): odd channel counts, 5x5.
        _dw(16, 112, 3, 2, "MobileNetV3-small block 1"),
        _dw(72, 56, 3, 2, "MobileNetV3-small block 2"),
        _dw(88, 28, 3, 1, "MobileNetV3-small block 3"),
        _dw(96, 28, 5, 2, "MobileNetV3-small block 4"),
        _dw(120, 14, 5, 1, "MobileNetV3-small block 7"),
        _dw(240, 14, 5, 1, "MobileNetV3-small block 5"),
        _dw(72, 56, 5, 2, "MobileNetV3-large block 4"),
        _dw(672, 14, 5, 2, "MobileNetV3-large / EfficientNet-B0 stage 6 down"),
        # EfficientNet-B0 (Tan and Le 2019, table 1): 5x5 on wider maps.
        _dw(144, 56, 5, 2, "EfficientNet-B0 stage 4 down"),
        _dw(240, 28, 5, 1, "EfficientNet-B0 stage 4"),
        _dw(1152, 7, 5, 1, "EfficientNet-B0 stage 7"),
        # ConvNeXt-atto / -tiny (timm): 7x7 stride 1, no activation after (a LayerNorm follows).
        _dw(40, 56, 7, 1, "ConvNeXt-atto stage 1", relu=False),
        _dw(80, 28, 7, 1, "ConvNeXt-atto stage 2", relu=False),
        _dw(320, 7, 7, 1, "ConvNeXt-atto stage 4", relu=False),
        _dw(96, 56, 7, 1, "ConvNeXt-tiny stage 1", relu=False),
        # RepLKNet-31B (Ding et al. 2022, table 5): windows of 31 to 13 over maps as large or smaller, most taps
        # of the later ones on the padding (added with the skipping of the taps that read zeros).
        _dw(128, 56, 31, 1, "RepLKNet-31B stage 1", relu=False),
        _dw(256, 28, 29, 1, "RepLKNet-31B stage 2", relu=False),
        _dw(512, 14, 27, 1, "RepLKNet-31B stage 3", relu=False),
        _dw(1024, 7, 13, 1, "RepLKNet-31B stage 4", relu=False),
        _dw(768, 7, 7, 1, "ConvNeXt-tiny stage 4", relu=False),
        # GhostNet (Han et al. 2020): the ghost modules' cheap 3x3 on half the channels.
        _dw(8, 112, 3, 1, "GhostNet stem ghost module"),
        _dw(36, 56, 3, 1, "GhostNet stage 2 ghost module"),
        _dw(100, 14, 3, 1, "GhostNet stage 4 ghost module"),
        # ResNeXt-50 32x4d (Xie et al. 2017, table 1): 32 groups of 4, 8, 16, 32 channels.
        _grouped(128, 128, 56, 3, 1, 32, "ResNeXt-50 32x4d stage 1"),
        _grouped(256, 256, 56, 3, 2, 32, "ResNeXt-50 32x4d stage 2 down"),
        _grouped(256, 256, 28, 3, 1, 32, "ResNeXt-50 32x4d stage 2"),
        _grouped(512, 512, 14, 3, 1, 32, "ResNeXt-50 32x4d stage 3"),
        _grouped(1024, 1024, 7, 3, 1, 32, "ResNeXt-50 32x4d stage 4"),
        # RegNetX (Radosavovic et al. 2020, timm configs): group widths 8 (200MF), 16 (400MF), 24 (1.6GF),
        # 48 (3.2GF), 56 (6.4GF).
        _grouped(24, 24, 56, 3, 1, 3, "RegNetX-200MF stage 1"),
        _grouped(56, 56, 28, 3, 1, 7, "RegNetX-200MF stage 2"),
        _grouped(152, 152, 14, 3, 1, 19, "RegNetX-200MF stage 3"),
        _grouped(368, 368, 7, 3, 1, 46, "RegNetX-200MF stage 4"),
        _grouped(64, 64, 28, 3, 1, 4, "RegNetX-400MF stage 2"),
        _grouped(408, 408, 14, 3, 1, 17, "RegNetX-1.6GF stage 3"),
        _grouped(192, 192, 28, 3, 1, 4, "RegNetX-3.2GF stage 2"),
        _grouped(392, 392, 28, 3, 1, 7, "RegNetX-6.4GF stage 2"),
        # ShuffleNet v1 (Zhang et al. 2018, g = 3 and 8): grouped 1x1 convolutions.
        _grouped(240, 60, 28, 1, 1, 3, "ShuffleNet v1 g3 stage 2"),
        _grouped(384, 96, 28, 1, 1, 8, "ShuffleNet v1 g8 stage 2"),
        _grouped(1536, 384, 7, 1, 1, 8, "ShuffleNet v1 g8 stage 4"),
        # AlexNet's two-group 5x5 (Krizhevsky et al. 2012): wide groups.
        _grouped(96, 256, 27, 5, 1, 2, "AlexNet conv2"),
        # Dense 3x3 stride-1 layers (the Winograd kernel's class, winograd_recipes.py), chosen from the
        # networks' layer tables before that kernel was written: VGG-16/19 (Simonyan and Zisserman 2015), ResNet
        # (He et al. 2016), Inception-v3's 35x35 grid (Szegedy et al. 2016), DenseNet-121's growth layers
        # (Huang et al. 2017; 128 -> 32 on every grid).
        _dense(3, 64, 224, "VGG-16 conv1_1"),
        _dense(64, 64, 224, "VGG-16 conv1_2"),
        _dense(128, 128, 112, "VGG-16 conv2_2"),
        _dense(256, 256, 56, "VGG-16 conv3_2"),
        _dense(512, 512, 28, "VGG-16 conv4_2"),
        _dense(64, 64, 56, "ResNet-18/50 stage 1"),
        _dense(128, 128, 28, "ResNet-18/50 stage 2"),
        _dense(256, 256, 14, "ResNet-18/50 stage 3"),
        _dense(512, 512, 7, "ResNet-18/50 stage 4"),
        _dense(64, 96, 35, "Inception-v3 35x35 branch"),
        _dense(96, 96, 35, "Inception-v3 35x35 branch"),
        _dense(128, 32, 56, "DenseNet-121 block 1"),
        _dense(128, 32, 14, "DenseNet-121 block 3"),
        _dense(128, 32, 7, "DenseNet-121 block 4"),
        # The depthwise layers above that an expansion feeds in their networks, with that 1x1 expansion (and
        # ReLU6) before them: the inverted residual as glow-mlir runs it, one kernel (expansion_recipes.py).
        _block(16, 96, 112, 3, 2, "MobileNetV2 stage 2 down"),
        _block(24, 144, 56, 3, 1, "MobileNetV2 stage 2"),
        _block(32, 192, 28, 3, 1, "MobileNetV2 stage 3"),
        _block(64, 384, 14, 3, 1, "MobileNetV2 stage 4"),
        _block(96, 576, 14, 3, 2, "MobileNetV2 stage 6 down"),
        _block(160, 960, 7, 3, 1, "MobileNetV2 stage 7"),
        _block(16, 72, 56, 3, 2, "MobileNetV3-small block 2"),
        _block(24, 88, 28, 3, 1, "MobileNetV3-small block 3"),
        _block(24, 96, 28, 5, 2, "MobileNetV3-small block 4"),
        _block(40, 240, 14, 5, 1, "MobileNetV3-small block 5"),
        _block(24, 72, 56, 5, 2, "MobileNetV3-large block 4"),
        _block(112, 672, 14, 5, 2, "MobileNetV3-large / EfficientNet-B0 stage 6 down"),
        _block(24, 144, 56, 5, 2, "EfficientNet-B0 stage 4 down"),
        _block(40, 240, 28, 5, 1, "EfficientNet-B0 stage 4"),
        _block(192, 1152, 7, 5, 1, "EfficientNet-B0 stage 7"),
    )
}
NAME_FORMS = (
    re.compile(r"(?:e(?P<e>\d+)>)?dw(?P<k>\d+)x(?P=k)-s(?P<s>\d+)-(?P<c>\d+)@(?P<size>\d+)"),
    re.compile(r"(?:g(?P<g>\d+)x\d+-|conv)(?P<k>\d+)x(?P=k)-s(?P<s>\d+)-(?P<c>\d+)>(?P<f>\d+)@(?P<size>\d+)"),
)


def shape_of(name: str) -> ConvShape:
    """The table's shape `name`, or any other written as the table names its shapes (`dw5x5-s2-64@28`,
    `e24>dw3x3-s1-144@56`, `conv3x3-s1-64>64@56`, `g16x8-1x1-s1-128>128@28`): a layer of the class that the table
    does not hold, timed the same way (its source "--shapes")."""
    if name in SHAPES:
        return SHAPES[name]
    for form in NAME_FORMS:
        if match := form.fullmatch(name):
            v = {key: int(value) for key, value in match.groupdict().items() if value is not None}
            c, k, stride, size = v["c"], v["k"], v["s"], v["size"]
            if "f" not in v:
                shape = _block(v["e"], c, size, k, stride, "--shapes") if "e" in v else _dw(c, size, k, stride,
                                                                                            "--shapes")
            elif "g" in v:
                shape = _grouped(c, v["f"], size, k, stride, v["g"], "--shapes")
            else:
                shape = ConvShape(name, "--shapes", c, v["f"], size, k, stride, 1)
            if shape.name == name:
                return shape
    raise SystemExit(f"unknown shape {name!r}: one of the table's ({', '.join(SHAPES)}) or a name of their forms")


# The smoke test's: one depthwise with a channel remainder, one grouped.
QUICK_SHAPES = ("dw3x3-s1-88@28", "g32x8-3x3-s1-256>256@28")


# The `kernel ms` model's op before the layer, whose kernel is not the layer's: an Abs, one instruction that writes
# its output whole, which glow-ir-optimize-inserts places in the padded buffer (a ReLU is a max against a splat of
# zeros, two writes of its buffer, which it does not).
PRODUCER = "producer"


def build(shape: ConvShape, nhwc: bool = False, seed: int = 0, producer: bool = False) -> onnx.ModelProto:
    """The one-layer model of `shape`: input `x` NCHW, or (`nhwc`) NHWC and zero-padded already, with transposes
    around the layer and no pads (the same weights and output). With `producer` (NHWC, not a block), the input
    is not padded and an Abs named PRODUCER computes the layer's input, which glow-mlir writes into the interior
    of the layer's padded buffer, as a network's layer before it would."""
    producer = producer and nhwc and not shape.expansion
    pad = shape.pad if not nhwc or shape.expansion or producer else 0
    rng = np.random.default_rng(seed)
    k = shape.k
    w = (rng.standard_normal((shape.f, shape.c // shape.group, k, k)) / np.sqrt(k * k * shape.c / shape.group))
    b = rng.uniform(-0.2, 0.2, shape.f)
    nodes = []
    initializers = []
    name = "x"
    if nhwc:
        nodes.append(helper.make_node("Transpose", ["x"], ["x_nchw"], perm=[0, 3, 1, 2]))
        name = "x_nchw"
    if producer:
        nodes.append(helper.make_node("Abs", [name], ["produced"], name=PRODUCER))
        name = "produced"
    if shape.expansion:
        e = shape.expansion
        w1 = rng.standard_normal((shape.c, e, 1, 1)) / np.sqrt(e)
        arrays = {"w1": w1, "b1": rng.uniform(-0.2, 0.2, shape.c), "lo": np.array(0.0), "hi": np.array(6.0)}
        initializers += [numpy_helper.from_array(a.astype(np.float32), n) for n, a in arrays.items()]
        nodes += [helper.make_node("Conv", [name, "w1", "b1"], ["expanded"], kernel_shape=[1, 1]),
                  helper.make_node("Clip", ["expanded", "lo", "hi"], ["expanded6"])]  # fmt: skip
        name = "expanded6"
    last = "conv_out"
    nodes.append(
        helper.make_node("Conv", [name, "w", "b"], [last], kernel_shape=[k, k], strides=[shape.stride] * 2,
                         pads=[pad] * 4, group=shape.group)
    )
    if shape.relu:
        nodes.append(helper.make_node("Relu", [last], ["relu_out"]))
        last = "relu_out"
    if nhwc:
        nodes.append(helper.make_node("Transpose", [last], ["y_nhwc"], perm=[0, 2, 3, 1]))
        last = "y_nhwc"
    nodes[-1].output[0] = "y"
    padded = shape.size + 2 * (0 if producer else shape.in_pad)
    c = shape.in_channels
    dims = [1, padded, padded, c] if nhwc else [1, c, shape.size, shape.size]
    graph = helper.make_graph(
        nodes, shape.name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w.astype(np.float32), "w"), numpy_helper.from_array(b.astype(np.float32), "b"),
         *initializers],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model


def footprint_bytes(shape: ConvShape) -> int:
    """f32 bytes of the layer's input (zero-padded, as the `glow nhwc` model reads it), output and filter."""
    out, padded = shape.out_size, shape.size + 2 * shape.in_pad
    filters = shape.f * shape.c // shape.group * shape.k**2 + shape.expansion * shape.c
    return 4 * (shape.in_channels * padded**2 + shape.f * out * out + filters)


def cache_levels() -> list[tuple[str, int]]:
    """(name, bytes) of this CPU's data caches, smallest first (Linux sysfs; empty elsewhere)."""
    levels = []
    for index in sorted(CACHE_DIR.glob("index*")):
        try:
            if (index / "type").read_text().strip() == "Instruction":
                continue
            size = (index / "size").read_text().strip()
            scale = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(size[-1], 1)
            levels.append((f"L{(index / 'level').read_text().strip()}", int(size.rstrip("KMG")) * scale))
        except OSError:
            continue
    return sorted(levels, key=lambda level: level[1])


def level_of(nbytes: int, levels: Sequence[tuple[str, int]]) -> str:
    """The smallest cache level that holds `nbytes`, else DRAM."""
    return next((name for name, size in levels if nbytes <= size), "DRAM")


def bandwidth(nbytes: int, clock: Any = time.thread_time) -> float:
    """GB/s of numpy copying nbytes / 2 into another nbytes / 2 (nbytes read and written in all), with both
    buffers warm: the bandwidth of the cache level a working set of `nbytes` sits in."""
    half = max(1, nbytes // 8)
    src, dst = np.ones(half, np.float32), np.zeros(half, np.float32)
    np.copyto(dst, src)
    calls = max(1, int(2e7 // nbytes))  # about 20 MB per timing, so that small copies are timed in bulk
    times = []
    for _ in range(COPY_REPEATS):
        start = clock()
        for _ in range(calls):
            np.copyto(dst, src)
        times.append((clock() - start) / calls)
    return 8 * half / statistics.median(times) / 1e9


def bench_shape(shape: ConvShape, budget: float, warmup: float, clock: str, peak: float,
                levels: Sequence[tuple[str, int]]) -> dict[str, Any]:
    """Times glow (NCHW and NHWC models) against onnxruntime on one shape and derives the table's figures."""
    model, nhwc_model = build(shape), build(shape, nhwc=True)
    x_nhwc = padded_input(shape)
    pad = shape.in_pad
    x = np.ascontiguousarray(x_nhwc[:, pad : pad + shape.size, pad : pad + shape.size].transpose(0, 3, 1, 2))
    flops = count_flops(model)
    row: dict[str, Any] = {"shape": shape.name, "source": shape.source, "gflop": flops / 1e9, "errors": {}}
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    ort = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    runners = {"ort": lambda: ort.run(None, {"x": x})}
    compiled = []
    try:
        start = time.perf_counter()
        glow = glow_mlir.compile(import_model(model), threads=1, cache=False, progress=False)
        glow_nhwc = glow_mlir.compile(import_model(nhwc_model), threads=1, cache=False, progress=False)
        row["compile_s"] = (time.perf_counter() - start) / 2
        compiled += [glow, glow_nhwc]
        runners["glow"] = lambda: [glow.run({"x": x})["y"]]
        runners["glow nhwc"] = lambda: [glow_nhwc.run({"x": x_nhwc})["y"]]
    except Exception as e:  # noqa: BLE001  (reported in the row; onnxruntime still runs)
        row["errors"]["glow"] = _error_text(e)
    outputs, timings, errors = measure(runners, budget, warmup)
    row["errors"].update(errors)
    for name, timing in timings.items():
        row[name] = timing.summary(clock)
    if "ort" in outputs:
        if "glow" in outputs:
            row["glow_vs_ort"] = compare(outputs["glow"], outputs["ort"])
        if "glow nhwc" in outputs:
            nchw = [np.ascontiguousarray(y.transpose(0, 3, 1, 2)) for y in outputs["glow nhwc"]]
            row["glow_nhwc_vs_ort"] = compare(nchw, outputs["ort"])
    for model_ in compiled:
        model_.close()
    if "glow nhwc" in row:
        feeds = {"x": padded_input(shape, padded=False)}
        row["kernel_ms"] = kernel_ms(build(shape, nhwc=True, producer=True), feeds, budget / 2)
    if "glow" in row and "ort" in row:
        row["ort_over_glow"] = row["ort"]["ms"] / row["glow"]["ms"]
    nbytes = footprint_bytes(shape)
    row["bytes"] = nbytes
    row["level"] = level_of(nbytes, levels)
    row["bandwidth_gbs"] = bandwidth(nbytes, CLOCKS[clock])
    row["bound_ms"] = max(flops / peak / 1e6, nbytes / row["bandwidth_gbs"] / 1e6)
    row["memory_bound"] = nbytes / row["bandwidth_gbs"] > flops / peak
    if "kernel_ms" in row:
        ms = row["kernel_ms"]
        row["glow_nhwc_gflops"] = flops / (ms * 1e6)
        row["glow_nhwc_peak_percent"] = 100 * row["glow_nhwc_gflops"] / peak
        row["glow_nhwc_bound_percent"] = 100 * row["bound_ms"] / ms
    return row


def kernel_ms(nhwc_model: onnx.ModelProto, feeds: dict[str, np.ndarray], budget: float) -> float:
    """The layer's kernel time in the NHWC model (`build(..., producer=True)`), without the call from Python and
    the producer's kernel: the model compiled in the profiling variant (glow_mlir/profiling.py), whose generated
    code times each kernel call; the median over KERNEL_BLOCKS blocks of runs of the mean time per run of the
    kernels not the producer's alone, in ms."""
    with glow_mlir.compile(import_model(nhwc_model), threads=1, cache=False, progress=False, profile=True) as model:
        layer = np.array([kernel.model_nodes() != (PRODUCER,) for kernel in model.kernels])
        start = time.perf_counter()
        model.run(feeds)
        runs = max(3, int(budget / KERNEL_BLOCKS / max(time.perf_counter() - start, 1e-6)))
        blocks = []
        for _ in range(KERNEL_BLOCKS):
            model.runs.clear()
            for _ in range(runs):
                model.run(feeds)
            blocks.append(sum(float(r.counters[NS_ROW][layer].sum()) for r in model.runs) / len(model.runs) / 1e6)
    return statistics.median(blocks)


def padded_input(shape: ConvShape, padded: bool = True) -> np.ndarray:
    """The seeded input of `shape`'s NHWC model: the NCHW input zero-padded (unless not `padded`: the producer
    model's) and transposed to NHWC, starting at a 64-byte boundary as the arena's buffers do inside a network
    (from np.empty's 16-byte aligned memory, the kernel's 64-byte loads of a 28x28x192 depthwise layer spanned two
    cache lines and it ran 1.35x slower)."""
    x = np.random.default_rng(1).standard_normal((1, shape.in_channels, shape.size, shape.size)).astype(np.float32)
    pad = shape.in_pad if padded else 0
    padded = np.pad(x, [(0, 0), (0, 0), (pad, pad), (pad, pad)]).transpose(0, 2, 3, 1)
    aligned = aligned_bytes(padded.nbytes).view(np.float32).reshape(padded.shape)
    aligned[...] = padded
    return aligned


def compare_trees(names: Sequence[str], base: str, budget: float) -> list[dict[str, Any]]:
    """`--base`: per shape, the NHWC layer behind its producer (`build(..., producer=True)`) compiled by revision
    `base` and by the working tree, timed alternately (AB_ROUNDS rounds of about budget / AB_ROUNDS seconds),
    with whether their outputs agree."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="glow-convs-ab-") as tmp:
        work = Path(tmp)
        base_tree = work / "base-tree"
        base_tree.mkdir()
        archive = subprocess.run(["git", "archive", base], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(base_tree)], input=archive, check=True)
        for index, name in enumerate(names):
            shape = shape_of(name)
            onnx_file = work / f"layer{index}.onnx"
            onnx.save(build(shape, nhwc=True, producer=True), onnx_file)
            feeds = {"x": padded_input(shape, padded=False)}
            models = {}
            for label, tree in (("base", base_tree), ("new", ROOT)):
                compile_in(tree, onnx_file, work / label / onnx_file.stem)
                models[label], _ = open_entry(work / label / onnx_file.stem)
            outputs = [list(models[label].run(feeds).values()) for label in ("base", "new")]
            calls = max(3, int(budget / AB_ROUNDS / 2 / max(per_call(models["base"], feeds, 3), 1e-6)))
            times: dict[str, list[float]] = {"base": [], "new": []}
            for _ in range(AB_ROUNDS):
                for label, seconds in times.items():
                    seconds.append(per_call(models[label], feeds, calls))
            base_ms, new_ms = (1e3 * statistics.median(times[label]) for label in ("base", "new"))
            row = {"shape": name, "base_ms": base_ms, "new_ms": new_ms, "base_over_new": base_ms / new_ms,
                   "outputs_close": all(np.allclose(a, b, rtol=1e-4, atol=1e-4) for a, b in zip(*outputs))}
            print(f"{name:<28} {base_ms:9.4f} {new_ms:9.4f} {row['base_over_new']:9.3f}  "
                  f"{'close' if row['outputs_close'] else 'DIFFER'}", flush=True)
            rows.append(row)
    return rows


def _fmt(value: float) -> str:
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"


def markdown(report: dict[str, Any]) -> str:
    m = report["machine"]
    lines = [
        "| shape | from | glow ms | ort ms | ort/glow | glow nhwc ms | kernel ms | GFLOP/s | % peak | level "
        "| bound ms | % bound | max diff vs ort |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |",
    ]
    notes = []
    for row in report["shapes"]:

        def cell(key: str, fmt: Any, row: dict[str, Any] = row) -> str:
            return fmt(row[key]) if key in row else "-"

        diffs = [row[k]["max_abs_diff"] for k in ("glow_vs_ort", "glow_nhwc_vs_ort") if k in row]
        ok = all(row[k]["match"] for k in ("glow_vs_ort", "glow_nhwc_vs_ort") if k in row)
        lines.append(
            "| " + " | ".join([
                row["shape"], row["source"],
                cell("glow", lambda t: _fmt(t["ms"])),
                cell("ort", lambda t: _fmt(t["ms"])),
                cell("ort_over_glow", lambda r: f"{r:.2f}"),
                cell("glow nhwc", lambda t: _fmt(t["ms"])),
                cell("kernel_ms", _fmt),
                cell("glow_nhwc_gflops", lambda g: f"{g:.1f}"),
                cell("glow_nhwc_peak_percent", lambda p: f"{p:.0f}"),
                row.get("level", "-") + (" (memory)" if row.get("memory_bound") else ""),
                cell("bound_ms", _fmt),
                cell("glow_nhwc_bound_percent", lambda p: f"{p:.0f}"),
                (f"{max(diffs):.1e}" + ("" if ok else " MISMATCH")) if diffs else "-",
            ]) + " |"
        )
        notes += [f"- {row['shape']}, {fw}: {err.splitlines()[0][:300]}" for fw, err in row["errors"].items()]
    ratios = [row["ort_over_glow"] for row in report["shapes"] if "ort_over_glow" in row]
    percents = [row["glow_nhwc_bound_percent"] for row in report["shapes"] if "glow_nhwc_bound_percent" in row]
    if ratios:
        lines += ["", f"Geomean ort/glow {statistics.geometric_mean(ratios):.2f} over {len(ratios)} shapes; "
                  f"median % of bound {statistics.median(percents):.0f}."]
    lines += [
        "",
        f"Machine: {m['cpu']}, measured single-core peak {m['peak_gflops']:.1f} GFLOP/s (bench/peak.py). Times are "
        f"medians of {'thread CPU' if m['clock'] == 'cpu' else 'wall-clock'} time, one thread each, alternating "
        f"in one process. glow-mlir {m['glow_mlir']}, onnxruntime {m['onnxruntime']}; " + provenance(m),
    ]
    if notes:
        lines += ["", "Errors:", *notes]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.convs", description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="all", help=f"comma-separated, of the table ({', '.join(SHAPES)}) or "
                        "named as it names them (`shape_of`), or 'all'")
    parser.add_argument("--quick", action="store_true", help=f"short time boxes on {', '.join(QUICK_SHAPES)} "
                        "unless --shapes is given (a smoke run; figures are rough)")
    parser.add_argument("--budget", type=float, help="seconds of measurement per shape")
    parser.add_argument("--clock", choices=list(CLOCKS), default="cpu", help="thread CPU time (default) or wall")
    parser.add_argument("--json", type=Path, help="write the full results as JSON here")
    parser.add_argument("--markdown", type=Path, help="write the table here")
    parser.add_argument("--base", help="compare git revision BASE's compiler with the working tree's instead")
    args = parser.parse_args(argv)
    default = ",".join(QUICK_SHAPES) if args.quick and args.shapes == "all" else args.shapes
    names = list(SHAPES) if default == "all" else [n for n in default.split(",") if n]
    shapes = [shape_of(name) for name in names]
    budget = args.budget or (QUICK_BUDGET_SECONDS if args.quick else BUDGET_SECONDS)
    if args.base:
        print(f"{'shape':<28} {'base ms':>9} {'new ms':>9} {'base/new':>9}  outputs")
        rows = compare_trees(names, args.base, budget)
        if args.json:
            args.json.write_text(json.dumps({"base": args.base, "shapes": rows}, indent=2) + "\n")
        return 0
    warmup = QUICK_WARMUP_SECONDS if args.quick else WARMUP_SECONDS
    peak = measure_peak(CLOCKS[args.clock], repeats=3 if args.quick else 5)
    print(f"measured peak: {peak:.1f} GFLOP/s", file=sys.stderr)
    command = shlex.join(["python", "-m", "bench.convs", *(argv if argv is not None else sys.argv[1:])])
    # bench/run.py's machine record; the BLAS thread count does not matter here (numpy only copies).
    report: dict[str, Any] = {"machine": machine(peak, args.clock, command, ("numpy", None)), "shapes": []}
    levels = cache_levels()
    for name, shape in zip(names, shapes, strict=True):
        print(f"shape {name} ...", file=sys.stderr, flush=True)
        row = bench_shape(shape, budget, warmup, args.clock, peak, levels)
        report["shapes"].append(row)
        print(f"  {json.dumps(row, default=str)}", file=sys.stderr, flush=True)
    return finish(report, markdown, args.markdown, args.json)


if __name__ == "__main__":
    sys.exit(main())
