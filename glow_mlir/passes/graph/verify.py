"""glow-verify: the semantic rules of the `glow` and `glow_ir` dialects that IRDL cannot state.

IRDL checks only each operand's and attribute's base kind. This pass checks, for every `glow.*` op, that all
tensors are static with an element type of the convention (docs/ARCHITECTURE.md), that attributes have the
right kind (`array<i64>`, `i64`, `f32`, `i1`) and that the result type has the element type and shape
`glow_mlir.opdefs.shapes` computes from the operands and attributes (which also checks attribute ranges and which
element types each op takes). For every `glow_ir.*` instruction it applies the same rules to the buffers:
the element type and shape of the `out` (or `inout`) operand must be what the rules compute from the `in`
operands, so both levels share one statement of each rule. It changes nothing and stops at the first broken
rule with a `VerificationError` naming the op, its location and the rule.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeVar

from mlir import ir

from glow_mlir import opdefs, ops
from glow_mlir.errors import VerificationError
from glow_mlir.opdefs import control, shapes, types
from glow_mlir.opdefs.base import Attr, Attrs, ShapeRule, TypeRule
from glow_mlir.opdefs.shapes import Shape, ShapeError, require
from glow_mlir.passes.registry import register

# A static tensor or buffer as the rules see it: its shape and its element type's MLIR spelling.
Typed = tuple[Shape, str]
T = TypeVar("T")


@register("glow-verify")
def verify(module: ir.Module) -> None:
    """Check shapes, element types and attributes of every glow and glow_ir op."""
    for op in ops.walk_ops(module.operation):
        try:
            if op.name in (control.LOOP, control.IR_LOOP):
                _verify_loop(op)
            elif op.name.startswith(ops.GLOW):
                _verify_glow(op)
            elif op.name.startswith(ops.GLOW_IR):
                _verify_glow_ir(op)
        except ShapeError as e:
            raise VerificationError(op.name, ops.location_text(op), str(e)) from None


def _verify_glow(op: ir.Operation) -> None:
    operands = [_static(v, ir.RankedTensorType, f"operand {i}") for i, v in enumerate(op.operands)]
    result = _static(op.results[0], ir.RankedTensorType, "result")
    definition = _definition(lambda: opdefs.glow_op(op.name))
    attrs = _attributes(op, definition.attrs)
    _check(op, definition.types, definition.shape, attrs, operands, result, "result")


def _verify_loop(op: ir.Operation) -> None:
    """A loop agrees with its attributes and its body's signature (glow_mlir/opdefs/control.py); its
    instruction's body takes the operands' buffers, then writes the results' buffers."""
    tensors = op.name == control.LOOP
    kind = ir.RankedTensorType if tensors else ir.MemRefType
    typed = [_static(v, kind, f"operand {i}") for i, v in enumerate(op.operands)]
    body = control.body_function(op)
    signature = ir.FunctionType(ir.TypeAttr(body.attributes["function_type"]).value)
    args = [_static(a, kind, f"body argument {i}") for i, a in enumerate(body.regions[0].blocks[0].arguments)]
    if tensors:
        results = [_static(v, kind, f"result {i}") for i, v in enumerate(op.results)]
        operands, body_out = typed, [_static_type(t, kind, "body result") for t in signature.results]
    else:
        outs = ops.roles(op).count("out")
        results, operands = typed[:outs], typed[outs:]
        # The body's outputs (its condition first, if any) follow its inputs.
        args, body_out = args[:1 + len(operands)], args[1 + len(operands):]
    try:
        loop = control.Loop.of(op)
    except ValueError as e:  # an attribute of another kind than the op's (glow-opt reads text anyone writes)
        raise ShapeError(f"attributes: {e}") from None
    control.check(loop, operands, results, args, body_out)


def _static_type(t: ir.Type, kind: type[ir.ShapedType], what: str) -> Typed:
    require(isinstance(t, kind) and kind(t).has_static_shape,
            lambda: f"{what} must be a static {kind.__name__}, got {t}")
    return tuple(kind(t).shape), str(kind(t).element_type)


def _definition(lookup: Callable[[], T]) -> T:
    try:
        return lookup()
    except KeyError as e:
        raise ShapeError(f"is not a defined op: {e.args[0]}") from None


def _attributes(op: ir.Operation, kinds: Sequence[tuple[str, Attr]]) -> Attrs:
    """The op's attributes as the rules read them, each checked to be of its kind."""
    values: Attrs = {}
    for name, kind in kinds:
        if name not in op.attributes:
            # Optional flags (countIncludePads) may be absent; every other attribute IRDL already requires.
            continue
        values[name] = _read(op, name, kind)
    return values


def _read(op: ir.Operation, name: str, kind: Attr) -> object:
    match kind:
        case Attr.INTS:
            return tuple(_ints(op, name))
        case Attr.INT:
            return _int(op, name)
        case Attr.FLOAT:
            return _float(op, name)
        case Attr.BOOL:
            return _flag(op, name)
        case Attr.STRING:
            attr = op.attributes[name]
            require(isinstance(attr, ir.StringAttr), lambda: f"attribute '{name}' must be a string, got {attr}")
            return ir.StringAttr(attr).value
        case Attr.FLOATS:
            attr = op.attributes[name]
            require(isinstance(attr, ir.DenseF32ArrayAttr),
                    lambda: f"attribute '{name}' must be array<f32: ...>, got {attr}")
            return tuple(ir.DenseF32ArrayAttr(attr))
    return op.attributes[name]


def _check(
    op: ir.Operation,
    type_rule: TypeRule,
    shape_rule: ShapeRule,
    attrs: Attrs,
    operands: list[Typed],
    result: Typed,
    what: str,
) -> None:
    """`result` (the glow result or glow_ir destination) must have the element type and shape that the rules
    of the op's definition give for `operands` and `op`'s attributes."""
    stated_shape, stated_type = result
    expected_type = type_rule([t for _, t in operands], stated_type)
    require(
        stated_type == expected_type,
        lambda: f"{what} element type {stated_type} must equal the type rule's {expected_type}",
    )
    name = op.name.split(".", 1)[1]
    if name == "splat":
        _splat_value(op, stated_type)
    elif name == "constant":
        value = op.attributes["value"]
        require(
            isinstance(value, ir.DenseElementsAttr) and value.type == op.results[0].type,
            lambda: f"value must be a dense elements attribute of the result type {op.results[0].type}",
        )
    expected = shape_rule([s for s, _ in operands], attrs, stated_shape)
    _same_shape(stated_shape, expected, what)


def _verify_glow_ir(op: ir.Operation) -> None:
    kind = op.name.removeprefix(ops.GLOW_IR)
    buffers = [_static(v, ir.MemRefType, f"operand {i}") for i, v in enumerate(op.operands)]
    if kind == "alloc_activation":
        _static(op.results[0], ir.MemRefType, "buffer")
    elif kind == "dealloc_activation":
        owner = op.operands[0].owner
        require(
            isinstance(owner, ir.Operation | ir.OpView) and owner.name == "glow_ir.alloc_activation",
            "operand must be a buffer from glow_ir.alloc_activation",
        )
    elif kind == "tensor_view":
        view, view_type = _static(op.results[0], ir.MemRefType, "view")
        source, source_type = buffers[0]
        require(
            math.prod(view) == math.prod(source),
            lambda: f"view {list(view)} must have as many elements as its source {list(source)}",
        )
        require(
            view_type == source_type,
            lambda: f"view element type {view_type} must equal its source's {source_type} (a view moves no data)",
        )
    elif kind == "block_view":
        view, view_type = _static(op.results[0], ir.MemRefType, "view")
        source, source_type = buffers[0]
        start = _ints(op, "start")
        require(
            len(start) == len(source) == len(view)
            and all(0 <= s and s + n <= d for s, n, d in zip(start, view, source, strict=True)),
            lambda: f"view {list(view)} at {list(start)} must lie inside its source {list(source)}",
        )
        require(
            view_type == source_type,
            lambda: f"view element type {view_type} must equal its source's {source_type} (a view moves no data)",
        )
        strides, offset = ir.MemRefType(op.operands[0].type).get_strides_and_offset()
        expected = ir.StridedLayoutAttr.get(offset + sum(s * t for s, t in zip(start, strides)), strides)
        require(
            ir.MemRefType(op.results[0].type).layout == expected,
            lambda: f"view layout must be {expected}, the block's place in its source",
        )
    else:
        roles = ops.roles(op)
        inputs = [b for b, r in zip(buffers, roles, strict=True) if r in ("in", "inout")]
        dest = next(b for b, r in zip(buffers, roles, strict=True) if r in ("out", "inout"))
        instr = _definition(lambda: opdefs.ir_op(op.name))
        graph = opdefs.graph_rules_of(instr)
        type_rule = instr.types or (graph.types if graph else None)
        shape_rule = instr.shape or (graph.shape if graph else None)
        if type_rule is None or shape_rule is None:
            raise ShapeError("has no shape or type rule in its definition")
        kinds = graph.attrs if graph is not None else instr.attr_kinds
        _check(op, type_rule, shape_rule, _attributes(op, kinds), inputs, dest, "destination")


def _static(value: ir.Value, kind: type[ir.ShapedType], what: str) -> Typed:
    """Shape and element type of a value that must be a static tensor (glow) or memref (glow_ir) of one of
    the convention's element types."""
    t = value.type
    # The message is formatted only for a value that fails: printing every value's type cost glow-verify most of
    # its time (HRM-Text QDQ: 140k values, 2.5 s of 4 s over its three runs).
    element = str(t.element_type) if isinstance(t, kind) else ""
    if not (isinstance(t, kind) and t.has_static_shape and element in types.ELEMENT_TYPES):
        raise ShapeError(f"{what} must be a static-shaped {'tensor' if kind is ir.RankedTensorType else 'memref'} "
                         f"of {', '.join(types.ELEMENT_TYPES)}, got {t}")
    return shapes.tensor(t.shape, f"{what} shape"), element


def _same_shape(stated: Shape, expected: Shape, what: str) -> None:
    require(stated == expected, lambda: f"{what} shape {list(stated)} must equal the shape rule's {list(expected)}")


def _ints(op: ir.Operation, name: str) -> list[int]:
    attr = op.attributes[name]
    require(isinstance(attr, ir.DenseI64ArrayAttr), lambda: f"attribute '{name}' must be array<i64: ...>, got {attr}")
    return list(attr)


def _int(op: ir.Operation, name: str) -> int:
    attr = op.attributes[name]
    require(
        isinstance(attr, ir.IntegerAttr) and _is_i64(attr.type),
        lambda: f"attribute '{name}' must be an i64 integer, got {attr}",
    )
    return attr.value


def _float(op: ir.Operation, name: str) -> float:
    attr = op.attributes[name]
    require(
        isinstance(attr, ir.FloatAttr) and isinstance(attr.type, ir.F32Type),
        lambda: f"attribute '{name}' must be an f32 float, got {attr}",
    )
    return attr.value


def _splat_value(op: ir.Operation, elt: str) -> None:
    """A splat's value: an f32 attribute for float results (float8 and float4 too), an integer one within range
    for integers (int4 and int2 too) and i1."""
    if elt in types.ALL_FLOATS:
        _float(op, "value")
        return
    attr = op.attributes["value"]
    require(
        isinstance(attr, ir.IntegerAttr | ir.BoolAttr),
        lambda: f"attribute 'value' must be an integer for {elt} results, got {attr}",
    )
    value = ir.IntegerAttr(attr).value
    # An i1-typed attribute (true/false) reads as -1/0; any other width must hold a value that fits.
    low, high = (-1, 1) if elt == types.BOOL else types.integer_range(elt)
    require(low <= value <= high, lambda: f"attribute 'value' {value} must lie in [{low}, {high}] for {elt} results")


def _flag(op: ir.Operation, name: str) -> bool:
    attr = op.attributes[name]
    require(isinstance(attr, ir.BoolAttr), lambda: f"attribute '{name}' must be true or false, got {attr}")
    return attr.value


def _is_i64(t: ir.Type) -> bool:
    return isinstance(t, ir.IntegerType) and t.width == 64 and t.is_signless
