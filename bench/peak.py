"""The machine's single-core peak fp32 throughput, measured with a kernel glow-mlir's MLIR tooling JITs.

The "% of peak" columns of the benchmark divide by this figure, so it is measured rather than taken from a
data sheet (clock, turbo and whether AVX-512 FMAs are full width or double-pumped all vary by machine).

The kernel is MLIR written here as text: one function whose `scf.for` loop carries `ACCUMULATORS`
independent `vector<16xf32>` accumulators as loop-carried values and updates each with one `vector.fma`
per iteration. The accumulators start at distinct values (so LLVM cannot merge the chains) and the multiplier
and addend come from a buffer (so nothing folds); after the loop their sum is stored, so nothing is dead.
Each FMA depends only on its own accumulator's previous value, so with more independent chains than
FMA latency x FMA ports the loop is bound by FMA throughput alone. 24 accumulators plus the two operands fit
in AVX-512's 32 zmm registers with room to spare; 32 accumulators would spill. The module is lowered with
upstream passes and JITed by `mlir.execution_engine.ExecutionEngine` (opt_level 3), which targets the host
CPU, so on an AVX-512 machine each `vector.fma` becomes one `vfmadd231ps zmm`.

Peak = 2 x 16 x ACCUMULATORS x iterations / seconds, the median of `REPEATS` calls of about
`CALL_SECONDS` each after one warm-up call that also sizes the iteration count. Seconds are the calling
thread's CPU time (`time.thread_time`), the clock the benchmark reports by default: on a shared machine wall
time also counts the time other processes held the core (measured here with four busy processes on two
cores: 78 GFLOP/s wall-clock against 116 GFLOP/s CPU time).
"""

from __future__ import annotations

import ctypes
import statistics
import time
from collections.abc import Callable

import numpy as np
from mlir import ir
from mlir.execution_engine import ExecutionEngine
from mlir.passmanager import PassManager
from mlir.runtime import get_ranked_memref_descriptor

LANES = 16
ACCUMULATORS = 24
REPEATS = 5
CALL_SECONDS = 0.2
LOWERING = (
    "builtin.module(convert-scf-to-cf,convert-vector-to-llvm,convert-arith-to-llvm,"
    "finalize-memref-to-llvm,convert-func-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts)"
)


def kernel_source(accumulators: int = ACCUMULATORS) -> str:
    """The MLIR text of `@fma_peak(%ab: memref<2x16xf32>, %out: memref<16xf32>, %n: index)`."""
    vec = f"vector<{LANES}xf32>"
    accs = range(accumulators)
    lines = [
        "func.func @fma_peak(%ab: memref<2x16xf32>, %out: memref<16xf32>, %n: index)"
        " attributes {llvm.emit_c_interface} {",
        "  %c0 = arith.constant 0 : index",
        "  %c1 = arith.constant 1 : index",
        f"  %a = vector.load %ab[%c0, %c0] : memref<2x16xf32>, {vec}",
        f"  %b = vector.load %ab[%c1, %c0] : memref<2x16xf32>, {vec}",
    ]
    for i in accs:
        lines.append(f"  %k{i} = arith.constant dense<{float(i)}> : {vec}")
        lines.append(f"  %init{i} = arith.addf %b, %k{i} : {vec}")
    inits = ", ".join(f"%acc{i} = %init{i}" for i in accs)
    types = ", ".join([vec] * accumulators)
    lines.append(f"  %r:{accumulators} = scf.for %i = %c0 to %n step %c1 iter_args({inits}) -> ({types}) {{")
    for i in accs:
        lines.append(f"    %f{i} = vector.fma %a, %a, %acc{i} : {vec}")
    lines.append(f"    scf.yield {', '.join(f'%f{i}' for i in accs)} : {types}")
    lines.append("  }")
    lines.append(f"  %s0 = arith.addf %r#0, %r#1 : {vec}")
    for i in range(2, accumulators):
        lines.append(f"  %s{i - 1} = arith.addf %s{i - 2}, %r#{i} : {vec}")
    lines.append(f"  vector.store %s{accumulators - 2}, %out[%c0] : memref<16xf32>, {vec}")
    lines.append("  return")
    lines.append("}")
    return "\n".join(lines)


def measure_peak(
    clock: Callable[[], float] = time.thread_time, accumulators: int = ACCUMULATORS, repeats: int = REPEATS
) -> float:
    """The measured single-core fp32 FMA throughput in GFLOP/s (median of `repeats` calls timed by `clock`)."""
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(kernel_source(accumulators))
        PassManager.parse(LOWERING).run(module.operation)
        engine = ExecutionEngine(module, opt_level=3)
        # a = 1e-4 keeps the accumulators finite and normal (~1e-8 per step) for billions of steps.
        ab = np.full((2, LANES), 1e-4, np.float32)
        out = np.zeros(LANES, np.float32)
        args = [ctypes.pointer(ctypes.pointer(get_ranked_memref_descriptor(x))) for x in (ab, out)]

        def call(iterations: int) -> float:
            count = ctypes.c_int64(iterations)
            start = clock()
            engine.invoke("fma_peak", *args, ctypes.pointer(count))
            return clock() - start

        probe = 1_000_000
        iterations = max(probe, int(probe * CALL_SECONDS / call(probe)))
        flops = 2 * LANES * accumulators * iterations
        rates = [flops / call(iterations) / 1e9 for _ in range(repeats)]
        del engine
    return statistics.median(rates)


if __name__ == "__main__":
    cpu, wall = measure_peak(time.thread_time), measure_peak(time.perf_counter)
    print(f"peak, one core, fp32 FMA on {ACCUMULATORS} x vector<{LANES}xf32>: {cpu:.1f} GFLOP/s by thread CPU time, "
          f"{wall:.1f} GFLOP/s by wall-clock time")
