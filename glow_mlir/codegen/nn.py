"""glow-ir-to-linalg's lowerings of neural-network instructions on NCHW buffers: convolution, fused
convolution, conv_transpose, max and average pools.

Convolutions are linalg's named convolutions (grouped ones on views with an explicit group dimension),
accumulating into dest, which starts as the bias; conv_transpose, scatter-shaped, is scf loops. The CPU
backend's NHWC forms of these instructions are glow_mlir/backends/cpu/lowerings.py.
"""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import arith, linalg, memref

from glow_mlir import ops
from glow_mlir.codegen.builders import (
    conv_operands,
    elementwise,
    fill,
    float_only,
    generic,
    identity_map,
    index,
    loop_nest,
    pair,
    rank4,
    reshape,
    scalar,
)
from glow_mlir.codegen.math import activate
from glow_mlir.codegen.table import fail, lowering, register_lowerings
from glow_mlir.opdefs.scalar import add, mul


def _convolution(op: ir.Operation) -> None:
    dest, src, filter_, bias, kernels, strides, dilation, group = conv_operands(op)
    n, c, h, w = rank4(op, src)
    _, f, oh, ow = rank4(op, dest)
    filter_dims = ops.shape(filter_)
    if group < 1 or c % group or f % group or filter_dims != (f, c // group, *kernels):
        raise fail(op, f"filter {list(filter_dims)} does not fit {c} channels, {f} filters, group {group}")
    if ops.shape(bias) != (f,):
        raise fail(op, f"bias {list(ops.shape(bias))} is not [{f}]")

    # The conv accumulates into dest, so dest starts as the bias broadcast along N, H and W.
    bias_map = ir.AffineMap.get(4, 0, [ir.AffineDimExpr.get(1)])
    generic([bias], dest, [bias_map, identity_map(4)], lambda a: a[0])
    if group == 1:
        linalg.conv_2d_nchw_fchw(src, filter_, outs=[dest], strides=strides, dilations=dilation)
        return
    # Grouped (and depthwise) convolutions: the same buffers seen with an explicit group dimension.
    g = group
    linalg.conv_2d_ngchw_gfchw(
        reshape(src, [n, g, c // g, h, w]),
        reshape(filter_, [g, f // g, c // g, *kernels]),
        outs=[reshape(dest, [n, g, f // g, oh, ow])],
        strides=strides,
        dilations=dilation,
    )


@lowering("fused_convolution")
@float_only
def _fused_convolution(op: ir.Operation) -> None:
    """dest = activation(convolution): the NCHW convolution as `_convolution` emits it, then the activation."""
    _convolution(op)
    activate(op, op.operands[0])


@lowering("conv_transpose")
@float_only
def _conv_transpose(op: ir.Operation) -> None:
    dest, src, filter_, bias, kernels, strides, dilation, group = conv_operands(op)
    n, c, h, w = rank4(op, src)
    _, f, oh, ow = rank4(op, dest)
    if group < 1 or c % group or f % group or ops.shape(filter_) != (c, f // group, *kernels):
        raise fail(op, f"filter {list(ops.shape(filter_))} does not fit {c} channels, {f} outputs, group {group}")
    if ops.shape(bias) != (f,):
        raise fail(op, f"bias {list(ops.shape(bias))} is not [{f}]")
    reach = [(size - 1) * s + (k - 1) * d + 1 for size, s, k, d in zip((h, w), strides, kernels, dilation)]
    # Rows and columns past the reach of the kernel (ONNX's output_padding) hold the bias only.
    if oh < reach[0] or ow < reach[1]:
        raise fail(op, f"destination {oh}x{ow} is smaller than the {reach[0]}x{reach[1]} the kernel reaches")
    cg, og = c // group, f // group

    bias_map = ir.AffineMap.get(4, 0, [ir.AffineDimExpr.get(1)])
    generic([bias], dest, [bias_map, identity_map(4)], lambda a: a[0])

    # Each input element scatters its products over a KH x KW window of the output:
    # dest[n, g*og + o, ih*sh + kh*dh, iw*sw + kw*dw] += src[n, g*cg + ci, ih, iw] * filter[g*cg + ci, o, kh, kw].
    def each_input(iv: list[ir.Value]) -> None:
        b, g, ci, ih, iw = iv
        channel = arith.addi(arith.muli(g, index(cg)), ci)
        x = memref.load(src, [b, channel, ih, iw])
        row0, col0 = arith.muli(ih, index(strides[0])), arith.muli(iw, index(strides[1]))

        def scatter(kv: list[ir.Value]) -> None:
            o, kh, kw = kv
            out = [
                b,
                arith.addi(arith.muli(g, index(og)), o),
                arith.addi(row0, arith.muli(kh, index(dilation[0]))),
                arith.addi(col0, arith.muli(kw, index(dilation[1]))),
            ]
            product = mul(x, memref.load(filter_, [channel, o, kh, kw]))
            memref.store(add(memref.load(dest, out), product), dest, out)

        loop_nest([og, *kernels], scatter)

    loop_nest([n, group, cg, h, w], each_input)


def _pool(op: ir.Operation, init: float, build: Callable[..., object]) -> tuple[ir.Value, int]:
    dest, src = op.operands
    rank4(op, src)
    rank4(op, dest)
    kernels, strides = pair(op, "kernels"), pair(op, "strides")
    fill(dest, init)
    # linalg reads only the shape of the window operand; a stack buffer holds no data and costs nothing.
    window = memref.AllocaOp(ops.memref_type(kernels, ops.element_type(src)), [], []).result
    build(src, window, outs=[dest], strides=strides, dilations=[1, 1])
    return dest, kernels[0] * kernels[1]


def max_pool(op: ir.Operation, build: Callable[..., object] = linalg.pooling_nchw_max) -> None:
    _pool(op, float("-inf"), build)


def avg_pool(op: ir.Operation, build: Callable[..., object] = linalg.pooling_nchw_sum) -> None:
    dest, window_size = _pool(op, 0.0, build)
    size = scalar(ops.element_type(dest), float(window_size))
    elementwise([], dest, lambda a: arith.divf(a[0], size))


register_lowerings(
    {
        "convolution": float_only(_convolution),
        "max_pool": float_only(max_pool),
        "avg_pool": float_only(avg_pool),
    }
)
