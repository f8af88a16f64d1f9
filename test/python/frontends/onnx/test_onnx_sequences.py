"""ONNX sequences and optionals (compile-time lists in the importer): glow-mlir against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx_check import check, model, rand

from glow_mlir.errors import (
    InvalidNodeError,
    StaticInputRequired,
    UnsupportedAttributeError,
    UnsupportedTypeError,
)
from glow_mlir.frontends.onnx import import_model

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def node(op: str, inputs: list[str], outputs: list[str], **attrs: object) -> onnx.NodeProto:
    return helper.make_node(op, inputs, outputs, name=f"{op}_{outputs[0]}", **attrs)


def seq_info(name: str, elem: int, dims: list[int] | None) -> onnx.ValueInfoProto:
    return helper.make_value_info(name, helper.make_sequence_type_proto(helper.make_tensor_type_proto(elem, dims)))


def i64(*values: int) -> np.ndarray:
    return np.array(values if len(values) != 1 else values[0], np.int64)


FEEDS = {"a": rand(2, 3), "b": rand(2, 3), "c": rand(2, 3)}


@pytest.mark.parametrize("insert_at,erase_at,read_at", [(1, 0, -1), (-1, -2, 0), (3, None, 2), (None, 1, 1)])
def test_construct_insert_erase_at_length(insert_at: int | None, erase_at: int | None, read_at: int) -> None:
    consts = {"read": i64(read_at)}
    nodes = [node("SequenceConstruct", ["a", "b", "c"], ["s0"])]
    nodes.append(node("SequenceInsert", ["s0", "a"] + (["ins"] if insert_at is not None else []), ["s1"]))
    nodes.append(node("SequenceErase", ["s1"] + (["era"] if erase_at is not None else []), ["s2"]))
    nodes += [node("SequenceAt", ["s2", "read"], ["y"]), node("SequenceLength", ["s2"], ["n"]),
              node("Add", ["y", "b"], ["z"])]
    if insert_at is not None:
        consts["ins"] = i64(insert_at)
    if erase_at is not None:
        consts["era"] = i64(erase_at)
    check(model(nodes, FEEDS, ["z", "n"], consts), FEEDS)


@pytest.mark.parametrize("split,attrs,new_axis", [
    (None, {"axis": 1}, 0),
    (None, {"axis": 1}, 1),
    (None, {"axis": 1, "keepdims": 0}, 0),
    (None, {"axis": 1, "keepdims": 0}, 1),
    (i64(2), {"axis": 1}, 0),
    (i64(1, 2), {"axis": 1}, 0),
    (i64(1, 1), {"axis": 0}, 0),
    (i64(1, 1), {"axis": 0}, 1),
])
def test_split_to_sequence_and_concat(split: np.ndarray | None, attrs: dict[str, int], new_axis: int) -> None:
    nodes = [node("SplitToSequence", ["x"] + (["split"] if split is not None else []), ["s"], **attrs),
             node("ConcatFromSequence", ["s"], ["y"], axis=-1, new_axis=new_axis),
             node("SequenceAt", ["s", "last"], ["tail"])]
    consts = {"last": i64(-1), **({"split": split} if split is not None else {})}
    feeds = {"x": rand(2, 3)}
    check(model(nodes, feeds, ["y", "tail"], consts), feeds)


def test_split_to_sequence_of_an_empty_compile_time_tensor() -> None:
    """Longformer's global attention with every slot taken: `nonzero(as_tuple=True)` of a mask known at compile
    time (in its per-count stage) finds nothing, so SplitToSequence splits an empty [0, 2] array into empty index
    columns, whose ScatterND (index_put) writes nothing. The parts stay empty arrays (glow has no empty tensors)."""
    x = rand(2, 3)
    nodes = [node("NonZero", ["mask"], ["nz"]), node("Transpose", ["nz"], ["nzt"], perm=[1, 0]),
             node("SplitToSequence", ["nzt"], ["cols"], axis=1, keepdims=0),
             node("SequenceAt", ["cols", "zero"], ["rows"]), node("SequenceAt", ["cols", "one"], ["columns"]),
             node("Unsqueeze", ["rows", "last"], ["r1"]), node("Unsqueeze", ["columns", "last"], ["c1"]),
             node("Concat", ["r1", "c1"], ["idx"], axis=1),
             node("ConstantOfShape", ["n"], ["updates"], value=helper.make_tensor("v", F, [1], [5.0])),
             node("Shape", ["idx"], ["idx_shape"]), node("Slice", ["idx_shape", "zero1", "one1"], ["n"]),
             node("ScatterND", ["x", "idx", "updates"], ["scattered"]), node("Add", ["scattered", "x"], ["y"])]
    consts = {"mask": np.zeros((2, 3), np.bool_), "zero": i64(0), "one": i64(1), "last": i64(-1).reshape(1),
              "zero1": i64(0).reshape(1), "one1": i64(1).reshape(1)}
    check(model(nodes, {"x": x}, ["y"], consts, opset=18), {"x": x})


def test_empty_sequence_built_up() -> None:
    nodes = [node("SequenceEmpty", [], ["s0"], dtype=F), node("SequenceInsert", ["s0", "a"], ["s1"]),
             node("SequenceInsert", ["s1", "b", "zero"], ["s2"]),
             node("ConcatFromSequence", ["s2"], ["y"], axis=0)]
    check(model(nodes, FEEDS, ["y"], {"zero": i64(0)}), FEEDS)


def test_sequence_map() -> None:
    body = helper.make_graph(
        [helper.make_node("Mul", ["elem", "scale"], ["scaled"]), helper.make_node("Shape", ["elem"], ["shape"])],
        "body", [helper.make_tensor_value_info("elem", F, None), helper.make_tensor_value_info("scale", F, [])],
        [helper.make_tensor_value_info("scaled", F, None), helper.make_tensor_value_info("shape", I64, [2])])
    nodes = [node("SplitToSequence", ["x", "split"], ["s"], axis=0),
             node("SequenceMap", ["s", "k"], ["scaled_seq", "shapes"], body=body),
             node("ConcatFromSequence", ["scaled_seq"], ["y"], axis=0),
             node("ConcatFromSequence", ["shapes"], ["dims"], axis=0, new_axis=1)]
    feeds = {"x": rand(5, 2), "k": np.array(3, np.float32)}
    check(model(nodes, feeds, ["y", "dims"], {"split": i64(2, 3)}), feeds)


def test_loop_building_a_sequence() -> None:
    body = helper.make_graph(
        [helper.make_node("Cast", ["iter"], ["f"], to=F), helper.make_node("Mul", ["x", "f"], ["item"]),
         helper.make_node("SequenceInsert", ["seq_in", "item"], ["seq_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [helper.make_tensor_value_info("iter", I64, []), helper.make_tensor_value_info("cond_in", 9, []),
                 seq_info("seq_in", F, None)],
        [helper.make_tensor_value_info("cond_out", 9, []), seq_info("seq_out", F, None)])
    nodes = [node("SequenceEmpty", [], ["empty"]), node("Loop", ["m", "", "empty"], ["seq"], body=body),
             node("ConcatFromSequence", ["seq"], ["y"], axis=0, new_axis=1)]
    feeds = {"x": rand(3)}
    check(model(nodes, feeds, ["y"], {"m": i64(4)}), feeds)


def test_optionals() -> None:
    nodes = [node("Optional", ["a"], ["opt"]), node("OptionalHasElement", ["opt"], ["has"]),
             node("OptionalGetElement", ["opt"], ["got"]), node("Add", ["got", "b"], ["y"]),
             node("Optional", [], ["none"], type=helper.make_tensor_type_proto(F, [2])),
             node("OptionalHasElement", ["none"], ["has_none"])]
    check(model(nodes, FEEDS, ["y", "has", "has_none"], opset=18), FEEDS)


def test_run_time_position_is_refused() -> None:
    nodes = [node("SequenceConstruct", ["a", "b"], ["s"]), node("SequenceAt", ["s", "i"], ["y"])]
    with pytest.raises(StaticInputRequired, match="SequenceAt_y.*'i'"):
        import_model(model(nodes, {"a": rand(2), "b": rand(2), "i": i64(1)}, ["y"]))


def test_position_out_of_range() -> None:
    nodes = [node("SequenceConstruct", ["a", "b"], ["s"]), node("SequenceAt", ["s", "i"], ["y"])]
    with pytest.raises(InvalidNodeError, match=r"SequenceAt_y.*position 2 is out of range \[-2, 1\]"):
        import_model(model(nodes, {"a": rand(2), "b": rand(2)}, ["y"], {"i": i64(2)}))


def test_sequence_graph_output_is_refused() -> None:
    nodes = [node("SequenceConstruct", ["a", "b"], ["s"])]
    m = model(nodes, {"a": rand(2), "b": rand(2)}, ["s"])
    with pytest.raises(UnsupportedTypeError, match="graph output 's': element type sequence"):
        import_model(m)


def test_sequence_graph_input_is_refused() -> None:
    graph = helper.make_graph([helper.make_node("SequenceLength", ["s"], ["n"])], "g",
                              [seq_info("s", F, [2])],
                              [helper.make_tensor_value_info("n", I64, [])])
    with pytest.raises(UnsupportedTypeError, match="graph input 's'"):
        import_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))


def test_sequence_given_to_a_tensor_op_is_refused() -> None:
    nodes = [node("SequenceConstruct", ["a", "b"], ["s"]), node("Relu", ["s"], ["y"])]
    with pytest.raises(InvalidNodeError, match="Relu_y.*got a sequence"):
        import_model(model(nodes, {"a": rand(2), "b": rand(2)}, ["y"]))


def test_run_time_if_cannot_select_sequences() -> None:
    def branch(name: str, first: str) -> onnx.GraphProto:
        return helper.make_graph([helper.make_node("SequenceConstruct", [first, "b"], [name])], name, [],
                                 [seq_info(name, F, [2])])

    nodes = [helper.make_node("If", ["cond"], ["s"], name="if_seq", then_branch=branch("t", "a"),
                              else_branch=branch("e", "b")),
             node("ConcatFromSequence", ["s"], ["y"], axis=0)]
    feeds = {"a": rand(2), "b": rand(2), "cond": np.array(True)}
    with pytest.raises(UnsupportedAttributeError, match="if_seq.*sequence or optional"):
        import_model(model(nodes, feeds, ["y"]))
