"""The runtime's contract: input checks before any generated code runs, the ABI, the arena, the report."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from types import SimpleNamespace

import numpy as np
import pytest
from mlir import ir

import glow_mlir
from glow_mlir.context import make_context
from glow_mlir.errors import UnsupportedError
from glow_mlir import library
from glow_mlir.library import ALIGNED_OUTPUT_BYTES
from glow_mlir.runtime import ARENA_ALIGNMENT, CompiledModel, compile, compile_allocated, read_abi

# y = x * s + b, through an arena intermediate; s is a second input, so there are two to get wrong.
MODEL = """
memref.global "private" constant @b : memref<2x3xf32> = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]>
func.func @affine(%x: memref<2x3xf32> {glow.name = "x"}, %s: memref<2x3xf32> {glow.name = "scale"},
                  %y: memref<2x3xf32> {glow.name = "y", glow.output}, %arena: memref<64xi8> {glow.arena})
    attributes {glow.arena_bytes = 64 : i64, glow.peak_live_bytes = 24 : i64} {
  %c0 = arith.constant 0 : index
  %t = memref.view %arena[%c0][] : memref<64xi8> to memref<2x3xf32>
  %b = memref.get_global @b : memref<2x3xf32>
  "glow_ir.element_mul"(%t, %x, %s) {roles = ["out", "in", "in"]}
      : (memref<2x3xf32>, memref<2x3xf32>, memref<2x3xf32>) -> ()
  "glow_ir.element_add"(%y, %t, %b) {roles = ["out", "in", "in"]}
      : (memref<2x3xf32>, memref<2x3xf32>, memref<2x3xf32>) -> ()
  return
}
"""
BIAS = np.array([[1, 2, 3], [4, 5, 6]], np.float32)


@pytest.fixture(scope="module")
def model() -> Iterator[CompiledModel]:
    compiled = compile_allocated(ir.Module.parse(MODEL, context=make_context()), keep_ir=True)
    yield compiled
    compiled.close()


def feeds() -> dict[str, np.ndarray]:
    return {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "scale": np.full((2, 3), 2.0, np.float32)}


def test_runs_and_reuses_the_arena(model: CompiledModel) -> None:
    for k in range(3):
        inputs = feeds()
        inputs["scale"] *= k
        out = model.run(inputs)
        assert list(out) == ["y"]
        np.testing.assert_array_equal(out["y"], inputs["x"] * k * 2.0 + BIAS)


def test_outputs_are_fresh_arrays(model: CompiledModel) -> None:
    first = model.run(feeds())["y"]
    second = model.run(feeds())["y"]
    assert first is not second and not np.shares_memory(first, second)


def test_missing_input(model: CompiledModel) -> None:
    inputs = feeds()
    del inputs["scale"]
    with pytest.raises(ValueError, match=r"input 'scale': expected float32\[2, 3\], got no array"):
        model.run(inputs)


def test_extra_input(model: CompiledModel) -> None:
    inputs = feeds()
    inputs["bias"] = np.zeros(4, np.float32)
    expected = r"input 'bias': expected no such input .*'x' float32\[2, 3\].*got float32\[4\]"
    with pytest.raises(ValueError, match=expected):
        model.run(inputs)


def test_wrong_shape(model: CompiledModel) -> None:
    inputs = feeds()
    inputs["x"] = np.zeros((3, 2), np.float32)
    with pytest.raises(ValueError, match=r"input 'x': expected float32\[2, 3\], got float32\[3, 2\]"):
        model.run(inputs)


def test_wrong_rank(model: CompiledModel) -> None:
    inputs = feeds()
    inputs["x"] = np.zeros(6, np.float32)
    with pytest.raises(ValueError, match=r"input 'x': expected float32\[2, 3\], got float32\[6\]"):
        model.run(inputs)


def test_wrong_dtype(model: CompiledModel) -> None:
    inputs = feeds()
    inputs["scale"] = inputs["scale"].astype(np.float64)
    with pytest.raises(ValueError, match=r"input 'scale': expected float32\[2, 3\], got float64\[2, 3\]"):
        model.run(inputs)


def test_python_lists_are_checked_like_arrays(model: CompiledModel) -> None:
    inputs = feeds()
    inputs["x"] = [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]  # type: ignore[assignment]
    with pytest.raises(ValueError, match=r"input 'x': expected float32\[2, 3\], got float64\[2, 3\]"):
        model.run(inputs)


def test_non_contiguous_inputs(model: CompiledModel) -> None:
    inputs = feeds()
    big = np.arange(24, dtype=np.float32).reshape(4, 6)
    inputs["x"] = big[::2, ::2]
    assert not inputs["x"].flags.c_contiguous
    np.testing.assert_array_equal(model.run(inputs)["y"], big[::2, ::2] * 2.0 + BIAS)
    fortran = np.asfortranarray(feeds()["x"])
    inputs["x"] = fortran
    np.testing.assert_array_equal(model.run(inputs)["y"], fortran * 2.0 + BIAS)


def test_abi(model: CompiledModel) -> None:
    assert model.abi.function == "affine"
    assert [(b.name, b.shape, b.dtype) for b in model.abi.inputs] == [
        ("x", (2, 3), np.dtype(np.float32)),
        ("scale", (2, 3), np.dtype(np.float32)),
    ]
    assert [b.name for b in model.abi.outputs] == ["y"]
    assert list(model.inputs) == ["x", "scale"] and list(model.outputs) == ["y"]


def test_report(model: CompiledModel) -> None:
    assert model.report["arena_bytes"] == 64
    assert model.report["peak_live_bytes"] == 24
    assert "naive_activation_bytes" not in model.report
    assert model.report["compile_seconds"] > 0
    assert [name for name, _ in model.report["pass_seconds"]] == [
        "glow-ir-to-linalg", "glow-cpu-schedule", "glow-cpu-external-weights", "glow-to-llvm"
    ]


def test_arena_is_aligned(model: CompiledModel) -> None:
    assert model._arena.ctypes.data % ARENA_ALIGNMENT == 0
    assert model._arena.nbytes == 64


def test_large_outputs_are_aligned_as_the_arena() -> None:
    """Outputs of ALIGNED_OUTPUT_BYTES or more start at an ARENA_ALIGNMENT boundary, so that their kernels'
    vector stores do not span cache lines; smaller ones are plain new arrays."""
    sizes = {"small": 16, "large": ALIGNED_OUTPUT_BYTES // 4 + 3}
    g = glow_mlir.Graph("relus")
    for name, size in sizes.items():
        g.output(f"{name}_y", g.relu(g.input(name, (size,))))
    with glow_mlir.compile(g) as model:
        previous = None
        for _ in range(3):
            feeds = {name: np.linspace(-1, 1, size, dtype=np.float32) for name, size in sizes.items()}
            out = model.run(feeds)
            assert out["large_y"].ctypes.data % ARENA_ALIGNMENT == 0
            for name, size in sizes.items():
                y = out[f"{name}_y"]
                assert y.shape == (size,) and y.flags.c_contiguous and y.flags.writeable
                np.testing.assert_array_equal(y, np.maximum(feeds[name], 0))
            if previous is not None:
                assert not np.shares_memory(out["large_y"], previous)
            previous = out["large_y"]


def test_kept_ir(model: CompiledModel) -> None:
    assert "linalg.generic" in model.ir("glow-ir-to-linalg")
    assert "llvm.func @_mlir_ciface_affine" in model.ir("glow-to-llvm")
    with pytest.raises(KeyError, match="glow-lower"):
        model.ir("glow-lower")


def test_closed_model_refuses_to_run() -> None:
    with compile_allocated(ir.Module.parse(MODEL, context=make_context())) as compiled:
        compiled.run(feeds())
    with pytest.raises(RuntimeError, match="closed"):
        compiled.run(feeds())


def test_abi_needs_an_allocated_function() -> None:
    text = MODEL.replace(", glow.peak_live_bytes = 24 : i64", "").replace("glow.arena_bytes = 64 : i64", "")
    with pytest.raises(UnsupportedError, match="glow.arena_bytes"):
        read_abi(ir.Module.parse(text.replace("attributes {}", ""), context=make_context()))
    with pytest.raises(UnsupportedError, match="glow.arena argument"):
        read_abi(ir.Module.parse(MODEL.replace("{glow.arena}", ""), context=make_context()))


def test_no_abort_at_exit_with_live_models() -> None:
    # A context that still holds a JIT at interpreter exit used to abort Python; models close at exit.
    script = textwrap.dedent(
        f"""
        import numpy as np
        from mlir import ir
        from glow_mlir.context import make_context
        from glow_mlir.runtime import compile_allocated
        models = [compile_allocated(ir.Module.parse({MODEL!r}, context=make_context())) for _ in range(2)]
        print(models[0].run({{"x": np.ones((2, 3), np.float32), "scale": np.ones((2, 3), np.float32)}})["y"].sum())
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "27.0"


GLOW_MODEL = """
func.func @net(%x: tensor<2x3xf32> {glow.name = "x"}) -> (tensor<2x3xf32> {glow.name = "y"}) {
  %0 = "glow.tanh"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = "glow.exp"(%0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}
"""


@pytest.mark.parametrize("wrap", [False, True])
def test_compile_a_glow_module_leaves_it_untouched(wrap: bool) -> None:
    source = ir.Module.parse(GLOW_MODEL, context=make_context())
    before = str(source)
    # A Graph hands over its module through `.module`; a plain ir.Module works as it is.
    with compile(SimpleNamespace(module=source) if wrap else source, keep_ir=True) as compiled:
        x = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
        np.testing.assert_allclose(compiled.run({"x": x})["y"], np.exp(np.tanh(x)), rtol=1e-6)
        assert {"arena_bytes", "peak_live_bytes", "naive_activation_bytes", "compile_seconds"} <= set(compiled.report)
        assert "glow_ir.tanh" in compiled.ir("glow-allocate")
    assert str(source) == before


# Inputs and outputs of three non-f32 element types, and a bool buffer in the arena.
TYPED_MODEL = """
func.func @typed(%m: memref<2x3xi1> {glow.name = "mask"}, %k: memref<2x3xi64> {glow.name = "k"},
                 %h: memref<2x3xf16> {glow.name = "h"},
                 %nm: memref<2x3xi1> {glow.name = "not_mask", glow.output},
                 %kk: memref<2x3xi64> {glow.name = "k2", glow.output},
                 %hh: memref<2x3xf16> {glow.name = "h2", glow.output},
                 %arena: memref<64xi8> {glow.arena}) attributes {glow.arena_bytes = 64 : i64} {
  %c0 = arith.constant 0 : index
  %t = memref.view %arena[%c0][] : memref<64xi8> to memref<2x3xi1>
  "glow_ir.element_not"(%t, %m) {roles = ["out", "in"]} : (memref<2x3xi1>, memref<2x3xi1>) -> ()
  "glow_ir.copy"(%nm, %t) {roles = ["out", "in"]} : (memref<2x3xi1>, memref<2x3xi1>) -> ()
  "glow_ir.element_add"(%kk, %k, %k) {roles = ["out", "in", "in"]} : (memref<2x3xi64>, memref<2x3xi64>, memref<2x3xi64>) -> ()
  "glow_ir.element_mul"(%hh, %h, %h) {roles = ["out", "in", "in"]} : (memref<2x3xf16>, memref<2x3xf16>, memref<2x3xf16>) -> ()
  return
}
"""


@pytest.fixture(scope="module")
def typed() -> Iterator[CompiledModel]:
    compiled = compile_allocated(ir.Module.parse(TYPED_MODEL, context=make_context()))
    yield compiled
    compiled.close()


def typed_feeds() -> dict[str, np.ndarray]:
    return {
        "mask": np.array([[True, False, True], [False, False, True]]),
        "k": np.array([[1, -2, 3], [2**40, -(2**40), 0]], np.int64),
        "h": np.array([[0.5, -1.5, 2.0], [3.0, 0.25, -8.0]], np.float16),
    }


def test_bool_int64_and_float16_buffers(typed: CompiledModel) -> None:
    assert [(b.name, b.dtype) for b in typed.abi.inputs] == [
        ("mask", np.dtype(np.bool_)),
        ("k", np.dtype(np.int64)),
        ("h", np.dtype(np.float16)),
    ]
    inputs = typed_feeds()
    out = typed.run(inputs)
    assert {name: a.dtype for name, a in out.items()} == {
        "not_mask": np.dtype(np.bool_), "k2": np.dtype(np.int64), "h2": np.dtype(np.float16)
    }  # fmt: skip
    np.testing.assert_array_equal(out["not_mask"], ~inputs["mask"])
    np.testing.assert_array_equal(out["k2"], inputs["k"] * 2)
    np.testing.assert_array_equal(out["h2"], inputs["h"] * inputs["h"])


@pytest.mark.parametrize(
    "name,given,message",
    [
        ("mask", np.zeros((2, 3), np.uint8), r"input 'mask': expected bool\[2, 3\], got uint8\[2, 3\]"),
        ("mask", np.zeros((2, 3), np.float32), r"input 'mask': expected bool\[2, 3\], got float32\[2, 3\]"),
        ("k", np.zeros((2, 3), np.int32), r"input 'k': expected int64\[2, 3\], got int32\[2, 3\]"),
        ("h", np.zeros((2, 3), np.float32), r"input 'h': expected float16\[2, 3\], got float32\[2, 3\]"),
        ("h", [[0.0] * 3] * 2, r"input 'h': expected float16\[2, 3\], got float64\[2, 3\]"),
    ],
)
def test_wrong_dtypes_name_the_types(typed: CompiledModel, name: str, given: object, message: str) -> None:
    inputs = typed_feeds()
    inputs[name] = given  # type: ignore[assignment]
    with pytest.raises(ValueError, match=message):
        typed.run(inputs)


def test_abi_rejects_element_types_without_a_numpy_dtype() -> None:
    text = """
    func.func @f(%x: memref<2xtf32> {glow.name = "x"}, %y: memref<2xtf32> {glow.name = "y", glow.output},
                 %arena: memref<0xi8> {glow.arena}) attributes {glow.arena_bytes = 0 : i64} {
      return
    }
    """
    with pytest.raises(UnsupportedError, match="tf32"):
        read_abi(ir.Module.parse(text, context=make_context()))


# y = t + x where nothing writes the arena buffer t first, and z is an output nothing writes: the two garbage
# reads GLOW_MLIR_POISON is there to show (glow_mlir/library.py).
GARBAGE = """
func.func @garbage(%x: memref<4xf32> {glow.name = "x"}, %y: memref<4xf32> {glow.name = "y", glow.output},
                   %z: memref<3xi32> {glow.name = "z", glow.output}, %arena: memref<64xi8> {glow.arena})
    attributes {glow.arena_bytes = 64 : i64, glow.peak_live_bytes = 16 : i64} {
  %c0 = arith.constant 0 : index
  %t = memref.view %arena[%c0][] : memref<64xi8> to memref<4xf32>
  "glow_ir.element_add"(%y, %t, %x) {roles = ["out", "in", "in"]}
      : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  return
}
"""


def test_poison_shows_reads_of_unwritten_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.arange(4, dtype=np.float32)
    with compile_allocated(ir.Module.parse(GARBAGE, context=make_context())) as compiled:
        for byte in (0x00, 0x40, 0xFF):
            monkeypatch.setattr(library, "POISON", byte)
            for _ in range(2):
                out = compiled.run({"x": x})
                pattern = np.full(4, byte, np.uint8)
                np.testing.assert_array_equal(out["y"], pattern.view(np.float32) + x)
                np.testing.assert_array_equal(out["z"], pattern[:3].repeat(4).view(np.int32))
        assert np.isnan(out["y"]).all()
        monkeypatch.setattr(library, "POISON", None)
        compiled._arena[:] = 7
        np.testing.assert_array_equal(compiled.run({"x": x})["y"], np.full(4, 7, np.uint8).view(np.float32) + x)


@pytest.mark.parametrize("text,byte", [(None, None), ("", None), ("0", 0), ("255", 255), ("0xff", 255), ("0x40", 64)])
def test_poison_byte(text: str | None, byte: int | None) -> None:
    assert library.poison_byte(text) == byte


@pytest.mark.parametrize("text", ["256", "-1", "nan", "0xfff", "ff"])
def test_poison_byte_refuses_what_is_no_byte(text: str) -> None:
    with pytest.raises(ValueError, match=f"GLOW_MLIR_POISON='{text}': expected a byte, 0 to 255"):
        library.poison_byte(text)


def test_the_suite_runs_poisoned() -> None:
    # conftest.py sets GLOW_MLIR_POISON before glow_mlir is imported, making every comparing test an oracle of
    # garbage reads; an import of glow_mlir ahead of it would turn that off silently.
    assert library.POISON == 0xFF
