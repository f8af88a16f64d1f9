"""onnxruntime's contrib ops of decoder language models (onnxruntime-genai's model builder, Olive, optimum's
int4 exports), imported as bodies of default-domain ops like those of contrib.py, whose `body` registry they
join.

- RotaryEmbedding (com.microsoft) is ONNX's RotaryEmbedding (opset 23) with its inputs in another order and
  position ids that may be one start offset (shape [1]: positions start + 0 .. S - 1 in every batch row).
- MatMulNBits is A @ W + bias for a W [K, N] quantized to 2, 4 or 8 bits in blocks of `block_size` along K, its
  values bit-packed in bytes (lowest bits first) as B [N, K / block_size, block_size x bits / 8], each block
  with a scale and a zero point (packed likewise, or of A's type, or 2^(bits - 1) where absent): W = (q - zero)
  x scale. Its body is glow.matmul_nbits of A's rows (a node of GLOW_DOMAIN), which the CPU backend runs on the
  packed values (backends/cpu/nbits.py) where B, the scales and the zero points are constants, as exporters
  write them; the result is onnxruntime's at its default accuracy_level (A not quantized).

- GatherBlockQuantized gathers rows of a table quantized as MatMulNBits' B is (an int4 embedding table shared
  with the output projection): the packed rows are gathered and dequantized at run time, so the table stays packed.
- GroupQueryAttention is their attention over a KV cache: queries of N heads over keys and values of kv_num_heads
  heads (N / kv_num_heads queries share each), the step's keys and values written into the cache, causal, with
  rotary embedding (do_rotary), a local window, a softcap, an attention bias and attention sinks (head_sink,
  smooth_softmax). Its cache holds max(total_sequence_length, past length) rows, a shape set by a value: with
  total_sequence_length computed from shapes (onnxruntime-genai's models take it from the attention mask's
  shape) it folds; fed as a graph input, InferenceSession compiles per value (StaticInputRequired). Each batch
  row's cached length (seqlens_k + 1) is read at run time, where it places the step's rows and masks the keys,
  so ragged batches and a cache shared between past and present (a buffer of the longest length) work as
  onnxruntime's do. With sliding_window_cache (Gemma 2's local layers) the cache is the past's C rows, holding
  each row's latest tokens as onnxruntime evicts them (`_window_cache`)."""

from __future__ import annotations

import numpy as np
import onnx

from glow_mlir.frontends.onnx.contrib import Body, body, split_heads
from glow_mlir.frontends.onnx.node import GLOW_DOMAIN, NodeContext, Value, float16_in_float32
from glow_mlir.frontends.onnx.registry import handles_glow

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
    dims = b.dims(0)
    batch, sequence = (dims[0], dims[2]) if len(dims) == 4 else (dims[0], dims[1])
    positions = b.input(1)
    if b.dims(1) == [1]:
        offsets = b.add("Add", [positions, b.constant(np.arange(sequence), np.int64)])
        positions = b.add("Expand", [offsets, b.constant([batch, sequence], np.int64)])
    attrs = {key: int(b.attr(key, 0)) for key in ("interleaved", "num_heads", "rotary_embedding_dim")}
    b.add("RotaryEmbedding", [b.input(0), b.input(2), b.input(3), positions], [b.output(0)],
          **{key: value for key, value in attrs.items() if value})  # fmt: skip


def _unpacked(b: Body, packed: str, bits: int, rows: int, count: int, dtype: np.dtype) -> str:
    """The `bits`-wide unsigned values packed in the bytes of `packed` (lowest bits first), as [rows, count] of
    `dtype`: each byte shifted right by 0, bits, 2 bits, ... and masked, the first `count` values of each row."""
    per_byte = 8 // bits
    flat = b.add("Reshape", [packed, b.constant([rows, -1, 1], np.int64)])
    shifted = b.add("BitShift", [flat, b.constant(np.arange(per_byte) * bits, np.uint8)], direction="RIGHT")
    values = b.add("BitwiseAnd", [shifted, b.constant((1 << bits) - 1, np.uint8)])
    values = b.add("Reshape", [values, b.constant([rows, -1], np.int64)])
    first = b.add("Slice", [values, b.constant([0], np.int64), b.constant([count], np.int64),
                            b.constant([1], np.int64)])  # fmt: skip
    return b.add("Cast", [first], to=onnx.helper.np_dtype_to_tensor_dtype(dtype))


def _zero_points(b: Body, zeros: str, bits: int, rows: int, blocks: int, dtype: np.dtype) -> str:
    """The zero points [rows, blocks] of `dtype`: `zeros` (input 3's values) bytes packed as the values are, or of
    `dtype`; 2^(bits - 1) where ''."""
    if not zeros:
        return b.constant(np.full((rows, blocks), 1 << (bits - 1)), dtype)
    if b.dtype(3) == np.uint8:
        return _unpacked(b, zeros, bits, rows, blocks, dtype)
    return b.add("Reshape", [zeros, b.constant([rows, blocks], np.int64)])


def _dequantized(b: Body, q: str, bits: int, shape: tuple[int, int, int], count: int, dtype: np.dtype,
                 scales: str, zeros: str) -> str:  # fmt: skip
    """q (values of `dtype`, [rows, blocks x block] of `shape` (rows, blocks, block)) dequantized per block:
    (q - zero) x scale, `scales` [rows, blocks] and `zeros` the zero points (bytes packed as q's were, of
    `dtype`; 2^(bits - 1) where ''); the first `count` values of each row, [rows, count]."""
    (rows, blocks, block), i64 = shape, np.int64
    q = b.add("Reshape", [q, b.constant([rows, blocks, block], i64)])
    zero = b.add("Reshape", [_zero_points(b, zeros, bits, rows, blocks, dtype), b.constant([rows, blocks, 1], i64)])
    scales = b.add("Reshape", [scales, b.constant([rows, blocks, 1], i64)])
    values = b.add("Mul", [b.add("Sub", [q, zero]), scales])
    values = b.add("Reshape", [values, b.constant([rows, blocks * block], i64)])
    if blocks * block == count:
        return values
    return b.add("Slice", [values, b.constant([0], i64), b.constant([count], i64), b.constant([1], i64)])


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
    if b.rank(0) < 1 or b.dims(0)[-1] != k:
        raise b.refuse(f"A's last dim is not K = {k}")
    blocks, dtype, i64 = -(-k // block), b.dtype(0), np.int64
    # glow.matmul_nbits of A's rows, B's whole blocks [N, blocks, block x bits / 8] and zero points of A's type.
    operands = [b.add("Reshape", [b.input(0), b.constant([-1, k], i64)]),
                b.add("Reshape", [b.input(1), b.constant([n, blocks, block * bits // 8], i64)]),
                b.add("Reshape", [b.input(2), b.constant([n, blocks], i64)]),
                _zero_points(b, b.input(3), bits, n, blocks, dtype)]  # fmt: skip
    product = b.add("MatMulNBits", operands, domain=GLOW_DOMAIN, bits=bits)
    if b.input(5):
        # Added to the [M, N] product, where glow-fuse-activations folds it into the CPU's kernel.
        product = b.add("Add", [product, b.input(5)])
    b.add("Reshape", [product, b.constant([*b.dims(0)[:-1], n], i64)], [b.output(0)])


@handles_glow("MatMulNBits")
@float16_in_float32
def glow_matmul_nbits(ctx: NodeContext) -> list[Value]:
    """The body's product: glow.matmul_nbits of A's rows [M, K], B [N, blocks, bytes], scales and zero points
    [N, blocks] (float16 ones in float32, the sum rounded once as MatMul's)."""
    return [ctx.g.matmul_nbits(*ctx.inputs, bits=int(ctx.attr("bits")))]


@body("GatherBlockQuantized")
def gather_block_quantized(b: Body) -> None:
    """Gather along gather_axis 0 of data [..., M] dequantized as MatMulNBits' B is: uint8 bytes of 2-, 4- or 8-bit
    values packed along the last axis (the quantize_axis), in blocks of block_size with a scale each and a zero
    point (packed likewise, or 2^(bits - 1)); an index outside [-s, s) gives zeros (onnxruntime-genai's int4
    embedding tables, shared with the output projection)."""
    bits, block = int(b.attr("bits", 4)), int(b.attr("block_size", 128))
    dims, rank = b.dims(0), b.rank(0)
    if b.dtype(0) != np.uint8 or bits not in (2, 4, 8):
        raise b.refuse(f"data of {b.dtype(0)} at {bits} bits: uint8 bytes of 2-, 4- or 8-bit values are supported")
    if int(b.attr("gather_axis", 0)) % rank != 0 or int(b.attr("quantize_axis", rank - 1)) % rank != rank - 1:
        raise b.refuse("gather_axis 0 and the last quantize_axis are supported")
    count, blocks, i64, dtype = dims[-1] * 8 // bits, b.dims(2)[-1], np.int64, b.dtype(2)
    # onnxruntime's out-of-range index reads zeros: gather at a clamped index, then zero those rows. The packed
    # rows, their scales and zero points are gathered and only they dequantized: the table stays packed.
    size = dims[0]
    indices = b.add("Cast", [b.input(1)], to=onnx.TensorProto.INT64)
    inside = b.add("And", [b.add("GreaterOrEqual", [indices, b.constant(-size, i64)]),
                           b.add("Less", [indices, b.constant(size, i64)])])  # fmt: skip
    clamped = b.add("Clip", [indices, b.constant(-size, i64), b.constant(size - 1, i64)])
    scales, zeros = (b.add("Gather", [b.input(i), clamped], axis=0) if b.input(i) else "" for i in (2, 3))
    shape = [*b.dims(1), *dims[1:-1]]
    rows = int(np.prod(shape))
    # The data's values are packed without gaps: the last block, where it runs past the row, is padded.
    q = _unpacked(b, b.add("Gather", [b.input(0), clamped], axis=0), bits, rows, count, dtype)
    if blocks * block != count:
        q = b.add("Pad", [q, b.constant([0, 0, 0, blocks * block - count], i64)])
    gathered = _dequantized(b, q, bits, (rows, blocks, block), count, dtype, scales, zeros)
    gathered = b.add("Reshape", [gathered, b.constant([*shape, count], i64)])
    if rank > 1:
        inside = b.add("Unsqueeze", [inside, b.constant(list(range(b.rank(1), b.rank(1) + rank - 1)), i64)])
    b.add("Where", [inside, gathered, b.constant(0.0, dtype)], [b.output(0)])


# GroupQueryAttention's inputs and modes the body does not take (quantized caches' scales, Qwen3's Q/K norms,
# right-padded query chunks, the QK output), refused by name.
GQA_REFUSED_INPUTS = {12: "k_scale", 13: "v_scale", 14: "q_norm_weight", 15: "k_norm_weight", 16: "query_seqlens"}
GQA_REFUSED_FLAGS = ("qk_output",)


def _row(b: Body, values: list[str]) -> str:
    """The int64 values (each [1]) as one [n] tensor."""
    return b.add("Concat", values, axis=0) if len(values) > 1 else values[0]


@body("GroupQueryAttention")
def group_query_attention(b: Body) -> None:
    """Causal attention of query [B, S, N x h] over the cache after this step (module docstring): outputs the
    attention [B, S, N x h] and present_key / present_value [B, kv_num_heads, max(total, past), h], the step's
    rows at each batch row's seqlens_k + 1 - S (0 for a first prompt, S == total_sequence_length); with
    sliding_window_cache, of the past's rows, the latest tokens resident."""
    for i, name in GQA_REFUSED_INPUTS.items():
        if b.input(i):
            raise b.refuse(f"input {i} ({name}) is not supported")
    for flag in GQA_REFUSED_FLAGS:
        if int(b.attr(flag, 0)):
            raise b.refuse(f"{flag}={b.attr(flag)} is not supported")
    for quant in ("k_quant_type", "v_quant_type"):
        if b.text(quant, "NONE") != "NONE":
            raise b.refuse(f"a quantized KV cache ({quant}) is not supported")
    if b.wanted(3):
        raise b.refuse("output 3 (output_qk) is not supported")
    heads, kv_heads = int(b.attr("num_heads", 0)), int(b.attr("kv_num_heads", 0))
    batch, sequence, width = b.dims(0)
    packed = not b.input(1)
    if heads <= 0 or kv_heads <= 0 or heads % kv_heads or width % (heads + 2 * kv_heads if packed else heads):
        raise b.refuse(f"num_heads {heads} and kv_num_heads {kv_heads} do not split the query's {width} features")
    size = width // (heads + 2 * kv_heads) if packed else width // heads
    group = heads // kv_heads
    past = b.dims(3)[2] if b.input(3) else 0
    dtype, i64 = b.dtype(0), np.int64
    if packed:
        b.add("Split", [b.input(0), b.constant([heads * size, kv_heads * size, kv_heads * size], i64)], 3, axis=2)
        q, k, v = b.nodes[-1].output
    else:
        q, k, v = b.input(0), b.input(1), b.input(2)

    # Per batch row: its cached length after the step and the position of its first new row.
    total = b.add("Cast", [b.add("Reshape", [b.input(6), b.constant([1], i64)])], to=onnx.TensorProto.INT64)
    lengths = b.add("Add", [b.add("Cast", [b.input(5)], to=onnx.TensorProto.INT64), b.constant(1, i64)])
    first = b.add("Equal", [total, b.constant([sequence], i64)])
    start = b.add("Where", [first, b.constant(0, i64), b.add("Sub", [lengths, b.constant(sequence, i64)])])
    positions = b.add("Add", [b.add("Unsqueeze", [start, b.constant([1], i64)]), b.constant(np.arange(sequence), i64)])
    if b.attr("do_rotary", 0):
        rotary_positions = positions
        if b.input(9):
            # position_ids, but for a first prompt their first element followed by the next S - 1, in every
            # batch row (as onnxruntime's kernel reads them).
            corner = b.add("Slice", [b.input(9), b.constant([0, 0], i64), b.constant([1, 1], i64)])
            counted = b.add("Add", [corner, b.constant(np.arange(sequence), i64)])
            rotary_positions = b.add("Where", [first, counted, b.input(9)])
        q, k = (_rotated(b, value, n, size, rotary_positions) for value, n in ((q, heads), (k, kv_heads)))

    steps = [split_heads(b, new, batch, sequence, kv_heads, size, [0, 2, 1, 3]) for new in (k, v)]
    shape = (batch, sequence, kv_heads, size, past)
    # The grown cache's length, which attention_bias is padded to (a windowed cache refuses the bias).
    rows: str | None = None
    if int(b.attr("sliding_window_cache", 0)):
        present, attended, key_at, key_valid = _window_cache(b, steps, shape, lengths, start)
    else:
        present, rows, key_at, key_valid = _grown_cache(b, steps, shape, total, lengths, start)
        attended = present
    for value, out in zip(present, (1, 2), strict=True):
        b.add("Identity", [value], [b.output(out)])

    # Scores of each query head against its group's keys: [B, kv_heads, group, S, keys].
    queries = b.add("Reshape", [split_heads(b, q, batch, sequence, heads, size, [0, 2, 1, 3]),
                                b.constant([batch, kv_heads, group, sequence, size], i64)])  # fmt: skip
    attended_keys = b.add("Transpose", [b.add("Unsqueeze", [attended[0], b.constant([2], i64)])], perm=[0, 1, 2, 4, 3])
    scale = float(b.attr("scale", 0.0)) or 1 / np.sqrt(size)
    scores = b.add("Mul", [b.add("MatMul", [queries, attended_keys]), b.constant(scale, dtype)])
    softcap = float(b.attr("softcap", 0.0))
    if softcap > 0:
        capped = b.add("Tanh", [b.add("Div", [scores, b.constant(softcap, dtype)])])
        scores = b.add("Mul", [capped, b.constant(softcap, dtype)])
    if b.input(10):
        assert rows is not None
        scores = b.add("Add", [scores, _grouped_bias(b, rows, total, kv_heads, group, sequence)])
    # A key counts where it holds a token (key_valid), not after the query's position, and within
    # local_window_size of it; a query that sees none (a padded prompt's rows, whose output onnxruntime leaves
    # unspecified) weighs all equally rather than dividing by zero.
    key_row = b.add("Unsqueeze", [key_at, b.constant([1], i64)])
    query_at = b.add("Unsqueeze", [positions, b.constant([2], i64)])
    visible = b.add("And", [b.add("Unsqueeze", [key_valid, b.constant([1], i64)]),
                            b.add("LessOrEqual", [key_row, query_at])])  # fmt: skip
    window = int(b.attr("local_window_size", -1))
    if window > 0:
        earliest = b.add("Sub", [query_at, b.constant(window, i64)])
        visible = b.add("And", [visible, b.add("Greater", [key_row, earliest])])
    visible = b.add("Unsqueeze", [visible, b.constant([1, 2], i64)])
    scores = b.add("Where", [visible, scores, b.constant(np.finfo(dtype).min, dtype)])
    # A cache's rows that hold no token may hold anything (onnxruntime leaves them as they were, NaN included),
    # and weight 0 times NaN is NaN: their values are zeros.
    held = b.add("Unsqueeze", [key_valid, b.constant([1, 3], i64)])
    attended_values = b.add("Where", [held, attended[1], b.constant(0.0, dtype)])
    attended_values = b.add("Unsqueeze", [attended_values, b.constant([2], i64)])
    context = b.add("MatMul", [_sunk_softmax(b, scores, kv_heads, group), attended_values])
    context = b.add("Reshape", [context, b.constant([batch, heads, sequence, size], i64)])
    joined = b.add("Transpose", [context], perm=[0, 2, 1, 3])
    b.add("Reshape", [joined, b.constant([batch, sequence, heads * size], i64)], [b.output(0)])


def _counting(b: Body, count: str | int) -> str:
    """0, 1, ..., count - 1 (int64; `count` a [1] value, which must fold, or an int)."""
    if isinstance(count, int):
        return b.constant(np.arange(count), np.int64)
    ones = b.add("ConstantOfShape", [count], value=onnx.helper.make_tensor("one", onnx.TensorProto.INT64, [1], [1]))
    return b.add("Sub", [b.add("CumSum", [ones, b.constant(0, np.int64)]), b.constant(1, np.int64)])


def _placed(b: Body, step: str, base: str, index: str, taken: str, shape: list[str] | str) -> str:
    """Where(taken, step gathered along its rows at index, base): per batch row and cache row; index and taken
    [B, rows], expanded over the heads and the head's values to `shape`."""
    i64 = np.int64
    index = b.add("Expand", [b.add("Unsqueeze", [index, b.constant([1, 3], i64)]), shape])
    taken = b.add("Unsqueeze", [taken, b.constant([1, 3], i64)])
    return b.add("Where", [taken, b.add("GatherElements", [step, index], axis=2), base])


def _grown_cache(b: Body, steps: list[str], shape: tuple[int, int, int, int, int], total: str, lengths: str,
                 start: str) -> tuple[list[str], str, str, str]:  # fmt: skip
    """The cache after the step, max(total, past) rows (a shape set by total's value), the step's rows at
    [start, start + S) of each batch row, the past (padded with zeros) elsewhere; attention reads it, a key
    row counting below the batch row's length. (present, rows, key positions [1, rows], key valid [B, rows])."""
    batch, sequence, kv_heads, size, past = shape
    i64, dtype = np.int64, b.dtype(0)
    rows = b.add("Max", [total, b.constant([past], i64)])
    keys = _counting(b, rows)
    offset = b.add("Sub", [b.add("Unsqueeze", [keys, b.constant([0], i64)]),
                           b.add("Unsqueeze", [start, b.constant([1], i64)])])  # fmt: skip
    inside = b.add("And", [b.add("GreaterOrEqual", [offset, b.constant(0, i64)]),
                           b.add("Less", [offset, b.constant(sequence, i64)])])  # fmt: skip
    index = b.add("Clip", [offset, b.constant(0, i64), b.constant(sequence - 1, i64)])
    cache_shape = _row(b, [b.constant([batch, kv_heads], i64), rows, b.constant([size], i64)])
    present = []
    for step, past_input in zip(steps, (3, 4), strict=True):
        if past:
            pads = _row(b, [b.constant([0, 0, 0, 0, 0, 0], i64), b.add("Sub", [rows, b.constant([past], i64)]),
                            b.constant([0], i64)])  # fmt: skip
            base = b.add("Pad", [b.input(past_input), pads])
        else:
            base = b.add("ConstantOfShape", [cache_shape], value=onnx.helper.make_tensor(
                "zero", onnx.helper.np_dtype_to_tensor_dtype(dtype), [1], [0]))  # fmt: skip
        present.append(_placed(b, step, base, index, inside, cache_shape))
    key_at = b.add("Unsqueeze", [keys, b.constant([0], i64)])
    key_valid = b.add("Less", [key_at, b.add("Unsqueeze", [lengths, b.constant([1], i64)])])
    return present, rows, key_at, key_valid


def _resident(b: Body, tokens: str, capacity: int, window: int) -> str:
    """How many of a windowed cache's rows hold tokens after `tokens` of them (int64): tokens up to the
    capacity C, beyond it tokens - G ceil((tokens - C) / G), G = C - W + 1 (onnxruntime evicts G at once)."""
    i64, g = np.int64, capacity - window + 1
    over = b.add("Sub", [tokens, b.constant(capacity, i64)])
    evicted = b.add("Mul", [b.add("Div", [b.add("Add", [over, b.constant(g - 1, i64)]), b.constant(g, i64)]),
                            b.constant(g, i64)])  # fmt: skip
    within = b.add("LessOrEqual", [tokens, b.constant(capacity, i64)])
    return b.add("Where", [within, tokens, b.add("Sub", [tokens, evicted])])


def _window_cache(b: Body, steps: list[str], shape: tuple[int, int, int, int, int], lengths: str,
                  start: str) -> tuple[list[str], list[str], str, str]:  # fmt: skip
    """sliding_window_cache=1: the past and present hold the latest tokens of a batch row in C rows (past's
    length), row i of L resident ones holding position T - L + i (`_resident`); attention reads the past's
    resident rows and the step's rows (a step may evict keys its own queries still read). (present, the
    attended keys and values, key positions [B, C + S], key valid [B, C + S])."""
    batch, sequence, kv_heads, size, capacity = shape
    window = int(b.attr("local_window_size", -1))
    if not capacity or window <= 0 or window > capacity or b.input(10):
        raise b.refuse("sliding_window_cache takes a past of at least local_window_size rows and no attention_bias")
    i64 = np.int64
    now, before = _resident(b, lengths, capacity, window), _resident(b, start, capacity, window)
    rows = b.add("Unsqueeze", [_counting(b, capacity), b.constant([0], i64)])
    column = b.add("Unsqueeze", [lengths, b.constant([1], i64)])
    position = b.add("Add", [b.add("Sub", [column, b.add("Unsqueeze", [now, b.constant([1], i64)])]), rows])
    first = b.add("Unsqueeze", [start, b.constant([1], i64)])
    oldest = b.add("Sub", [first, b.add("Unsqueeze", [before, b.constant([1], i64)])])
    from_step = b.add("GreaterOrEqual", [position, first])
    step_index = b.add("Clip", [b.add("Sub", [position, first]), b.constant(0, i64), b.constant(sequence - 1, i64)])
    past_index = b.add("Clip", [b.add("Sub", [position, oldest]), b.constant(0, i64), b.constant(capacity - 1, i64)])
    held = b.add("Less", [rows, b.add("Unsqueeze", [now, b.constant([1], i64)])])
    cache_shape = b.constant([batch, kv_heads, capacity, size], i64)
    present, attended = [], []
    for step, past_input in zip(steps, (3, 4), strict=True):
        moved = _placed(b, b.input(past_input), b.input(past_input), past_index, held, cache_shape)
        present.append(_placed(b, step, moved, step_index, b.add("And", [held, from_step]), cache_shape))
        attended.append(b.add("Concat", [b.input(past_input), step], axis=2))
    step_at = b.add("Add", [first, b.constant(np.arange(sequence)[None], i64)])
    key_at = b.add("Concat", [b.add("Add", [oldest, rows]), step_at], axis=1)
    past_valid = b.add("Less", [rows, b.add("Unsqueeze", [before, b.constant([1], i64)])])
    key_valid = b.add("Concat", [past_valid, b.add("Less", [step_at, column])], axis=1)
    return present, attended, key_at, key_valid


def _sunk_softmax(b: Body, scores: str, kv_heads: int, group: int) -> str:
    """Softmax over the keys of scores [B, kv_heads, group, S, keys], with a sink: a logit of its own in each
    denominator, head_sink's per head (input 11), or 0 with smooth_softmax (gpt-oss's attention sinks): the
    softmax of the scores with the sink as one more column, that column dropped."""
    smooth = int(b.attr("smooth_softmax", 0))
    if not b.input(11) and not smooth:
        return b.add("Softmax", [scores], axis=-1)
    i64 = np.int64
    if b.input(11):
        sink = b.add("Reshape", [b.input(11), b.constant([1, kv_heads, group, 1, 1], i64)])
    else:
        sink = b.constant(np.zeros((1, 1, 1, 1, 1)), b.dtype(0))
    leading = b.add("Slice", [b.add("Shape", [scores]), b.constant([0], i64), b.constant([4], i64)])
    column = b.add("Expand", [sink, _row(b, [leading, b.constant([1], i64)])])
    weights = b.add("Softmax", [b.add("Concat", [scores, column], axis=-1)], axis=-1)
    return b.add("Slice", [weights, b.constant([0], i64), b.constant([-1], i64), b.constant([4], i64)])


def _rotated(b: Body, x: str, heads: int, size: int, positions: str) -> str:
    """ONNX's RotaryEmbedding of x [B, S, heads x size] at `positions` [B, S] with inputs cos_cache and sin_cache
    (7, 8; [max positions, rotary dim / 2]) and rotary_interleaved."""
    b.opset = ROTARY_OPSET
    rotary = 2 * b.dims(7)[1]
    attrs = {"num_heads": heads, "interleaved": int(b.attr("rotary_interleaved", 0))}
    if rotary != size:
        attrs["rotary_embedding_dim"] = rotary
    return b.add("RotaryEmbedding", [x, b.input(7), b.input(8), positions], **attrs)


def _grouped_bias(b: Body, rows: str, total: str, kv_heads: int, group: int, sequence: int) -> str:
    """attention_bias (input 10: [B or 1, N or 1, S, total]) as the scores' [B or 1, kv_heads or 1, group or 1, S,
    rows]: its columns past total (a shared cache's rows beyond the longest) padded with zeros."""
    dims = b.dims(10)
    i64 = np.int64
    pads = _row(b, [b.constant([0, 0, 0, 0, 0, 0, 0], i64), b.add("Sub", [rows, total])])
    padded = b.add("Pad", [b.input(10), pads])
    split = [kv_heads, group] if dims[1] > 1 else [1, 1]
    shape = _row(b, [b.constant([dims[0], *split, sequence], i64), rows])
    return b.add("Reshape", [padded, shape])
