"""ONNX Attention: glow-mlir against onnxruntime (or the spec's reference where onnxruntime lacks an opset)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from onnx_check import check_node, model, rand

import glow_mlir
from glow_mlir.errors import InvalidNodeError
from glow_mlir.frontends.onnx import import_model

B, S, L, D = 2, 3, 5, 4  # batch, query length, key length, head size


def qkv(q_heads: int = 2, kv_heads: int = 2, rank: int = 4, v_head: int = D,
        dtype: type = np.float32) -> dict[str, np.ndarray]:
    if rank == 3:
        return {"q": rand(B, S, q_heads * D, dtype=dtype), "k": rand(B, L, kv_heads * D, dtype=dtype),
                "v": rand(B, L, kv_heads * v_head, dtype=dtype)}
    return {"q": rand(B, q_heads, S, D, dtype=dtype), "k": rand(B, kv_heads, L, D, dtype=dtype),
            "v": rand(B, kv_heads, L, v_head, dtype=dtype)}


@pytest.mark.parametrize("q_heads,kv_heads", [(2, 2), (6, 2), (3, 1)])
@pytest.mark.parametrize("rank", [3, 4])
def test_attention_heads(q_heads: int, kv_heads: int, rank: int) -> None:
    """Multi-head, grouped-query and multi-query attention, 3-D inputs split by q_num_heads/kv_num_heads."""
    attrs = {"q_num_heads": q_heads, "kv_num_heads": kv_heads} if rank == 3 else {}
    check_node("Attention", qkv(q_heads, kv_heads, rank, v_head=6), attrs, opset=23)


@pytest.mark.parametrize("attrs", [
    {"is_causal": 1},
    {"scale": 0.3},
    {"softcap": 1.5},
    {"is_causal": 1, "softcap": 2.0, "scale": 2.0},
])
def test_attention_attributes(attrs: dict[str, object]) -> None:
    check_node("Attention", qkv(4, 2), attrs, opset=23)


@pytest.mark.parametrize("mask_shape", [(S, L), (B, 1, S, L), (1, 4, S, L), (4, S, L)])
@pytest.mark.parametrize("kind", ["bool", "float"])
@pytest.mark.parametrize("causal", [0, 1])
def test_attention_mask(mask_shape: tuple[int, ...], kind: str, causal: int) -> None:
    """Masks broadcast to [batch, q heads, S, L]."""
    mask = rand(*mask_shape, dtype=np.bool_) if kind == "bool" else rand(*mask_shape, low=-3, high=0)
    if kind == "bool":
        mask[..., 0] = True  # onnxruntime and the spec differ on rows that attend nothing (see below)
    check_node("Attention", {**qkv(4, 2), "mask": mask}, {"is_causal": causal}, opset=23)


@pytest.mark.parametrize("mask_shape,causal", [((L,), 0), ((B, 4, 1, L), 0), ((S, L - 2), 1), ((1, S, L - 1), 1)])
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_attention_mask_broadcast_and_short(mask_shape: tuple[int, ...], causal: int, kind: str) -> None:
    """Masks of any rank up to 4, broadcast along the query length too, and shorter than the keys (padded
    with -inf or False): onnxruntime takes neither, so the spec's reference (which takes the query length
    from the mask under is_causal, so a mask broadcast along it is tested without)."""
    mask = rand(*mask_shape, dtype=np.bool_) if kind == "bool" else rand(*mask_shape, low=-3, high=0)
    check_node("Attention", {**qkv(4, 2), "mask": mask}, {"is_causal": causal}, opset=23, spec=True)


def test_attention_runtime_mask_masking_whole_rows() -> None:
    """A query row the mask hides entirely gets 0, decided at run time (the spec's reference; onnxruntime
    spreads such a row evenly)."""
    mask = rand(B, 1, S, L, dtype=np.bool_)
    mask[0, 0, 1] = False
    mask[1, 0, 2] = False
    check_node("Attention", {**qkv(), "mask": mask}, {}, opset=23, spec=True)


@pytest.mark.parametrize("qk_mode", [0, 1, 2, 3])
@pytest.mark.parametrize("rank", [3, 4])
def test_attention_past_present_and_qk_output(qk_mode: int, rank: int) -> None:
    """past_key/past_value are prepended along the key length; the causal frontier shifts past them."""
    inputs = {**qkv(4, 2, rank), "mask": rand(S, L + 3, low=-2, high=0),
              "past_key": rand(B, 2, 3, D), "past_value": rand(B, 2, 3, D)}
    attrs = {"is_causal": 1, "softcap": 3.0, "qk_matmul_output_mode": qk_mode}
    if rank == 3:
        attrs.update(q_num_heads=4, kv_num_heads=2)
    # onnxruntime writes the lowest float where the bias is -inf in mode 2: the spec's reference there.
    check_node("Attention", inputs, attrs, opset=23, outputs=4, spec=qk_mode == 2)


def test_attention_present_without_past() -> None:
    """present_key / present_value without a cache are K and V as [batch, heads, length, size]."""
    check_node("Attention", qkv(4, 2, rank=3), {"q_num_heads": 4, "kv_num_heads": 2}, opset=23, outputs=3)


def test_attention_softmax_precision_float16() -> None:
    """Float16 attention with the softmax in float32 (the spec's reference: onnxruntime lacks the type)."""
    check_node("Attention", qkv(2, 2, dtype=np.float16), {"softmax_precision": 1, "is_causal": 1}, opset=23,
               rtol=2e-3, atol=1e-3, spec=True)


@pytest.mark.parametrize("causal", [0, 1])
def test_attention_nonpad_kv_seqlen(causal: int) -> None:
    """Opset 24: nonpad_kv_seqlen, a run-time input, hides keys from n on and puts the causal frontier at
    n - S per batch (the spec's reference)."""
    inputs = {**qkv(4, 2), "mask": rand(S, L, low=-1, high=0), "nonpad": np.array([4, 5], np.int64)}
    order = ["q", "k", "v", "mask", "", "", "nonpad"]
    node = helper.make_node("Attention", order, ["y"], is_causal=causal)
    m = model([node], inputs, ["y"], opset=24)
    _check_spec(m, inputs)


@pytest.mark.parametrize("left,right,causal", [(1, -1, 1), (2, 1, 0), (-1, 0, 0)])
@pytest.mark.parametrize("nonpad", [False, True])
def test_attention_sliding_window(left: int, right: int, causal: int, nonpad: bool) -> None:
    """Opset 25: the window [p - left, p + right] around each query's absolute position p."""
    inputs = qkv(2, 2)
    order = ["q", "k", "v"]
    if nonpad:
        inputs["nonpad"] = np.array([5, 4], np.int64)
        order += ["", "", "", "nonpad"]
    node = helper.make_node("Attention", order, ["y"], is_causal=causal, left_window_size=left,
                            right_window_size=right)
    _check_spec(model([node], inputs, ["y"], opset=25), inputs)


def _check_spec(m: object, inputs: dict[str, np.ndarray]) -> None:
    from onnx.reference import ReferenceEvaluator

    expected = ReferenceEvaluator(m).run(None, inputs)[0]
    with glow_mlir.compile(import_model(m)) as compiled:
        got = compiled.run(inputs)["y"]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def _attention_model(inputs: dict[str, np.ndarray], **attrs: object) -> object:
    node = helper.make_node("Attention", list(inputs), ["y"], name="att", **attrs)
    return model([node], inputs, ["y"], opset=23)


@pytest.mark.parametrize("inputs,attrs,message", [
    (qkv(rank=3), {}, "need the attributes q_num_heads"),
    ({"q": rand(B, 2, S, D), "k": rand(B, L, 2 * D), "v": rand(B, L, 2 * D)}, {}, "must all be 3-D or all 4-D"),
    (qkv(3, 2), {}, "kv heads must divide q heads"),
    (qkv(rank=3), {"q_num_heads": 3, "kv_num_heads": 2}, r"Q \[2, 3, 8\]: hidden size 8 is not a multiple"),
    ({**qkv(), "mask": rand(S, L + 1)}, {}, "covers 6 keys, more than the 5"),
])
def test_attention_refuses_bad_nodes(inputs: dict[str, np.ndarray], attrs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidNodeError, match=f"att.*Attention.*{message}"):
        import_model(_attention_model(inputs, **attrs))


def test_attention_past_key_needs_past_value() -> None:
    inputs = {**qkv(), "mask": rand(S, L + 2), "past_key": rand(B, 2, 2, D)}
    with pytest.raises(InvalidNodeError, match="att.*past_key and past_value must be given together"):
        import_model(_attention_model(inputs))


def test_attention_composition_is_recognisable() -> None:
    """The graph a fused-attention kernel would match: one batched matmul of the grouped query heads against
    the unrepeated keys, the causal bias added, softmax, one batched matmul with the values; no guard for
    fully masked rows where a constant bias has none."""
    inputs = qkv(6, 2)
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], is_causal=1)
    graph = import_model(model([node], inputs, ["y"], opset=23))  # kept: its module owns the ops read
    ops = [op for op in (o.operation for o in graph.module.body.operations[0].regions[0].blocks[0].operations)
           if op.name != "func.return"]
    names = [op.name for op in ops]
    compute = [n for n in names if n in ("glow.batch_matmul", "glow.add", "glow.softmax", "glow.select")]
    assert compute == ["glow.batch_matmul", "glow.add", "glow.softmax", "glow.batch_matmul"], names
    first = ops[names.index("glow.batch_matmul")]
    assert [list(o.type.shape) for o in first.operands] == [[B * 2, 3 * S, D], [B * 2, D, L]]
