"""glow-fuse-activations and the fused ops it makes (glow.fused_convolution, glow.fused_matmul) through every
stage: the pass keeps what the graph computes (interpreter before and after), the fused ops verify, lower
(pads), go through IRGen and codegen (JIT against the interpreter), and the compile report and `glow-run
--stats` show what the pipeline did."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from mlir import ir
from onnx import TensorProto, helper

from glow_mlir import ops, runtime
from glow_mlir.backends.cpu.parallel import with_threads
from glow_mlir.builder import Graph
from glow_mlir.context import copy_module, make_context
from glow_mlir.errors import VerificationError
from glow_mlir.interpreter import interpret
from glow_mlir.pipeline.runner import COMPILE_PIPELINE, run_pipeline, stage_name
from glow_mlir.tools import glow_run

RNG = np.random.default_rng(11)
FUSED = ("glow.fused_convolution", "glow.fused_matmul", "glow.cpu_conv_nhwc")
# The compile pipeline in the graph's own NCHW layout, up to the memory plan: the fused NCHW ops reach codegen.
NCHW_PIPELINE = [p for p in COMPILE_PIPELINE[: COMPILE_PIPELINE.index("glow-allocate") + 1] if p != "glow-cpu-layout"]


def _random(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _run(module: ir.Module, passes: list[str]) -> ir.Module:
    copy = copy_module(module)
    with copy.context:
        run_pipeline(copy, passes)
    return copy


def _activations(module: ir.Module) -> list[tuple[str, str, list[float]]]:
    """(op, activation, args) of every fused op of the module."""
    return [
        (op.name, ir.StringAttr(op.attributes["activation"]).value, list(op.attributes["activationArgs"]))
        for op in ops.walk_ops(module.operation)
        if op.name in FUSED
    ]


def _conv(g: Graph, x: object, channels: int = 4) -> object:
    return g.convolution(x, _random(channels, 4, 3, 3), _random(channels), pads=(1, 1, 1, 1))


def _network() -> tuple[Graph, dict[str, np.ndarray]]:
    """Every activation the pass fuses, written as the importer and glow-lower leave them."""
    g = Graph("net")
    x = g.input("x", (2, 4, 6, 6))
    shape = (2, 4, 6, 6)
    # bias add (a broadcast per-channel constant) + relu
    bias = g.broadcast(_random(4, 1, 1), shape, 1)
    relu = g.relu(g.add(_conv(g, x), bias))
    # ReLU6 as ONNX Clip, HardTanh in the other order
    relu6 = g.min(g.max(_conv(g, relu), g.splat(shape, 0.0)), g.splat(shape, 6.0))
    hardtanh = g.max(g.min(_conv(g, relu6), g.splat(shape, 1.0)), g.splat(shape, -1.0))
    # sigmoid, tanh, LeakyRelu as the importer writes it
    sig = g.sigmoid(_conv(g, hardtanh))
    tanh = g.tanh(_conv(g, sig))
    c = _conv(g, tanh)
    leaky = g.select(g.cmp_lt(c, g.splat(shape, 0.0)), g.mul(c, g.splat(shape, 0.25)), c)
    # a fully connected layer with relu, and one without activation
    flat = g.reshape(leaky, (2, 144))
    fc = g.relu(g.fully_connected(flat, _random(144, 8), _random(8)))
    g.output("y", g.fully_connected(fc, _random(8, 3), _random(3)))
    return g, {"x": _random(2, 4, 6, 6)}


def _assert_close(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    assert got.keys() == want.keys()
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=2e-5, atol=2e-5, err_msg=name)


def test_fusion_keeps_outputs_and_fuses_every_activation() -> None:
    g, feeds = _network()
    lowered = _run(g.module, ["glow-lower", "glow-constant-fold", "glow-verify"])
    fused = _run(lowered, ["glow-fuse-activations", "glow-verify"])
    assert _activations(fused) == [
        ("glow.fused_convolution", "relu", []),
        ("glow.fused_convolution", "clip", [0.0, 6.0]),
        ("glow.fused_convolution", "clip", [-1.0, 1.0]),
        ("glow.fused_convolution", "sigmoid", []),
        ("glow.fused_convolution", "tanh", []),
        ("glow.fused_convolution", "leaky_relu", [0.25]),
        ("glow.fused_matmul", "relu", []),
        ("glow.fused_matmul", "none", []),
    ]
    names = [op.name for op in ops.walk_ops(fused.operation)]
    for gone in ("glow.convolution", "glow.matmul", "glow.batched_add", "glow.max", "glow.min", "glow.select",
                 "glow.sigmoid", "glow.tanh", "glow.add"):
        assert gone not in names
    _assert_close(interpret(fused, feeds), interpret(g.module, feeds))
    # One sweep fuses everything: a second run changes nothing.
    assert str(_run(fused, ["glow-fuse-activations"])) == str(fused)


def test_fused_ops_compile_in_nchw_and_in_the_compile_pipeline() -> None:
    g, feeds = _network()
    want = interpret(g.module, feeds)
    nchw = _run(g.module, NCHW_PIPELINE)
    instructions = [op.name for op in ops.walk_ops(nchw.operation)]
    assert instructions.count("glow_ir.fused_convolution") == 6
    assert instructions.count("glow_ir.fused_matmul") == 2
    with runtime.compile_allocated(nchw) as model:
        _assert_close(model.run(feeds), want)
    with runtime.compile(g) as model:
        _assert_close(model.run(feeds), want)


def test_cpu_conv_nhwc_takes_bias_add_and_activation() -> None:
    """The CPU backend's NHWC convolution is a fusable producer too: bias along its last dim, then leaky_relu."""
    g = Graph("nhwc")
    x = g.input("x", (1, 5, 5, 4))
    conv = g.cpu_conv_nhwc(x, _random(3, 3, 2, 6), _random(6), pads=(1, 1, 1, 1), group=2)
    shape = (1, 5, 5, 6)
    y = g.add(conv, g.broadcast(_random(6), shape, 3))
    g.output("y", g.select(g.cmp_lte(y, g.splat(shape, 0.0)), g.mul(g.splat(shape, 0.5), y), y))
    feeds = {"x": _random(1, 5, 5, 4)}
    fused = _run(g.module, ["glow-lower", "glow-fuse-activations", "glow-verify"])
    assert _activations(fused) == [("glow.cpu_conv_nhwc", "leaky_relu", [0.5])]
    assert "glow.add" not in [op.name for op in ops.walk_ops(fused.operation)]
    want = interpret(g.module, feeds)
    _assert_close(interpret(fused, feeds), want)
    with runtime.compile(g) as model:
        _assert_close(model.run(feeds), want)


@pytest.mark.parametrize("layout", [[], ["glow-cpu-layout", "glow-sink-transpose"]])
def test_layer_scale_folds_into_the_convolution(layout: list[str]) -> None:
    """x + gamma[c] * conv(x) (a layer scale, PoolFormer's and ConvNeXt's): gamma scales the filter's output
    channels and the bias, in NCHW and after the CPU layout (NHWC, filter [KH, KW, C / group, O]); grouped,
    with channel counts that fill no vector."""
    g = Graph("scale")
    x = g.input("x", (1, 6, 5, 7))
    shape = (1, 6, 5, 7)
    conv = g.convolution(x, _random(6, 3, 3, 3), _random(6), pads=(1, 1, 1, 1), group=2)
    scaled = g.mul(g.broadcast(_random(6, 1, 1), shape, 1), conv)
    g.output("y", g.add(x, scaled))
    feeds = {"x": _random(1, 6, 5, 7)}
    fused = _run(g.module, [*layout, "glow-lower", "glow-constant-fold", "glow-fuse-activations", "glow-verify"])
    assert "glow.mul" not in [op.name for op in ops.walk_ops(fused.operation)]
    want = interpret(g.module, feeds)
    _assert_close(interpret(fused, feeds), want)
    with runtime.compile(g) as model:
        _assert_close(model.run(feeds), want)


@pytest.mark.parametrize("layout", [[], ["glow-cpu-layout", "glow-sink-transpose"]])
@pytest.mark.parametrize(("pads", "folds"), [((0, 0, 0, 0), True), ((1, 0, 1, 1), False)])
def test_affine_map_before_an_unpadded_convolution_folds(
    layout: list[str], pads: tuple[int, ...], folds: bool
) -> None:
    """conv(x * k[c] + s[c]) (a normalization's scale and shift): folded into the filter and bias when the
    convolution has no padding (a pad cell would read 0, not s), grouped, strided, channel counts that fill no
    vector; left alone with padding."""
    g = Graph("affine")
    shape = (1, 6, 7, 5)
    x = g.input("x", shape)
    affine = g.add(g.broadcast(_random(6, 1, 1), shape, 1), g.mul(x, g.broadcast(_random(6, 1, 1), shape, 1)))
    g.output("y", g.convolution(affine, _random(4, 3, 3, 2), _random(4), strides=(2, 1), pads=pads, group=2))
    feeds = {"x": _random(*shape)}
    fused = _run(g.module, [*layout, "glow-lower", "glow-constant-fold", "glow-fuse-activations", "glow-verify"])
    names = [op.name for op in ops.walk_ops(fused.operation)]
    assert ("glow.mul" not in names and "glow.add" not in names) == folds
    want = interpret(g.module, feeds)
    _assert_close(interpret(fused, feeds), want)
    with runtime.compile(g) as model:
        _assert_close(model.run(feeds), want)


@pytest.mark.parametrize(
    ("activation", "args"),
    [("none", []), ("relu", []), ("clip", [-0.5, 0.75]), ("sigmoid", []), ("tanh", []), ("leaky_relu", [0.1])],
)
def test_built_fused_ops_lower_pads_and_match_the_interpreter(activation: str, args: list[float]) -> None:
    """Fused ops from the builder, with padding, stride and groups: glow-lower expands the pads as for a
    convolution, and the JIT computes what the interpreter does."""
    g = Graph("fused")
    x = g.input("x", (1, 4, 7, 7))
    conv = g.fused_convolution(x, _random(6, 2, 3, 3), _random(6), strides=(2, 1), pads=(1, 2, 0, 1), group=2,
                               activation=activation, activation_args=args)
    # [1, 6, 3, 8]: H (7 + 1 - 3) // 2 + 1, W 7 + 3 - 3 + 1.
    flat = g.reshape(conv, (3, 48))
    g.output("y", g.fused_matmul(flat, _random(48, 5), _random(5), activation, args))
    feeds = {"x": _random(1, 4, 7, 7)}
    lowered = _run(g.module, ["glow-lower", "glow-verify"])
    conv_ops = [op for op in ops.walk_ops(lowered.operation) if op.name == "glow.fused_convolution"]
    assert [ops.ints(op, "pads") for op in conv_ops] == [[0, 0, 0, 0]]
    assert "glow.insert_tensor" in [op.name for op in ops.walk_ops(lowered.operation)]
    want = interpret(g.module, feeds)
    _assert_close(interpret(lowered, feeds), want)
    with runtime.compile_allocated(_run(g.module, NCHW_PIPELINE)) as model:
        _assert_close(model.run(feeds), want)


@pytest.mark.parametrize(
    ("activation", "args", "rule"),
    [
        ("gelu", [], "activation 'gelu' must be one of"),
        ("clip", [1.0], "activation 'clip' takes 2 activationArgs, got 1"),
        ("leaky_relu", [], "activation 'leaky_relu' takes 1 activationArgs, got 0"),
        ("clip", [2.0, 1.0], "min <= max"),
    ],
)
def test_verify_checks_activation_names_and_arguments(activation: str, args: list[float], rule: str) -> None:
    attrs = f'activation = "{activation}", activationArgs = array<f32{": " if args else ""}{", ".join(map(str, args))}>'
    text = (
        'func.func @f(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {\n'
        f'  %0 = "glow.fused_matmul"(%x, %w, %b) {{{attrs}}} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) '
        '-> tensor<2x4xf32>\n'
        '  return %0 : tensor<2x4xf32>\n}'
    )
    with make_context():
        module = ir.Module.parse(text)
        with pytest.raises(VerificationError, match=rule):
            run_pipeline(module, ["glow-verify"])
    with pytest.raises(ValueError, match=rule):
        Graph("g").fused_matmul(_random(2, 3), _random(3, 4), _random(4), activation, args)


def test_verify_checks_the_fused_matmul_bias() -> None:
    with pytest.raises(ValueError, match=r"bias must have shape \[4\]"):
        Graph("g").fused_matmul(_random(2, 3), _random(3, 4), _random(3))


def _onnx_model(path: str) -> None:
    """Conv -> Relu -> Gemm: a small ONNX model for glow-run."""
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Flatten", ["r"], ["f"]),
        helper.make_node("Gemm", ["f", "fw", "fb"], ["y"]),
    ]
    inits = [
        onnx.numpy_helper.from_array(_random(2, 3, 3, 3), "w"),
        onnx.numpy_helper.from_array(_random(2), "b"),
        onnx.numpy_helper.from_array(_random(32, 4), "fw"),
        onnx.numpy_helper.from_array(_random(4), "fb"),
    ]
    graph = helper.make_graph(
        nodes, "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], inits,
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)


def test_onnx_activations_fuse_as_the_importer_writes_them(tmp_path: object) -> None:
    """Conv followed by each ONNX activation the pass knows (Clip with its bounds as inputs, HardTanh's
    Clip(-1, 1), Clip with a lower bound only), through the importer and the compile pipeline."""
    activations = [
        ("Relu", [], {}),
        ("LeakyRelu", [], {"alpha": 0.2}),
        ("Clip", ["zero", "six"], {}),
        ("Clip", ["minus_one", "one"], {}),
        ("Clip", ["half"], {}),
        ("Sigmoid", [], {}),
        ("Tanh", [], {}),
    ]
    nodes, outputs = [], []
    for i, (kind, bounds, attributes) in enumerate(activations):
        # One filter per Conv: glow-cse would merge equal convolutions into one with many readers.
        nodes.append(helper.make_node("Conv", ["x", f"w{i}", "b"], [f"c{i}"], pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node(kind, [f"c{i}", *bounds], [f"y{i}"], **attributes))
        outputs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [1, 2, 4, 4]))
    scalars = {"zero": 0.0, "six": 6.0, "minus_one": -1.0, "one": 1.0, "half": 0.5}
    inits = [
        *(onnx.numpy_helper.from_array(_random(2, 3, 3, 3), f"w{i}") for i in range(len(activations))),
        onnx.numpy_helper.from_array(_random(2), "b"),
        *(onnx.numpy_helper.from_array(np.array(v, np.float32), k) for k, v in scalars.items()),
    ]
    graph = helper.make_graph(
        nodes, "acts", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])], outputs, inits
    )
    path = str(tmp_path / "acts.onnx")  # type: ignore[operator]
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    from glow_mlir.frontends.onnx.importer import import_model, load

    module = _run(import_model(load(path)).module, list(COMPILE_PIPELINE[: COMPILE_PIPELINE.index("glow-schedule")]))
    found = sorted((kind, args) for _, kind, args in _activations(module))
    assert found == sorted([
        ("relu", []), ("leaky_relu", [pytest.approx(0.2)]), ("clip", [0.0, 6.0]), ("clip", [-1.0, 1.0]),
        ("clip", [0.5, float("inf")]), ("sigmoid", []), ("tanh", []),
    ])
    feeds = {"x": _random(1, 3, 4, 4)}
    import onnxruntime

    from glow_mlir.session import InferenceSession

    expected = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    for want, have in zip(expected, InferenceSession(path).run(None, feeds), strict=True):
        np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-5)


def test_compile_report_and_glow_run_stats(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "small.onnx")  # type: ignore[operator]
    _onnx_model(path)
    from glow_mlir.session import InferenceSession

    report = InferenceSession(path).report
    assert report["arena_bytes"] >= report["peak_live_bytes"] > 0
    assert report["naive_activation_bytes"] >= report["arena_bytes"]
    names = [r["name"] for r in report["passes"]]
    # The session's default thread count (the physical cores) adds glow-cpu-parallelize where it is > 1.
    assert names == [stage_name(e) for e in with_threads(COMPILE_PIPELINE, report["threads"])]
    assert all(r.keys() == {"name", "seconds", "ops_before", "ops_after"} for r in report["passes"])
    fuse = report["passes"][names.index("glow-fuse-activations")]
    # Conv + Relu and Gemm's matmul + batched_add each became one op.
    assert fuse["ops_after"] < fuse["ops_before"]
    assert [r["name"] for r in report["passes"]] == [name for name, _ in report["pass_seconds"]]
    assert glow_run.main([path, "--random-inputs", "--stats"]) == 0
    out = capsys.readouterr().out
    assert f"arena {report['arena_bytes']} bytes, peak live {report['peak_live_bytes']} bytes" in out
    assert "glow-fuse-activations" in out and "ops before" in out
