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

from mlir import ir

from glow_mlir import ops

from glow_mlir.opdefs import shapes
from glow_mlir.errors import VerificationError
from glow_mlir.passes.registry import register
from glow_mlir.opdefs.shapes import Shape, ShapeError

# A static tensor or buffer as the rules see it: its shape and its element type's MLIR spelling.
Typed = tuple[Shape, str]

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
    "convert_to": "convert_to",
    "element_select": "select",
    "element_cmp_eq": "cmp_eq",
    "element_cmp_neq": "cmp_neq",
    "element_cmp_lt": "cmp_lt",
    "element_cmp_lte": "cmp_lte",
    "element_and": "and",
    "element_or": "or",
    "element_xor": "xor",
    "element_not": "not",
    "element_pow": "pow",
    "element_log": "log",
    "element_abs": "abs",
    "element_neg": "neg",
    "element_floor": "floor",
    "element_ceil": "ceil",
    "element_round": "round",
    "element_erf": "erf",
    "element_sin": "sin",
    "element_cos": "cos",
    "gather": "gather",
    "batched_reduce_add": "batched_reduce_add",
    "batched_reduce_max": "batched_reduce_max",
    "batched_reduce_min": "batched_reduce_min",
    "batched_reduce_prod": "batched_reduce_prod",
    "arg_max": "arg_max",
    "arg_min": "arg_min",
    "batch_matmul": "batch_matmul",
    "conv_transpose": "conv_transpose",
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
    operands = [_static(v, ir.RankedTensorType, f"operand {i}") for i, v in enumerate(op.operands)]
    result = _static(op.results[0], ir.RankedTensorType, "result")
    _check(op, op.name.removeprefix(ops.GLOW), operands, result, "result")


def _check(op: ir.Operation, kind: str, operands: list[Typed], result: Typed, what: str) -> None:
    """`result` (the glow result or glow_ir destination) must have the element type and shape that the rules
    of glow op `kind` give for `operands` and `op`'s attributes."""
    stated_shape, stated_type = result
    expected_type = shapes.element_type(kind, [t for _, t in operands], stated_type)
    _require(
        stated_type == expected_type,
        f"{what} element type {stated_type} must equal the type rule's {expected_type}",
    )
    if kind == "splat":
        _splat_value(op, stated_type)
    _same_shape(stated_shape, _expected(op, kind, [s for s, _ in operands], stated_shape), what)


def _verify_glow_ir(op: ir.Operation) -> None:
    kind = op.name.removeprefix(ops.GLOW_IR)
    buffers = [_static(v, ir.MemRefType, f"operand {i}") for i, v in enumerate(op.operands)]
    if kind == "alloc_activation":
        _static(op.results[0], ir.MemRefType, "buffer")
    elif kind == "dealloc_activation":
        owner = op.operands[0].owner
        _require(
            isinstance(owner, ir.Operation | ir.OpView) and owner.name == "glow_ir.alloc_activation",
            "operand must be a buffer from glow_ir.alloc_activation",
        )
    elif kind == "tensor_view":
        view, view_type = _static(op.results[0], ir.MemRefType, "view")
        source, source_type = buffers[0]
        _require(
            math.prod(view) == math.prod(source),
            f"view {list(view)} must have as many elements as its source {list(source)}",
        )
        _require(
            view_type == source_type,
            f"view element type {view_type} must equal its source's {source_type} (a view moves no data)",
        )
    elif kind == "block_view":
        view, view_type = _static(op.results[0], ir.MemRefType, "view")
        source, source_type = buffers[0]
        start = _ints(op, "start")
        _require(
            len(start) == len(source) == len(view)
            and all(0 <= s and s + n <= d for s, n, d in zip(start, view, source, strict=True)),
            f"view {list(view)} at {list(start)} must lie inside its source {list(source)}",
        )
        _require(
            view_type == source_type,
            f"view element type {view_type} must equal its source's {source_type} (a view moves no data)",
        )
        strides, offset = ir.MemRefType(op.operands[0].type).get_strides_and_offset()
        expected = ir.StridedLayoutAttr.get(offset + sum(s * t for s, t in zip(start, strides)), strides)
        _require(
            ir.MemRefType(op.results[0].type).layout == expected,
            f"view layout must be {expected}, the block's place in its source",
        )
    else:
        roles = ops.roles(op)
        inputs = [b for b, r in zip(buffers, roles, strict=True) if r in ("in", "inout")]
        dest = next(b for b, r in zip(buffers, roles, strict=True) if r in ("out", "inout"))
        _check(op, _IR_RULES.get(kind, kind), inputs, dest, "destination")


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
            return shapes.tensor(result)
        case "fully_connected":
            return shapes.fully_connected(*s)
        case "matmul":
            return shapes.matmul(*s)
        case "fused_matmul":
            _activation(op)
            return shapes.fused_matmul(*s)
        case "batched_add":
            return shapes.batched_add(*s)
        case (
            "add" | "sub" | "mul" | "div" | "max" | "min" | "pow" | "cmp_eq" | "cmp_neq" | "cmp_lt" | "cmp_lte"
            | "and" | "or" | "xor"
        ):
            return shapes.elementwise(*s)
        case (
            "relu" | "sigmoid" | "tanh" | "exp" | "sqrt" | "copy" | "convert_to" | "not" | "log" | "abs" | "neg"
            | "floor" | "ceil" | "round" | "erf" | "sin" | "cos"
        ):
            return shapes.unary(*s)
        case "select":
            return shapes.select(*s)
        case "gather":
            return shapes.gather(*s, _int(op, "axis"))
        case "batched_reduce_add" | "batched_reduce_max" | "batched_reduce_min" | "batched_reduce_prod":
            return shapes.batched_reduce(*s, _ints(op, "axes"))
        case "arg_max" | "arg_min":
            return shapes.arg_reduce(*s, _int(op, "axis"), _flag(op, "keepDims"))
        case "batch_matmul":
            return shapes.batch_matmul(*s)
        case "conv_transpose":
            return shapes.conv_transpose(
                *s, kernels=_ints(op, "kernels"), strides=_ints(op, "strides"), pads=_pads(op),
                dilation=_ints(op, "dilation"), group=_int(op, "group"),
            )
        case "softmax":
            return shapes.softmax(*s)
        case "fused_convolution":
            _activation(op)
            return _expected(op, "convolution", s, result)
        case "convolution":
            return shapes.convolution(
                *s, kernels=_ints(op, "kernels"), strides=_ints(op, "strides"), pads=_pads(op),
                dilation=_ints(op, "dilation"), group=_int(op, "group"),
            )
        case "max_pool" | "avg_pool":
            if ops.has_attr(op, "countIncludePads"):
                _flag(op, "countIncludePads")
            return shapes.pool(*s, kernels=_ints(op, "kernels"), strides=_ints(op, "strides"), pads=_pads(op))
        case "cpu_conv_nhwc":
            _activation(op)
            return shapes.conv_nhwc(
                *s, kernels=_ints(op, "kernels"), strides=_ints(op, "strides"), pads=_pads(op),
                dilation=_ints(op, "dilation"), group=_int(op, "group"),
            )
        case "cpu_max_pool_nhwc" | "cpu_avg_pool_nhwc":
            if ops.has_attr(op, "countIncludePads"):
                _flag(op, "countIncludePads")
            return shapes.pool_nhwc(
                *s, kernels=_ints(op, "kernels"), strides=_ints(op, "strides"), pads=_pads(op)
            )
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


def _static(value: ir.Value, kind: type[ir.ShapedType], what: str) -> Typed:
    """Shape and element type of a value that must be a static tensor (glow) or memref (glow_ir) of one of
    the convention's element types."""
    t = value.type
    _require(
        isinstance(t, kind) and t.has_static_shape and str(t.element_type) in shapes.ELEMENT_TYPES,
        f"{what} must be a static-shaped {'tensor' if kind is ir.RankedTensorType else 'memref'} of "
        f"{', '.join(shapes.ELEMENT_TYPES)}, got {t}",
    )
    return shapes.tensor(t.shape, f"{what} shape"), str(t.element_type)


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


def _activation(op: ir.Operation) -> None:
    """A fused activation: a string `activation` of shapes.ACTIVATIONS and its f32 `activationArgs`."""
    name, args = op.attributes["activation"], op.attributes["activationArgs"]
    _require(isinstance(name, ir.StringAttr), f"attribute 'activation' must be a string, got {name}")
    _require(
        isinstance(args, ir.DenseF32ArrayAttr), f"attribute 'activationArgs' must be array<f32: ...>, got {args}"
    )
    shapes.activation(name.value, list(args))


def _splat_value(op: ir.Operation, elt: str) -> None:
    """A splat's value: an f32 attribute for float results, an integer one within range for integers and i1."""
    if elt in shapes.FLOATS:
        _float(op, "value")
        return
    attr = op.attributes["value"]
    _require(
        isinstance(attr, ir.IntegerAttr | ir.BoolAttr),
        f"attribute 'value' must be an integer for {elt} results, got {attr}",
    )
    value = ir.IntegerAttr(attr).value
    bits = int(elt.removeprefix("i"))
    # An i1-typed attribute (true/false) reads as -1/0; any other width must hold a value that fits.
    low, high = (-1, 1) if bits == 1 else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    _require(low <= value <= high, f"attribute 'value' {value} must lie in [{low}, {high}] for {elt} results")


def _flag(op: ir.Operation, name: str) -> bool:
    attr = op.attributes[name]
    _require(isinstance(attr, ir.BoolAttr), f"attribute '{name}' must be true or false, got {attr}")
    return attr.value


def _is_i64(t: ir.Type) -> bool:
    return isinstance(t, ir.IntegerType) and t.width == 64 and t.is_signless
