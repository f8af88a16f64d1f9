"""The recipe contract of glow-cpu-schedule, its registry, and the helpers recipe modules share.

A recipe module (matmul_recipes.py, elementwise_recipes.py, conv_recipes.py beside this one) registers
its recipes here; the pass (schedule.py) imports every recipe module and applies what they decide:

- A recipe is a function registered for one payload op name with `@recipe("linalg.matmul")`. The pass calls
  it once for every op of that name, in program order, as `fn(op) -> Recipe | None`. `None` leaves the op as
  it is: glow-to-llvm lowers it to loops, which is always correct.
- A recipe may rewrite the payload before it answers (the matmul recipe packs constant weights and replaces
  the matmul by generics over the packed layout), with the insertion point and location of its choice. It
  must leave the function valid and must not touch ops other than its own and the ones it creates.
- A `Recipe` is a list of `Kernel(op, build)`. The pass matches each kernel's op in one transform named
  sequence and calls `build(handle)` there, with the op's handle and the insertion point inside the
  sequence; `build` adds the kernel's transform ops with the step builders of transform.py.
- A kernel may also carry `finish(function)`, which the pass calls on the kernel's outlined function after the
  named sequence has run, for what transform ops cannot make (the matmul's prefetches of its packed weights).
- All kernels' steps run first, in program order. Then, if the function holds any
  `bufferization.to_tensor` (a kernel emitted on tensors, because some transforms, e.g. `decompose` of
  convolutions, work on tensors only: see `on_tensors`), `one_shot_bufferize` runs once. Then comes the
  shared vector tail of docs/notes (transform.vector_tail), which is why recipe steps stop at `vectorize`.
- Kernels emitted on tensors: `on_tensors(inputs, output)` wraps memref operands as tensors and
  `write_back(result, output)` stores a tensor result into its memref in place (both `restrict`, so
  bufferization reuses the buffers and allocates nothing).

The shared helpers: views of operands on tensors, shapes and divisors, constant weights read and packed into
new globals, and the vector recipe of any linalg op on memrefs (`elementwise_recipe`), which the elementwise
recipes and a convolution's unfused bias and activation use.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Container, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import arith, bufferization, linalg, memref

from glow_mlir import ops
from glow_mlir.backends.cpu import transform as steps
from glow_mlir.backends.cpu.lowerings import CONV_ACTIVATION_ATTR, CONV_BIAS_ATTR
from glow_mlir.codegen.builders import has_identity_layout, row_major_strides

# Marks the ops of an elementwise chain that the chain's last op schedules (elementwise_recipes.mark_chains).
CHAIN_MARK = "glow.chained"
# Marks the fill that starts a pool, which the pool's recipe schedules (conv_recipes.mark_pool_starts).
POOL_START_MARK = "glow.pool_start"
# Marks of ops that the recipe of another op schedules (lowerings.py sets the conv ones).
CLAIMED_MARKS = (CONV_BIAS_ATTR, CONV_ACTIVATION_ATTR, CHAIN_MARK, POOL_START_MARK)


@dataclass(frozen=True)
class Kernel:
    """One payload op, the builder of the transform steps that schedule it (called on its handle), and what is
    left to do to its outlined function once scheduled (`finish`, if any)."""

    op: ir.Operation
    build: steps.Build
    finish: Callable[[ir.Operation], None] | None = None


@dataclass(frozen=True)
class Recipe:
    """What a recipe decided: the kernels (payload ops and their steps) that replace or schedule its op."""

    kernels: tuple[Kernel, ...]

    @staticmethod
    def of(op: ir.Operation, build: steps.Build) -> Recipe:
        """A recipe of one kernel."""
        return Recipe((Kernel(op, build),))


RecipeFn = Callable[[ir.Operation], Recipe | None]
_RECIPES: dict[str, RecipeFn] = {}
# Recipes for the ops of one name that a predicate picks (the bf16 products: bf16_recipes.py), by op name.
_GUARDED: dict[str, list[tuple[Callable[[ir.Operation], bool], RecipeFn]]] = {}


def recipe(op_name: str, when: Callable[[ir.Operation], bool] | None = None) -> Callable[[RecipeFn], RecipeFn]:
    """Registers `fn` as the recipe of payload ops named `op_name` (one recipe per name), or, given `when`, of
    those `when` accepts, which it then takes instead of the name's recipe (kernels for other element types)."""

    def wrap(fn: RecipeFn) -> RecipeFn:
        if when is not None:
            _GUARDED.setdefault(op_name, []).append((when, fn))
            return fn
        if op_name in _RECIPES:
            raise ValueError(f"a recipe for '{op_name}' is registered twice")
        _RECIPES[op_name] = fn
        return fn

    return wrap


def recipes() -> dict[str, RecipeFn]:
    """Every registered recipe, by payload op name (those of the recipe modules imported so far)."""
    return {name: _dispatch(name) for name in _RECIPES | _GUARDED}


def _dispatch(op_name: str) -> RecipeFn:
    """The recipe of an `op_name` op: the first guarded recipe that accepts it, else the name's own."""
    guarded, general = _GUARDED.get(op_name, []), _RECIPES.get(op_name)
    if not guarded and general is not None:
        return general

    def fn(op: ir.Operation) -> Recipe | None:
        chosen = next((f for when, f in guarded if when(op)), general)
        return chosen(op) if chosen is not None else None

    return fn


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


# ----------------------------------------------------------------------------------------------------------
# Shapes and divisors


def static_shape(value: ir.Value) -> tuple[int, ...] | None:
    """The shape of a memref or tensor with only static dims, else None."""
    t = ir.ShapedType(value.type)
    if not t.has_static_shape:
        return None
    return tuple(t.shape)


def is_float32(value: ir.Value) -> bool:
    """Whether a memref or tensor holds f32, the element type the register-tiled kernels are written for."""
    return ir.ShapedType(value.type).element_type == ir.F32Type.get()


def static_block(base: ir.Value, offsets: Sequence[int], sizes: Sequence[int]) -> ir.Value:
    """The block of memref `base` at static `offsets` (a subview, which fold_memref_alias_ops folds into the
    accesses so that hoisting sees the base buffer); `base` itself for the whole buffer."""
    if list(sizes) == list(static_shape(base) or []):
        return base
    return block_at(base, offsets, sizes)


def collapse_dims(value: ir.Value, groups: Sequence[Sequence[int]]) -> ir.Value:
    """Memref `value` with each run of consecutive dims in `groups` as one (`memref.collapse_shape`: each run must
    be contiguous in memory); the result's strides are each run's innermost, its layout the identity where
    `value`'s is."""
    t = ir.MemRefType(value.type)
    strides, offset = t.get_strides_and_offset()
    sizes = [int(np.prod([t.shape[d] for d in g])) for g in groups]
    layout = None if has_identity_layout(value) else ir.StridedLayoutAttr.get(offset, [strides[g[-1]] for g in groups])
    reassociation = ir.ArrayAttr.get([ir.ArrayAttr.get([ops.i64(d) for d in g]) for g in groups])
    return memref.collapse_shape(ir.MemRefType.get(sizes, t.element_type, layout=layout), value, reassociation)


def block_at(
    base: ir.Value, offsets: Sequence[int | ir.Value], sizes: Sequence[int], drop_first: bool = False
) -> ir.Value:
    """The block of `base` (static strides) at `offsets` (ints or index values), without its first (unit)
    dim if `drop_first`; its offset is static where `base`'s and all of `offsets` are."""
    strides, base_offset = ir.MemRefType(base.type).get_strides_and_offset()
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    static_offsets = [o if isinstance(o, int) else dynamic for o in offsets]
    values = [o for o in offsets if not isinstance(o, int)]
    kept = slice(1, None) if drop_first else slice(None)
    offset = dynamic
    if not values and base_offset != dynamic:
        offset = base_offset + sum(o * stride for o, stride in zip(static_offsets, strides, strict=True))
    layout = ir.StridedLayoutAttr.get(offset, strides[kept])
    element = ir.MemRefType(base.type).element_type
    result = ir.MemRefType.get(list(sizes)[kept], element, layout=layout)
    ones = ops.i64_array([1] * len(strides))
    offsets = ops.i64_array(static_offsets)
    return memref.SubViewOp(result, base, values, [], [], offsets, ops.i64_array(sizes), ones).result


def largest_divisor(n: int, at_most: int, multiple_of: int = 1) -> int:
    """The largest d <= at_most that divides n and is a multiple of `multiple_of` (n itself if it fits)."""
    for d in range(min(n, at_most), 0, -1):
        if n % d == 0 and d % multiple_of == 0:
            return d
    return multiple_of if n % multiple_of == 0 else 1


# ----------------------------------------------------------------------------------------------------------
# Constant weights, read at compile time and packed into new globals


def constant_data(value: ir.Value) -> np.ndarray | None:
    """The data of a memref that is a `memref.get_global` of a constant global with a dense float value, in
    the global's element type (ml_dtypes' bfloat16 for bf16): a read-only view of the attribute where numpy
    reads the type, since packing copies it anyway."""
    owner = value.owner
    if not isinstance(owner, ir.Operation) and hasattr(owner, "operation"):
        owner = owner.operation
    if isinstance(owner, ir.Operation) and owner.name == "memref.reinterpret_cast" and _reshapes(owner):
        # builders.reshape: the global's bytes in another shape (a depthwise filter [KH, KW, 1, C] as [KH, KW, C]).
        data = constant_data(owner.operands[0])
        return None if data is None else data.reshape(static_shape(value))
    attr = _initial_value(value)
    if not isinstance(attr, ir.DenseFPElementsAttr):
        return None
    shape = static_shape(value)
    if attr.is_splat:
        dtype = ops.numpy_dtype(ir.ShapedType(attr.type).element_type)
        return np.full(shape, ir.FloatAttr(attr.get_splat_value()).value, np.float32).astype(dtype)
    return ops.dense_array(attr, copy=False).reshape(shape)


def constant_ints(value: ir.Value) -> np.ndarray | None:
    """The values of a memref that is a `memref.get_global` of a constant global with a dense integer value."""
    attr = _initial_value(value)
    if not isinstance(attr, ir.DenseIntElementsAttr):
        return None
    shape = static_shape(value)
    if attr.is_splat:
        return np.full(shape, ir.IntegerAttr(attr.get_splat_value()).value, np.int64)
    return ops.dense_array(attr, copy=False).reshape(shape)


def _initial_value(value: ir.Value) -> ir.Attribute | None:
    """The value of the constant global that `value` is a memref.get_global of, if it is one."""
    owner = value.owner
    if not isinstance(owner, ir.Operation) and hasattr(owner, "operation"):
        owner = owner.operation
    if not isinstance(owner, ir.Operation) or owner.name != "memref.get_global":
        return None
    glob = _global(owner, ir.FlatSymbolRefAttr(owner.attributes["name"]).value)
    if glob is None or "constant" not in glob.attributes or "initial_value" not in glob.attributes:
        return None
    return glob.attributes["initial_value"]


def _reshapes(cast: ir.Operation) -> bool:
    """Whether a memref.reinterpret_cast views all of its row-major source's bytes, row-major, from offset 0."""
    source, result = cast.operands[0], ir.MemRefType(cast.results[0].type)
    strides, offset = result.get_strides_and_offset()
    return (
        has_identity_layout(source)
        and result.has_static_shape
        and (list(strides), offset) == (row_major_strides(result.shape), 0)
        and math.prod(static_shape(source)) == math.prod(result.shape)
    )


def _module_of(op: ir.Operation) -> ir.Operation:
    """The builtin.module that holds `op` (where globals live)."""
    while op.name != "builtin.module":
        op = op.parent
    return op


def _global(user: ir.Operation, name: str) -> ir.Operation | None:
    """The memref.global named `name` in `user`'s module (from its symbol table under `scheduling`)."""
    table = _SYMBOLS.get()
    if table is not None:
        return table[name].operation if name in table else None
    for candidate in _module_of(user).regions[0].blocks[0].operations:
        if candidate.name == "memref.global" and ir.StringAttr(candidate.attributes["sym_name"]).value == name:
            return candidate.operation
    return None


# The names of the globals the recipes add (packed copies of weights) start with this; the model's own do not.
PACKED_PREFIX = "__glow_"


# The bytes of the model's weights, and the symbol table, of the module that glow-cpu-schedule is scheduling
# (`scheduling`).
_WEIGHT_BYTES: ContextVar[int | None] = ContextVar("glow_model_weight_bytes", default=None)
_SYMBOLS: ContextVar[ir.SymbolTable | None] = ContextVar("glow_module_symbols", default=None)


@contextmanager
def scheduling(module: ir.Operation) -> Iterator[None]:
    """While glow-cpu-schedule runs the recipes of `module`: its weights, counted once, are what
    `model_weight_bytes` answers, and its symbol table, built once, finds a weight's global (`constant_data`)
    and names a packed one (`packed_global`). Counting the weights for every constant-B matmul and large filter,
    or scanning the module's ops for every global looked up or added, walked the module once per kernel, which
    grows with the square of the model's size (MobileNetV5-300M: 0.45 s of scans)."""
    tokens = _WEIGHT_BYTES.set(_count_weight_bytes(module)), _SYMBOLS.set(ir.SymbolTable(module))
    try:
        yield
    finally:
        _WEIGHT_BYTES.reset(tokens[0])
        _SYMBOLS.reset(tokens[1])


def model_weight_bytes(user: ir.Operation) -> int:
    """The bytes of the model's constant globals in `user`'s module (its weights, not their packed copies, so
    the figure stays the same while recipes pack): counted once per module under `scheduling`, else now."""
    counted = _WEIGHT_BYTES.get()
    return counted if counted is not None else _count_weight_bytes(_module_of(user))


def _count_weight_bytes(module: ir.Operation) -> int:
    """The bytes of the constant globals of `module` whose names do not start with PACKED_PREFIX."""
    total = 0
    for glob in module.regions[0].blocks[0].operations:
        if glob.name != "memref.global" or "constant" not in glob.attributes:
            continue
        if ir.StringAttr(glob.attributes["sym_name"]).value.startswith(PACKED_PREFIX):
            continue
        t = ir.MemRefType(ir.TypeAttr(glob.attributes["type"]).value)
        if isinstance(t.element_type, ir.FloatType | ir.IntegerType):
            total += int(np.prod(t.shape)) * _bytes(t.element_type)
    return total


# The L2 of this Xeon: 2 MiB per core. Weights beyond it come from L3 or memory on every run.
L2_BYTES = 2 * 1024 * 1024
# Weights that stream from memory are read by the kernels in order, but the hardware prefetchers stop at each
# 4 KiB page, so a kernel waits on memory at each page (`prefetch_ahead`). Each load of them also prefetches
# the data this far on, into L2 (prefetcht1: into L1 it would evict the block in use): one matmul L1 block
# of B. MLP-Mixer (zoo, matmuls) ran 16.6 -> 12.5 ms (8 KiB ahead 12.3, 64 KiB ahead 11.7; into L1 13.4 from
# 18.2), ViT-tiny, Swin-tiny and LeViT-128s 11-14 % faster.
PREFETCH_AHEAD_BYTES = 32 * 1024
PREFETCH_LOCALITY = 2
# Floats per cache line: one prefetch per line of a packed row.
_LINE_FLOATS = 16


def prefetch_ahead(packed: ir.Type, distance: int = PREFETCH_AHEAD_BYTES) -> Callable[[ir.Operation], None]:
    """The finish of a kernel reading packed weights of type `packed` (its function's argument): before each
    vector load of them, a prefetch of every line that load reads, `distance` bytes further on in the buffer
    (the last element at most: a prefetch past the end would index out of bounds)."""
    shape = list(ir.MemRefType(packed).shape)
    total = int(np.prod(shape))
    ahead = distance // 4
    # A contiguous view of a larger buffer (a convolution's channel tile of its packed filter) collapses to one
    # with its offset: the prefetches stay inside the view.
    strided = isinstance(ir.MemRefType(packed).layout, ir.StridedLayoutAttr)
    layout = ir.StridedLayoutAttr.get(ir.ShapedType.get_dynamic_stride_or_offset(), [1]) if strided else None

    def finish(function: ir.Operation) -> None:
        entry = function.regions[0].blocks[0]
        loads = [
            op
            for op in ops.walk_ops(function)
            if op.name == "vector.load"
            and op.operands[0].type == packed
            and isinstance(op.operands[0], ir.BlockArgument)
        ]
        flat: dict[int, ir.Value] = {}
        for load in loads:
            buffer = ir.BlockArgument(load.operands[0])
            with load.location:
                if buffer.arg_number not in flat:
                    with ir.InsertionPoint.at_block_begin(entry):
                        everything = ir.ArrayAttr.get([ir.ArrayAttr.get([ops.i64(d) for d in range(len(shape))])])
                        view = ir.MemRefType.get([total], ir.MemRefType(packed).element_type, layout=layout)
                        flat[buffer.arg_number] = memref.CollapseShapeOp(view, buffer, everything).result
                with ir.InsertionPoint(load):
                    first, *rest = load.operands[1:]
                    linear = first
                    for index, size in zip(rest, shape[1:], strict=True):
                        linear = arith.addi(arith.muli(linear, index_constant(size)), index)
                    for line in range(0, shape[-1], _LINE_FLOATS):
                        at = arith.minui(arith.addi(linear, index_constant(ahead + line)), index_constant(total - 1))
                        memref.PrefetchOp(flat[buffer.arg_number], [at], False, PREFETCH_LOCALITY, True)

    return finish


def index_constant(value: int) -> ir.Value:
    """An index constant at the insertion point."""
    return arith.constant(ir.IndexType.get(), value)


def packed_global(user: ir.Operation, data: np.ndarray, hint: str, constant: bool = True) -> ir.Value:
    """A new private global holding `data` (64-byte aligned; f32, bf16 for ml_dtypes' bfloat16, or int32), and
    its get_global at the insertion point; `hint`, its name, starts with PACKED_PREFIX. `constant=False` keeps
    its values from LLVM (a table whose constant values LLVM would fold into the code)."""
    assert hint.startswith(PACKED_PREFIX), hint
    module = _module_of(user)
    table = _SYMBOLS.get()
    taken: Container[str] = table if table is not None else {
        ir.StringAttr(o.attributes["sym_name"]).value
        for o in module.regions[0].blocks[0].operations
        if "sym_name" in o.attributes
    }
    name = hint
    while name in taken:
        name += "_"
    kept = data.dtype in (ops.MLIR_TO_NUMPY["bf16"], np.dtype(np.int32))
    elt = ops.mlir_type(data.dtype if kept else np.float32)
    t = ops.memref_type(data.shape, elt)
    with ir.InsertionPoint.at_block_begin(module.regions[0].blocks[0]):
        glob = memref.GlobalOp(
            sym_name=name,
            type_=t,
            sym_visibility="private",
            # One copy into row-major order: astype keeps a packing view's strides, which dense_attr copied again.
            initial_value=ops.dense_attr(
                np.ascontiguousarray(data, ops.numpy_dtype(elt)), ops.tensor_type(data.shape, elt)
            ),
            constant=constant,
            alignment=64,
        )
    if table is not None:
        table.insert(glob.operation)
    return memref.get_global(t, name)


# ----------------------------------------------------------------------------------------------------------
# The vector recipe of elementwise ops, broadcasts, reductions, fills and copies: tiles of about one cache line


# Bytes one vector tile covers: four zmm registers per operand is long enough to hide the loop overhead and
# short enough that a chain of ops keeps its values in registers.
TILE_BYTES = 256
# Element types the vector code is generated for (i1 buffers are accessed as bytes by glow-to-llvm's fix-up,
# which works on scalar loads and stores only; f16 arithmetic has no native AVX-512F instructions).
VECTOR_TYPES = ("f32", "f64", "i8", "i16", "i32", "i64")
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


def vector_budget(elt_bytes: int) -> int:
    """The longest vector the elementwise recipe gives an op along its innermost dim: TILE_BYTES of elements of
    `elt_bytes`, at least 8."""
    return max(8, TILE_BYTES // elt_bytes)


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
    budget = vector_budget(elt_bytes)
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
    if not types <= set(VECTOR_TYPES) or not _innermost_contiguous(op):
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
    vector_sizes = [*[1] * (len(sizes) - 1), length] if masked else []

    def build(handle: ir.Value) -> None:
        steps.vectorize(steps.tile(handle, sizes), vector_sizes)

    return Recipe.of(op, build)


def _bytes(elt: ir.Type) -> int:
    """The size of one element in bytes (at least 1)."""
    width = ir.FloatType(elt).width if isinstance(elt, ir.FloatType) else ir.IntegerType(elt).width
    return max(1, width // 8)
