"""onnxruntime's contrib ops of decoder language models (frontends/onnx/contrib_decoder.py) against onnxruntime's
own kernels: RotaryEmbedding in its layouts and position forms, MatMulNBits at each width, with and without its
zero points and bias."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

import glow_mlir
from glow_mlir.errors import UnsupportedModelError
from glow_mlir.frontends.onnx import import_model
from glow_mlir.frontends.onnx.contrib import CONTRIB_DOMAIN

rng = np.random.default_rng(0)


def _check(node: onnx.NodeProto, feeds: dict[str, np.ndarray], consts: dict[str, np.ndarray], atol: float = 1e-5,
           want: np.ndarray | None = None) -> None:  # fmt: skip
    """glow-mlir's output of the one-node model is onnxruntime's (or `want`), in shape, dtype and value."""
    graph = helper.make_graph(
        [node], "decoder",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape) for n, a in feeds.items()],
        [helper.make_empty_tensor_value_info("y")],
        [numpy_helper.from_array(a, n) for n, a in consts.items()],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(CONTRIB_DOMAIN, 1)]
    model = helper.make_model(graph, opset_imports=opsets, ir_version=8)
    if want is None:
        [want] = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    with glow_mlir.compile(import_model(model)) as compiled:
        got = compiled.run(feeds)["y"]
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=atol)


def r(*dims: int) -> np.ndarray:
    return rng.standard_normal(dims).astype(np.float32)


@pytest.mark.parametrize("layout", ["BSH", "BNSH"])
@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("rotary_dim", [0, 4])
@pytest.mark.parametrize("positions", ["ids", "offset"])
def test_rotary_embedding(layout: str, interleaved: int, rotary_dim: int, positions: str) -> None:
    """Each layout, both pairings of a head's halves, a partial rotary dim, position ids [B, S] and a start offset
    [1] (a KV-cached step's positions)."""
    batch, heads, sequence, size = 2, 3, 5, 8
    x = r(batch, sequence, heads * size) if layout == "BSH" else r(batch, heads, sequence, size)
    half = (rotary_dim or size) // 2
    position = rng.integers(0, 11, (batch, sequence)) if positions == "ids" else np.array([4])
    attrs = {"interleaved": interleaved, "num_heads": heads}
    if rotary_dim:
        attrs["rotary_embedding_dim"] = rotary_dim
    node = helper.make_node("RotaryEmbedding", ["x", "p", "cos", "sin"], ["y"], domain=CONTRIB_DOMAIN, **attrs)
    _check(node, {"x": x, "p": position.astype(np.int64)}, {"cos": r(16, half), "sin": r(16, half)})


def test_rotary_embedding_scale_is_ignored() -> None:
    """onnxruntime's CPU kernel leaves its `scale` attribute unused, and so does the body."""
    node = helper.make_node("RotaryEmbedding", ["x", "p", "cos", "sin"], ["y"], domain=CONTRIB_DOMAIN, scale=2.0)
    _check(node, {"x": r(1, 2, 4, 6), "p": np.array([[0, 1, 2, 3]], np.int64)}, {"cos": r(8, 3), "sin": r(8, 3)})


def _packed(values: np.ndarray, bits: int) -> np.ndarray:
    """Unsigned `bits`-wide values [..., M] packed into bytes along the last axis, lowest bits first."""
    per_byte = 8 // bits
    padded = np.pad(values, [(0, 0)] * (values.ndim - 1) + [(0, -values.shape[-1] % per_byte)])
    groups = padded.reshape(*values.shape[:-1], -1, per_byte).astype(np.uint16)
    return (groups << (np.arange(per_byte) * bits)).sum(-1).astype(np.uint8)


@pytest.mark.parametrize("bits", [2, 4, 8])
@pytest.mark.parametrize("zero_points", ["absent", "packed", "float"])
@pytest.mark.parametrize(("k", "block"), [(64, 16), (80, 32)])  # 80: a last block of K half empty
def test_matmul_nbits(bits: int, zero_points: str, k: int, block: int) -> None:
    """Against onnxruntime, but for 8 bits with float zero points, which its CPU kernel refuses: against the
    schema's (q - zero) x scale."""
    n, blocks = 24, -(-k // block)
    levels = 1 << bits
    q = rng.integers(0, levels, (n, blocks, block))
    scales = (r(n, blocks) * 0.1).astype(np.float32)
    zero = rng.integers(0, levels, (n, blocks))
    consts = {"b": _packed(q, bits), "scales": scales}
    names = ["a", "b", "scales"]
    if zero_points == "packed":
        consts["zero"] = _packed(zero, bits)
    elif zero_points == "float":
        consts["zero"] = zero.astype(np.float32)
    if zero_points != "absent":
        names.append("zero")
    a = r(2, 3, k)
    want = None
    if bits == 8 and zero_points == "float":
        w = ((q - zero[..., None]) * scales[..., None]).reshape(n, -1)[:, :k]
        want = (a @ w.T).astype(np.float32)
    node = helper.make_node("MatMulNBits", names, ["y"], domain=CONTRIB_DOMAIN, K=k, N=n, bits=bits,
                            block_size=block)  # fmt: skip
    _check(node, {"a": a}, consts, atol=1e-4, want=want)


def test_matmul_nbits_bias() -> None:
    """Input 5, after an omitted g_idx."""
    q = rng.integers(0, 16, (8, 2, 16))
    consts = {"b": _packed(q, 4), "scales": r(8, 2), "bias": r(8)}
    node = helper.make_node("MatMulNBits", ["a", "b", "scales", "", "", "bias"], ["y"], domain=CONTRIB_DOMAIN, K=32,
                            N=8, bits=4, block_size=16)  # fmt: skip
    _check(node, {"a": r(5, 32)}, consts)


def test_matmul_nbits_layers_hold_one_layer_of_dequantized_weights_at_a_time() -> None:
    """Eight chained 4-bit layers: the import folds each W to float through its body's ops; the arrays of a
    layer (its body's own values) are dropped once it is imported, so numpy holds about one layer's at a time
    (all eight's, before: an int4 LLM's import held 1.4 GB of arrays for 330 MB of weights)."""
    import tracemalloc

    k, layers, block = 256, 8, 32
    nodes, consts, x = [], {}, "a"
    for i in range(layers):
        consts[f"b{i}"] = _packed(rng.integers(0, 16, (k, k // block, block)), 4)
        consts[f"s{i}"] = (r(k, k // block) * 0.1).astype(np.float32)
        nodes.append(helper.make_node("MatMulNBits", [x, f"b{i}", f"s{i}"], [f"y{i}"], domain=CONTRIB_DOMAIN, K=k,
                                      N=k, bits=4, block_size=block))  # fmt: skip
        x = f"y{i}"
    inputs = [helper.make_tensor_value_info("a", onnx.TensorProto.FLOAT, [1, k])]
    graph = helper.make_graph(nodes, "layers", inputs, [helper.make_tensor_value_info(x, onnx.TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(v, n) for n, v in consts.items()])  # fmt: skip
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(CONTRIB_DOMAIN, 1)])
    tracemalloc.start()
    try:
        import_model(m)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # Measured: 3.3 MB at the peak (a layer's float W is 0.26 MB; its body's unpacking makes several arrays of its
    # size), 10.1 MB when every layer's arrays stayed to the end.
    assert peak < 5 * 2**20, peak


def test_matmul_nbits_refuses_other_widths() -> None:
    node = helper.make_node("MatMulNBits", ["a", "b", "scales"], ["y"], name="mm3", domain=CONTRIB_DOMAIN, K=16, N=4,
                            bits=3, block_size=16)  # fmt: skip
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("a", onnx.TensorProto.FLOAT, [2, 16])],
        [helper.make_empty_tensor_value_info("y")],
        [numpy_helper.from_array(np.zeros((4, 1, 6), np.uint8), "b"), numpy_helper.from_array(r(4, 1), "scales")],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(CONTRIB_DOMAIN, 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    with pytest.raises(UnsupportedModelError, match=r"(?s)bits 3: onnxruntime packs 2, 4 or 8.*MatMulNBits.*'mm3'"):
        import_model(model)


def test_model_quantized_by_onnxruntime() -> None:
    """An MLP whose MatMuls onnxruntime's MatMulNBitsQuantizer made 4-bit (its packing, its zero points)."""
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    weights = {"w1": r(64, 96) * 0.1, "w2": r(96, 32) * 0.1}
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Relu", ["h"], ["g"]),
             helper.make_node("MatMul", ["g", "w2"], ["y"])]  # fmt: skip
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4, 64])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [4, 32])],
                              [numpy_helper.from_array(w, n) for n, w in weights.items()])  # fmt: skip
    quantizer = MatMulNBitsQuantizer(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
                                     block_size=32, is_symmetric=False)  # fmt: skip
    quantizer.process()
    model = quantizer.model.model
    assert [n.op_type for n in model.graph.node].count("MatMulNBits") == 2
    feeds = {"x": r(4, 64)}
    [want] = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    with glow_mlir.compile(import_model(model)) as compiled:
        np.testing.assert_allclose(compiled.run(feeds)["y"], want, rtol=1e-5, atol=1e-5)


def _gqa(feeds: dict[str, np.ndarray], order: list[str], resident: int | None = None,
         **attrs: object) -> list[np.ndarray]:  # fmt: skip
    """One GroupQueryAttention node on `feeds` (inputs in `order`, '' where omitted) against onnxruntime's kernel:
    the output, and each present cache's rows that hold tokens (`resident`, else up to each batch row's length;
    onnxruntime leaves the rest as they happen to be). onnxruntime's outputs."""
    node = helper.make_node("GroupQueryAttention", order, ["y", "present_key", "present_value"],
                            domain=CONTRIB_DOMAIN, **attrs)  # fmt: skip
    graph = helper.make_graph(
        [node], "gqa",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape) for n, a in feeds.items()],
        [helper.make_empty_tensor_value_info(n) for n in ("y", "present_key", "present_value")],
    )
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid(CONTRIB_DOMAIN, 1)]
    model = helper.make_model(graph, opset_imports=opsets, ir_version=10)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    session = glow_mlir.InferenceSession(model.SerializeToString())
    got = session.run(None, feeds)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
    for g, w in zip(got[1:], want[1:], strict=True):
        assert g.shape == w.shape
        for row, length in enumerate(feeds["seqlens_k"] + 1):
            held = length if resident is None else resident
            np.testing.assert_allclose(g[row, :, :held], w[row, :, :held], rtol=1e-5, atol=1e-5)
    return want


@pytest.mark.parametrize(
    ("batch", "sequence", "past", "lengths", "total"),
    [
        (2, 5, 0, [5, 5], 5),  # a first prompt
        (2, 5, 0, [5, 3], 5),  # a right-padded batch of prompts
        (2, 1, 6, [7, 7], 7),  # a decoding step, past and present apart
        (2, 1, 6, [7, 4], 7),  # ragged rows: each writes its step at its own length
        (2, 1, 16, [7, 4], 7),  # past and present one buffer of the longest length
        (1, 3, 6, [9], 9),  # a chunk of 3 tokens after 6
    ],
)
@pytest.mark.parametrize("rotary", [False, True])
def test_group_query_attention(batch: int, sequence: int, past: int, lengths: list[int], total: int,
                               rotary: bool) -> None:  # fmt: skip
    heads, kv_heads, size = 4, 2, 16
    feeds = {"query": r(batch, sequence, heads * size), "key": r(batch, sequence, kv_heads * size),
             "value": r(batch, sequence, kv_heads * size)}  # fmt: skip
    order = ["query", "key", "value", "", ""]
    if past:
        feeds |= {"past_key": r(batch, kv_heads, past, size), "past_value": r(batch, kv_heads, past, size)}
        order[3:5] = ["past_key", "past_value"]
    feeds |= {"seqlens_k": np.array(lengths, np.int32) - 1, "total_sequence_length": np.array(total, np.int32)}
    order += ["seqlens_k", "total_sequence_length"]
    if rotary:
        feeds |= {"cos_cache": r(32, size // 2), "sin_cache": r(32, size // 2)}
        order += ["cos_cache", "sin_cache"]
    _gqa(feeds, order, num_heads=heads, kv_num_heads=kv_heads, do_rotary=int(rotary))


@pytest.mark.parametrize("smooth", [False, True])
def test_group_query_attention_sinks(smooth: bool) -> None:
    """A sink logit in every softmax denominator: head_sink's per head (input 11, gpt-oss), or 0 with
    smooth_softmax; a decoding step over a past."""
    feeds = {"query": r(2, 1, 64), "key": r(2, 1, 32), "value": r(2, 1, 32), "past_key": r(2, 2, 5, 16),
             "past_value": r(2, 2, 5, 16), "seqlens_k": np.array([5, 3], np.int32),
             "total_sequence_length": np.array(6, np.int32)}  # fmt: skip
    order = ["query", "key", "value", "past_key", "past_value", "seqlens_k", "total_sequence_length"]
    if not smooth:
        feeds["head_sink"] = r(4)
        order += ["", "", "", "", "head_sink"]
    _gqa(feeds, order, num_heads=4, kv_num_heads=2, smooth_softmax=int(smooth))


@pytest.mark.parametrize(
    "attrs",
    [
        {"rotary_interleaved": 1, "do_rotary": 1},
        {"softcap": 2.0},
        {"local_window_size": 3},
        {"scale": 0.3},
    ],
)
def test_group_query_attention_attributes(attrs: dict[str, object]) -> None:
    feeds = {"query": r(2, 6, 64), "key": r(2, 6, 32), "value": r(2, 6, 32), "seqlens_k": np.array([5, 3], np.int32),
             "total_sequence_length": np.array(6, np.int32), "cos_cache": r(16, 8), "sin_cache": r(16, 8)}  # fmt: skip
    order = ["query", "key", "value", "", "", "seqlens_k", "total_sequence_length", "cos_cache", "sin_cache"]
    _gqa(feeds, order, num_heads=4, kv_num_heads=2, **attrs)


def test_group_query_attention_packed_qkv_and_bias() -> None:
    """Query, key and value packed in one input [B, S, (N + 2 kv) h], and an attention bias [1, N, S, total]."""
    feeds = {"qkv": r(2, 5, 128), "seqlens_k": np.array([4, 4], np.int32),
             "total_sequence_length": np.array(5, np.int32), "bias": r(1, 4, 5, 5)}  # fmt: skip
    order = ["qkv", "", "", "", "", "seqlens_k", "total_sequence_length", "", "", "", "bias"]
    _gqa(feeds, order, num_heads=4, kv_num_heads=2)


@pytest.mark.parametrize(
    ("batch", "sequence", "past", "lengths", "total"), [(2, 4, 0, [4, 4], 4), (2, 1, 5, [6, 3], 6), (1, 3, 5, [8], 8)]
)
def test_group_query_attention_position_ids(batch: int, sequence: int, past: int, lengths: list[int],
                                            total: int) -> None:  # fmt: skip
    """Rotary positions given as input 9 rather than taken from the cache lengths: as given, but for a first
    prompt, whose positions onnxruntime counts on from the first one's."""
    feeds = {"query": r(batch, sequence, 64), "key": r(batch, sequence, 32), "value": r(batch, sequence, 32)}
    order = ["query", "key", "value", "", ""]
    if past:
        feeds |= {"past_key": r(batch, 2, past, 16), "past_value": r(batch, 2, past, 16)}
        order[3:5] = ["past_key", "past_value"]
    feeds |= {"seqlens_k": np.array(lengths, np.int32) - 1, "total_sequence_length": np.array(total, np.int32),
              "cos_cache": r(16, 8), "sin_cache": r(16, 8),
              "position_ids": rng.integers(0, 8, (batch, sequence)).astype(np.int64)}  # fmt: skip
    order += ["seqlens_k", "total_sequence_length", "cos_cache", "sin_cache", "position_ids"]
    _gqa(feeds, order, num_heads=4, kv_num_heads=2, do_rotary=1)


def test_group_query_attention_partial_rotary() -> None:
    """A rotary dim of half the head (cos_cache [positions, 8] for heads of 32): the rest passes unrotated."""
    feeds = {"query": r(1, 4, 128), "key": r(1, 4, 64), "value": r(1, 4, 64), "seqlens_k": np.array([3], np.int32),
             "total_sequence_length": np.array(4, np.int32), "cos_cache": r(16, 8), "sin_cache": r(16, 8)}  # fmt: skip
    order = ["query", "key", "value", "", "", "seqlens_k", "total_sequence_length", "cos_cache", "sin_cache"]
    _gqa(feeds, order, num_heads=4, kv_num_heads=2, do_rotary=1)


@pytest.mark.parametrize(("extra", "attrs", "message"), [
    ("k_scale", {}, "input 12 \\(k_scale\\)"),
    ("", {"sliding_window_cache": 1, "local_window_size": 2}, "sliding_window_cache takes a past"),
])
def test_group_query_attention_refuses_what_it_does_not_compute(extra: str, attrs: dict[str, object],
                                                                 message: str) -> None:  # fmt: skip
    order = ["q", "k", "v", "", "", "seqlens_k", "total", "", "", "", "", "", extra]
    node = helper.make_node("GroupQueryAttention", order, ["y", "pk", "pv"], name="gqa", domain=CONTRIB_DOMAIN,
                            num_heads=2, kv_num_heads=1, **attrs)  # fmt: skip
    inputs = [helper.make_tensor_value_info("q", onnx.TensorProto.FLOAT, [1, 2, 32]),
              helper.make_tensor_value_info("k", onnx.TensorProto.FLOAT, [1, 2, 16]),
              helper.make_tensor_value_info("v", onnx.TensorProto.FLOAT, [1, 2, 16]),
              helper.make_tensor_value_info("seqlens_k", onnx.TensorProto.INT32, [1]),
              helper.make_tensor_value_info("total", onnx.TensorProto.INT32, [])]  # fmt: skip
    if extra:
        inputs.append(helper.make_tensor_value_info(extra, onnx.TensorProto.FLOAT, [2]))
    graph = helper.make_graph([node], "g", inputs, [helper.make_empty_tensor_value_info(n) for n in ("y", "pk", "pv")])
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid(CONTRIB_DOMAIN, 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    with pytest.raises(UnsupportedModelError, match=f"(?s){message}.*GroupQueryAttention.*node 'gqa'"):
        import_model(model, static_inputs={"total": np.array(2, np.int32)})


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("zero_points", [False, True])
def test_gather_block_quantized(bits: int, zero_points: bool) -> None:
    """A uint8 table of packed `bits`-wide values (blocks of 16 along rows of 40: the last block half empty),
    gathered at indices of rank 2, a negative one and one out of range (onnxruntime gives zeros)."""
    rows, width, block = 10, 40, 16
    blocks = -(-width // block)
    q = rng.integers(0, 1 << bits, (rows, width))
    consts = {"data": _packed(q, bits), "scales": r(rows, blocks)}
    order = ["data", "indices", "scales"]
    if zero_points:
        consts["zero"] = _packed(rng.integers(0, 1 << bits, (rows, blocks)), bits)
        order.append("zero")
    node = helper.make_node("GatherBlockQuantized", order, ["y"], domain=CONTRIB_DOMAIN, bits=bits, block_size=block,
                            gather_axis=0, quantize_axis=1)  # fmt: skip
    _check(node, {"indices": np.array([[0, 9, -3], [4, 12, 1]], np.int64)}, consts)


def test_int4_tables_and_products_stay_packed() -> None:
    """A tied int4 embedding (GatherBlockQuantized of a [4096, 512] table, then MatMulNBits on the same bytes as the
    output projection): the compiled model holds the packed bytes and their scales (1 MiB, 2 MiB with the
    product's repacked copy), not the 8 MiB float table twice."""
    vocab, width, block = 4096, 512, 32
    consts = {"table": _packed(rng.integers(0, 16, (vocab, width)), 4), "scales": r(vocab, width // block) * 0.1}
    nodes = [helper.make_node("GatherBlockQuantized", ["table", "ids", "scales"], ["h"], domain=CONTRIB_DOMAIN,
                              bits=4, block_size=block, gather_axis=0, quantize_axis=1),
             helper.make_node("Reshape", ["table", "shape"], ["b"]),
             helper.make_node("MatMulNBits", ["h", "b", "scales"], ["y"], domain=CONTRIB_DOMAIN, K=width, N=vocab,
                              bits=4, block_size=block)]  # fmt: skip
    consts["shape"] = np.array([vocab, width // block, block // 2], np.int64)
    graph = helper.make_graph(nodes, "tied", [helper.make_tensor_value_info("ids", onnx.TensorProto.INT64, [1, 3])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 3, vocab])],
                              [numpy_helper.from_array(v, n) for n, v in consts.items()])  # fmt: skip
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid(CONTRIB_DOMAIN, 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    feeds = {"ids": np.array([[5, 4095, 17]], np.int64)}
    [want] = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    with glow_mlir.compile(import_model(model)) as compiled:
        np.testing.assert_allclose(compiled.run(feeds)["y"], want, rtol=1e-4, atol=1e-4)
        assert compiled.weight_bytes < 3 * 2**20, compiled.weight_bytes


@pytest.mark.parametrize(("capacity", "window"), [(6, 4), (4, 4)])
def test_group_query_attention_windowed_cache(capacity: int, window: int) -> None:
    """sliding_window_cache: a prompt of 3 tokens, a chunk of 3 (whose first queries read keys it evicts), then
    decoding steps on onnxruntime's returned cache past its capacity (evicting capacity - window + 1 rows at
    once); each step's output and resident rows as onnxruntime's."""
    attrs = {"num_heads": 4, "kv_num_heads": 2, "local_window_size": window, "sliding_window_cache": 1}
    past_key, past_value = r(1, 2, capacity, 16), r(1, 2, capacity, 16)
    gap = capacity - window + 1
    tokens = 0
    for sequence in (3, 3, 1, 1, 1, 1, 1):
        tokens += sequence
        feeds = {"query": r(1, sequence, 64), "key": r(1, sequence, 32), "value": r(1, sequence, 32),
                 "past_key": past_key, "past_value": past_value, "seqlens_k": np.array([tokens - 1], np.int32),
                 "total_sequence_length": np.array(tokens, np.int32)}  # fmt: skip
        resident = tokens if tokens <= capacity else tokens - gap * -(-(tokens - capacity) // gap)
        _, past_key, past_value = _gqa(feeds, list(feeds), resident, **attrs)
