"""A pool's start value (the fill of its output: -inf for a max pool, 0 for a sum) is fused into the pool's
kernel (pool_recipes.py: `_pool_recipe`, `mark_pool_starts`, `_start_in_registers`): each output tile's window
loop starts from the constant in registers, and no kernel of its own fills the output first. Numbers against
onnxruntime."""

from __future__ import annotations

import re

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import glow_mlir
from glow_mlir.frontends.onnx import import_model
from onnx_check import IR_VERSION

rng = np.random.default_rng(5)


def _model(n: int, c: int, hw: int, layers: list[tuple[int, int, int]], pool: str | None = None) -> onnx.ModelProto:
    """x [n, c, hw, hw] through convolutions (filters, window, stride; 'same' pads, bias, ReLU), then an
    optional "max" (3x3, stride 2, pad 1) or "avg" (2x2, stride 2) pool."""
    nodes, inits, x = [], [], "x"
    for i, (f, k, stride) in enumerate(layers):
        inits += [numpy_helper.from_array((rng.standard_normal((f, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32), f"w{i}"),
                  numpy_helper.from_array(rng.uniform(-0.5, 0.5, f).astype(np.float32), f"b{i}")]
        nodes += [helper.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"c{i}"], kernel_shape=[k, k], strides=[stride] * 2,
                                   pads=[k // 2] * 4),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"])]
        x, c = f"r{i}", f
    if pool == "max":
        nodes.append(helper.make_node("MaxPool", [x], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4))
        x = "p"
    elif pool == "avg":
        nodes.append(helper.make_node("AveragePool", [x], ["p"], kernel_shape=[2, 2], strides=[2, 2]))
        x = "p"
    graph = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, inits[0].dims[1] if inits else c, hw, hw])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = IR_VERSION
    return model


def _run(model: onnx.ModelProto, stage: str = "glow-cpu-schedule") -> str:
    """Compiles `model`, checks its output against onnxruntime's, and returns the IR after `stage`."""
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    x = rng.standard_normal(shape).astype(np.float32)
    with glow_mlir.compile(import_model(model), keep_ir=True, cache=False) as compiled:
        [got] = compiled.run({"x": x}).values()
        text = compiled.ir(stage)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got, session.run(None, {"x": x})[0], rtol=1e-4, atol=1e-4)
    return text


@pytest.mark.parametrize(
    "n,c,hw,pool",
    [(1, 64, 16, "max"), (2, 24, 13, "max"), (1, 40, 9, "max"), (2, 48, 8, "avg"), (1, 20, 6, "avg")],
)
def test_pool_start_fused_into_the_pool(n: int, c: int, hw: int, pool: str) -> None:
    """Batch 2, channels that are no multiple of 16, odd maps (13: the last window reads padding only on one
    side), max and average pools: no fill kernel of its own is left for the pool's output."""
    scheduled = _run(_model(n, c, hw, [(c, 3, 1)], pool))
    out = [n, -(-hw // 2), -(-hw // 2), c] if pool == "max" else [n, hw // 2, hw // 2, c]
    y = re.escape(f"memref<{'x'.join(map(str, out))}xf32>")
    start = re.escape("dense<0xFF800000>" if pool == "max" else "dense<0.000000e+00>")
    # The pool's kernel reads its input and window and writes its output, each tile's window loop starting
    # from `start` (not from the output, read back)...
    [pool] = re.findall(rf"func\.func private @__glow_kernel\d+\(%arg0: [^)]*, %arg2: {y}\) {{.*?\n  }}", scheduled, re.S)
    [constant] = re.findall(rf"(%cst\w*) = arith\.constant {start}", pool)
    assert re.search(rf"iter_args\(%\w+ = {constant}\)", pool) and "vector.transfer_read %arg2" not in pool
    # ...and no kernel of the output alone (the average pool's division is one) stores `start` into it.
    assert not re.search(rf"func\.func private @__glow_kernel\d+\(%arg0: {y}\) {{[^\n]*\n[^\n]*{start}", scheduled)
