"""glow-cpu-parallelize: splits the outer parallel tile loops of the scheduled kernels across threads.

It runs between glow-cpu-schedule and glow-to-llvm, only for a model compiled for more than one thread
(`compile(threads=N)`, `SessionOptions.intra_op_num_threads`); with one thread the pipeline is today's,
unchanged. In every function (the model's, and each outlined kernel, outline.py) it takes each top-level
`scf.for` nest whose head is parallel and whose estimated time pays for a fork (`_pays`), turns the
perfectly nested parallel loops at its head (up to MAX_COLLAPSE) into one `scf.parallel`, and lets MLIR's
`convert-scf-to-openmp` make that an `omp.parallel` + `omp.wsloop` (collapsed, static schedule) with
`num_threads(N)`. glow-to-llvm lowers the OpenMP ops (`convert-openmp-to-llvm`); the code then calls the
LLVM/Intel OpenMP runtime (`__kmpc_fork_call`, `__kmpc_for_static_init`), libiomp5 from the `intel-openmp`
wheel, whose worker threads persist between regions (no thread is created per run). docs/THREADS.md says why
this mechanism.

A loop in the model's function that calls a kernel once per channel tile (the convolution recipes' tile loop)
is a candidate too: it forks once where the kernel would fork once per call. It wins over the kernel's own
loops (output rows) unless those split more evenly across the threads (`_balance`), or as evenly and sooner
by what each thread moves (`_kernel_split_pays`): split by channel tiles, every thread reads all of the
input, half of it (at 2 threads) written into the other core's cache by the split kernels before; split by
rows, every thread reads all of the weights. The kernel that the loop runs whole on one thread per call then
stays serial.

Each omp.parallel it makes carries `glow.split`, what it splits (`Split`: the trip count and the dimension of
each collapsed loop), which the profiler reports per kernel (profile.py, bench/threads.py --profile).

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

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import scf
from mlir.passmanager import PassManager

from glow_mlir import ops
from glow_mlir.backends.cpu.loops import (
    Moves,
    NO_WORK,
    READS,
    REGISTER_MOVES,
    Root,
    VIEWS,
    WRITES,
    buffer_base,
    buffer_root,
    depends_on_iv,
    element_bits,
    defined_inside_any,
    loop_body,
    memref_bytes,
    moving_dims,
    only_inner_loop,
    trip_count,
)
from glow_mlir.backends.cpu.recipes import L2_BYTES
from glow_mlir.errors import PipelineError
from glow_mlir.passes.registry import register

PASS_NAME = "glow-cpu-parallelize"
# The pass runs right after this pipeline element, on the scheduled, outlined kernels.
SCHEDULE_STAGE = "glow-cpu-schedule"
# The attribute each omp.parallel the pass makes carries: what its loop splits (`Split`), for the profiler
# (profile.py) and whoever reads the IR. convert-scf-to-openmp keeps no attribute of the scf.parallel.
SPLIT_ATTR = "glow.split"
# A function carrying this unit attribute is not split: a recipe's helper that its kernel calls once per
# iteration of a loop that is itself the one to split (winograd_recipes.py's rows and channel blocks, whose
# scratch is private to each call), where a fork per call would cost more than it gains.
SERIAL_ATTR = "glow.serial"

# The cost rule (`_pays`): a nest's time on one thread is estimated as a roofline, the larger of its arithmetic
# time and its memory time (`_estimate`), and the nest runs on N threads when its time on the busiest thread
# (static blocks of its iterations) plus a fork and join is less than its time on one thread.
#
# Arithmetic time: an op that computes is ceil(elements x element bits / VECTOR_BITS) vector instructions (a
# scalar op one), and the core retires INSTRUCTIONS_PER_SECOND of them: two FMA ports each cycle at 3.58 GHz,
# the single-core peak of the development machine's AVX-512 Xeon (229 GFLOP/s = 2 ports x 16 f32 lanes x
# 2 flops x 3.58 GHz). Loads and stores issue on ports of their own: they count in the memory time only;
# constants, views, index arithmetic and register-level reshuffles (REGISTER_MOVES) count nothing.
VECTOR_BITS = 512
INSTRUCTIONS_PER_SECOND = 2 * 3.58e9
# Memory time: the bytes the nest touches (per buffer, its accesses' bytes times their trips, at most the
# buffer's size: what it touches again comes from the caches) at one core's streaming rate from its L2 when
# they fit in L2 (recipes.L2_BYTES: 2 MiB per core on both machines below), else from beyond. Measured with a C loop
# z = x + y (gcc -O3 -march=native) on one core of a quiet 16-core Xeon: 88-108 GB/s at 48-768 KiB, 25-27 GB/s
# at 3-48 MiB (the loaded development VM: 36-239 and 12-14 GB/s; the generated code's add there: 32-83 and 10-26).
L2_BYTES_PER_SECOND = 90e9
BEYOND_L2_BYTES_PER_SECOND = 25e9
# One fork and join of a region with libiomp5's hot team (its workers spinning, KMP_BLOCKTIME default): a C loop
# of the regions the generated code makes (__kmpc_push_num_threads, __kmpc_fork_call, a static wsloop) took,
# on the quiet 16-core Xeon, 1.3-1.5 us at 2 threads, 1.8-2.1 at 4, 2.7-2.9 at 8 and 3.6-3.8 at 16: about
# FORK_SECONDS plus FORK_SECONDS_PER_DOUBLING for each doubling of the threads (the join is a tree barrier).
# On the loaded 2-core development VM: 2.5-5.8 us at 2 threads.
FORK_SECONDS = 0.6e-6
FORK_SECONDS_PER_DOUBLING = 0.8e-6
# At most this many perfectly nested parallel loops are collapsed into one parallel loop.
MAX_COLLAPSE = 3

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
            if SERIAL_ATTR in func.attributes:
                plans[name] = []
                continue
            found = [_plan(op.operation, callees, count) for op in func.regions[0].blocks[0].operations]
            plans[name] = [plan for plan in found if plan is not None]
        # A loop around kernel calls (a convolution's channel tiles, in the model's function) forks once for
        # all its calls, where each kernel would fork once per call. It wins unless a kernel's own loops split
        # more evenly across the threads, or as evenly and sooner by the bytes each thread moves
        # (`_kernel_split_pays`). The kernels it calls then run whole on one thread each.
        inside: set[str] = set()
        deferred: list[tuple[str, list[ir.Operation], int, set[str]]] = []
        for name, nests in plans.items():
            kept = []
            for nest, trips in nests:
                called = {ir.FlatSymbolRefAttr(op.attributes["callee"]).value
                          for op in ops.walk_ops(nest[0]) if op.name == "func.call"}  # fmt: skip
                inner = {callee: plans[callee] for callee in called if plans.get(callee)}
                if inner and _kernel_split_pays(nest, trips, inner, count, callees):
                    deferred.append((name, nest, trips, called))
                    continue
                inside |= called
                kept.append((nest, trips))
            plans[name] = kept
        # A kernel that another loop runs whole on each thread does not split its own loops: a loop that left
        # the split to it splits after all (and then runs its other kernels whole too).
        while any(called & inside for *_, called in deferred):
            for entry in [entry for entry in deferred if entry[3] & inside]:
                name, nest, trips, called = entry
                plans[name].append((nest, trips))
                inside |= called
                deferred.remove(entry)
        for nests in plans.values():
            nests.sort(key=lambda plan: _position(plan[0][0]))
        # What each function's regions split, in the order of its nests (and so of the omp.parallel ops).
        splits: dict[str, list[Split]] = {}
        for name, nests in plans.items():
            if name in inside or not nests:
                continue
            splits[name] = [Split.of(nest, callees) for nest, _ in nests]
            for nest, _ in nests:
                _to_parallel(nest)
        if not splits:
            return
        pm = PassManager.parse(f"builtin.module(convert-scf-to-openmp{{num-threads={count}}})", module.context)
        try:
            pm.run(module.operation)
        except ir.MLIRError as e:
            notes = "; ".join(f"{d.location}: {d.message}" for d in e.error_diagnostics)
            raise PipelineError(f"{PASS_NAME} failed: {notes or e}") from None
        _drop_alloca_scopes(module)
        for name, found in splits.items():
            regions = [op for op in callees.functions[name].regions[0].blocks[0].operations
                       if op.operation.name == "omp.parallel"]  # fmt: skip
            for region, split in zip(regions, found, strict=True):
                region.operation.attributes[SPLIT_ATTR] = split.attribute()


@dataclass(frozen=True)
class Split:
    """What one parallel region splits: the trip count of each collapsed loop, outermost first, and the
    dimension each loop walks (`_dimension`: 'd<k> of <shape>', '?' if not found)."""

    trips: tuple[int, ...]
    dims: tuple[str, ...]

    @classmethod
    def of(cls, nest: list[ir.Operation], callees: _Callees) -> Split:
        return cls(tuple(trip_count(l) for l in nest), tuple(_dimension(l, callees) for l in nest))

    @classmethod
    def from_attribute(cls, attribute: ir.Attribute) -> Split:
        fields = ir.DictAttr(attribute)
        trips = tuple(ir.DenseI64ArrayAttr(fields["trips"]))
        return cls(trips, tuple(ir.StringAttr(d).value for d in ir.ArrayAttr(fields["dims"])))

    def attribute(self) -> ir.Attribute:
        return ir.DictAttr.get({
            "trips": ir.DenseI64ArrayAttr.get(list(self.trips)),
            "dims": ir.ArrayAttr.get([ir.StringAttr.get(d) for d in self.dims]),
        })

    def blocks(self, threads: int) -> list[int]:
        """The iterations each thread runs: the static schedule's equal blocks, one more for the first
        `trips % threads` threads (libiomp5's `kmp_sch_static`)."""
        total = math.prod(self.trips)
        return [total // threads + (t < total % threads) for t in range(threads)]


def _position(op: ir.Operation) -> int:
    """The index of `op` among the ops of its block."""
    return next(i for i, o in enumerate(op.parent.regions[0].blocks[0].operations) if o.operation == op)


def _kernel_split_pays(
    nest: list[ir.Operation],
    trips: int,
    inner: dict[str, list[tuple[list[ir.Operation], int]]],
    threads: int,
    callees: _Callees,
) -> bool:
    """Whether the kernels that loop nest `nest` (`trips` iterations) calls should split their own loops
    (`inner`: their planned nests) rather than `nest` splitting across the calls: whichever keeps the busiest
    thread busy for less time, its share of the nest's arithmetic (by how evenly each split balances across the
    threads, `_balance`; the kernels' worst) plus the time it spends moving its bytes (`_memory_seconds`) plus
    its forks (one per kernel call, against one for the loop). The bytes add to the arithmetic: what a split
    changes is mostly reads from the other core's cache, which a kernel waits for (docs/THREADS.md)."""
    arithmetic = _estimate(nest[0], callees).arithmetic_seconds
    balance = _balance(trips, threads)
    inner_balance = min(_balance(t, threads) for plans in inner.values() for _, t in plans)
    fork = FORK_SECONDS + FORK_SECONDS_PER_DOUBLING * math.log2(threads)
    outer_seconds, inner_seconds = _memory_seconds(nest, inner, threads)
    calls = trips * sum(len(plans) for plans in inner.values())
    outer = arithmetic / (threads * balance) + outer_seconds + fork
    return arithmetic / (threads * inner_balance) + inner_seconds + calls * fork < outer


def _memory_seconds(
    nest: list[ir.Operation], inner: dict[str, list[tuple[list[ir.Operation], int]]], threads: int
) -> tuple[float, float]:
    """The time one thread spends moving its bytes over all iterations of the loop nest `nest` of kernel calls,
    when `nest` splits across the calls and when the kernels (`inner`) split their own loops.

    Per buffer that a call gets (a view of): a split that divides it gives each thread its share, else each
    thread reads all of it. A convolution's channel-tile loop divides its weights and output by channel
    tiles, and every thread reads all of its input; its kernel's row loop divides input and output by rows,
    and every thread reads all weights. Where the bytes come from: a buffer written at run time was written,
    by the split kernels before, in shares, one per thread, which stay in that thread's L2 (at the L2 rate);
    the share the other threads wrote comes from their caches, beyond this core's L2. Weights (globals) come
    from beyond L2 (a model's weights do not fit there)."""
    moves = Moves(nest)
    sizes: dict[Root, tuple[int, bool]] = {}
    outer: set[Root] = set()
    divided_inner: set[Root] = set()
    for op in ops.walk_ops(nest[0]):
        if op.name != "func.call":
            continue
        callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
        divided = set.intersection(*(_divided_arguments(n) for n, _ in inner[callee])) if callee in inner else set()
        for i, value in enumerate(op.operands):
            if not isinstance(value.type, ir.MemRefType):
                continue
            root, base = buffer_root(value), buffer_base(value)
            global_ = not isinstance(base.owner, ir.Block) and base.owner.operation.name == "memref.get_global"
            sizes[root] = (memref_bytes(base.type) or 0, global_)
            if moves(value):
                outer.add(root)
            if i in divided:
                divided_inner.add(root)

    def seconds(divided: set[Root]) -> float:
        local = beyond = 0.0
        for root, (size, global_) in sizes.items():
            share = size / threads
            if global_:
                beyond += share if root in divided else size
            else:
                local += share
                beyond += 0 if root in divided else size - share
        return local / L2_BYTES_PER_SECOND + beyond / BEYOND_L2_BYTES_PER_SECOND

    return seconds(outer), seconds(divided_inner)


def _divided_arguments(nest: list[ir.Operation]) -> set[int]:
    """The arguments of the function holding loop nest `nest` that the nest reads or writes at addresses that
    move with its loops: a split of the nest divides them among the threads."""
    arguments = list(nest[0].parent.regions[0].blocks[0].arguments)
    moves = Moves(nest)
    found: set[int] = set()
    for op in ops.walk_ops(nest[0]):
        if op.name not in READS and op.name not in WRITES:
            continue
        at = READS[op.name] if op.name in READS else WRITES[op.name]
        buffer = op.operands[at]
        if any(moves(v) for v in [buffer, *list(op.operands)[at + 1 :]]):
            base = buffer_base(buffer)
            found |= {i for i, a in enumerate(arguments) if a == base}
    return found


def _balance(trips: int, threads: int) -> float:
    """The share of `threads` kept busy by a loop of `trips` equal iterations split in static blocks."""
    return trips / (threads * math.ceil(trips / threads))


class _Callees:
    """The functions of a module with a body, and what a call of each does: its instructions and the arguments
    it writes, read from its body once."""

    def __init__(self, module: ir.Module) -> None:
        self.functions = {
            ir.StringAttr(f.attributes["sym_name"]).value: f for f in ops.functions(module) if f.regions[0].blocks
        }
        self._instructions: dict[str, float] = {}
        self._written: dict[str, frozenset[int] | None] = {}

    def instructions(self, name: str) -> float:
        """The instructions one call of function `name` executes (`_Cost`); one for a function with no body."""
        if name not in self._instructions:
            func = self.functions.get(name)
            if func is None:
                self._instructions[name] = 1.0
            else:
                cost = _Cost(self)
                cost.add(func.regions[0].blocks[0].operations, 1)
                self._instructions[name] = cost.instructions
        return self._instructions[name]

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
                root, _ = buffer_root(op.operands[WRITES[op.name]])
                found |= {i for i, a in enumerate(arguments) if a == root}
            elif op.name not in READS and op.name not in VIEWS and _has_buffer_operand(op):
                return None
        return frozenset(found)


def _has_buffer_operand(op: ir.Operation) -> bool:
    return any(isinstance(v.type, ir.MemRefType | ir.UnrankedMemRefType) for v in op.operands)


def _plan(loop: ir.Operation, callees: _Callees, threads: int) -> tuple[list[ir.Operation], int] | None:
    """The parallel head of the nest rooted at `loop` (up to MAX_COLLAPSE perfectly nested parallel loops) and
    its trip count, if it has at least two iterations and splitting it across `threads` pays (`_pays`); None
    otherwise."""
    if loop.name != "scf.for":
        return None
    nest: list[ir.Operation] = []
    current: ir.Operation | None = loop
    while current is not None and len(nest) < MAX_COLLAPSE and _is_parallel(current, nest, callees):
        nest.append(current)
        current = only_inner_loop(current)
    if not nest:
        return None
    trips = math.prod(trip_count(l) for l in nest)
    if trips < 2 or not _pays(_estimate(loop, callees), trips, threads):
        return None
    return nest, trips


@dataclass(frozen=True)
class _Estimate:
    """A loop nest's estimated time on one thread: the larger of its arithmetic and its memory time."""

    instructions: float
    bytes: int

    @property
    def arithmetic_seconds(self) -> float:
        return self.instructions / INSTRUCTIONS_PER_SECOND

    @property
    def memory_seconds(self) -> float:
        rate = L2_BYTES_PER_SECOND if self.bytes <= L2_BYTES else BEYOND_L2_BYTES_PER_SECOND
        return self.bytes / rate

    @property
    def seconds(self) -> float:
        return max(self.arithmetic_seconds, self.memory_seconds)


def _pays(estimate: _Estimate, trips: int, threads: int) -> bool:
    """Whether a nest of `trips` equal iterations, split in static blocks across `threads`, ends sooner than on
    one thread: its busiest thread's share of the time plus a fork and join."""
    busiest = estimate.seconds / (threads * _balance(trips, threads))
    fork = FORK_SECONDS + FORK_SECONDS_PER_DOUBLING * math.log2(threads)
    return busiest + fork < estimate.seconds


def _estimate(loop: ir.Operation, callees: _Callees) -> _Estimate:
    """The estimated time of the nest rooted at `loop` (the cost rule at the top of this file)."""
    cost = _Cost(callees)
    cost.add([loop], 1)
    return _Estimate(cost.instructions, cost.bytes())


class _Cost:
    """Counts, over ops and the trips of the loops around them, the instructions they execute and the bytes
    they move in and out of each buffer (through accesses, or calls that get the buffer or a view of it)."""

    def __init__(self, callees: _Callees) -> None:
        self.callees = callees
        self.instructions = 0.0
        self._traffic: dict[Root, int] = {}
        self._size: dict[Root, int | None] = {}

    def bytes(self) -> int:
        """The bytes touched: per buffer, the bytes its accesses move, at most the buffer's size."""
        return sum(min(t, self._size[r] or t) for r, t in self._traffic.items())

    def add(self, operations: Iterable[ir.OpView], trips: int) -> None:
        """Counts `operations`, run `trips` times."""
        for view in operations:
            op = view.operation
            name = op.name
            if name == "scf.for":
                self.add(loop_body(op).operations, trips * trip_count(op))
            elif name == "func.call":
                callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
                self.instructions += trips * self.callees.instructions(callee)
                for value in op.operands:
                    if isinstance(value.type, ir.MemRefType):
                        # The callee may touch all of what it gets (a dynamic shape: its bytes are not known).
                        self._touch(value, memref_bytes(value.type) or 0, trips)
            elif name in READS or name in WRITES:
                buffer = op.operands[READS[name] if name in READS else WRITES[name]]
                # What it moves: its widest vector (not a mask), else one element of the buffer.
                elements, bits = _widest(op, (1, element_bits(ir.MemRefType(buffer.type).element_type)))
                self._touch(buffer, elements * bits // 8, trips)
            elif name in NO_WORK or name in VIEWS or name in REGISTER_MOVES or _on_indices(op):
                continue
            else:
                for region in op.regions:
                    for block in region.blocks:
                        self.add(block.operations, trips)
                self.instructions += trips * _vector_instructions(*_widest(op, (1, 32)))

    def _touch(self, buffer: ir.Value, count: int, trips: int) -> None:
        """Records `trips` accesses of `count` bytes of memref `buffer`."""
        root = buffer_root(buffer)
        self._traffic[root] = self._traffic.get(root, 0) + trips * count
        self._size[root] = memref_bytes(buffer_base(buffer).type)


def _widest(op: ir.Operation, scalar: tuple[int, int]) -> tuple[int, int]:
    """The elements and their bits of the widest vector among `op`'s results and operands; `scalar` if none."""
    vectors = [ir.VectorType(v.type) for v in [*op.results, *op.operands] if isinstance(v.type, ir.VectorType)]
    sizes = [(math.prod(v.shape), element_bits(v.element_type)) for v in vectors]
    return max(sizes, key=lambda size: size[0] * size[1], default=scalar)


def _vector_instructions(elements: int, bits: int) -> int:
    """The instructions an op on `elements` values of `bits` bits takes: one per full vector register."""
    return max(1, -(-elements * bits // VECTOR_BITS))


def _on_indices(op: ir.Operation) -> bool:
    """Whether `op` computes on indices: address and loop arithmetic, which LLVM folds into addressing modes and
    the loops' counters."""
    return any(isinstance(v.type, ir.IndexType) for v in [*op.results, *op.operands])


def _is_parallel(loop: ir.Operation, outer: list[ir.Operation], callees: _Callees) -> bool:
    """Whether the iterations of `loop` are independent (the module docstring says how this is decided);
    `outer` are the loops around it that are already taken, whose bounds it must not depend on."""
    if len(loop.results) or len(loop_body(loop).arguments) != 1:
        return False
    if any(defined_inside_any(v, outer) for v in list(loop.operands)[:3]):
        return False  # not rectangular: its bounds move with an outer loop
    iv = loop_body(loop).arguments[0]
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
        root = buffer_root(buffer)
        depends = any(depends_on_iv(v, iv, loop, memo) for v in [buffer, *operands])
        if writes:
            if not depends:
                return False
            written.add(root)
    # A buffer that is written must only be read where the same iteration writes it.
    for buffer, operands, writes in accesses:
        root = buffer_root(buffer)
        if not writes and root in written and not any(depends_on_iv(v, iv, loop, memo) for v in [buffer, *operands]):
            return False
    return True


def _dimension(loop: ir.Operation, callees: _Callees) -> str:
    """The dimension that the iterations of parallel `loop` walk, as 'd<k> of <shape>': of the buffer nearest
    the written one's root (a function argument, an arena view) whose index or view offset moves with the
    induction variable; several dims joined by ','. '?' if none is found (then no write moves with it)."""
    iv = loop_body(loop).arguments[0]
    memo: dict[ir.Value, bool] = {}
    for op in ops.walk_ops(loop):
        if op.name in WRITES:
            at = WRITES[op.name]
            rank = len(ir.MemRefType(op.operands[at].type).shape)
            found = moving_dims(op.operands[at], list(op.operands)[at + 1 : at + 1 + rank], iv, loop, memo)
        elif op.name == "func.call":
            written = callees.written(ir.FlatSymbolRefAttr(op.attributes["callee"]).value) or frozenset()
            moved = [moving_dims(op.operands[i], [], iv, loop, memo) for i in sorted(written)]
            found = next((m for m in moved if m), "")
        else:
            continue
        if found:
            return found
    return "?"


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
        loop_body(loop).arguments[0].replace_all_uses_with(argument)
    for op in list(loop_body(inner).operations)[:-1]:
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
