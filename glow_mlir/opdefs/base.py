"""What an op definition says: the record every stage reads, and the registry that holds them.

An `OpDef` states one `glow` op once (Glow's ClassGen `newNode(...)` / `newInstr(...)`, in plain Python): its
operands and attributes, its shape and element-type rule, its traits, its numpy evaluator, for elementwise
ops the scalar body codegen emits, and its `glow_ir` counterpart (`IrDef`) with each operand's role. A
`glow_ir` instruction with no graph op of its own (copy, the views, alloc/dealloc) is an `IrDef` alone.

The builder, interpreter, verifier, IRGen, the graph and IR optimizations and the linalg lowering all read
tables derived from these records (`glow_mlir.opdefs.tables`); the IRDL dialect files are generated from
them (`glow_mlir.opdefs.irdl`). Asking for an op nobody defined raises `KeyError` naming it: no stage skips
an op silently.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from mlir import ir

Shape = tuple[int, ...]
Array = np.ndarray
# Attribute values as the rules read them: ints, tuples of ints, floats, strings, bools.
Attrs = dict[str, Any]


class Trait(enum.Enum):
    """What optimizations may assume of an op."""

    # Each result element depends only on the operand elements at its own index; operands have one shape.
    ELEMENTWISE = "elementwise"
    # op(a, b) = op(b, a).
    COMMUTATIVE = "commutative"
    # op(x, x) = x.
    IDEMPOTENT = "idempotent"
    # op(op(x)) = x.
    INVOLUTION = "involution"


class Attr(enum.Enum):
    """The kind of an attribute: how IRDL constrains it, how the verifier reads it, how the builder makes it."""

    INTS = "array<i64>"
    FLOATS = "array<f32>"
    INT = "i64"
    FLOAT = "f32"
    BOOL = "i1"
    STRING = "string"
    # A constant's dense elements, a splat's number: the op's own rules check it.
    ANY = "any"

    @property
    def irdl(self) -> str:
        """The IRDL constraint of this kind."""
        return {
            Attr.INTS: 'irdl.base "#builtin.dense_array"',
            Attr.FLOATS: 'irdl.base "#builtin.dense_array"',
            Attr.INT: 'irdl.base "#builtin.integer"',
            Attr.BOOL: 'irdl.base "#builtin.integer"',
            Attr.FLOAT: 'irdl.base "#builtin.float"',
            Attr.STRING: 'irdl.base "#builtin.string"',
            Attr.ANY: "irdl.any",
        }[self]

    def make(self, value: Any) -> ir.Attribute:
        """The MLIR attribute holding Python `value` (needs an active context)."""
        match self:
            case Attr.INTS:
                return ir.DenseI64ArrayAttr.get([int(v) for v in value])
            case Attr.FLOATS:
                return ir.DenseF32ArrayAttr.get([float(v) for v in value])
            case Attr.INT:
                return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(value))
            case Attr.FLOAT:
                return ir.FloatAttr.get(ir.F32Type.get(), float(value))
            case Attr.BOOL:
                return ir.BoolAttr.get(bool(value))
            case Attr.STRING:
                return ir.StringAttr.get(str(value))
        if isinstance(value, ir.Attribute):
            return value
        raise TypeError(f"an attribute of kind {self.value} must be given as an MLIR attribute, got {value!r}")


# (operand shapes, attribute values, the stated result shape or None when building) -> the result shape.
ShapeRule = Callable[[Sequence[Shape], Attrs, Shape | None], Shape]
# (operand element types, the asked-for result type or None) -> the result element type; MLIR spellings.
TypeRule = Callable[[Sequence[str], str | None], str]
# (op, operand arrays in their element types) -> the result (the interpreter rounds it to the result type).
Evaluator = Callable[[ir.Operation, list[Array]], Array]
# (input elements, the result element type) -> the result element, built with arith/math at the insertion
# point: the body of the linalg.generic that lowers an elementwise instruction.
ScalarBody = Callable[[list[ir.Value], ir.Type], ir.Value]


@dataclass(frozen=True)
class IrDef:
    """A `glow_ir` instruction: its operands in order with their roles (Glow's @in / @out / @inout).

    `operands` pairs each operand's name with its role; an instruction with no role-bearing operands (alloc,
    views) has `roles=False`. `attrs` names the attributes it keeps; their kinds are `attr_kinds`.
    `in_place`: the destination may be one of its @in buffers of the same type (Glow's `inplaceOperand`),
    true of every elementwise instruction. `shape` and `types`, when set, replace the graph op's rules (for
    instructions without one); `graph` names the graph op whose rules it follows.
    """

    name: str
    operands: tuple[tuple[str, str], ...]
    attrs: tuple[str, ...] = ()
    attr_kinds: tuple[tuple[str, Attr], ...] = ()
    doc: str = ""
    results: tuple[str, ...] = ()
    roles: bool = True
    in_place: bool = False
    graph: str | None = None
    shape: ShapeRule | None = None
    types: TypeRule | None = None

    @property
    def full_name(self) -> str:
        return f"glow_ir.{self.name}"

    @property
    def role_list(self) -> tuple[str, ...]:
        return tuple(role for _, role in self.operands) if self.roles else ()

    def attr_kind(self, name: str) -> Attr:
        return dict(self.attr_kinds)[name]


@dataclass(frozen=True)
class Activation:
    """A fused activation: what a convolution or matmul applies to each result element.

    `args` names its activationArgs; `scalar(x, args)` is its codegen body and `evaluate(x, args)` its
    numpy meaning (float64 in, rounded by the caller).
    """

    name: str
    args: tuple[str, ...]
    scalar: Callable[[ir.Value, list[float]], ir.Value]
    evaluate: Callable[[Array, list[float]], Array]


@dataclass(frozen=True)
class Producer:
    """How an op takes a fused bias add and activation (glow-fuse-activations): the op it becomes, and its
    result's channel dim, along which a bias runs (None when a bias add is not folded into it); and its
    filter's output- and input-channel dims, along which a per-channel scale of the result and a per-channel
    affine map of the input fold into the filter (None when they are not folded)."""

    fused: str
    channel_axis: int | None
    filter_channel_axis: int | None = None
    filter_input_axis: int | None = None
    # The operand holding the bias (the filter's is 1).
    bias_operand: int = 2


@dataclass(frozen=True)
class OpDef:
    """One `glow` op, stated once. See the module docstring; `docs/NewOperators.md` says how to add one."""

    name: str
    doc: str
    operands: tuple[str, ...]
    shape: ShapeRule
    types: TypeRule
    evaluate: Evaluator
    attrs: tuple[tuple[str, Attr], ...] = ()
    traits: frozenset[Trait] = frozenset()
    scalar: ScalarBody | None = None
    ir: IrDef | None = None
    # The Graph builder's method name, when it is not the op's name (Python keywords: and, or, not).
    method: str | None = None
    # The operands are one variadic list (concat), held in `ops.CONCAT_GROUPS` groups of one type each.
    variadic: bool = False
    # The op is a fusable activation (relu, sigmoid, tanh, ...): it is its own `Activation` with no args.
    activation: bool = False
    # The op takes a fused bias add and activation (a convolution, a fused matmul).
    producer: Producer | None = None
    # Only this backend creates the op (its layout pass); None for ops of the shared graph.
    backend: str | None = None
    results: tuple[str, ...] = ("result",)

    @property
    def full_name(self) -> str:
        return f"glow.{self.name}"

    @property
    def method_name(self) -> str:
        return self.method or self.name

    def has(self, trait: Trait) -> bool:
        return trait in self.traits

    def attr_kind(self, name: str) -> Attr:
        return dict(self.attrs)[name]


# What the evaluator of an activation op gets for its op: activations are unary and attribute-free.
_NO_OP = cast(ir.Operation, None)

_GLOW: dict[str, OpDef] = {}
_GLOW_IR: dict[str, IrDef] = {}
_ACTIVATIONS: dict[str, Activation] = {}


def define(op: OpDef) -> OpDef:
    """Adds `op` (and its glow_ir counterpart) to the registry; a name defined twice is an error."""
    if op.name in _GLOW:
        raise ValueError(f"glow.{op.name} is defined twice")
    # A backend's elementwise op may instead bring its own lowering (the CPU backend's one-pass quantization).
    if op.has(Trait.ELEMENTWISE) and op.scalar is None and op.ir is not None and op.backend is None:
        raise ValueError(f"glow.{op.name} is elementwise but states no scalar body")
    _GLOW[op.name] = op
    if op.ir is not None:
        define_ir(op.ir)
    if op.activation:
        if op.scalar is None or len(op.operands) != 1 or op.attrs:
            rule = "it must be unary, without attributes, with a scalar body"
            raise ValueError(f"glow.{op.name} is an activation: {rule}")
        scalar, evaluate = op.scalar, op.evaluate
        # A unary op without attributes reads nothing from its op: its evaluator runs without one.
        define_activation(
            Activation(op.name, (), lambda x, _: scalar([x], x.type), lambda x, _: evaluate(_NO_OP, [x]))
        )
    return op


def define_ir(instr: IrDef) -> IrDef:
    if instr.name in _GLOW_IR:
        raise ValueError(f"glow_ir.{instr.name} is defined twice")
    _GLOW_IR[instr.name] = instr
    return instr


def define_activation(activation: Activation) -> Activation:
    if activation.name in _ACTIVATIONS:
        raise ValueError(f"activation '{activation.name}' is defined twice")
    _ACTIVATIONS[activation.name] = activation
    return activation


def glow_ops() -> dict[str, OpDef]:
    """Every glow op definition by name (without `glow.`), in definition order."""
    return _GLOW


def ir_ops() -> dict[str, IrDef]:
    """Every glow_ir instruction definition by name (without `glow_ir.`), in definition order."""
    return _GLOW_IR


def activations() -> dict[str, Activation]:
    """Every fusable activation by name, in definition order ("none" is not one)."""
    return _ACTIVATIONS
