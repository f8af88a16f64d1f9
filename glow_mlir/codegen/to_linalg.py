"""glow-ir-to-linalg: rewrites every `glow_ir` instruction into linalg, arith, math and scf on memrefs.

This is Glow's per-instruction kernel selection done with MLIR's structured ops instead of a hand-written
library: each instruction writes into buffers that are already placed (function arguments, `memref.view`s
into the arena, `memref.get_global` constants), so each becomes one or a few linalg ops on those same
memrefs. Nothing is allocated on the heap: the memory plan of glow-allocate stays the whole memory story, and
the only allocations are `memref.alloca`s of the window operands of pooling ops, which linalg reads for their
shape only. Code is plain loops for now; tiling and vectorization are later stages.

Element types follow docs/ARCHITECTURE.md: each lowering picks its arith op from the buffers' element type
(addf/addi, divf/divsi/divui, maximumf/maxsi/maxui, ...), so one instruction serves f16/bf16/f32/f64, i8..i64
and ui8..ui64 alike (unsigned buffers become signless at the end: `signless_types`, codegen/builders.py);
float-only instructions reject integer buffers with a located error. Scatter- and search-shaped instructions
(conv_transpose, arg_max/arg_min, softmax) are scf loops; erf, which LLVM has no intrinsic for, is
generated arithmetic (`erf` in glow_mlir/opdefs/scalar.py).

This module is the pass: it looks each instruction up in the table of lowerings (codegen/table.py). The
lowerings live by category, as onnx-mlir's Conversion/ONNXToKrnl/{Math,NN,Tensor}: codegen/math.py,
codegen/nn.py and codegen/tensor.py, on the building blocks of codegen/builders.py and the scalar bodies of
the op definitions (glow_mlir/opdefs); a backend registers the lowerings of its own instructions (the CPU
backend's NHWC ones: glow_mlir/backends/cpu/lowerings.py, imported by the pass catalogue).

The function also gets `llvm.emit_c_interface`, so that the runtime can call `_mlir_ciface_<name>` with memref
descriptors.
"""

from __future__ import annotations

from collections.abc import Mapping

from mlir import ir

from glow_mlir import ops
from glow_mlir.codegen import (  # noqa: F401  (importing a category registers its lowerings)
    arg_search,
    math,
    nn,
    random,
    roi_align,
    tensor,
    top_k,
)
from glow_mlir.codegen.builders import SPLAT_BUFFERS, SPLAT_GLOBALS, signless_types, splat_globals
from glow_mlir.codegen.table import LOWERINGS
from glow_mlir.errors import UnsupportedError
from glow_mlir.passes.registry import register


@register("glow-ir-to-linalg")
def ir_to_linalg(module: ir.Module) -> None:
    """Rewrite glow_ir instructions into linalg/arith/math/scf on memrefs (needs glow-allocate first)."""
    with module.context:
        splats = splat_globals(module.operation)
        token, known = SPLAT_GLOBALS.set(splats), SPLAT_BUFFERS.set({})
        try:
            for func in ops.functions(module):
                _lower_function(func)
        finally:
            SPLAT_GLOBALS.reset(token)
            SPLAT_BUFFERS.reset(known)
        _erase_unread(module, splats)


def _lower_function(func: ir.Operation) -> None:
    """Lowers the instructions of `func`; drops the fills that every reader took as a scalar."""
    if not func.regions[0].blocks:
        return
    for op in ops.walk_ops(func):
        if op.name.startswith(ops.GLOW_IR):
            _lower(op)
    # A splat that every reader took as a scalar (`with_scalars`, codegen/builders.py) fills an activation nobody
    # reads.
    for op in ops.walk_ops(func):
        buffer = op.operands[-1] if op.name == "linalg.fill" else None
        if buffer is not None and _is_arena_view(buffer) and len(list(buffer.uses)) == 1:
            op.erase()
    signless_types(func)
    func.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()


def _erase_unread(module: ir.Module, splats: Mapping[str, float | int]) -> None:
    """Erases the splat globals that every reader took as a scalar, and their reads: LLVM would store each
    element of them in the object (QDQ MambaOut's 490 globals of scales, zero points and GELU constants held
    270 MB)."""
    read: set[str] = set()
    for func in ops.functions(module):
        for op in ops.walk_ops(func):
            if op.name != "memref.get_global":
                continue
            name = ir.FlatSymbolRefAttr(op.attributes["name"]).value
            if list(op.results[0].uses):
                read.add(name)
            elif name in splats:
                op.erase()
    for op in list(module.body.operations):
        if op.operation.name == "memref.global":
            name = ir.StringAttr(op.attributes["sym_name"]).value
            if name in splats and name not in read:
                op.operation.erase()


def _lower(op: ir.Operation) -> None:
    lowering = LOWERINGS.get(op.name[len(ops.GLOW_IR) :])
    if lowering is None:
        raise UnsupportedError(f"{ops.location_text(op)}: glow-ir-to-linalg cannot lower '{op.name}'")
    with op.location, ir.InsertionPoint(op):
        lowering(op)
    op.erase()


def _is_arena_view(buffer: ir.Value) -> bool:
    """An activation: a memref.view of the arena (glow-allocate's form of an alloc), not an argument."""
    owner = buffer.owner
    return isinstance(owner, ir.Operation | ir.OpView) and owner.name == "memref.view"
