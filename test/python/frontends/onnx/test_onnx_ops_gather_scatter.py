"""ONNX GatherElements, GatherND, ScatterElements / Scatter, ScatterND, TopK and ReverseSequence: glow-mlir
against onnxruntime
(onnx's reference implementation where onnxruntime leaves an order open)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from onnx_check import check, check_node, model, rand

from glow_mlir.errors import (
    InvalidNodeError,
    StaticInputRequired,
    UnsupportedAttributeError,
    UnsupportedModelError,
)
from glow_mlir.frontends.onnx import import_model

rng = np.random.default_rng(3)


def indices(high: int, *shape: int, dtype: type = np.int64) -> np.ndarray:
    """Random indices in [-high, high): negative ones count from the end."""
    return rng.integers(-high, high, shape).astype(dtype)


def distinct(high: int, *shape: int, axis: int) -> np.ndarray:
    """Indices in [0, high) with no duplicates along `axis` (shape[axis] <= high), some spelled negative."""
    moved = list(shape)
    moved.append(moved.pop(axis))
    rows = np.stack([rng.permutation(high)[: moved[-1]] for _ in range(int(np.prod(moved[:-1])))])
    picked = rows.reshape(moved)
    picked = np.where(rng.random(picked.shape) < 0.3, picked - high, picked)
    return np.moveaxis(picked, -1, axis).astype(np.int64)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("index_type", [np.int32, np.int64])
def test_gather_elements(axis: int, index_type: type) -> None:
    data = rand(4, 5, 6)
    dims = [3, 4, 5]
    dims[axis] = 7
    check_node("GatherElements", {"x": data, "i": indices(data.shape[axis], *dims, dtype=index_type)}, {"axis": axis})


def test_gather_elements_integers() -> None:
    data = rand(3, 4, low=-100, high=100, dtype=np.int64)
    check_node("GatherElements", {"x": data, "i": indices(4, 3, 2)}, {"axis": 1})


@pytest.mark.parametrize("data_shape,index_shape,batch_dims", [
    ((4, 5), (3, 2), 0), ((4, 5, 6), (2, 3, 1), 0), ((4, 5, 6), (3, 3), 0), ((2, 5, 6), (2, 3, 1), 1),
    ((2, 3, 5, 6), (2, 3, 4, 2), 2), ((2, 5, 6), (2, 2), 1),
])
def test_gather_nd(data_shape: tuple[int, ...], index_shape: tuple[int, ...], batch_dims: int) -> None:
    data = rand(*data_shape)
    k = index_shape[-1]
    sizes = np.array(data_shape[batch_dims : batch_dims + k])
    picked = (rng.integers(0, 1 << 20, index_shape) % sizes) - rng.integers(0, 2, index_shape) * sizes
    check_node("GatherND", {"x": data, "i": picked.astype(np.int64)}, {"batch_dims": batch_dims}, opset=13)


@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
@pytest.mark.parametrize("axis", [0, 1])
def test_scatter_elements_reductions(reduction: str, axis: int) -> None:
    """Duplicate indices combine every update they receive."""
    data = rand(4, 5)
    dims = [3, 3]
    check_node(
        "ScatterElements", {"x": data, "i": indices(data.shape[axis], *dims), "u": rand(*dims)},
        {"axis": axis, "reduction": reduction}, opset=18,
    )


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scatter_elements(axis: int) -> None:
    data = rand(4, 5, 6, low=-50, high=50, dtype=np.int32)
    dims = [3, 4, 5]
    dims[axis] = 3
    check_node(
        "ScatterElements",
        {"x": data, "i": distinct(data.shape[axis], *dims, axis=axis), "u": rand(*dims, dtype=np.int32)},
        {"axis": axis}, opset=13,
    )


def test_scatter_elements_duplicates_last_wins() -> None:
    """With reduction none the spec's order applies: the update met last in row-major order wins."""
    data = rand(3, 4)
    picked = np.array([[1, 1, -3], [0, 2, 2]], np.int64)
    check_node("ScatterElements", {"x": data, "i": picked, "u": rand(2, 3)}, {"axis": 1}, opset=18, spec=True)


def test_scatter_deprecated() -> None:
    data = rand(4, 5)
    check_node("Scatter", {"x": data, "i": distinct(5, 4, 3, axis=1), "u": rand(4, 3)}, {"axis": 1}, opset=10)


@pytest.mark.parametrize("op,index_shape,update_shape", [
    ("ScatterElements", [0, 5], [0, 5]), ("ScatterND", [0, 2], [0]), ("ScatterND", [0, 1], [0, 5]),
])  # fmt: skip
def test_a_scatter_of_no_update_is_its_data(op: str, index_shape: list[int], update_shape: list[int]) -> None:
    """No index, no update (torchvision's RoI pooling of a feature level that no box is assigned to): the result is
    the run-time data, which the scatter passes through; glow has no empty tensors to scatter."""
    consts = {"i": np.zeros(index_shape, np.int64), "u": np.zeros(update_shape, np.float32)}
    check_node(op, {"x": rand(4, 5)}, consts=consts, opset=18)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("data_shape,index_shape", [((6,), (4, 1)), ((4, 5, 3), (2, 2)), ((4, 5, 3), (2, 3, 3))])
def test_scatter_nd(reduction: str, data_shape: tuple[int, ...], index_shape: tuple[int, ...]) -> None:
    data = rand(*data_shape)
    k = index_shape[-1]
    rows = int(np.prod(index_shape[:-1]))
    # Distinct targets, so reduction none is well defined; the other reductions get duplicates below.
    flat = rng.permutation(int(np.prod(data_shape[:k])))[:rows]
    picked = np.stack(np.unravel_index(flat, data_shape[:k]), -1).reshape(index_shape)
    if reduction != "none":
        picked.reshape(-1, k)[-1] = picked.reshape(-1, k)[0]
    picked = picked - (rng.random(picked.shape) < 0.3) * np.array(data_shape[:k])
    updates = rand(*index_shape[:-1], *data_shape[k:])
    attrs = {} if reduction == "none" else {"reduction": reduction}
    check_node("ScatterND", {"x": data, "i": picked.astype(np.int64), "u": updates}, attrs, opset=18)


def _box(start: list[int], stop: list[int]) -> np.ndarray:
    """The index tuples of the box [start, stop) in row-major order, as ScatterND's indices [..., k]."""
    grid = np.meshgrid(*[np.arange(a, b) for a, b in zip(start, stop, strict=True)], indexing="ij")
    return np.stack(grid, axis=-1).astype(np.int64)


@pytest.mark.parametrize("picked", [
    _box([1], [3]),  # rows 1..2: slice_scatter along the first dim
    _box([1, 2], [3, 4]),  # a 2 x 2 box of the first two dims
    _box([-3, 0], [-1, 5]),  # negative indices counted from the end
    _box([1, 2], [3, 4]).reshape(4, 2),  # the box's tuples listed flat
    _box([1, 2], [3, 4])[::-1].copy(),  # the box's rows in reverse order: not row-major, stays a scatter
    np.array([[0], [2]], np.int64),  # rows 0 and 2: no box, stays a scatter
])  # fmt: skip
def test_scatter_nd_of_a_constant_box(picked: np.ndarray) -> None:
    """Constant indices that enumerate a box of the data (PyTorch's slice_scatter) write it as an insert_tensor
    (glow-scatter-to-insert); any other order or set stays a scatter."""
    data = rand(4, 5, 3)
    updates = rand(*picked.shape[:-1], *data.shape[picked.shape[-1] :])
    check_node("ScatterND", {"x": data, "u": updates}, consts={"i": picked}, opset=18, order=["x", "i", "u"])


@pytest.mark.parametrize("axis,update_shape,offset", [
    (1, (3, 1, 5), 2),  # one position along the axis: PyTorch's select_scatter
    (1, (3, 2, 5), 1),  # indices p[axis] + 1
    (2, (2, 4, 3), -3),  # a smaller block along the other axes, negative indices
    (0, (2, 4, 5), 0),
])  # fmt: skip
def test_scatter_elements_of_a_constant_block(axis: int, update_shape: tuple[int, ...], offset: int) -> None:
    data = rand(3, 4, 5)
    shape = [1] * 3
    shape[axis] = update_shape[axis]
    picked = np.broadcast_to(np.arange(update_shape[axis]).reshape(shape) + offset, update_shape).astype(np.int64)
    check_node("ScatterElements", {"x": data, "u": rand(*update_shape)}, {"axis": axis}, consts={"i": picked},
               opset=18, order=["x", "i", "u"])  # fmt: skip


def test_scatter_reduction_on_bool_is_refused() -> None:
    node = helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="sc", reduction="add")
    inputs = {"x": np.zeros(4, np.bool_), "i": np.zeros((1, 1), np.int64), "u": np.ones(1, np.bool_)}
    with pytest.raises(UnsupportedAttributeError, match="'sc'"):
        import_model(model([node], inputs, ["y"], opset=18))


def test_scatter_shape_mismatch_names_the_node() -> None:
    node = helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], name="bad_scatter")
    inputs = {"x": rand(3, 4), "i": np.zeros((2, 2), np.int64), "u": rand(2, 3)}
    with pytest.raises(InvalidNodeError, match="bad_scatter.*updates"):
        import_model(model([node], inputs, ["y"]))


@pytest.mark.parametrize("axis,largest,k", [(-1, 1, 3), (0, 1, 2), (1, 0, 4), (-1, 0, 7), (1, 1, 5)])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_top_k(axis: int, largest: int, k: int, dtype: type) -> None:
    # Few distinct values, so ties are many: they rank by lower index first.
    x = rng.integers(-4, 5, (5, 6, 7)).astype(dtype)
    check_node("TopK", {"x": x}, {"axis": axis, "largest": largest}, {"k": np.array([k], np.int64)}, outputs=2,
               opset=11)


def test_top_k_long_rows() -> None:
    check_node("TopK", {"x": rand(2, 3000)}, {}, {"k": np.array([50], np.int64)}, outputs=2, opset=11)


def test_top_k_opset9_attribute() -> None:
    check_node("TopK", {"x": rand(3, 9)}, {"k": 4}, outputs=2, opset=9)


@pytest.mark.parametrize("largest", [0, 1])
def test_top_k_unsigned(largest: int) -> None:
    """Unsigned order (2**63 above 7); onnxruntime has no uint64 TopK, so the spec's reference judges."""
    x = np.array([[1, 2**64 - 1, 7, 2**63, 0, 7]], np.uint64)
    check_node("TopK", {"x": x}, {"largest": largest}, {"k": np.array([4], np.int64)}, outputs=2, opset=11,
               spec=True)


def test_top_k_nan_ranks_above_numbers() -> None:
    """NaN is the largest value, as numpy sorts it (onnxruntime and ONNX's reference agree)."""
    x = np.array([[1.0, np.nan, 3.0, -2.0, np.nan, 0.5]], np.float32)
    for largest in (0, 1):
        check_node("TopK", {"x": x}, {"largest": largest}, {"k": np.array([5], np.int64)}, outputs=2, opset=11,
                   spec=True)


def test_top_k_needs_a_constant_k() -> None:
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], name="my_topk")
    inputs = {"x": rand(3, 9), "k": np.array([2], np.int64)}
    with pytest.raises(StaticInputRequired, match="my_topk"):
        import_model(model([node], inputs, ["v", "i"], opset=11))


def test_top_k_too_large_names_the_node() -> None:
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], name="big_topk")
    m = model([node], {"x": rand(3, 4)}, ["v", "i"], {"k": np.array([5], np.int64)}, opset=11)
    with pytest.raises(InvalidNodeError, match="big_topk"):
        import_model(m)


def test_top_k_feeds_gather_nd() -> None:
    """A detection-style tail: the best boxes by score, then their rows."""
    scores, boxes = rand(1, 20), rand(1, 20, 4)
    nodes = [
        helper.make_node("TopK", ["s", "k"], ["v", "i"], axis=1),
        helper.make_node("Unsqueeze", ["i", "ax"], ["i3"]),
        helper.make_node("GatherND", ["b", "i3"], ["y"], batch_dims=1),
    ]
    consts = {"k": np.array([5], np.int64), "ax": np.array([-1], np.int64)}
    check(model(nodes, {"s": scores, "b": boxes}, ["v", "y"], consts, opset=13), {"s": scores, "b": boxes})


@pytest.mark.parametrize(("time_axis", "batch_axis", "dims"), [(0, 1, (5, 4, 3)), (1, 0, (4, 5)), (0, 1, (6, 3, 2, 2))])
def test_reverse_sequence(time_axis: int, batch_axis: int, dims: tuple[int, ...]) -> None:
    """Lengths fed at run time, from 1 to all the steps."""
    steps, batch = dims[time_axis], dims[batch_axis]
    lens = rng.integers(1, steps + 1, batch).astype(np.int64)
    lens[0] = steps
    check_node("ReverseSequence", {"x": rand(*dims), "lens": lens}, {"time_axis": time_axis, "batch_axis": batch_axis},
               rtol=0, atol=0)


def test_reverse_sequence_needs_batch_long_lengths() -> None:
    node = helper.make_node("ReverseSequence", ["x", "lens"], ["y"], name="rev")
    m = model([node], {"x": rand(3, 4), "lens": np.ones(3, np.int64)}, ["y"])
    with pytest.raises(InvalidNodeError, match=r"rev.*sequence_lens must have shape \[4\]"):
        import_model(m)


@pytest.mark.parametrize("mode", ["linear", "circular"])
@pytest.mark.parametrize("axis", [-2, 1])
def test_tensor_scatter(mode: str, axis: int) -> None:
    """A KV cache [batch, heads, max_seq, dim] (or [batch, max_seq, heads, dim]) updated with 3 new steps
    per batch row at its own write index; circular wraps past the end. onnxruntime has no TensorScatter yet:
    the spec's reference judges."""
    cache = rand(2, 4, 10, 6) if axis == -2 else rand(2, 10, 4, 6)
    update = rand(2, 4, 3, 6) if axis == -2 else rand(2, 3, 4, 6)
    write = np.array([2, 8 if mode == "circular" else 7], np.int64)
    node = helper.make_node("TensorScatter", ["c", "u", "w"], ["y"], axis=axis, mode=mode)
    feeds = {"c": cache, "u": update, "w": write}
    check(model([node], feeds, ["y"], opset=24), feeds, spec=True)
    prefill = helper.make_node("TensorScatter", ["c", "u"], ["y"], axis=axis)
    check(model([prefill], {"c": cache, "u": update}, ["y"], opset=24), {"c": cache, "u": update}, spec=True)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_compress_by_a_compile_time_condition(axis: int | None) -> None:
    """A gather of the kept indices; a condition shorter than the axis drops the rest."""
    x = rand(4, 5)
    condition = np.array([True, False, True, True], np.bool_)
    attrs = {} if axis is None else {"axis": axis}
    check_node("Compress", {"x": x}, attrs, {"condition": condition}, opset=11)


def test_compress_needs_its_condition_at_compile_time() -> None:
    node = helper.make_node("Compress", ["x", "condition"], ["y"], name="keep", axis=0)
    feeds = {"x": rand(4, 5), "condition": np.array([True, False, True, True])}
    with pytest.raises(StaticInputRequired, match="keep.*condition"):
        import_model(model([node], feeds, ["y"], opset=11))


def test_data_dependent_ops_of_compile_time_values() -> None:
    """NonZero and Unique of a constant mask are computed at import (onnx's reference); the run-time input is
    then gathered at the indices found."""
    mask = np.array([[0, 1, 1], [1, 0, 0]], np.float32)
    nodes = [
        helper.make_node("NonZero", ["mask"], ["where"]),
        helper.make_node("Transpose", ["where"], ["at"], perm=[1, 0]),
        helper.make_node("GatherND", ["x", "at"], ["picked"]),
        helper.make_node("Unique", ["mask"], ["values"], sorted=1),
        helper.make_node("ReduceSum", ["values"], ["total"], keepdims=0),
        helper.make_node("Mul", ["picked", "total"], ["y"]),
    ]
    feeds = {"x": rand(2, 3)}
    check(model(nodes, feeds, ["y"], {"mask": mask}, opset=13), feeds)


def test_data_dependent_op_of_a_run_time_value_is_refused() -> None:
    node = helper.make_node("NonZero", ["x"], ["y"], name="where")
    with pytest.raises(UnsupportedModelError, match=r"NonZero \(opset 13\) at node 'where'"):
        import_model(model([node], {"x": rand(2, 3)}, ["y"], opset=13))
