"""Code generation: glow_ir instructions -> linalg/arith/math/scf on memrefs (glow-ir-to-linalg, to_linalg.py).

The lowerings are grouped by category (math.py, nn.py, tensor.py) on shared building blocks (builders.py)
and the scalar bodies the op definitions state (glow_mlir/opdefs/scalar.py), and found through one table
(table.py) that backends add their own instructions' lowerings to. Nothing here imports glow_mlir.backends.
"""
