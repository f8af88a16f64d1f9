"""onnxruntime's contrib ops of decoder language models (onnxruntime-genai's model builder, Olive, optimum's
int4 exports), imported as bodies of default-domain ops like those of contrib.py, whose `body` registry they
join.

- RotaryEmbedding (com.microsoft) is ONNX's RotaryEmbedding (opset 23) with its inputs in another order and
  position ids that may be one start offset (shape [1]: positions start + 0 .. S - 1 in every batch row).
- MatMulNBits is A @ W + bias for a W [K, N] quantized to 2, 4 or 8 bits in blocks of `block_size` along K, its
  values bit-packed in bytes (lowest bits first) as B [N, K / block_size, block_size x bits / 8], each block
  with a scale and a zero point (packed likewise, or of A's type, or 2^(bits - 1) where absent): W = (q - zero)
  x scale. With B, the scales and the zero points constants (as the exporters write them) the body folds into
  a float W at compile time and the product runs as a float MatMul; the result is onnxruntime's at its default
  accuracy_level (A not quantized).

GroupQueryAttention, which these models carry with their KV cache, is refused by name (registry.handler: no
handler of another domain)."""

from __future__ import annotations

import numpy as np
import onnx

from glow_mlir.frontends.onnx.contrib import Body, body

# The default-domain opset of a body holding ONNX's RotaryEmbedding, defined (as a function) since opset 23.
ROTARY_OPSET = 23


@body("RotaryEmbedding")
def rotary_embedding(b: Body) -> None:
    """ONNX's RotaryEmbedding of inputs input, cos_cache, sin_cache and position_ids (input 1), position ids of
    shape [1] a start added to positions 0 to S - 1 of every batch row; attributes interleaved, num_heads and
    rotary_embedding_dim. onnxruntime's `scale` does not change its CPU kernel's result."""
    if int(b.attr("is_packed_batching", 0)):
        raise b.refuse("is_packed_batching (ragged batches) is not supported")
    b.opset = ROTARY_OPSET
    dims = [d.dim_value for d in b.types[0].tensor_type.shape.dim]
    batch, sequence = (dims[0], dims[2]) if len(dims) == 4 else (dims[0], dims[1])
    positions = b.input(1)
    if [d.dim_value for d in b.types[1].tensor_type.shape.dim] == [1]:
        offsets = b.add("Add", [positions, b.constant(np.arange(sequence), np.int64)])
        positions = b.add("Expand", [offsets, b.constant([batch, sequence], np.int64)])
    attrs = {key: int(b.attr(key, 0)) for key in ("interleaved", "num_heads", "rotary_embedding_dim")}
    b.add("RotaryEmbedding", [b.input(0), b.input(2), b.input(3), positions], [b.output(0)],
          **{key: value for key, value in attrs.items() if value})  # fmt: skip


def _unpacked(b: Body, packed: str, bits: int, rows: int, count: int) -> str:
    """The `bits`-wide unsigned values packed in the bytes of `packed` (lowest bits first), as [rows, count]:
    each byte shifted right by 0, bits, 2 bits, ... and masked, the first `count` values of each row."""
    per_byte = 8 // bits
    flat = b.add("Reshape", [packed, b.constant([rows, -1, 1], np.int64)])
    shifted = b.add("BitShift", [flat, b.constant(np.arange(per_byte) * bits, np.uint8)], direction="RIGHT")
    values = b.add("BitwiseAnd", [shifted, b.constant((1 << bits) - 1, np.uint8)])
    values = b.add("Reshape", [values, b.constant([rows, -1], np.int64)])
    return b.add("Slice", [values, b.constant([0], np.int64), b.constant([count], np.int64),
                           b.constant([1], np.int64)])  # fmt: skip


@body("MatMulNBits")
def matmul_nbits(b: Body) -> None:
    """A @ W (+ bias, input 5) for W [K, N] = (q - zero_point) x scale per block of block_size along K, q the 2-,
    4- or 8-bit values packed in B's bytes (module docstring)."""
    k, n, bits, block = (int(b.attr(key, 0)) for key in ("K", "N", "bits", "block_size"))
    if bits not in (2, 4, 8):
        raise b.refuse(f"bits {bits}: onnxruntime packs 2, 4 or 8")
    if block < 16 or block & (block - 1):
        raise b.refuse(f"block_size {block} is not a power of 2 of at least 16")
    if int(b.attr("weight_prepacked", 0)):
        raise b.refuse("weights prepacked for an execution provider's layout")
    if b.input(4):
        raise b.refuse("g_idx (deprecated) is not supported")
    if b.rank(0) < 1 or b.types[0].tensor_type.shape.dim[-1].dim_value != k:
        raise b.refuse(f"A's last dim is not K = {k}")
    blocks = -(-k // block)
    dtype = b.dtype(0)
    onnx_type = onnx.helper.np_dtype_to_tensor_dtype(dtype)
    q = b.add("Cast", [_unpacked(b, b.input(1), bits, n, blocks * block)], to=onnx_type)
    q = b.add("Reshape", [q, b.constant([n, blocks, block], np.int64)])
    if not b.input(3):
        zero = b.constant(float(1 << (bits - 1)), dtype)
    else:
        zero = b.input(3)
        if b.dtype(3) == np.uint8:
            zero = b.add("Cast", [_unpacked(b, zero, bits, n, blocks)], to=onnx_type)
        zero = b.add("Reshape", [zero, b.constant([n, blocks, 1], np.int64)])
    scales = b.add("Reshape", [b.input(2), b.constant([n, blocks, 1], np.int64)])
    w = b.add("Mul", [b.add("Sub", [q, zero]), scales])
    w = b.add("Reshape", [w, b.constant([n, blocks * block], np.int64)])
    if blocks * block != k:
        w = b.add("Slice", [w, b.constant([0], np.int64), b.constant([k], np.int64), b.constant([1], np.int64)])
    product = [b.input(0), b.add("Transpose", [w], perm=[1, 0])]
    if not b.input(5):
        b.add("MatMul", product, [b.output(0)])
        return
    b.add("Add", [b.add("MatMul", product), b.input(5)], [b.output(0)])
