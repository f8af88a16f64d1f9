"""glow-cpu-parallelize: splits the outer parallel tile loops of the scheduled kernels across threads.

It runs between glow-cpu-schedule and glow-to-llvm, only for a model compiled for more than one thread
(`compile(threads=N)`, `SessionOptions.intra_op_num_threads`); with one thread the pipeline is today's,
unchanged. In every function (the model's, and each outlined kernel, outline.py) it takes each top-level
`scf.for` nest whose head is parallel and whose work passes the cost rule (`MIN_WORK_PER_THREAD`), turns the
perfectly nested parallel loops at its head (up to MAX_COLLAPSE) into one `scf.parallel`, and lets MLIR's
`convert-scf-to-openmp` make that an `omp.parallel` + `omp.wsloop` (collapsed, static schedule) with
`num_threads(N)`. glow-to-llvm lowers the OpenMP ops (`convert-openmp-to-llvm`); the code then calls the
LLVM/Intel OpenMP runtime (`__kmpc_fork_call`, `__kmpc_for_static_init`), libiomp5 from the `intel-openmp`
wheel, whose worker threads persist between regions (no thread is created per run). docs/THREADS.md says why
this mechanism.

A loop in the model's function that calls a kernel once per channel tile (the convolution recipes' tile loop)
is a candidate too: it forks once where the kernel would fork once per call. It wins over the kernel's own
loops unless those split more evenly across the threads (`_balance`); the kernel then stays serial.

Which loops are parallel is read off the scheduled code, not the recipes: a loop is parallel when it carries
no value (no iter_args) and every buffer it writes is written at an address that depends on its induction
variable, through index arithmetic, views or the start of an inner loop, and every read of a buffer it
writes does too. The recipes tile with `tile_using_for`, and a tiled linalg op's output map is a projected
permutation: the loops of its parallel dims write disjoint output tiles, while a reduction loop (the K of a
matmul, a window's taps) writes the same accumulator tile on every iteration, so it fails the test and stays
serial. Each reduction thus runs whole on one thread in the schedule's order: outputs are bitwise identical
for every thread count. A call writes the arguments its function writes. Anything the test does not follow
(an op with a buffer operand not known to read, write or view it, an alloca in the loop) keeps the loop
serial.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.metadata
import math
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from mlir import ir
from mlir.dialects import scf
from mlir.passmanager import PassManager

from glow_mlir import ops
from glow_mlir.errors import PipelineError, UnsupportedError
from glow_mlir.passes.registry import register

PASS_NAME = "glow-cpu-parallelize"
# The pass runs right after this pipeline element, on the scheduled, outlined kernels.
SCHEDULE_STAGE = "glow-cpu-schedule"
RUNTIME_NAME = "libiomp5.so"

# The cost rule: a loop nest runs on N threads only when it does at least N x MIN_WORK_PER_THREAD element
# operations (every op but constants and terminators counts the elements of its vector result, or of the
# vector it stores, else 1; loops multiply by their trip counts; a call counts its function's work). A fork
# and join costs microseconds, so small kernels (pads, small adds and pools) stay serial. At 2 threads, 2^15
# per thread beat 2^17 on every CNN of bench/threads.py (docs/THREADS.md: MobileNetV2 5.23 -> 4.30 ms,
# ResNet-50 34.3 -> 33.7 ms); it does not keep BERT's small matmuls serial, which do not gain (docs/THREADS.md).
MIN_WORK_PER_THREAD = 1 << 15
# At most this many perfectly nested parallel loops are collapsed into one parallel loop.
MAX_COLLAPSE = 3
# The trip count assumed for a loop whose bounds are not constants (only for the cost estimate).
UNKNOWN_TRIPS = 8

# Ops that read a buffer and never write it: their memref operand is operand `READS[name]`, indices follow.
READS = {"vector.load": 0, "vector.transfer_read": 0, "memref.load": 0, "vector.maskedload": 0, "vector.gather": 0}
# Ops that write a buffer: their memref operand is operand `WRITES[name]`.
WRITES = {"vector.store": 1, "vector.transfer_write": 1, "memref.store": 1, "vector.maskedstore": 0,
          "vector.scatter": 0, "vector.compressstore": 0}  # fmt: skip
# Ops that make a view of a buffer (operand 0) without touching its memory.
VIEWS = frozenset({"memref.subview", "memref.cast", "memref.reinterpret_cast", "memref.expand_shape",
                   "memref.collapse_shape", "memref.view", "memref.extract_strided_metadata"})  # fmt: skip


@register(PASS_NAME, options=("threads",))
def parallelize(module: ir.Module, threads: str = "1") -> None:
    """Run the outer parallel tile loops of each large enough kernel on `threads` threads (OpenMP).

    Option `threads` (default 1: the pass does nothing) is the number of threads each parallel loop is split
    across (`omp.parallel num_threads`).
    """
    count = int(threads)
    if count < 1:
        raise PipelineError(f"{PASS_NAME}: threads={threads}: must be at least 1")
    if count == 1:
        return
    with module.context:
        callees = _Callees(module)
        # Every nest worth splitting, per function, decided on the untouched module.
        plans: dict[str, list[tuple[list[ir.Operation], int]]] = {}
        for name, func in callees.functions.items():
            found = [_plan(op.operation, callees, count) for op in func.regions[0].blocks[0].operations]
            plans[name] = [plan for plan in found if plan is not None]
        # A loop around kernel calls (a convolution's channel tiles, in the model's function) forks once for
        # all its calls, where each kernel would fork once per call: it wins unless a kernel's own loops split
        # more evenly across the threads. The kernels it calls then run whole on one thread each.
        inside: set[str] = set()
        for name, nests in plans.items():
            kept = []
            for nest, trips in nests:
                called = {ir.FlatSymbolRefAttr(op.attributes["callee"]).value
                          for op in ops.walk_ops(nest[0]) if op.name == "func.call"}  # fmt: skip
                inner = [t for callee in called for _, t in plans.get(callee, [])]
                if any(_balance(t, count) > _balance(trips, count) for t in inner):
                    continue
                inside |= called
                kept.append((nest, trips))
            plans[name] = kept
        changed = False
        for name, nests in plans.items():
            if name in inside:
                continue
            for nest, _ in nests:
                _to_parallel(nest)
                changed = True
    if changed:
        pm = PassManager.parse(f"builtin.module(convert-scf-to-openmp{{num-threads={count}}})", module.context)
        try:
            pm.run(module.operation)
        except ir.MLIRError as e:
            notes = "; ".join(f"{d.location}: {d.message}" for d in e.error_diagnostics)
            raise PipelineError(f"{PASS_NAME} failed: {notes or e}") from None
        _drop_alloca_scopes(module)


def _balance(trips: int, threads: int) -> float:
    """The share of `threads` kept busy by a loop of `trips` equal iterations split in static blocks."""
    return trips / (threads * math.ceil(trips / threads))


class _Callees:
    """The functions of a module with a body, and what a call of each does: its work and the arguments it
    writes, read from its body once."""

    def __init__(self, module: ir.Module) -> None:
        self.functions = {
            ir.StringAttr(f.attributes["sym_name"]).value: f for f in ops.functions(module) if f.regions[0].blocks
        }
        self._work: dict[str, int] = {}
        self._written: dict[str, frozenset[int] | None] = {}

    def work(self, name: str) -> int:
        if name not in self._work:
            func = self.functions.get(name)
            self._work[name] = 1 if func is None else _work(func.regions[0].blocks[0].operations, self)
        return self._work[name]

    def written(self, name: str) -> frozenset[int] | None:
        """The indices of the arguments function `name` writes; None when that is not known (a function with
        no body here, or a body with an op whose effects on its buffers `_is_parallel` does not follow)."""
        if name not in self._written:
            self._written[name] = self._find_written(name)
        return self._written[name]

    def _find_written(self, name: str) -> frozenset[int] | None:
        func = self.functions.get(name)
        if func is None:
            return None
        arguments = list(func.regions[0].blocks[0].arguments)
        found: set[int] = set()
        for op in ops.walk_ops(func):
            if op.name in WRITES:
                root, _ = _root(op.operands[WRITES[op.name]])
                found |= {i for i, a in enumerate(arguments) if a == root}
            elif op.name not in READS and op.name not in VIEWS and _has_buffer_operand(op):
                return None
        return frozenset(found)


def _has_buffer_operand(op: ir.Operation) -> bool:
    return any(isinstance(v.type, ir.MemRefType | ir.UnrankedMemRefType) for v in op.operands)


def _plan(loop: ir.Operation, callees: _Callees, threads: int) -> tuple[list[ir.Operation], int] | None:
    """The parallel head of the nest rooted at `loop` (up to MAX_COLLAPSE perfectly nested parallel loops) and
    its trip count, if it has at least two iterations and passes the cost rule (MIN_WORK_PER_THREAD) for
    `threads`; None otherwise."""
    if loop.name != "scf.for":
        return None
    nest: list[ir.Operation] = []
    current: ir.Operation | None = loop
    while current is not None and len(nest) < MAX_COLLAPSE and _is_parallel(current, nest, callees):
        nest.append(current)
        current = _only_inner_loop(current)
    if not nest:
        return None
    trips = math.prod(_trips(l) for l in nest)
    if trips < 2 or trips * _work(_body(nest[-1]).operations, callees) < threads * MIN_WORK_PER_THREAD:
        return None
    return nest, trips


def _body(loop: ir.Operation) -> ir.Block:
    return loop.regions[0].blocks[0]


def _only_inner_loop(loop: ir.Operation) -> ir.Operation | None:
    """The scf.for that is all of `loop`'s body (besides its yield): the next loop of a perfect nest."""
    body = list(_body(loop).operations)
    if len(body) == 2 and body[0].operation.name == "scf.for":
        return body[0].operation
    return None


def _is_parallel(loop: ir.Operation, outer: list[ir.Operation], callees: _Callees) -> bool:
    """Whether the iterations of `loop` are independent (the module docstring says how this is decided);
    `outer` are the loops around it that are already taken, whose bounds it must not depend on."""
    if len(loop.results) or len(_body(loop).arguments) != 1:
        return False
    if any(_inside_any(v, outer) for v in list(loop.operands)[:3]):
        return False  # not rectangular: its bounds move with an outer loop
    iv = _body(loop).arguments[0]
    memo: dict[ir.Value, bool] = {}
    written: set[Root] = set()
    accesses: list[tuple[ir.Value, list[ir.Value], bool]] = []
    for op in ops.walk_ops(loop):
        name = op.name
        if name in WRITES or name in READS:
            index = WRITES[name] if name in WRITES else READS[name]
            buffer = op.operands[index]
            accesses.append((buffer, list(op.operands), name in WRITES))
        elif name == "func.call":
            # A call writes the arguments its function writes, and may read the others.
            written_arguments = callees.written(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
            if written_arguments is None:
                return False
            for i, value in enumerate(op.operands):
                if isinstance(value.type, ir.MemRefType):
                    accesses.append((value, [], i in written_arguments))
        elif name in VIEWS:
            continue
        elif name in ("memref.alloca", "memref.alloc"):
            return False  # the OpenMP body would lose the alloca scope that frees it per iteration
        elif _has_buffer_operand(op):
            return False  # a copy, a linalg op, an unknown op: effects this test does not follow
    for buffer, operands, writes in accesses:
        root = _root(buffer)
        depends = any(_depends(v, iv, loop, memo) for v in [buffer, *operands])
        if writes:
            if not depends:
                return False
            written.add(root)
    # A buffer that is written must only be read where the same iteration writes it.
    for buffer, operands, writes in accesses:
        root = _root(buffer)
        if not writes and root in written and not any(_depends(v, iv, loop, memo) for v in [buffer, *operands]):
            return False
    return True


Root = tuple[ir.Value, int | None]


def _root(buffer: ir.Value) -> Root:
    """The buffer that `buffer` is a view of, as (underlying buffer, byte offset). An activation is a
    `memref.view` of the arena at a constant byte offset, and glow-allocate gives buffers that live at once
    disjoint bytes: views at distinct constant offsets are distinct buffers (None: not an arena view)."""
    while not isinstance(buffer.owner, ir.Block) and buffer.owner.operation.name in VIEWS:
        op = buffer.owner.operation
        if op.name == "memref.view":
            offset = _constant(op.operands[1])
            if offset is not None:
                return _root(op.operands[0])[0], offset
        buffer = op.operands[0]
    return buffer, None


def _inside(value: ir.Value, loop: ir.Operation) -> bool:
    """Whether `value` is defined in `loop`'s body: its induction variable, or a result or block argument of
    an op nested in it."""
    owner = value.owner
    op = owner.owner if isinstance(owner, ir.Block) else owner.operation.parent
    while op is not None:
        if op.operation == loop.operation:
            return True
        op = op.parent
    return False


def _inside_any(value: ir.Value, loops: Iterable[ir.Operation]) -> bool:
    return any(_inside(value, l) for l in loops)


def _depends(value: ir.Value, iv: ir.Value, loop: ir.Operation, memo: dict[ir.Value, bool]) -> bool:
    """Whether `value` is computed from `iv`: through the operands of ops in `loop`, or as the induction
    variable of an inner loop whose start does (the start only: a tile's point loop begins at its tile)."""
    if value == iv:
        return True
    if value in memo:
        return memo[value]
    memo[value] = False
    result = False
    if _inside(value, loop):
        owner = value.owner
        if isinstance(owner, ir.Block):
            parent = owner.owner.operation
            if parent.name == "scf.for" and value == owner.arguments[0]:
                result = _depends(parent.operands[0], iv, loop, memo)
        elif not owner.operation.regions:
            result = any(_depends(v, iv, loop, memo) for v in owner.operation.operands)
    memo[value] = result
    return result


def _constant(value: ir.Value) -> int | None:
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "arith.constant":
        return None
    attr = owner.operation.attributes["value"]
    return ir.IntegerAttr(attr).value if isinstance(attr, ir.IntegerAttr) else None


def _trips(loop: ir.Operation) -> int:
    lower, upper, step = (_constant(v) for v in list(loop.operands)[:3])
    if lower is None or upper is None or step is None or step <= 0:
        return UNKNOWN_TRIPS
    return max(0, -(-(upper - lower) // step))


def _work(operations: Iterable[ir.OpView], callees: _Callees) -> int:
    """Element operations done by `operations` (each vector result counts its elements; loops their trips)."""
    total = 0
    for view in operations:
        op = view.operation
        if op.name in ("arith.constant", "scf.yield", "ub.poison"):
            continue
        if op.name == "scf.for":
            total += _trips(op) * _work(_body(op).operations, callees)
            continue
        if op.name == "func.call":
            total += callees.work(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
            continue
        for region in op.regions:
            for block in region.blocks:
                total += _work(block.operations, callees)
        elements = [math.prod(ir.VectorType(r.type).shape) for r in op.results if isinstance(r.type, ir.VectorType)]
        if op.name in WRITES and isinstance(op.operands[0].type, ir.VectorType):
            elements.append(math.prod(ir.VectorType(op.operands[0].type).shape))
        total += max(elements, default=1)
    return total


def _to_parallel(nest: list[ir.Operation]) -> None:
    """Replaces the perfect nest `nest` (outermost first) by one scf.parallel over its loops' ranges."""
    outer, inner = nest[0], nest[-1]
    bounds = [list(l.operands)[:3] for l in nest]
    index = ir.IndexType.get()
    with outer.location, ir.InsertionPoint(outer):
        parallel = scf.ParallelOp([], [b[0] for b in bounds], [b[1] for b in bounds], [b[2] for b in bounds], [])
        block = parallel.region.blocks.append(*[index] * len(nest))
        with ir.InsertionPoint(block):
            terminator = scf.ReduceOp([], 0)
    for loop, argument in zip(nest, block.arguments, strict=True):
        _body(loop).arguments[0].replace_all_uses_with(argument)
    for op in list(_body(inner).operations)[:-1]:
        op.operation.move_before(terminator)
    outer.erase()


def _drop_alloca_scopes(module: ir.Module) -> None:
    """Moves the body of every `memref.alloca_scope` (convert-scf-to-openmp wraps each loop body in one) into
    its parent. Its verifier wants one block, which convert-scf-to-cf breaks by making the inner loops
    branches; and it has nothing to free: no loop with an alloca is parallelized (`_is_parallel`)."""
    for op in ops.walk_ops(module.operation):
        if op.name != "memref.alloca_scope":
            continue
        body = list(op.regions[0].blocks[0].operations)
        for inner in body[:-1]:  # all but its memref.alloca_scope.return
            inner.operation.move_before(op)
        op.erase()


def with_threads(pipeline: Sequence[str], threads: int) -> tuple[str, ...]:
    """`pipeline` with glow-cpu-parallelize{threads} right after glow-cpu-schedule when `threads` > 1; with
    one thread, `pipeline` itself (the single-threaded code path is exactly the pipeline without it)."""
    if threads <= 1:
        return tuple(pipeline)
    position = [e.split("{", 1)[0].strip() for e in pipeline].index(SCHEDULE_STAGE) + 1
    return (*pipeline[:position], f"{PASS_NAME}{{threads={threads}}}", *pipeline[position:])


def physical_cores() -> int:
    """The physical cores this process may run on: the CPUs of its affinity mask, counted once per core
    (SMT siblings share one), from the kernel's topology files; the CPU count where these are missing."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    cores: set[tuple[str, str]] = set()
    for cpu in cpus:
        topology = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            cores.add(((topology / "physical_package_id").read_text(), (topology / "core_id").read_text()))
        except OSError:
            return len(cpus)
    return len(cores) or os.cpu_count() or 1


@functools.cache
def runtime_library() -> Path | None:
    """libiomp5.so, the OpenMP runtime that the `intel-openmp` wheel installs into the environment's lib/."""
    try:
        files = importlib.metadata.files("intel-openmp") or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    for file in files:
        if file.name == RUNTIME_NAME:
            return Path(str(file.locate())).resolve()
    candidate = Path(sys.prefix) / "lib" / RUNTIME_NAME
    return candidate if candidate.exists() else None


@functools.cache
def load_runtime() -> ctypes.CDLL:
    """Loads the OpenMP runtime into the process with RTLD_GLOBAL, once: the JIT resolves the generated
    code's `__kmpc_*` calls among the process's symbols, and so does the dynamic loader for a compile cache
    library (linked with those symbols undefined). UnsupportedError when it is not installed."""
    path = runtime_library()
    if path is None:
        raise UnsupportedError(
            f"threads > 1 needs the OpenMP runtime {RUNTIME_NAME} (pip install intel-openmp); use threads=1"
        )
    return ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)


def default_threads() -> int:
    """The thread count of `intra_op_num_threads=0` (onnxruntime's "default"): the physical cores, as
    onnxruntime takes; one where the OpenMP runtime is not installed (the single-threaded code needs none)."""
    return physical_cores() if runtime_library() is not None else 1
