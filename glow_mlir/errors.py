"""Typed errors that the compiler raises for bad input or a failed stage."""

from __future__ import annotations


class GlowError(Exception):
    """Base of every error glow-mlir raises on purpose."""


class VerificationError(GlowError):
    """A `glow` or `glow_ir` op breaks a rule of its dialect.

    The message names the op, its location (the model node, for imported models) and the rule broken.
    """

    def __init__(self, op_name: str, location: str, rule: str) -> None:
        self.op_name = op_name
        self.location = location
        self.rule = rule
        super().__init__(f"{location}: '{op_name}' {rule}")


class PipelineError(GlowError):
    """A pass pipeline could not be parsed, or one of its passes failed."""


class UnsupportedError(GlowError):
    """The input uses something that this compiler does not implement yet."""
