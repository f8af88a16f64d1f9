"""The op-definition layer: every `glow` and `glow_ir` op stated once, read by every stage."""
