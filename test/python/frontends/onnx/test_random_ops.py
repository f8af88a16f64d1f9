"""ONNX RandomUniform, RandomNormal, their Like forms, Bernoulli and Multinomial (glow_mlir/frontends/onnx/
ops_random.py): shapes and types, statistics on 1e5 draws with generous bounds, the interpreter computing the
compiled code's numbers for any run, new draws on every run, the same sequence of draws from two compiles of a
seeded model, and models that sample: a small VAE (torch.randn_like) and MAE-style random masking
(torch.rand, argsort, gather), as PyTorch exports them, and transformers' ViTMAEModel."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from onnx import NodeProto, TensorProto, helper

import glow_mlir
from glow_mlir.builder import Graph
from glow_mlir.compiled import CompiledModel
from glow_mlir.errors import UnsupportedAttributeError
from glow_mlir.frontends.onnx import import_model


def _model(nodes: list[NodeProto], inputs: dict[str, tuple[int, list[int]]], outputs: list[str],
           opset: int = 17) -> bytes:  # fmt: skip
    """A serialized model of `nodes`; inputs by name as (ONNX element type, dims)."""
    graph = helper.make_graph(
        nodes, "random",
        [helper.make_tensor_value_info(name, elem, dims) for name, (elem, dims) in inputs.items()],
        [helper.make_tensor_value_info(name, TensorProto.UNDEFINED, None) for name in outputs],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return model.SerializeToString()


def _compile(model: bytes) -> tuple[Graph, CompiledModel]:
    graph = import_model(model)
    return graph, glow_mlir.compile(graph.module, cache=False, progress=False)


def _runs(graph: Graph, compiled: CompiledModel, feeds: dict[str, np.ndarray], count: int,
          computed: tuple[str, ...] = ()) -> list[dict[str, np.ndarray]]:  # fmt: skip
    """`count` runs of the compiled model, each checked against the interpreter's draw for that run; the
    `computed` outputs (arithmetic on draws) within float tolerance, the others exactly."""
    results = []
    for run in range(count):
        got = compiled.run(feeds)
        expected = glow_mlir.interpret(graph.module, feeds, random_run=run, random_seed=compiled.random_seed or 0)
        for name, value in got.items():
            assert value.dtype == expected[name].dtype and value.shape == expected[name].shape, name
            # Uniform draws agree bit for bit; normals too where both call one libm (at most 1 ulp otherwise).
            if name in computed:
                np.testing.assert_allclose(value, expected[name], rtol=1e-5, atol=1e-5)
            elif np.issubdtype(value.dtype, np.floating):
                np.testing.assert_array_max_ulp(value, expected[name], 1)
            else:
                np.testing.assert_array_equal(value, expected[name])
        results.append(got)
    return results


def test_random_uniform_range_moments_and_runs() -> None:
    node = helper.make_node("RandomUniform", [], ["y"], shape=[250, 400], low=-2.0, high=3.0, seed=5.0)
    graph, compiled = _compile(_model([node], {}, ["y"]))
    first, second = (r["y"] for r in _runs(graph, compiled, {}, 2))
    assert first.dtype == np.float32 and first.shape == (250, 400)
    assert first.min() >= -2.0 and first.max() < 3.0
    assert abs(first.mean() - 0.5) < 0.02 and abs(first.var() / (25 / 12) - 1) < 0.03
    # Ten bins of equal width each hold a tenth of the draws.
    counts = np.histogram(first, bins=10, range=(-2, 3))[0] / first.size
    assert np.all(np.abs(counts - 0.1) < 0.005)
    assert np.mean(first == second) < 1e-3


@pytest.mark.parametrize("dtype", [TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16])
def test_random_normal_moments_and_types(dtype: int) -> None:
    node = helper.make_node("RandomNormal", [], ["y"], shape=[100000], mean=1.5, scale=2.0, seed=1.0, dtype=dtype)
    graph, compiled = _compile(_model([node], {}, ["y"]))
    [result] = _runs(graph, compiled, {}, 1)
    y = result["y"].astype(np.float64)
    assert result["y"].dtype == {TensorProto.FLOAT: np.float32, TensorProto.DOUBLE: np.float64,
                                 TensorProto.FLOAT16: np.float16}[dtype]
    assert abs(y.mean() - 1.5) < 0.03 and abs(y.std() / 2.0 - 1) < 0.02
    assert abs(np.mean(np.abs(y - 1.5) < 2.0) - 0.6827) < 0.01
    assert abs(np.mean(np.abs(y - 1.5) < 4.0) - 0.9545) < 0.005


def test_like_ops_take_the_input_shape_and_type() -> None:
    nodes = [helper.make_node("RandomNormalLike", ["x"], ["n"]),
             helper.make_node("RandomUniformLike", ["i"], ["u"], dtype=TensorProto.FLOAT, low=1.0, high=2.0)]
    inputs = {"x": (TensorProto.DOUBLE, [3, 5]), "i": (TensorProto.INT64, [4])}
    graph, compiled = _compile(_model(nodes, inputs, ["n", "u"]))
    feeds = {"x": np.zeros((3, 5)), "i": np.zeros(4, np.int64)}
    first, second = _runs(graph, compiled, feeds, 2)
    assert first["n"].dtype == np.float64 and first["n"].shape == (3, 5)
    assert first["u"].dtype == np.float32 and first["u"].shape == (4,) and np.all((first["u"] >= 1) & (first["u"] < 2))
    assert not np.array_equal(first["n"], second["n"])


def test_seeded_draws_repeat_across_compiles_unseeded_do_not(monkeypatch: pytest.MonkeyPatch) -> None:
    nodes = [helper.make_node("RandomNormal", [], ["seeded"], shape=[64], seed=3.0),
             helper.make_node("RandomNormal", [], ["unseeded"], shape=[64])]
    model = _model(nodes, {}, ["seeded", "unseeded"])
    (g1, c1), (g2, c2) = _compile(model), _compile(model)
    runs1, runs2 = _runs(g1, c1, {}, 3), _runs(g2, c2, {}, 3)
    for a, b in zip(runs1, runs2, strict=True):
        np.testing.assert_array_equal(a["seeded"], b["seeded"])
        assert not np.array_equal(a["unseeded"], b["unseeded"])
    assert not np.array_equal(runs1[0]["seeded"], runs1[1]["seeded"])
    # Two ops with one seed draw the same numbers (onnxruntime's nodes each seed a generator of their own).
    monkeypatch.setenv("GLOW_MLIR_RANDOM_SEED", "12345")
    (g3, c3), (g4, c4) = _compile(model), _compile(model)
    assert c3.random_seed == c4.random_seed == 12345
    np.testing.assert_array_equal(c3.run({})["unseeded"], c4.run({})["unseeded"])


@pytest.mark.parametrize("dtype", [None, TensorProto.BOOL, TensorProto.INT32])
def test_bernoulli_frequency(dtype: int | None) -> None:
    extra = {} if dtype is None else {"dtype": dtype}
    node = helper.make_node("Bernoulli", ["p"], ["y"], seed=2.0, **extra)
    graph, compiled = _compile(_model([node], {"p": (TensorProto.FLOAT, [3, 40000])}, ["y"], opset=15))
    p = np.repeat(np.array([[0.1], [0.5], [0.9]], np.float32), 40000, axis=1)
    first, second = _runs(graph, compiled, {"p": p}, 2)
    y = first["y"]
    assert y.dtype == {None: np.float32, TensorProto.BOOL: np.bool_, TensorProto.INT32: np.int32}[dtype]
    np.testing.assert_allclose(y.astype(np.float64).mean(axis=1), [0.1, 0.5, 0.9], atol=0.01)
    assert not np.array_equal(y, second["y"])


@pytest.mark.parametrize("ratio", [0.3, 0.0])
def test_dropout_in_training_mode_draws_its_mask(ratio: float) -> None:
    """A training-mode Dropout (torch.onnx.TrainingMode.TRAINING exports) keeps each element with probability
    1 - ratio, scaled by 1 / (1 - ratio), and returns the mask; each run draws another. A ratio of 0 keeps all."""
    ratio_node = helper.make_node("Constant", [], ["r"], value=helper.make_tensor("r", TensorProto.FLOAT, [], [ratio]))
    train = helper.make_node("Constant", [], ["t"], value=helper.make_tensor("t", TensorProto.BOOL, [], [True]))
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"], seed=4)
    graph, compiled = _compile(_model([ratio_node, train, node], {"x": (TensorProto.FLOAT, [200, 500])},
                                      ["y", "mask"]))  # fmt: skip
    x = np.random.default_rng(0).uniform(1, 2, (200, 500)).astype(np.float32)
    first, second = _runs(graph, compiled, {"x": x}, 2, computed=("y",))
    mask = first["mask"]
    assert mask.dtype == np.bool_ and abs(mask.mean() - (1 - ratio)) < 0.005
    np.testing.assert_allclose(first["y"], np.where(mask, x / np.float32(1 - ratio), 0), rtol=1e-6)
    assert np.array_equal(mask, second["mask"]) == (ratio == 0)


@pytest.mark.parametrize("dtype", [None, TensorProto.INT64])
def test_multinomial_frequency(dtype: int | None) -> None:
    extra = {} if dtype is None else {"dtype": dtype}
    node = helper.make_node("Multinomial", ["x"], ["y"], sample_size=20000, seed=4.0, **extra)
    graph, compiled = _compile(_model([node], {"x": (TensorProto.FLOAT, [2, 4])}, ["y"]))
    probabilities = np.array([[0.2, 0.3, 0.5, 0.0], [0.25, 0.25, 0.25, 0.25]], np.float32)
    with np.errstate(divide="ignore"):
        x = np.log(probabilities) + 3.0
    [result] = _runs(graph, compiled, {"x": x}, 1)
    y = result["y"]
    assert y.dtype == (np.int32 if dtype is None else np.int64) and y.shape == (2, 20000)
    frequencies = np.stack([np.bincount(row, minlength=4) / row.size for row in y])
    np.testing.assert_allclose(frequencies, probabilities, atol=0.015)


@pytest.mark.parametrize(
    ("node", "attribute"),
    [
        (helper.make_node("RandomNormal", [], ["y"], name="draw", shape=[2], dtype=TensorProto.INT32), "dtype"),
        (helper.make_node("RandomUniformLike", ["i"], ["y"], name="draw"), "dtype"),
        (helper.make_node("Multinomial", ["x"], ["y"], name="draw", dtype=TensorProto.FLOAT), "dtype"),
    ],
)
def test_unsupported_types_name_the_node(node: NodeProto, attribute: str) -> None:
    inputs = {"i": (TensorProto.INT64, [4]), "x": (TensorProto.FLOAT, [2, 3])}
    used = {k: v for k, v in inputs.items() if k in node.input}
    with pytest.raises(UnsupportedAttributeError, match=f"draw.*{attribute}"):
        import_model(_model([node], used, ["y"]))


class _Vae(torch.nn.Module):
    """Encoder -> mean, log-variance -> z = mean + exp(logvar / 2) * eps (randn_like) -> decoder."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 16))
        self.decoder = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 16))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        mean, logvar = self.encoder(x).chunk(2, dim=-1)
        z = mean + torch.exp(0.5 * logvar) * torch.randn_like(mean)
        return self.decoder(z), z, mean, logvar


def _export(module: torch.nn.Module, x: torch.Tensor, outputs: list[str], path: str) -> None:
    torch.onnx.export(module, (x,), path, input_names=["x"], output_names=outputs, dynamo=False, opset_version=17)


def test_vae_samples_its_latent(tmp_path: Path) -> None:
    torch.manual_seed(0)
    vae = _Vae().eval()
    x = torch.randn(256, 16)
    path = f"{tmp_path}/vae.onnx"
    _export(vae, x, ["recon", "z", "mean", "logvar"], path)
    graph, compiled = _compile(open(path, "rb").read())
    feeds = {"x": x.numpy()}
    first, second = _runs(graph, compiled, feeds, 2, computed=("recon", "z", "mean", "logvar"))
    with torch.no_grad():
        mean, logvar = (t.numpy() for t in vae.encoder(x).chunk(2, dim=-1))
        recon = vae.decoder(torch.from_numpy(first["z"])).numpy()
    np.testing.assert_allclose(first["mean"], mean, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(first["recon"], recon, rtol=1e-4, atol=1e-5)
    eps = (first["z"] - mean) / np.exp(0.5 * logvar)
    assert abs(eps.mean()) < 0.1 and abs(eps.std() - 1) < 0.1
    assert not np.allclose(first["z"], second["z"])


class _RandomMasking(torch.nn.Module):
    """MAE's random masking: keep a random quarter of the patches of each row (noise, argsort, gather)."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        n, length, dim = x.shape
        noise = torch.rand(n, length)
        ids_shuffle = torch.argsort(noise, dim=1)
        ids_restore = torch.argsort(ids_shuffle, dim=1)
        keep = ids_shuffle[:, : length // 4]
        kept = torch.gather(x, 1, keep.unsqueeze(-1).repeat(1, 1, dim))
        mask = torch.ones(n, length)
        mask[:, : length // 4] = 0
        return kept, torch.gather(mask, 1, ids_restore), ids_restore


def test_mae_random_masking(tmp_path: Path) -> None:
    x = torch.arange(3 * 16 * 2, dtype=torch.float32).reshape(3, 16, 2)
    path = f"{tmp_path}/mask.onnx"
    _export(_RandomMasking(), x, ["kept", "mask", "ids_restore"], path)
    graph, compiled = _compile(open(path, "rb").read())
    first, second = _runs(graph, compiled, {"x": x.numpy()}, 2)
    for kept, mask, restore in zip(first["kept"], first["mask"], first["ids_restore"], strict=True):
        assert sorted(restore) == list(range(16)) and mask.sum() == 12
        # The kept patches are the unmasked ones, in shuffled order.
        np.testing.assert_array_equal(np.sort(kept[:, 0] % 32 // 2), np.flatnonzero(mask == 0))
    assert not np.array_equal(first["ids_restore"], second["ids_restore"])


def test_transformers_vitmae(tmp_path: Path) -> None:
    """transformers' ViTMAEModel (tiny, random weights) draws its masking noise with torch.rand: glow's run
    matches PyTorch given the same noise (the ranks glow's ids_restore gives)."""
    pytest.importorskip("transformers")
    from models import zoo  # noqa: F401  (lets transformers import beside the CUDA torchvision wheel)
    from transformers import ViTMAEConfig, ViTMAEModel

    config = ViTMAEConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                          intermediate_size=64, mask_ratio=0.75)
    torch.manual_seed(0)
    model = ViTMAEModel(config).eval()
    x = torch.randn(2, 3, 32, 32)
    path = f"{tmp_path}/vitmae.onnx"
    torch.onnx.export(model, (x,), path, input_names=["pixel_values"],
                      output_names=["last_hidden_state", "mask", "ids_restore"], dynamo=False, opset_version=17)
    session = glow_mlir.InferenceSession(path)
    draws = []
    for _ in range(2):
        hidden, mask, restore = session.run(None, {"pixel_values": x.numpy()})
        with torch.no_grad():
            expected = model(x, noise=torch.from_numpy(restore).float())
        np.testing.assert_allclose(hidden, expected.last_hidden_state.numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(mask, expected.mask.numpy())
        draws.append(restore)
    assert not np.array_equal(*draws)
