"""The native bf16 products (backends/cpu/bf16_recipes.py): matmul and NHWC convolution kernels on bf16
factors with f32 accumulation through avx512_bf16's vdpbf16ps, against numpy computing the same products in
f32, over shapes with remainders in every tiled dim; the instruction in the object code; and bf16 models of
`quantization.convert_to` end to end."""

from __future__ import annotations

import subprocess
from pathlib import Path
from unittest import mock

import ml_dtypes
import numpy as np
import pytest
from mlir import ir

import glow_mlir
from glow_mlir import ops, quantization
from glow_mlir.backends.cpu import bf16_host
from glow_mlir.backends.cpu.bf16_recipes import pack_weights, register_tile
from glow_mlir.context import copy_module, make_context
from glow_mlir.pipeline.runner import COMPILE_PIPELINE, run_pipeline

needs_bf16 = pytest.mark.skipif(not bf16_host.has_avx512_bf16(), reason="the host CPU has no avx512_bf16")
BF16 = ml_dtypes.bfloat16
RNG = np.random.default_rng(14)


def _bf16(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(BF16)


def _type(shape: tuple[int, ...], elt: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{elt}>"


def _module(x: np.ndarray, constants: dict[str, np.ndarray], op: str, out: tuple[int, ...]) -> ir.Module:
    """A glow function y = `op` (generic form, reading %x and the named constants) with x (bf16, or f32 for
    the f32 kernels to compare with) and an f32 result y."""
    ctx = make_context()
    lines = []
    with ctx:
        for name, value in constants.items():
            elt = "bf16" if value.dtype == BF16 else "f32"
            attr = ops.dense_attr(value, ir.RankedTensorType(ir.Type.parse(_type(value.shape, elt))))
            lines.append(f'%{name} = "glow.constant"() {{value = {attr}}} : () -> {_type(value.shape, elt)}')
    y = _type(out, "f32")
    x_type = _type(x.shape, "bf16" if x.dtype == BF16 else "f32")
    text = f"""func.func @k(%x: {x_type} {{glow.name = "x"}}) -> ({y} {{glow.name = "y"}}) {{
  {chr(10).join(lines)}
  %y = {op} -> {y}
  return %y : {y}
}}"""
    return ir.Module.parse(text, ctx)


def _run(module: ir.Module, x: np.ndarray) -> np.ndarray:
    with glow_mlir.compile(module, cache=False) as model:
        return model.run({"x": x})["y"]


def _close(got: np.ndarray, want: np.ndarray, terms: int, magnitude: np.ndarray) -> None:
    """f32 sums of the same exact products in another order: within terms * 2^-24 of the sum of their
    magnitudes (the bound of any f32 summation order)."""
    assert np.all(np.abs(got - want) <= terms * 2.0**-24 * magnitude + 1e-30)


def test_packing_interleaves_pairs_and_pads_with_zeros() -> None:
    w = np.arange(3 * 17, dtype=np.float32).reshape(1, 1, 3, 17).astype(BF16)
    p = pack_weights(w).astype(np.float32)
    assert p.shape == (1, 2, 2, 32)  # one group of the tile's 2 vectors, 2 pairs, 2 vectors of 16 pairs
    assert p[0, 0, 0, :4].tolist() == [0, 17, 1, 18]  # (c0, c1) of channel 0, then of channel 1
    assert p[0, 1, 0, 0] == 34 and p[0, 1, 0, 1] == 0  # the odd channel's pair ends in a zero
    assert p[0, 0, 1, 0] == 16 and not p[0, 0, 1, 2:].any()  # channel 16, then zeros past O


@pytest.mark.parametrize(
    "pixels,channels,tile",
    [(1, 7, (1, 1)), (100, 64, (6, 4)), (5, 1000, (5, 4)), (3136, 32, (12, 2)), (30, 8, (24, 1))],
)
def test_register_tile(pixels: int, channels: int, tile: tuple[int, int]) -> None:
    assert register_tile(pixels, channels) == tile


@needs_bf16
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (5, 40, 24), (13, 33, 17), (30, 96, 70), (64, 768, 64), (7, 3, 200)])
def test_matmul(m: int, k: int, n: int) -> None:
    x, w = _bf16(m, k), _bf16(k, n)
    op = f'"glow.matmul"(%x, %w) : ({_type(x.shape, "bf16")}, {_type(w.shape, "bf16")})'
    got = _run(_module(x, {"w": w}, op, (m, n)), x)
    xf, wf = x.astype(np.float32), w.astype(np.float32)
    _close(got, xf @ wf, k, np.abs(xf) @ np.abs(wf))


def _conv_reference(x: np.ndarray, w: np.ndarray, strides: tuple[int, int], dilation: tuple[int, int]) -> np.ndarray:
    """NHWC x [KH, KW, C, O] w, no padding, in f32 (and the sum of |products| as the second result)."""
    n, h, wd, c = x.shape
    kh, kw, _, o = w.shape
    oh = (h - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    y, mag = np.zeros((n, oh, ow, o), np.float32), np.zeros((n, oh, ow, o), np.float32)
    for i in range(kh):
        for j in range(kw):
            hs, ws = i * dilation[0], j * dilation[1]
            rows = slice(hs, hs + strides[0] * (oh - 1) + 1, strides[0])
            patch = x[:, rows, slice(ws, ws + strides[1] * (ow - 1) + 1, strides[1])]
            y += patch @ w[i, j]
            mag += np.abs(patch) @ np.abs(w[i, j])
    return y, mag


@needs_bf16
@pytest.mark.parametrize(
    "shape,kernel,out,strides,pads,dilation",
    [
        ((1, 5, 9, 16), (1, 1), 20, (1, 1), (0, 0, 0, 0), (1, 1)),  # 1x1, channel tail
        ((2, 6, 11, 3), (3, 3), 40, (1, 1), (1, 1, 1, 1), (1, 1)),  # odd C, padded, N = 2
        ((1, 9, 15, 8), (7, 7), 16, (2, 2), (3, 3, 3, 3), (1, 1)),  # ResNet's stem shape, small
        ((1, 8, 8, 33), (3, 3), 70, (1, 2), (0, 1, 2, 0), (2, 1)),  # strides, dilation, uneven pads
    ],
)
def test_convolution(shape, kernel, out, strides, pads, dilation) -> None:  # type: ignore[no-untyped-def]
    x, w, bias = _bf16(*shape), _bf16(*kernel, shape[3], out), RNG.standard_normal(out).astype(np.float32)
    padded = np.pad(x.astype(np.float32), ((0, 0), (pads[0], pads[2]), (pads[1], pads[3]), (0, 0)))
    want, mag = _conv_reference(padded, w.astype(np.float32), strides, dilation)
    attrs = (
        f'{{kernels = array<i64: {kernel[0]}, {kernel[1]}>, strides = array<i64: {strides[0]}, {strides[1]}>, '
        f'pads = array<i64: {", ".join(map(str, pads))}>, dilation = array<i64: {dilation[0]}, {dilation[1]}>, '
        f'group = 1 : i64, activation = "relu", activationArgs = array<f32>}}'
    )
    op = (f'"glow.cpu_conv_nhwc"(%x, %w, %b) {attrs} : ({_type(x.shape, "bf16")}, {_type(w.shape, "bf16")}, '
          f'{_type(bias.shape, "f32")})')
    got = _run(_module(x, {"w": w, "b": bias}, op, want.shape), x)
    _close(got, np.maximum(want + bias, 0), kernel[0] * kernel[1] * shape[3] + 1, mag + np.abs(bias))


@needs_bf16
def test_vdpbf16ps_is_in_the_object_code(tmp_path: Path) -> None:
    x, w = _bf16(8, 64), _bf16(64, 48)
    op = f'"glow.matmul"(%x, %w) : ({_type(x.shape, "bf16")}, {_type(w.shape, "bf16")})'
    with glow_mlir.compile(_module(x, {"w": w}, op, (8, 48)), cache=False) as model:
        model.save_object(tmp_path / "k.o")
    disassembly = subprocess.run(["objdump", "-d", str(tmp_path / "k.o")], capture_output=True, text=True, check=True)
    assert "vdpbf16ps" in disassembly.stdout


def _cnn() -> glow_mlir.Graph:
    """conv 3x3 on 3 channels (odd C, padded), ReLU, conv 1x1, max pool, and a fully connected layer of 37
    outputs: every native product and remainders in channels and pixels."""
    g = glow_mlir.Graph("cnn")
    x = g.input("x", (2, 3, 12, 13))
    w1, b1 = RNG.standard_normal((20, 3, 3, 3)).astype(np.float32) / 3, RNG.standard_normal(20).astype(np.float32)
    w2 = RNG.standard_normal((24, 20, 1, 1)).astype(np.float32) / 5
    h = g.relu(g.convolution(x, g.constant(w1), g.constant(b1), pads=(1, 1, 1, 1), name="conv1"))
    h = g.convolution(h, g.constant(w2), g.constant(np.zeros(24, np.float32)), name="conv2")
    h = g.reshape(g.max_pool(h, (2, 2), strides=(2, 2)), (2, 24 * 6 * 6))
    w3, b3 = RNG.standard_normal((864, 37)).astype(np.float32) / 30, RNG.standard_normal(37).astype(np.float32)
    g.output("y", g.fully_connected(h, g.constant(w3), g.constant(b3), name="fc"))
    return g


@needs_bf16
def test_a_converted_model_runs_its_products_natively_as_the_interpreter_says() -> None:
    """convert_to(model, "bf16") with the native products forced on: the compiled model matches the
    interpreter on the lowered graph (the oracle: exact products, f32 sums in another order, then the output's
    bf16 rounding, so at most one bf16 step apart) and stays close to the f32 model."""
    g = _cnn()
    half = quantization.convert_to(g, "bf16")
    x = RNG.standard_normal((2, 3, 12, 13)).astype(np.float32)
    with mock.patch.object(bf16_host, "dot_pays", lambda: True):
        lowered = copy_module(half)
        upto = next(i for i, e in enumerate(COMPILE_PIPELINE) if e.startswith("glow-lower")) + 1
        with lowered.context:
            run_pipeline(lowered, "builtin.module(" + ",".join(COMPILE_PIPELINE[:upto]) + ")")
        text = str(lowered)
        # fc's matmul and both convolutions on bf16 factors (the convolutions' bias in f32), with f32 results
        assert '"glow.matmul"(%' in text and "(tensor<2x864xbf16>, tensor<864x37xbf16>) -> tensor<2x37xf32>" in text
        assert text.count("xbf16>, tensor<20xf32>) -> tensor<2x12x13x20xf32>") == 1
        assert text.count("xbf16>, tensor<24xf32>) -> tensor<2x12x13x24xf32>") == 1
        oracle = glow_mlir.interpret(lowered, {"x": x})["y"]
        with glow_mlir.compile(half, cache=False) as model:
            got = model.run({"x": x})["y"]
    assert np.all(np.abs(got - oracle) <= np.abs(oracle) * 2.0**-8)
    assert np.mean(got == oracle) > 0.9
    with glow_mlir.compile(g, cache=False) as model:
        want = model.run({"x": x})["y"]
    assert np.all(got.argmax(axis=-1) == want.argmax(axis=-1))
    assert 10 * np.log10(np.sum(want**2) / np.sum((got - want) ** 2)) > 35


@needs_bf16
def test_a_convolution_writing_into_a_view_runs_natively() -> None:
    """A convolution whose output is the interior of the next op's padded input (a strided view: ResNet's
    stem before its padded max pool) is still the vdpbf16ps kernel."""
    g = glow_mlir.Graph("stem")
    x = g.input("x", (1, 3, 16, 16))
    w = RNG.standard_normal((16, 3, 7, 7)).astype(np.float32) / 10
    h = g.relu(g.convolution(x, g.constant(w), g.constant(np.zeros(16, np.float32)), strides=(2, 2), pads=(3, 3, 3, 3)))
    g.output("y", g.max_pool(h, (3, 3), strides=(2, 2), pads=(1, 1, 1, 1)))
    half = quantization.convert_to(g, "bf16")
    feeds = {"x": RNG.standard_normal((1, 3, 16, 16)).astype(np.float32)}
    with mock.patch.object(bf16_host, "dot_pays", lambda: True):
        with glow_mlir.compile(half, cache=False, keep_ir=True) as model:
            scheduled = model.ir("glow-cpu-schedule")
            got = model.run(feeds)["y"]
    assert "strided<" in scheduled[scheduled.index("call @__glow_bf16_"):].splitlines()[0]
    assert "linalg.conv" not in scheduled
    with glow_mlir.compile(g, cache=False) as model:
        want = model.run(feeds)["y"]
    # bf16 factors (2^-9 relative each) over 147 terms: a few hundredths of the output's scale at most.
    assert np.abs(got - want).max() < 0.03 * np.abs(want).max()


def test_the_host_probe_answers_and_needs_avx512_bf16() -> None:
    """bf16_host.dot_pays times vdpbf16ps against the FMA where the CPU has it (a JIT run), else says no."""
    with mock.patch.object(bf16_host, "has_avx512_bf16", lambda: False):
        assert bf16_host.dot_pays.__wrapped__() is False
    if bf16_host.has_avx512_bf16():
        assert bf16_host.dot_pays.__wrapped__() in (True, False)
