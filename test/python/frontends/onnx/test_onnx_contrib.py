"""onnxruntime's contrib ops (frontends/onnx/contrib.py) against onnxruntime's own kernels: every op with its
attribute and optional-input variants, and a model that onnxruntime's optimizer fused and saved itself."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

import glow_mlir
from glow_mlir.errors import InvalidNodeError, UnsupportedModelError
from glow_mlir.frontends.onnx import import_model
from glow_mlir.frontends.onnx.contrib import BODIES, CONTRIB_DOMAIN

rng = np.random.default_rng(0)
MS = CONTRIB_DOMAIN


def _model(nodes: list[onnx.NodeProto], inputs: dict[str, np.ndarray], outputs: list[str],
           initializers: dict[str, np.ndarray] | None = None) -> onnx.ModelProto:  # fmt: skip
    graph = helper.make_graph(
        nodes, "contrib",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
         for n, a in inputs.items()],
        [helper.make_empty_tensor_value_info(n) for n in outputs],
        [numpy_helper.from_array(a, n) for n, a in (initializers or {}).items()],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


def _check(model: onnx.ModelProto, feeds: dict[str, np.ndarray], rtol: float = 1e-5, atol: float = 1e-5) -> None:
    """glow-mlir's outputs are onnxruntime's, in shape, dtype and value."""
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    with glow_mlir.compile(import_model(model)) as compiled:
        got = compiled.run(feeds)
    for out, expected in zip(model.graph.output, want, strict=True):
        assert got[out.name].shape == expected.shape and got[out.name].dtype == expected.dtype, out.name
        np.testing.assert_allclose(got[out.name], expected, rtol=rtol, atol=atol, err_msg=out.name)


def _node(op: str, inputs: dict[str, np.ndarray], consts: dict[str, np.ndarray] | None = None, outputs: int = 1,
          order: list[str] | None = None, domain: str = MS, **attrs: object) -> None:  # fmt: skip
    """One contrib node on fed `inputs` and constant `consts` (in `order`; '' an omitted optional input)."""
    consts = consts or {}
    names = order if order is not None else [*inputs, *consts]
    out = [f"y{i}" for i in range(outputs)]
    node = helper.make_node(op, names, out, name=f"{op}_node", domain=domain, **attrs)
    _check(_model([node], inputs, out, consts), inputs)


def r(*dims: int) -> np.ndarray:
    return rng.standard_normal(dims).astype(np.float32)


@pytest.mark.parametrize(
    ("a", "b", "attrs"),
    [
        ((3, 4), (4, 5), {}),
        ((3, 4), (5, 4), {"transB": 1, "alpha": 0.125}),
        ((2, 4, 3), (2, 4, 5), {"transA": 1}),
        ((2, 3, 4), (4, 5), {"alpha": -2.0}),  # a batch of rows times one matrix
        ((3, 2, 4), (2, 4, 5), {"transBatchA": 1}),  # A [M, B, K] read as [B, M, K]
        ((2, 3, 4), (5, 2, 4), {"transBatchB": 1, "transB": 1}),  # B [N, B, K] read as [B, K, N]
        ((4, 2, 2, 3), (2, 2, 4, 5), {"transBatchA": 1, "transA": 1, "alpha": 0.5}),  # rank 4
    ],
)
def test_fused_matmul(a: tuple[int, ...], b: tuple[int, ...], attrs: dict[str, object]) -> None:
    _node("FusedMatMul", {"a": r(*a)}, {"b": r(*b)}, **attrs)


def test_fused_matmul_batch_transpose_needs_equal_ranks() -> None:
    """As onnxruntime: transBatch takes two operands of one rank, 3 or more."""
    node = helper.make_node("FusedMatMul", ["a", "b"], ["y"], name="fm", domain=MS, transBatchA=1)
    with pytest.raises(InvalidNodeError, match=r"node 'fm'.*ranks 3 and 2"):
        import_model(_model([node], {"a": r(2, 3, 4)}, ["y"], {"b": r(4, 5)}))


@pytest.mark.parametrize(
    ("activation", "params", "z", "bias"),
    [
        ("Relu", None, False, True),
        ("Tanh", None, True, True),  # Z added before the activation
        ("Sigmoid", None, False, False),
        ("LeakyRelu", [0.2], False, True),
        ("Clip", [0.0, 6.0], True, False),
        ("HardSigmoid", [0.25, 0.4], False, True),
        ("", None, True, True),  # no activation: Conv + Z
    ],
)
def test_fused_conv(activation: str, params: list[float] | None, z: bool, bias: bool) -> None:
    attrs: dict[str, object] = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [1, 1], "group": 2}
    if activation:
        attrs["activation"] = activation
    if params is not None:
        attrs["activation_params"] = params
    consts = {"w": r(6, 2, 3, 3), "b": r(6) if bias else None}
    inputs = {"x": r(1, 4, 7, 7), **({"z": r(1, 6, 7, 7)} if z else {})}
    order = ["x", "w", "b" if bias else "", *(["z"] if z else [])]
    _node("FusedConv", inputs, {k: v for k, v in consts.items() if v is not None}, order=order, **attrs)


def test_fused_conv_unknown_activation_is_refused() -> None:
    node = helper.make_node("FusedConv", ["x", "w"], ["y"], name="fc", domain=MS, kernel_shape=[1, 1],
                            activation="Mish")  # fmt: skip
    model = _model([node], {"x": r(1, 2, 3, 3)}, ["y"], {"w": r(2, 2, 1, 1)})
    with pytest.raises(UnsupportedModelError, match=r"com\.microsoft\.FusedConv.*'fc'|activation 'Mish'"):
        import_model(model)


@pytest.mark.parametrize(
    "attrs",
    [{"activation": "Relu"}, {"activation": "LeakyRelu", "activation_alpha": 0.1, "transB": 1, "alpha": 0.5},
     {"activation": "Sigmoid", "beta": 2.0}],
)
def test_fused_gemm(attrs: dict[str, object]) -> None:
    w = r(5, 4) if attrs.get("transB") else r(4, 5)
    _node("FusedGemm", {"a": r(3, 4)}, {"w": w, "c": r(5)}, **attrs)


def test_gelu_forms() -> None:
    x, bias = r(2, 3, 8), r(8)
    _node("Gelu", {"x": x})
    _node("BiasGelu", {"x": x}, {"bias": bias})
    _node("FastGelu", {"x": x})
    _node("FastGelu", {"x": x}, {"bias": bias})


@pytest.mark.parametrize("alpha", [None, 1.0, -0.5])
def test_quick_gelu(alpha: float | None) -> None:
    _node("QuickGelu", {"x": r(2, 16)}, **({} if alpha is None else {"alpha": alpha}))


@pytest.mark.parametrize(("beta", "bias", "outputs"), [(True, True, 4), (False, False, 1), (True, False, 3)])
def test_skip_layer_normalization(beta: bool, bias: bool, outputs: int) -> None:
    """Output 0 the normalized sum, 1 its mean, 2 its inverse standard deviation, 3 the sum."""
    consts = {"gamma": r(8), **({"beta": r(8)} if beta else {}), **({"bias": r(8)} if bias else {})}
    order = ["x", "skip", "gamma", "beta" if beta else "", *(["bias"] if bias else [])]
    while not order[-1]:
        order.pop()
    _node("SkipLayerNormalization", {"x": r(2, 3, 8), "skip": r(2, 3, 8)}, consts, outputs=outputs, order=order,
          epsilon=1e-5)  # fmt: skip


def test_skip_layer_normalization_default_epsilon() -> None:
    x = (r(1, 2, 4) * 1e-4).astype(np.float32)  # a variance near the default epsilon (1e-12)
    _node("SkipLayerNormalization", {"x": x, "skip": np.zeros_like(x)}, {"gamma": r(4)})


@pytest.mark.parametrize("bias", [False, True])
def test_skip_simplified_layer_normalization(bias: bool) -> None:
    node = helper.make_node("SkipSimplifiedLayerNormalization", ["x", "skip", "gamma", *(["bias"] if bias else [])],
                            ["y", "", "inv", "sum"], domain=MS, epsilon=1e-6)  # fmt: skip
    inits = {"gamma": r(8), **({"bias": r(8)} if bias else {})}
    feeds = {"x": r(2, 3, 8), "skip": r(2, 3, 8)}
    _check(_model([node], feeds, ["y", "inv", "sum"], inits), feeds)


@pytest.mark.parametrize(("axis", "dtype"), [(-1, np.float32), (1, np.float32), (-1, np.float16)])
def test_simplified_layer_normalization(axis: int, dtype: type) -> None:
    """onnxruntime's RMS norm, in the default domain; float16 computed in float32 (stash_type 1)."""
    x, scale = r(2, 3, 8).astype(dtype), r(*(3, 8)[axis % 3 - 1 :]).astype(dtype)
    node = helper.make_node("SimplifiedLayerNormalization", ["x", "scale"], ["y", "inv"], axis=axis, epsilon=1e-6)
    feeds = {"x": x}
    model = _model([node], feeds, ["y", "inv"], {"scale": scale})
    tolerance = 2e-3 if dtype == np.float16 else 1e-5
    _check(model, feeds, rtol=tolerance, atol=tolerance)


MASKS = {
    "none": None,
    "lengths": np.array([5, 3], np.int32),  # 1-D of B: each row's valid length
    "ends_starts": np.array([5, 4, 1, 0], np.int32),  # 1-D of 2B: ends, then starts (left padding)
    "raw": np.array([[1, 1, 1, 1, 0, 0], [1, 0, 1, 1, 1, 1]], np.int32),  # 2-D [B, keys]
    "rows": (rng.random((2, 6, 6)) < 0.8).astype(np.int32),  # 3-D [B, S, keys]
    "dummy": np.ones((2, 1), np.int32),  # [B, 1]: no mask
}


@pytest.mark.parametrize(
    ("mask", "attrs", "sizes", "bias"),
    [
        ("none", {}, None, False),
        ("lengths", {}, None, False),
        ("ends_starts", {"unidirectional": 1}, None, False),
        ("raw", {"scale": 0.3, "mask_filter_value": -1e4}, None, True),
        ("rows", {}, [16, 16, 8], False),  # values of another width than queries and keys
        ("none", {"unidirectional": 1}, None, True),  # causal, an attention bias
        ("dummy", {}, None, False),
    ],
)
def test_attention(mask: str, attrs: dict[str, object], sizes: list[int] | None, bias: bool) -> None:
    """onnxruntime.transformers' fused self-attention (4 heads, batch 2, 6 tokens) with each mask_index form."""
    widths = sizes or [16, 16, 16]
    consts: dict[str, np.ndarray] = {"w": r(12, sum(widths)) * 0.5, "b": r(sum(widths))}
    order = ["x", "w", "b"]
    if MASKS[mask] is not None:
        consts["mask"] = MASKS[mask]
        order.append("mask")
    if bias:
        consts["bias"] = r(2, 4, 6, 6)
        order += [""] * (5 - len(order)) + ["bias"]
    extra = {"qkv_hidden_sizes": sizes} if sizes else {}
    _node("Attention", {"x": r(2, 6, 12)}, consts, order=order, num_heads=4, **attrs, **extra)


@pytest.mark.parametrize(
    ("keys", "values", "mask", "attrs", "bias", "attention_bias"),
    [
        (6, 16, None, {}, True, False),  # self-attention, the projections' bias
        (6, 16, "raw", {"unidirectional": 1}, False, False),  # 2-D key padding mask, causal
        (9, 8, "lengths", {"scale": 0.2}, True, True),  # cross-attention: 9 keys, values 8 wide, key lengths
    ],
)
def test_multi_head_attention(keys: int, values: int, mask: str | None, attrs: dict[str, object], bias: bool,
                              attention_bias: bool) -> None:  # fmt: skip
    """onnxruntime.transformers' MultiHeadAttention (4 heads, batch 2, 6 queries): separate query, key and value."""
    feeds = {"q": r(2, 6, 16), "k": r(2, keys, 16), "v": r(2, keys, values)}
    consts: dict[str, np.ndarray] = {}
    order = ["q", "k", "v", "bias" if bias else ""]
    if bias:
        consts["bias"] = r(32 + values)
    if mask is not None:
        consts["mask"] = (np.array([5, 3], np.int32) if mask == "lengths" else
                          np.array([[1] * keys, [1] * (keys - 2) + [0, 0]], np.int32))  # fmt: skip
        order += ["mask"]
    if attention_bias:
        consts["ab"] = r(2, 4, 6, keys)
        order += [""] * (5 - len(order)) + ["ab"]
    while not order[-1]:
        order.pop()
    _node("MultiHeadAttention", feeds, consts, order=order, num_heads=4, **attrs)


def test_attention_with_past_state_is_refused() -> None:
    node = helper.make_node("Attention", ["x", "w", "b"], ["y", "present"], name="attn", domain=MS, num_heads=2)
    model = _model([node], {"x": r(1, 4, 8)}, ["y", "present"], {"w": r(8, 24), "b": r(24)})
    with pytest.raises(UnsupportedModelError, match=r"com\.microsoft\.Attention \(opset 1\) at node 'attn'.*|past"):
        import_model(model)


def test_multi_head_attention_with_present_state_is_refused() -> None:
    node = helper.make_node("MultiHeadAttention", ["q", "k", "v"], ["y", "present_key"], name="mha", domain=MS,
                            num_heads=2)  # fmt: skip
    model = _model([node], {"q": r(1, 4, 8)}, ["y", "present_key"], {"k": r(1, 4, 8), "v": r(1, 4, 8)})
    with pytest.raises(UnsupportedModelError, match=r"com\.microsoft\.MultiHeadAttention .* at node 'mha'"):
        import_model(model)


@pytest.mark.parametrize(("segments", "mask", "positions", "outputs"),
                         [(True, True, False, 3), (False, False, False, 2), (True, False, True, 2)])  # fmt: skip
def test_embed_layer_normalization(segments: bool, mask: bool, positions: bool, outputs: int) -> None:
    """Word + position (+ segment) embeddings, layer-normalized; output 1 each row's count of unmasked tokens."""
    ids = rng.integers(0, 20, (2, 7)).astype(np.int32)
    feeds = {"ids": ids, **({"segments": rng.integers(0, 2, (2, 7)).astype(np.int32)} if segments else {})}
    consts = {"word": r(20, 8), "position": r(10, 8), **({"segment": r(2, 8)} if segments else {}),
              "gamma": r(8), "beta": r(8)}  # fmt: skip
    if mask:
        consts["mask"] = np.array([[1] * 7, [1] * 4 + [0] * 3], np.int32)
    if positions:
        consts["position_ids"] = rng.integers(0, 10, (2, 7)).astype(np.int32)
    order = ["ids", "segments" if segments else "", "word", "position", "segment" if segments else "", "gamma",
             "beta", "mask" if mask else "", *(["position_ids"] if positions else [])]  # fmt: skip
    while not order[-1]:
        order.pop()
    _node("EmbedLayerNormalization", feeds, consts, outputs=outputs, order=order, epsilon=1e-5)


# Quantized ops: onnxruntime's QOperator kernels round in fixed point here and there (QLinearMul, its LUT
# Softmax), a float op quantized once may land one step away.


def _quantized_check(node: onnx.NodeProto, feeds: dict[str, np.ndarray], inits: dict[str, np.ndarray],
                     steps: int = 1) -> None:  # fmt: skip
    """glow-mlir's quantized output within `steps` quantization steps of onnxruntime's (its float output within
    1e-5 where the op has no output scale)."""
    model = _model([node], feeds, ["y"], inits)
    [want] = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    with glow_mlir.compile(import_model(model)) as compiled:
        got = compiled.run(feeds)["y"]
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype == np.float32:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    else:
        assert np.abs(got.astype(np.int64) - want).max() <= steps


def _q(dtype: type, *dims: int) -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, dims).astype(dtype)


QTYPES = [np.uint8, np.int8]


@pytest.mark.parametrize("dtype", QTYPES)
@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
def test_qlinear_binary(op: str, dtype: type) -> None:
    zero = (lambda v: np.array(v, dtype))
    inits = {"as": np.float32(0.05), "az": zero(3), "bs": np.float32(0.02),
             "bz": zero(100 if dtype == np.uint8 else -2),
             "cs": np.float32(0.07), "cz": zero(5), "b": _q(dtype, 16)}  # fmt: skip
    node = helper.make_node(op, ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["y"], domain=MS)
    _quantized_check(node, {"a": _q(dtype, 3, 16)}, inits)  # B broadcast along the rows


@pytest.mark.parametrize("dtype", QTYPES)
@pytest.mark.parametrize(("op", "attrs", "dims"), [
    ("QLinearSigmoid", {}, (4, 32)),
    ("QLinearLeakyRelu", {"alpha": 0.1}, (4, 32)),
    ("QLinearSoftmax", {"axis": -1, "opset": 13}, (4, 32)),
    ("QLinearGlobalAveragePool", {}, (1, 8, 5, 5)),
    ("QLinearGlobalAveragePool", {"channels_last": 1}, (1, 5, 5, 8)),
    ("QLinearAveragePool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, (1, 4, 7, 7)),
])  # fmt: skip
def test_qlinear_unary(op: str, attrs: dict[str, object], dims: tuple[int, ...], dtype: type) -> None:
    info = np.iinfo(dtype)
    softmax = op == "QLinearSoftmax"
    inits = {"xs": np.float32(0.05), "xz": np.array(3, dtype), "ys": np.float32(1 / 256 if softmax else 0.03),
             "yz": np.array(info.min if softmax else 2, dtype)}  # fmt: skip
    node = helper.make_node(op, ["x", "xs", "xz", "ys", "yz"], ["y"], domain=MS, **attrs)
    _quantized_check(node, {"x": _q(dtype, *dims)}, inits)


def test_qlinear_concat() -> None:
    inits = {"ys": np.float32(0.04), "yz": np.array(128, np.uint8), "s0": np.float32(0.02),
             "z0": np.array(120, np.uint8),
             "b": _q(np.uint8, 2, 3, 4), "s1": np.float32(0.05), "z1": np.array(131, np.uint8)}  # fmt: skip
    node = helper.make_node("QLinearConcat", ["ys", "yz", "a", "s0", "z0", "b", "s1", "z1"], ["y"], domain=MS, axis=1)
    _quantized_check(node, {"a": _q(np.uint8, 2, 5, 4)}, inits)


@pytest.mark.parametrize(("per_column", "trans_b", "bias", "quantized"),
                         [(False, 0, True, True), (True, 1, True, False), (True, 0, False, True),
                          (False, 1, False, False)])  # fmt: skip
def test_qgemm(per_column: bool, trans_b: int, bias: bool, quantized: bool) -> None:
    """uint8 A times int8 B (per tensor or per output column), an int32 bias at A's x B's scale, output quantized
    or float."""
    w = _q(np.int8, *((16, 32) if trans_b else (32, 16)))
    scale = (rng.random(16) * 0.01 + 0.001).astype(np.float32) if per_column else np.float32(0.004)
    inits = {"as": np.float32(0.02), "az": np.array(128, np.uint8), "w": w, "bs": scale,
             "bz": np.zeros(16 if per_column else (), np.int8)}  # fmt: skip
    inputs = ["a", "as", "az", "w", "bs", "bz", "c" if bias else ""]
    if bias:
        inits["c"] = rng.integers(-500, 500, 16).astype(np.int32)
    if quantized:
        inits |= {"ys": np.float32(0.05), "yz": np.array(120, np.uint8)}
        inputs += ["ys", "yz"]
    while not inputs[-1]:
        inputs.pop()
    node = helper.make_node("QGemm", inputs, ["y"], domain=MS, transB=trans_b, alpha=0.5)
    _quantized_check(node, {"a": _q(np.uint8, 5, 32)}, inits)


@pytest.mark.parametrize(("per_column", "zero_point", "bias"), [(False, False, True), (True, True, False)])
def test_dynamic_quantize_matmul(per_column: bool, zero_point: bool, bias: bool) -> None:
    """quantize_dynamic's MatMuls as onnxruntime fuses them: A quantized at run time, int8 B."""
    scale = (rng.random(8) * 0.01 + 0.001).astype(np.float32) if per_column else np.float32(0.01)
    inits = {"w": _q(np.int8, 12, 8), "bs": scale}
    inputs = ["a", "w", "bs", "bz" if zero_point else "", "bias" if bias else ""]
    if zero_point:
        inits["bz"] = rng.integers(-3, 4, 8 if per_column else ()).astype(np.int8)
    if bias:
        inits["bias"] = r(8)
    while not inputs[-1]:
        inputs.pop()
    node = helper.make_node("DynamicQuantizeMatMul", inputs, ["y"], domain=MS)
    _quantized_check(node, {"a": r(2, 3, 12)}, inits)


def test_matmul_integer_to_float() -> None:
    inits = {"w": _q(np.int8, 12, 8), "as": np.float32(0.03), "bs": (rng.random(8) * 0.01).astype(np.float32),
             "az": np.array(7, np.uint8), "bias": r(8)}  # fmt: skip
    node = helper.make_node("MatMulIntegerToFloat", ["a", "w", "as", "bs", "az", "", "bias"], ["y"], domain=MS)
    _quantized_check(node, {"a": _q(np.uint8, 4, 12)}, inits)


def test_quantized_cnn_as_onnxruntime_quantizes_it(tmp_path: Path) -> None:
    """A small CNN through onnxruntime's quantize_static in its QOperator format (QLinearConv, an int8 MaxPool,
    QLinearAdd, QLinearGlobalAveragePool, QGemm), and that model saved optimized: glow-mlir's output as close to
    the float model's as onnxruntime's."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

    own = np.random.default_rng(7)  # the bound below compares two errors: data of its own, whatever ran before

    def r(*dims: int) -> np.ndarray:
        return own.standard_normal(dims).astype(np.float32)

    inits = {"w1": r(8, 3, 3, 3) * 0.4, "b1": r(8), "w2": r(8, 8, 3, 3) * 0.2, "b2": r(8), "fc": r(4, 8) * 0.5,
             "fb": r(4)}  # fmt: skip
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p", "w2", "b2"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "p"], ["sum"]),
        helper.make_node("GlobalAveragePool", ["sum"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "fc", "fb"], ["y"], transB=1),
    ]
    feeds = {"x": r(1, 3, 8, 8)}
    source = tmp_path / "float.onnx"
    float_model = _model(nodes, feeds, ["y"], inits)
    float_model.opset_import.pop()  # the default domain only, as exporters write it
    onnx.save(float_model, source)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.batches = iter([{"x": r(1, 3, 8, 8)} for _ in range(8)])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.batches, None)

    quantized = tmp_path / "quantized.onnx"
    quantize_static(str(source), str(quantized), Reader(), quant_format=QuantFormat.QOperator)
    options = ort.SessionOptions()
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(str(quantized), options, providers=["CPUExecutionProvider"])
    ops = {n.op_type for n in onnx.load(quantized).graph.node}
    assert {"QLinearConv", "MaxPool", "QLinearAdd", "QLinearGlobalAveragePool", "QGemm"} <= ops
    # Saved at the EXTENDED level: its 8-bit maps NHWC (com.microsoft's QLinearConv channels_last, NhwcMaxPool).
    fused = {n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node if n.domain == MS}
    assert {"QLinearConv", "NhwcMaxPool", "QLinearAdd", "QLinearGlobalAveragePool", "QGemm"} <= fused
    for path in (quantized, Path(options.optimized_model_filepath)):
        model = onnx.load(path)
        [want] = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
        [exact] = ort.InferenceSession(float_model.SerializeToString(),
                                       providers=["CPUExecutionProvider"]).run(None, feeds)  # fmt: skip
        with glow_mlir.compile(import_model(model)) as compiled:
            got = compiled.run(feeds)["y"]
        assert np.abs(got - exact).max() <= 1.5 * np.abs(want - exact).max() + 1e-6


def test_unknown_contrib_op_is_refused_by_name() -> None:
    node = helper.make_node("PackedAttention", ["x", "w", "b", "token_offset", "cumulative_sequence_length"], ["y"],
                            name="packed", domain=MS, num_heads=2)  # fmt: skip
    offsets = {"token_offset": np.zeros((1, 4), np.int32), "cumulative_sequence_length": np.array([0, 4], np.int32)}
    model = _model([node], {"x": r(4, 8)}, ["y"], {"w": r(8, 24), "b": r(24), **offsets})
    with pytest.raises(UnsupportedModelError, match=r"com\.microsoft\.PackedAttention \(opset 1\) at node 'packed'"):
        import_model(model)


def test_same_name_in_another_domain_is_not_the_onnx_op() -> None:
    """A custom domain's Relu is no ONNX Relu: refused, not imported as one."""
    node = helper.make_node("Relu", ["x"], ["y"], name="custom_relu", domain="org.example")
    model = _model([node], {"x": r(3)}, ["y"])
    model.opset_import.append(helper.make_opsetid("org.example", 1))
    with pytest.raises(UnsupportedModelError, match=r"org\.example\.Relu"):
        import_model(model)


def test_model_onnxruntime_optimized_itself(tmp_path: Path) -> None:
    """A small CNN + transformer block as onnxruntime's EXTENDED optimizer saves it (its fused contrib ops), run
    as onnxruntime runs the saved model."""
    d = 16
    inits = {"w1": r(8, 3, 3, 3) * 0.3, "b1": r(8), "w2": r(32, d) * 0.1, "wq": r(d, d) * 0.2,
             "wk": r(d, d) * 0.2, "wf": r(d, d) * 0.2, "bf": r(d), "g": r(d), "beta": r(d), "scale": np.float32(0.25),
             "shape": np.array([1, 4, 32], np.int64), "half": np.float32(0.5), "one": np.float32(1.0),
             "sqrt2": np.float32(np.sqrt(2))}  # fmt: skip
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c"], ["cr"]),
        helper.make_node("Reshape", ["cr", "shape"], ["flat"]),
        helper.make_node("MatMul", ["flat", "w2"], ["h"]),  # [1, 4, d]: 4 tokens
        helper.make_node("MatMul", ["h", "wq"], ["q"]),
        helper.make_node("MatMul", ["h", "wk"], ["k"]),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["s"]),
        helper.make_node("Mul", ["s", "scale"], ["ss"]),  # Transpose + MatMul + scale: FusedMatMul
        helper.make_node("MatMul", ["ss", "h"], ["hs"]),
        helper.make_node("MatMul", ["hs", "wf"], ["f"]),
        helper.make_node("Add", ["f", "bf"], ["fb"]),
        helper.make_node("Div", ["fb", "sqrt2"], ["e0"]),  # GELU by erf: com.microsoft.Gelu / BiasGelu
        helper.make_node("Erf", ["e0"], ["e1"]),
        helper.make_node("Add", ["e1", "one"], ["e2"]),
        helper.make_node("Mul", ["fb", "e2"], ["e3"]),
        helper.make_node("Mul", ["e3", "half"], ["gelu"]),
        helper.make_node("Add", ["gelu", "h"], ["res"]),  # Add + LayerNormalization: SkipLayerNormalization
        helper.make_node("LayerNormalization", ["res", "g", "beta"], ["y"], axis=-1, epsilon=1e-5),
    ]
    feeds = {"x": r(1, 3, 8, 8)}
    source = tmp_path / "source.onnx"
    onnx.save(_model(nodes, feeds, ["y"], inits), source)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
    optimized = onnx.load(options.optimized_model_filepath)
    fused = {n.op_type for n in optimized.graph.node if n.domain == MS}
    assert {"FusedConv", "FusedMatMul", "SkipLayerNormalization"} <= fused and fused & {"Gelu", "BiasGelu"}
    _check(optimized, feeds)


def test_every_body_is_tested() -> None:
    """Each op of contrib.BODIES appears in a test of this file or of another contrib module's (the NCHWc ones
    by their saved models' op types)."""
    text = "".join(p.read_text() for p in Path(__file__).parent.glob("test_onnx_contrib*.py"))
    assert all(f'"{op}"' in text for _, op in BODIES if op != "TransposeMatMul")
