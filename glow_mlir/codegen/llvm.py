"""glow-to-llvm: the upstream lowering from linalg/arith/math/scf on memrefs to the LLVM dialect.

After glow-ir-to-linalg the module holds only upstream dialects, so this stage is a fixed upstream pass
pipeline run through one PassManager. Each step, in order, and why it is there:

- `convert-linalg-to-loops`: linalg ops on memrefs become scf.for loop nests with loads and stores.
- `lower-affine`: those loops index with affine.apply (strided and dilated windows); make it arith.
- `convert-scf-to-cf`: structured loops (also softmax's own) become branches between blocks.
- `expand-strided-metadata`: subviews (insert/extract_tensor) and reinterpret_casts (tensor_view, grouped
  convolution) become explicit offset/size/stride arithmetic that the memref lowering understands...
- `lower-affine`: ...which it writes as affine.apply, so lower affine once more.
- `finalize-memref-to-llvm`: memref descriptors, load/store, view (the arena), get_global, alloca.
- `convert-math-to-llvm`: exp, sqrt and tanh become LLVM intrinsics.
- `convert-arith-to-llvm`, `convert-cf-to-llvm`: the scalar code and the branches.
- `convert-func-to-llvm`: functions, plus the `_mlir_ciface_` wrappers that `llvm.emit_c_interface` asks for.
- `convert-index-to-llvm`: index-dialect ops that the earlier conversions may emit.
- `convert-ub-to-llvm`: any `ub.poison` that a conversion left behind, which the JIT cannot translate.
- `reconcile-unrealized-casts`: removes the casts left between types the conversions met halfway.
"""

from __future__ import annotations

from mlir import ir
from mlir.passmanager import PassManager

from glow_mlir.errors import PipelineError
from glow_mlir.passes.registry import register

LLVM_PIPELINE = (
    "builtin.module("
    "convert-linalg-to-loops,"
    "lower-affine,"
    "convert-scf-to-cf,"
    "expand-strided-metadata,"
    "lower-affine,"
    "finalize-memref-to-llvm,"
    "convert-math-to-llvm,"
    "convert-arith-to-llvm,"
    "convert-cf-to-llvm,"
    "convert-func-to-llvm,"
    "convert-index-to-llvm,"
    "convert-ub-to-llvm,"
    "reconcile-unrealized-casts)"
)


@register("glow-to-llvm")
def to_llvm(module: ir.Module) -> None:
    """Lower linalg/arith/math/scf on memrefs to the LLVM dialect with upstream passes."""
    pm = PassManager.parse(LLVM_PIPELINE, context=module.context)
    try:
        pm.run(module.operation)
    except ir.MLIRError as e:
        notes = "; ".join(f"{d.location}: {d.message}" for d in e.error_diagnostics)
        raise PipelineError(f"glow-to-llvm failed: {notes or e}") from None
