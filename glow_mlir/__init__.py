"""glow-mlir: a neural-network compiler in the design of Glow, built on MLIR.

    g = glow_mlir.Graph("mlp"); x = g.input("x", (1, 784), "f32"); g.output("y", g.relu(x))
    model = glow_mlir.compile(g); model.run({"x": array})
    glow_mlir.interpret(g.module, {"x": array})        # the numpy reference interpreter
    sess = glow_mlir.InferenceSession("model.onnx")    # onnxruntime's API: sess.run(None, {"x": array})
    import glow_mlir as ort                            # code written for onnxruntime runs unchanged
    glow_mlir.quantization.quantize(g, glow_mlir.quantization.profile(g, samples))  # int8 (docs/QUANTIZATION.md)
"""

from glow_mlir.builder import Graph, Tensor
from glow_mlir.errors import FeedError, GlowError, PipelineError, UnsupportedError, VerificationError
from glow_mlir.frontends import onnx
from glow_mlir.frontends.onnx import import_model as import_onnx
from glow_mlir.interpreter import evaluate, interpret
from glow_mlir.runtime import CompiledModel, compile
from glow_mlir.options import ExecutionMode, GraphOptimizationLevel, RunOptions, SessionOptions
from glow_mlir.session import InferenceSession, get_available_providers
from glow_mlir.opdefs.shapes import ShapeError
from glow_mlir import quantization

__all__ = [
    "CompiledModel",
    "ExecutionMode",
    "FeedError",
    "GlowError",
    "GraphOptimizationLevel",
    "Graph",
    "InferenceSession",
    "PipelineError",
    "RunOptions",
    "SessionOptions",
    "ShapeError",
    "Tensor",
    "UnsupportedError",
    "VerificationError",
    "compile",
    "evaluate",
    "get_available_providers",
    "import_onnx",
    "interpret",
    "onnx",
    "quantization",
]
