"""The bounded forms of the data-dependent ops (glow_mlir/frontends/onnx/ops_bounded.py): models of one
glow-domain node, compiled and run by the interpreter, each padded result cut to the count along its
`padded_axes` axis and compared with the plain ONNX node run by onnx's reference implementation (onnxruntime
for Unique along an axis, where the reference takes the slices along axis 0). The padding must be zeros and the
padded shapes the documented bounds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import glow_mlir
from glow_mlir.errors import InvalidNodeError, StaticInputRequired
from glow_mlir.frontends.onnx import import_model
from glow_mlir.frontends.onnx.ops_bounded import BOUNDED, padded_axes
from glow_mlir.frontends.onnx.registry import GLOW_DOMAIN

rng = np.random.default_rng(7)

ELEMENT = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
           np.dtype(np.int32): TensorProto.INT32, np.dtype(np.bool_): TensorProto.BOOL}  # fmt: skip
# onnxruntime wants typed outputs.
OUTPUT_TYPES = {"Unique": [TensorProto.FLOAT, *[TensorProto.INT64] * 3], "NonMaxSuppression": [TensorProto.INT64]}
N_OUTPUTS = {"NonZero": 1, "NonMaxSuppression": 1, "Unique": 4, "Compress": 1, "TopK": 2}


def _model(op: str, inputs: dict[str, np.ndarray], outputs: int, domain: str = "",
           initializers: dict[str, np.ndarray] | None = None, **attrs: Any) -> onnx.ModelProto:  # fmt: skip
    """A model of one node of `op`: graph inputs `inputs` (their names are the node's inputs, '' left out),
    then `initializers`."""
    names = [*inputs, *(initializers or {})]
    types = OUTPUT_TYPES.get(op, [TensorProto.UNDEFINED] * outputs)
    node = helper.make_node(op, names, [f"y{i}" for i in range(outputs)], domain=domain, **attrs)
    graph = helper.make_graph(
        [node], "bounded",
        [helper.make_tensor_value_info(k, ELEMENT[v.dtype], list(v.shape)) for k, v in inputs.items()],
        [helper.make_tensor_value_info(f"y{i}", types[i] if i < len(types) else TensorProto.INT64, None)
         for i in range(outputs)],
        initializer=[onnx.numpy_helper.from_array(v, k) for k, v in (initializers or {}).items()])  # fmt: skip
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(GLOW_DOMAIN, 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


def _bounded(op: str, feeds: Sequence[dict[str, np.ndarray]], consts: dict[str, np.ndarray] | None = None,
             **attrs: Any) -> list[list[np.ndarray]]:  # fmt: skip
    """The bounded node's results (padded results, then the count) for each feed set, from one compiled model,
    checked equal to the interpreter's."""
    m = _model(BOUNDED[op], feeds[0], N_OUTPUTS[op] + 1, GLOW_DOMAIN, consts, **attrs)
    graph = import_model(m)
    results = []
    with glow_mlir.compile(graph, cache=False, progress=False) as compiled:
        for feed in feeds:
            got = compiled.run(feed)
            interpreted = glow_mlir.interpret(graph.module, feed)
            outs = [got[f"y{i}"] for i in range(N_OUTPUTS[op] + 1)]
            for i, out in enumerate(outs):
                np.testing.assert_array_equal(interpreted[f"y{i}"], out)
            assert outs[-1].shape == () and outs[-1].dtype == np.int64
            results.append(outs)
    return results


def _cut(op: str, outs: list[np.ndarray], ranks: Sequence[int], **attrs: Any) -> list[np.ndarray]:
    """The padded results cut to the count along their padded axes, the padding checked to be zeros."""
    node = helper.make_node(op, [f"x{i}" for i in range(len(ranks))], [f"y{i}" for i in range(len(outs) - 1)],
                            **attrs)
    count = int(outs[-1])
    cut = []
    for out, axis in zip(outs[:-1], padded_axes(node, ranks, node.name), strict=True):
        if axis is None:
            cut.append(out)
            continue
        assert 0 <= count <= out.shape[axis]
        assert not np.take(out, np.arange(count, out.shape[axis]), axis=axis).any(), "padding must be zeros"
        cut.append(np.take(out, np.arange(count), axis=axis))
    return cut


def _expected(op: str, feed: dict[str, np.ndarray], consts: dict[str, np.ndarray] | None = None,
              runtime: bool = False, **attrs: Any) -> list[np.ndarray]:  # fmt: skip
    m = _model(op, feed, N_OUTPUTS[op], "", consts, **attrs)
    if runtime:
        session = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        return session.run(None, feed)
    return [np.asarray(v) for v in ReferenceEvaluator(m).run(None, feed)]


def _check(op: str, feeds: Sequence[dict[str, np.ndarray]], consts: dict[str, np.ndarray] | None = None,
           runtime: bool = False, **attrs: Any) -> list[int]:  # fmt: skip
    """Each feed set's bounded results, cut, equal to the ONNX op's; returns the counts."""
    counts = []
    for feed, outs in zip(feeds, _bounded(op, feeds, consts, **attrs), strict=True):
        ranks = [v.ndim for v in [*feed.values(), *(consts or {}).values()]]
        got = _cut(op, outs, ranks, **attrs)
        expected = _expected(op, feed, consts, runtime, **attrs)
        for g, e in zip(got, expected, strict=True):
            assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, e.shape, g.dtype, e.dtype)
            np.testing.assert_array_equal(g, e)
        counts.append(int(outs[-1]))
    return counts


def test_padded_axes() -> None:
    def axes(op: str, ranks: list[int], **attrs: Any) -> list[int | None]:
        return padded_axes(helper.make_node(op, ["a", "b"], ["y"], **attrs), ranks, op)

    assert axes("NonZero", [3]) == [1]
    assert axes("NonMaxSuppression", [3, 3]) == [0]
    assert axes("Unique", [2]) == [0, 0, None, 0]
    assert axes("Unique", [3], axis=-2) == [1, 0, None, 0]
    assert axes("Compress", [3, 1]) == [0] and axes("Compress", [3, 1], axis=-1) == [2]
    assert axes("TopK", [3, 1]) == [2, 2] and axes("TopK", [3, 1], axis=1) == [1, 1]


@pytest.mark.parametrize("dims", [(17,), (3, 4, 5), (1, 6, 1, 2)])
def test_non_zero(dims: tuple[int, ...]) -> None:
    sparse = np.where(rng.random(dims) < 0.4, rng.standard_normal(dims), 0).astype(np.float32)
    sparse.reshape(-1)[:3] = [np.nan, -0.0, 0.5][: sparse.size]  # NaN counts, -0 does not
    dense = rng.uniform(1, 2, dims).astype(np.float32)
    feeds = [{"x": sparse}, {"x": np.zeros(dims, np.float32)}, {"x": dense}]
    outs = _bounded("NonZero", feeds)
    assert all(o[0].shape == (len(dims), int(np.prod(dims))) for o in outs)
    assert _check("NonZero", feeds)[1:] == [0, int(np.prod(dims))]


@pytest.mark.parametrize("dt", [np.bool_, np.int32])
def test_non_zero_types(dt: type) -> None:
    _check("NonZero", [{"x": rng.integers(-1, 2, (4, 6)).astype(dt)}])


@pytest.mark.parametrize("axis", [None, 1, -1])
def test_compress(axis: int | None) -> None:
    """Conditions shorter than the axis (the rest is dropped), all false, all true."""
    x = rng.standard_normal((3, 5, 4)).astype(np.float32)
    length = x.size if axis is None else x.shape[axis]
    attrs = {} if axis is None else {"axis": axis}
    for given in (length, length - 2):
        feeds = [{"x": x, "c": rng.random(given) < 0.5}, {"x": x, "c": np.zeros(given, np.bool_)},
                 {"x": x, "c": np.ones(given, np.bool_)}]
        assert _check("Compress", feeds, **attrs)[1:] == [0, given]
        assert _bounded("Compress", feeds[:1], **attrs)[0][0].shape[0 if axis is None else axis] == length


def test_compress_longer_condition_is_invalid() -> None:
    with pytest.raises(InvalidNodeError, match="longer"):
        import_model(_model("CompressBounded", {"x": np.zeros([3, 2], np.float32), "c": np.ones(3, np.bool_)}, 2,
                            GLOW_DOMAIN, axis=1))


@pytest.mark.parametrize("axis,largest", [(-1, 1), (0, 0), (1, 1)])
def test_top_k(axis: int, largest: int) -> None:
    """K = 0, 1, the axis length and beyond (clamped), negative (0), from one compiled model; ties to the
    lower index."""
    x = rng.integers(-3, 4, (4, 6, 5)).astype(np.float32)
    length = x.shape[axis]
    ks = [0, 1, length // 2, length, length + 3, -2]
    feeds = [{"x": x, "k": np.array([k], np.int64)} for k in ks]
    outs = _bounded("TopK", feeds, axis=axis, largest=largest)
    assert [int(o[-1]) for o in outs] == [min(max(k, 0), length) for k in ks]
    assert all(o[0].shape == x.shape for o in outs)
    for feed, out in zip(feeds, outs):
        k = min(max(int(feed["k"][0]), 0), length)
        got = _cut("TopK", out, [3, 1], axis=axis)
        expected = _expected("TopK", {"x": x, "k": np.array([k], np.int64)}, axis=axis, largest=largest)
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_array_equal(g, e)


def test_top_k_integers() -> None:
    x = rng.integers(-5, 5, (3, 9)).astype(np.int32)
    _check("TopK", [{"x": x, "k": np.array([k], np.int64)} for k in (0, 4, 9)], largest=0)


@pytest.mark.parametrize("ordered", [1, 0])
def test_unique(ordered: int) -> None:
    """Repeats, all equal, all distinct, one element, NaNs (one value, as numpy's) and -0 / 0 (equal); 2-D
    input compared with onnxruntime (onnx's reference takes unsorted results along axis 0 of the input)."""
    repeats = rng.integers(0, 6, (20,)).astype(np.float32)
    repeats[:3] = [np.nan, -0.0, np.nan]
    feeds = [{"x": repeats}, {"x": np.full((20,), 2.5, np.float32)},
             {"x": rng.permutation(20).astype(np.float32)}]
    assert _check("Unique", feeds, sorted=ordered)[1:] == [1, 20]
    _check("Unique", [{"x": np.array([3], np.float32)}], sorted=ordered)
    _check("Unique", [{"x": rng.integers(-4, 4, (30,)).astype(np.int64)}], sorted=ordered)
    _check("Unique", [{"x": rng.integers(0, 6, (4, 5)).astype(np.float32)}], runtime=True, sorted=ordered)


@pytest.mark.parametrize("ordered", [1, 0])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_unique_along_axis(axis: int, ordered: int) -> None:
    """Slices with repeats, compared with onnxruntime (onnx's reference takes unsorted slices along axis 0)."""
    base = rng.integers(-2, 2, (3, 3, 3)).astype(np.float32)
    x = np.take(base, rng.integers(0, 3, 7), axis=axis)
    _check("Unique", [{"x": x}], runtime=True, sorted=ordered, axis=axis)
    _check("Unique", [{"x": np.zeros((2, 3), np.float32)}], runtime=True, sorted=ordered, axis=axis % 2)
    # Slices of one element: the flattened case's sort.
    _check("Unique", [{"x": rng.integers(0, 4, (1, 9, 1)).astype(np.float32)}], runtime=True, sorted=ordered,
           axis=1 if axis == 0 else axis)


def _boxes(batches: int, n: int, center: bool) -> np.ndarray:
    """Random boxes on a 10 x 10 field, center form or corners in either order."""
    c = rng.uniform(0, 10, (batches, n, 2))
    s = rng.uniform(0.5, 4, (batches, n, 2))
    if center:
        return np.concatenate([c, s], -1).astype(np.float32)
    corners = np.concatenate([c - s / 2, c + s / 2], -1)[..., [1, 0, 3, 2]]  # [y1, x1, y2, x2]
    flip = rng.random((batches, n)) < 0.5
    corners[flip] = corners[flip][:, [2, 3, 0, 1]]
    return corners.astype(np.float32)


@pytest.mark.parametrize("center", [0, 1])
@pytest.mark.parametrize("batches,classes,n,max_out", [(1, 1, 30, 100), (2, 3, 40, 5), (3, 2, 25, 25)])
def test_non_max_suppression(center: int, batches: int, classes: int, n: int, max_out: int) -> None:
    """Tied scores (fifths), flipped corners, thresholds; the reference's order and choice of boxes."""
    consts = {"max_out": np.array([max_out], np.int64), "iou": np.array([0.3], np.float32),
              "score": np.array([0.1], np.float32)}
    feeds = [{"boxes": _boxes(batches, n, bool(center)),
              "scores": (rng.integers(0, 6, (batches, classes, n)) / 5).astype(np.float32)} for _ in range(2)]
    feeds.append({"boxes": feeds[0]["boxes"], "scores": np.zeros((batches, classes, n), np.float32)})
    counts = _check("NonMaxSuppression", feeds, consts, center_point_box=center)
    assert counts[2] == 0 and counts[0] > 0
    bound = _bounded("NonMaxSuppression", feeds[:1], consts, center_point_box=center)[0][0].shape
    assert bound == (batches * classes * min(max_out, n), 3)


def test_non_max_suppression_without_score_threshold() -> None:
    """Every box is a candidate; identical boxes suppress each other down to the lowest index."""
    boxes = _boxes(2, 20, False)
    boxes[:, 10:] = boxes[:, :1]
    consts = {"max_out": np.array([50], np.int64), "iou": np.array([0.5], np.float32)}
    feeds = [{"boxes": boxes, "scores": np.full((2, 2, 20), -1, np.float32)},
             {"boxes": boxes, "scores": rng.standard_normal((2, 2, 20)).astype(np.float32)}]
    _check("NonMaxSuppression", feeds, consts)


def test_non_max_suppression_at_the_thresholds() -> None:
    """Boxes on an integer grid, so that many pairs overlap by exactly 1/2, and scores equal to the score
    threshold: both comparisons are strict."""
    corners = rng.integers(0, 4, (1, 40, 4)).astype(np.float32)
    corners[0, :2] = [[0, 0, 2, 2], [0, 0, 2, 1]]  # IoU 2 / 4
    scores = (rng.integers(0, 6, (1, 2, 40)) / 5).astype(np.float32)
    scores[:, :, :2] = [0.8, 0.6]
    consts = {"max_out": np.array([40], np.int64), "iou": np.array([0.5], np.float32),
              "score": np.array([0.4], np.float32)}
    _check("NonMaxSuppression", [{"boxes": corners, "scores": scores}], consts)


def test_non_max_suppression_selects_nothing_without_max_out() -> None:
    """ONNX's max_output_boxes_per_class defaults to 0: one zero row, count 0; 0 given: the same."""
    feed = {"boxes": _boxes(1, 8, False), "scores": rng.random((1, 2, 8)).astype(np.float32)}
    [[rows, count]] = _bounded("NonMaxSuppression", [feed])
    assert rows.shape == (1, 3) and not rows.any() and count == 0
    _check("NonMaxSuppression", [feed], {"max_out": np.array([0], np.int64), "iou": np.array([0.5], np.float32)})


def test_non_max_suppression_run_time_max_out_is_refused() -> None:
    feeds = {"boxes": _boxes(1, 8, False), "scores": rng.random((1, 1, 8)).astype(np.float32),
             "max_out": np.array([3], np.int64)}
    with pytest.raises(StaticInputRequired, match="max_out"):
        import_model(_model("NonMaxSuppressionBounded", feeds, 2, GLOW_DOMAIN))


def test_compile_time_inputs_fold() -> None:
    """All inputs known at compile time: the handlers' ops fold, the results are the same."""
    x = rng.integers(0, 3, (3, 4)).astype(np.float32)
    dummy = {"d": np.zeros(1, np.float32)}
    for op, consts in [("NonZero", {"x": x}), ("Unique", {"x": x}),
                       ("TopK", {"x": x, "k": np.array([2], np.int64)})]:
        m = _model(BOUNDED[op], dummy, N_OUTPUTS[op] + 1, GLOW_DOMAIN, consts)
        m.graph.node[0].input.remove("d")
        m.graph.node.append(helper.make_node("Identity", ["d"], ["e"]))
        m.graph.output.append(helper.make_tensor_value_info("e", TensorProto.FLOAT, [1]))
        with glow_mlir.compile(import_model(m), cache=False, progress=False) as compiled:
            got = compiled.run(dummy)
        outs = [got[f"y{i}"] for i in range(N_OUTPUTS[op] + 1)]
        cut = _cut(op, outs, [v.ndim for v in consts.values()])
        for g, e in zip(cut, _expected(op, {}, consts), strict=True):
            np.testing.assert_array_equal(g, e)
