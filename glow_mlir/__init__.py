"""glow-mlir: a neural-network compiler in the design of Glow, built on MLIR."""
