"""Element-type rules: which element types an op's operands take and what its result has.

Types are spelled as MLIR spells them ("f32", "i1", "i64", "ui8", "bf16"), following the convention of
docs/ARCHITECTURE.md: signless integers (i8..i64) are signed, the builtin unsigned types (ui8..ui64) are
unsigned, and i1 is the boolean. Unsigned-ness lives in the type up to glow_ir; glow-ir-to-linalg states it
in the arith op it picks (divui, cmpi ult, extui, ...) and then makes every buffer signless (`signless`,
glow_mlir/codegen/builders.py), as arith takes signless integers only. The narrow formats (LOW_PRECISION:
float8, float4, int4/int2) are only stored, loaded and converted (convert_to, as integer arithmetic on their
bits: scalar.py); codegen keeps them one per byte. A rule takes the operands' element types and, where the
operands leave it open (constant, splat, convert_to), the type asked for; it returns the result's element type
or raises `ShapeError` naming the rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from glow_mlir.opdefs.base import TypeRule
from glow_mlir.opdefs.shapes import ShapeError

FLOATS = ("f32", "f64", "f16", "bf16")
BOOL = "i1"
SIGNED = ("i8", "i16", "i32", "i64")
UNSIGNED = ("ui8", "ui16", "ui32", "ui64")
INTEGERS = SIGNED + UNSIGNED
NUMBERS = FLOATS + INTEGERS
# Formats that only convert_to (ONNX's Cast) computes on, one byte per element (ml_dtypes' numpy layout);
# data movement (ANY) takes them too.
LOW_PRECISION_FLOATS = ("f8E4M3FN", "f8E4M3FNUZ", "f8E5M2", "f8E5M2FNUZ", "f8E8M0FNU", "f4E2M1FN")
LOW_PRECISION = LOW_PRECISION_FLOATS + ("i4", "ui4", "i2", "ui2")
# The float formats, wide and narrow: a splat of one holds its value as an f32 attribute, of any other type as i64.
ALL_FLOATS = FLOATS + LOW_PRECISION_FLOATS
ELEMENT_TYPES = FLOATS + (BOOL,) + INTEGERS + LOW_PRECISION
INDICES = ("i32", "i64")


def is_unsigned(elt: str) -> bool:
    """Whether integer type `elt` (an MLIR spelling) is unsigned: the one place that says so."""
    return elt.startswith("ui")


def integer_range(elt: str) -> tuple[int, int]:
    """The values integer type `elt` holds; i1 (the boolean) reads as 0 or 1."""
    bits = int(elt.lstrip("ui"))
    if bits == 1:
        return 0, 1
    if is_unsigned(elt):
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ShapeError(message)


def _known(operands: Sequence[str]) -> None:
    # Messages formatted on failure only: joining the convention's types per operand of every op verified was a
    # cost of glow-verify of its own.
    for i, t in enumerate(operands):
        if t not in ELEMENT_TYPES:
            raise ShapeError(f"operand {i} element type {t} must be one of {', '.join(ELEMENT_TYPES)}")


def _same(operands: Sequence[str], allowed: Sequence[str], kind: str) -> str:
    """The one element type all `operands` share, which must be in `allowed` (described as `kind`)."""
    _known(operands)
    _require(len(set(operands)) <= 1, f"operands must have one element type, got {', '.join(operands)}")
    _require(
        all(t in allowed for t in operands),
        f"element type must be {kind} ({', '.join(allowed)}), got {operands[0] if operands else 'none'}",
    )
    return operands[0]


@dataclass(frozen=True)
class Takes:
    """A type rule that also says which element types its operands take: codegen checks a float-only or
    i1-only instruction's buffers before it emits code for them (`operand_types`)."""

    allowed: tuple[str, ...]
    rule: TypeRule

    def __call__(self, operands: Sequence[str], result: str | None) -> str:
        return self.rule(operands, result)


def _taking(rule: TypeRule, allowed: Sequence[str]) -> TypeRule:
    return Takes(tuple(allowed), rule)


def same(allowed: Sequence[str], kind: str) -> TypeRule:
    """All data operands share one type of `allowed`, which the result has."""
    return _taking(lambda operands, _: _same(operands, allowed, kind), allowed)


def predicate(allowed: Sequence[str], kind: str) -> TypeRule:
    """Operands of one type of `allowed`; the result is boolean (comparisons, is_nan)."""

    def rule(operands: Sequence[str], _: str | None) -> str:
        _same(operands, allowed, kind)
        return BOOL

    return _taking(rule, allowed)


def index_of(allowed: Sequence[str], kind: str) -> TypeRule:
    """An operand of `allowed`; the result is an i64 index (arg_max, arg_min)."""

    def rule(operands: Sequence[str], _: str | None) -> str:
        _same(operands, allowed, kind)
        return "i64"

    return _taking(rule, allowed)


def asked(operands: Sequence[str], result: str | None) -> str:
    """The result has the type asked for (constant, splat, convert_to), any of the convention."""
    _known(operands)
    if result not in ELEMENT_TYPES:
        raise ShapeError(f"result element type {result} must be one of {', '.join(ELEMENT_TYPES)}")
    return result  # type: ignore[return-value]


def select(operands: Sequence[str], _: str | None) -> str:
    """`cond ? lhs : rhs`: an i1 condition and two choices of one type."""
    _known(operands)
    cond, lhs, rhs = operands
    _require(cond == BOOL, f"cond must be {BOOL}, got {cond}")
    return _same((lhs, rhs), ELEMENT_TYPES, "an element type")


def gather(operands: Sequence[str], _: str | None) -> str:
    """Data of any type, i32 or i64 indices; the result has the data's type."""
    _known(operands)
    data, indices = operands
    _require(indices in INDICES, f"indices must be {' or '.join(INDICES)}, got {indices}")
    return data


def boxes(operands: Sequence[str], _: str | None) -> str:
    """Data and boxes of one float type, i64 batch indices (roi_align); the result has the data's type."""
    _known(operands)
    data, rois, indices = operands
    _require(indices == "i64", f"batch indices must be i64, got {indices}")
    return _same((data, rois), ("f32", "f64"), "f32 or f64")


def product(allowed: Sequence[str], kind: str) -> TypeRule:
    """`same`, and also bf16 factors delivering an f32 result (any further operand, a bias, bf16 or f32): the
    native bf16 products of the CPU backend (glow-lower's widen_half), which accumulate bf16 pairs in f32."""

    def rule(operands: Sequence[str], result: str | None) -> str:
        if result == "f32" and tuple(operands[:2]) == ("bf16", "bf16") and set(operands[2:]) <= {"bf16", "f32"}:
            return result
        return _same(operands, allowed, kind)

    return _taking(rule, allowed)


FLOAT = same(FLOATS, "a float")
# i1 is left out: arithmetic and ordering on booleans (true as -1 in signed i1) would silently miscompute.
NUMBER = same(NUMBERS, "an integer or float")
ANY = same(ELEMENT_TYPES, "an element type")
FLOAT_PRODUCT = product(FLOATS, "a float")
NUMBER_PRODUCT = product(NUMBERS, "an integer or float")
LOGIC = same((BOOL,), "boolean")
INTEGER = same(INTEGERS, "an integer")


def operand_types(rule: TypeRule) -> tuple[str, ...] | None:
    """The element types `rule` lets operands have, when it says (`Takes`); None for the other rules."""
    return rule.allowed if isinstance(rule, Takes) else None
