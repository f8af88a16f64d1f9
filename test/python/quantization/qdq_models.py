"""Helper of the int8 kernel tests: onnxruntime's quantize_static QDQ model of a small PyTorch network, as users
would make it (per-channel int8 weights by default), and the quantization step of its output."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch


def quantize_static(module: torch.nn.Module, shape: tuple[int, ...], folder: Path, rng: np.random.Generator,
                    activations: str = "QUInt8", calibration: int = 8, weights: str = "QInt8",
                    per_channel: bool = True) -> tuple[str, float]:  # fmt: skip
    """(path, step): `module` exported (input "x" of `shape`, output "y") and quantized by onnxruntime's
    quantize_static into a QDQ model with `activations` and `weights` ("QUInt8" or "QInt8"), calibrated on
    `calibration` standard-normal inputs from `rng`; step is the scale of the output's last QuantizeLinear."""
    import onnx
    import onnxruntime.quantization as oq

    source, quantized = str(folder / "net.onnx"), str(folder / "net.qdq.onnx")
    torch.onnx.export(module.eval(), (torch.randn(*shape),), source, input_names=["x"], output_names=["y"],
                      dynamo=False, opset_version=17)  # fmt: skip

    class Reader(oq.CalibrationDataReader):
        def __init__(self) -> None:
            self.feeds = iter([{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(calibration)])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.feeds, None)

    oq.quantize_static(source, quantized, Reader(), quant_format=oq.QuantFormat.QDQ, per_channel=per_channel,
                       activation_type=getattr(oq.QuantType, activations),
                       weight_type=getattr(oq.QuantType, weights))  # fmt: skip
    model = onnx.load(quantized)
    [last] = [n for n in model.graph.node if "y" in n.output]
    step = float(next(onnx.numpy_helper.to_array(i) for i in model.graph.initializer if i.name == last.input[1]))
    return quantized, step
