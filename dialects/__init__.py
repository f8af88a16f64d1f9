"""IRDL definitions of the `glow` and `glow_ir` dialects.

The `.irdl.mlir` files beside this module are the dialects' single source of truth; `glow_mlir.context`
loads them into every context the compiler creates.
"""
