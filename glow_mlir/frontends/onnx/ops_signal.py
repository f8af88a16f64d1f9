"""ONNX DFT, STFT and MelWeightMatrix: a matmul with a constant transform matrix, and a constant.

Shapes are static, so a DFT along an axis of static length N is a linear map of the N x C real numbers of
each signal (C = 1 for a real signal, 2 for real and imaginary parts) to the K x C' numbers of its spectrum.
That map, real-linear in every case the spec has (forward, inverse, onesided, the inverse of a onesided
spectrum, zero-padding or truncation to dft_length), is computed once in numpy as the transform of each
basis vector, with numpy's FFT in float64 as the spec's reference (onnx/reference/ops/op_dft.py) computes it,
and applied as one matmul: the signals are moved to rows [B, N * C] by a transpose and a reshape, times the
[N * C, K * C'] matrix, and moved back. STFT gathers its frames (a static count) into rows the same way and
folds a constant window into the matrix's rows (a run-time window multiplies the frames); a rank-2 STFT signal
is a real one without its component dim, as onnxruntime reads it. MelWeightMatrix
takes only compile-time inputs, so it is a constant, computed as the reference does.

dft_length, axis (opset 20's input), frame_step and frame_length decide shapes: they must be known at compile
time (StaticInputRequired names the graph inputs they depend on). Float16 and bfloat16 are computed in
float32 and rounded once, as the reference computes in float64 and rounds once.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from glow_mlir.errors import UnsupportedTypeError
from glow_mlir.frontends.onnx.node import ONNX_TO_NUMPY, NodeContext, Value, dtype, normalize_axis, rank, shape
from glow_mlir.frontends.onnx.registry import handles

_LOW_PRECISION = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))
_COMPUTED = (np.dtype(np.float32), np.dtype(np.float64))


def _transform(length_in: int, channels: int, length: int, inverse: bool, onesided: bool) -> np.ndarray:
    """The [length_in * channels, K * C'] float64 matrix of the DFT of `length` points, row (n, c) being the
    output for the input whose only nonzero number is component c of sample n (as the reference computes)."""
    basis = np.eye(length_in * channels).reshape(length_in * channels, length_in, channels)
    signal = basis[..., 0] + 1j * basis[..., 1] if channels == 2 else basis[..., 0]
    if inverse and onesided:
        # The inverse of a onesided spectrum: numpy's irfft, a real signal of `length` points.
        out = np.fft.irfft(signal, n=length, axis=1)[..., np.newaxis]
    else:
        spectrum = np.fft.ifft(signal, n=length, axis=1) if inverse else np.fft.fft(signal, n=length, axis=1)
        if onesided and not inverse:
            spectrum = spectrum[:, : length // 2 + 1]
        out = np.stack([spectrum.real, spectrum.imag], axis=-1)
    return out.reshape(length_in * channels, -1)


def _computed_type(ctx: NodeContext, x: Value) -> np.dtype:
    """The type the transform is computed in: x's, or float32 for float16 and bfloat16."""
    if dtype(x) in _LOW_PRECISION:
        return np.dtype(np.float32)
    if dtype(x) not in _COMPUTED:
        raise UnsupportedTypeError(f"node '{ctx.name}' ({ctx.op_type}) input 0", str(dtype(x)))
    return dtype(x)


def _channels(ctx: NodeContext, x: Value, what: str) -> int:
    channels = shape(x)[-1] if rank(x) else 0
    if channels not in (1, 2):
        raise ctx.invalid(f"{what} must end in a dim of 1 (real) or 2 (complex), got shape {list(shape(x))}")
    return channels


def _positive(ctx: NodeContext, value: int, what: str) -> int:
    if value < 1:
        raise ctx.invalid(f"{what} must be positive, got {value}")
    return value


def _scalar(ctx: NodeContext, i: int, what: str) -> int | None:
    """Input `i`, a compile-time integer scalar (a 1-element tensor), None when absent."""
    values = ctx.ints(i, what)
    if values is None:
        return None
    if len(values) != 1:
        raise ctx.invalid(f"{what} must be a scalar, got {len(values)} values")
    return values[0]


@handles("DFT")
def dft(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    if rank(x) < 2:
        raise ctx.invalid(f"input must have rank >= 2, got shape {list(shape(x))}")
    channels = _channels(ctx, x, "input")
    if ctx.opset >= 20:
        axis_value = _scalar(ctx, 2, "axis")
        axis_value = -2 if axis_value is None else axis_value
    else:
        axis_value = int(ctx.attr("axis", 1))
    axis = normalize_axis(axis_value, rank(x), ctx)
    if axis == rank(x) - 1:
        raise ctx.invalid(f"axis {axis_value} is the last dim, which holds the real and imaginary parts")
    inverse, onesided = bool(ctx.attr("inverse", 0)), bool(ctx.attr("onesided", 0))
    if onesided and channels != (2 if inverse else 1):
        # The spec's rule (onnx's shape inference enforces it): rfft takes a real signal, irfft a spectrum.
        raise ctx.invalid(f"onesided {'inverse' if inverse else 'forward'} DFT takes "
                          f"{'complex' if inverse else 'real'} input, got shape {list(shape(x))}")
    n = shape(x)[axis]
    length = _scalar(ctx, 1, "dft_length")
    if length is None:
        # The inverse of a onesided spectrum of n bins is a signal of 2 (n - 1) points by default.
        length = 2 * (n - 1) if inverse and onesided else n
    _positive(ctx, length, "dft_length")

    original = dtype(x)
    x = ctx.convert(x, _computed_type(ctx, x))
    # Move the axis next to the channel dim, so that each signal is one row of n * channels numbers.
    others = [d for d in range(rank(x) - 1) if d != axis]
    moved = ctx.transpose(x, [*others, axis, rank(x) - 1])
    outer = [shape(x)[d] for d in others]
    rows = ctx.reshape(moved, [math.prod(outer), n * channels])
    matrix = _transform(n, channels, length, inverse, onesided)
    out_channels = 1 if inverse and onesided else 2
    bins = matrix.shape[1] // out_channels
    y = ctx.reshape(ctx.g.matmul(rows, matrix.astype(dtype(rows))), [*outer, bins, out_channels])
    # Put the bins back at `axis`: y's dims are [others..., bins, channel].
    back = [0] * rank(x)
    for position, d in enumerate([*others, axis, rank(x) - 1]):
        back[d] = position
    return [ctx.convert(ctx.transpose(y, back), original)]


@handles("STFT")
def stft(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    if rank(x) == 2:
        # [batch, length]: a real signal without its component dim, as PyTorch's TorchScript exporter writes
        # torch.stft and onnxruntime takes it (ONNX's shape inference accepts it too).
        x = ctx.reshape(x, [*shape(x), 1])
    if rank(x) != 3:
        raise ctx.invalid(f"signal must have shape [batch, length, 1 or 2] or [batch, length], got {list(shape(x))}")
    channels = _channels(ctx, x, "signal")
    batch, signal_length = shape(x)[:2]
    step = _scalar(ctx, 1, "frame_step")
    if step is None:
        raise ctx.invalid("input 1 (frame_step) is required")
    _positive(ctx, step, "frame_step")
    window = ctx.optional(2)
    frame_length = _scalar(ctx, 3, "frame_length")
    if window is not None and rank(window) != 1:
        raise ctx.invalid(f"window must have rank 1, got shape {list(shape(window))}")
    if frame_length is None:
        frame_length = shape(window)[0] if window is not None else signal_length
    _positive(ctx, frame_length, "frame_length")
    if window is not None and shape(window)[0] != frame_length:
        raise ctx.invalid(f"window has {shape(window)[0]} points, frame_length is {frame_length}")
    if frame_length > signal_length:
        raise ctx.invalid(f"frame_length {frame_length} exceeds the signal's {signal_length} samples")
    onesided = bool(ctx.attr("onesided", 1))
    if onesided and channels == 2:
        raise ctx.invalid("a complex signal has no onesided spectrum: set onesided=0")
    frames = 1 + (signal_length - frame_length) // step

    original = dtype(x)
    computed = _computed_type(ctx, x)
    x = ctx.convert(x, computed)
    starts = np.arange(frames, dtype=np.int64)[:, np.newaxis] * step
    framed = ctx.g.gather(x, starts + np.arange(frame_length, dtype=np.int64), 1)  # [batch, frames, len, C]
    matrix = _transform(frame_length, channels, frame_length, False, onesided)
    if isinstance(window, np.ndarray):
        # A constant window scales the matrix row of each sample (both components) instead of the frames.
        matrix = matrix * np.repeat(window.astype(np.float64), channels)[:, np.newaxis]
    elif window is not None:
        if dtype(window) != original:
            raise ctx.invalid(f"window has element type {dtype(window)}, signal {original}")
        weights = ctx.reshape(ctx.convert(window, computed), [1, 1, frame_length, 1])
        framed = ctx.g.mul(framed, ctx.broadcast_to(weights, shape(framed)))
    rows = ctx.reshape(framed, [batch * frames, frame_length * channels])
    y = ctx.reshape(ctx.g.matmul(rows, matrix.astype(dtype(rows))), [batch, frames, matrix.shape[1] // 2, 2])
    return [ctx.convert(y, original)]


@handles("MelWeightMatrix")
def mel_weight_matrix(ctx: NodeContext) -> list[Value]:
    names = ("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz")
    arrays = [ctx.const(i, name) for i, name in enumerate(names)]
    for name, a in zip(names, arrays, strict=True):
        if a is None or a.size != 1:
            raise ctx.invalid(f"{name} must be a scalar")
    mel_bins, dft_length, sample_rate = (int(a.reshape(-1)[0]) for a in arrays[:3])
    # The edges keep their element type: the reference computes with them as given (float32 usually).
    lower, upper = (a.reshape(())[()] for a in arrays[3:])
    _positive(ctx, mel_bins, "num_mel_bins")
    _positive(ctx, dft_length, "dft_length")
    _positive(ctx, sample_rate, "sample_rate")
    elem = int(ctx.attr("output_datatype", 1))
    out_type = ONNX_TO_NUMPY.get(elem)
    if out_type is None:
        raise ctx.unsupported("output_datatype", f"element type {elem} has no glow type")
    return [_mel_weights(ctx, mel_bins, dft_length, sample_rate, lower, upper).astype(out_type)]


def _mel_weights(
    ctx: NodeContext, mel_bins: int, dft_length: int, sample_rate: int, lower: np.generic, upper: np.generic
) -> np.ndarray:
    """The [dft_length // 2 + 1, mel_bins] float64 triangles, step for step as the spec's reference
    (onnx/reference/ops/op_mel_weight_matrix.py) computes them, so that bin edges round the same way."""
    spectrogram_bins = dft_length // 2 + 1
    bins = np.arange(0, mel_bins + 2)
    low_mel = 2595 * np.log1p(lower / 700) / np.log(10)
    high_mel = 2595 * np.log1p(upper / 700) / np.log(10)
    mel_step = (high_mel - low_mel) / bins.shape[0]
    hertz = 700 * np.expm1((bins * mel_step + low_mel) / 2595 * np.log(10))
    edges = (((dft_length + 1) * hertz) // sample_rate).astype(int)
    # The triangles write rows edges[0] .. edges[-2] and up to edges[-1] - 1 (the last band's falling side).
    if edges.min() < 0 or max(edges[:-1].max(), edges[-1] - 1) >= spectrogram_bins:
        raise ctx.invalid(
            f"the mel bands from {lower} to {upper} Hz at sample rate {sample_rate} fall outside the "
            f"{spectrogram_bins} bins of a {dft_length}-point DFT"
        )
    out = np.zeros((spectrogram_bins, mel_bins))
    for i in range(mel_bins):
        left, center, right = edges[i : i + 3]
        if center == left:
            out[center, i] = 1
        else:
            for j in range(left, center + 1):
                out[j, i] = (j - left) / (center - left)
        for j in range(center, right):
            out[j, i] = (right - j) / (right - center)
    return out
