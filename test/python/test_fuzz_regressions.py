"""The inputs the fuzzer (fuzz/, docs/Fuzzing.md) found escaping as Python internals, minimized: each is now
refused with a typed glow-mlir error naming the node, input or file at fault, at the boundary it enters by."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import glow_mlir
from glow_mlir.errors import (
    FeedError,
    InvalidNodeError,
    MalformedModelError,
    ModelImportError,
    ModelTooLargeError,
    UnsupportedTypeError,
)
from glow_mlir.frontends.onnx import import_model
from glow_mlir.tools import glow_opt

REPO = Path(__file__).resolve().parents[2]


def _model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto], outputs: list[str],
           initializers: list[onnx.TensorProto] = (), opset: int = 13) -> onnx.ModelProto:  # type: ignore[assignment]
    out = [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in outputs]
    graph = helper.make_graph(nodes, "g", inputs, out, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _x(dims: list[int], name: str = "x", elem: int = TensorProto.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, dims)


def test_maxpool_kernel_shape_shorter_than_the_spatial_dims_names_the_node() -> None:
    # Issue #15: a LeNet whose pool has one kernel entry for two spatial dims raised IndexError.
    w = numpy_helper.from_array(np.ones((4, 1, 3, 3), np.float32), "w")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv1", kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c"], ["r"], name="relu1"),
        helper.make_node("MaxPool", ["r"], ["y"], name="pool1", kernel_shape=[2]),
    ]
    with pytest.raises(InvalidNodeError, match=r"node 'pool1' \(MaxPool\): kernel_shape.* must have 2 values"):
        import_model(_model(nodes, [_x([1, 1, 12, 12])], ["y"], [w]))


@pytest.mark.parametrize(
    ("op", "attribute", "value", "dims"),
    [
        ("Cast", "to", [1, 2], [2, 3]),  # found as TypeError: unhashable type: 'list'
        ("Softmax", "axis", "x", [2, 3]),  # TypeError: '<=' not supported between 'int' and 'str'
        ("LayerNormalization", "axis", [1, 2], [2, 3]),  # TypeError: '<=' between 'int' and 'list'
    ],
)
def test_an_attribute_of_the_wrong_type_names_node_and_attribute(
    op: str, attribute: str, value: object, dims: list[int]
) -> None:
    node = helper.make_node(op, ["x"], ["y"], name="n1")
    node.attribute.append(helper.make_attribute(attribute, value))
    inputs = [_x(dims)]
    if op == "LayerNormalization":
        node.input.append("scale")
        inputs.append(_x([dims[-1]], "scale"))
    model = _model([node], inputs, ["y"], opset=17)
    with pytest.raises(InvalidNodeError, match=rf"node 'n1' \({op}\): attribute '{attribute}' must be of type"):
        glow_mlir.InferenceSession(model.SerializeToString())


def test_an_op_newer_than_the_opset_still_has_its_attribute_types_checked() -> None:
    # RMSNormalization (opset 23) in an opset-7 model, its axis a list of floats: found as TypeError.
    node = helper.make_node("RMSNormalization", ["x", "scale"], ["y"], name="rms1", axis=[0.5, 2.0])
    model = _model([node], [_x([2, 3]), _x([3], "scale")], ["y"], opset=7)
    with pytest.raises(InvalidNodeError, match=r"node 'rms1' \(RMSNormalization\): attribute 'axis' must be of type INT"):
        glow_mlir.InferenceSession(model.SerializeToString())


def test_a_loop_without_its_body_is_named() -> None:
    # onnx's shape inference failed with its C++ library's "vector::reserve", naming nothing.
    model = _model([helper.make_node("Loop", ["", ""], ["y"])], [], ["y"], opset=18)
    with pytest.raises(InvalidNodeError, match=r"node 'Loop_0' \(Loop\): attribute 'body' is required"):
        glow_mlir.InferenceSession(model.SerializeToString())


def test_an_initializer_defined_twice_is_named() -> None:
    # onnx's shape inference failed on the second, retyped copy naming nothing ("differ in rank: (3) vs (1)").
    w = numpy_helper.from_array(np.ones(3, np.float32), "w")
    twin = numpy_helper.from_array(np.ones((3, 1, 1), np.float32), "w")
    node = helper.make_node("Add", ["x", "w"], ["y"], name="add1")
    with pytest.raises(MalformedModelError, match="initializer 'w' is defined more than once in graph 'g'"):
        import_model(_model([node], [_x([3])], ["y"], [w, twin]))


def test_a_split_with_more_outputs_than_num_outputs_is_named_not_aborted() -> None:
    # onnx's shape inference aborted the process (a failed std::vector bounds assertion) on this input.
    node = helper.make_node("Split", ["x"], ["a", "b", "c", "extra"], axis=0, num_outputs=3)
    with pytest.raises(InvalidNodeError, match=r"node 'Split_0' \(Split\): num_outputs is 3 but the node has 4"):
        import_model(_model([node], [_x([6])], ["a"], opset=18))


def test_a_node_with_more_inputs_than_its_op_takes_is_named() -> None:
    node = helper.make_node("Relu", ["x", "x"], ["y"], name="relu1")
    with pytest.raises(InvalidNodeError, match=r"node 'relu1' \(Relu\): has 2 inputs, the op takes 1"):
        import_model(_model([node], [_x([2])], ["y"]))


def test_a_graph_output_without_a_name_is_refused() -> None:
    # Bit flips left an output nameless (found as "graph output '' is not produced"), and beside an unnamed
    # initializer of rank 73 onnx's inference failed naming nothing ("differ in rank: (73) vs (4)").
    model = _model([helper.make_node("Relu", ["x"], ["y"], name="relu1")], [_x([2])], [""])
    with pytest.raises(MalformedModelError, match="graph output 0 of the model has no name"):
        import_model(model)


def test_a_graph_without_outputs_is_refused() -> None:
    # Bit flips and a deleted chunk left a graph with neither nodes nor outputs (found as the builder's
    # ValueError "graph 'model' has no outputs" escaping InferenceSession).
    with pytest.raises(MalformedModelError, match="graph 'g' has no outputs"):
        import_model(_model([], [_x([2])], []))


def test_a_reshape_copying_a_dim_the_input_lacks_is_named() -> None:
    # SoftmaxCrossEntropyLoss fed its own scalar loss: its function body reshapes the scalar to a shape with a
    # 0 (copy the input's dim) at position 0 (found as an IndexError in the Reshape handler).
    node = helper.make_node("Reshape", ["x", "shape"], ["y"], name="flat")
    shape = numpy_helper.from_array(np.array([0, -1], np.int64), "shape")
    with pytest.raises(InvalidNodeError, match=r"'flat' \(Reshape\): shape \[0, -1\] copies dim 0 \(a 0\) of an "
                                               r"input of rank 0"):
        import_model(_model([node], [_x([])], ["y"], [shape]))


def test_a_tensor_attribute_with_external_data_outside_the_folder_names_the_node() -> None:
    # Found as onnx's ValidationError ("points outside the directory") escaping the importer.
    value = numpy_helper.from_array(np.array([1], np.int64), "")
    value.ClearField("raw_data")
    value.data_location = TensorProto.EXTERNAL
    value.external_data.add(key="location", value="../../etc/passwd")
    node = helper.make_node("Constant", [], ["y"], name="const1", value=value)
    with pytest.raises(MalformedModelError, match=r"node 'const1' \(Constant\) attribute 'value': not a valid tensor"):
        import_model(_model([node], [], ["y"]))


def test_an_initializer_whose_data_does_not_fill_its_dims_is_named() -> None:
    w = numpy_helper.from_array(np.ones(4, np.float32), "w")
    w.dims[:] = [2**40]
    node = helper.make_node("Add", ["x", "w"], ["y"], name="add1")
    with pytest.raises(MalformedModelError, match="initializer 'w': not a valid tensor"):
        import_model(_model([node], [_x([4])], ["y"], [w]))


def test_a_graph_input_of_an_element_type_number_onnx_has_no_name_for() -> None:
    # Found as ValueError: Enum DataType has no name defined for value -3.
    model = _model([helper.make_node("Relu", ["x"], ["y"], name="relu1")], [_x([2])], ["y"])
    model.graph.input[0].type.tensor_type.elem_type = -3
    with pytest.raises(UnsupportedTypeError, match="graph input 'x': element type unknown element type -3"):
        glow_mlir.InferenceSession(model.SerializeToString())


def test_a_name_that_is_not_utf8_is_refused() -> None:
    # Found as TypeError from re.sub: protobuf's upb parser keeps a non-UTF-8 string field as bytes.
    model = _model([helper.make_node("Relu", ["x"], ["y"], name="relu1")], [_x([2])], ["y"])
    data = model.SerializeToString().replace(b"relu1", b"rel\xff1")
    with pytest.raises(MalformedModelError, match=r"model\.graph\.node\[0\]\.name of the model is not valid UTF-8"):
        import_model(data)


def test_a_node_missing_an_input_is_named() -> None:
    # onnx's shape inference named only the op type of this unnamed node: "(op_type:CastLike): Input 1 is out
    # of bounds".
    node = helper.make_node("CastLike", ["x"], ["y"])
    with pytest.raises(InvalidNodeError, match=r"node 'CastLike_0' \(CastLike\): has 1 inputs, the op takes 2"):
        import_model(_model([node], [_x([2])], ["y"], opset=19))


def test_a_ragged_list_fed_to_a_compiled_model_is_a_feed_error() -> None:
    # Found as numpy's ValueError ("inhomogeneous shape") escaping CompiledModel.run.
    g = glow_mlir.Graph("ragged")
    g.output("y", g.relu(g.input("x", (2, 2))))
    with glow_mlir.compile(g, cache=False) as model, pytest.raises(FeedError, match="input 'x': expected an array"):
        model.run({"x": [[1.0, 2.0], [3.0]]})  # type: ignore[dict-item]


def test_a_cache_entry_whose_metadata_was_edited_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Found as a FeedError against a shape the model does not have: an edited input shape in the entry's JSON
    # (the library's checksum still matching) was trusted, and the library would run on a buffer too small.
    monkeypatch.setenv("GLOW_MLIR_CACHE", "1")
    monkeypatch.setenv("GLOW_MLIR_CACHE_DIR", str(tmp_path))
    g = glow_mlir.Graph("edited")
    g.output("y", g.relu(g.input("x", (2, 3))))
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    with glow_mlir.compile(g) as model:
        assert model.report["cache"] == "stored"
    [meta] = tmp_path.glob("*.json")
    document = json.loads(meta.read_text())
    document["abi"]["inputs"][0]["shape"] = [0, 3]
    meta.write_text(json.dumps(document))
    with glow_mlir.compile(g) as model:
        assert model.report["cache"] == "stored"  # the edited entry was dropped and compiled again
        np.testing.assert_array_equal(model.run({"x": x})["y"], np.maximum(x, 0))


def test_glow_opt_refuses_a_dense_array_of_index_instead_of_aborting(tmp_path: Path) -> None:
    # MLIR's parser aborted the process (an assertion in getIntOrFloatBitWidth) on this minimized input.
    source = tmp_path / "index.mlir"
    source.write_text(
        "func.func @f(%a: memref<2xf32>) {\n"
        '  "glow_ir.copy"(%a, %a) {roles = ["out", "in"], start = array<index: 0>} '
        ": (memref<2xf32>, memref<2xf32>) -> ()\n  return\n}\n"
    )
    done = subprocess.run([sys.executable, "-m", "glow_mlir.tools.glow_opt", str(source)], capture_output=True,
                          text=True, cwd=REPO, check=False)
    assert done.returncode == 1
    assert f"{source}:2:58: error: dense arrays of 'index' elements are not supported" in done.stderr


def test_glow_opt_refuses_a_dense_array_the_bindings_cannot_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Found as TypeError ("Can't cast unknown element type DenseArrayAttr") escaping glow-verify and
    # glow-eliminate-noop; reading such an attribute through a NamedAttribute aborts the process.
    source = tmp_path / "ui8.mlir"
    source.write_text(
        "func.func @f(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {\n"
        "  // array<ui8: 1> in a comment is not parsed\n"
        '  %y = "glow.max_pool"(%x) {kernels = array<ui8: 2, 2>, strides = array<i64: 2, 2>, '
        "pads = array<i64: 0, 0, 0, 0>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>\n"
        "  return %y : tensor<1x1x2x2xf32>\n}\n"
    )
    assert glow_opt.main([str(source), "--pass-pipeline=builtin.module(glow-verify)"]) == 1
    assert f"{source}:3:39: error: dense arrays of 'ui8' elements are not supported" in capsys.readouterr().err


def test_glow_opt_verifies_its_input_before_the_pipeline(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # A shuffle that is no permutation reached glow-fold-transpose-into-weights and glow-sink-transpose,
    # which raised numpy's AxisError / "axes don't match array".
    source = tmp_path / "perm.mlir"
    source.write_text(
        "func.func @f(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {\n"
        '  %y = "glow.transpose"(%x) {shuffle = array<i64: -5, 1>} : (tensor<2x3xf32>) -> tensor<3x2xf32>\n'
        "  return %y : tensor<3x2xf32>\n}\n"
    )
    pipeline = "--pass-pipeline=builtin.module(glow-fold-transpose-into-weights,glow-sink-transpose)"
    assert glow_opt.main([str(source), pipeline]) == 1
    assert f"{source}:2:8: error: 'glow.transpose' shuffle [-5, 1] must be a permutation" in capsys.readouterr().err


def test_a_graph_input_too_large_to_address_is_refused() -> None:
    # Found as TypeError from MLIR's DenseI64ArrayAttr (a dim of 2^62 reached GridSample's handler).
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [_x([1, 1, 2**62, 4])], ["y"])
    with pytest.raises(ModelImportError, match=r"input 'x': shape \[1, 1, 4611686018427387904, 4\] has more than "
                                               r"2\^60 elements"):  # fmt: skip
        import_model(model)


def test_a_variadic_op_with_every_input_absent_is_named() -> None:
    # Found as IndexError in the Max/Min/Sum/Mean handler.
    model = _model([helper.make_node("Max", [""], ["y"], name="top")], [_x([2])], ["y"])
    with pytest.raises(InvalidNodeError, match=r"node 'top' \(Max\): takes at least one input, all are absent"):
        import_model(model)


def test_a_matmul_of_a_scalar_is_named() -> None:
    # Found as IndexError in MatMul's handler (QLinearMatMul of a rank-0 b, through a mutated shape).
    model = _model([helper.make_node("MatMul", ["x", "s"], ["y"], name="mm")], [_x([2, 4]), _x([], "s")], ["y"])
    with pytest.raises(InvalidNodeError, match=r"node 'mm' \(MatMul\): operands must have rank 1 or more"):
        import_model(model)


@pytest.mark.parametrize("op,attrs", [
    ("MaxPool", {"kernel_shape": [2, 2], "strides": [0, 2]}),
    ("AveragePool", {"kernel_shape": [2, 0]}),
    ("LpPool", {"kernel_shape": [2, 2], "dilations": [1, 0]}),
    ("Conv", {"kernel_shape": [1, 1], "strides": [2, 0]}),
])  # fmt: skip
def test_a_window_of_zero_stride_dilation_or_size_is_named(op: str, attrs: dict[str, list[int]]) -> None:
    # Found as ZeroDivisionError in the pools' geometry (a LeNet's MaxPool with its stride's bits flipped to 0):
    # every windowed op reads its kernel, strides and dilations through window_attrs, which checks them.
    inputs = ["x", "w"] if op == "Conv" else ["x"]
    nodes = [helper.make_node(op, inputs, ["y"], name="win", **attrs)]
    model = _model(nodes, [_x([1, 2, 6, 6]), _x([2, 2, 1, 1], "w")][: len(inputs)], ["y"])
    with pytest.raises(InvalidNodeError, match=rf"node 'win' \({op}\): kernel_shape .* must be >= 1"):
        import_model(model)


def test_a_fold_larger_than_memory_is_refused_naming_the_node() -> None:
    # Found as MemoryError (numpy asked for 256 GiB) folding a broadcast of constants to a mutated shape.
    shape = numpy_helper.from_array(np.array([2**31 - 1, 2, 2, 8], np.int64), "shape")
    one = numpy_helper.from_array(np.array([1.0], np.float32), "one")
    nodes = [helper.make_node("Expand", ["one", "shape"], ["big"], name="grow"),
             helper.make_node("Add", ["x", "big"], ["y"], name="add")]  # fmt: skip
    model = _model(nodes, [_x([1, 1, 1, 8])], ["y"])
    model.graph.initializer.extend([shape, one])
    with pytest.raises(ModelImportError, match=r"node 'grow': broadcast of constants gives a float32\[2147483647, "
                                               r"2, 2, 8\] \(256.0 GiB\), more than half"):
        import_model(model)


def test_an_unsqueeze_naming_an_axis_twice_is_named() -> None:
    # Found as StopIteration in Unsqueeze's handler (axes [0, -3] of a rank-1 input: both the first axis of three).
    axes = numpy_helper.from_array(np.array([0, -3], np.int64), "axes")
    model = _model([helper.make_node("Unsqueeze", ["x", "axes"], ["y"], name="unsq")], [_x([3])], ["y"])
    model.graph.initializer.append(axes)
    with pytest.raises(InvalidNodeError, match=r"node 'unsq' \(Unsqueeze\): axes \[0, 0\] name an axis twice"):
        import_model(model)


def test_glow_opt_refuses_a_loop_attribute_of_another_element_type(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Found as ValueError ("Cannot cast attribute to DenseI64ArrayAttr") escaping glow-verify's loop check.
    source = tmp_path / "loop.mlir"
    source.write_text(
        'func.func @f(%a0: memref<3xf32> {glow.name = "a0"}, %a: memref<3xf32> {glow.name = "a", glow.output}) {\n'
        '  "glow_ir.loop"(%a, %a0) {body = @body, condition = 0 : i64, num_carried = 1 : i64, '
        "num_scan_inputs = 0 : i64, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, "
        '0>, roles = ["out", "in"], scan_input_axes = array<i64>, scan_input_directions = array<i64>, '
        "scan_output_axes = array<f32>, scan_output_directions = array<i64>, trip_count = 4 : i64} : "
        "(memref<3xf32>, memref<3xf32>) -> ()\n  return\n}\n"
        "func.func private @body(%i: memref<i64>, %acc: memref<3xf32>, %next: memref<3xf32> {glow.output}) {\n"
        "  return\n}\n"
    )
    assert glow_opt.main([str(source), "--pass-pipeline=builtin.module(glow-allocate)"]) == 1
    assert "attributes: Cannot cast attribute to DenseI64ArrayAttr" in capsys.readouterr().err


@pytest.mark.parametrize("op,value,got", [("Compress", 1.5, "FLOAT"), ("Unique", "bogus", "STRING")])
def test_a_split_models_bounded_op_checks_its_attribute_types_and_names_the_node(op: str, value: object,
                                                                                  got: str) -> None:  # fmt: skip
    # Found as TypeError in the bounded Compress (a run-time condition, its axis retyped to a float), then as
    # ValueError in the split itself (Unique's axis a string): the split reads the axis its bounded form pads,
    # and the bounded form takes the ONNX op's attributes, which the op's schema types.
    inputs = ["x", "c"] if op == "Compress" else ["x"]
    nodes = [helper.make_node(op, inputs, ["y"])]
    nodes[0].attribute.append(helper.make_attribute("axis", value))
    declared = [_x([3, 2]), _x([2], "c", TensorProto.BOOL)] if op == "Compress" else [_x([3, 2])]
    model = _model(nodes, declared, ["y"])
    with pytest.raises(InvalidNodeError, match=rf"node '{op}_0' \({op}\): attribute 'axis' must be of type INT, "
                                               rf"got {got}"):  # fmt: skip
        glow_mlir.InferenceSession(model.SerializeToString())


def test_shape_inference_out_of_memory_is_a_typed_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fuzz seed 2441: an input of 2^31 int64 elements read as a shape made onnx's data propagation raise
    MemoryError (std::bad_alloc). Not reproduced here: a machine with that much memory would fill it first."""

    def exhausted(*_: object, **__: object) -> None:
        raise MemoryError("std::bad_alloc")

    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", exhausted)
    axes = numpy_helper.from_array(np.array([0], np.int64), "axes")
    model = _model([helper.make_node("Unsqueeze", ["n", "axes"], ["y"])], [_x([2147483647], "n", TensorProto.INT64)],
                   ["y"], [axes])  # fmt: skip
    with pytest.raises(ModelImportError, match="ran out of memory; its largest graph input 'n' has 2147483647"):
        import_model(model)


@pytest.mark.parametrize("start,limit,delta", [(0.0, 4.0, 0.0), (0, 4, 0), (0.0, np.inf, 1.0), (0.0, 4.0, np.nan)])
def test_a_range_without_a_finite_count_is_named(start: float, limit: float, delta: float) -> None:
    # Fuzz seed 2449 (graph 200): a Range whose delta became 0 raised ZeroDivisionError.
    dtype = np.float32 if isinstance(start, float) else np.int64
    init = [numpy_helper.from_array(np.array(v, dtype), n) for n, v in zip(("s", "l", "d"), (start, limit, delta))]
    m = _model([helper.make_node("Range", ["s", "l", "d"], ["y"], name="range")], [], ["y"], init, opset=11)
    with pytest.raises(InvalidNodeError, match="node 'range'.*(delta is 0|no finite count)"):
        import_model(m)


def test_a_tile_by_an_absurd_count_is_a_typed_error() -> None:
    # Fuzz seed 2452 (feed 905, the "extreme" mutation): Tile's repeats fed 2^62 built a list of that many
    # copies (MemoryError); a count whose result is too large to address is refused naming the node.
    node = helper.make_node("Tile", ["x", "repeats"], ["y"], name="tile")
    m = _model([node], [_x([2, 3]), _x([2], "repeats", TensorProto.INT64)], ["y"])
    session = glow_mlir.InferenceSession(m.SerializeToString())
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    tiled = session.run(None, {"x": x, "repeats": np.array([2, 3], np.int64)})[0]
    np.testing.assert_array_equal(tiled, np.tile(x, (2, 3)))
    with pytest.raises(InvalidNodeError, match="node 'tile'.*2\\^60"):
        session.run(None, {"x": x, "repeats": np.array([2**62, 1], np.int64)})


def test_a_model_whose_outputs_exceed_the_memory_is_refused_before_code_generation() -> None:
    # Fuzz seed 2460 (feed 2182, the "extreme" mutation): an Expand fed the shape [2^30, 48, 1] compiled, then asked
    # numpy for its 48 GiB output at run time (a MemoryError naming nothing); refused at compile, naming it.
    node = helper.make_node("Expand", ["x", "shape"], ["y"], name="expand")
    m = _model([node], [_x([3, 1]), _x([3], "shape", TensorProto.INT64)], ["y"])
    session = glow_mlir.InferenceSession(m.SerializeToString())
    x = np.arange(3, dtype=np.float32).reshape(3, 1)
    np.testing.assert_array_equal(session.run(None, {"x": x, "shape": np.array([2, 3, 4], np.int64)})[0],
                                  np.broadcast_to(x, (2, 3, 4)))  # fmt: skip
    # 48 TiB: more than any machine running the suite.
    with pytest.raises(ModelTooLargeError, match=r"output 'y' float32\[1099511627776, 3, 4\] 49152.0 GiB"):
        session.run(None, {"x": x, "shape": np.array([2**40, 3, 4], np.int64)})


def test_an_input_nothing_defines_is_refused_before_shape_inference() -> None:
    # Fuzz seed 2462 (graph 2380): an EyeLike whose input was renamed to a value nothing defines made onnx's shape
    # inference read that input's type unchecked (a segmentation fault); refused naming the node and the value,
    # in a subgraph too (an If branch reading a value neither it nor the main graph defines).
    node = helper.make_node("EyeLike", ["dangling"], ["y"], name="eye", dtype=TensorProto.INT8)
    with pytest.raises(MalformedModelError, match="node 'eye' \\(EyeLike\\) reads 'dangling', which no graph"):
        import_model(_model([node], [_x([3, 4])], ["y"]))
    branch = helper.make_graph([helper.make_node("Identity", ["nowhere"], ["b"], name="inner")], "branch", [],
                               [helper.make_tensor_value_info("b", TensorProto.FLOAT, [3, 4])])  # fmt: skip
    cond = numpy_helper.from_array(np.array(True), "cond")
    branchy = helper.make_node("If", ["cond"], ["y"], name="if", then_branch=branch, else_branch=branch)
    with pytest.raises(MalformedModelError, match="node 'if/inner' \\(Identity\\) reads 'nowhere'"):
        import_model(_model([branchy], [_x([3, 4])], ["y"], [cond]))


def test_a_value_two_nodes_output_is_refused() -> None:
    # Fuzz seed 2485 (graph 315): ReduceSumSquare's body with its ReduceSum duplicated, the copy reading the
    # shared output as its axes, reached the staged session's split, which took that value for a graph input
    # (ValueError). Which producer a reader means is undefined; onnxruntime refuses the model too.
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    nodes = [helper.make_node("Mul", ["x", "x"], ["sq"], name="square"),
             helper.make_node("ReduceSum", ["sq", "axes"], ["reduced"], name="sum"),
             helper.make_node("ReduceSum", ["sq", "reduced"], ["reduced"], name="again")]  # fmt: skip
    with pytest.raises(MalformedModelError, match="value 'reduced' is the output of two nodes, 'sum' and 'again'"):
        import_model(_model(nodes, [_x([3, 2, 2])], ["reduced"], [axes]))


def test_a_shape_input_of_non_finite_floats_is_named() -> None:
    # Fuzz seed 2454 (graph 2505): a Reshape whose shape input became a float tensor holding inf (a cycle made it
    # read a Cast's output) raised OverflowError converting it to ints.
    init = [numpy_helper.from_array(np.array([np.inf, 2], np.float32), "shape")]
    m = _model([helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")], [_x([2, 3])], ["y"], init)
    with pytest.raises(InvalidNodeError, match=r"node 'reshape'.*no integers"):
        import_model(m)


def test_a_gather_nd_of_negative_batch_dims_is_refused_before_shape_inference() -> None:
    # Fuzz seed 2456 (graph 2870): onnx's shape inference segfaulted on GatherND's batch_dims -4.
    node = helper.make_node("GatherND", ["data", "indices"], ["y"], batch_dims=-4, name="gnd")
    m = _model([node], [_x([2, 2, 2]), _x([2, 1], "indices", TensorProto.INT64)], ["y"])
    with pytest.raises(InvalidNodeError, match=r"node 'gnd' \(GatherND\): batch_dims -4"):
        import_model(m)


def test_a_recurrent_weight_of_another_rank_is_named() -> None:
    # Fuzz seed 2456 (graph 2420): a GRU whose R had lost its dims raised IndexError reading its hidden size.
    node = helper.make_node("GRU", ["x", "w", "r"], ["y"], hidden_size=2, name="gru")
    init = [numpy_helper.from_array(np.ones((1, 6, 3), np.float32), "w"),
            numpy_helper.from_array(np.ones(6, np.float32), "r")]
    m = _model([node], [_x([4, 1, 3])], ["y"], init)
    with pytest.raises(InvalidNodeError, match=r"node 'gru' \(GRU\): W \[1, 6, 3\] and R \[6\] must have rank 3"):
        import_model(m)


def test_a_model_that_fails_shape_inference_is_named_as_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    # Fuzz seed 2456 (protobuf 1036): bits flipped in a string that protobuf's Python parser takes and onnx's C++
    # one refuses ("Unable to parse proto"): the message named nothing of the input.
    from glow_mlir.frontends.onnx import loading

    def refuse(*_: object, **__: object) -> None:
        raise onnx.shape_inference.InferenceError("Unable to parse proto from the given bytes: data is malformed")

    monkeypatch.setattr(loading, "infer_shapes", refuse)
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [_x([2])], ["y"])
    with pytest.raises(MalformedModelError, match="the model fails ONNX shape inference: Unable to parse proto"):
        import_model(m)


@pytest.mark.parametrize("opset,dims,n_scan,message", [
    # Fuzz seed 2468 (protobuf 1176): a Scan-8 of a scalar scan input raised IndexError reading its batch.
    (8, [], 1, r"inputs of shapes \[\[1, 2\], \[\]\] must have a batch axis"),
    (8, [3], 1, r"inputs of shapes \[\[1, 2\], \[3\]\] must have a batch axis \(and the scan inputs a scan axis"),
    (11, [3, 2], 3, r"num_scan_inputs 3 must be in \[1, 2\]"),
])  # fmt: skip
def test_a_scan_without_the_axes_it_needs_is_named(opset: int, dims: list[int], n_scan: int, message: str) -> None:
    out = helper.make_tensor_value_info
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "n"], ["t"]), helper.make_node("Identity", ["t"], ["o"])], "body",
        [out("s", TensorProto.FLOAT, [2]), out("n", TensorProto.FLOAT, [2])],
        [out("t", TensorProto.FLOAT, [2]), out("o", TensorProto.FLOAT, [2])],
    )  # fmt: skip
    inputs = ["", "init", "x"] if opset == 8 else ["init", "x"]
    node = helper.make_node("Scan", inputs, ["y", "z"], body=body, num_scan_inputs=n_scan, name="scan")
    init = [_x([1, 2] if opset == 8 else [2], "init")]
    m = _model([node], [*init, _x(dims)], ["y", "z"], opset=opset)
    with pytest.raises(InvalidNodeError, match=r"node 'scan' \(Scan\): " + message):
        import_model(m)
