"""glow-ir-to-linalg's lowering of random_uniform and random_normal: Philox-4x32-10 per element in scf loops,
the same arithmetic as the reference (glow_mlir/opdefs/random.py, which states the generator and transforms).

The run counter is the generated code's own state: each instruction gets a private `memref<1xi64>` global,
which it increments atomically (`memref.atomic_rmw addi`) as it starts; the value before the increment is
this run's `run`. So state lives in the compiled model, is per op as onnxruntime's per-node generators
are, needs no input the caller supplies, and concurrent runs from several Python threads each get a run of
their own. A JIT model has its own globals; the library a compile cache entry links is loaded once per process
(ctypes), so sessions loaded from one entry in one process share those counters; START, at each load,
zeroes them, so the sequence restarts for the newest session (a session still running another's continues
from there).

An op without an ONNX seed XORs its key with the global SESSION_SEED, zero in the code and set at load time
through the module's function START by glow_mlir/compiled.py (a new seed per compiled model, or
GLOW_MLIR_RANDOM_SEED), which also zeroes the run counters: unseeded ops draw differently in every session,
while the code, and hence the compile cache key, stays the same.
"""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import arith, func, memref
from mlir.dialects import math as mlir_math

from glow_mlir import ops
from glow_mlir.codegen.builders import index, loop_nest, row_major_strides
from glow_mlir.codegen.table import fail, lowering
from glow_mlir.opdefs import random as rnd
from glow_mlir.opdefs import scalar as s

STATE_TYPE = "memref<1xi64>"


@lowering("random_uniform")
def _random_uniform(op: ir.Operation) -> None:
    _lower(op, normal=False)


@lowering("random_normal")
def _random_normal(op: ir.Operation) -> None:
    _lower(op, normal=True)


def _lower(op: ir.Operation, normal: bool) -> None:
    """dest[i] = transform(Philox(counter = (i, run), key)) over every element i, row-major."""
    dest = op.operands[0]
    elt = ops.element_type(dest)
    if not s.is_float(elt):
        raise fail(op, f"draws floats, not {elt}")
    i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
    state = ir.MemRefType(ir.Type.parse(STATE_TYPE))
    session, counter = _state(_module(op))
    run = memref.atomic_rmw(arith.AtomicRMWKind.addi, s.constant(i64, 1), memref.get_global(state, counter), [index(0)])
    key = s.constant(i64, ops.integer(op, "seed"))
    if not ops.integer(op, "seeded"):
        key = arith.xori(key, memref.load(memref.get_global(state, session), [index(0)]))
    keys = _split(key)
    runs = _split(run)
    strides = row_major_strides(ops.shape(dest))

    def element(at: list[ir.Value]) -> None:
        linear = index(0)
        for i, stride in zip(at, strides, strict=True):
            linear = arith.addi(linear, arith.muli(i, index(stride)))
        words = philox([*_split(arith.index_cast(i64, linear)), *runs], keys)
        value = _normal(op, words, elt) if normal else _uniform(op, words, elt)
        memref.store(value, dest, at)

    loop_nest(list(ops.shape(dest)), element)


def philox(counter: list[ir.Value], key: list[ir.Value]) -> list[ir.Value]:
    """Philox-4x32-10 of four i32 counter words under two i32 key words (reference: opdefs/random.py)."""
    i32 = ir.IntegerType.get_signless(32)
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for round_ in range(rnd.PHILOX_ROUNDS):
        hi0, lo0 = _mulhilo(c0, rnd.PHILOX_M[0])
        hi1, lo1 = _mulhilo(c2, rnd.PHILOX_M[1])
        c0, c1, c2, c3 = arith.xori(arith.xori(hi1, c1), k0), lo1, arith.xori(arith.xori(hi0, c3), k1), lo0
        if round_ < rnd.PHILOX_ROUNDS - 1:
            k0, k1 = arith.addi(k0, s.constant(i32, rnd.PHILOX_W[0])), arith.addi(k1, s.constant(i32, rnd.PHILOX_W[1]))
    return [c0, c1, c2, c3]


def _mulhilo(word: ir.Value, multiplier: int) -> tuple[ir.Value, ir.Value]:
    """The high and low 32 bits of the 64-bit product of an i32 word (unsigned) and a constant."""
    i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
    product = arith.muli(arith.extui(i64, word), s.constant(i64, multiplier))
    return arith.trunci(i32, arith.shrui(product, s.constant(i64, 32))), arith.trunci(i32, product)


def _uniform(op: ir.Operation, w: list[ir.Value], elt: ir.Type) -> ir.Value:
    """low + u (high - low), u in [0, 1) from the top 24 bits of w0 (f32), or 53 bits of w0, w1 (f64)."""
    low, high = ops.floating(op, "low"), ops.floating(op, "high")
    if str(elt) == "f64":
        f64 = ir.F64Type.get()
        u = _unit53(w[0], w[1], 0.0)
        return arith.addf(s.constant(f64, low), arith.mulf(u, s.constant(f64, high - low)))
    f32 = ir.F32Type.get()
    u = arith.mulf(arith.uitofp(f32, arith.shrui(w[0], s.constant(w[0].type, 8))), s.constant(f32, 2.0**-24))
    # high - low rounded to f32 as the reference computes it.
    span = float(np.float32(high) - np.float32(low))
    value = arith.addf(s.constant(f32, low), arith.mulf(u, s.constant(f32, span)))
    return value if elt == f32 else arith.truncf(elt, value)


def _normal(op: ir.Operation, w: list[ir.Value], elt: ir.Type) -> ir.Value:
    """mean + scale sqrt(-2 log u1) cos(2 pi u2) in f64 (Box-Muller), rounded once to the result type."""
    f64 = ir.F64Type.get()
    if str(elt) == "f64":
        u1, u2 = _unit53(w[0], w[1], 1.0), _unit53(w[2], w[3], 0.0)
    else:
        u1 = arith.mulf(arith.addf(arith.uitofp(f64, w[0]), s.constant(f64, 1.0)), s.constant(f64, 2.0**-32))
        u2 = arith.mulf(arith.uitofp(f64, w[1]), s.constant(f64, 2.0**-32))
    radius = mlir_math.sqrt(arith.mulf(s.constant(f64, -2.0), mlir_math.log(u1)))
    z = arith.mulf(radius, mlir_math.cos(arith.mulf(u2, s.constant(f64, rnd.TWO_PI))))
    mean, scale = s.constant(f64, ops.floating(op, "mean")), s.constant(f64, ops.floating(op, "scale"))
    value = arith.addf(mean, arith.mulf(scale, z))
    if str(elt) == "f64":
        return value
    # To f16 and bf16 through f32, as the reference rounds: LLVM's direct f64 -> f16 rounds twice on x86 anyway.
    narrow = arith.truncf(ir.F32Type.get(), value)
    return narrow if str(elt) == "f32" else arith.truncf(elt, narrow)


def _unit53(w0: ir.Value, w1: ir.Value, offset: float) -> ir.Value:
    """((w0 >> 5) 2^26 + (w1 >> 6) + offset) 2^-53 in f64: uniform in [0, 1), or (0, 1] with offset 1."""
    f64 = ir.F64Type.get()
    high = arith.mulf(arith.uitofp(f64, arith.shrui(w0, s.constant(w0.type, 5))), s.constant(f64, 2.0**26))
    bits = arith.addf(high, arith.uitofp(f64, arith.shrui(w1, s.constant(w1.type, 6))))
    if offset:
        bits = arith.addf(bits, s.constant(f64, offset))
    return arith.mulf(bits, s.constant(f64, 2.0**-53))


def _split(value: ir.Value) -> list[ir.Value]:
    """An i64's low and high i32 words."""
    i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
    return [arith.trunci(i32, value), arith.trunci(i32, arith.shrui(value, s.constant(i64, 32)))]


def _module(op: ir.Operation) -> ir.Operation:
    parent = op.parent
    while parent.name != "builtin.module":
        parent = parent.parent
    return parent


def _global(module: ir.Operation, name: str) -> str:
    """A new zero private `memref<1xi64>` global of the module named `name` (renamed apart by the symbol
    table)."""
    symbols = ir.SymbolTable(module)  # before the new global: the table refuses two symbols of one name
    state = ir.MemRefType(ir.Type.parse(STATE_TYPE))
    zero = ir.DenseElementsAttr.get(np.zeros(1, np.int64), type=ir.RankedTensorType.get([1], state.element_type))
    with ir.InsertionPoint.at_block_begin(module.regions[0].blocks[0]), ir.Location.unknown():
        created = memref.GlobalOp(sym_name=name, type_=ir.TypeAttr.get(state), sym_visibility="private",
                                  initial_value=zero, alignment=8)
    return ir.StringAttr(symbols.insert(created)).value


def _state(module: ir.Operation) -> tuple[str, str]:
    """The module's session-seed global and a new run counter global for one instruction. The first call also
    makes `START(i64 seed)`, which sets the session seed and zeroes every run counter (each later counter adds
    its store): a plain C function, since MLIR's ExecutionEngine looks up functions, not data; compiled.py
    calls it at load, so a model loaded from the compile cache, whose library one process shares, starts its
    draws from the first run too."""
    symbols = ir.SymbolTable(module)
    state = ir.MemRefType(ir.Type.parse(STATE_TYPE))
    i64 = ir.IntegerType.get_signless(64)
    if rnd.START in symbols:
        start = symbols[rnd.START]
        session = ir.FlatSymbolRefAttr(next(iter(start.regions[0].blocks[0].operations)).attributes["name"]).value
    else:
        session = _global(module, rnd.SESSION_SEED)
        with ir.InsertionPoint(module.regions[0].blocks[0]), ir.Location.unknown():
            start = func.FuncOp(rnd.START, ([i64], []))
            with ir.InsertionPoint(start.add_entry_block()):
                memref.store(start.arguments[0], memref.get_global(state, session), [index(0)])
                func.ReturnOp([])
    counter = _global(module, "glow_random_run")
    body = start.regions[0].blocks[0]
    with ir.InsertionPoint.at_block_terminator(body), ir.Location.unknown():
        memref.store(s.constant(i64, 0), memref.get_global(state, counter), [index(0)])
    return session, counter
