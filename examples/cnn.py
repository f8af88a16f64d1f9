"""The bundled example (`make run`): a small CNN built with the graph builder, compiled and run on the CPU.

Builds a LeNet-style network (conv-BN-ReLU-pool twice, two fully connected layers, softmax) with fixed random
weights, compiles it through the whole pipeline, runs it, checks it against the reference interpreter, and
prints the outputs, the compile report and the per-inference latency.
"""

from __future__ import annotations

import time

import numpy as np

import glow_mlir


def build_cnn(seed: int = 0) -> glow_mlir.Graph:
    rng = np.random.default_rng(seed)

    def weights(*shape: int) -> np.ndarray:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)

    def bn(g: glow_mlir.Graph, x: glow_mlir.Tensor, c: int, name: str) -> glow_mlir.Tensor:
        return g.batch_normalization(
            x,
            scale=(1 + 0.1 * rng.standard_normal(c)).astype(np.float32),
            bias=(0.1 * rng.standard_normal(c)).astype(np.float32),
            mean=(0.1 * rng.standard_normal(c)).astype(np.float32),
            var=rng.uniform(0.5, 1.5, c).astype(np.float32),
            name=name,
        )

    g = glow_mlir.Graph("small_cnn")
    x = g.input("image", (1, 1, 28, 28), "f32")
    h = g.convolution(x, weights(8, 1, 3, 3), np.zeros(8, np.float32), pads=(1, 1, 1, 1), name="conv1")
    h = g.max_pool(g.relu(bn(g, h, 8, "bn1"), name="relu1"), kernels=(2, 2), name="pool1")
    h = g.convolution(h, weights(16, 8, 3, 3), weights(16), pads=(1, 1, 1, 1), name="conv2")
    h = g.max_pool(g.relu(bn(g, h, 16, "bn2"), name="relu2"), kernels=(2, 2), name="pool2")
    h = g.reshape(h, (1, 16 * 7 * 7), name="flatten")
    h = g.relu(g.fully_connected(h, weights(16 * 7 * 7, 64), weights(64), name="fc1"), name="relu3")
    h = g.fully_connected(h, weights(64, 10), weights(10), name="fc2")
    g.output("probabilities", g.softmax(h, name="softmax"))
    return g


def main() -> None:
    graph = build_cnn()
    model = glow_mlir.compile(graph)
    image = np.random.default_rng(1).standard_normal((1, 1, 28, 28)).astype(np.float32)

    probabilities = model.run({"image": image})["probabilities"]
    expected = glow_mlir.interpret(graph.module, {"image": image})["probabilities"]
    max_diff = float(np.abs(probabilities - expected).max())

    latencies = []
    for _ in range(200):
        start = time.perf_counter()
        model.run({"image": image})
        latencies.append(time.perf_counter() - start)

    np.set_printoptions(precision=4, suppress=True)
    print(f"probabilities: {probabilities[0]}")
    print(f"predicted class: {int(probabilities.argmax())}")
    print(f"max |JIT - interpreter|: {max_diff:.2e}")
    print(f"compile time: {model.report['compile_seconds']:.3f} s")
    print(f"activation arena: {model.report['arena_bytes']} bytes")
    print(f"latency: median {np.median(latencies) * 1e6:.1f} us over {len(latencies)} runs")
    if max_diff > 1e-5:
        raise SystemExit(f"JIT output differs from the interpreter by {max_diff}")


if __name__ == "__main__":
    main()
