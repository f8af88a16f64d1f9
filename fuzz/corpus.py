"""The seeds the mutators start from: small ONNX models with a feed each, and glow-opt inputs.

- ONNX: the node cases of onnx's backend test suite that pass today (test/onnx_backend/passing.txt, loaded
  through test/onnx_backend/cases.py, one model and its first data set's inputs each), plus a few graphs
  built here with onnx.helper: a LeNet, a transformer-like block, an MLP with a symbolic batch dim and a
  shape-arithmetic graph (Shape, Gather, Concat, Reshape, Slice on initializers).
- `FEED_SEEDS` and `CACHE_SEEDS` name the seeds whose sessions the feed and cache targets build: the built
  graphs and common single-op cases, all of which compile as they are.
- MLIR: every test/lit input with the pass pipeline of its first glow-opt RUN line.
"""

from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[1]
TEST_DIR = ROOT / "test"
LIT_DIR = TEST_DIR / "lit"

BUILT = ("built/lenet", "built/transformer", "built/mlp_dynamic", "built/shape_arith")
FEED_SEEDS = (
    *BUILT,
    "node/test_relu",
    "node/test_add_bcast",
    "node/test_conv_with_strides_padding",
    "node/test_maxpool_2d_default",
    "node/test_gemm_default_no_bias",
    "node/test_softmax_axis_1",
    "node/test_matmul_2d",
    "node/test_concat_2d_axis_0",
    "node/test_transpose_default",
    "node/test_where_example",
    "node/test_cast_FLOAT_to_DOUBLE",
    # Integer inputs that index or size something at run time (gathers, scatters, unpooling) or decide a
    # shape (compiled per value: Expand, Tile): what the "extreme" mutation feeds values past any bound.
    "node/test_gather_0",
    "node/test_gather_elements_0",
    "node/test_gathernd_example_int32",
    "node/test_scatter_elements_with_axis",
    "node/test_scatternd",
    "node/test_maxunpool_export_without_output_shape",
    "node/test_expand_dim_changed",
    "node/test_tile",
)
CACHE_SEEDS = ("built/lenet", "built/transformer", "built/shape_arith", "node/test_add_bcast")


@dataclass(frozen=True)
class ModelSeed:
    """A model (serialized) and a feed that it runs with."""

    name: str
    model: bytes
    feed: dict[str, np.ndarray]


@dataclass(frozen=True)
class MlirSeed:
    """A glow-opt input and the pass pipeline (and flags) of its test's first RUN line."""

    name: str
    text: str
    args: tuple[str, ...]


@functools.cache
def model_seeds() -> dict[str, ModelSeed]:
    """Every ONNX seed by name: the built graphs first, then the passing node cases."""
    seeds = {s.name: s for s in _built()}
    if str(TEST_DIR) not in sys.path:
        sys.path.insert(0, str(TEST_DIR))
    from onnx_backend import cases

    for case_id in cases.read_passing():
        if not case_id.startswith("node/"):
            continue
        case = cases.load(case_id)
        inputs = case.data_sets[0][0] if case.data_sets else []
        if not all(isinstance(x, np.ndarray) for x in inputs):
            continue  # sequences and optionals: no feed for a session
        names = [i.name for i in case.model.graph.input]
        seeds[case_id] = ModelSeed(case_id, case.model.SerializeToString(), dict(zip(names, inputs, strict=False)))
    return seeds


_RUN = re.compile(r"//\s*RUN:\s*(?:not\s+)?glow-opt %s(?P<flags>[^|>]*)")
_PIPELINE = re.compile(r"--pass-pipeline='(?P<p>[^']*)'")


@functools.cache
def mlir_seeds() -> list[MlirSeed]:
    """The test/lit inputs that a glow-opt RUN line reads, each with that line's pipeline."""
    seeds = []
    for path in sorted(LIT_DIR.rglob("*.mlir")):
        if "Output" in path.parts:
            continue
        text = path.read_text()
        run = _RUN.search(text)
        if run is None:
            continue
        flags = run["flags"]
        pipeline = _PIPELINE.search(flags)
        args = [f"--pass-pipeline={pipeline['p']}"] if pipeline else []
        if "--split-input-file" in flags:
            args.append("--split-input-file")
        seeds.append(MlirSeed(str(path.relative_to(ROOT)), text, tuple(args)))
    return seeds


# The graphs built here.


def _rng_init(name: str, dims: list[int], rng: np.random.Generator) -> onnx.TensorProto:
    return numpy_helper.from_array((rng.standard_normal(dims) * 0.3).astype(np.float32), name)


def _model(nodes: list[onnx.NodeProto], name: str, inputs: list[onnx.ValueInfoProto],
           outputs: list[onnx.ValueInfoProto], inits: list[onnx.TensorProto], opset: int) -> bytes:
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()


def _lenet(rng: np.random.Generator) -> ModelSeed:
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        n("Relu", ["c1"], ["r1"], name="relu1"),
        n("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        n("Conv", ["p1", "w2", "b2"], ["c2"], name="conv2", kernel_shape=[3, 3]),
        n("Relu", ["c2"], ["r2"], name="relu2"),
        n("AveragePool", ["r2"], ["p2"], name="pool2", kernel_shape=[2, 2], strides=[2, 2]),
        n("Flatten", ["p2"], ["f"], name="flatten", axis=1),
        n("Gemm", ["f", "w3", "b3"], ["g1"], name="fc1", transB=1),
        n("Relu", ["g1"], ["r3"], name="relu3"),
        n("Gemm", ["r3", "w4", "b4"], ["g2"], name="fc2", transB=1),
        n("Softmax", ["g2"], ["y"], name="softmax", axis=1),
    ]
    inits = [
        _rng_init("w1", [4, 1, 3, 3], rng), _rng_init("b1", [4], rng),
        _rng_init("w2", [8, 4, 3, 3], rng), _rng_init("b2", [8], rng),
        _rng_init("w3", [16, 32], rng), _rng_init("b3", [16], rng),
        _rng_init("w4", [10, 16], rng), _rng_init("b4", [10], rng),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 12, 12])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])
    feed = {"x": rng.standard_normal([1, 1, 12, 12]).astype(np.float32)}
    return ModelSeed("built/lenet", _model(nodes, "lenet", [x], [y], inits, 13), feed)


def _transformer(rng: np.random.Generator) -> ModelSeed:
    """One attention head and a feed-forward block with residuals and layer norms, sequence 4, width 8."""
    n = helper.make_node
    nodes = [
        n("MatMul", ["x", "wq"], ["q"], name="q_proj"),
        n("MatMul", ["x", "wk"], ["k"], name="k_proj"),
        n("MatMul", ["x", "wv"], ["v"], name="v_proj"),
        n("Transpose", ["k"], ["kt"], name="k_t", perm=[0, 2, 1]),
        n("MatMul", ["q", "kt"], ["s"], name="scores"),
        n("Div", ["s", "scale"], ["ss"], name="scale_div"),
        n("Softmax", ["ss"], ["a"], name="attn_softmax", axis=-1),
        n("MatMul", ["a", "v"], ["o"], name="attn_out"),
        n("Add", ["x", "o"], ["h"], name="residual1"),
        n("LayerNormalization", ["h", "g1", "be1"], ["hn"], name="ln1", axis=-1, epsilon=1e-5),
        n("MatMul", ["hn", "w1"], ["f1"], name="ffn1"),
        n("Relu", ["f1"], ["f1g"], name="ffn_act"),
        n("MatMul", ["f1g", "w2"], ["f2"], name="ffn2"),
        n("Add", ["hn", "f2"], ["h2"], name="residual2"),
        n("LayerNormalization", ["h2", "g2", "be2"], ["y"], name="ln2", axis=-1, epsilon=1e-5),
    ]
    inits = [
        _rng_init("wq", [8, 8], rng), _rng_init("wk", [8, 8], rng), _rng_init("wv", [8, 8], rng),
        numpy_helper.from_array(np.array(np.sqrt(8.0), np.float32), "scale"),
        numpy_helper.from_array(np.ones(8, np.float32), "g1"), numpy_helper.from_array(np.zeros(8, np.float32), "be1"),
        _rng_init("w1", [8, 16], rng), _rng_init("w2", [16, 8], rng),
        numpy_helper.from_array(np.ones(8, np.float32), "g2"), numpy_helper.from_array(np.zeros(8, np.float32), "be2"),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8])
    feed = {"x": rng.standard_normal([1, 4, 8]).astype(np.float32)}
    return ModelSeed("built/transformer", _model(nodes, "transformer", [x], [y], inits, 17), feed)


def _mlp_dynamic(rng: np.random.Generator) -> ModelSeed:
    n = helper.make_node
    nodes = [
        n("MatMul", ["x", "w1"], ["m1"], name="fc1"),
        n("Add", ["m1", "b1"], ["a1"], name="fc1_bias"),
        n("Tanh", ["a1"], ["t1"], name="tanh"),
        n("MatMul", ["t1", "w2"], ["m2"], name="fc2"),
        n("Add", ["m2", "b2"], ["y"], name="fc2_bias"),
    ]
    inits = [_rng_init("w1", [8, 16], rng), _rng_init("b1", [16], rng),
             _rng_init("w2", [16, 4], rng), _rng_init("b2", [4], rng)]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    feed = {"x": rng.standard_normal([3, 8]).astype(np.float32)}
    return ModelSeed("built/mlp_dynamic", _model(nodes, "mlp", [x], [y], inits, 13), feed)


def _shape_arith(rng: np.random.Generator) -> ModelSeed:
    """Shape subgraphs as exporters write them: folded at import into constants."""
    n = helper.make_node
    nodes = [
        n("Shape", ["x"], ["sh"], name="shape"),
        n("Gather", ["sh", "i0"], ["d0"], name="gather_batch", axis=0),
        n("Unsqueeze", ["d0", "ax0"], ["d0u"], name="unsqueeze"),
        n("Concat", ["d0u", "minus1"], ["target"], name="concat_shape", axis=0),
        n("Reshape", ["x", "target"], ["flat"], name="reshape"),
        n("Slice", ["flat", "starts", "ends", "axes"], ["sl"], name="slice"),
        n("Mul", ["sl", "k"], ["y"], name="scale"),
    ]
    inits = [
        numpy_helper.from_array(np.array(0, np.int64), "i0"),
        numpy_helper.from_array(np.array([0], np.int64), "ax0"),
        numpy_helper.from_array(np.array([-1], np.int64), "minus1"),
        numpy_helper.from_array(np.array([2], np.int64), "starts"),
        numpy_helper.from_array(np.array([10], np.int64), "ends"),
        numpy_helper.from_array(np.array([1], np.int64), "axes"),
        numpy_helper.from_array(rng.standard_normal([8]).astype(np.float32), "k"),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])
    feed = {"x": rng.standard_normal([2, 3, 4]).astype(np.float32)}
    return ModelSeed("built/shape_arith", _model(nodes, "shape_arith", [x], [y], inits, 13), feed)


def _built() -> list[ModelSeed]:
    rng = np.random.default_rng(0)
    return [_lenet(rng), _transformer(rng), _mlp_dynamic(rng), _shape_arith(rng)]
