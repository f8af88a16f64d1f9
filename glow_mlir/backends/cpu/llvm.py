"""glow-to-llvm: the upstream lowering from linalg/arith/math/scf on memrefs to the LLVM dialect.

After glow-ir-to-linalg the module holds only upstream dialects, so this stage is a fixed upstream pass
pipeline run through one PassManager. Each step, in order, and why it is there:

- `symbol-dce`: constant globals that nothing reads any more (weights the schedule repacked into globals of
  their own) would otherwise be compiled into the code a second time.
- `convert-vector-to-scf`: the vector transfers left by glow-cpu-schedule become unrolled vector loads.
- `convert-linalg-to-loops`: linalg ops on memrefs become scf.for loop nests with loads and stores.
- `lower-affine`: those loops index with affine.apply (strided and dilated windows); make it arith.
- `convert-scf-to-cf`: structured loops (also softmax's own) become branches between blocks.
- `expand-strided-metadata`: subviews (insert/extract_tensor) and reinterpret_casts (tensor_view, grouped
  convolution) become explicit offset/size/stride arithmetic that the memref lowering understands...
- `lower-affine`: ...which it writes as affine.apply, so lower affine once more.
- (ours) bool buffers: MLIR 22's memref-to-LLVM lowering asserts on loads of integers narrower than a byte,
  so every `memref.load`/`memref.store` of an `i1` buffer becomes a byte access through a cast of the
  buffer to `i8` (numpy's bool layout, one 0/1 byte per element) plus `trunci`/`extui`. The descriptors of
  both buffer types lower to the same LLVM struct, so `reconcile-unrealized-casts` removes the casts.
- `math-extend-to-supported-types`: f16 and bf16 math functions are computed in f32, where LLVM has them.
- `arith-emulate-unsupported-floats`, `arith-expand{include-bf16}`: bf16 arithmetic is computed in f32 and
  its conversions become integer code (rounding to nearest even), so no bf16 instruction or libcall
  (`__truncsfbf2`) is left for LLVM, whatever the CPU has.
- `finalize-memref-to-llvm`: memref descriptors, load/store, view (the arena), get_global, alloca.
- `convert-math-to-llvm`: math ops become LLVM intrinsics. sqrt, abs, floor, ceil, roundeven and copysign
  are instructions; LLVM's x86 backend turns exp, log, pow, sin, cos and tanh into calls of the C library's
  expf/logf/powf/sinf/... (f64: exp/log/...), which the JIT resolves in this process.
- `convert-arith-to-llvm`, `convert-cf-to-llvm`: the scalar code and the branches.
- `convert-func-to-llvm`: functions, plus the `_mlir_ciface_` wrappers that `llvm.emit_c_interface` asks for.
- `convert-index-to-llvm`: index-dialect ops that the earlier conversions may emit.
- `convert-ub-to-llvm`: any `ub.poison` that a conversion left behind, which the JIT cannot translate.
- `reconcile-unrealized-casts`: removes the casts left between types the conversions met halfway.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, builtin, memref
from mlir.passmanager import PassManager

from glow_mlir import ops
from glow_mlir.errors import PipelineError
from glow_mlir.passes.registry import register

# The upstream pipeline, in two parts: the bool fix-up runs between them, once every buffer access is an
# explicit memref.load or memref.store.
TO_LOOPS_PIPELINE = (
    "builtin.module("
    "symbol-dce,"
    "convert-vector-to-scf{full-unroll=true},"
    "convert-linalg-to-loops,"
    "lower-affine,"
    "convert-scf-to-cf,"
    "expand-strided-metadata,"
    "lower-affine)"
)
LLVM_PIPELINE = (
    "builtin.module("
    "math-extend-to-supported-types,"
    "arith-emulate-unsupported-floats{source-types=bf16 target-type=f32},"
    "arith-expand{include-bf16=true},"
    "convert-vector-to-llvm{enable-x86vector=1},"
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
    _run(module, TO_LOOPS_PIPELINE)
    bool_accesses_as_bytes(module)
    _run(module, LLVM_PIPELINE)


def _run(module: ir.Module, pipeline: str) -> None:
    pm = PassManager.parse(pipeline, context=module.context)
    try:
        pm.run(module.operation)
    except ir.MLIRError as e:
        notes = "; ".join(f"{d.location}: {d.message}" for d in e.error_diagnostics)
        raise PipelineError(f"glow-to-llvm failed: {notes or e}") from None


def _byte_buffer(buffer: ir.Value) -> ir.Value:
    """`buffer` (of i1) seen as the same memory of i8, one byte per element."""
    t = ir.MemRefType(buffer.type)
    byte = ir.MemRefType.get(t.shape, ir.IntegerType.get_signless(8), t.layout, t.memory_space)
    return builtin.unrealized_conversion_cast([byte], [buffer])


def _is_bool_buffer(value: ir.Value) -> bool:
    elt = ir.MemRefType(value.type).element_type
    return isinstance(elt, ir.IntegerType) and ir.IntegerType(elt).width == 1


def bool_accesses_as_bytes(module: ir.Module) -> None:
    """Rewrites every load and store of an i1 memref into a byte access plus trunci/extui, in place."""
    with module.context:
        for op in ops.walk_ops(module.operation):
            if op.name == "memref.load" and _is_bool_buffer(op.operands[0]):
                with op.location, ir.InsertionPoint(op):
                    byte = memref.load(_byte_buffer(op.operands[0]), list(op.operands[1:]))
                    op.results[0].replace_all_uses_with(arith.trunci(op.results[0].type, byte))
                op.erase()
            elif op.name == "memref.store" and _is_bool_buffer(op.operands[1]):
                with op.location, ir.InsertionPoint(op):
                    byte = arith.extui(ir.IntegerType.get_signless(8), op.operands[0])
                    memref.store(byte, _byte_buffer(op.operands[1]), list(op.operands[2:]))
                op.erase()
