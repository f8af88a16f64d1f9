"""The CPU backend's NHWC ops (glow.cpu_conv_nhwc, cpu_max_pool_nhwc, cpu_avg_pool_nhwc) through every
stage, and the glow-cpu-layout pass that introduces them.

- The interpreter's NHWC ops equal the NCHW ops with the layout moved, activations applied by numpy.
- glow-lower (pads expanded in NHWC) keeps the interpreter's results; the whole pipeline (irgen, codegen
  with the conv recipes of glow-cpu-schedule) matches the interpreter; glow-verify rejects bad operands.
- glow-cpu-layout plus glow-sink-transpose keep a network's results and leave, on the real models, only
  the transpose of the input at the graph's boundary.
"""

from __future__ import annotations

import collections

import numpy as np
import pytest
from mlir import ir
from models import torch_models

import glow_mlir
from glow_mlir import ops
from glow_mlir.errors import VerificationError
from glow_mlir.frontends.onnx import importer
from glow_mlir.pipeline.runner import COMPILE_PIPELINE, run_pipeline

RTOL = ATOL = 1e-4
rng = np.random.default_rng(0)


def rand(*shape: int) -> np.ndarray:
    return rng.uniform(-1.0, 1.0, shape).astype(np.float32)


# (input NHWC, filter channels out, kernel, strides, pads, dilation, group, activation, activation args)
CONVS = {
    "plain": ((1, 6, 7, 3), 8, (3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1, "none", ()),
    "pads_relu": ((2, 7, 9, 3), 4, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, "relu", ()),
    "strided_uneven_pads_clip": ((1, 9, 8, 4), 16, (3, 2), (2, 2), (1, 0, 1, 2), (1, 1), 1, "clip", (0.0, 0.5)),
    "dilated_leaky": ((1, 9, 9, 2), 32, (3, 3), (1, 2), (0, 1, 2, 1), (2, 1), 1, "leaky_relu", (0.1,)),
    "depthwise_sigmoid": ((1, 8, 8, 16), 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 16, "sigmoid", ()),
    "depthwise_s2": ((1, 9, 9, 32), 32, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 32, "none", ()),
    "depthwise_multiplier_tanh": ((1, 6, 6, 4), 8, (3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 4, "tanh", ()),
    "groups": ((1, 6, 6, 6), 4, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 2, "relu", ()),
    "one_by_one_64": ((1, 7, 7, 32), 64, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1, "none", ()),
    # 40 filters: a packed block of 32 channels and one of the 8 left over (conv_recipes._packed_conv)
    "channel_remainder_s2": ((1, 9, 13, 24), 40, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1, "relu", ()),
}


def conv_data(case: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The NHWC input, the [KH, KW, C / group, O] filter and the bias of one case of CONVS."""
    shape, out, kernels, _, _, _, group, _, _ = CONVS[case]
    return rand(*shape), rand(*kernels, shape[3] // group, out), rand(out)


def conv_graph(case: str) -> tuple[glow_mlir.Graph, dict[str, np.ndarray]]:
    x, weights, bias = conv_data(case)
    _, _, _, strides, pads, dilation, group, activation, args = CONVS[case]
    g = glow_mlir.Graph(case)
    y = g.cpu_conv_nhwc(g.input("x", x.shape), weights, bias, strides, pads, dilation, group, activation, args)
    g.output("y", y)
    return g, {"x": x}


def _nchw_activation(g: glow_mlir.Graph, y: glow_mlir.Tensor, activation: str, args: tuple) -> glow_mlir.Tensor:
    """The activation written with plain glow ops, as the graph has it before fusion."""
    def full(value: float) -> np.ndarray:
        return np.full(y.shape, value, np.float32)

    match activation:
        case "none":
            return y
        case "relu":
            return g.relu(y)
        case "clip":
            return g.min(g.max(y, full(args[0])), full(args[1]))
        case "sigmoid":
            return g.sigmoid(y)
        case "tanh":
            return g.tanh(y)
        case "leaky_relu":
            return g.select(g.cmp_lt(y, full(0.0)), g.mul(y, full(args[0])), y)
    raise AssertionError(activation)


@pytest.mark.parametrize("case", sorted(CONVS))
def test_interpreter_conv_is_nchw_conv_transposed(case: str) -> None:
    graph, feeds = conv_graph(case)
    x, weights, bias = conv_data(case)
    _, _, _, strides, pads, dilation, group, activation, args = CONVS[case]
    g = glow_mlir.Graph("nchw")
    y = g.convolution(g.input("x", x.transpose(0, 3, 1, 2).shape), weights.transpose(3, 2, 0, 1).copy(), bias,
                      strides, pads, dilation, group)
    g.output("y", _nchw_activation(g, y, activation, args))
    nhwc = glow_mlir.Graph("nhwc")
    nhwc.output("y", nhwc.cpu_conv_nhwc(nhwc.input("x", x.shape), weights, bias, strides, pads, dilation, group,
                                        activation, args))
    expected = glow_mlir.interpret(g.module, {"x": x.transpose(0, 3, 1, 2).copy()})["y"]
    got = glow_mlir.interpret(nhwc.module, {"x": x})["y"]
    np.testing.assert_allclose(got, expected.transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-6)


POOLS = {
    "max_pads": ("max", (1, 7, 8, 5), (3, 3), (2, 2), (1, 1, 1, 1), True),
    "max_uneven": ("max", (2, 6, 6, 16), (2, 3), (1, 2), (0, 1, 1, 2), True),
    "avg_exclude_pads": ("avg", (1, 7, 7, 4), (3, 3), (2, 2), (1, 1, 1, 1), False),
    "avg_include_pads": ("avg", (1, 6, 5, 3), (2, 2), (1, 1), (1, 0, 0, 1), True),
    "avg_global": ("avg", (1, 7, 7, 64), (7, 7), (1, 1), (0, 0, 0, 0), False),
}


def pool_graph(case: str) -> tuple[glow_mlir.Graph, dict[str, np.ndarray]]:
    kind, shape, kernels, strides, pads, include = POOLS[case]
    g = glow_mlir.Graph(case)
    x = g.input("x", shape)
    if kind == "max":
        y = g.cpu_max_pool_nhwc(x, kernels, strides, pads)
    else:
        y = g.cpu_avg_pool_nhwc(x, kernels, strides, pads, include)
    g.output("y", y)
    return g, {"x": rand(*shape)}


@pytest.mark.parametrize("case", sorted(POOLS))
def test_interpreter_pool_is_nchw_pool_transposed(case: str) -> None:
    kind, shape, kernels, strides, pads, include = POOLS[case]
    nhwc, feeds = pool_graph(case)
    g = glow_mlir.Graph("nchw")
    x = g.input("x", (shape[0], shape[3], shape[1], shape[2]))
    y = g.max_pool(x, kernels, strides, pads) if kind == "max" else g.avg_pool(x, kernels, strides, pads, include)
    g.output("y", y)
    expected = glow_mlir.interpret(g.module, {"x": feeds["x"].transpose(0, 3, 1, 2).copy()})["y"]
    got = glow_mlir.interpret(nhwc.module, feeds)["y"]
    np.testing.assert_allclose(got, expected.transpose(0, 2, 3, 1), rtol=1e-6, atol=1e-7)


def _check_stages(graph: glow_mlir.Graph, feeds: dict[str, np.ndarray]) -> None:
    """The interpreter's result before and after glow-lower, and the compiled model's, agree."""
    module = graph.module
    expected = glow_mlir.interpret(module, feeds)["y"]
    lowered = ir_copy(module)
    run_pipeline(lowered, "builtin.module(glow-lower,glow-verify)")
    padded = [op for op in ops.walk_ops(lowered.operation) if op.name.startswith("glow.cpu_") and any(ops.ints(op, "pads"))]
    assert not padded
    np.testing.assert_allclose(glow_mlir.interpret(lowered, feeds)["y"], expected, rtol=1e-6, atol=1e-6)
    got = glow_mlir.compile(graph).run(feeds)["y"]
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


def ir_copy(module: ir.Module) -> ir.Module:
    return ir.Module.parse(str(module), context=module.context)


@pytest.mark.parametrize("case", sorted(CONVS))
def test_conv_every_stage(case: str) -> None:
    _check_stages(*conv_graph(case))


def test_constant_filters_are_packed_per_channel_tile() -> None:
    """40 filters over 13 output columns: blocks of 32 and 8 channels, each filter packed [F/f, KH, KW, C, f]
    and read one contiguous channel tile per loop step."""
    graph, feeds = conv_graph("channel_remainder_s2")
    compiled = glow_mlir.compile(graph, keep_ir=True)
    scheduled = compiled.ir("glow-cpu-schedule")
    assert "memref.global \"private\" constant @__glow_packed_conv_1x3x3x24x32" in scheduled
    assert "memref.global \"private\" constant @__glow_packed_conv_1x3x3x24x8" in scheduled
    expected = glow_mlir.interpret(graph.module, feeds)
    np.testing.assert_allclose(compiled.run(feeds)["y"], expected["y"], rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("case", sorted(POOLS))
def test_pool_every_stage(case: str) -> None:
    _check_stages(*pool_graph(case))


def test_verify_rejects_bad_nhwc_ops() -> None:
    g = glow_mlir.Graph("bad")
    x = g.input("x", (1, 5, 5, 4))
    with pytest.raises(ValueError, match="filter dim 2"):
        g.cpu_conv_nhwc(x, rand(3, 3, 3, 8), rand(8))
    with pytest.raises(ValueError, match="activation 'gelu'"):
        g.cpu_conv_nhwc(x, rand(3, 3, 4, 8), rand(8), activation="gelu")
    with pytest.raises(ValueError, match="clip"):
        g.cpu_conv_nhwc(x, rand(3, 3, 4, 8), rand(8), activation="clip", activation_args=(1.0,))
    with pytest.raises(ValueError, match="float"):
        g.cpu_max_pool_nhwc(g.input("i", (1, 4, 4, 2), "i32"), (2, 2))
    y = g.cpu_conv_nhwc(x, rand(3, 3, 4, 8), rand(8), activation="clip", activation_args=(0.0, 6.0))
    g.output("y", y)
    module = g.module
    conv = next(op for op in ops.walk_ops(module.operation) if op.name == "glow.cpu_conv_nhwc")
    with module.context:
        conv.attributes["activationArgs"] = ops.i64_array([0, 6])
    with pytest.raises(VerificationError, match="activationArgs"):
        run_pipeline(module, "builtin.module(glow-verify)")


def test_layout_pass_keeps_a_network() -> None:
    """An NCHW network (conv, relu, pool, residual add, concat, global average) gives the same result after
    glow-cpu-layout and sinking, whose only transposes are at the input, and compiles to it."""
    g = glow_mlir.Graph("net")
    x = g.input("x", (1, 3, 12, 12))
    a = g.relu(g.convolution(x, rand(8, 3, 3, 3), rand(8), (1, 1), (1, 1, 1, 1)))
    p = g.max_pool(a, (3, 3), (2, 2), (1, 1, 1, 1))
    b = g.relu(g.convolution(p, rand(8, 8, 3, 3), rand(8), (1, 1), (1, 1, 1, 1)))
    s = g.add(b, p)
    c = g.concat([g.convolution(s, rand(4, 8, 1, 1), rand(4)), g.convolution(s, rand(4, 2, 3, 3), rand(4),
                                                                               (1, 1), (1, 1, 1, 1), group=4)], 1)
    mean = g.div(g.batched_reduce_add(c, (2, 3)), np.full((1, 8), 36.0, np.float32))
    g.output("y", mean)
    feeds = {"x": rand(1, 3, 12, 12)}
    module = g.module
    expected = glow_mlir.interpret(module, feeds)["y"]
    moved = ir_copy(module)
    run_pipeline(moved, "builtin.module(glow-cpu-layout,glow-sink-transpose,glow-verify)")
    kinds = collections.Counter(op.name for op in ops.walk_ops(moved.operation))
    assert kinds["glow.cpu_conv_nhwc"] == 4 and kinds["glow.cpu_max_pool_nhwc"] == 1
    assert kinds["glow.convolution"] == 0 and kinds["glow.transpose"] == 1
    np.testing.assert_allclose(glow_mlir.interpret(moved, feeds)["y"], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(glow_mlir.compile(g).run(feeds)["y"], expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize(
    "name",
    [
        "squeezenet1_1",
        pytest.param("mobilenetv2", marks=pytest.mark.slow),
        pytest.param("resnet18", marks=pytest.mark.slow),
        pytest.param("resnet50", marks=pytest.mark.slow),
    ],
)
def test_real_models_keep_only_the_input_transpose(name: str) -> None:
    """After the graph half of the compile pipeline every convolution and pool is NHWC and the only
    transpose left is the input's, at the graph boundary (the flatten's folded into a reshape)."""
    module = importer.import_model(str(torch_models.exported(name))).module
    run_pipeline(module, COMPILE_PIPELINE[: COMPILE_PIPELINE.index("glow-irgen")])
    found = [op for op in ops.walk_ops(module.operation) if op.name.startswith("glow.")]
    kinds = collections.Counter(op.name for op in found)
    assert kinds["glow.convolution"] == kinds["glow.max_pool"] == kinds["glow.avg_pool"] == 0
    assert kinds["glow.cpu_conv_nhwc"] > 0
    transposes = [op for op in found if op.name == "glow.transpose"]
    assert len(transposes) == 1, [str(t) for t in transposes]
    assert isinstance(transposes[0].operands[0].owner, ir.Block)  # a function argument
