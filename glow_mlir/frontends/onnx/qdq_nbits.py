"""Weight-only quantized products written as QDQ: DequantizeLinear of a constant 4- or 8-bit W [K, N] in blocks
along K, read only as MatMul's B, imported as the com.microsoft.MatMulNBits it stands for.

onnxruntime's MatMulNBitsQuantizer with `quant_format=QDQ` (and other tools writing ONNX's int4 types, opset 21)
save a decoder's projections so; onnxruntime fuses each pair into MatMulNBits itself (its DQMatMulToMatMulNBits
transformer). Imported op by op, the DequantizeLinear folded into a float32 W (8x the bytes of a 4-bit one)
that the product then read. The pair becomes the MatMulNBits node of the same values instead: B's values
unsigned (a signed type's q + 2^(bits - 1), its zero point likewise, so q - zero is unchanged) and packed two
or one to a byte along K in whole blocks, the scales and the float zero points [N, blocks]; its body is
glow.matmul_nbits (contrib_decoder.py), which the CPU backend runs on the packed values.
"""

from __future__ import annotations

from collections.abc import MutableMapping

import ml_dtypes
import numpy as np
import onnx
from onnx import helper

from glow_mlir.frontends.onnx.contrib import CONTRIB_DOMAIN
from glow_mlir.frontends.onnx.loading import DEFAULT_DOMAINS, uses

# Element types of W and their width; signed ones are offset by 2^(bits - 1).
_BITS = {np.dtype(ml_dtypes.int4): 4, np.dtype(ml_dtypes.uint4): 4, np.dtype(np.int8): 8, np.dtype(np.uint8): 8}


def fused_products(graph: onnx.GraphProto, env: MutableMapping[str, object]) -> dict[int, onnx.NodeProto | None]:
    """The nodes of `graph` to import in place of others, by index: each fused MatMul's MatMulNBits, None for each
    DequantizeLinear they replace (nothing else reads it). The new constants are bound in `env`."""
    # Who reads each value, and as which input (-1: a subgraph of the node reads it).
    readers: dict[str, list[tuple[int, int]]] = {}
    for index, node in enumerate(graph.node):
        for slot, value in enumerate(node.input):
            readers.setdefault(value, []).append((index, slot))
        for value in uses(node)[sum(1 for v in node.input if v):]:
            readers.setdefault(value, []).append((index, -1))
    outputs = {o.name for o in graph.output}
    replaced: dict[int, onnx.NodeProto | None] = {}
    for index, node in enumerate(graph.node):
        if node.op_type != "DequantizeLinear" or node.domain not in DEFAULT_DOMAINS or node.output[0] in outputs:
            continue
        users = readers.get(node.output[0], [])
        if not users or any(slot != 1 or graph.node[i].op_type != "MatMul" for i, slot in users):
            continue
        packed = _packed(node, env)
        if packed is None:
            continue
        replaced[index] = None
        names = [f"{node.output[0]}/nbits/{part}" for part in ("b", "scales", "zeros")]
        env.update(zip(names, packed[0], strict=True))
        for i, _ in users:
            product = graph.node[i]
            replaced[i] = helper.make_node("MatMulNBits", [product.input[0], *names], list(product.output),
                                           name=product.name, domain=CONTRIB_DOMAIN, **packed[1])  # fmt: skip
    return replaced


def _packed(node: onnx.NodeProto, env: MutableMapping[str, object]) -> tuple[list[np.ndarray], dict[str, int]] | None:
    """MatMulNBits' B, scales and float zero points and its attributes for DequantizeLinear `node`, or None when
    it is not a constant W [K, N] of 4 or 8 bits in blocks of 16 or more (a power of 2) along K."""
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    q, scale = env.get(node.input[0]), env.get(node.input[1])
    zero = env.get(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    if not isinstance(q, np.ndarray) or not isinstance(scale, np.ndarray) or q.ndim != 2 or q.dtype not in _BITS:
        return None
    k, n = q.shape
    block = int(attrs.get("block_size", 0))
    if attrs.get("axis", 1) % 2 != 0 or block < 16 or block & (block - 1) or scale.dtype != np.float32:
        return None
    blocks, bits = -(-k // block), _BITS[q.dtype]
    zero_fits = zero is None or (isinstance(zero, np.ndarray) and zero.shape == scale.shape and zero.dtype == q.dtype)
    float_output = attrs.get("output_dtype", onnx.TensorProto.FLOAT) == onnx.TensorProto.FLOAT
    if scale.shape != (blocks, n) or not zero_fits or not float_output:
        return None
    offset = 1 << (bits - 1) if q.dtype in (np.dtype(ml_dtypes.int4), np.dtype(np.int8)) else 0
    values = np.zeros((n, blocks * block), np.uint8)
    values[:, :k] = (q.astype(np.int16) + offset).T
    per = 8 // bits
    b = np.zeros((n, blocks * block // per), np.uint8)
    for t in range(per):
        b |= values[:, t::per] << (t * bits)
    zeros = np.full((n, blocks), offset, np.float32) if zero is None else (zero.astype(np.float32).T + offset)
    arrays = [b.reshape(n, blocks, -1), np.ascontiguousarray(scale.T), np.ascontiguousarray(zeros, np.float32)]
    return arrays, {"K": k, "N": n, "bits": bits, "block_size": block}
