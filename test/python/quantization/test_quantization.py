"""glow_mlir.quantization: profiling, profile files, int8 quantization against numpy's integer arithmetic and the
float model, the per-layer SQNR report, and bf16/fp16 conversion."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnxruntime.quantization as ort_quant
import pytest
import torch

import glow_mlir
from glow_mlir import ops
from glow_mlir import quantization as quant
from glow_mlir.quantization.quantize import QMAX, activation_params, kl_threshold, quantize_array, weight_scales

rng = np.random.default_rng(7)


def mlp(weights: list[np.ndarray] | None = None) -> tuple[glow_mlir.Graph, list[np.ndarray]]:
    """fully_connected -> relu -> matmul (named fc1, relu, fc2)."""
    w = weights or [rng.standard_normal((16, 24)).astype(np.float32) / 4, rng.standard_normal(24).astype(np.float32),
                    rng.standard_normal((24, 5)).astype(np.float32) / 5]  # fmt: skip
    g = glow_mlir.Graph("mlp")
    x = g.input("x", (3, 16))
    h = g.relu(g.fully_connected(x, g.constant(w[0]), g.constant(w[1]), name="fc1"), name="relu")
    g.output("y", g.matmul(h, g.constant(w[2]), name="fc2"))
    return g, w


def convnet() -> glow_mlir.Graph:
    g = glow_mlir.Graph("convnet")
    x = g.input("x", (1, 3, 10, 10))
    w = g.constant(rng.standard_normal((6, 3, 3, 3)).astype(np.float32) / 3)
    b = g.constant(rng.standard_normal(6).astype(np.float32) / 4)
    y = g.relu(g.convolution(x, w, b, pads=(1, 1, 1, 1), name="conv"), name="relu")
    g.output("y", g.max_pool(y, (2, 2), name="pool"))
    return g


def samples(shape: tuple[int, ...], count: int = 4, seed: int = 3) -> list[dict[str, np.ndarray]]:
    r = np.random.default_rng(seed)
    return [{"x": r.standard_normal(shape).astype(np.float32)} for _ in range(count)]


# ----------------------------------------------------------------------------------------------------------
# Profiles


def test_profile_records_each_node_range_and_histogram() -> None:
    g, w = mlp()
    feeds = samples((3, 16))
    p = quant.profile(g, feeds)
    hidden = [np.maximum(f["x"] @ w[0] + w[1], 0) for f in feeds]
    assert p["x"].min == pytest.approx(min(f["x"].min() for f in feeds))
    assert p["relu"].max == pytest.approx(max(h.max() for h in hidden), rel=1e-6)
    assert p["relu"].min == 0.0
    # Every value lands in the |x| histogram, whatever the range grew to over the samples.
    assert p["fc1"].histogram.sum() == pytest.approx(len(feeds) * 3 * 24)
    assert p["fc2"].histogram.sum() == pytest.approx(len(feeds) * 3 * 5)


def test_profile_saves_and_loads_with_the_graph_hash(tmp_path) -> None:  # noqa: ANN001
    g, w = mlp()
    p = quant.profile(g, samples((3, 16)))
    path = tmp_path / "mlp.profile.json"
    p.save(path)
    loaded = quant.Profile.load(path, g)
    assert loaded.graph_hash == p.graph_hash and set(loaded.nodes) == set(p.nodes)
    np.testing.assert_array_equal(loaded["fc1"].histogram, p["fc1"].histogram)
    other, _ = mlp([w[0] * 2, w[1], w[2]])
    with pytest.raises(quant.ProfileError, match="profile the model again"):
        quant.Profile.load(path, other)
    with pytest.raises(quant.ProfileError, match="profile the model again"):
        quant.quantize(other, loaded)
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(quant.ProfileError, match="is not a"):
        quant.Profile.load(tmp_path / "bad.json")


# ----------------------------------------------------------------------------------------------------------
# Calibration


def test_minmax_parameters() -> None:
    node = quant.NodeProfile.of(np.array([-1.0, 3.0], np.float32))
    sym = activation_params(node, "symmetric", "minmax")
    assert sym.zero == 0 and sym.scale == pytest.approx(3.0 / 127)
    asym = activation_params(node, "asymmetric", "minmax")
    assert asym.scale == pytest.approx(4.0 / 255)
    # -1 and 3 map onto the ends of int8.
    assert round(-1.0 / asym.scale) + asym.zero == -128 and round(3.0 / asym.scale) + asym.zero == 127


def test_kl_clips_outliers_and_keeps_a_dense_range() -> None:
    body = rng.standard_normal(200_000)
    outliers = quant.NodeProfile.of(np.concatenate([body, [60.0, -55.0]]))
    threshold = kl_threshold(outliers.histogram, outliers.absmax)
    assert 3.0 < threshold < 15.0
    uniform = quant.NodeProfile.of(rng.uniform(-1, 1, 200_000))
    assert kl_threshold(uniform.histogram, uniform.absmax) > 0.9


def test_weights_per_channel() -> None:
    w = np.array([[1.0, -0.5], [-2.0, 0.25], [0.0, 0.0]], np.float32)
    np.testing.assert_allclose(weight_scales(w, 1), [2.0 / QMAX, 0.5 / QMAX])
    np.testing.assert_allclose(weight_scales(w, 0), [1.0 / QMAX, 2.0 / QMAX, 1.0])
    assert weight_scales(w, None) == pytest.approx(2.0 / QMAX)


# ----------------------------------------------------------------------------------------------------------
# Quantized graphs


@pytest.mark.parametrize("schema", ["asymmetric", "symmetric"])
def test_quantized_mlp_is_numpy_integer_arithmetic(schema: str) -> None:
    """The interpreter's quantized graph equals the integer arithmetic written out in numpy, and compiled code
    equals the interpreter."""
    g, w = mlp()
    feeds = samples((3, 16))
    p = quant.profile(g, feeds)
    q = quant.quantize(g, p, schema=schema, per_channel=True)
    text = str(q)
    assert text.count("-> tensor<3x24xi32>") >= 1 and "xi8>" in text and "glow.fully_connected" not in text

    x = feeds[0]["x"]
    a1 = activation_params(p["x"], schema, "minmax")
    s1 = weight_scales(w[0], 1)
    acc1 = (quantize_array(x, a1.scale, a1.zero).astype(np.int32) - a1.zero) @ quantize_array(w[0], s1).astype(np.int32)
    h = np.maximum(acc1.astype(np.float32) * (np.float32(a1.scale) * s1) + w[1], 0)
    a2 = activation_params(p["relu"], schema, "minmax")
    s2 = weight_scales(w[2], 1)
    acc2 = (quantize_array(h, a2.scale, a2.zero).astype(np.int32) - a2.zero) @ quantize_array(w[2], s2).astype(np.int32)
    expected = acc2.astype(np.float32) * (np.float32(a2.scale) * s2)

    interpreted = glow_mlir.interpret(q, {"x": x})["y"]
    np.testing.assert_allclose(interpreted, expected, rtol=1e-6, atol=1e-6)
    with glow_mlir.compile(q) as compiled:
        np.testing.assert_array_equal(compiled.run({"x": x})["y"], interpreted)
    # And it stays close to the float model.
    assert quant.report(g, q, feeds)["fc2"].sqnr_db > 25


@pytest.mark.parametrize("options", [{}, {"schema": "symmetric", "calibration": "kl", "per_channel": False}])
def test_quantized_convnet_compiles_to_the_interpreter(options: dict) -> None:
    g = convnet()
    feeds = samples((1, 3, 10, 10))
    q = quant.quantize(g, quant.profile(g, feeds), **options)
    assert "glow.convolution" in str(q) and "tensor<6x3x3x3xf32>" in str(q)  # centred int8 weights, exact in f32
    x = samples((1, 3, 10, 10), 1, seed=9)[0]
    interpreted = glow_mlir.interpret(q, x)["y"]
    with glow_mlir.compile(q) as compiled:
        np.testing.assert_allclose(compiled.run(x)["y"], interpreted, rtol=1e-6, atol=1e-6)
    r = quant.report(g, q, feeds)
    assert r["conv"].sqnr_db > 25 and r.worst(1)[0].sqnr_db <= r["conv"].sqnr_db


def test_keep_float_by_name_and_kind() -> None:
    g, _ = mlp()
    p = quant.profile(g, samples((3, 16)))
    by_name = str(quant.quantize(g, p, keep_float=["fc1"]))
    assert "glow.fully_connected" in by_name and "xi32>) -> tensor<3x5xi32>" in by_name
    by_kind = str(quant.quantize(g, p, keep_float=["fully_connected", "glow.matmul"]))
    assert "i8" not in by_kind


def test_bad_options_and_missing_nodes() -> None:
    g, _ = mlp()
    p = quant.profile(g, samples((3, 16)))
    with pytest.raises(ValueError, match="schema must be one of"):
        quant.quantize(g, p, schema="affine")
    del p.nodes["relu"]
    with pytest.raises(quant.ProfileError, match="fc2.*no node 'relu'"):
        quant.quantize(g, p)


class Attention(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = torch.nn.Linear(32, 96)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).split(32, -1)
        return torch.softmax(q @ k.transpose(-1, -2) / 32**0.5, -1) @ v


def test_attention_products_of_two_activations_stay_float(tmp_path) -> None:  # noqa: ANN001
    """The projection (constant weights) is quantized; attention's two batch_matmuls multiply two activations,
    which no int8 kernel does, so they stay float."""
    path = str(tmp_path / "attention.onnx")
    torch.manual_seed(0)
    torch.onnx.export(Attention().eval(), (torch.randn(2, 8, 32),), path, input_names=["x"], output_names=["y"],
                      dynamo=False)  # fmt: skip
    feeds = samples((2, 8, 32))
    model = glow_mlir.import_onnx(path)
    q = quant.quantize(model, quant.profile(model, feeds))
    text = str(q)
    assert "xi32>) -> tensor<16x96xi32>" in text
    assert "-> tensor<2x8x8xf32>" in text and "-> tensor<2x8x8xi32>" not in text
    assert "-> tensor<2x8x32xi32>" not in text
    r = quant.report(model, q, feeds)
    products = [layer for layer in r.layers if layer.kind in ("matmul", "batch_matmul")]
    assert len(products) >= 3 and min(layer.sqnr_db for layer in products) > 20
    x = samples((2, 8, 32), 1, seed=4)[0]
    with glow_mlir.compile(q) as compiled:
        np.testing.assert_allclose(compiled.run(x)["y"], glow_mlir.interpret(q, x)["y"], rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------------------------------------
# Reports


def test_report_names_the_worst_layers() -> None:
    g, _ = mlp()
    feeds = samples((3, 16))
    same = quant.report(g, g, feeds)
    assert all(layer.sqnr_db == float("inf") for layer in same.layers)
    q = quant.quantize(g, quant.profile(g, feeds), calibration="minmax")
    r = quant.report(g, q, feeds)
    assert {layer.name for layer in r.layers} >= {"fc1", "relu", "fc2"}
    text = str(r)
    assert "worst layers:" in text and r.worst(1)[0].name in text.splitlines()[-1]


def test_report_of_an_onnxruntime_qdq_model(tmp_path) -> None:  # noqa: ANN001
    """The float ONNX model against onnxruntime's quantize_static QDQ form of it, layer by layer."""
    net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).eval()
    path, qdq = str(tmp_path / "m.onnx"), str(tmp_path / "m.qdq.onnx")
    torch.onnx.export(net, (torch.randn(2, 16),), path, input_names=["x"], output_names=["y"], dynamo=False)

    class Reader(ort_quant.CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter(samples((2, 16), 8))

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.it, None)

    ort_quant.quantize_static(path, qdq, Reader(), quant_format=ort_quant.QuantFormat.QDQ)
    r = quant.report(path, qdq, samples((2, 16), 2, seed=5))
    gemms = [layer for layer in r.layers if layer.kind == "fully_connected"]
    assert len(gemms) == 2 and all(15 < layer.sqnr_db < 80 for layer in gemms)


# ----------------------------------------------------------------------------------------------------------
# bf16 / fp16


@pytest.mark.parametrize("precision,dtype,db", [("fp16", np.float16, 55), ("bf16", ml_dtypes.bfloat16, 35)])
def test_convert_to_half_precision(precision: str, dtype: type, db: float) -> None:
    g = convnet()
    half = quant.convert_to(g, precision)
    spelled = ops.NUMPY_TO_MLIR[np.dtype(dtype)]
    text = str(half)
    # The input converts once, the output once: the pairs between converted ops are folded.
    assert text.count("glow.convert_to") == 2 and f"x{spelled}>" in text
    x = samples((1, 3, 10, 10), 1)[0]
    interpreted = glow_mlir.interpret(half, x)["y"]
    assert interpreted.dtype == np.float32
    # Each op rounds its result to the half type, as `dtype` arithmetic in numpy does.
    float_y = glow_mlir.interpret(g.module, x)["y"]
    assert quant.report(g, half, [x])["conv"].sqnr_db > db
    np.testing.assert_allclose(interpreted, float_y, rtol=0, atol=np.abs(float_y).max() * 0.02)
    with glow_mlir.compile(half) as compiled:
        np.testing.assert_allclose(compiled.run(x)["y"], interpreted, rtol=0, atol=np.abs(float_y).max() * 0.02)


def test_convert_keeps_float_ops() -> None:
    g, _ = mlp()
    half = str(quant.convert_to(g, "bf16", keep_float=["fc2"]))
    assert "-> tensor<3x5xf32>" in half and "glow.matmul" in half and "-> tensor<3x24xbf16>" in half
    with pytest.raises(ValueError, match="precision must be one of"):
        quant.convert_to(g, "fp8")


def test_histogram_grows_with_the_range() -> None:
    node = quant.NodeProfile.of(np.zeros(5, np.float32))
    node.add(np.array([0.5, -1.0], np.float32))
    node.add(np.array([4.0, 2.0, np.inf], np.float32))
    assert (node.min, node.max) == (-1.0, 4.0) and node.histogram.sum() == 9
    # The zeros and 0.5 sit in the bins of [0, 4) that hold them; 4.0 in the last.
    assert node.histogram[0] == 5 and node.histogram[int(0.5 / 4 * 2048)] == 1 and node.histogram[-1] == 1


def test_report_groups_the_ops_of_an_onnx_node(tmp_path) -> None:  # noqa: ANN001
    """An ONNX Gemm lowered to several glow ops is one layer by default, every op with by_node=False."""
    path = str(tmp_path / "attention.onnx")
    torch.manual_seed(0)
    torch.onnx.export(Attention().eval(), (torch.randn(2, 8, 32),), path, input_names=["x"], output_names=["y"],
                      dynamo=False)  # fmt: skip
    feeds = samples((2, 8, 32), 2)
    model = glow_mlir.import_onnx(path)
    q = quant.quantize(model, quant.profile(model, feeds))
    nodes, every_op = quant.report(model, q, feeds), quant.report(model, q, feeds, by_node=False)
    node_names = {layer.name for layer in nodes.layers}
    assert len(every_op.layers) > len(nodes.layers)
    assert not any(name.rpartition("/")[0] in node_names and name[-1].isdigit() for name in node_names)
    assert {layer.kind for layer in nodes.layers} >= {"matmul", "batch_matmul", "softmax"}
