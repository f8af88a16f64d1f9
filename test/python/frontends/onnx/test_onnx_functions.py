"""ONNX ops that the standard defines as a function of other ops, imported as that body
(glow_mlir/frontends/onnx/functions.py): Attention, RotaryEmbedding, CenterCropPad, checked against
onnxruntime or, where it lacks the opset, onnx's reference implementation."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx_check import check_node, model, rand

from glow_mlir.errors import UnsupportedModelError
from glow_mlir.frontends.onnx import functions, import_model, registry


@pytest.mark.parametrize("attrs, mask", [
    ({}, None),
    ({"is_causal": 1}, None),
    ({"scale": 0.3, "softcap": 2.0}, None),
    ({}, rand(4, 6)),
    ({"is_causal": 1}, rand(2, 1, 4, 6) > 0),
])
def test_attention_4d(attrs: dict[str, object], mask: np.ndarray | None) -> None:
    feeds = {"q": rand(2, 3, 4, 8), "k": rand(2, 3, 6, 8), "v": rand(2, 3, 6, 5)}
    if mask is not None:
        feeds["mask"] = mask
    check_node("Attention", feeds, attrs, opset=23, spec=True, rtol=1e-5, atol=1e-5)


def test_attention_3d_grouped_query_with_cache_and_all_outputs() -> None:
    feeds = {"q": rand(2, 4, 4 * 8), "k": rand(2, 4, 2 * 8), "v": rand(2, 4, 2 * 8),
             "past_k": rand(2, 2, 3, 8), "past_v": rand(2, 2, 3, 8)}
    check_node("Attention", feeds, {"q_num_heads": 4, "kv_num_heads": 2, "qk_matmul_output_mode": 1},
               opset=23, outputs=4, order=["q", "k", "v", "", "past_k", "past_v"], spec=True, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("interleaved", [0, 1])
def test_rotary_embedding(interleaved: int) -> None:
    positions = np.arange(6, dtype=np.int64).reshape(1, 6).repeat(2, 0)
    angles = rand(16, 4, low=-3, high=3)
    check_node("RotaryEmbedding", {"x": rand(2, 3, 6, 8)},
               {"interleaved": interleaved},
               consts={"cos": np.cos(angles), "sin": np.sin(angles), "pos": positions},
               order=["x", "cos", "sin", "pos"], opset=23, spec=True)


def test_center_crop_pad() -> None:
    check_node("CenterCropPad", {"x": rand(5, 7, 3)}, {"axes": [0, 1]},
               consts={"shape": np.array([3, 9], np.int64)}, opset=18)


def test_an_op_of_the_body_that_glow_lacks_names_the_inner_node(monkeypatch: pytest.MonkeyPatch) -> None:
    # Bernoulli's body draws with RandomUniformLike: without glow's handlers of both, its inner node is refused.
    monkeypatch.delitem(registry.HANDLERS, "Bernoulli")
    monkeypatch.delitem(registry.HANDLERS, "RandomUniformLike")
    node = helper.make_node("Bernoulli", ["x"], ["y"], name="coin")
    m = model([node], {"x": rand(4, low=0, high=1)}, ["y"], opset=22)
    with pytest.raises(UnsupportedModelError, match=r"RandomUniformLike .* at node 'coin/"):
        import_model(m)


def test_only_ops_with_a_body_are_expanded() -> None:
    assert functions.has_body(helper.make_node("Attention", ["q", "k", "v"], ["y"]), 23)
    assert not functions.has_body(helper.make_node("MaxRoiPool", ["x", "r"], ["y"]), 22)
    assert not functions.has_body(helper.make_node("Nonexistent", ["x"], ["y"]), 22)
    node = helper.make_node("MaxRoiPool", ["x", "r"], ["y"], pooled_shape=[2, 2])
    m = model([node], {"x": rand(1, 2, 4, 4), "r": rand(1, 5)}, ["y"], opset=22)
    with pytest.raises(UnsupportedModelError, match="MaxRoiPool"):
        import_model(m)
    assert onnx.defs.get_schema("Attention", 23).has_context_dependent_function
