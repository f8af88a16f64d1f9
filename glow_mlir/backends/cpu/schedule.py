"""glow-cpu-schedule: tiles and vectorizes the kernels of glow-ir-to-linalg with transform-dialect recipes.

glow-ir-to-linalg says *what* each instruction computes (one or a few linalg ops); this pass says *how* it
runs on this CPU, the way Glow's CPU backend picks a hand-written kernel per instruction. It runs right after
glow-ir-to-linalg and before glow-to-llvm.

The contract (for every recipe module, e.g. glow_mlir/backends/cpu/conv_recipes.py):

- A recipe is a function registered for one payload op name with `@recipe("linalg.matmul")`. The pass calls
  it once for every op of that name, in program order, as `fn(op) -> Recipe | None`. `None` leaves the op as
  it is: glow-to-llvm lowers it to loops, which is always correct.
- A recipe may rewrite the payload before it answers (the matmul recipe packs constant weights and replaces
  the matmul by generics over the packed layout), with the insertion point and location of its choice. It
  must leave the function valid and must not touch ops other than its own and the ones it creates.
- A `Recipe` is a list of `Kernel(op, steps)`. The pass tags each kernel's op with a unique `glow.kernel`
  attribute, matches it with `transform.structured.match ... attributes{glow.kernel = ...}`, and splices
  `steps`: transform IR text in which `$op` is the handle of that op and `$p` a prefix unique to the kernel
  (write `%${p}tiled`), so that SSA names of different kernels never collide. `Steps` builds such text.
- All kernels' steps run first, in program order, in one named sequence. Then, if the function holds any
  `bufferization.to_tensor` (a kernel emitted on tensors, because some transforms, e.g. `decompose` of
  convolutions, work on tensors only: see `on_tensors`), `one_shot_bufferize` runs once. Then comes the
  shared vector tail of docs/notes (fold alias ops, canonicalize, CSE, hoist, drop unit dims, contraction ->
  outer products, lower transfers, hoist), which is why recipe steps stop at `vectorize`.
- Kernels emitted on tensors: `on_tensors(inputs, output)` wraps memref operands as tensors and
  `write_back(result, output)` stores a tensor result into its memref in place (both `restrict`, so
  bufferization reuses the buffers and allocates nothing).

Recipes for matmul-shaped ops, fills and vectorizable generics live here; convolutions and pools in
glow_mlir/backends/cpu/conv_recipes.py (when present), loaded through `RECIPE_MODULES`.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from string import Template

import numpy as np
from mlir import ir
from mlir.dialects import arith, bufferization, func, linalg, memref
from mlir.dialects.transform import interpreter

from glow_mlir import ops
from glow_mlir.backends.cpu import fastmath
from glow_mlir.codegen.linalg import CONV_ACTIVATION_ATTR, CONV_BIAS_ATTR
from glow_mlir.errors import PipelineError
from glow_mlir.passes.registry import register

KERNEL_ATTR = "glow.kernel"
# Marks the ops of an elementwise chain that the chain's last op schedules (mark_chains).
CHAIN_MARK = "glow.chained"
# Marks of ops that the recipe of another op schedules (codegen/linalg.py sets the conv ones).
CLAIMED_MARKS = (CONV_BIAS_ATTR, CONV_ACTIVATION_ATTR, CHAIN_MARK)
# Modules that register recipes besides this one; a missing module is skipped (it is optional).
RECIPE_MODULES = ("glow_mlir.backends.cpu.conv_recipes",)


@dataclass(frozen=True)
class Kernel:
    """One payload op and the transform steps that schedule it (`$op`: its handle, `$p`: a unique prefix)."""

    op: ir.Operation
    steps: str


@dataclass(frozen=True)
class Recipe:
    """What a recipe decided: the kernels (payload ops and their steps) that replace or schedule its op."""

    kernels: tuple[Kernel, ...]

    @staticmethod
    def of(op: ir.Operation, steps: str) -> Recipe:
        """A recipe of one kernel."""
        return Recipe((Kernel(op, steps),))


RecipeFn = Callable[[ir.Operation], Recipe | None]
_RECIPES: dict[str, RecipeFn] = {}


def recipe(op_name: str) -> Callable[[RecipeFn], RecipeFn]:
    """Registers `fn` as the recipe of payload ops named `op_name` (one recipe per name)."""

    def wrap(fn: RecipeFn) -> RecipeFn:
        if op_name in _RECIPES:
            raise ValueError(f"a recipe for '{op_name}' is registered twice")
        _RECIPES[op_name] = fn
        return fn

    return wrap


def recipes() -> dict[str, RecipeFn]:
    """Every registered recipe, by payload op name (loads the optional recipe modules first)."""
    for module in RECIPE_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name != module:
                raise
    return dict(_RECIPES)


class Steps:
    """Builds the transform text of one kernel: each step takes a handle and returns the handle it makes."""

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._count = 0

    def _fresh(self) -> str:
        self._count += 1
        return f"%${{p}}h{self._count}"

    def tile(self, handle: str, sizes: Sequence[int], interchange: Sequence[int] = ()) -> str:
        """`tile_using_for` with `sizes` (0: not tiled); returns the handle of the tiled op."""
        if not any(sizes):
            return handle
        order = f" interchange = [{', '.join(map(str, interchange))}]" if interchange else ""
        return self._tiling("tile_using_for", handle, sizes, order)

    def fuse(self, handle: str, sizes: Sequence[int], interchange: Sequence[int] = ()) -> str:
        """`structured.fuse`: tiles `handle` (0: not tiled) and pulls its producers into the tile loops;
        returns the handle of the tiled op. Producers left without uses stay until a canonicalization."""
        order = f" interchange [{', '.join(map(str, interchange))}]" if interchange else ""
        return self._tiling("fuse", handle, sizes, order)

    def _tiling(self, op: str, handle: str, sizes: Sequence[int], order: str) -> str:
        """A `transform.structured.<op>` that tiles `handle` with `sizes`: the tiled op's handle, then one
        loop handle per tiled dim."""
        loops = sum(1 for s in sizes if s)
        tiled = self._fresh()
        names = ", ".join([tiled, *[self._fresh() for _ in range(loops)]])
        types = ", ".join(["!transform.any_op"] * (loops + 1))
        self._lines.append(
            f"{names} = transform.structured.{op} {handle} tile_sizes [{', '.join(map(str, sizes))}]{order}"
            f" : (!transform.any_op) -> ({types})"
        )
        return tiled

    def _step(self, op: str) -> str:
        """Appends `<fresh> = <op>` for a transform op from one handle to one handle; returns the new one."""
        result = self._fresh()
        self._lines.append(f"{result} = {op} : (!transform.any_op) -> !transform.any_op")
        return result

    def function_of(self, handle: str) -> str:
        """The func.func around `handle`'s op (a kernel's own function, once outlined)."""
        return self._step(f'transform.get_parent_op {handle} {{op_name = "func.func"}}')

    def canonicalize(self, handle: str) -> None:
        self._lines.append(
            f"transform.apply_patterns to {handle} {{ transform.apply_patterns.canonicalization }} : !transform.any_op"
        )

    def match(self, handle: str, op_name: str) -> str:
        """Every `op_name` nested in `handle`."""
        return self._step(f'transform.structured.match ops{{["{op_name}"]}} in {handle}')

    def decompose(self, handle: str) -> str:
        return self._step(f"transform.structured.decompose {handle}")

    def vectorize(self, handle: str, vector_sizes: Sequence[int] = ()) -> None:
        """Vectorizes; `vector_sizes` masks tiles that are smaller than the vector (partial tiles)."""
        sizes = f" vector_sizes [{', '.join(map(str, vector_sizes))}]" if vector_sizes else ""
        self._lines.append(f"transform.structured.vectorize {handle}{sizes} : !transform.any_op")

    def text(self) -> str:
        return "\n".join(self._lines)


# ----------------------------------------------------------------------------------------------------------
# The pass


@register("glow-cpu-schedule")
def cpu_schedule(module: ir.Module) -> None:
    """Tile and vectorize linalg kernels with per-op transform recipes (matmul, elementwise, conv, ...)."""
    table = recipes()
    with module.context:
        kernels: list[Kernel] = []
        for func in ops.functions(module):
            if not func.regions[0].blocks:
                continue
            fastmath.approximate(func)
            mark_chains(func)
            # A convolution's bias and activation ops go with the convolution's recipe, which may erase them.
            candidates = [
                op
                for op in ops.walk_ops(func)
                if op.name in table and not any(mark in op.attributes for mark in CLAIMED_MARKS)
            ]
            for op in candidates:
                fn = table[op.name]
                with op.location, ir.InsertionPoint(op):
                    chosen = fn(op)
                if chosen is not None:
                    kernels.extend(chosen.kernels)
        if not kernels:
            return
        on_tensors = any(op.name == "bufferization.to_tensor" for op in ops.walk_ops(module.operation))
        for i, kernel in enumerate(kernels):
            kernel.op.attributes[KERNEL_ATTR] = ir.StringAttr.get(f"k{i}")
            _outline(kernel.op, f"__glow_kernel{i}")
        script = ir.Module.parse(_sequence(kernels, on_tensors))
        try:
            interpreter.apply_named_sequence(module.operation, script.body.operations[0], script)
        except ir.MLIRError as e:
            notes = "; ".join(f"{d.location}: {d.message}" for d in e.error_diagnostics)
            raise PipelineError(f"glow-cpu-schedule failed: {notes or e}") from None
        for op in ops.walk_ops(module.operation):
            if KERNEL_ATTR in op.attributes:
                del op.attributes[KERNEL_ATTR]


def _outline(op: ir.Operation, name: str) -> None:
    """Moves kernel `op` into a private function of its own, called in its place.

    Hoisting the accumulators out of the reduction loop (the heart of every register-tiled kernel) gives up
    on transfers whose buffer comes from a view op (notes: condition 4 of hoistRedundantVectorTransfers), and
    every activation is a `memref.view` into the arena. Inside the kernel's function its buffers are block
    arguments. A kernel on tensors takes its `to_tensor` producers and `materialize_in_destination` consumers
    along; constants it uses are cloned in. LLVM inlines the calls back after the vector code is formed.
    """
    # Everything the kernel computes on tensors comes along: its chain of tensor producers (a fused
    # convolution's bias op, the convolution, the `to_tensor`s), in block order.
    producers: list[ir.Operation] = []
    pending = [op]
    while pending:
        for value in pending.pop().operands:
            owner = value.owner
            if isinstance(owner, ir.OpView | ir.Operation) and isinstance(value.type, ir.RankedTensorType):
                if not any(owner.operation == p for p in producers):
                    producers.append(owner.operation)
                    pending.append(owner.operation)
    producers.sort(key=functools.cmp_to_key(lambda a, b: -1 if a.is_before_in_block(b) else 1))
    consumers = [
        use.owner
        for result in op.results
        for use in result.uses
        if use.owner.name == "bufferization.materialize_in_destination"
    ]
    cluster = producers + [op] + [c.operation for c in consumers]
    arguments: list[ir.Value] = []
    for member in cluster:
        for inner in [member, *ops.walk_ops(member)]:
            for value in inner.operands:
                if any(_defined_in(value, m) for m in cluster) or _is_constant(value):
                    continue
                if not any(known == value for known in arguments):
                    arguments.append(value)
    caller = op.parent
    while caller.name != "func.func":
        caller = caller.parent
    with ir.InsertionPoint(caller.operation):
        callee = func.FuncOp(name, ([v.type for v in arguments], []), visibility="private")
    block = callee.add_entry_block()
    with ir.InsertionPoint(block):
        terminator = func.ReturnOp([])
    with ir.InsertionPoint(op):
        func.CallOp([], ir.FlatSymbolRefAttr.get(name), arguments)
    for member in cluster:
        member.move_before(terminator)
    for inner in ops.walk_ops(callee.operation):
        for i, value in enumerate(inner.operands):
            if _defined_in(value, callee.operation):
                continue
            if _is_constant(value):
                inner.operands[i] = value.owner.clone(ir.InsertionPoint.at_block_begin(block)).results[0]
                continue
            inner.operands[i] = block.arguments[next(j for j, v in enumerate(arguments) if v == value)]


def _is_constant(value: ir.Value) -> bool:
    """Whether `value` is an arith.constant (cloned into an outlined kernel rather than passed to it)."""
    owner = value.owner
    return isinstance(owner, ir.OpView | ir.Operation) and owner.name == "arith.constant"


def _defined_in(value: ir.Value, root: ir.Operation) -> bool:
    """Whether `value` is a result or block argument of an op nested in `root`."""
    owner = value.owner
    op = owner.owner if isinstance(owner, ir.Block) else owner
    while op is not None:
        if op.operation == root:
            return True
        op = op.parent
    return False


def _sequence(kernels: Sequence[Kernel], on_tensors: bool) -> str:
    """The transform module: match and schedule each kernel, bufferize if needed, then the vector tail."""
    body: list[str] = []
    for i, kernel in enumerate(kernels):
        handle = f"%k{i}"
        body.append(
            f'{handle} = transform.structured.match ops{{["{kernel.op.name}"]}} '
            f'attributes{{{KERNEL_ATTR} = "k{i}"}} in %root : (!transform.any_op) -> !transform.any_op'
        )
        body.append(Template(kernel.steps).substitute(op=handle, p=f"k{i}_"))
    root = "%root"
    if on_tensors:
        body.append(
            "%bufferized = transform.bufferization.one_shot_bufferize %root {bufferize_function_boundaries = false}"
            " : (!transform.any_op) -> !transform.any_op"
        )
        root = "%bufferized"
    body.append(VECTOR_TAIL.replace("%root", root))
    mode = "transform.consumed" if on_tensors else "transform.readonly"
    return (
        "module attributes {transform.with_named_sequence} {\n"
        f"transform.named_sequence @__transform_main(%root: !transform.any_op {{{mode}}}) {{\n"
        + "\n".join(body)
        + "\ntransform.yield\n}\n}"
    )


# The shared clean-up and lowering of vector code (docs: /work/shared/notes, "A working vector tail").
# Hoisting only sees through canonical, CSE'd IR with views folded away, so it runs after each clean-up.
VECTOR_TAIL = """
%f0 = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
transform.apply_patterns to %f0 {
  transform.apply_patterns.vector.reduction_to_contract
  transform.apply_patterns.vector.transfer_permutation_patterns
  transform.apply_patterns.memref.fold_memref_alias_ops
  transform.apply_patterns.canonicalization
} : !transform.any_op
transform.apply_cse to %f0 : !transform.any_op
%f1 = transform.structured.hoist_redundant_vector_transfers %f0 : (!transform.any_op) -> !transform.any_op
transform.apply_patterns to %f1 {
  transform.apply_patterns.vector.cast_away_vector_leading_one_dim
  transform.apply_patterns.vector.drop_unit_dims_with_shape_cast
  transform.apply_patterns.canonicalization
} : !transform.any_op
transform.apply_cse to %f1 : !transform.any_op
%f2 = transform.structured.hoist_redundant_vector_transfers %f1 : (!transform.any_op) -> !transform.any_op
transform.apply_patterns to %f2 {
  transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
  transform.apply_patterns.vector.transfer_permutation_patterns
  transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerparallel"
  transform.apply_patterns.vector.lower_masked_transfers
  transform.apply_patterns.vector.lower_masks
  transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
  transform.apply_patterns.vector.lower_outerproduct
  transform.apply_patterns.canonicalization
} : !transform.any_op
%f3 = transform.structured.hoist_redundant_vector_transfers %f2 : (!transform.any_op) -> !transform.any_op
"""


# ----------------------------------------------------------------------------------------------------------
# Kernels on tensors


def on_tensors(values: Sequence[ir.Value], writable: Sequence[bool] | None = None) -> list[ir.Value]:
    """Each memref in `values` seen as a tensor (`bufferization.to_tensor restrict`; an output to be written
    in place with `write_back` must be `writable`). Build the kernel on these, then `write_back` its result."""
    flags = writable or [False] * len(values)
    tensors = []
    for value, flag in zip(values, flags, strict=True):
        t = ir.MemRefType(value.type)
        tensor_type = ir.RankedTensorType.get(t.shape, t.element_type)
        tensors.append(bufferization.to_tensor(tensor_type, value, restrict=True, writable=flag))
    return tensors


def write_back(result: ir.Value, dest: ir.Value) -> None:
    """Stores a kernel's tensor result into memref `dest` in place (`materialize_in_destination restrict`)."""
    bufferization.materialize_in_destination(None, result, dest, restrict=True, writable=True)


# ----------------------------------------------------------------------------------------------------------
# Shared helpers of recipes


def static_shape(value: ir.Value) -> tuple[int, ...] | None:
    """The shape of a memref or tensor with only static dims, else None."""
    t = ir.ShapedType(value.type)
    if not t.has_static_shape:
        return None
    return tuple(t.shape)


def is_float32(value: ir.Value) -> bool:
    """Whether a memref or tensor holds f32, the element type the register-tiled kernels are written for."""
    return ir.ShapedType(value.type).element_type == ir.F32Type.get()


def has_identity_layout(value: ir.Value) -> bool:
    """A memref whose layout is the plain row-major one (function arguments, arena views, globals)."""
    layout = ir.MemRefType(value.type).layout
    return isinstance(layout, ir.AffineMapAttr) and layout.value == ir.AffineMap.get_identity(layout.value.n_dims)


def largest_divisor(n: int, at_most: int, multiple_of: int = 1) -> int:
    """The largest d <= at_most that divides n and is a multiple of `multiple_of` (n itself if it fits)."""
    for d in range(min(n, at_most), 0, -1):
        if n % d == 0 and d % multiple_of == 0:
            return d
    return multiple_of if n % multiple_of == 0 else 1


def _subview(base: ir.Value, offsets: Sequence[int], sizes: Sequence[int]) -> ir.Value:
    """The block of identity-layout memref `base` at `offsets` (a subview, which fold_memref_alias_ops folds
    into the accesses so that hoisting sees the base buffer); `base` itself for the whole buffer."""
    dims = static_shape(base)
    assert dims is not None
    if list(sizes) == list(dims):
        return base
    strides = _row_major(dims)
    offset = sum(o * s for o, s in zip(offsets, strides, strict=True))
    elt = ir.MemRefType(base.type).element_type
    result = ir.MemRefType.get(list(sizes), elt, layout=ir.StridedLayoutAttr.get(offset, strides))
    return memref.SubViewOp(
        result, base, [], [], [], ops.i64_array(offsets), ops.i64_array(sizes), ops.i64_array([1] * len(dims))
    ).result


def _split_last(view: ir.Value, inner: int) -> ir.Value:
    """`view` with its last dim n split into (n / inner, inner) (an expand_shape, foldable like a subview)."""
    t = ir.MemRefType(view.type)
    dims = list(t.shape)
    strides, offset = t.get_strides_and_offset()
    sizes = [*dims[:-1], dims[-1] // inner, inner]
    layout = (
        None
        if has_identity_layout(view)
        else ir.StridedLayoutAttr.get(offset, [*strides[:-1], strides[-1] * inner, strides[-1]])
    )
    result = ir.MemRefType.get(sizes, t.element_type, layout=layout)
    groups = [[d] for d in range(len(dims) - 1)] + [[len(dims) - 1, len(dims)]]
    reassociation = ir.ArrayAttr.get([ir.ArrayAttr.get([ops.i64(d) for d in g]) for g in groups])
    return memref.expand_shape(result, view, reassociation, [], ops.i64_array(sizes))


def _row_major(dims: Sequence[int]) -> list[int]:
    strides = [1] * len(dims)
    for i in range(len(dims) - 2, -1, -1):
        strides[i] = strides[i + 1] * dims[i + 1]
    return strides


def _iterators(kinds: Sequence[str]) -> ir.ArrayAttr:
    """linalg iterator types from their names ("parallel", "reduction")."""
    return ir.ArrayAttr.get([ir.Attribute.parse(f"#linalg.iterator_type<{k}>") for k in kinds])


def _map(dims: int, exprs: Sequence[int]) -> ir.AffineMapAttr:
    """The projected permutation (d0, ..., d{dims-1}) -> (d{exprs[0]}, ...)."""
    return ir.AffineMapAttr.get(ir.AffineMap.get(dims, 0, [ir.AffineDimExpr.get(d) for d in exprs]))


# ----------------------------------------------------------------------------------------------------------
# Matmul, batch_matmul (and the matmul of fused_matmul): register-tiled, constant weights packed once


# nr per mr: 16 zmm accumulators is the sweet spot with 32 registers (docs/notes); one row needs 8 of them to
# cover the FMA latency, so a GEMV-like row gets 128 columns.
_NR_FOR_MR = {1: 128, 2: 128, 3: 64, 4: 64, 5: 32, 6: 32, 7: 32, 8: 32}
# Cache blocks: A block mc x kc stays in L2, a B panel kc x nr in L1 (docs/notes: mc=128, nc=256, kc=512).
MC, NC, KC = 128, 256, 512


def _pick_mr(m: int) -> int:
    """The row count of the register tile: a divisor of m in 8..4 if there is one, else 8 (rows peeled)."""
    if m <= 8:
        return m
    for mr in (8, 7, 6, 5, 4):
        if m % mr == 0:
            return mr
    return 8


@recipe("linalg.matmul")
def matmul_recipe(op: ir.Operation) -> Recipe | None:
    """glow_ir.matmul (and fused_matmul's product): register-tiled, constant weights packed."""
    a, b, c = op.operands
    return _gemm(op, a, b, c, batch=None)


@recipe("linalg.batch_matmul")
def batch_matmul_recipe(op: ir.Operation) -> Recipe | None:
    """glow_ir.batch_matmul: the matmul kernel per batch element (operands are activations: no packing)."""
    a, b, c = op.operands
    shape = static_shape(a)
    return _gemm(op, a, b, c, batch=shape[0] if shape else None)


def _gemm(op: ir.Operation, a: ir.Value, b: ir.Value, c: ir.Value, batch: int | None) -> Recipe | None:
    """C += A x B as register-tiled generics over blocks of C: rows [m0, m0 + Mp) and columns
    [n0, n0 + Np), each with a tile that divides it (the main part, then the peeled rest)."""
    if not all(is_float32(v) and has_identity_layout(v) and static_shape(v) for v in (a, b, c)):
        return None
    shape_a, shape_b = static_shape(a), static_shape(b)
    assert shape_a is not None and shape_b is not None
    m, k = shape_a[-2:]
    n = shape_b[-1]
    if m * n * k < 4096:
        return None
    packed = constant_data(b) if batch is None else None
    mr = _pick_mr(m)
    row_blocks = [(0, m - m % mr, mr)] + ([(m - m % mr, m % mr, m % mr)] if m % mr else [])
    kernels: list[Kernel] = []
    for m0, mp, tile_m in row_blocks:
        if mp == 0:
            continue
        nr = _NR_FOR_MR[min(tile_m, 8)]
        col_blocks = column_blocks(n, nr)
        for n0, np_, tile_n in col_blocks:
            if np_ == 0:
                continue
            generic = _gemm_block(op, a, b, c, packed, batch, (m, n, k), (m0, mp, tile_m), (n0, np_, tile_n))
            kernels.append(Kernel(generic, _gemm_steps(batch, mp, np_ // tile_n, k, tile_m, tile_n)))
    op.erase()
    return Recipe(tuple(kernels))


def column_blocks(n: int, nr: int) -> list[tuple[int, int, int]]:
    """Blocks (start, size, tile) covering n columns with tiles of nr (a power of two), then of each smaller
    power of two that fits what is left. LLVM scalarizes vectors whose length is not a power of two (one of
    112 lanes ran a 400x120 layer at 5 GFLOP/s, one of 128 at 16 including the call)."""
    blocks = []
    start = 0
    tile = nr
    while start < n:
        size = (n - start) - (n - start) % tile
        if size:
            blocks.append((start, size, tile))
            start += size
        tile //= 2
    return blocks


def constant_data(value: ir.Value) -> np.ndarray | None:
    """The data of a memref that is a `memref.get_global` of a constant global with a dense f32 value."""
    owner = value.owner
    if not isinstance(owner, ir.Operation) and hasattr(owner, "operation"):
        owner = owner.operation
    if not isinstance(owner, ir.Operation) or owner.name != "memref.get_global":
        return None
    name = ir.FlatSymbolRefAttr(owner.attributes["name"]).value
    glob = _global(owner, name)
    if glob is None or "constant" not in glob.attributes or "initial_value" not in glob.attributes:
        return None
    attr = glob.attributes["initial_value"]
    if not isinstance(attr, ir.DenseFPElementsAttr):
        return None
    shape = static_shape(value)
    if attr.is_splat:
        return np.full(shape, ir.FloatAttr(attr.get_splat_value()).value, np.float32)
    return np.array(attr, dtype=np.float32).reshape(shape)


def _module_of(op: ir.Operation) -> ir.Operation:
    """The builtin.module that holds `op` (where globals live)."""
    while op.name != "builtin.module":
        op = op.parent
    return op


def _global(user: ir.Operation, name: str) -> ir.Operation | None:
    """The memref.global named `name` in `user`'s module."""
    for candidate in _module_of(user).regions[0].blocks[0].operations:
        if candidate.name == "memref.global" and ir.StringAttr(candidate.attributes["sym_name"]).value == name:
            return candidate.operation
    return None


def packed_global(user: ir.Operation, data: np.ndarray, hint: str) -> ir.Value:
    """A new private constant global holding `data` (64-byte aligned), and its get_global at the insertion
    point."""
    module = _module_of(user)
    names = {
        ir.StringAttr(o.attributes["sym_name"]).value
        for o in module.regions[0].blocks[0].operations
        if "sym_name" in o.attributes
    }
    name = hint
    while name in names:
        name += "_"
    t = ops.memref_type(data.shape, ir.F32Type.get())
    with ir.InsertionPoint.at_block_begin(module.regions[0].blocks[0]):
        memref.GlobalOp(
            sym_name=name,
            type_=t,
            sym_visibility="private",
            initial_value=ir.DenseElementsAttr.get(
                np.ascontiguousarray(data, np.float32), type=ops.tensor_type(data.shape, ir.F32Type.get())
            ),
            constant=True,
            alignment=64,
        )
    return memref.get_global(t, name)


def _gemm_block(
    op: ir.Operation,
    a: ir.Value,
    b: ir.Value,
    c: ir.Value,
    packed: np.ndarray | None,
    batch: int | None,
    mnk: tuple[int, int, int],
    rows: tuple[int, int, int],
    cols: tuple[int, int, int],
) -> ir.Operation:
    """The generic C'[.., m, nb, j] += A'[.., m, k] * B'[.., nb, k, j] (packed) or B'[.., k, nb, j] (a view of
    B) of one block of C; loop dims are ([batch,] m, nb, j, k)."""
    m, n, k = mnk
    m0, mp, _ = rows
    n0, np_, nr = cols
    nb = np_ // nr
    lead = [batch] if batch is not None else []
    a_view = _subview(a, [*[0] * len(lead), m0, 0], [*lead, mp, k])
    c_view = _split_last(_subview(c, [*[0] * len(lead), m0, n0], [*lead, mp, np_]), nr)
    d = len(lead)
    dims = d + 4
    bdim, mdim, nbdim, jdim, kdim = (0 if d else -1), d, d + 1, d + 2, d + 3
    batch_dims = [bdim] if d else []
    if packed is not None:
        block = packed[:, n0 : n0 + np_].reshape(k, nb, nr).transpose(1, 0, 2)
        b_view = packed_global(op, block, f"__glow_packed_{nb}x{k}x{nr}")
        b_map = _map(dims, [nbdim, kdim, jdim])
    else:
        b_view = _split_last(_subview(b, [*[0] * len(lead), 0, n0], [*lead, k, np_]), nr)
        b_map = _map(dims, [*batch_dims, kdim, nbdim, jdim])
    maps = [
        _map(dims, [*batch_dims, mdim, kdim]),
        b_map,
        _map(dims, [*batch_dims, mdim, nbdim, jdim]),
    ]
    generic = linalg.GenericOp(
        result_tensors=[],
        inputs=[a_view, b_view],
        outputs=[c_view],
        indexing_maps=ir.ArrayAttr.get(maps),
        iterator_types=_iterators(["parallel"] * (dims - 1) + ["reduction"]),
    )
    f32 = ir.F32Type.get()
    body = generic.regions[0].blocks.append(f32, f32, f32)
    with ir.InsertionPoint(body):
        x, y, acc = body.arguments
        linalg.YieldOp([arith.addf(acc, arith.mulf(x, y))])
    return generic.operation


def _gemm_steps(batch: int | None, mp: int, nb: int, k: int, mr: int, nr: int) -> str:
    """Cache blocks (mc rows, nc columns, kc depth; each a divisor), then the mr x nr register tile with k
    innermost, vectorized into one contraction per k step."""
    steps = Steps()
    lead = [1] if batch is not None else []
    mc = mr * largest_divisor(mp // mr, max(1, MC // mr))
    nbc = largest_divisor(nb, max(1, NC // nr))
    kc = largest_divisor(k, KC)
    outer = [*lead, mc if mc < mp else 0, nbc if nbc < nb else 0, 0, kc if kc < k else 0]
    handle = steps.tile("$op", outer)
    handle = steps.tile(handle, [*lead, mr, 1, 0, 1])
    steps.vectorize(handle)
    return steps.text()


# ----------------------------------------------------------------------------------------------------------
# Elementwise ops, broadcasts, reductions, fills and copies: vectorized in tiles of about one cache line


# Bytes one vector tile covers: four zmm registers per operand is long enough to hide the loop overhead and
# short enough that a chain of ops keeps its values in registers.
TILE_BYTES = 256
# Element types the vector code is generated for (i1 buffers are accessed as bytes by glow-to-llvm's fix-up,
# which works on scalar loads and stores only; f16 arithmetic has no native AVX-512F instructions).
_VECTOR_TYPES = ("f32", "f64", "i8", "i16", "i32", "i64")
# Body ops a vectorized generic may hold: pure scalar arithmetic (no loads, stores or linalg.index).
_VECTOR_BODY_DIALECTS = ("arith.", "math.")


def _loop_ranges(op: ir.Operation) -> list[int] | None:
    """The static trip count of each loop dim of a linalg op, read off its indexing maps and operands (fill
    and copy, which print no maps, iterate over their output)."""
    if "indexing_maps" not in op.attributes:
        return list(static_shape(op.operands[-1]) or []) or None
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    ranges: list[int | None] = [None] * maps[0].n_dims
    for value, amap in zip(op.operands, maps, strict=True):
        shape = static_shape(value) if isinstance(value.type, ir.ShapedType) else None
        if shape is None:
            return None
        for size, expr in zip(shape, amap.results, strict=True):
            if isinstance(expr, ir.AffineDimExpr):
                ranges[expr.position] = size
    return None if any(r is None for r in ranges) else [int(r) for r in ranges]  # type: ignore[arg-type]


def _vector_tile(size: int, elt_bytes: int, reduction: bool) -> tuple[int, bool] | None:
    """The vector length along the innermost loop dim of `size` iterations: the largest multiple of 8 that
    divides it within TILE_BYTES, else a masked vector (TILE_BYTES, or the size rounded up to 8 if smaller);
    None below 8 iterations. An op with reduction loops takes powers of two only (masked: the size rounded
    up to one): LLVM scalarizes its accumulating vectors of other lengths (SqueezeNet's average pool over
    1000 channels took 40-lane vectors and ran 6 times slower than over 1024); elementwise ops measured the
    same either way.

    Only the innermost dim is vectorized (outer dims tile by 1) and lengths stay multiples of 8: vectors of
    several odd-sized dims make LLVM's x86 shuffle combining fail an assertion (seen on a 1x3x4x4 bias).
    """
    budget = max(8, TILE_BYTES // elt_bytes)
    if size < 8:
        return None
    if reduction:
        length = budget
        while length > 8 and size % length:
            length //= 2
        if size % length == 0 and (length >= 16 or size <= 16):
            return length, False
        return min(budget, 1 << (size - 1).bit_length()), True
    divisor = largest_divisor(size, budget, multiple_of=8)
    if size % divisor == 0 and divisor % 8 == 0 and (divisor >= 16 or size <= 16):
        return divisor, False
    return min(budget, -(-size // 8) * 8), True


def _innermost_contiguous(op: ir.Operation) -> bool:
    """Whether every operand either walks the innermost loop dim along its own last dim or ignores it."""
    if "indexing_maps" not in op.attributes:
        return True
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    inner = maps[0].n_dims - 1
    for amap in maps:
        uses = [i for i, e in enumerate(amap.results) if isinstance(e, ir.AffineDimExpr) and e.position == inner]
        if uses and uses != [len(amap.results) - 1]:
            return False
    return True


def elementwise_recipe_steps(op: ir.Operation) -> tuple[list[int], bool, int] | None:
    """The tile sizes of the vector recipe for a linalg op on memrefs (1 along the outer loop dims, a vector
    along the innermost), whether the vector is masked, and its length; None if the recipe does not apply."""
    buffers = [v for v in op.operands if isinstance(v.type, ir.MemRefType)]
    if not buffers or any(isinstance(v.type, ir.RankedTensorType) for v in op.operands):
        return None
    types = {str(ir.MemRefType(v.type).element_type) for v in buffers}
    if not types <= set(_VECTOR_TYPES) or not _innermost_contiguous(op):
        return None
    for inner in ops.walk_ops(op):
        if not inner.name.startswith(_VECTOR_BODY_DIALECTS) and inner.name != "linalg.yield":
            return None
    ranges = _loop_ranges(op)
    if not ranges or 0 in ranges:
        return None
    widest = max(_bytes(ir.MemRefType(v.type).element_type) for v in buffers)
    reduction = "indexing_maps" in op.attributes and any(
        "reduction" in str(k) for k in ir.ArrayAttr(op.attributes["iterator_types"])
    )
    chosen = _vector_tile(ranges[-1], widest, reduction)
    if chosen is None:
        return None
    length, masked = chosen
    sizes = [*[1 if r > 1 else 0 for r in ranges[:-1]], 0 if length == ranges[-1] else length]
    return sizes, masked, length


def elementwise_recipe(op: ir.Operation) -> Recipe | None:
    """Tiles a linalg op by 1 along its outer loop dims and into vectors along the innermost one."""
    chosen = elementwise_recipe_steps(op)
    if chosen is None:
        return None
    sizes, masked, length = chosen
    steps = Steps()
    handle = steps.tile("$op", sizes)
    steps.vectorize(handle, [*[1] * (len(sizes) - 1), length] if masked else ())
    return Recipe.of(op, steps.text())


def _bytes(elt: ir.Type) -> int:
    """The size of one element in bytes (at least 1)."""
    width = ir.FloatType(elt).width if isinstance(elt, ir.FloatType) else ir.IntegerType(elt).width
    return max(1, width // 8)


@recipe("linalg.generic")
def generic_recipe(op: ir.Operation) -> Recipe | None:
    """Elementwise ops, broadcasts, batched_add, conversions, selects, reductions and fused epilogues; the
    last op of an elementwise chain (`mark_chains`) takes the whole chain into one loop nest."""
    chain = _chain_ending_at(op)
    if len(chain) > 1:
        return _chain_recipe(chain)
    return elementwise_recipe(op)


def _chainable(op: ir.Operation) -> bool:
    """An elementwise generic on memrefs that the vector recipe takes without masking: identity maps only
    (all operands of one shape), parallel loops, pure arithmetic body, whole vectors along the last dim."""
    if op.name != "linalg.generic" or any(mark in op.attributes for mark in CLAIMED_MARKS):
        return False
    if not all(isinstance(v.type, ir.MemRefType) for v in op.operands):
        return False
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    if any(m != ir.AffineMap.get_identity(m.n_dims) for m in maps):
        return False
    kinds = [str(k) for k in ir.ArrayAttr(op.attributes["iterator_types"])]
    if any("parallel" not in k for k in kinds) or elementwise_recipe_steps(op) is None:
        return False
    if list(op.regions[0].blocks[0].arguments[-1].uses):
        return False
    return not elementwise_recipe_steps(op)[1]


def _continues(previous: ir.Operation, op: ir.Operation) -> bool:
    """Whether `op` works in place on `previous`'s destination and reads it: the intermediate value is then
    dead once `op` has read it, and the two can run in one loop nest."""
    dest = previous.operands[-1]
    return op.operands[-1] == dest and any(v == dest for v in op.operands[:-1]) and op.operands[-1].type == dest.type


def mark_chains(function: ir.Operation) -> None:
    """Marks every op but the last of each run of consecutive elementwise generics in which each works in
    place on the previous one's destination (glow-ir-share-buffers makes those: ResNet's add then ReLU)."""
    previous: ir.Operation | None = None
    for op in [o.operation for o in function.regions[0].blocks[0].operations]:
        if _chainable(op) and previous is not None and _continues(previous, op):
            previous.attributes[CHAIN_MARK] = ir.UnitAttr.get()
        previous = op if _chainable(op) else None


def _chain_ending_at(op: ir.Operation) -> list[ir.Operation]:
    """The marked ops right before `op` in its block, then `op`: the chain that `op` ends."""
    siblings = [o.operation for o in op.block.operations]
    i = next(j for j, o in enumerate(siblings) if o == op)
    start = i
    while start > 0 and CHAIN_MARK in siblings[start - 1].attributes:
        start -= 1
    return siblings[start : i + 1]


def _chain_recipe(chain: list[ir.Operation]) -> Recipe:
    """The chain on tensors, each op reading the previous one's result instead of the shared destination,
    tiled as its last op with the others fused into the tile: one pass over memory instead of one per op."""
    dest = chain[0].operands[-1]
    sizes = elementwise_recipe_steps(chain[-1])[0]
    with chain[-1].location, ir.InsertionPoint(chain[-1]):
        sources: list[ir.Value] = []
        for value in (v for op in chain for v in op.operands[:-1]):
            if value != dest and not any(value == known for known in sources):
                sources.append(value)
        *source_tensors, result = on_tensors([*sources, dest], [False] * len(sources) + [True])
        for op in chain:
            # Destination passing: each op works in place on the value before it (dest's own for the first),
            # reading dest's elements through its output element, so the chain bufferizes in dest itself.
            reads_dest = [i for i, v in enumerate(op.operands[:-1]) if v == dest]
            inputs = [source_tensors[_index_of(sources, v)] for v in op.operands[:-1] if v != dest]
            result = generic_on_tensors(op, inputs, result, through_output=reads_dest)
        write_back(result, dest)
    for op in reversed(chain):
        op.erase()
    steps = Steps()
    fused = steps.fuse("$op", sizes)
    function = steps.function_of(fused)
    steps.canonicalize(function)
    steps.vectorize(steps.match(function, "linalg.generic"))
    # Forwards each op's vector to the next op on tensors, before bufferization stores and reloads it.
    steps.canonicalize(function)
    return Recipe.of(result.owner.operation, steps.text())


def _index_of(values: list[ir.Value], value: ir.Value) -> int:
    return next(i for i, known in enumerate(values) if known == value)


def generic_on_tensors(
    op: ir.Operation, inputs: list[ir.Value], init: ir.Value, through_output: Sequence[int] = ()
) -> ir.Value:
    """Memref linalg.generic `op` (inputs..., output) on tensors `inputs` and `init`: its maps, iterators and
    a copy of its body; returns its result. The inputs at positions `through_output` (which must read the
    output buffer with the output's map) are dropped and read through the output element instead."""
    maps = list(ir.ArrayAttr(op.attributes["indexing_maps"]))
    kept_maps = [m for i, m in enumerate(maps) if i not in through_output]
    generic = linalg.GenericOp(
        result_tensors=[init.type],
        inputs=inputs,
        outputs=[init],
        indexing_maps=ir.ArrayAttr.get(kept_maps),
        iterator_types=op.attributes["iterator_types"],
    )
    copy = op.clone()
    block = copy.regions[0].blocks[0]
    for i in sorted(through_output, reverse=True):
        block.arguments[i].replace_all_uses_with(block.arguments[len(block.arguments) - 1])
        block.erase_argument(i)
    block.append_to(generic.regions[0])
    copy.erase()
    return generic.result


@recipe("linalg.fill")
def fill_recipe(op: ir.Operation) -> Recipe | None:
    """splat, and the zero/identity fills ahead of matmuls and reductions."""
    return elementwise_recipe(op)


@recipe("linalg.copy")
def copy_recipe(op: ir.Operation) -> Recipe | None:
    """copy, insert_tensor and extract_tensor (copies between blocks of buffers)."""
    return elementwise_recipe(op)
