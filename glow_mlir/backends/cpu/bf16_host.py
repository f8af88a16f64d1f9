"""Whether this host's CPU should run bf16 products on vdpbf16ps (bf16_recipes.py) or widen them to f32.

avx512_bf16 alone does not make the bf16 kernels faster. vdpbf16ps does 32 multiply-adds per zmm instruction,
an f32 FMA 16, so bf16 wins where both issue at the same rate: on AMD Zen 4 (one of each per cycle). On this
project's Intel Xeon (Sapphire Rapids class) vdpbf16ps issues once every 2 cycles and the FMA twice per cycle,
so vdpbf16ps has half the f32 peak (measured: 1.9 G vdpbf16ps/s = 120 GFLOP/s against 7.4 G FMA/s = 238
GFLOP/s, one core), and the kernels ran at 0.6x the f32 ones. Rather than a table of CPU models, the CPU
backend measures it once per process: `dot_pays()` JIT-compiles two loops of 12 independent accumulators,
one of vdpbf16ps and one of FMAs, times each (best of 3, about 20 ms in all) and compares multiply-adds per
second. The rates differ by 2x either way on the CPUs above, far beyond timing noise, so the answer is stable.
"""

from __future__ import annotations

import ctypes
import functools
import time

import numpy as np
from mlir import execution_engine, ir, passmanager
from mlir.runtime import get_ranked_memref_descriptor

from glow_mlir.backends.cpu.host import cpu_flags

_CHAINS = 12  # independent accumulators: enough to cover either instruction's latency at full rate
_TRIPS = 1_000_000
_PIPELINE = (
    "builtin.module(convert-scf-to-cf,convert-vector-to-llvm{enable-x86vector=1},finalize-memref-to-llvm,"
    "convert-arith-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts)"
)


@functools.cache
def has_avx512_bf16() -> bool:
    """Whether the CPU has vdpbf16ps (Linux's cpuinfo flag; False where it cannot tell). The JIT compiles for
    the host, so without it no product may use it."""
    return "avx512_bf16" in cpu_flags()


@functools.cache
def dot_pays() -> bool:
    """Whether vdpbf16ps does at least as many multiply-adds per second as the f32 FMA on this host (the
    module doc); False without avx512_bf16."""
    if not has_avx512_bf16():
        return False
    with ir.Context():
        module = ir.Module.parse(_loop("dot", "x86vector.avx512.dot %x{i}, %h, %h : vector<32xbf16> -> vector<16xf32>")
                                 + _loop("fma", "vector.fma %o, %o, %x{i} : vector<16xf32>"))  # fmt: skip
        passmanager.PassManager.parse(_PIPELINE).run(module.operation)
        engine = execution_engine.ExecutionEngine(module, opt_level=2)
        out = np.zeros(16, np.float32)
        trips = ctypes.c_int64(_TRIPS)
        args = (ctypes.pointer(trips), ctypes.pointer(ctypes.pointer(get_ranked_memref_descriptor(out))))
        best = {"dot": float("inf"), "fma": float("inf")}
        for _ in range(3):
            for name in best:
                start = time.thread_time()
                engine.invoke(name, *args)
                best[name] = min(best[name], time.thread_time() - start)
        del engine
    # 32 multiply-adds per vdpbf16ps, 16 per FMA, the same count of each.
    return 32 / best["dot"] >= 16 / best["fma"]


def _loop(name: str, step: str) -> str:
    """func @name(trips, out): `_CHAINS` accumulators through `trips` iterations of `step` (formatted with
    {i}, reading %x{i}), all summed into out so that none is dead."""
    vec = "vector<16xf32>"
    types = ", ".join([vec] * _CHAINS)
    carried = ", ".join(f"%x{i} = %z" for i in range(_CHAINS))
    body = "\n".join(f"    %y{i} = " + step.format(i=i) for i in range(_CHAINS))
    sums = "\n".join(f"  %s{i} = arith.addf %s{i - 1}, %r#{i} : {vec}" for i in range(1, _CHAINS))
    return f"""
func.func @{name}(%n: index, %out: memref<16xf32>) attributes {{llvm.emit_c_interface}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant dense<0.0> : {vec}
  %o = arith.constant dense<1.0> : {vec}
  %h = arith.constant dense<1.0> : vector<32xbf16>
  %r:{_CHAINS} = scf.for %i = %c0 to %n step %c1 iter_args({carried}) -> ({types}) {{
{body}
    scf.yield {", ".join(f"%y{i}" for i in range(_CHAINS))} : {types}
  }}
  %s0 = arith.addf %r#0, %z : {vec}
{sums}
  vector.store %s{_CHAINS - 1}, %out[%c0] : memref<16xf32>, {vec}
  return
}}"""
