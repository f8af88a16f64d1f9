"""onnxruntime's NCHWc ops (domain com.microsoft.nchwc), imported as bodies of default-domain ops like those of
contrib.py, whose `body` registry they join.

At its ORT_ENABLE_ALL level (a SessionOptions' default) onnxruntime's NchwcTransformer rewrites a CNN's
convolutions and pools for MLAS's blocked layout, and a session that saves its optimized graph
(`optimized_model_filepath`) writes them: 15 of the 22 zoo models of bench/'s broad set held them. In the graph
an NCHWc tensor is an NCHW one whose channels are padded to a multiple of the block (16 where the CPU has
AVX-512, else 8); only its memory is blocked. So ReorderInput pads the channels with zeros (from NHWC where
channels_last), ReorderOutput keeps the first `channels` (to NHWC where channels_last), the pools are ONNX's,
and Conv is FusedConv's activation(Conv(X, W, B) + Sum) but for its filter, which the saved model holds in
MLAS's reordered layout under the dims of the padded OIHW filter: [O / b, I / b, KH, KW, b (in), b (out)]
(OIHWBiBo), or, for a depthwise filter and one reading an NCHW input of fewer channels than a block (a first
layer's 3), [O / b, I, KH, KW, b (out)] (OIHWBo). The body reads it back into OIHW.

The block is not written in the model: a filter whose padded output channels are no multiple of 16 was
reordered in blocks of 8, and any other is read in this host's block, as onnxruntime reads the saved model
(it warns that such a model is for the machine that saved it). An input whose padded channel count differs from
what a convolution's filter takes (a ReorderInput padded to this host's block) is padded or cut to it: the
channels beyond the real ones are zeros, or meet zero weights."""

from __future__ import annotations

import numpy as np

from glow_mlir.backends.cpu.host import cpu_flags
from glow_mlir.frontends.onnx.contrib import Body, body, conv_activated

NCHWC_DOMAIN = "com.microsoft.nchwc"
# MLAS's NCHWc block with AVX-512F, and with AVX2 alone.
WIDE_BLOCK, NARROW_BLOCK = 16, 8


def host_block() -> int:
    """MLAS's NCHWc channel block on this host."""
    return WIDE_BLOCK if "avx512f" in cpu_flags() else NARROW_BLOCK


def _channels(b: Body, x: str, dims: list[int], want: int, axis: int = 1) -> str:
    """x (of `dims`) with `want` channels along `axis`: the first `want`, or zeros after them."""
    have = dims[axis]
    if have == want:
        return x
    i64 = np.int64
    if have > want:
        return b.add("Slice", [x, b.constant([0], i64), b.constant([want], i64), b.constant([axis], i64)])
    pads = [0] * (2 * len(dims))
    pads[len(dims) + axis] = want - have
    return b.add("Pad", [x, b.constant(pads, i64)])


@body("ReorderInput", domain=NCHWC_DOMAIN)
def reorder_input(b: Body) -> None:
    """X (NCHW, or NHWC where channels_last) as NCHW with its channels padded with zeros to this host's block."""
    dims, x = b.dims(0), b.input(0)
    if int(b.attr("channels_last", 0)):
        perm = [0, len(dims) - 1, *range(1, len(dims) - 1)]
        x, dims = b.add("Transpose", [x], perm=perm), [dims[i] for i in perm]
    block = host_block()
    b.add("Identity", [_channels(b, x, dims, -(-dims[1] // block) * block)], [b.output(0)])


@body("ReorderOutput", domain=NCHWC_DOMAIN)
def reorder_output(b: Body) -> None:
    """X's first `channels` channels, NCHW (or NHWC where channels_last)."""
    dims = b.dims(0)
    y = _channels(b, b.input(0), dims, int(b.attr("channels", dims[1])))
    if int(b.attr("channels_last", 0)):
        rank = len(dims)
        y = b.add("Transpose", [y], perm=[0, *range(2, rank), 1])
    b.add("Identity", [y], [b.output(0)])


@body("Conv", domain=NCHWC_DOMAIN)
def nchwc_conv(b: Body) -> None:
    """activation(Conv(X, W, B) + Sum) with W read back from MLAS's reordered layout into OIHW (module
    docstring); X, B and Sum padded or cut to the filter's channels."""
    out, per_group, *window = b.dims(1)
    group = int(b.attr("group", 1))
    block = NARROW_BLOCK if out % WIDE_BLOCK else host_block()
    if out % block:
        raise b.refuse(f"a filter of {out} output channels is no reordered NCHWc filter (blocks of {block})")
    i64 = np.int64
    single = (group > 1 and per_group == 1) or per_group < block
    if not single and per_group % block:
        raise b.refuse(f"a filter of {per_group} input channels per group is no reordered NCHWc filter")
    if single:
        blocked = [out // block, per_group, *window, block]
        perm = [0, 2 + len(window), *range(1, 2 + len(window))]
    else:
        blocked = [out // block, per_group // block, *window, block, block]
        k = len(window)
        perm = [0, 3 + k, 1, 2 + k, *range(2, 2 + k)]
    w = b.add("Transpose", [b.add("Reshape", [b.input(1), b.constant(blocked, i64)])], perm=perm)
    w = b.add("Reshape", [w, b.constant([out, per_group, *window], i64)])
    x = _channels(b, b.input(0), b.dims(0), per_group * group)
    bias = _channels(b, b.input(2), b.dims(2), out, axis=0) if b.input(2) else ""
    total = _channels(b, b.input(3), b.dims(3), out) if b.input(3) else ""
    conv_activated(b, x, w, bias, total)


@body("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", domain=NCHWC_DOMAIN)
def nchwc_pool(b: Body) -> None:
    """ONNX's pool of the same name and attributes, over the padded channels."""
    b.add(b.node.op_type, [b.input(0)], [b.output(0)], **b.attrs)
