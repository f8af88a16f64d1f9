"""ONNX RNN, GRU and LSTM (a glow.loop over time): glow-mlir against onnxruntime (onnx's reference
implementation for layout 1, which onnxruntime refuses), and exported torch nn.LSTM / nn.GRU models."""

from __future__ import annotations

import io
import time

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx_check import check, check_node, model, rand

import glow_mlir
from glow_mlir.errors import StaticInputRequired
from glow_mlir.frontends.onnx import import_model

SEQ, BATCH, FEATURES, HIDDEN = 5, 3, 4, 6
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
ORDER = ["x", "w", "r", "b", "lens", "h0", "c0", "p"]


def weights(op: str, directions: int, bias: bool = True, peepholes: bool = False) -> dict[str, np.ndarray | None]:
    g = GATES[op]
    return {
        "w": rand(directions, g * HIDDEN, FEATURES),
        "r": rand(directions, g * HIDDEN, HIDDEN),
        "b": rand(directions, 2 * g * HIDDEN) if bias else None,
        "p": rand(directions, 3 * HIDDEN) if peepholes else None,
    }


def states(op: str, directions: int, layout: int) -> dict[str, np.ndarray]:
    dims = (BATCH, directions, HIDDEN) if layout else (directions, BATCH, HIDDEN)
    found = {"h0": rand(*dims)}
    if op == "LSTM":
        found["c0"] = rand(*dims)
    return found


def run(op: str, attrs: dict[str, object], directions: int, layout: int = 0, lens: np.ndarray | None = None,
        peepholes: bool = False, initial: bool = True, outputs: int = 2, rtol: float = 1e-4) -> None:
    x = rand(BATCH, SEQ, FEATURES) if layout else rand(SEQ, BATCH, FEATURES)
    inputs = {"x": x, **(states(op, directions, layout) if initial else {})}
    consts: dict[str, np.ndarray | None] = {**weights(op, directions, peepholes=peepholes), "lens": lens}
    order = [n for n in ORDER if n in inputs or n in consts]
    # onnxruntime refuses layout 1 (batch first): compare with onnx's reference implementation there.
    check_node(op, inputs, {"hidden_size": HIDDEN, "layout": layout, **attrs}, consts, opset=14,
               outputs=outputs, order=order, rtol=rtol, atol=1e-5, spec=bool(layout))


@pytest.mark.parametrize("layout", [0, 1])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_lstm_all_outputs(direction: str, layout: int) -> None:
    directions = 2 if direction == "bidirectional" else 1
    run("LSTM", {"direction": direction}, directions, layout, peepholes=True, outputs=3)


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("linear_before_reset", [0, 1])
@pytest.mark.parametrize("layout", [0, 1])
def test_gru(direction: str, linear_before_reset: int, layout: int) -> None:
    directions = 2 if direction == "bidirectional" else 1
    run("GRU", {"direction": direction, "linear_before_reset": linear_before_reset}, directions, layout)


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_rnn(direction: str) -> None:
    run("RNN", {"direction": direction}, 2 if direction == "bidirectional" else 1, initial=False)


def test_lstm_input_forget_and_clip() -> None:
    run("LSTM", {"input_forget": 1, "clip": 0.5}, 1, outputs=3)


@pytest.mark.parametrize("op", ["RNN", "GRU"])
def test_clip(op: str) -> None:
    run(op, {"clip": 0.3, "direction": "bidirectional"}, 2)


@pytest.mark.parametrize("op,activations,alpha,beta", [
    ("LSTM", ["HardSigmoid", "LeakyRelu", "Affine"], [0.3, 0.05, 0.7], [0.4, 0.1]),
    ("LSTM", ["Sigmoid", "ScaledTanh", "Softsign", "HardSigmoid", "Elu", "Softplus"], [0.8, 0.25, 0.9],
     [1.5, 0.45]),
    ("GRU", ["ThresholdedRelu", "Relu"], [0.1], []),
    ("RNN", ["Elu"], [0.6], []),
])
def test_alternative_activations(op: str, activations: list[str], alpha: list[float], beta: list[float]) -> None:
    directions = len(activations) // {"RNN": 1, "GRU": 2, "LSTM": 3}[op]
    attrs: dict[str, object] = {"activations": activations, "activation_alpha": alpha,
                                "direction": "bidirectional" if directions == 2 else "forward"}
    if beta:
        attrs["activation_beta"] = beta
    # An unbounded candidate activation (GRU's Relu) lets the state grow step by step (to ~1800 on some draws of
    # the shared RNG, whose state depends on the test order), where float32 sums taken in another order than
    # the reference's differ by up to 3e-4 relative.
    rtol = 1e-3 if "Relu" in activations else 1e-4
    run(op, attrs, directions, outputs=3 if op == "LSTM" else 2, rtol=rtol)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_sequence_lens(op: str) -> None:
    """Entries shorter than seq_length: a zero Y past their end, the reverse direction starting at it."""
    lens = np.array([5, 2, 3], np.int32)
    run(op, {"direction": "bidirectional"}, 2, lens=lens, outputs=3 if op == "LSTM" else 2)


def test_weights_fed_at_run_time() -> None:
    inputs = {"x": rand(SEQ, BATCH, FEATURES), **{k: v for k, v in weights("LSTM", 2).items() if v is not None}}
    node = helper.make_node("LSTM", ["x", "w", "r", "b"], ["y", "y_h", "y_c"], hidden_size=HIDDEN,
                            direction="bidirectional")
    check(model([node], inputs, ["y", "y_h", "y_c"], opset=14), inputs, rtol=1e-4)


def test_run_time_sequence_lens_is_refused() -> None:
    inputs = {"x": rand(SEQ, BATCH, FEATURES), "lens": np.array([5, 2, 3], np.int32)}
    consts = {k: v for k, v in weights("GRU", 1).items() if v is not None}
    node = helper.make_node("GRU", ["x", "w", "r", "b", "lens"], ["y"], hidden_size=HIDDEN, name="gru")
    with pytest.raises(StaticInputRequired, match="gru.*sequence_lens"):
        import_model(model([node], inputs, ["y"], consts, opset=14))


def _long_model(op: str, seq: int) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    consts = {k: v for k, v in weights(op, 2).items() if v is not None}
    outputs = ["y", "y_h", "y_c"][:3 if op == "LSTM" else 2]
    node = helper.make_node(op, ["x", "w", "r", "b"], outputs, hidden_size=HIDDEN, direction="bidirectional")
    inputs = {"x": rand(seq, 1, FEATURES)}
    return model([node], inputs, outputs, consts, opset=14), inputs


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_long_sequence_is_a_loop_in_generated_code(op: str) -> None:
    """seq_length x glow ops per step far above what unrolling took (10,000 glow ops): one loop per
    direction, generated code that does not grow with seq_length, numbers as onnxruntime's."""
    seq = 4032  # 2^6 x 63: a multiple of every row tile of the input projection's matmul (8, 12, 16, 32)
    m, inputs = _long_model(op, seq)
    assert str(import_model(m).module).count('"glow.loop"') == 2
    start = time.perf_counter()
    check(m, inputs, rtol=1e-3, atol=1e-4)
    assert time.perf_counter() - start < 60

    def compiled_ops(m: onnx.ModelProto) -> int:
        with glow_mlir.compile(import_model(m), cache=False) as compiled:
            return compiled.report["passes"][-1]["ops_after"]

    # Twice the sequence, the same code but for the constants of the bounds (the input projection, one matmul
    # over all steps, gets its kernel recipe by shape: both lengths are multiples of its tiles, so neither has a
    # remainder tile, whose size would change the code).
    assert abs(compiled_ops(m) - compiled_ops(_long_model(op, 2 * seq)[0])) <= 4


@pytest.mark.parametrize("cell", ["LSTM", "GRU"])
def test_exported_torch_model(cell: str) -> None:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = getattr(torch.nn, cell)(FEATURES, HIDDEN, num_layers=2, batch_first=True,
                                               bidirectional=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.rnn(x)[0]

    x = rand(BATCH, SEQ, FEATURES)
    buffer = io.BytesIO()
    torch.onnx.export(Net().eval(), (torch.from_numpy(x),), buffer, input_names=["x"], output_names=["y"],
                      opset_version=14, dynamo=False)
    exported = onnx.load_from_string(buffer.getvalue())
    assert cell in {n.op_type for n in exported.graph.node}
    check(exported, {"x": x}, rtol=1e-4)
