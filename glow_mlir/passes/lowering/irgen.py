"""glow-irgen: Glow's IRGen, the bufferization of a `glow` function on tensors into `glow_ir` on memrefs.

Glow's low-level IR is address-only: every instruction writes into buffers it is given, so that memory can be
planned statically (glow-allocate) and kernels never allocate. This pass produces that form:

- The function becomes `(inputs..., outputs...) -> ()` on memrefs; output arguments keep their `glow.name`
  and gain `glow.output`.
- `glow.constant` becomes a private constant `memref.global` read with `memref.get_global` (Glow's constant
  WeightVars).
- Each computing op becomes `glow_ir.alloc_activation` of its result plus the instruction writing into it;
  `glow.reshape` becomes a `glow_ir.tensor_view` (no copy), `glow.concat` one `glow_ir.insert_tensor` per
  input into one buffer (Glow's way), `glow.insert_tensor` a copy of `big` then the @inout insert.
- The op computing a returned value writes straight into its output argument; a value that is returned twice,
  an input or a constant returned, or a view returned gets a `glow_ir.copy` into the output instead.
- Every activation gets a `glow_ir.dealloc_activation` right after its last use, reads of its views included.

Design: a legality check first (like a dialect-conversion target) so that an unlowered op stops the pass
before anything changes, naming the op and its location. Then each glow op has one rewrite function applied
by MLIR's greedy pattern driver: it reads its operands' buffers through `builtin.unrealized_conversion_cast`
bridges (tensor <- memref), emits the instruction, and replaces the op by a bridge of its result buffer.
The driver folds bridge pairs whichever order it visits producers and consumers in; once the return is
rewritten, no tensor is left and the bridges are erased.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from mlir import ir, rewrite
from mlir.dialects import builtin, func, memref

from glow_mlir import opdefs, ops
from glow_mlir.errors import GlowError, VerificationError
from glow_mlir.opdefs import control
from glow_mlir.passes.registry import register

RewriteFn = Callable[[ir.OpView, rewrite.PatternRewriter], None]

BRIDGE = "builtin.unrealized_conversion_cast"
ALLOC = "glow_ir.alloc_activation"
VIEW = "glow_ir.tensor_view"
BLOCK_VIEW = "glow_ir.block_view"
# Constant weights are 64-byte aligned, as Glow's, so that vector loads of them are aligned.
WEIGHT_ALIGNMENT = 64
def irgen(module: ir.Module) -> None:
    """Converts every function of `module` from `glow` on tensors to `glow_ir` on memrefs, in place."""
    functions = ops.functions(module)
    for function in functions:
        _check_convertible(function)
    patterns = _patterns(ir.SymbolTable(module.operation)).freeze()
    # Visiting producers first keeps globals in program order and lets most operands read their bridges.
    config = rewrite.GreedyRewriteConfig()
    config.use_top_down_traversal = True
    for function in functions:
        with function.location:
            outputs = _convert_signature(function)
            rewrite.apply_patterns_and_fold_greedily(function, patterns, config)
            _write_outputs(function, outputs)
            _erase_bridges(function)
            _insert_deallocs(_body(function))


@register("glow-irgen")
def irgen_pass(module: ir.Module) -> None:
    """Bufferizes glow ops on tensors into glow_ir instructions on memrefs (Glow's IRGen)."""
    irgen(module)


def _body(function: ir.Operation) -> ir.Block:
    return function.regions[0].blocks[0]


def _check_convertible(function: ir.Operation) -> None:
    signature = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)
    for t in [*signature.inputs, *signature.results]:
        if not isinstance(t, ir.RankedTensorType):
            rule = f"has a non-tensor argument or result {t}: glow-irgen takes glow functions on tensors"
            raise VerificationError("func.func", ops.location_text(function), rule)
    table, padded = rewrites(), padded_ops()
    for op in ops.walk_ops(function):
        if op.name in table or op.name == CONSTANT:
            if op.name in padded and any(ops.ints(op, "pads")):
                rule = f"has pads {ops.ints(op, 'pads')}: glow-irgen needs explicit padding (run glow-lower first)"
                raise VerificationError(op.name, ops.location_text(op), rule)
        elif op.name.startswith(ops.GLOW):
            rule = "has no IRGen rule: it must be lowered first (run glow-lower)"
            raise VerificationError(op.name, ops.location_text(op), rule)
        elif op.name != "func.return":
            rule = "is not a glow op: glow-irgen converts glow functions only"
            raise VerificationError(op.name, ops.location_text(op), rule)


def _memref_of(tensor: ir.Type) -> ir.MemRefType:
    return ops.memref_type(ops.shape(tensor), ops.element_type(tensor))


def _attr_dicts(function: ir.Operation, name: str, count: int) -> list[dict[str, ir.Attribute]]:
    if name not in function.attributes:
        return [{} for _ in range(count)]
    dicts = []
    for d in ir.ArrayAttr(function.attributes[name]):
        d = ir.DictAttr(d)
        dicts.append({d[i].name: d[i].attr for i in range(len(d))})
    return dicts


def _convert_signature(function: ir.Operation) -> list[ir.Value]:
    """Turns `(tensors) -> (tensors)` into `(input memrefs, output memrefs) -> ()`; returns the output arguments.

    Uses of the old tensor arguments read the new memref arguments through bridges until the patterns run.
    """
    signature = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)
    arg_attrs = _attr_dicts(function, "arg_attrs", len(signature.inputs))
    res_attrs = _attr_dicts(function, "res_attrs", len(signature.results))
    block = _body(function)
    first = block.operations[0]
    inputs = len(block.arguments)
    for old in list(block.arguments):
        new = block.add_argument(_memref_of(old.type), old.location)
        with ir.InsertionPoint(first), old.location:
            old.replace_all_uses_with(builtin.unrealized_conversion_cast([old.type], [new]))
    terminator = block.operations[len(block.operations) - 1]
    outputs = [block.add_argument(_memref_of(t), terminator.location) for t in signature.results]
    for i in reversed(range(inputs)):
        block.erase_argument(i)
    new_types = [a.type for a in block.arguments]
    function.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(new_types, []))
    output_attrs = [d | {"glow.output": ir.UnitAttr.get()} for d in res_attrs]
    function.attributes["arg_attrs"] = ir.ArrayAttr.get([ir.DictAttr.get(d) for d in arg_attrs + output_attrs])
    if "res_attrs" in function.attributes:
        del function.attributes["res_attrs"]
    return outputs


def _buffer(value: ir.Value) -> ir.Value:
    """The memref holding tensor `value`: the source of its bridge, or a new bridge that the driver folds
    once value's producer is rewritten."""
    owner = _producer(value)
    if owner is not None and owner.name == BRIDGE and isinstance(owner.operands[0].type, ir.MemRefType):
        return owner.operands[0]
    return builtin.unrealized_conversion_cast([_memref_of(value.type)], [value])


def _producer(value: ir.Value) -> ir.Operation | None:
    """The op defining `value`, or None for a block argument."""
    owner = value.owner
    # An OpView's `name` may be an attribute of that op (memref.get_global's symbol); the Operation's is its kind.
    return None if isinstance(owner, ir.Block) else owner.operation


def _replace(rewriter: rewrite.PatternRewriter, op: ir.Operation, buffer: ir.Value) -> None:
    rewriter.replace_op(op, [builtin.unrealized_conversion_cast([op.results[0].type], [buffer])])


def _alloc(tensor: ir.Type) -> ir.Value:
    return ops.create(ALLOC, results=[_memref_of(tensor)]).results[0]


def _emit(name: str, operands: Sequence[ir.Value], attributes: dict[str, ir.Attribute] | None = None) -> None:
    roles = ir.ArrayAttr.get([ir.StringAttr.get(r) for r in opdefs.ir_op(name).role_list])
    ops.create(name, operands, attributes=(attributes or {}) | {"roles": roles})


def _instruction(name: str, attributes: Sequence[str] = ()) -> RewriteFn:
    """The rewrite of a glow op into glow_ir `name` writing a new buffer from the op's operands, in order,
    keeping the listed attributes."""

    def rewrite_op(view: ir.OpView, rewriter: rewrite.PatternRewriter) -> None:
        op = view.operation
        with rewriter.ip, op.location:
            dest = _alloc(op.results[0].type)
            _emit(name, [dest, *(_buffer(v) for v in op.operands)], {a: op.attributes[a] for a in attributes})
            _replace(rewriter, op, dest)

    return rewrite_op


def _rewrite_reshape(view: ir.OpView, rewriter: rewrite.PatternRewriter) -> None:
    op = view.operation
    with rewriter.ip, op.location:
        source = _buffer(op.operands[0])
        _replace(rewriter, op, ops.create(VIEW, [source], [_memref_of(op.results[0].type)]).results[0])


def _rewrite_concat(view: ir.OpView, rewriter: rewrite.PatternRewriter) -> None:
    op = view.operation
    dim = ops.integer(op, "dim")
    with rewriter.ip, op.location:
        dest = _alloc(op.results[0].type)
        offset = 0
        for part in op.operands:
            start = [0] * len(ops.shape(part))
            start[dim] = offset
            _emit("glow_ir.insert_tensor", [dest, _buffer(part)], {"start": ops.i64_array(start)})
            offset += ops.shape(part)[dim]
        _replace(rewriter, op, dest)


def _rewrite_insert_tensor(view: ir.OpView, rewriter: rewrite.PatternRewriter) -> None:
    op = view.operation
    big, small = op.operands
    with rewriter.ip, op.location:
        dest = _alloc(op.results[0].type)
        # glow_ir.insert_tensor updates its @inout destination in place; `big` may have other readers.
        _emit("glow_ir.copy", [dest, _buffer(big)])
        _emit("glow_ir.insert_tensor", [dest, _buffer(small)], {"start": op.attributes["start"]})
        _replace(rewriter, op, dest)


def _symbol_name(op: ir.Operation) -> str:
    """A readable symbol for a constant: its node name when it has one."""
    loc = op.location
    if loc.is_a_name():
        name = re.sub(r"[^A-Za-z0-9_]", "_", loc.name_str)
        return name if name[:1].isalpha() or name[:1] == "_" else f"c_{name}"
    return "constant"


def _constant_rewrite(symbols: ir.SymbolTable) -> RewriteFn:
    def rewrite_constant(view: ir.OpView, rewriter: rewrite.PatternRewriter) -> None:
        op = view.operation
        buffer_type = _memref_of(op.results[0].type)
        with ir.InsertionPoint(op.parent), op.location:
            weights = memref.GlobalOp(
                sym_name=_symbol_name(op),
                type_=ir.TypeAttr.get(buffer_type),
                sym_visibility="private",
                initial_value=op.attributes["value"],
                constant=True,
                alignment=ops.i64(WEIGHT_ALIGNMENT),
            )
        # The table renames the global when another symbol has its name.
        name = symbols.insert(weights)
        with rewriter.ip, op.location:
            _replace(rewriter, op, memref.get_global(buffer_type, ir.StringAttr(name).value))

    return rewrite_constant


def _rewrite_loop(view: ir.OpView, rewriter: rewrite.PatternRewriter) -> None:
    """glow.loop -> glow_ir.loop writing a new buffer per result from its operands' buffers; its body
    function is bufferized as every function is (glow_mlir/opdefs/control.py)."""
    op = view.operation
    with rewriter.ip, op.location:
        dests = [_alloc(r.type) for r in op.results]
        operands = [*dests, *(_buffer(v) for v in op.operands)]
        kept = {a: op.attributes[a] for a in op.attributes if not a.endswith("SegmentSizes")}
        roles = ["out"] * len(dests) + ["in"] * len(op.operands)
        ops.create(control.IR_LOOP, operands, attributes=kept | {
            "roles": ir.ArrayAttr.get([ir.StringAttr.get(r) for r in roles]),
            "operandSegmentSizes": control.segments([v.type for v in operands], "operands"),
        })
        rewriter.replace_op(op, [builtin.unrealized_conversion_cast([r.type], [d]) for r, d in zip(op.results, dests)])


# Ops whose rewrite is not one instruction from their operands: a view, several inserts, a copy then an insert.
_SPECIAL: dict[str, RewriteFn] = {
    "glow.reshape": _rewrite_reshape,
    "glow.concat": _rewrite_concat,
    "glow.insert_tensor": _rewrite_insert_tensor,
    control.LOOP: _rewrite_loop,
}


def rewrites() -> dict[str, RewriteFn]:
    """The rewrite of every glow op IRGen takes: one instruction for each op whose definition names one (it
    keeps the attributes the instruction lists), and the special rewrites."""
    table = {
        op.full_name: _instruction(op.ir.full_name, op.ir.attrs)
        for op in opdefs.glow_ops().values()
        if op.ir is not None
    }
    return table | _SPECIAL


def padded_ops() -> frozenset[str]:
    """Ops that IRGen takes only once glow-lower has made their padding explicit (for conv_transpose, whose
    pads crop its output, a slice of the unpadded op): those with `pads` whose instruction has none."""
    return frozenset(
        op.full_name
        for op in opdefs.glow_ops().values()
        if op.ir is not None and "pads" in dict(op.attrs) and "pads" not in op.ir.attrs
    )


# glow.constant is not in `rewrites()` because its rewrite needs the module's symbol table.
CONSTANT = "glow.constant"


def _patterns(symbols: ir.SymbolTable) -> rewrite.RewritePatternSet:
    patterns = rewrite.RewritePatternSet()
    for name, fn in [*rewrites().items(), (CONSTANT, _constant_rewrite(symbols))]:
        patterns.add(name, fn)
    return patterns


def _write_outputs(function: ir.Operation, outputs: Sequence[ir.Value]) -> None:
    """Makes each returned value's producer write its output argument, or copies into it, and empties the return."""
    block = _body(function)
    terminator = block.operations[len(block.operations) - 1]
    copies: list[tuple[ir.Value, ir.Value]] = []
    for output, value in zip(outputs, list(terminator.operands)):
        source = _buffer(value)
        producer = _producer(source)
        if producer is not None and producer.name == ALLOC:
            # Later returns of the same value then find the output argument here and copy from it.
            source.replace_all_uses_with(output)
            producer.erase()
        else:
            copies.append((output, source))
    with ir.InsertionPoint(terminator), terminator.location:
        for output, source in copies:
            _emit("glow_ir.copy", [output, source])
        func.ReturnOp([])
    terminator.erase()


def _erase_bridges(function: ir.Operation) -> None:
    block = _body(function)
    for op in reversed(list(block.operations)):
        op = op.operation
        if op.name != BRIDGE:
            continue
        if list(op.results[0].uses):
            raise GlowError(f"{ops.location_text(op)}: glow-irgen left a tensor value in use: {op}")
        op.erase()


def _insert_deallocs(block: ir.Block) -> None:
    """Ends each activation right after its last use, a use of a view of it counting as a use of it."""
    order = [op.operation for op in block.operations]
    position = {op: i for i, op in enumerate(order)}
    for alloc in [op for op in order if op.name == ALLOC]:
        last = max(position[user] for user in buffer_users(alloc.results[0]))
        with ir.InsertionPoint(order[last + 1]), alloc.location:
            _emit("glow_ir.dealloc_activation", [alloc.results[0]])


def buffer_users(buffer: ir.Value) -> list[ir.Operation]:
    """The ops using `buffer` directly or through (nested) tensor views."""
    found: list[ir.Operation] = []
    for use in buffer.uses:
        user = use.owner.operation
        found.append(user)
        if user.name in (VIEW, BLOCK_VIEW):
            found.extend(buffer_users(user.results[0]))
    return found
