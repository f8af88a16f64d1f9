"""Shared helpers of the ONNX importer tests: tiny one-node models built with onnx.helper, run through
glow-mlir (import, compile, JIT) and through onnxruntime, and compared.

Where onnxruntime departs from the ONNX spec (or does not implement an opset yet), `spec=True` compares
against onnx's reference implementation of the spec (`onnx.reference.ReferenceEvaluator`) instead."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import glow_mlir
from glow_mlir.frontends.onnx import import_model

# onnxruntime 1.31 reads IR versions up to 13 (onnx 1.23 writes 14 by default).
IR_VERSION = 10

NP_TO_ONNX = {np.dtype(k): v for k, v in {
    np.float32: onnx.TensorProto.FLOAT, np.float64: onnx.TensorProto.DOUBLE, np.float16: onnx.TensorProto.FLOAT16,
    np.bool_: onnx.TensorProto.BOOL, np.int8: onnx.TensorProto.INT8, np.int16: onnx.TensorProto.INT16,
    np.int32: onnx.TensorProto.INT32, np.int64: onnx.TensorProto.INT64, np.uint8: onnx.TensorProto.UINT8,
    np.uint16: onnx.TensorProto.UINT16, np.uint32: onnx.TensorProto.UINT32, np.uint64: onnx.TensorProto.UINT64,
}.items()}

rng = np.random.default_rng(0)


def rand(*shape: int, low: float = -1.0, high: float = 1.0, dtype: type = np.float32) -> np.ndarray:
    if np.issubdtype(dtype, np.integer):
        return rng.integers(int(low), int(high) + 1, shape).astype(dtype)
    if dtype is np.bool_:
        return rng.random(shape) < 0.5
    return rng.uniform(low, high, shape).astype(dtype)


def model(
    nodes: Sequence[onnx.NodeProto],
    inputs: dict[str, np.ndarray],
    outputs: Sequence[str],
    initializers: dict[str, np.ndarray] | None = None,
    opset: int = 17,
    input_shapes: dict[str, list[int | str | None]] | None = None,
) -> onnx.ModelProto:
    """A model whose graph inputs have the dtype and shape of the arrays in `inputs` (or `input_shapes`)."""
    shapes = input_shapes or {}
    graph = helper.make_graph(
        list(nodes),
        "test",
        [
            helper.make_tensor_value_info(n, NP_TO_ONNX[a.dtype], shapes.get(n, list(a.shape)))
            for n, a in inputs.items()
        ],
        [helper.make_empty_tensor_value_info(n) for n in outputs],
        initializer=[numpy_helper.from_array(np.asarray(a), n) for n, a in (initializers or {}).items()],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_VERSION)
    # Give the outputs the types onnx infers, as exporters do.
    inferred = onnx.shape_inference.infer_shapes(m)
    types = {v.name: v for v in [*inferred.graph.value_info, *inferred.graph.output]}
    for out in m.graph.output:
        if out.name in types and types[out.name].type.HasField("tensor_type"):
            out.type.CopyFrom(types[out.name].type)
    return m


def conv_model(
    c: int, h: int, w: int, f: int, k: int = 1, stride: int = 1, activation: str | None = None, bias: bool = True,
    *, n: int = 1, dilation: int = 1,
) -> onnx.ModelProto:
    """A CNN layer for the kernel-schedule tests: Conv of x [N, C, H, W] to F channels with a k x k window,
    'same' pads (dilation * (k // 2)), the given stride and dilation, constant weights scaled by
    1 / sqrt(fan-in) and optionally a bias, then an optional "relu" or "clip" (Clip to [0, 0.5]): the epilogue a
    convolution kernel fuses."""
    weights = (rng.standard_normal((f, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32)
    inits = [numpy_helper.from_array(weights, "w")]
    inputs = ["x", "w"]
    if bias:
        inits.append(numpy_helper.from_array(rng.uniform(-0.5, 0.5, f).astype(np.float32), "b"))
        inputs.append("b")
    nodes = [helper.make_node("Conv", inputs, ["conv"], kernel_shape=[k, k], strides=[stride] * 2,
                              pads=[dilation * (k // 2)] * 4, dilations=[dilation] * 2)]  # fmt: skip
    out = "conv"
    if activation == "relu":
        nodes.append(helper.make_node("Relu", ["conv"], ["y"]))
        out = "y"
    elif activation == "clip":
        inits += [numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
                  numpy_helper.from_array(np.array(0.5, np.float32), "hi")]
        nodes.append(helper.make_node("Clip", ["conv", "lo", "hi"], ["y"]))
        out = "y"
    graph = helper.make_graph(
        nodes, "conv", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [n, c, h, w])],
        [helper.make_tensor_value_info(out, onnx.TensorProto.FLOAT, None)], inits,
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = IR_VERSION
    return m


def run_both(
    m: onnx.ModelProto,
    feeds: dict[str, np.ndarray],
    static_inputs: dict[str, np.ndarray] | None = None,
    spec: bool = False,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(glow-mlir's outputs, the reference's outputs), in graph output order; the reference is onnxruntime,
    or onnx's reference implementation with `spec`."""
    if spec:
        expected = [np.asarray(v) for v in ReferenceEvaluator(m).run(None, feeds)]
    else:
        session = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        expected = session.run(None, feeds)
    graph = import_model(m, static_inputs=static_inputs)
    # Bound inputs, and empty ones (they hold no data: the importer binds them), are not fed at run time.
    runtime_feeds = {k: v for k, v in feeds.items() if k not in (static_inputs or {}) and v.size > 0}
    with glow_mlir.compile(graph) as compiled:
        got = compiled.run(runtime_feeds)
    return [got[o.name] for o in m.graph.output], expected


def check(
    m: onnx.ModelProto,
    feeds: dict[str, np.ndarray],
    rtol: float = 1e-5,
    atol: float = 1e-5,
    static_inputs: dict[str, np.ndarray] | None = None,
    spec: bool = False,
) -> None:
    got, expected = run_both(m, feeds, static_inputs, spec)
    for name, g, e in zip([o.name for o in m.graph.output], got, expected, strict=True):
        assert g.shape == e.shape, f"{name}: shape {g.shape} != the reference's {e.shape}"
        assert g.dtype == e.dtype, f"{name}: dtype {g.dtype} != the reference's {e.dtype}"
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=name)


def check_node(
    op: str,
    inputs: dict[str, np.ndarray],
    attrs: dict[str, object] | None = None,
    consts: dict[str, np.ndarray | None] | None = None,
    opset: int = 17,
    outputs: int | Sequence[str] = 1,
    rtol: float = 1e-5,
    atol: float = 1e-5,
    order: Sequence[str] | None = None,
    spec: bool = False,
) -> None:
    """One `op` node: `inputs` are fed, `consts` are initializers (None is an omitted optional input);
    the node's inputs are `order` (default: inputs then consts); `spec` as in `run_both`."""
    consts = consts or {}
    names = list(order) if order is not None else [*inputs, *consts]
    node_inputs = ["" if n in consts and consts[n] is None else n for n in names]
    while node_inputs and not node_inputs[-1]:
        node_inputs.pop()  # onnxruntime crashes on some trailing empty inputs (LayerNormalization's bias)
    out_names = [f"y{i}" for i in range(outputs)] if isinstance(outputs, int) else list(outputs)
    node = helper.make_node(op, node_inputs, out_names, name=f"{op.lower()}_node", **(attrs or {}))
    initializers = {n: a for n, a in consts.items() if a is not None}
    check(model([node], inputs, [o for o in out_names if o], initializers, opset), inputs, rtol, atol, spec=spec)


def matmul_model(m: int, n: int, k: int, constant: bool) -> tuple[glow_mlir.Graph, dict[str, np.ndarray], np.ndarray]:
    """y = x [m, k] @ w [k, n] for the matmul-schedule tests, w a constant or an input; the feeds and the
    float64 product."""
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    g = glow_mlir.Graph("mm")
    rhs = g.constant(w) if constant else g.input("w", (k, n))
    g.output("y", g.matmul(g.input("x", (m, k)), rhs))
    feeds = {"x": x} if constant else {"x": x, "w": w}
    return g, feeds, x.astype(np.float64) @ w.astype(np.float64)


def activation_node(
    activation: str, src: str, dst: str, clip: tuple[float, float] = (0.0, 0.5)
) -> tuple[onnx.NodeProto, dict[str, np.ndarray]]:
    """The node applying `activation` to `src` into `dst` ("Clip" to `clip`, "LeakyRelu" with alpha 0.2, else
    the ONNX op of that name, e.g. "Relu", "Sigmoid", "Tanh"), and the initializers it reads (for `model`): a
    convolution's epilogue for the kernel tests."""
    if activation == "Clip":
        bounds = {f"{dst}_{n}": np.array(v, np.float32) for n, v in zip(("lo", "hi"), clip, strict=True)}
        return helper.make_node("Clip", [src, *bounds], [dst]), bounds
    if activation == "LeakyRelu":
        return helper.make_node("LeakyRelu", [src], [dst], alpha=0.2), {}
    return helper.make_node(activation, [src], [dst]), {}
