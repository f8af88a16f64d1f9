"""ONNX If, Loop and Scan (subgraphs imported by the importer, loops unrolled): glow-mlir against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx_check import check, model, rand

from glow_mlir.errors import StaticInputRequired, UnsupportedAttributeError, UnsupportedModelError
from glow_mlir.frontends.onnx import import_model
from glow_mlir.frontends.onnx.ops_control import UNROLL_BOUND

F, B, I64 = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64


def info(name: str, elem: int, dims: list[int] | None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, dims)


def const(name: str, value: np.ndarray) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], value=onnx.numpy_helper.from_array(value))


def branch(name: str, op: str, other: np.ndarray) -> onnx.GraphProto:
    """A branch computing `op`(x, other) from the outer scope's x."""
    return helper.make_graph([const(f"{name}_c", other), helper.make_node(op, ["x", f"{name}_c"], [f"{name}_y"])],
                             name, [], [info(f"{name}_y", F, [2, 3])])


def if_model(cond_as_input: bool, else_g: onnx.GraphProto | None = None) -> onnx.ModelProto:
    then_g = branch("then", "Add", np.full((2, 3), 10, np.float32))
    else_g = else_g or branch("else", "Mul", np.full((2, 3), 3, np.float32))
    node = helper.make_node("If", ["cond"], ["y"], name="the_if", then_branch=then_g, else_branch=else_g)
    inputs = {"x": rand(2, 3), **({"cond": np.array(True)} if cond_as_input else {})}
    return model([node], inputs, ["y"], {} if cond_as_input else {"cond": np.array(False)})


def test_if_with_constant_condition_imports_only_the_branch_taken() -> None:
    m = if_model(cond_as_input=False)
    text = str(import_model(m).module)
    assert "glow.mul" in text and "glow.add" not in text
    check(m, {"x": rand(2, 3)})


@pytest.mark.parametrize("cond", [True, False])
def test_if_with_run_time_condition_selects(cond: bool) -> None:
    check(if_model(cond_as_input=True), {"x": rand(2, 3), "cond": np.array(cond)})


def test_if_branches_of_different_shapes_need_a_constant_condition() -> None:
    with pytest.raises(UnsupportedAttributeError, match=r"the_if.*\[2, 3\].*\[1, 3\]"):
        else_g = helper.make_graph([const("e", np.ones((1, 3), np.float32))], "else", [], [info("e", F, [1, 3])])
        import_model(if_model(cond_as_input=True, else_g=else_g))


def loop_body(stop_after: int | None = None) -> onnx.GraphProto:
    """acc += x * iter; scan output acc; cond = iter < stop_after (or the incoming cond)."""
    nodes = [
        helper.make_node("Cast", ["iter"], ["iter_f"], to=F),
        helper.make_node("Mul", ["x", "iter_f"], ["step"]),
        helper.make_node("Add", ["acc_in", "step"], ["acc_out"]),
        helper.make_node("Identity", ["acc_out"], ["scan_out"]),
    ]
    if stop_after is None:
        nodes.append(helper.make_node("Identity", ["cond_in"], ["cond_out"]))
    else:
        nodes += [const("limit", np.array(stop_after, np.int64)), helper.make_node("Less", ["iter", "limit"],
                                                                                   ["cond_out"])]
    return helper.make_graph(nodes, "body", [info("iter", I64, []), info("cond_in", B, []), info("acc_in", F, [3])],
                             [info("cond_out", B, []), info("acc_out", F, [3]), info("scan_out", F, [3])])


def loop_model(trip: int | None, stop_after: int | None = None, m_as_input: bool = False) -> onnx.ModelProto:
    node = helper.make_node("Loop", ["M" if trip is not None else "", "cond", "acc0"], ["acc", "scans"],
                            name="the_loop", body=loop_body(stop_after))
    consts = {"cond": np.array(True), "acc0": np.zeros(3, np.float32)}
    inputs = {"x": rand(3)}
    if trip is not None:
        (inputs if m_as_input else consts)["M"] = np.array(trip, np.int64)
    return model([node], inputs, ["acc", "scans"], consts)


@pytest.mark.parametrize("trip,stop_after", [(4, None), (1, None), (10, 2), (None, 3)])
def test_loop(trip: int | None, stop_after: int | None) -> None:
    """Carried values, scan outputs stacked along a new axis 0, a condition that folds to false early."""
    check(loop_model(trip, stop_after), {"x": rand(3)})


def test_loop_trip_count_from_a_graph_input_is_bound_statically() -> None:
    m = loop_model(5, m_as_input=True)
    with pytest.raises(StaticInputRequired, match="the_loop.*'M'"):
        import_model(m)
    from onnx_check import run_both

    feeds = {"x": rand(3), "M": np.array(5, np.int64)}
    got, expected = run_both(m, feeds, static_inputs={"M": feeds["M"]})
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-5)


def test_loop_with_run_time_termination_is_refused() -> None:
    body = helper.make_graph(
        [helper.make_node("ReduceSum", ["acc_in"], ["total"], keepdims=0),
         helper.make_node("Less", ["total", "ten"], ["cond_out"]),
         helper.make_node("Add", ["acc_in", "x"], ["acc_out"])],
        "body", [info("iter", I64, []), info("cond_in", B, []), info("acc_in", F, [3])],
        [info("cond_out", B, []), info("acc_out", F, [3])])
    node = helper.make_node("Loop", ["", "cond", "x"], ["acc"], name="dynamic_loop", body=body)
    m = model([node], {"x": rand(3)}, ["acc"], {"cond": np.array(True), "ten": np.array(10, np.float32)})
    with pytest.raises(UnsupportedAttributeError, match="dynamic_loop.*run-time data"):
        import_model(m)


def test_loop_unrolling_bound() -> None:
    trip = UNROLL_BOUND
    m = loop_model(trip)
    with pytest.raises(UnsupportedAttributeError, match=f"the_loop.*trip count {trip}.* x 5 body nodes.*{UNROLL_BOUND}"):
        import_model(m)


def test_nested_if_in_loop_body() -> None:
    """A subgraph inside a subgraph: the If's condition folds per iteration (iter is known)."""
    then_g = helper.make_graph([helper.make_node("Add", ["acc_in", "x"], ["t"])], "then", [], [info("t", F, [3])])
    else_g = helper.make_graph([helper.make_node("Sub", ["acc_in", "x"], ["e"])], "else", [], [info("e", F, [3])])
    body = helper.make_graph(
        [const("two", np.array(2, np.int64)), helper.make_node("Less", ["iter", "two"], ["early"]),
         helper.make_node("If", ["early"], ["acc_out"], then_branch=then_g, else_branch=else_g),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [info("iter", I64, []), info("cond_in", B, []), info("acc_in", F, [3])],
        [info("cond_out", B, []), info("acc_out", F, [3])])
    node = helper.make_node("Loop", ["M", "", "acc0"], ["acc"], body=body)
    consts = {"M": np.array(5, np.int64), "acc0": np.zeros(3, np.float32)}
    check(model([node], {"x": rand(3)}, ["acc"], consts), {"x": rand(3)})


def test_unsupported_op_in_a_subgraph_is_listed() -> None:
    body = helper.make_graph([helper.make_node("Unique", ["x"], ["u"]), helper.make_node("Identity", ["x"], ["v"])],
                             "then", [], [info("v", F, [3])])
    node = helper.make_node("If", ["cond"], ["y"], name="outer", then_branch=body, else_branch=body)
    with pytest.raises(UnsupportedModelError, match="Unique.*outer/Unique_0"):
        import_model(model([node], {"x": rand(3), "cond": np.array(True)}, ["y"]))


def scan_body() -> onnx.GraphProto:
    """Two states (a running sum and a running max) and two scan outputs (the sum, the element doubled)."""
    return helper.make_graph(
        [helper.make_node("Add", ["sum_in", "a"], ["sum_out"]),
         helper.make_node("Max", ["max_in", "b"], ["max_out"]),
         helper.make_node("Identity", ["sum_out"], ["sums"]),
         helper.make_node("Add", ["b", "b"], ["doubled"])],
        "body", [info("sum_in", F, [2]), info("max_in", F, [2]), info("a", F, [2]), info("b", F, [2])],
        [info("sum_out", F, [2]), info("max_out", F, [2]), info("sums", F, [2]), info("doubled", F, [2])])


@pytest.mark.parametrize("attrs", [
    {},
    {"scan_input_directions": [1, 0], "scan_output_directions": [0, 1]},
    {"scan_input_axes": [1, 0], "scan_output_axes": [1, -1]},
    {"scan_input_axes": [-1, 0], "scan_input_directions": [0, 1], "scan_output_axes": [0, 1],
     "scan_output_directions": [1, 1]},
])
def test_scan(attrs: dict[str, list[int]]) -> None:
    a_axis = attrs.get("scan_input_axes", [0])[0]
    a = rand(2, 4) if a_axis else rand(4, 2)
    node = helper.make_node("Scan", ["s0", "m0", "a", "b"], ["sum", "max", "sums", "doubled"], body=scan_body(),
                            num_scan_inputs=2, **attrs)
    inputs = {"s0": rand(2), "m0": rand(2), "a": a, "b": rand(4, 2)}
    check(model([node], inputs, ["sum", "max", "sums", "doubled"], opset=16), inputs)


def test_scan_8_with_batch_axis() -> None:
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x"], ["s_out"]), helper.make_node("Mul", ["x", "s_out"], ["y"])],
        "body", [info("s_in", F, [3]), info("x", F, [3])], [info("s_out", F, [3]), info("y", F, [3])])
    node = helper.make_node("Scan", ["", "s0", "xs"], ["s", "ys"], body=body, num_scan_inputs=1,
                            directions=[1])
    inputs = {"s0": rand(2, 3), "xs": rand(2, 4, 3)}
    check(model([node], inputs, ["s", "ys"], opset=8), inputs)
