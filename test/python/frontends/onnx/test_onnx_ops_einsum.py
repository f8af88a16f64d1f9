"""ONNX Einsum: glow-mlir against onnxruntime, on the suite's equations and those transformers export."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import helper
from onnx_check import check_node, model, rand

import glow_mlir
from glow_mlir.errors import InvalidNodeError
from glow_mlir.frontends.onnx import import_model

CASES = [
    ("bhid,bhjd->bhij", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("bhij,bhjd->bhid", [(2, 3, 4, 6), (2, 3, 6, 5)]),
    ("bij,bjk->bik", [(3, 2, 4), (3, 4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ij,jk->ki", [(3, 4), (4, 5)]),
    ("ij->ji", [(3, 4)]),
    ("ij->i", [(3, 4)]),
    ("ijk->", [(2, 3, 4)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("bii->b", [(2, 3, 3)]),
    ("iji->j", [(3, 4, 3)]),
    ("...ii->...i", [(2, 3, 4, 4)]),
    ("i,i", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,j", [(3,), (4,)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("ij,ij->", [(3, 4), (3, 4)]),
    ("bsh,hd->bsd", [(2, 5, 6), (6, 3)]),
    ("...ij,...jk->...ik", [(3, 4, 5), (3, 5, 2)]),
    ("...ij,jk", [(2, 3, 4), (4, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("abc,cd,bd->a", [(2, 3, 4), (4, 5), (3, 5)]),
    ("ba,ca->bc", [(3, 4), (5, 4)]),
    ("ibnd,jbnd->bnij", [(4, 2, 3, 5), (6, 2, 3, 5)]),
]


@pytest.mark.parametrize("equation,shapes", CASES, ids=[c[0] for c in CASES])
def test_einsum(equation: str, shapes: list[tuple[int, ...]]) -> None:
    inputs = {f"x{i}": rand(*s) for i, s in enumerate(shapes)}
    check_node("Einsum", inputs, {"equation": equation}, opset=12, rtol=1e-4, atol=1e-5)


def test_einsum_ellipses_of_different_ranks_broadcast() -> None:
    """Aligned from the right, size 1 broadcasting (onnxruntime refuses this, the spec's reference does not)."""
    inputs = {"a": rand(2, 3, 4, 5), "b": rand(1, 5, 2)}
    check_node("Einsum", inputs, {"equation": "...ij,...jk->...ik"}, opset=12, rtol=1e-4, spec=True)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.int64])
def test_einsum_types(dtype: type) -> None:
    inputs = {"a": rand(2, 3, 4, low=-5, high=5, dtype=dtype), "b": rand(2, 4, 3, low=-5, high=5, dtype=dtype)}
    check_node("Einsum", inputs, {"equation": "bij,bjk->bik"}, opset=12)


def test_einsum_float16() -> None:
    inputs = {"a": rand(3, 8).astype(np.float16), "b": rand(8, 4).astype(np.float16)}
    check_node("Einsum", inputs, {"equation": "ij,jk->ik"}, opset=12, rtol=1e-3, atol=1e-3)


def test_einsum_bfloat16() -> None:
    """Computed in float32 and rounded once (onnxruntime has no bfloat16 Einsum): numpy's float32 einsum of
    the same values, rounded to bfloat16, is the expected result."""
    a, b = rand(3, 8).astype(ml_dtypes.bfloat16), rand(8, 4).astype(ml_dtypes.bfloat16)
    node = helper.make_node("Einsum", ["a", "b"], ["y"], equation="ij,jk->ik")
    bf16 = onnx.TensorProto.BFLOAT16
    graph = helper.make_graph(
        [node], "bf16", [helper.make_tensor_value_info(n, bf16, x.shape) for n, x in (("a", a), ("b", b))],
        [helper.make_tensor_value_info("y", bf16, [3, 4])],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)], ir_version=10)
    with glow_mlir.compile(import_model(m)) as compiled:
        got = compiled.run({"a": a, "b": b})["y"]
    want = np.einsum("ij,jk->ik", a.astype(np.float32), b.astype(np.float32)).astype(ml_dtypes.bfloat16)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-2)


@pytest.mark.parametrize("equation,shapes,message", [
    ("ij,jk->ik", [(3, 4), (5, 6)], "label 'j'"),
    ("ij->ik", [(3, 4)], "output"),
    ("ijk->i", [(3, 4)], "rank 2"),
    ("ij,jk", [(3, 4)], "2 operands"),
    ("i1->i", [(3, 4)], "letters"),
])
def test_einsum_errors_name_the_node(equation: str, shapes: list[tuple[int, ...]], message: str) -> None:
    inputs = {f"x{i}": rand(*s) for i, s in enumerate(shapes)}
    node = helper.make_node("Einsum", list(inputs), ["y"], name="my_einsum", equation=equation)
    with pytest.raises(InvalidNodeError, match=f"my_einsum.*{message}"):
        import_model(model([node], inputs, ["y"], opset=12))
