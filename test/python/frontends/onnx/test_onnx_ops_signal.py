"""ONNX DFT, STFT and MelWeightMatrix: glow-mlir against onnxruntime, or the spec's reference implementation
where onnxruntime departs from it (the inverse of a onesided spectrum, complex STFT signals, float16)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from onnx_check import check, check_node, model, rand

from glow_mlir.errors import InvalidNodeError, StaticInputRequired
from glow_mlir.frontends.onnx import import_model

# A DFT of N points sums N products: float32 rounding grows with N, so compare with a margin.
TOL = {"rtol": 1e-4, "atol": 1e-4}


@pytest.mark.parametrize("axis", [0, 1, 2, -2, -3])
@pytest.mark.parametrize("channels", [1, 2], ids=["real", "complex"])
def test_dft_axis_real_and_complex(axis: int, channels: int) -> None:
    check_node("DFT", {"x": rand(3, 5, 6, channels)}, {"axis": axis}, **TOL)


def test_dft_onesided() -> None:
    check_node("DFT", {"x": rand(2, 7, 1)}, {"onesided": 1}, **TOL)
    check_node("DFT", {"x": rand(2, 8, 3, 1)}, {"onesided": 1, "axis": 1}, **TOL)


@pytest.mark.parametrize("channels", [1, 2], ids=["real", "complex"])
def test_dft_inverse(channels: int) -> None:
    check_node("DFT", {"x": rand(2, 9, 3, channels)}, {"inverse": 1}, **TOL)


@pytest.mark.parametrize("length", [None, 7, 12], ids=["default", "odd", "even"])
def test_dft_inverse_of_onesided_spectrum(length: int | None) -> None:
    """irfft: a onesided spectrum of 6 bins to a real signal of dft_length (default 2 * (6 - 1)) points."""
    consts = {"dft_length": None if length is None else np.array(length, np.int64)}
    check_node("DFT", {"x": rand(2, 6, 3, 2)}, {"inverse": 1, "onesided": 1, "axis": 1}, consts,
               order=["x", "dft_length"], spec=True, **TOL)


@pytest.mark.parametrize("length", [4, 8, 13], ids=["truncate", "same", "pad"])
@pytest.mark.parametrize("inverse", [0, 1])
def test_dft_length_pads_or_truncates(length: int, inverse: int) -> None:
    check_node("DFT", {"x": rand(2, 8, 2)}, {"inverse": inverse}, {"dft_length": np.array(length, np.int64)},
               **TOL)


@pytest.mark.parametrize("axis", [0, 1, -2, -3])
def test_dft_opset20_axis_input(axis: int) -> None:
    consts = {"dft_length": None, "axis": np.array(axis, np.int64)}
    check_node("DFT", {"x": rand(4, 5, 6, 1)}, {"onesided": 1}, consts, opset=20, order=["x", "dft_length", "axis"],
               **TOL)


def test_dft_opset20_default_axis_is_second_last() -> None:
    check_node("DFT", {"x": rand(3, 5, 2)}, opset=20, **TOL)


def test_dft_float64() -> None:
    check_node("DFT", {"x": rand(3, 16, 2, dtype=np.float64)}, {"axis": 1}, rtol=1e-10, atol=1e-10)
    check_node("DFT", {"x": rand(3, 16, 1, dtype=np.float64)}, {"axis": 1, "onesided": 1}, rtol=1e-10, atol=1e-10)


def test_dft_float16_in_float32() -> None:
    check_node("DFT", {"x": rand(2, 8, 2, dtype=np.float16)}, {"axis": 1}, spec=True, rtol=1e-2, atol=1e-2)


def test_dft_constant_input_folds() -> None:
    """An initializer input folds to a constant result."""
    x = rand(2, 6, 1)
    node = helper.make_node("DFT", ["x"], ["y"], axis=1, name="dft_node")
    m = model([node], {}, ["y"], {"x": x})
    check(m, {}, **TOL)


def test_dft_runtime_length_needs_a_static_input() -> None:
    node = helper.make_node("DFT", ["x", "n"], ["y"], name="dft_node")
    m = model([node], {"x": rand(2, 8, 1), "n": np.array(8, np.int64)}, ["y"])
    with pytest.raises(StaticInputRequired, match="node 'dft_node'.*dft_length") as e:
        import_model(m)
    assert e.value.inputs == ["n"]


@pytest.mark.parametrize(
    "shape,attrs,message",
    [
        ((2, 8, 3), {}, "must end in a dim of 1 \\(real\\) or 2"),
        ((8, 2), {"axis": 1}, "is the last dim"),
        ((8, 2), {"axis": 3}, "out of range"),
        ((8,), {}, "rank >= 2"),
        ((3, 8, 2), {"onesided": 1}, "onesided forward DFT takes real input"),
        ((3, 8, 1), {"onesided": 1, "inverse": 1}, "onesided inverse DFT takes complex input"),
    ],
)
def test_dft_invalid(shape: tuple[int, ...], attrs: dict[str, int], message: str) -> None:
    node = helper.make_node("DFT", ["x"], ["y"], name="dft_node", **attrs)
    m = model([node], {"x": rand(*shape)}, ["y"])
    with pytest.raises(InvalidNodeError, match=f"node 'dft_node' \\(DFT\\): .*{message}"):
        import_model(m)


def _stft_consts(step: int, window: np.ndarray | None, length: int | None) -> dict[str, np.ndarray | None]:
    return {
        "frame_step": np.array(step, np.int64),
        "window": window,
        "frame_length": None if length is None else np.array(length, np.int64),
    }


@pytest.mark.parametrize("onesided", [0, 1])
@pytest.mark.parametrize("window", [False, True], ids=["no_window", "window"])
def test_stft(window: bool, onesided: int) -> None:
    consts = _stft_consts(4, np.hanning(10).astype(np.float32) if window else None, 10)
    check_node("STFT", {"signal": rand(2, 37, 1)}, {"onesided": onesided}, consts,
               order=["signal", "frame_step", "window", "frame_length"], **TOL)


@pytest.mark.parametrize("window", [False, True], ids=["no_window", "window"])
def test_stft_real_signal_without_component_dim(window: bool) -> None:
    """PyTorch's TorchScript exporter writes torch.stft's signal as [batch, length]; onnxruntime reads that
    as a real signal, so glow-mlir does too (it refused it as not [batch, length, 1 or 2])."""
    consts = _stft_consts(160, np.hanning(512).astype(np.float32) if window else None, 512)
    check_node("STFT", {"signal": rand(2, 1600)}, {}, consts, order=["signal", "frame_step", "window", "frame_length"],
               **TOL)


def test_stft_signal_of_rank_1_is_invalid() -> None:
    node = helper.make_node("STFT", ["signal", "frame_step"], ["y"], name="stft_node")
    m = model([node], {"signal": rand(40)}, ["y"], {"frame_step": np.array(4, np.int64)})
    with pytest.raises(InvalidNodeError, match="node 'stft_node' \\(STFT\\): signal must have shape"):
        import_model(m)


def test_stft_frame_length_from_window() -> None:
    consts = _stft_consts(3, np.hamming(8).astype(np.float32), None)
    check_node("STFT", {"signal": rand(1, 30, 1)}, {}, consts, order=["signal", "frame_step", "window"], **TOL)


def test_stft_runtime_window() -> None:
    """A window fed at run time multiplies the frames instead of folding into the transform."""
    inputs = {"signal": rand(2, 40, 1), "window": rand(16)}
    check_node("STFT", inputs, {}, {"frame_step": np.array(8, np.int64)}, order=["signal", "frame_step", "window"],
               **TOL)


def test_stft_complex_signal() -> None:
    consts = _stft_consts(5, np.hanning(12).astype(np.float32), 12)
    check_node("STFT", {"signal": rand(2, 40, 2)}, {"onesided": 0}, consts,
               order=["signal", "frame_step", "window", "frame_length"], spec=True, **TOL)


def test_stft_float64() -> None:
    consts = _stft_consts(4, np.hanning(16), 16)
    check_node("STFT", {"signal": rand(1, 50, 1, dtype=np.float64)}, {}, consts,
               order=["signal", "frame_step", "window", "frame_length"], rtol=1e-10, atol=1e-10)


def test_stft_window_length_must_match_frame_length() -> None:
    consts = _stft_consts(4, np.hanning(10).astype(np.float32), 12)
    node = helper.make_node("STFT", ["signal", "frame_step", "window", "frame_length"], ["y"], name="stft_node")
    m = model([node], {"signal": rand(1, 40, 1)}, ["y"], {k: v for k, v in consts.items() if v is not None})
    with pytest.raises(InvalidNodeError, match="node 'stft_node' \\(STFT\\): window has 10 points"):
        import_model(m)


def test_stft_complex_signal_is_not_onesided() -> None:
    node = helper.make_node("STFT", ["signal", "frame_step"], ["y"], name="stft_node")
    m = model([node], {"signal": rand(1, 40, 2)}, ["y"], {"frame_step": np.array(4, np.int64)})
    with pytest.raises(InvalidNodeError, match="node 'stft_node' \\(STFT\\): a complex signal"):
        import_model(m)


def _mel_inputs(bins: int, dft: int, rate: int, low: float, high: float) -> dict[str, np.ndarray]:
    return {
        "num_mel_bins": np.array(bins, np.int64),
        "dft_length": np.array(dft, np.int64),
        "sample_rate": np.array(rate, np.int64),
        "lower_edge_hertz": np.array(low, np.float32),
        "upper_edge_hertz": np.array(high, np.float32),
    }


@pytest.mark.parametrize(
    "args", [(8, 16, 8192, 0.0, 4096.0), (20, 512, 16000, 20.0, 8000.0), (10, 64, 22050, 300.0, 5000.0)]
)
def test_mel_weight_matrix(args: tuple[int, int, int, float, float]) -> None:
    check_node("MelWeightMatrix", {}, {}, _mel_inputs(*args), spec=True)


def test_mel_weight_matrix_float64() -> None:
    check_node("MelWeightMatrix", {}, {"output_datatype": 11}, _mel_inputs(10, 128, 16000, 0.0, 8000.0), spec=True)


def test_mel_weight_matrix_runtime_inputs_need_binding() -> None:
    inputs = _mel_inputs(8, 16, 8192, 0.0, 4096.0)
    node = helper.make_node("MelWeightMatrix", list(inputs), ["y"], name="mel_node")
    with pytest.raises(StaticInputRequired, match="node 'mel_node'"):
        import_model(model([node], inputs, ["y"]))
    check(model([node], inputs, ["y"]), inputs, static_inputs=inputs, spec=True)


def test_mel_weight_matrix_bands_beyond_the_spectrum() -> None:
    inputs = _mel_inputs(8, 16, 8000, 0.0, 16000.0)
    node = helper.make_node("MelWeightMatrix", list(inputs), ["y"], name="mel_node")
    with pytest.raises(InvalidNodeError, match="node 'mel_node' \\(MelWeightMatrix\\): the mel bands"):
        import_model(model([node], {}, ["y"], inputs))
