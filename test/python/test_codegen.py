"""Every `glow_ir` instruction through glow-ir-to-linalg, glow-to-llvm and the JIT, against numpy.

Each test writes an allocated `glow_ir` function (inputs, outputs, the arena argument, constants as
memref globals, intermediates as memref.views into the arena) and runs it with `compile_allocated`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from mlir import ir

from glow_mlir.context import make_context
from glow_mlir.errors import VerificationError
from glow_mlir.passes.pipeline import run_pipeline
from glow_mlir.runtime import compile_allocated

RTOL = ATOL = 1e-5
rng = np.random.default_rng(0)

ROLES = {
    "copy": ["out", "in"],
    "splat": ["out"],
    "matmul": ["out", "in", "in"],
    "batched_add": ["out", "in", "in"],
    "softmax": ["out", "in"],
    "convolution": ["out", "in", "in", "in"],
    "max_pool": ["out", "in"],
    "avg_pool": ["out", "in"],
    "transpose": ["out", "in"],
    "insert_tensor": ["inout", "in"],
    "extract_tensor": ["out", "in"],
    "broadcast": ["out", "in"],
    "dealloc_activation": ["out"],
    **{f"element_{op}": ["out", "in", "in"] for op in ("add", "sub", "mul", "div", "max", "min")},
    **{op: ["out", "in"] for op in ("sigmoid", "tanh", "element_exp", "element_sqrt")},
}


def rand(*shape: int, low: float = -1.0, high: float = 1.0) -> np.ndarray:
    return rng.uniform(low, high, shape).astype(np.float32)


def memref(shape: Sequence[int], elt: str = "f32") -> str:
    return "memref<" + "".join(f"{d}x" for d in shape) + elt + ">"


def attribute(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value} : i64"
    if isinstance(value, float):
        return f"{value!r} : f32"
    return "array<i64: " + ", ".join(str(int(v)) for v in value) + ">"  # type: ignore[attr-defined]


class Function:
    """Writes an allocated glow_ir function: arguments, arena views, globals and instructions."""

    def __init__(self) -> None:
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.feeds: dict[str, np.ndarray] = {}
        self.inputs: list[str] = []
        self.outputs: list[str] = []
        self.globals: list[str] = []
        self.body: list[str] = []
        self.arena_bytes = 0

    def input(self, name: str, array: np.ndarray) -> str:
        self.shapes[name] = array.shape
        self.feeds[name] = array
        self.inputs.append(name)
        return name

    def output(self, name: str, shape: Sequence[int]) -> str:
        self.shapes[name] = tuple(shape)
        self.outputs.append(name)
        return name

    def temp(self, name: str, shape: Sequence[int]) -> str:
        """An intermediate: a view into the arena at the next 64-byte boundary."""
        self.shapes[name] = tuple(shape)
        offset = self.arena_bytes
        self.arena_bytes += -(-int(np.prod(shape, dtype=np.int64)) * 4 // 64) * 64
        self.body.append(f"%{name}_at = arith.constant {offset} : index")
        self.body.append(f"%{name} = memref.view %arena[%{name}_at][] : ARENA to {memref(shape)}")
        return name

    def constant(self, name: str, array: np.ndarray) -> str:
        self.shapes[name] = array.shape
        # MLIR's hex form of a dense literal: the raw little-endian bytes, any shape.
        raw = array.astype("<f4").tobytes().hex().upper()
        self.globals.append(
            f'memref.global "private" constant @{name} : {memref(array.shape)} = '
            f'dense<"0x{raw}">'
        )
        self.body.append(f"%{name} = memref.get_global @{name} : {memref(array.shape)}")
        return name

    def view(self, name: str, src: str, shape: Sequence[int]) -> str:
        self.shapes[name] = tuple(shape)
        self.body.append(
            f'%{name} = "glow_ir.tensor_view"(%{src}) : ({memref(self.shapes[src])}) -> {memref(shape)}'
        )
        return name

    def inst(self, op: str, *buffers: str, **attributes: object) -> None:
        attrs = {"roles": "[" + ", ".join(f'"{r}"' for r in ROLES[op]) + "]"}
        attrs.update({k: attribute(v) for k, v in attributes.items()})
        attr_text = ", ".join(f"{k} = {v}" for k, v in attrs.items())
        operands = ", ".join(f"%{b}" for b in buffers)
        types = ", ".join(memref(self.shapes[b]) for b in buffers)
        self.body.append(f'"glow_ir.{op}"({operands}) {{{attr_text}}} : ({types}) -> ()')

    def text(self) -> str:
        arena = memref([self.arena_bytes], "i8")
        args = [f'%{n}: {memref(self.shapes[n])} {{glow.name = "{n}"}}' for n in self.inputs]
        args += [f'%{n}: {memref(self.shapes[n])} {{glow.name = "{n}", glow.output}}' for n in self.outputs]
        args.append(f"%arena: {arena} {{glow.arena}}")
        body = "\n  ".join(line.replace("ARENA", arena) for line in self.body)
        return (
            "\n".join(self.globals)
            + f"\nfunc.func @model({', '.join(args)}) attributes {{glow.arena_bytes = {self.arena_bytes} : i64}} {{\n"
            + f"  {body}\n  return\n}}\n"
        )

    def run(self) -> dict[str, np.ndarray]:
        module = ir.Module.parse(self.text(), context=make_context())
        with compile_allocated(module) as model:
            return model.run(self.feeds)


def check(fn: Function, expected: dict[str, np.ndarray]) -> None:
    got = fn.run()
    assert got.keys() == expected.keys()
    for name, want in expected.items():
        assert got[name].shape == want.shape, name
        np.testing.assert_allclose(got[name], want, rtol=RTOL, atol=ATOL, err_msg=name)


def unary(op: str, x: np.ndarray) -> np.ndarray:
    fn = Function()
    fn.inst(op, fn.output("y", x.shape), fn.input("x", x))
    return fn.run()["y"]


def binary(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    fn = Function()
    shape = (a.shape[0], b.shape[1]) if op == "matmul" else a.shape
    fn.inst(op, fn.output("y", shape), fn.input("a", a), fn.input("b", b))
    return fn.run()["y"]


SHAPES = [(), (1,), (7,), (3, 5), (2, 3, 4, 5)]


@pytest.mark.parametrize("shape", SHAPES)
def test_copy(shape: tuple[int, ...]) -> None:
    x = rand(*shape)
    assert np.array_equal(unary("copy", x), x)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("value", [0.0, -2.5, 3.0e10])
def test_splat(shape: tuple[int, ...], value: float) -> None:
    fn = Function()
    fn.inst("splat", fn.output("y", shape), value=value)
    check(fn, {"y": np.full(shape, value, np.float32)})


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (3, 5, 7), (16, 32, 8), (1, 100, 3)])
def test_matmul(m: int, k: int, n: int) -> None:
    lhs, rhs = rand(m, k), rand(k, n)
    np.testing.assert_allclose(binary("matmul", lhs, rhs), lhs @ rhs, rtol=RTOL, atol=ATOL)


def test_matmul_overwrites_stale_destination() -> None:
    # The arena is reused across calls, so matmul must not accumulate onto what its buffer held before.
    lhs, rhs = rand(4, 3), rand(3, 2)
    fn = Function()
    fn.inst("matmul", fn.temp("t", (4, 2)), fn.input("a", lhs), fn.input("b", rhs))
    fn.inst("copy", fn.output("y", (4, 2)), "t")
    module = ir.Module.parse(fn.text(), context=make_context())
    with compile_allocated(module) as model:
        for _ in range(3):
            np.testing.assert_allclose(model.run(fn.feeds)["y"], lhs @ rhs, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("batch,slice_", [((4, 3), (3,)), ((2, 3, 4), (3, 4)), ((5, 1), (1,)), ((2, 3, 4), (4,))])
def test_batched_add(batch: tuple[int, ...], slice_: tuple[int, ...]) -> None:
    b, s = rand(*batch), rand(*slice_)
    fn = Function()
    fn.inst("batched_add", fn.output("y", batch), fn.input("batch", b), fn.input("slice", s))
    check(fn, {"y": b + s})


BINARY = {
    "element_add": np.add,
    "element_sub": np.subtract,
    "element_mul": np.multiply,
    "element_div": np.divide,
    "element_max": np.maximum,
    "element_min": np.minimum,
}


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize("shape", SHAPES)
def test_binary(op: str, shape: tuple[int, ...]) -> None:
    a = rand(*shape)
    b = rand(*shape, low=0.5, high=2.0) if op == "element_div" else rand(*shape)
    np.testing.assert_allclose(binary(op, a, b), BINARY[op](a, b), rtol=RTOL, atol=ATOL)


def test_binary_in_place() -> None:
    # Glow's IR optimizer may make an @out operand the same buffer as an @in one.
    a, b = rand(3, 4), rand(3, 4)
    fn = Function()
    fn.inst("copy", fn.output("y", (3, 4)), fn.input("a", a))
    fn.inst("element_mul", "y", "y", fn.input("b", b))
    check(fn, {"y": a * b})


def sigmoid(x: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -x.astype(np.float64))).astype(np.float32)


UNARY = {"sigmoid": sigmoid, "tanh": np.tanh, "element_exp": np.exp}


@pytest.mark.parametrize("op", sorted(UNARY))
@pytest.mark.parametrize("shape", SHAPES)
def test_unary(op: str, shape: tuple[int, ...]) -> None:
    x = rand(*shape, low=-4.0, high=4.0)
    np.testing.assert_allclose(unary(op, x), UNARY[op](x), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("op", ["sigmoid", "tanh"])
def test_saturating_unary_at_extremes(op: str) -> None:
    x = np.array([-1e4, -100.0, -20.0, 0.0, 20.0, 100.0, 1e4], np.float32)
    got = unary(op, x)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, UNARY[op](x), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4)])
def test_sqrt(shape: tuple[int, ...]) -> None:
    x = rand(*shape, low=0.0, high=9.0)
    np.testing.assert_allclose(unary("element_sqrt", x), np.sqrt(x), rtol=RTOL, atol=ATOL)


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - x.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("shape", [(1,), (10,), (4, 10), (2, 3, 5), (2, 1, 3, 4)])
def test_softmax(shape: tuple[int, ...]) -> None:
    x = rand(*shape, low=-5.0, high=5.0)
    np.testing.assert_allclose(unary("softmax", x), softmax(x), rtol=RTOL, atol=ATOL)


def test_softmax_is_stable_for_large_logits() -> None:
    x = np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1000.0, -1000.0]], np.float32)
    np.testing.assert_allclose(unary("softmax", x), softmax(x), rtol=RTOL, atol=ATOL)


def convolution(
    x: np.ndarray, w: np.ndarray, b: np.ndarray, strides: Sequence[int], dilation: Sequence[int], group: int
) -> np.ndarray:
    n, c, h, wid = x.shape
    f, cg, kh, kw = w.shape
    oh = (h - (kh - 1) * dilation[0] - 1) // strides[0] + 1
    ow = (wid - (kw - 1) * dilation[1] - 1) // strides[1] + 1
    out = np.zeros((n, f, oh, ow), np.float64) + b.reshape(1, f, 1, 1)
    fg = f // group
    for g in range(group):
        xs = x[:, g * cg : (g + 1) * cg].astype(np.float64)
        ws = w[g * fg : (g + 1) * fg].astype(np.float64)
        for i in range(kh):
            for j in range(kw):
                hi, wj = i * dilation[0], j * dilation[1]
                rows = slice(hi, hi + strides[0] * (oh - 1) + 1, strides[0])
                cols = slice(wj, wj + strides[1] * (ow - 1) + 1, strides[1])
                patch = xs[:, :, rows, cols]
                out[:, g * fg : (g + 1) * fg] += np.einsum("nchw,fc->nfhw", patch, ws[:, :, i, j])
    return out.astype(np.float32)


CONVOLUTIONS = [
    # (input NCHW, filters, kernel, strides, dilation, group)
    ((1, 1, 5, 5), 1, (3, 3), (1, 1), (1, 1), 1),
    ((2, 3, 8, 7), 4, (3, 2), (1, 1), (1, 1), 1),
    ((1, 3, 9, 9), 5, (3, 3), (2, 2), (1, 1), 1),
    ((1, 2, 10, 9), 3, (3, 3), (1, 2), (2, 1), 1),
    ((1, 2, 4, 4), 3, (1, 1), (1, 1), (1, 1), 1),
    ((2, 4, 6, 6), 6, (3, 3), (1, 1), (1, 1), 2),
    ((1, 6, 7, 7), 6, (3, 3), (2, 2), (1, 1), 6),  # depthwise
    ((1, 4, 8, 8), 8, (3, 3), (1, 1), (2, 2), 4),  # depthwise, channel multiplier 2, dilated
]


@pytest.mark.parametrize("src,filters,kernel,strides,dilation,group", CONVOLUTIONS)
def test_convolution(
    src: tuple[int, ...], filters: int, kernel: tuple[int, int], strides: tuple[int, int],
    dilation: tuple[int, int], group: int,
) -> None:  # fmt: skip
    x, w, b = rand(*src), rand(filters, src[1] // group, *kernel), rand(filters)
    want = convolution(x, w, b, strides, dilation, group)
    fn = Function()
    fn.inst(
        "convolution", fn.output("y", want.shape), fn.input("x", x), fn.constant("w", w), fn.constant("b", b),
        kernels=kernel, strides=strides, group=group, dilation=dilation,
    )  # fmt: skip
    check(fn, {"y": want})


def pool(x: np.ndarray, kernel: Sequence[int], strides: Sequence[int], reduce: str) -> np.ndarray:
    n, c, h, w = x.shape
    oh, ow = (h - kernel[0]) // strides[0] + 1, (w - kernel[1]) // strides[1] + 1
    out = np.empty((n, c, oh, ow), np.float32)
    for i in range(oh):
        for j in range(ow):
            window = x[:, :, i * strides[0] : i * strides[0] + kernel[0], j * strides[1] : j * strides[1] + kernel[1]]
            out[:, :, i, j] = getattr(window, reduce)(axis=(2, 3))
    return out


POOLS = [
    ((1, 1, 4, 4), (2, 2), (2, 2)),
    ((2, 3, 7, 6), (3, 2), (1, 1)),
    ((1, 2, 9, 9), (3, 3), (2, 3)),
    ((1, 1, 5, 5), (5, 5), (1, 1)),
    ((1, 3, 3, 3), (1, 1), (1, 1)),
]


@pytest.mark.parametrize("op,reduce", [("max_pool", "max"), ("avg_pool", "mean")])
@pytest.mark.parametrize("src,kernel,strides", POOLS)
def test_pool(op: str, reduce: str, src: tuple[int, ...], kernel: tuple[int, int], strides: tuple[int, int]) -> None:
    x = rand(*src, low=-5.0, high=-1.0)  # all negative, so a max that starts from 0 would show
    want = pool(x, kernel, strides, reduce)
    fn = Function()
    fn.inst(op, fn.output("y", want.shape), fn.input("x", x), kernels=kernel, strides=strides)
    check(fn, {"y": want})


@pytest.mark.parametrize(
    "shape,shuffle", [((3, 4), (1, 0)), ((2, 3, 4), (2, 0, 1)), ((1, 3, 4, 5), (0, 2, 3, 1)), ((5,), (0,))]
)
def test_transpose(shape: tuple[int, ...], shuffle: tuple[int, ...]) -> None:
    x = rand(*shape)
    want = np.transpose(x, shuffle)
    fn = Function()
    fn.inst("transpose", fn.output("y", want.shape), fn.input("x", x), shuffle=shuffle)
    check(fn, {"y": want})


@pytest.mark.parametrize(
    "dest,src,start", [((5, 6), (2, 3), (1, 2)), ((4,), (4,), (0,)), ((2, 5, 3, 3), (2, 2, 3, 3), (0, 3, 0, 0))]
)
def test_insert_tensor(dest: tuple[int, ...], src: tuple[int, ...], start: tuple[int, ...]) -> None:
    base, x = rand(*dest), rand(*src)
    want = base.copy()
    want[tuple(slice(s, s + n) for s, n in zip(start, src, strict=True))] = x
    fn = Function()
    fn.inst("copy", fn.output("y", dest), fn.input("base", base))
    fn.inst("insert_tensor", "y", fn.input("x", x), start=start)
    check(fn, {"y": want})


def test_insert_tensor_concat() -> None:
    # How glow-lower spells a concat: a splat-free sequence of inserts into one destination.
    a, b, c = rand(2, 1, 3), rand(2, 4, 3), rand(2, 2, 3)
    fn = Function()
    y = fn.output("y", (2, 7, 3))
    fn.inst("insert_tensor", y, fn.input("a", a), start=(0, 0, 0))
    fn.inst("insert_tensor", y, fn.input("b", b), start=(0, 1, 0))
    fn.inst("insert_tensor", y, fn.input("c", c), start=(0, 5, 0))
    check(fn, {"y": np.concatenate([a, b, c], axis=1)})


@pytest.mark.parametrize(
    "src,dest,start", [((5, 6), (2, 3), (1, 2)), ((4,), (4,), (0,)), ((2, 5, 3, 3), (1, 2, 3, 1), (1, 3, 0, 2))]
)
def test_extract_tensor(src: tuple[int, ...], dest: tuple[int, ...], start: tuple[int, ...]) -> None:
    x = rand(*src)
    fn = Function()
    fn.inst("extract_tensor", fn.output("y", dest), fn.input("x", x), start=start)
    check(fn, {"y": x[tuple(slice(s, s + n) for s, n in zip(start, dest, strict=True))].copy()})


@pytest.mark.parametrize(
    "src,dest,axis",
    [
        ((3,), (4, 3), 1),
        ((4, 1), (4, 5), 0),
        ((1,), (2, 3), 1),
        ((3,), (2, 3, 4), 1),  # a per-channel vector aligned in the middle
        ((1, 3, 1, 1), (2, 3, 4, 5), 0),
        ((), (2, 2), 0),
        ((2, 3), (2, 3), 0),
    ],
)
def test_broadcast(src: tuple[int, ...], dest: tuple[int, ...], axis: int) -> None:
    x = rand(*src)
    aligned = (1,) * axis + src + (1,) * (len(dest) - axis - len(src))
    fn = Function()
    fn.inst("broadcast", fn.output("y", dest), fn.input("x", x), axis=axis)
    check(fn, {"y": np.broadcast_to(x.reshape(aligned), dest).copy()})


def test_tensor_view_of_argument_and_of_arena() -> None:
    x = rand(2, 3, 4)
    fn = Function()
    t = fn.temp("t", (2, 3, 4))
    fn.inst("element_exp", t, fn.input("x", x))
    fn.inst("copy", fn.output("y", (6, 4)), fn.view("tv", t, (6, 4)))
    fn.inst("copy", fn.view("zv", fn.output("z", (4, 6)), (24,)), fn.view("xv", "x", (24,)))
    check(fn, {"y": np.exp(x).reshape(6, 4), "z": x.reshape(4, 6)})


def test_chain_through_arena() -> None:
    """A small MLP as glow-irgen and glow-allocate would leave it: views share the arena."""
    x, w1, b1, w2, b2 = rand(2, 8), rand(8, 16), rand(16), rand(16, 4), rand(4)
    fn = Function()
    fn.input("x", x)
    h = fn.temp("h", (2, 16))
    fn.inst("matmul", h, "x", fn.constant("w1", w1))
    fn.inst("batched_add", h, h, fn.constant("b1", b1))
    zero = fn.temp("zero", (2, 16))
    fn.inst("splat", zero, value=0.0)
    fn.inst("element_max", h, h, zero)
    logits = fn.temp("logits", (2, 4))
    fn.inst("matmul", logits, h, fn.constant("w2", w2))
    fn.inst("batched_add", logits, logits, fn.constant("b2", b2))
    fn.inst("softmax", fn.output("y", (2, 4)), logits)
    check(fn, {"y": softmax(np.maximum(x @ w1 + b1, 0) @ w2 + b2)})


def lowered(text: str) -> str:
    ctx = make_context()
    module = ir.Module.parse(text, context=ctx)
    run_pipeline(module, "builtin.module(glow-ir-to-linalg)")
    return str(module)


def test_lowering_leaves_no_glow_ir_and_no_heap_allocation() -> None:
    x = rand(1, 2, 6, 6)
    fn = Function()
    fn.input("x", x)
    c = fn.temp("c", (1, 2, 4, 4))
    fn.inst("convolution", c, "x", fn.constant("w", rand(2, 1, 3, 3)), fn.constant("b", rand(2)),
            kernels=(3, 3), strides=(1, 1), group=2, dilation=(1, 1))  # fmt: skip
    fn.inst("max_pool", fn.output("y", (1, 2, 2, 2)), c, kernels=(2, 2), strides=(2, 2))
    text = lowered(fn.text())
    assert "glow_ir." not in text
    assert "memref.alloc(" not in text and "memref.alloc " not in text
    assert "llvm.emit_c_interface" in text
    assert "linalg.conv_2d_ngchw_gfchw" in text and "linalg.pooling_nchw_max" in text


@pytest.mark.parametrize("op", ["alloc_activation", "dealloc_activation"])
def test_unallocated_activations_are_rejected(op: str) -> None:
    text = """
    func.func @model(%x: memref<4xf32> {glow.name = "x"}, %y: memref<4xf32> {glow.name = "y", glow.output}) {
      %t = "glow_ir.alloc_activation"() : () -> memref<4xf32> loc("node")
      "glow_ir.copy"(%t, %x) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()
      "glow_ir.copy"(%y, %t) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()
      "glow_ir.dealloc_activation"(%t) {roles = ["out"]} : (memref<4xf32>) -> () loc("free")
      return
    }
    """
    if op == "dealloc_activation":
        text = text.replace('"glow_ir.alloc_activation"() : () -> memref<4xf32> loc("node")',
                            "memref.alloca() : memref<4xf32>")  # fmt: skip
    with pytest.raises(VerificationError, match=f"glow_ir.{op}.*glow-allocate"):
        lowered(text)


@pytest.mark.parametrize(
    "inst,message",
    [
        ('"glow_ir.broadcast"(%y, %x) {axis = 1 : i64, roles = ["out", "in"]}', "cannot align"),
        ('"glow_ir.transpose"(%y, %x) {shuffle = array<i64: 0, 0>, roles = ["out", "in"]}', "not a permutation"),
        ('"glow_ir.extract_tensor"(%y, %x) {start = array<i64: 1, 0>, roles = ["out", "in"]}', "does not fit"),
    ],
)
def test_bad_attributes_are_located_errors(inst: str, message: str) -> None:
    text = f"""
    func.func @model(%x: memref<3x4xf32>, %y: memref<3x4xf32>) {{
      {inst} : (memref<3x4xf32>, memref<3x4xf32>) -> () loc("bad_node")
      return
    }}
    """
    with pytest.raises(VerificationError, match=f"bad_node.*{message}"):
        lowered(text)

