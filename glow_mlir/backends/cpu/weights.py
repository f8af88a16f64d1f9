"""glow-cpu-external-weights: the model's large weights stay out of the code that LLVM compiles.

A constant global compiled into the JIT's code is copied by every step after the MLIR module: into LLVM IR,
into the object file (a buffer that grows by doubling), into the JIT's object cache and into its sections.
Each copy lands in fresh memory: VGG-19's 548 MB of weights faulted in 4 GB during code generation, which
took 8.7 s of its 16.8 s cold session (import included); 0.8 s with this pass, 5.7-6.9 s in all.

This pass makes every constant global of WEIGHT_BYTES or more that the code reads an external declaration and
keeps its value in the module's `glow.weights` dictionary (the same attribute: nothing is copied). Whoever
compiles the module supplies the data under the global's name:

- the JIT (compiled.py): `external_weights` copies each value once into 64-byte-aligned memory the model owns
  (the declaration keeps its alignment, which the kernels' loads may rely on) and registers its address;
- the compile cache: `write_weights` writes them as an assembler file of `.incbin` data that `cc` links into
  the entry's library beside the code;
- a natively built library (native.py): `write_weight_space` defines them as zeros (`.bss`) that the loader
  fills with the values;
- an object file for ahead-of-time use: `embed_weights` puts the values back as initializers first.

Small constants (biases, tables) stay initializers, where LLVM sees their values. Globals that nothing reads
any more (weights the schedule repacked into globals of its own) are dropped first (`symbol-dce`), so that
only what the code reads is kept.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from mlir import ir
from mlir.passmanager import PassManager

from glow_mlir.backends.cpu.llvm import weight_bytes, weights_as_bytes
from glow_mlir.passes.registry import register

# The module attribute that holds the externalized values, by global name.
WEIGHTS_ATTR = "glow.weights"
# Constant globals of this many bytes or more leave the code (a 64x64 1x1 filter is 16 KiB).
WEIGHT_BYTES = 16 * 1024
# The alignment of the memory that holds them, at least any global's own (the arena's, ARENA_ALIGNMENT).
WEIGHT_ALIGNMENT = 64


@register("glow-cpu-external-weights", options=("size",))
def externalize(module: ir.Module, size: str = str(WEIGHT_BYTES)) -> None:
    """Large constant globals become external declarations, their values kept in the module's glow.weights.

    After `symbol-dce`, every `memref.global` constant whose dense, non-splat value of a numpy-readable type
    takes `size` bytes (default WEIGHT_BYTES) or more loses its initial value and becomes public (a declaration);
    the value goes into the module's `glow.weights` dictionary under the global's name. glow-to-llvm then
    lowers each to an `llvm.mlir.global external` without data.
    """
    PassManager.parse("builtin.module(symbol-dce)", context=module.context).run(module.operation)
    with module.context:
        moved = dict(_weights_attr(module))
        for op in module.body.operations:
            if op.operation.name != "memref.global" or "constant" not in op.attributes:
                continue
            value = op.attributes["initial_value"] if "initial_value" in op.attributes else None
            data = weight_bytes(value)
            if data is None or data.size < int(size):
                continue
            moved[ir.StringAttr(op.attributes["sym_name"]).value] = value
            del op.attributes["initial_value"]
            op.attributes["sym_visibility"] = ir.StringAttr.get("public")
        if moved:
            module.operation.attributes[WEIGHTS_ATTR] = ir.DictAttr.get(moved)


def _weights_attr(module: ir.Module) -> dict[str, ir.Attribute]:
    attributes = module.operation.attributes
    if WEIGHTS_ATTR not in attributes:
        return {}
    table = ir.DictAttr(attributes[WEIGHTS_ATTR])
    return {table[i].name: table[i].attr for i in range(len(table))}


def weight_data(module: ir.Module) -> dict[str, np.ndarray]:
    """The values glow-cpu-external-weights took out of `module`, by global name, as bytes: views of the
    attributes' own buffers (valid while `module`'s context lives), for `write_weights`."""
    views = {name: weight_bytes(value) for name, value in _weights_attr(module).items()}
    assert all(data is not None for data in views.values())
    return views  # type: ignore[return-value]


def external_weights(module: ir.Module) -> dict[str, np.ndarray]:
    """The values glow-cpu-external-weights took out of `module`, by global name, each in memory aligned to
    WEIGHT_ALIGNMENT (bytes): the attribute's own buffer where it already starts at such a boundary (a
    read-only view, valid while `module`'s context lives, as the JIT that reads it does), else a copy.

    A copy of GB-scale weights is as much fresh memory, whose page faults cost seconds; MLIR places a large
    attribute's data at a 16-byte boundary of malloc's, so about one in four is taken as it is (measured)."""
    from glow_mlir.library import aligned_bytes

    weights = {}
    for name, value in _weights_attr(module).items():
        data = weight_bytes(value)
        assert data is not None, name
        if data.ctypes.data % WEIGHT_ALIGNMENT == 0:
            weights[name] = data
            continue
        copy = aligned_bytes(data.size)
        copy[:] = data
        weights[name] = copy
    return weights


def embed_weights(module: ir.Module) -> None:
    """Puts the values that glow-cpu-external-weights took out of a module lowered to the LLVM dialect back
    into their globals as glow-to-llvm writes weights (`weights_as_bytes`), private to the object."""
    with module.context:
        moved = _weights_attr(module)
        for op in module.body.operations:
            name = ir.StringAttr(op.attributes["sym_name"]).value if "sym_name" in op.attributes else ""
            if op.operation.name != "llvm.mlir.global" or name not in moved:
                continue
            op.attributes["value"] = moved[name]
            op.attributes["linkage"] = ir.Attribute.parse("#llvm.linkage<private>")
            weights_as_bytes(op.operation)
        if moved:
            del module.operation.attributes[WEIGHTS_ATTR]


def write_weights(weights: dict[str, np.ndarray], folder: Path) -> Path:
    """Writes `weights` into `folder` as `weights.bin` and an assembler file `weights.s` that defines each as
    a hidden, aligned, read-only symbol of that data (`.incbin`); returns the assembler file, for `cc`."""
    data = folder / "weights.bin"
    bodies = []
    offset = 0
    with data.open("wb") as out:
        for array in weights.values():
            array.tofile(out)
            bodies.append(f'.incbin "{data}",{offset},{array.nbytes}')
            offset += array.nbytes
    return _assembler(weights, bodies, '.section .rodata.glow_weights,"a",@progbits', folder / "weights.s", True)


def write_weight_space(weights: dict[str, np.ndarray], folder: Path) -> Path:
    """Writes an assembler file `weights_bss.s` into `folder` that defines each of `weights` as an aligned,
    writable symbol of zeros of its size (`.bss`: no bytes in the file), exported, for a loader to copy the
    values into (native.py); returns it, for `cc`."""
    bodies = [f".zero {array.nbytes}" for array in weights.values()]
    return _assembler(weights, bodies, ".bss", folder / "weights_bss.s", False)


def _assembler(weights: dict[str, np.ndarray], bodies: list[str], section: str, source: Path, hidden: bool) -> Path:
    """Writes `source`: in `section`, each weight's symbol (aligned, sized, `.hidden` where `hidden`) followed by
    its body (data or space)."""
    lines = [section]
    for (name, array), body in zip(weights.items(), bodies, strict=True):
        symbol = f'"{name}"'
        lines += [f".balign {WEIGHT_ALIGNMENT}", f".globl {symbol}", *([f".hidden {symbol}"] if hidden else []),
                  f".type {symbol},@object", f".size {symbol},{array.nbytes}", f"{symbol}:", body]  # fmt: skip
    # No executable stack for the library (the linker otherwise assumes one for an object without the note).
    lines.append('.section .note.GNU-stack,"",@progbits')
    source.write_text("\n".join(lines) + "\n")
    return source
