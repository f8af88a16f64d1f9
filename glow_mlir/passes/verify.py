"""glow-verify: the semantic rules of the `glow` and `glow_ir` dialects that IRDL cannot state.

IRDL checks only each operand's and attribute's base kind. This pass checks, for every `glow.*` op, that all
tensors are static f32, that attributes have the right kind (`array<i64>`, `i64`, `f32`, `i1`) and that the
result type equals the shape `glow_mlir.shapes` computes from the operands and attributes (which also checks
attribute ranges). For every `glow_ir.*` instruction it applies the same rule to the buffers: the shape of
the `out` (or `inout`) operand must be what the rule computes from the `in` operands, so both levels share
one statement of each rule. It changes nothing and stops at the first broken rule with a
`VerificationError` naming the op, its location and the rule.
"""

from __future__ import annotations

import math

from mlir import ir

from glow_mlir import ops, shapes
from glow_mlir.errors import VerificationError
from glow_mlir.passes.registry import register
from glow_mlir.shapes import Shape, ShapeError

# glow_ir instruction -> the glow op whose shape rule it follows.
_IR_RULES = {
    "copy": "copy",
    "matmul": "matmul",
    "batched_add": "batched_add",
    "element_add": "add",
    "element_sub": "sub",
    "element_mul": "mul",
    "element_div": "div",
    "element_max": "max",
    "element_min": "min",
    "sigmoid": "sigmoid",
    "tanh": "tanh",
    "element_exp": "exp",
    "element_sqrt": "sqrt",
    "softmax": "softmax",
    "convolution": "convolution",
    "max_pool": "max_pool",
    "avg_pool": "avg_pool",
    "transpose": "transpose",
    "insert_tensor": "insert_tensor",
    "extract_tensor": "slice",
    "broadcast": "broadcast",
}


@register("glow-verify")
def verify(module: ir.Module) -> None:
    """Check shapes, element types and attributes of every glow and glow_ir op."""
    for op in ops.walk_ops(module.operation):
        try:
            if op.name.startswith(ops.GLOW):
                _verify_glow(op)
            elif op.name.startswith(ops.GLOW_IR):
                _verify_glow_ir(op)
        except ShapeError as e:
            raise VerificationError(op.name, ops.location_text(op), str(e)) from None


def _verify_glow(op: ir.Operation) -> None:
    operands = [_static_f32(v, ir.RankedTensorType, f"operand {i}") for i, v in enumerate(op.operands)]
    result = _static_f32(op.results[0], ir.RankedTensorType, "result")
    _same_shape(result, _expected(op, op.name.removeprefix(ops.GLOW), operands, result), "result")


def _verify_glow_ir(op: ir.Operation) -> None:
    kind = op.name.removeprefix(ops.GLOW_IR)
    buffers = [_static_f32(v, ir.MemRefType, f"operand {i}") for i, v in enumerate(op.operands)]
    if kind == "alloc_activation":
        _static_f32(op.results[0], ir.MemRefType, "buffer")
    elif kind == "dealloc_activation":
        owner = op.operands[0].owner
        _require(
            isinstance(owner, ir.Operation | ir.OpView) and owner.name == "glow_ir.alloc_activation",
            "operand must be a buffer from glow_ir.alloc_activation",
        )
    elif kind == "tensor_view":
        view = _static_f32(op.results[0], ir.MemRefType, "view")
        _require(
            math.prod(view) == math.prod(buffers[0]),
            f"view {list(view)} must have as many elements as its source {list(buffers[0])}",
        )
    elif kind == "splat":
        _float(op, "value")
    else:
        roles = ops.roles(op)
        inputs = [s for s, r in zip(buffers, roles, strict=True) if r in ("in", "inout")]
        dest = next(s for s, r in zip(buffers, roles, strict=True) if r in ("out", "inout"))
        _same_shape(dest, _expected(op, _IR_RULES.get(kind, kind), inputs, dest), "destination")


def _expected(op: ir.Operation, kind: str, s: list[Shape], result: Shape) -> Shape:
    """The result shape the rule of glow op `kind` gives for operand shapes `s` and `op`'s attributes.

    `result` is the stated result shape; it is an input to the rules whose result shape is not an attribute
    (slice sizes, broadcast target, splat and constant).
    """
    match kind:
        case "constant":
            value = op.attributes["value"]
            _require(
                isinstance(value, ir.DenseElementsAttr) and value.type == op.results[0].type,
                f"value must be a dense elements attribute of the result type {op.results[0].type}",
            )
            return result
        case "splat":
            _float(op, "value")
            return shapes.tensor(result)
        case "fully_connected":
            return shapes.fully_connected(*s)
        case "matmul":
            return shapes.matmul(*s)
        case "batched_add":
            return shapes.batched_add(*s)
        case "add" | "sub" | "mul" | "div" | "max" | "min":
            return shapes.elementwise(*s)
        case "relu" | "sigmoid" | "tanh" | "exp" | "sqrt" | "copy":
            return shapes.unary(*s)
        case "softmax":
            return shapes.softmax(*s)
        case "convolution":
            return shapes.convolution(
                *s, kernels=_ints(op, "kernels"), strides=_ints(op, "strides"), pads=_pads(op),
                dilation=_ints(op, "dilation"), group=_int(op, "group"),
            )
        case "max_pool" | "avg_pool":
            if ops.has_attr(op, "countIncludePads"):
                _flag(op, "countIncludePads")
            return shapes.pool(*s, kernels=_ints(op, "kernels"), strides=_ints(op, "strides"), pads=_pads(op))
        case "batch_normalization":
            _float(op, "momentum")
            return shapes.batch_normalization(
                *s, channel_idx=_int(op, "channelIdx"), epsilon=_float(op, "epsilon")
            )
        case "reshape":
            return shapes.reshape(*s, _ints(op, "dims"))
        case "transpose":
            return shapes.transpose(*s, _ints(op, "shuffle"))
        case "concat":
            return shapes.concat(s, _int(op, "dim"))
        case "slice":
            return shapes.slice(*s, _ints(op, "start"), result)
        case "insert_tensor":
            return shapes.insert_tensor(*s, _ints(op, "start"))
        case "broadcast":
            return shapes.broadcast(*s, result, _int(op, "axis"))
    raise ShapeError("has no shape rule in glow-verify")


def _require(condition: bool, rule: str) -> None:
    if not condition:
        raise ShapeError(rule)


def _static_f32(value: ir.Value, kind: type[ir.ShapedType], what: str) -> Shape:
    """The shape of a value that must be a static f32 tensor (glow) or memref (glow_ir)."""
    t = value.type
    _require(
        isinstance(t, kind) and t.has_static_shape and isinstance(t.element_type, ir.F32Type),
        f"{what} must be a static-shaped f32 {'tensor' if kind is ir.RankedTensorType else 'memref'}, got {t}",
    )
    return shapes.tensor(t.shape, f"{what} shape")


def _same_shape(stated: Shape, expected: Shape, what: str) -> None:
    _require(stated == expected, f"{what} shape {list(stated)} must equal the shape rule's {list(expected)}")


def _ints(op: ir.Operation, name: str) -> list[int]:
    attr = op.attributes[name]
    _require(isinstance(attr, ir.DenseI64ArrayAttr), f"attribute '{name}' must be array<i64: ...>, got {attr}")
    return list(attr)


def _pads(op: ir.Operation) -> list[int]:
    # glow_ir convolution and pooling have no pads: the graph made padding explicit before IRGen.
    return _ints(op, "pads") if ops.has_attr(op, "pads") else [0, 0, 0, 0]


def _int(op: ir.Operation, name: str) -> int:
    attr = op.attributes[name]
    _require(
        isinstance(attr, ir.IntegerAttr) and _is_i64(attr.type),
        f"attribute '{name}' must be an i64 integer, got {attr}",
    )
    return attr.value


def _float(op: ir.Operation, name: str) -> float:
    attr = op.attributes[name]
    _require(
        isinstance(attr, ir.FloatAttr) and isinstance(attr.type, ir.F32Type),
        f"attribute '{name}' must be an f32 float, got {attr}",
    )
    return attr.value


def _flag(op: ir.Operation, name: str) -> bool:
    attr = op.attributes[name]
    _require(isinstance(attr, ir.BoolAttr), f"attribute '{name}' must be true or false, got {attr}")
    return attr.value


def _is_i64(t: ir.Type) -> bool:
    return isinstance(t, ir.IntegerType) and t.width == 64 and t.is_signless
