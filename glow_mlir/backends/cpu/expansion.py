"""glow-cpu-fuse-expansion: an inverted residual's expansion and depthwise convolution become one instruction,
`glow_ir.cpu_expand_depthwise_nhwc`, so that the expanded map is never a buffer; so do a network's small stem
convolution and the depthwise convolution after it.

MobileNet v2/v3, EfficientNet, MNASNet and their kin expand a narrow map with a 1x1 convolution (4 to 6 times
the channels), run a depthwise KxK convolution on it, then project it back. The expanded map is the largest
tensor of these networks (MobileNetV2's 112x112x96, 4.8 MB), written to memory by the 1x1 kernel and read back
by the depthwise one, whose stride-2 layers read four input vectors per output vector and so ran at the speed
of that traffic (28-43 % of the FMA peak). The fused kernel (expansion_recipes.py) computes the expanded rows a
band of output rows needs into a small ring of rows that stays in cache, one channel block at a time.

The pass runs on glow_ir right before glow-allocate, after glow-ir-optimize-inserts has made the 1x1
convolution write its result into the interior of the depthwise convolution's zero-padded input P. For a
depthwise `glow_ir.cpu_conv_nhwc` (one channel per group, f32) reading P, it applies when:

1. P is an activation that only a zero splat, the 1x1 convolution (through a block_view of its interior, or P
   itself without padding) and the depthwise convolution access, whose window spans at least its stride down
   the rows (a band of output rows then reads the last rows of the band before);
2. the 1x1 convolution has unit strides, one group, a constant filter, and f32 operands (or, in place of the
   1x1, a convolution of at most STEM_TAPS multiply-adds per output: MobileNets' and EfficientNets' stems feed
   their first depthwise layer, on the largest map, likewise);
3. between the two, no instruction writes the 1x1 convolution's input or bias, which the fused instruction
   reads at the depthwise convolution's place, and neither is the depthwise convolution's output buffer.

The fused instruction takes the depthwise convolution's place; the dealloc of the input (and of a computed bias)
moves after it when it came before, so glow-allocate keeps them alive through it. P, its splat and its views
are deleted.
"""

from __future__ import annotations

from mlir import ir

from glow_mlir import ops
from glow_mlir.backends.cpu.ops import EXPAND_ACTIVATION
from glow_mlir.backends.cpu.recipes import is_float32
from glow_mlir.passes.ir import utils as u
from glow_mlir.passes.registry import register

CONV = "glow_ir.cpu_conv_nhwc"
# The most multiply-adds per output element of a producer other than a 1x1 expansion: a stem's 3x3 over RGB (27);
# a larger dense convolution has kernels of its own (Winograd, packed tiles) that the row tile does not match.
STEM_TAPS = 32
FUSED = "glow_ir.cpu_expand_depthwise_nhwc"
SPLAT = "glow_ir.splat"


def one_channel_per_group(op: ir.Operation) -> bool:
    """Whether `cpu_conv_nhwc` `op` is a depthwise convolution: one input and one output channel per group."""
    dest, src, filter_, _ = op.operands
    channels = ops.shape(src)[3]
    group = ir.IntegerAttr(op.attributes["group"]).value
    return group == channels == ops.shape(dest)[3] and ops.shape(filter_)[2] == 1


def _is_depthwise(op: ir.Operation) -> bool:
    """One channel per group, and windows that overlap or touch down the rows (the kernel's bands carry rows
    over from one to the next)."""
    window = (ops.ints(op, "kernels")[0] - 1) * ops.ints(op, "dilation")[0] + 1
    return one_channel_per_group(op) and window >= ops.ints(op, "strides")[0]


def _is_expansion(op: ir.Operation) -> bool:
    """A convolution with one group and a constant filter that the fused kernel's row tile computes as fast as
    a kernel of its own: a 1x1 with unit strides (an expansion), or one of at most STEM_TAPS multiply-adds per
    output element (a network's stem: 3x3 over 3 channels, 27)."""
    if op.name != CONV or ir.IntegerAttr(op.attributes["group"]).value != 1 or not u.is_global(op.operands[2]):
        return False
    kh, kw, c, _ = ops.shape(op.operands[2])
    expansion = [kh, kw] == [1, 1] and ops.ints(op, "strides") == [1, 1]
    return expansion or kh * kw * c <= STEM_TAPS


def _zero_splat(op: ir.Operation) -> bool:
    return op.name == SPLAT and ir.FloatAttr(op.attributes["value"]).value == 0.0


_Pair = tuple[ir.Operation, ir.Operation | None]


def _match(dw: ir.Operation, block: list[ir.Operation], order: dict[int, int]) -> _Pair | None:
    """(the expansion, the zero splat of the padding or None) when depthwise `dw` fuses (module docstring);
    `block` lists the ops of its block, `order` their positions by address."""

    def at(op: ir.Operation) -> int:
        return order[u.address(op)]

    padded = dw.operands[1]
    if not u.is_activation(padded) or not all(is_float32(v) for v in dw.operands) or not _is_depthwise(dw):
        return None
    accesses = [op for op in u.accessing(padded) if op != dw]
    expansions = [op for op in accesses if _is_expansion(op) and u.root(op.operands[0]) == padded]
    splats = [op for op in accesses if _zero_splat(op)]
    if len(expansions) != 1 or len(accesses) != 1 + len(splats) or len(splats) > 1:
        return None
    pw = expansions[0]
    view = pw.operands[0]
    if view != padded and (u.producer(view).name != u.BLOCK_VIEW or u.producer(view).operands[0] != padded):
        return None
    if not all(is_float32(v) for v in pw.operands) or at(pw) > at(dw):
        return None
    if view != padded and not splats:
        return None
    splat = splats[0] if splats else None
    if splat is not None and at(splat) > at(pw):
        return None
    read = {u.root(v) for v in pw.operands[1:]}
    if u.root(dw.operands[0]) in read:
        return None
    between = [op for op in block[at(pw) + 1 : at(dw)] if u.is_instruction(op)]
    if any(buffer in read for op in between for buffer, _ in u.writes(op)):
        return None
    return pw, splat


def _pads(pw: ir.Operation, padded: ir.Value) -> list[int]:
    """[top, left, bottom, right]: where the expansion's block sits in the padded buffer."""
    view = pw.operands[0]
    top = left = 0
    if view != padded:
        _, top, left, _ = ops.ints(u.producer(view), "start")
    _, h, w, _ = ops.shape(view)
    _, hp, wp, _ = ops.shape(padded)
    return [top, left, hp - h - top, wp - w - left]


def fuse_function(function: ir.Operation) -> None:
    """Fuses every expansion -> depthwise pair of `function`. The pairs are found first: each rewrite touches
    only its own pair's ops, its padded buffer and its input's dealloc."""
    block = u.block_ops(u.body(function))
    order = {u.address(op): i for i, op in enumerate(block)}
    pairs = [(dw, found) for dw in block if dw.name == CONV and (found := _match(dw, block, order)) is not None]
    for dw, (pw, splat) in pairs:
        _rewrite(dw, pw, splat, order[u.address(dw)], order)


def _rewrite(dw: ir.Operation, pw: ir.Operation, splat: ir.Operation | None, place: int,
             order: dict[int, int]) -> None:  # fmt: skip
    """Replaces `dw` by the fused instruction, keeps the expansion's input alive through it, and deletes the
    expansion, the padded buffer, its splat and views."""
    padded = dw.operands[1]
    dest, _, dw_filter, dw_bias = dw.operands
    _, src, filter_, bias = pw.operands
    attributes = {
        "roles": ir.ArrayAttr.get([ir.StringAttr.get(r) for r in ("out", "in", "in", "in", "in", "in")]),
        "kernels": dw.attributes["kernels"],
        "strides": dw.attributes["strides"],
        "dilation": dw.attributes["dilation"],
        "pads": ir.DenseI64ArrayAttr.get(_pads(pw, padded)),
        "expandKernels": pw.attributes["kernels"],
        "expandStrides": pw.attributes["strides"],
        "expandDilation": pw.attributes["dilation"],
        EXPAND_ACTIVATION[0]: pw.attributes["activation"],
        EXPAND_ACTIVATION[1]: pw.attributes["activationArgs"],
        "activation": dw.attributes["activation"],
        "activationArgs": dw.attributes["activationArgs"],
    }
    location = ir.Location.fused([pw.location, dw.location])
    with ir.InsertionPoint(dw):
        new = ir.Operation.create(FUSED, operands=[dest, src, filter_, bias, dw_filter, dw_bias],
                                  attributes=attributes, loc=location)  # fmt: skip
    for source in {u.root(v) for v in (src, filter_, bias)}:
        release = u.dealloc_of(source) if u.is_activation(source) else None
        if release is not None and order[u.address(release)] < place:
            release.move_after(new)
            order[u.address(release)] = place
    for op in (dw, pw, splat):
        if op is not None:
            op.erase()
    for value in reversed(u.views_and_self(padded)):
        for user in u.users(value):
            user.erase()
        if value != padded:
            u.producer(value).erase()
    u.producer(padded).erase()


@register("glow-cpu-fuse-expansion")
def cpu_fuse_expansion(module: ir.Module) -> None:
    """Fuse each 1x1 expansion convolution with the depthwise convolution that reads its padded result."""
    for function in ops.functions(module):
        fuse_function(function)
