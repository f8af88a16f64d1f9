"""ONNX If, Loop and Scan: glow-mlir against onnxruntime. Scan and counted Loops become one glow.loop (a loop
in the generated code); a Loop whose body needs its iteration number at compile time is unrolled."""

from __future__ import annotations

import time

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper
from onnx_check import check, model, rand

import glow_mlir
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


def _while_body(scan_output: bool) -> onnx.GraphProto:
    """acc += x while sum(acc) < 10 (computed from run-time data), optionally with a scan output."""
    nodes = [helper.make_node("ReduceSum", ["acc_in"], ["total"], keepdims=0),
             helper.make_node("Less", ["total", "ten"], ["cond_out"]),
             helper.make_node("Add", ["acc_in", "x"], ["acc_out"])]
    outputs = [info("cond_out", B, []), info("acc_out", F, [3])]
    if scan_output:
        nodes.append(helper.make_node("Identity", ["acc_out"], ["seen"]))
        outputs.append(info("seen", F, [3]))
    return helper.make_graph(nodes, "body", [info("iter", I64, []), info("cond_in", B, []), info("acc_in", F, [3])],
                             outputs)


@pytest.mark.parametrize("trip", [None, 2, 100])
def test_loop_with_run_time_termination_is_a_while_loop(trip: int | None) -> None:
    """A condition computed from run-time data: an scf.while, ending with the condition or the trip count."""
    node = helper.make_node("Loop", ["M" if trip else "", "cond", "x"], ["acc"], name="dynamic_loop",
                            body=_while_body(scan_output=False))
    consts = {"cond": np.array(True), "ten": np.array(10, np.float32), **({"M": np.array(trip, np.int64)} if trip else {})}
    m = model([node], {"x": rand(3, low=0.1)}, ["acc"], consts)
    assert '"glow.loop"' in str(import_model(m).module)
    session = ort.InferenceSession(m.SerializeToString())
    for x in (rand(3, low=0.1), rand(3, low=2.0, high=3.0), np.full(3, 5.0, np.float32)):
        check(m, {"x": x})
        got = glow_mlir.interpret(import_model(m).module, {"x": x})["acc"]
        np.testing.assert_allclose(got, session.run(None, {"x": x})[0], rtol=1e-6)


def test_loop_with_run_time_termination_and_scan_outputs_is_refused() -> None:
    """Its scan outputs' length would be known only at run time."""
    node = helper.make_node("Loop", ["", "cond", "x"], ["acc", "seen"], name="dynamic_loop",
                            body=_while_body(scan_output=True))
    m = model([node], {"x": rand(3)}, ["acc", "seen"], {"cond": np.array(True), "ten": np.array(10, np.float32)})
    with pytest.raises(UnsupportedAttributeError, match="dynamic_loop.*run-time data"):
        import_model(m)


def test_loop_unrolling_bound() -> None:
    """A condition computed from the iteration number is found at compile time by unrolling, within the bound."""
    trip = UNROLL_BOUND
    m = loop_model(trip, stop_after=trip)
    bound = f"the_loop.*trip count {trip}.* x 6 body nodes.*{UNROLL_BOUND}"
    with pytest.raises(UnsupportedAttributeError, match=bound):
        import_model(m)


def _compiled_ops(m: onnx.ModelProto) -> int:
    """The op count of the module glow-mlir generates for `m` (after the last pipeline element)."""
    with glow_mlir.compile(import_model(m), cache=False) as compiled:
        return compiled.report["passes"][-1]["ops_after"]


def test_long_loop_is_a_loop_in_generated_code() -> None:
    """Trip count x body nodes far above the old unrolling bound: one glow.loop, code independent of the trip
    count, numbers as onnxruntime's (and the interpreter's)."""
    trip = 4 * UNROLL_BOUND
    m = loop_model(trip)
    graph = import_model(m)
    text = str(graph.module)
    assert text.count('"glow.loop"') == 1 and text.count("glow.add") == 1
    start = time.perf_counter()
    check(m, {"x": rand(3)}, rtol=1e-4)
    assert time.perf_counter() - start < 60
    # The same code but for the constants of the bounds (3 iterations fold an index constant or two).
    assert abs(_compiled_ops(m) - _compiled_ops(loop_model(3))) <= 2
    feeds = {"x": rand(3)}
    expected = ort.InferenceSession(m.SerializeToString()).run(None, feeds)
    got = glow_mlir.interpret(graph.module, feeds)
    np.testing.assert_allclose(got["acc"], expected[0], rtol=1e-4)
    np.testing.assert_allclose(got["scans"], expected[1], rtol=1e-4)


def test_loop_needing_its_iteration_at_compile_time_is_unrolled() -> None:
    """A Slice by the iteration number cannot run in a loop with static shapes: the Loop is unrolled."""
    body = helper.make_graph(
        [const("one", np.array([1], np.int64)), helper.make_node("Unsqueeze", ["iter", "axes"], ["start"]),
         helper.make_node("Add", ["start", "one"], ["end"]),
         helper.make_node("Slice", ["table", "start", "end"], ["row"]),
         helper.make_node("Add", ["acc_in", "row"], ["acc_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [info("iter", I64, []), info("cond_in", B, []), info("acc_in", F, [1, 3])],
        [info("cond_out", B, []), info("acc_out", F, [1, 3])])
    node = helper.make_node("Loop", ["M", "", "acc0"], ["acc"], name="sliced", body=body)
    consts = {"M": np.array(4, np.int64), "acc0": np.zeros((1, 3), np.float32), "axes": np.array([0], np.int64)}
    m = model([node], {"table": rand(4, 3)}, ["acc"], consts)
    assert '"glow.loop"' not in str(import_model(m).module)
    check(m, {"table": rand(4, 3)})


def test_nested_scan_in_a_loop() -> None:
    """A Scan inside a Loop's body: a loop whose body runs a loop, each body planned in the arena once."""
    inner = scan_body()
    scan = helper.make_node("Scan", ["acc_in", "m0", "a", "b"], ["acc_out", "max", "sums", "doubled"], body=inner,
                            num_scan_inputs=2)
    body = helper.make_graph(
        [scan, helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [info("iter", I64, []), info("cond_in", B, []), info("acc_in", F, [2])],
        [info("cond_out", B, []), info("acc_out", F, [2]), info("doubled", F, [4, 2])])
    node = helper.make_node("Loop", ["M", "", "s0"], ["acc", "all"], body=body)
    inputs = {"s0": rand(2), "m0": rand(2), "a": rand(4, 2), "b": rand(4, 2)}
    m = model([node], inputs, ["acc", "all"], {"M": np.array(30, np.int64)})
    assert str(import_model(m).module).count('"glow.loop"') == 2
    check(m, inputs, rtol=1e-4)


def test_long_scan_is_a_loop_in_generated_code() -> None:
    steps = UNROLL_BOUND
    node = helper.make_node("Scan", ["s0", "m0", "a", "b"], ["sum", "max", "sums", "doubled"], body=scan_body(),
                            num_scan_inputs=2, scan_input_directions=[1, 0], scan_output_axes=[1, 0])
    inputs = {"s0": rand(2), "m0": rand(2), "a": rand(steps, 2), "b": rand(steps, 2)}
    m = model([node], inputs, ["sum", "max", "sums", "doubled"], opset=16)
    check(m, inputs, rtol=1e-4, atol=1e-4)


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
    # A data-dependent op in a branch is refused where that branch is imported (named within it): the If's
    # condition is a graph input, so both are.
    with pytest.raises(UnsupportedModelError, match="Unique.*outer/then/Unique_0"):
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


def test_unused_scan_goes_with_its_body() -> None:
    """glow-dce erases a loop whose results nobody reads; its body function must not reach the runtime."""
    node = helper.make_node("Scan", ["s0", "m0", "a", "b"], ["sum", "max", "sums", "doubled"], body=scan_body(),
                            num_scan_inputs=2)
    relu = helper.make_node("Relu", ["a"], ["r"])
    inputs = {"s0": rand(2), "m0": rand(2), "a": rand(4, 2), "b": rand(4, 2)}
    check(model([node, relu], inputs, ["r"], opset=16), inputs)


def test_loop_growing_a_carried_value_is_unrolled() -> None:
    """A carried value that changes shape each iteration cannot be one loop's buffer: the Loop is unrolled."""
    body = helper.make_graph(
        [helper.make_node("Concat", ["acc_in", "x"], ["acc_out"], axis=0),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [info("iter", I64, []), info("cond_in", B, []), info("acc_in", F, None)],
        [info("cond_out", B, []), info("acc_out", F, None)])
    node = helper.make_node("Loop", ["M", "", "acc0"], ["acc"], body=body)
    m = model([node], {"x": rand(3)}, ["acc"], {"M": np.array(3, np.int64), "acc0": np.zeros(3, np.float32)})
    assert '"glow.loop"' not in str(import_model(m).module)
    check(m, {"x": rand(3)})


def test_scan_whose_body_needs_its_state_at_compile_time_is_unrolled() -> None:
    """The state is a Reshape's shape: known at compile time only step by step, so the Scan is unrolled."""
    body = helper.make_graph(
        [helper.make_node("Reshape", ["x_t", "shape_in"], ["y_t"]),
         helper.make_node("Identity", ["shape_in"], ["shape_out"])],
        "body", [info("shape_in", I64, [2]), info("x_t", F, [6])], [info("shape_out", I64, [2]), info("y_t", F, [2, 3])])
    node = helper.make_node("Scan", ["s0", "x"], ["s", "y"], body=body, num_scan_inputs=1,
                            scan_input_directions=[1])
    m = model([node], {"x": rand(4, 6)}, ["s", "y"], {"s0": np.array([2, 3], np.int64)}, opset=16)
    assert '"glow.loop"' not in str(import_model(m).module)
    check(m, {"x": rand(4, 6)})


def test_scan_body_results_that_are_inputs_constants_or_repeated() -> None:
    """A state passed through, one value as state and scan output, a constant scan output, an int64 state,
    a scan input sliced along its last axis, outputs stacked along axes 0, 1 and -1."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["s_in"], ["s_out"]), helper.make_node("Identity", ["s_in"], ["y1"]),
         const("c", np.array([1.0, 2.0], np.float32)), helper.make_node("Add", ["k_in", "one"], ["k_out"]),
         helper.make_node("Identity", ["k_out"], ["y2"]), helper.make_node("Mul", ["x_t", "x_t"], ["y3"])],
        "body", [info("s_in", F, [2]), info("k_in", I64, []), info("x_t", F, [3, 2])],
        [info("s_out", F, [2]), info("k_out", I64, []), info("y1", F, [2]), info("c", F, [2]), info("y2", I64, []),
         info("y3", F, [3, 2])])
    outputs = ["s", "k", "y1", "c", "y2", "y3"]
    node = helper.make_node("Scan", ["s0", "k0", "x"], outputs, body=body, num_scan_inputs=1, scan_input_axes=[2],
                            scan_output_axes=[0, 1, 0, -1])
    inputs = {"s0": rand(2), "x": rand(3, 2, 5)}
    m = model([node], inputs, outputs, {"k0": np.array(7, np.int64), "one": np.array(1, np.int64)}, opset=16)
    check(m, inputs)
