"""Every `glow_ir` instruction through glow-ir-to-linalg, glow-to-llvm and the JIT, against numpy.

Each test writes an allocated `glow_ir` function (inputs, outputs, the arena argument, constants as
memref globals, intermediates as memref.views into the arena) and runs it with `compile_allocated`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from mlir import ir

from glow_mlir import ops
from glow_mlir.context import make_context
from glow_mlir.errors import VerificationError
from glow_mlir.opdefs import reference
from glow_mlir.pipeline.runner import run_pipeline
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
    "convert_to": ["out", "in"],
    "element_select": ["out", "in", "in", "in"],
    **{
        f"element_{op}": ["out", "in", "in"]
        for op in ("cmp_eq", "cmp_neq", "cmp_lt", "cmp_lte", "and", "or", "xor", "pow")
    },
    **{
        f"element_{op}": ["out", "in"]
        for op in ("not", "log", "abs", "neg", "floor", "ceil", "round", "erf", "sin", "cos")
    },
    "gather": ["out", "in", "in"],
    **{f"batched_reduce_{op}": ["out", "in"] for op in ("add", "max", "min", "prod")},
    "arg_max": ["out", "in"],
    "arg_min": ["out", "in"],
    "batch_matmul": ["out", "in", "in"],
    "conv_transpose": ["out", "in", "in", "in"],
    "roi_align": ["out", "in", "in", "in"],
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
    if isinstance(value, str):
        return f'"{value}"'
    items = ", ".join(str(int(v)) for v in value)  # type: ignore[attr-defined]
    return f"array<i64: {items}>" if items else "array<i64>"


def dense(array: np.ndarray) -> str:
    """A dense literal of `array`: MLIR's hex form (raw little-endian bytes) or, for bools, true/false lists."""
    if array.dtype == np.bool_:
        text = np.array2string(array, separator=", ", threshold=array.size + 1, max_line_width=1 << 30)
        return "dense<" + text.replace("True", "true").replace("False", "false") + ">"
    return f'dense<"0x{array.astype(array.dtype.newbyteorder("<")).tobytes().hex().upper()}">'


class Function:
    """Writes an allocated glow_ir function: arguments, arena views, globals and instructions.

    Buffers take the element type of the arrays fed to them; outputs and temporaries say theirs (f32 default).
    """

    def __init__(self) -> None:
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.types: dict[str, str] = {}
        self.feeds: dict[str, np.ndarray] = {}
        self.inputs: list[str] = []
        self.outputs: list[str] = []
        self.globals: list[str] = []
        self.body: list[str] = []
        self.arena_bytes = 0

    def input(self, name: str, array: np.ndarray) -> str:
        self.shapes[name] = array.shape
        self.types[name] = ops.NUMPY_TO_MLIR[array.dtype]
        self.feeds[name] = array
        self.inputs.append(name)
        return name

    def output(self, name: str, shape: Sequence[int], elt: str = "f32") -> str:
        self.shapes[name] = tuple(shape)
        self.types[name] = elt
        self.outputs.append(name)
        return name

    def temp(self, name: str, shape: Sequence[int], elt: str = "f32") -> str:
        """An intermediate: a view into the arena at the next 64-byte boundary."""
        self.shapes[name] = tuple(shape)
        self.types[name] = elt
        offset = self.arena_bytes
        size = int(np.prod(shape, dtype=np.int64)) * ops.MLIR_TO_NUMPY[elt].itemsize
        self.arena_bytes += -(-size // 64) * 64
        self.body.append(f"%{name}_at = arith.constant {offset} : index")
        self.body.append(f"%{name} = memref.view %arena[%{name}_at][] : ARENA to {self.memref(name)}")
        return name

    def constant(self, name: str, array: np.ndarray) -> str:
        self.shapes[name] = array.shape
        self.types[name] = ops.NUMPY_TO_MLIR[array.dtype]
        self.globals.append(f'memref.global "private" constant @{name} : {self.memref(name)} = {dense(array)}')
        self.body.append(f"%{name} = memref.get_global @{name} : {self.memref(name)}")
        return name

    def view(self, name: str, src: str, shape: Sequence[int]) -> str:
        self.shapes[name] = tuple(shape)
        self.types[name] = self.types[src]
        self.body.append(f'%{name} = "glow_ir.tensor_view"(%{src}) : ({self.memref(src)}) -> {self.memref(name)}')
        return name

    def memref(self, name: str) -> str:
        return memref(self.shapes[name], self.types[name])

    def inst(self, op: str, *buffers: str, **attributes: object) -> None:
        attrs = {"roles": "[" + ", ".join(f'"{r}"' for r in ROLES[op]) + "]"}
        attrs.update({k: attribute(v) for k, v in attributes.items()})
        attr_text = ", ".join(f"{k} = {v}" for k, v in attrs.items())
        operands = ", ".join(f"%{b}" for b in buffers)
        types = ", ".join(self.memref(b) for b in buffers)
        self.body.append(f'"glow_ir.{op}"({operands}) {{{attr_text}}} : ({types}) -> ()')

    def text(self) -> str:
        arena = memref([self.arena_bytes], "i8")
        args = [f'%{n}: {self.memref(n)} {{glow.name = "{n}"}}' for n in self.inputs]
        args += [f'%{n}: {self.memref(n)} {{glow.name = "{n}", glow.output}}' for n in self.outputs]
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


# f16 keeps 11 significant bits: compare it to a few of its ulps.
TOLERANCE = {np.dtype(np.float16): 4e-3}


def check(fn: Function, expected: dict[str, np.ndarray]) -> None:
    """Runs `fn` and compares each output: same dtype and shape, exact for integers and bools, close for floats."""
    got = fn.run()
    assert got.keys() == expected.keys()
    for name, want in expected.items():
        assert got[name].shape == want.shape, name
        assert got[name].dtype == want.dtype, name
        if np.issubdtype(want.dtype, np.floating):
            tol = TOLERANCE.get(want.dtype, RTOL)
            np.testing.assert_allclose(got[name], want, rtol=tol, atol=tol, err_msg=name)
        else:
            np.testing.assert_array_equal(got[name], want, err_msg=name)


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
    "shape,shuffle", [((3, 4), (1, 0)), ((2, 3, 4), (2, 0, 1)), ((1, 3, 4, 5), (0, 2, 3, 1)), ((5,), (0,)),
                      ((2, 5, 1, 7), (0, 3, 1, 2)), ((1, 4, 1), (2, 1, 0)), ((1, 1), (1, 0))]
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



# ----------------------------------------------------------------------------------------------------------
# Element types other than f32, and the instructions for ONNX coverage

FLOATS = ["f32", "f64", "f16"]
INTS = ["i8", "i16", "i32", "i64"]
ALL_TYPES = [*FLOATS, *INTS, "i1"]


def sample(elt: str, *shape: int, low: float = -10.0, high: float = 10.0) -> np.ndarray:
    """Random values of MLIR element type `elt`: floats in [low, high), integers in [low, high], bools."""
    dtype = ops.MLIR_TO_NUMPY[elt]
    if elt == "i1":
        return rng.integers(0, 2, shape).astype(np.bool_)
    if elt in INTS:
        return rng.integers(int(low), int(high) + 1, shape).astype(dtype)
    return rng.uniform(low, high, shape).astype(dtype)


def run_one(op: str, dest_elt: str, dest_shape: Sequence[int], *inputs: np.ndarray, **attributes: object) -> np.ndarray:
    """Runs one instruction writing output `y` from inputs `a`, `b`, ... and returns `y`."""
    fn = Function()
    y = fn.output("y", dest_shape, dest_elt)
    fn.inst(op, y, *(fn.input(chr(ord("a") + i), x) for i, x in enumerate(inputs)), **attributes)
    return fn.run()["y"]


def expect(got: np.ndarray, want: np.ndarray, tol: float | None = None) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    if np.issubdtype(want.dtype, np.floating):
        tol = tol or TOLERANCE.get(want.dtype, RTOL)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, want)


def truncating_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C and ONNX integer division: the quotient rounded toward zero (numpy's // floors)."""
    q = np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))
    return (np.sign(a.astype(np.int64)) * np.sign(b.astype(np.int64)) * q).astype(a.dtype)


@pytest.mark.parametrize("elt", ["f64", "f16", *INTS])
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_element_types(op: str, elt: str) -> None:
    a, b = sample(elt, 3, 5), sample(elt, 3, 5)
    if op == "element_div":
        b = np.where(b == 0, 3, b).astype(b.dtype)
        want = truncating_div(a, b) if elt in INTS else a / b
    else:
        want = BINARY[op](a, b)
    expect(run_one(op, elt, a.shape, a, b), want)


def test_integer_division_truncates_toward_zero() -> None:
    a = np.array([7, -7, 7, -7, 0, 1, -1], np.int32)
    b = np.array([2, 2, -2, -2, 5, 3, 3], np.int32)
    expect(run_one("element_div", "i32", a.shape, a, b), np.array([3, -3, -3, 3, 0, 0, 0], np.int32))


@pytest.mark.parametrize("elt", ["i32", "i64", "f64", "f16"])
def test_matmul_and_batched_add_element_types(elt: str) -> None:
    lhs, rhs = sample(elt, 3, 4, low=-3, high=3), sample(elt, 4, 5, low=-3, high=3)
    bias = sample(elt, 5, low=-3, high=3)
    fn = Function()
    t = fn.temp("t", (3, 5), elt)
    fn.inst("matmul", t, fn.input("a", lhs), fn.input("b", rhs))
    fn.inst("batched_add", fn.output("y", (3, 5), elt), t, fn.constant("bias", bias))
    wide = lhs.astype(np.float64) @ rhs.astype(np.float64) + bias
    check(fn, {"y": wide.astype(lhs.dtype)})


@pytest.mark.parametrize(
    "elt,value,want",
    [("f64", "-2.5 : f32", -2.5), ("f16", "0.5 : f32", 0.5), ("i32", "-7 : i32", -7), ("i64", "123 : i64", 123),
     ("i8", "-128 : i8", -128), ("i1", "true", True), ("i1", "false", False)],
)  # fmt: skip
def test_splat_element_types(elt: str, value: str, want: object) -> None:
    fn = Function()
    y = fn.output("y", (2, 3), elt)
    fn.body.append(f'"glow_ir.splat"(%{y}) {{roles = ["out"], value = {value}}} : ({fn.memref(y)}) -> ()')
    check(fn, {"y": np.full((2, 3), want, ops.MLIR_TO_NUMPY[elt])})


def test_bool_buffers_in_the_arena_through_views_and_constants() -> None:
    a = sample("i1", 2, 6)
    mask = sample("i1", 12)
    fn = Function()
    t = fn.temp("t", (2, 6), "i1")
    fn.inst("element_not", t, fn.input("a", a))
    fn.inst("element_xor", fn.output("y", (12,), "i1"), fn.view("tv", t, (12,)), fn.constant("mask", mask))
    fn.inst("transpose", fn.output("z", (6, 2), "i1"), t, shuffle=(1, 0))
    check(fn, {"y": ~a.reshape(12) ^ mask, "z": (~a).T.copy()})


def convert_sample(elt: str) -> np.ndarray:
    """Values every listed type holds exactly or converts without overflow: |x| < 100, fractions, zeros."""
    if elt == "i1":
        return np.array([True, False, True, True, False, False, True, False])
    if elt in INTS:
        return np.array([0, 1, -1, 7, -8, 100, -100, 42], ops.MLIR_TO_NUMPY[elt])
    return np.array([0.0, -0.0, 1.75, -1.75, 99.5, -99.9, 0.25, 63.0], ops.MLIR_TO_NUMPY[elt])


@pytest.mark.parametrize("dest", ALL_TYPES)
@pytest.mark.parametrize("src", ALL_TYPES)
def test_convert_to(src: str, dest: str) -> None:
    x = convert_sample(src)
    # numpy's astype has the instruction's rules: truncation toward zero, x != 0 for bool, bools as 0 and 1.
    expect(run_one("convert_to", dest, x.shape, x), x.astype(ops.MLIR_TO_NUMPY[dest]))


def test_convert_nan_to_bool_is_true() -> None:
    x = np.array([np.nan, 0.0, -0.0, np.inf], np.float32)
    expect(run_one("convert_to", "i1", x.shape, x), np.array([True, False, False, True]))


@pytest.mark.parametrize("elt", ["f32", "f64", "f16", "i32", "i64", "i1"])
def test_select(elt: str) -> None:
    cond, a, b = sample("i1", 4, 5), sample(elt, 4, 5), sample(elt, 4, 5)
    expect(run_one("element_select", elt, a.shape, cond, a, b), np.where(cond, a, b))


COMPARISONS = {"element_cmp_eq": np.equal, "element_cmp_neq": np.not_equal, "element_cmp_lt": np.less,
               "element_cmp_lte": np.less_equal}  # fmt: skip


# Ordering comparisons take numbers only (ONNX Less/LessOrEqual have no bool form).
COMPARISON_CASES = [
    (op, elt)
    for op in sorted(COMPARISONS)
    for elt in ["f32", "f64", "f16", "i8", "i32", "i64", "i1"]
    if elt != "i1" or op in ("element_cmp_eq", "element_cmp_neq")
]


@pytest.mark.parametrize("op,elt", COMPARISON_CASES)
def test_comparisons(op: str, elt: str) -> None:
    a, b = sample(elt, 6, 7, low=-3, high=3), sample(elt, 6, 7, low=-3, high=3)
    b[0] = a[0]  # equal elements, so that eq and lte have something to find
    if elt in FLOATS:
        a[1, :3], b[1, 1:4] = np.nan, np.nan
    expect(run_one(op, "i1", a.shape, a, b), COMPARISONS[op](a, b))


def test_nan_comparisons_follow_onnx() -> None:
    nan = np.float32(np.nan)
    a = np.array([nan, nan, 1.0, 1.0], np.float32)
    b = np.array([nan, 1.0, nan, 1.0], np.float32)
    expect(run_one("element_cmp_eq", "i1", a.shape, a, b), np.array([False, False, False, True]))
    expect(run_one("element_cmp_neq", "i1", a.shape, a, b), np.array([True, True, True, False]))


@pytest.mark.parametrize("op,fn", [("element_and", np.logical_and), ("element_or", np.logical_or),
                                   ("element_xor", np.logical_xor)])  # fmt: skip
def test_logical(op: str, fn: object) -> None:
    a, b = sample("i1", 3, 8), sample("i1", 3, 8)
    expect(run_one(op, "i1", a.shape, a, b), fn(a, b))  # type: ignore[operator]


def test_not() -> None:
    a = sample("i1", 5, 3)
    expect(run_one("element_not", "i1", a.shape, a), ~a)


@pytest.mark.parametrize("elt", FLOATS)
def test_pow(elt: str) -> None:
    base, exponent = sample(elt, 4, 6, low=0.5, high=2.0), sample(elt, 4, 6, low=-2.0, high=2.0)
    base[0, :3] = np.array([-2.0, -0.5, 0.0])
    exponent[0, :3] = np.array([3.0, 2.0, 2.0])
    want = np.power(base.astype(np.float64), exponent.astype(np.float64)).astype(base.dtype)
    expect(run_one("element_pow", elt, base.shape, base, exponent), want)


HALF_WAY = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49, 3.7, -3.7, -0.0, 1000.5])
FLOAT_UNARY = {
    "element_log": (np.log, 0.01, 20.0),
    "element_floor": (np.floor, -10.0, 10.0),
    "element_ceil": (np.ceil, -10.0, 10.0),
    "element_round": (np.round, -10.0, 10.0),  # numpy rounds half to even, as ONNX Round
    "element_sin": (np.sin, -7.0, 7.0),
    "element_cos": (np.cos, -7.0, 7.0),
    "element_abs": (np.abs, -10.0, 10.0),
    "element_neg": (np.negative, -10.0, 10.0),
}


@pytest.mark.parametrize("elt", FLOATS)
@pytest.mark.parametrize("op", sorted(FLOAT_UNARY))
def test_float_unary(op: str, elt: str) -> None:
    fn, low, high = FLOAT_UNARY[op]
    x = sample(elt, 3, 11, low=low, high=high)
    if op in ("element_floor", "element_ceil", "element_round"):
        x[0] = HALF_WAY[: x.shape[1]].astype(x.dtype)
    want = fn(x.astype(np.float64)).astype(x.dtype)
    expect(run_one(op, elt, x.shape, x), want)


@pytest.mark.parametrize("elt", INTS)
@pytest.mark.parametrize("op,fn", [("element_abs", np.abs), ("element_neg", np.negative)])
def test_integer_abs_and_neg(op: str, fn: object, elt: str) -> None:
    x = sample(elt, 4, 5, low=-100, high=100)
    expect(run_one(op, elt, x.shape, x), fn(x))  # type: ignore[operator]


def erf(x: np.ndarray) -> np.ndarray:
    import math as pymath

    return np.vectorize(pymath.erf, otypes=[np.float64])(x.astype(np.float64))


ERF_POINTS = [0.0, -0.0, 1e-30, -1e-8, 0.1, 0.5, 1.0, -1.0, 2.0, 2.4999, 2.5, 2.5001, -3.0, 4.0, 6.0, 10.0, 27.0]


@pytest.mark.parametrize("elt,tol", [("f32", 1e-6), ("f64", 1e-9), ("f16", 1e-3)])
def test_erf(elt: str, tol: float) -> None:
    x = np.concatenate([np.array(ERF_POINTS), rng.uniform(-5.0, 5.0, 200)]).astype(ops.MLIR_TO_NUMPY[elt])
    got = run_one("element_erf", elt, x.shape, x)
    np.testing.assert_allclose(got.astype(np.float64), erf(x), rtol=0, atol=tol)
    assert np.signbit(got[1]) and not np.signbit(got[0])


def test_erf_special_values() -> None:
    x = np.array([np.inf, -np.inf, np.nan], np.float32)
    got = run_one("element_erf", "f32", x.shape, x)
    assert got[0] == 1.0 and got[1] == -1.0 and np.isnan(got[2])


@pytest.mark.parametrize(
    "data,indices,axis",
    [((5, 3), (4,), 0), ((5, 3), (2, 2), 1), ((2, 3, 4), (), 1), ((2, 3, 4), (3, 2), 2), ((6,), (6,), 0)],
)
@pytest.mark.parametrize("index_elt", ["i32", "i64"])
@pytest.mark.parametrize("elt", ["f32", "i64", "i1", "f16"])
def test_gather(data: tuple[int, ...], indices: tuple[int, ...], axis: int, index_elt: str, elt: str) -> None:
    x = sample(elt, *data)
    size = data[axis]
    # Negative indices count from the end.
    idx = rng.integers(-size, size, indices).astype(ops.MLIR_TO_NUMPY[index_elt])
    want = np.take(x, idx, axis=axis)
    expect(run_one("gather", elt, want.shape, x, idx, axis=axis), want)


REDUCTIONS = {"add": np.sum, "max": np.max, "min": np.min, "prod": np.prod}


@pytest.mark.parametrize("axes", [(0,), (1,), (0, 2), (1, 2), (0, 1, 2), ()])
@pytest.mark.parametrize("elt", ["f32", "f64", "i32", "i64"])
@pytest.mark.parametrize("kind", sorted(REDUCTIONS))
def test_batched_reduce(kind: str, elt: str, axes: tuple[int, ...]) -> None:
    low, high = (0.5, 1.5) if kind == "prod" else (-50.0, 50.0)
    if kind == "prod" and elt in INTS:
        low, high = -2, 2
    x = sample(elt, 2, 3, 4, low=low, high=high)
    want = np.asarray(REDUCTIONS[kind](x.astype(np.float64) if elt in FLOATS else x, axis=axes)).astype(x.dtype)
    expect(run_one(f"batched_reduce_{kind}", elt, want.shape, x, axes=axes), want)


@pytest.mark.parametrize("elt", INTS)
def test_integer_max_and_min_start_from_the_type_limits(elt: str) -> None:
    info = np.iinfo(ops.MLIR_TO_NUMPY[elt])
    x = np.array([[info.min, info.min], [info.max, info.max]], info.dtype)
    expect(run_one("batched_reduce_max", elt, (2,), x, axes=(1,)), x.max(axis=1))
    expect(run_one("batched_reduce_min", elt, (2,), x, axes=(1,)), x.min(axis=1))


@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("elt", ["f32", "f16", "i32", "i64"])
@pytest.mark.parametrize("op", ["arg_max", "arg_min"])
def test_arg_max_min(op: str, elt: str, axis: int, keep: bool) -> None:
    x = sample(elt, 3, 4, 5, low=-3, high=3)  # integers in [-3, 3]: many ties, the first must win
    want = getattr(np, op.replace("_", ""))(x, axis=axis, keepdims=keep).astype(np.int64)
    expect(run_one(op, "i64", want.shape, x, axis=axis, keepDims=keep), want)


@pytest.mark.parametrize("op", ["arg_max", "arg_min"])
def test_arg_max_min_nan_wins_first(op: str) -> None:
    x = np.array([[1.0, np.nan, 5.0, np.nan], [np.nan, 2.0, -1.0, 0.0], [3.0, 3.0, 1.0, 1.0]], np.float32)
    want = getattr(np, op.replace("_", ""))(x, axis=1).astype(np.int64)
    expect(run_one(op, "i64", want.shape, x, axis=1, keepDims=False), want)


@pytest.mark.parametrize("elt", ["f32", "f64", "i32", "i64"])
@pytest.mark.parametrize("b,m,k,n", [(1, 1, 1, 1), (3, 4, 5, 6), (2, 7, 1, 3)])
def test_batch_matmul(elt: str, b: int, m: int, k: int, n: int) -> None:
    lhs, rhs = sample(elt, b, m, k, low=-5, high=5), sample(elt, b, k, n, low=-5, high=5)
    want = np.matmul(lhs.astype(np.float64), rhs.astype(np.float64)).astype(lhs.dtype)
    expect(run_one("batch_matmul", elt, want.shape, lhs, rhs), want)


def conv_transpose(
    x: np.ndarray, w: np.ndarray, b: np.ndarray, strides: Sequence[int], dilation: Sequence[int], group: int,
    extra: Sequence[int] = (0, 0),
) -> np.ndarray:  # fmt: skip
    """ONNX ConvTranspose without pads: each input element scatters x * w over a window of the output."""
    n, c, h, wid = x.shape
    _, og, kh, kw = w.shape
    cg = c // group
    oh = (h - 1) * strides[0] + (kh - 1) * dilation[0] + 1 + extra[0]
    ow = (wid - 1) * strides[1] + (kw - 1) * dilation[1] + 1 + extra[1]
    out = np.zeros((n, og * group, oh, ow)) + b.reshape(1, -1, 1, 1)
    for g in range(group):
        for i in range(kh):
            for j in range(kw):
                rows = slice(i * dilation[0], i * dilation[0] + (h - 1) * strides[0] + 1, strides[0])
                cols = slice(j * dilation[1], j * dilation[1] + (wid - 1) * strides[1] + 1, strides[1])
                xs = x[:, g * cg : (g + 1) * cg].astype(np.float64)
                ws = w[g * cg : (g + 1) * cg, :, i, j].astype(np.float64)
                out[:, g * og : (g + 1) * og, rows, cols] += np.einsum("nchw,co->nohw", xs, ws)
    return out.astype(x.dtype)


CONV_TRANSPOSES = [
    # (input NCHW, outputs, kernel, strides, dilation, group, extra output rows/cols)
    ((1, 1, 3, 3), 1, (3, 3), (1, 1), (1, 1), 1, (0, 0)),
    ((2, 3, 4, 5), 2, (3, 2), (2, 2), (1, 1), 1, (0, 0)),
    ((1, 2, 3, 3), 4, (2, 3), (2, 1), (2, 2), 1, (1, 0)),
    ((1, 4, 3, 4), 6, (3, 3), (1, 2), (1, 1), 2, (0, 1)),
    ((2, 3, 4, 4), 3, (3, 3), (2, 2), (1, 1), 3, (0, 0)),  # depthwise
    ((1, 2, 2, 2), 4, (1, 1), (3, 3), (1, 1), 2, (2, 2)),  # channel multiplier 2, gaps between the windows
]


@pytest.mark.parametrize("elt", ["f32", "f64"])
@pytest.mark.parametrize("src,outputs,kernel,strides,dilation,group,extra", CONV_TRANSPOSES)
def test_conv_transpose(
    src: tuple[int, ...], outputs: int, kernel: tuple[int, int], strides: tuple[int, int],
    dilation: tuple[int, int], group: int, extra: tuple[int, int], elt: str,
) -> None:  # fmt: skip
    x = sample(elt, *src, low=-1, high=1)
    w, b = sample(elt, src[1], outputs // group, *kernel, low=-1, high=1), sample(elt, outputs, low=-1, high=1)
    want = conv_transpose(x, w, b, strides, dilation, group, extra)
    fn = Function()
    fn.inst(
        "conv_transpose", fn.output("y", want.shape, elt), fn.input("x", x), fn.constant("w", w),
        fn.constant("b", b), kernels=kernel, strides=strides, group=group, dilation=dilation,
    )  # fmt: skip
    check(fn, {"y": want})


@pytest.mark.parametrize(
    "op,elt,message",
    [("element_log", "i32", "floating-point buffers only"), ("softmax", "i64", "floating-point buffers only"),
     ("element_not", "f32", "i1 buffers only"), ("element_and", "i32", "i1 buffers only")],
)  # fmt: skip
def test_element_type_rules_are_located_errors(op: str, elt: str, message: str) -> None:
    fn = Function()
    y = fn.output("y", (4,), elt)
    fn.inst(op, y, *(fn.input(name, sample(elt, 4)) for name in "ab"[: len(ROLES[op]) - 1]))
    with pytest.raises(VerificationError, match=f"glow_ir.{op}.*{message}"):
        lowered(fn.text())


def test_f64_to_f16_rounds_once() -> None:
    # Just above and below f16 ties: rounding through f32 to nearest would land on the tie and round it to even.
    ulp16 = 2.0**-10
    ties = 1.0 + ulp16 * np.array([0.5, 1.5, 2.5])
    off = 2.0**-40  # far below an f32 ulp, so an f32 rounded to nearest would lose it
    x = np.concatenate([ties, ties + off, ties - off, -(ties + off), [1e300, -1e300, 1e-300, 65520.0, 65519.0]])
    got = run_one("convert_to", "f16", x.shape, x)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got, x.astype(np.float16))


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("ratio,half_pixel", [(0, True), (2, False)])
def test_roi_align_nchw(mode: str, ratio: int, half_pixel: bool) -> None:
    """The NCHW lowering (the CPU backend compiles RoiAlign in NHWC) against the op's evaluator, which the
    ONNX tests hold to onnxruntime; a batch index beyond the batch reads the last image in both."""
    x = rand(2, 3, 9, 11)
    rois = np.float32([[0, 0, 8, 8], [1.3, 2.7, 7.1, 8.4], [-3, -2, 15, 13], [8, 2, 3, 9], [-30, -30, -20, -25]])
    batch = np.int64([0, 1, 1, 0, 5])
    attrs = {"output_size": (3, 2), "sampling_ratio": ratio, "spatial_scale": 0.75, "half_pixel": half_pixel,
             "mode": mode}  # fmt: skip
    fn = Function()
    fn.inst("roi_align", fn.output("y", (5, 3, 3, 2)), fn.input("x", x), fn.input("rois", rois),
            fn.input("bi", batch), **attrs)  # fmt: skip
    module = ir.Module.parse(fn.text(), context=make_context())
    instruction = next(o for o in ops.walk_ops(module.operation) if o.name == "glow_ir.roi_align")
    want = reference.roi_align(instruction, [x, rois, batch]).astype(np.float32)
    check(fn, {"y": want})
