"""CPU code generation: glow_ir -> linalg on memrefs -> LLVM dialect."""
