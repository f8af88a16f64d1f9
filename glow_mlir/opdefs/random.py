"""Definitions of the random-number ops (ONNX RandomUniform / RandomNormal and, through them, the Like ops,
Bernoulli and Multinomial) and their numpy meaning, which the compiled code reproduces bit for bit.

The generator is counter-based, Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
SC 2011; the Random123 constants): element i of a draw is a pure function of (key, i, run), so the numbers do
not depend on threads, tiling or evaluation order. The 128-bit counter is (i low, i high, run low, run high),
i the element's row-major index; the 64-bit key is the op's `seed`, XOR-ed with the compiled model's session
seed when the op is not `seeded`. `run` is how many times this op ran before in the compiled model (each op
keeps its own count, as onnxruntime's nodes each keep their generator; codegen/random.py), so every run
draws new numbers while a seeded model repeats its sequence of draws from one compile to the next.

Transforms, per element from its own Philox block (words w0..w3, unsigned 32-bit):
- uniform f16/bf16/f32: u = (w0 >> 8) * 2^-24 in [0, 1), then `low + u * (high - low)` in f32, rounded once
  to the result type; f64: u = ((w0 >> 5) * 2^26 + (w1 >> 6)) * 2^-53, the same in f64.
- normal (Box-Muller, its cosine branch): u1 = (w0 + 1) * 2^-32 in (0, 1], u2 = w1 * 2^-32 (for f64, 53-bit
  u1 = (w0>>5 * 2^26 + w1>>6 + 1) * 2^-53 and u2 from w2, w3), z = sqrt(-2 log u1) * cos(2 pi u2), then
  `mean + scale * z`, all in f64, rounded to f64 or f32 (f16 and bf16 from that f32). The compiled code
  calls libm's log and cos, which this reference calls too (Python's math module), so results agree bit for
  bit (checked for every float type) where both use the same libm; another libm may differ in the last f64
  bit, hence at most 1 ulp of the result.

Each element spends a whole Philox block on at most two words: simple, and one element's numbers never depend
on its neighbours' (1e6 f32 uniforms take 0.7 ms, normals 25 ms, mostly libm's log and cos).
"""

from __future__ import annotations

import contextvars
import math as pymath
import struct
import zlib

import numpy as np
from mlir import ir

from glow_mlir import ops
from glow_mlir.opdefs import shapes
from glow_mlir.opdefs import types as t
from glow_mlir.opdefs.base import Attr, Evaluator, IrDef, OpDef, define

# Philox-4x32's multipliers and Weyl key increments (Random123), and its standard round count.
PHILOX_M = (0xD2511F53, 0xCD9E8D57)
PHILOX_W = (0x9E3779B9, 0xBB67AE85)
PHILOX_ROUNDS = 10
MASK32 = 0xFFFFFFFF
TWO_PI = 2.0 * pymath.pi

# (run, session seed) of the interpreter's draws: `interpret(..., random_run=, random_seed=)` sets them, so the
# oracle can compute what a compiled model's n-th run with a given session seed computes.
DRAW: contextvars.ContextVar[tuple[int, int]] = contextvars.ContextVar("glow_random_draw", default=(0, 0))

SEED_ATTRS = (("seed", Attr.INT), ("seeded", Attr.BOOL))


def seed_of(onnx_seed: float | None, node: str) -> tuple[int, bool]:
    """The (64-bit key, seeded) of an op: an ONNX `seed` (a float) by its float32 bits, so every distinct
    seed is its own stream; without one, a key from the node's name (each node its own stream), which the
    compiled model's session seed, drawn at load, makes different from one load to the next."""
    if onnx_seed is not None:
        return struct.unpack("<I", struct.pack("<f", float(onnx_seed)))[0], True
    return zlib.crc32(node.encode()) | (zlib.adler32(node.encode()) << 32), False


def philox(counter: tuple[np.ndarray, ...], key: tuple[int, int]) -> tuple[np.ndarray, ...]:
    """Philox-4x32-10 of the four uint32 counter words (arrays) under a two-word key: four uint32 arrays."""
    c0, c1, c2, c3 = (np.asarray(c, np.uint64) for c in counter)
    k0, k1 = key
    for _ in range(PHILOX_ROUNDS):
        p0, p1 = c0 * np.uint64(PHILOX_M[0]), c2 * np.uint64(PHILOX_M[1])
        hi0, lo0, hi1, lo1 = p0 >> np.uint64(32), p0 & np.uint64(MASK32), p1 >> np.uint64(32), p1 & np.uint64(MASK32)
        c0, c1, c2, c3 = hi1 ^ c1 ^ np.uint64(k0), lo1, hi0 ^ c3 ^ np.uint64(k1), lo0
        k0, k1 = (k0 + PHILOX_W[0]) & MASK32, (k1 + PHILOX_W[1]) & MASK32
    return tuple(c.astype(np.uint32) for c in (c0, c1, c2, c3))


def key_of(op: ir.Operation, session: int) -> tuple[int, int]:
    """The op's Philox key words: its seed, XOR the session seed when it is not seeded."""
    key = ops.integer(op, "seed") & (2**64 - 1)
    if not ops.integer(op, "seeded"):
        key ^= session & (2**64 - 1)
    return key & MASK32, key >> 32


def words(op: ir.Operation) -> tuple[np.ndarray, ...]:
    """The Philox block of every element of the op's result (row-major), for the interpreter's draw."""
    run, session = DRAW.get()
    count = int(np.prod(ops.shape(op.results[0]), dtype=np.int64))
    index = np.arange(count, dtype=np.uint64)
    counter = (index & np.uint64(MASK32), index >> np.uint64(32),
               np.full(count, run & MASK32, np.uint64), np.full(count, (run >> 32) & MASK32, np.uint64))
    return philox(counter, key_of(op, session))


def is_double(op: ir.Operation) -> bool:
    return str(ops.element_type(op.results[0])) == "f64"


def uniform01_f64(w0: np.ndarray, w1: np.ndarray) -> np.ndarray:
    """53-bit uniforms in [0, 1) from two words."""
    return ((w0 >> 5).astype(np.float64) * 2.0**26 + (w1 >> 6).astype(np.float64)) * 2.0**-53


def _uniform(op: ir.Operation, _: list[np.ndarray]) -> np.ndarray:
    w = words(op)
    low, high = ops.floating(op, "low"), ops.floating(op, "high")
    kind = np.float64 if is_double(op) else np.float32
    u = uniform01_f64(w[0], w[1]) if is_double(op) else (w[0] >> 8).astype(np.float32) * np.float32(2.0**-24)
    value = kind(low) + u * (kind(high) - kind(low))
    return value.reshape(ops.shape(op.results[0]))


def _normal(op: ir.Operation, _: list[np.ndarray]) -> np.ndarray:
    w = words(op)
    if is_double(op):
        u1 = ((w[0] >> 5).astype(np.float64) * 2.0**26 + (w[1] >> 6).astype(np.float64) + 1.0) * 2.0**-53
        u2 = uniform01_f64(w[2], w[3])
    else:
        u1 = (w[0].astype(np.float64) + 1.0) * 2.0**-32
        u2 = w[1].astype(np.float64) * 2.0**-32
    # libm's log and cos, as the compiled code calls them (numpy's own vector code may differ in the last bit).
    log = np.frompyfunc(pymath.log, 1, 1)(u1).astype(np.float64)
    cos = np.frompyfunc(pymath.cos, 1, 1)(u2 * TWO_PI).astype(np.float64)
    z = np.sqrt(-2.0 * log) * cos
    value = ops.floating(op, "mean") + ops.floating(op, "scale") * z
    # f16 and bf16 are rounded through f32, as the compiled code does (codegen/random.py).
    return (value if is_double(op) else value.astype(np.float32)).reshape(ops.shape(op.results[0]))


def _stated(_: object, __: object, result: tuple[int, ...] | None) -> tuple[int, ...]:
    if result is None:
        raise shapes.ShapeError("has no operands to infer its result shape from: state it")
    return shapes.tensor(result)


def _float_result(operands: object, result: str | None) -> str:
    if result not in t.FLOATS:
        raise shapes.ShapeError(f"result element type {result} must be a float ({', '.join(t.FLOATS)})")
    return result


def _define(name: str, params: tuple[str, str], meaning: str, evaluate: Evaluator) -> None:
    """One random op and its instruction: `params` its two float attributes, `meaning` what it draws."""
    draws = "a new draw on every run of the compiled model (Philox-4x32-10 of (seed, element index, run))"
    define(OpDef(
        name, f"{meaning} of the stated shape and float type: {draws}.", (),
        attrs=(*((p, Attr.FLOAT) for p in params), *SEED_ATTRS), shape=_stated, types=_float_result,
        evaluate=evaluate,
        ir=IrDef(name, (("dest", "out"),), attrs=(*params, "seed", "seeded"), graph=name,
                 doc=f"dest = {meaning.lower()}, a new draw per run (glow_mlir/opdefs/random.py)."),
    ))


_define("random_uniform", ("low", "high"), "Uniform numbers in [low, high)", _uniform)
_define("random_normal", ("mean", "scale"), "Normal numbers N(mean, scale^2)", _normal)

# The global that holds a compiled model's session seed, and the C function `void(int64_t seed)` that sets it
# and zeroes the run counters (codegen/random.py; compiled.py calls it at load).
SESSION_SEED = "glow_random_session_seed"
START = "glow_random_start"
