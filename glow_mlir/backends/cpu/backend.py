"""The CPU backend's answers to the backend interface: it lowers every op that has a rule to the primitives
its kernels implement, moves convolutions and pools to NHWC, and schedules and JIT-compiles linalg for the
host CPU."""

from __future__ import annotations

from glow_mlir import opdefs
from glow_mlir.backends.base import Backend, register_backend
# The int8 product (its op, glow-cpu-int8 and its vpdpbusd lowering) register on import.
from glow_mlir.backends.cpu import int8_gemm, int8_rewrite  # noqa: F401
# The weight-only 2/4/8-bit product (its op, glow-cpu-nbits and its kernel).
from glow_mlir.backends.cpu import nbits  # noqa: F401
# The bf16 products' recipes register on import, guarded to take their ops before the f32 recipes.
from glow_mlir.backends.cpu.bf16_recipes import native_product
from glow_mlir.codegen.table import LOWERINGS
from glow_mlir.passes.lowering import irgen
from glow_mlir.passes.lowering.lower import RULES


def supports(name: str) -> bool:
    """A glow op compiles when glow-lower rewrites it, IRGen makes it an instruction with a linalg lowering, or
    IRGen takes it specially (constant, reshape, concat, insert_tensor)."""
    if name in RULES or name == irgen.CONSTANT:
        return True
    if name not in irgen.rewrites():
        return False
    instruction = opdefs.glow_op(name).ir
    return instruction is None or instruction.name in LOWERINGS


CPU = register_backend(
    Backend(
        name="cpu",
        description="NHWC direct convolutions, packed GEMMs and vector code for the host CPU, JIT or object code",
        layout=("glow-cpu-int8", "glow-cpu-nbits", "glow-cpu-layout", "glow-sink-transpose"),
        memory=("glow-cpu-fuse-expansion", "glow-cpu-pad-channels"),
        codegen=("glow-cpu-schedule", "glow-cpu-external-weights", "glow-to-llvm"),
        supports=supports,
        native_bf16=native_product,
    )
)
