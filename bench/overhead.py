"""run()'s overhead over the generated code: `python -m bench.overhead`.

Times a one-input, one-output model (relu of 4 floats) through `CompiledModel.run` and through a raw ctypes
call of the same entry point with the same descriptors, best of 5 batches each, and prints the difference;
then the same model as ONNX through `InferenceSession.run` and onnxruntime's (one thread), whose call costs
are what a user of the drop-in API pays per run (and a model run in stages pays per stage).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence

import numpy as np
import onnxruntime
from onnx import TensorProto, helper

import glow_mlir


def best(call: Callable[[], object], count: int = 20000, batches: int = 5) -> float:
    """The fastest batch's seconds per call."""
    times = []
    for _ in range(batches):
        start = time.perf_counter()
        for _ in range(count):
            call()
        times.append((time.perf_counter() - start) / count)
    return min(times)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000, help="calls per timed batch")
    args = parser.parse_args(argv)
    g = glow_mlir.Graph("tiny")
    g.output("y", g.relu(g.input("x", (4,))))
    with glow_mlir.compile(g, cache=False) as model:
        feeds = {"x": np.ones(4, np.float32)}
        # Points the descriptors at buffers for the raw calls: its outputs are kept alive while they write them.
        outputs = model.run(feeds)
        raw, packed = model._function, model._packed
        assert raw is not None
        raw_seconds = best(lambda: raw(packed), args.calls)
        del raw, outputs
        run_seconds = best(lambda: model.run(feeds), args.calls)
    overhead = (run_seconds - raw_seconds) * 1e6
    print(f"raw call {raw_seconds * 1e6:.2f} us, run() {run_seconds * 1e6:.2f} us, overhead {overhead:.2f} us")
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "tiny",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])  # fmt: skip
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    ort = onnxruntime.InferenceSession(onnx_model, options, providers=["CPUExecutionProvider"])
    session = glow_mlir.InferenceSession(onnx_model, threads=1)
    session_seconds = best(lambda: session.run(None, feeds), args.calls)
    ort_seconds = best(lambda: ort.run(None, feeds), args.calls)
    print(f"InferenceSession.run() {session_seconds * 1e6:.2f} us, onnxruntime's {ort_seconds * 1e6:.2f} us")


if __name__ == "__main__":
    main()
