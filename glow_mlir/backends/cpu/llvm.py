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
- (ours) bare pointers: every private function (outlined kernels and loop nests) whose memrefs all have static
  shapes, strides and offsets takes each as one pointer (`llvm.bareptr`, which convert-func-to-llvm honours for
  the function and its calls), not a descriptor of 3 + 2 x rank values (`bare_pointer_calls`).
- `math-extend-to-supported-types`: f16 and bf16 math functions are computed in f32, where LLVM has them.
- `convert-math-to-llvm`, then `convert-math-to-libm`: the math ops LLVM has intrinsics for become those
  (see below); the others (tan, asin, acos, atan, sinh, cosh and the inverse hyperbolic functions) become
  calls of the C library's tanf/asinf/... (a vector op one call per element), resolved in this process.
- `arith-emulate-unsupported-floats`, `arith-expand{include-bf16}`: bf16 arithmetic is computed in f32 and
  its conversions become integer code (rounding to nearest even), so no bf16 instruction or libcall
  (`__truncsfbf2`) is left for LLVM, whatever the CPU has.
- `finalize-memref-to-llvm`: memref descriptors, load/store, view (the arena), get_global, alloca.
- `convert-math-to-llvm`: math ops become LLVM intrinsics. sqrt, abs, floor, ceil, roundeven and copysign
  are instructions; LLVM's x86 backend turns exp, log, pow, sin, cos and tanh into calls of the C library's
  expf/logf/powf/sinf/... (f64: exp/log/...), which the JIT resolves in this process (the f32 exp, log,
  tanh, sin and cos of kernels are arithmetic by then: fastmath.py).
- `convert-arith-to-llvm`, `convert-cf-to-llvm`: the scalar code and the branches.
- `convert-func-to-llvm`: functions, plus the `_mlir_ciface_` wrappers that `llvm.emit_c_interface` asks for.
- `convert-index-to-llvm`: index-dialect ops that the earlier conversions may emit.
- `convert-ub-to-llvm`: any `ub.poison` that a conversion left behind, which the JIT cannot translate.
- `convert-openmp-to-llvm`, only when glow-cpu-parallelize left OpenMP ops (parallel.py): their regions'
  values become LLVM types; the ops themselves go to LLVM IR as calls of the OpenMP runtime.
- `reconcile-unrealized-casts`: removes the casts left between types the conversions met halfway.
- (ours) weights as bytes: every non-splat constant global of f16/f32/f64 or 16/32/64-bit integers becomes
  an `i8` array of the same bytes (in the compile pipeline only the small ones are left by then:
  glow-cpu-external-weights, weights.py, made the large ones declarations). LLVM's AsmPrinter emits an i8
  array as one string of bytes, but any other element type one element at a time (emitGlobalConstantFP),
  which took about 2 s of ResNet-50's 6.4 s compile for its 100 MB of weights. Every use goes through
  `llvm.mlir.addressof` (an opaque pointer) and a GEP that names its own element type, so the global's type
  is free.
- (ours) `no_inline` on every outlined function (outline.py): inlined back, they made the entry function so
  large that LLVM's loop passes took most of the compile (DenseNet-121: `opt -O3` 27 s inlined, 15 s not),
  and the code is no faster for it (bench/ab.py: notes, "Where compile time goes").
- (ours) loop metadata (OUTLINED_LOOPS) on the back edges of every loop of an outlined function.
"""

from __future__ import annotations

import math

import numpy as np
from mlir import ir
from mlir.dialects import arith, builtin, memref
from mlir.passmanager import PassManager

from glow_mlir import ops
from glow_mlir.backends.cpu.outline import OUTLINED_PREFIX
from glow_mlir.backends.cpu.profile import instrument
from glow_mlir.errors import PipelineError
from glow_mlir.passes.registry import register

# The upstream pipeline, in two parts: the bool fix-up runs between them, once every buffer access is an
# explicit memref.load or memref.store. The passes that work function by function are nested in func.func
# (llvm.func once functions are converted), so that MLIR runs them on several functions at once: the same
# output, and DenseNet-121's ~1000 functions go to loops in about half the time (notes: "Where compile time
# goes").
TO_LOOPS_PIPELINE = (
    "builtin.module("
    "symbol-dce,"
    "func.func("
    "convert-vector-to-scf{full-unroll=true},"
    "convert-linalg-to-loops,"
    "lower-affine,"
    "convert-scf-to-cf,"
    "expand-strided-metadata,"
    "lower-affine))"
)
LLVM_PIPELINE = (
    "builtin.module("
    "func.func("
    "math-extend-to-supported-types,"
    "convert-math-to-llvm),"
    "convert-math-to-libm,"
    "func.func("
    "arith-emulate-unsupported-floats{source-types=bf16 target-type=f32},"
    "arith-expand{include-bf16=true},"
    "convert-vector-to-llvm{enable-x86vector=1}),"
    "finalize-memref-to-llvm,"
    "func.func("
    "convert-math-to-llvm,"
    "convert-arith-to-llvm),"
    "convert-cf-to-llvm,"
    "convert-func-to-llvm,"
    "llvm.func("
    "convert-index-to-llvm,"
    "convert-ub-to-llvm),"
    "reconcile-unrealized-casts)"
)
# Replaces the last step of LLVM_PIPELINE for a module with OpenMP ops (glow-cpu-parallelize).
OPENMP_STEP = "convert-openmp-to-llvm,reconcile-unrealized-casts"


@register("glow-to-llvm", options=("profile",))
def to_llvm(module: ir.Module, profile: str = "0") -> None:
    """Lower linalg/arith/math/scf on memrefs to the LLVM dialect with upstream passes; with `profile=1`, first
    time every call of an outlined kernel into a counters buffer (profile.py: the profiling compile variant)."""
    if profile not in ("0", "false"):
        instrument(module)
    _run(module, TO_LOOPS_PIPELINE)
    bool_accesses_as_bytes(module)
    bare_pointer_calls(module)
    threaded = any(op.name == "omp.parallel" for op in ops.walk_ops(module.operation))
    _run(module, LLVM_PIPELINE.replace("reconcile-unrealized-casts", OPENMP_STEP) if threaded else LLVM_PIPELINE)
    with module.context:
        for op in module.body.operations:
            if op.operation.name == "llvm.mlir.global":
                weights_as_bytes(op.operation)
            elif op.operation.name == "llvm.func":
                name = ir.StringAttr(op.attributes["sym_name"]).value
                if name.startswith(OUTLINED_PREFIX):
                    op.attributes["no_inline"] = ir.UnitAttr.get()
                    annotate_loops(op.operation, ir.Attribute.parse(OUTLINED_LOOPS))


# convert-func-to-llvm passes a function marked so, and its calls, one pointer per memref instead of a
# descriptor (upstream's on-demand bare-pointer convention).
BARE_POINTERS = "llvm.bareptr"


def bare_pointer_calls(module: ir.Module) -> None:
    """Marks every private function (the outlined kernels and loop nests) whose memrefs all have static shapes,
    strides and offsets for the bare-pointer calling convention: each memref argument is its aligned pointer, and
    the callee rebuilds the rest from its type. With descriptors, each memref argument was 3 + 2 x rank values
    that the entry function extracted from structs and passed: CSATv2 QDQ's entry function was 143 thousand lines
    of LLVM IR for its 10 thousand calls, and the longest part of LLVM's code generation (llc 4.5 s, the
    machine scheduler and instruction selection on one block)."""
    with module.context:
        for op in module.body.operations:
            if op.operation.name != "func.func" or not op.regions[0].blocks:
                continue
            visibility = op.attributes["sym_visibility"] if "sym_visibility" in op.attributes else None
            if visibility is None or ir.StringAttr(visibility).value != "private":
                continue
            signature = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
            if not signature.results and all(_bare(t) for t in signature.inputs):
                op.attributes[BARE_POINTERS] = ir.UnitAttr.get()


def _bare(t: ir.Type) -> bool:
    """Whether an argument of type `t` passes as one value under the bare-pointer convention: not a memref, or a
    memref of static shape, strides and offset (LLVMTypeConverter::canConvertToBarePtr)."""
    if not isinstance(t, ir.MemRefType):
        return not isinstance(t, ir.UnrankedMemRefType)
    return ops.fully_static(ir.MemRefType(t))


# LLVM's loop metadata for the loops of every outlined function: LLVM may vectorize them, but neither
# interleaves nor unrolls them. A kernel's recipe already unrolled what its register tile needs, and the
# loop nests that no recipe scheduled are transposes and copies, bound by memory. LLVM's unrolling only made
# huge blocks that its instruction schedulers then took seconds over: DenseNet-121's LLVM time 24 s -> 12 s
# (the loop nests), MobileNetV2's 2.6 s -> 0.9 s (the kernels: a 14x14x576 bias broadcast became 126
# stores of 64 floats), for bitwise-identical outputs and the same run time (notes: "Where compile time goes").
OUTLINED_LOOPS = (
    "#llvm.loop_annotation<unroll = #llvm.loop_unroll<disable = true>, interleave = #llvm.loop_interleave<count = 1>>"
)


def annotate_loops(function: ir.Operation, annotation: ir.Attribute) -> None:
    """Sets `annotation` on the back edge of every loop of `function`: after convert-scf-to-cf, a loop's
    latch is the branch to a block at or before its own in the region's order."""
    order = {block: i for i, block in enumerate(function.regions[0].blocks)}
    for block, i in order.items():
        branch = block.operations[len(block.operations) - 1]
        if branch.name == "llvm.br" and order[branch.successors[0]] <= i:
            branch.attributes["loop_annotation"] = annotation


def weight_bytes(value: ir.Attribute | None) -> np.ndarray | None:
    """The bytes of a dense, non-splat value of a type numpy reads (f16/f32/f64, 8- to 64-bit integers) as the
    code reads them, as a view of the attribute's own buffer (no copy of the weights); None for any other."""
    if not isinstance(value, ir.DenseElementsAttr) or value.is_splat:
        return None
    elt = ir.ShapedType(value.type).element_type
    readable = isinstance(elt, ir.F16Type | ir.F32Type | ir.F64Type) or (
        isinstance(elt, ir.IntegerType) and elt.width in (8, 16, 32, 64)
    )
    # Row-major in the host's byte order, which is the target's: x86 for the JIT and for save_object alike.
    return np.asarray(value).reshape(-1).view(np.uint8) if readable else None


def weights_as_bytes(op: ir.Operation) -> None:
    """Retypes constant global `op` to an i8 array of the same bytes when its value is a non-splat dense
    attribute of a type numpy reads wider than a byte (`weight_bytes`); leaves it as it is otherwise."""
    value = op.attributes.get("value")
    data = weight_bytes(value)
    if data is None or data.size == math.prod(ir.ShapedType(value.type).shape):
        return  # not readable, a splat, or already one byte per element
    # DenseElementsAttr.get copies the view.
    op.attributes["value"] = ir.DenseElementsAttr.get(data)
    op.attributes["global_type"] = ir.TypeAttr.get(ir.Type.parse(f"!llvm.array<{data.size} x i8>"))


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
