"""The profiling variant of the CPU backend's code: `glow-to-llvm{profile=1}` times every outlined call.

After glow-cpu-schedule every kernel, and every loop nest that no recipe took, is a function of its own
(`__glow_*`, outline.py) called from the model's entry function; what is left in the entry itself is views,
and the loop nests of a few ops (softmax's scf loops on small shapes). `instrument` wraps each such call, and
each loop nest of the entry, in two reads of the monotonic clock (`clock_gettime(CLOCK_MONOTONIC)` from the
C library, through the vDSO: about 20 ns; the same clock as Python's `time.monotonic_ns`) and adds what the
site took into a counters buffer, a mutable global of the module. A function `glow_profile_read(out)` (C
interface, like the entry) copies the counters into `out` and zeroes them: the runtime calls it after each
run (glow_mlir/profiling.py).

The counters are a memref<3xN x i64> for N sites: row 0 the nanoseconds the site took, row 1 how many times
it ran (a call inside a loop runs more than once), row 2 the clock when it first started.

With threads (`compile(threads=N)`, glow-cpu-parallelize), every site is still timed from the thread that runs
the entry function, by wall clock: a call of a kernel that splits its own loops includes the fork and join of
its regions, and a parallel region of the entry itself (a loop of calls of a convolution's kernel, one per
channel tile) is timed whole, as one site named after the kernel it calls. Nothing is timed inside a region:
its body runs on every thread at once, where plain adds into the counters would race, and the caller waits
for the region's slowest thread anyway, which is what the time around the region shows. The table gives
each site what its regions split (`glow.split`, parallel.py): the region's own, or those of the kernel's.

Which model nodes each kernel computes comes from the location of its call, which outline.py makes from the
locations of the ops the call replaced as they survived fusion (an ONNX node's name, a fused location listing
every node a fused op computes): one function may serve several calls, of other nodes. The module gets the
table as the attribute `glow.profile_kernels`: one array per site, the callee's name (`<entry>:<op>:<k>` for a
loop nest of the entry), then the node names. The runtime reads the table and drops the attribute before
LLVM translation.

Profiling is its own compile variant (the compile cache keys it apart), so a normal compile has none of
this code.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, func, memref

from glow_mlir import ops
from glow_mlir.backends.cpu.outline import OUTLINED_PREFIX
from glow_mlir.backends.cpu.parallel import SPLIT_ATTR, Split

# The region op glow-cpu-parallelize's OpenMP lowering makes.
PARALLEL = "omp.parallel"

# Symbols the instrumentation adds. They do not start with OUTLINED_PREFIX: the clock read must be inlined,
# and none of them is a kernel.
COUNTERS = "glow_profile_counters"
READ = "glow_profile_read"
NOW = "glow_profile_now"
# The module attributes holding the kernel table and each site's splits (see the module doc).
KERNELS_ATTR = "glow.profile_kernels"
SPLITS_ATTR = "glow.profile_splits"
# The counters' rows.
NS_ROW, CALLS_ROW, START_ROW = 0, 1, 2
ROWS = 3
# Linux's CLOCK_MONOTONIC.
CLOCK_MONOTONIC = 1


def _runtime(sites: int) -> str:
    """The counters, the clock read and the read-and-reset function, for `sites` call sites."""
    shape = f"memref<{ROWS}x{sites}xi64>"
    return f"""
llvm.func @clock_gettime(i32, !llvm.ptr) -> i32
memref.global "private" @{COUNTERS} : {shape} = dense<0>
func.func private @{NOW}() -> i64 {{
  %one = llvm.mlir.constant(1 : i64) : i64
  %clock = llvm.mlir.constant({CLOCK_MONOTONIC} : i32) : i32
  %timespec = llvm.alloca %one x !llvm.struct<(i64, i64)> : (i64) -> !llvm.ptr
  %status = llvm.call @clock_gettime(%clock, %timespec) : (i32, !llvm.ptr) -> i32
  %seconds = llvm.load %timespec : !llvm.ptr -> i64
  %field = llvm.getelementptr %timespec[0, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(i64, i64)>
  %nanoseconds = llvm.load %field : !llvm.ptr -> i64
  %billion = arith.constant 1000000000 : i64
  %scaled = arith.muli %seconds, %billion : i64
  %now = arith.addi %scaled, %nanoseconds : i64
  return %now : i64
}}
func.func @{READ}(%out: {shape}) attributes {{llvm.emit_c_interface}} {{
  %counters = memref.get_global @{COUNTERS} : {shape}
  memref.copy %counters, %out : {shape} to {shape}
  %zero = arith.constant 0 : i64
  linalg.fill ins(%zero : i64) outs(%counters : {shape})
  return
}}
"""


def _name(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value


def _outlined_call(op: ir.Operation) -> bool:
    return op.name == "func.call" and ir.FlatSymbolRefAttr(op.attributes["callee"]).value.startswith(OUTLINED_PREFIX)


@dataclass(frozen=True)
class Site:
    """A timed op of the entry function: its table row (its name, then node names) and what it splits."""

    op: ir.Operation
    row: list[str]
    splits: list[ir.Attribute]


def _splits(op: ir.Operation) -> list[ir.Attribute]:
    """The `glow.split` of `op` and of every region nested in it."""
    return [o.attributes[SPLIT_ATTR] for o in [op, *ops.walk_ops(op)] if SPLIT_ATTR in o.attributes]


def _sites(entry: ir.Operation, functions: dict[str, ir.Operation]) -> list[Site]:
    """The timed sites of entry function `entry`: every call of an outlined function, every loop nest left in
    the entry itself (softmax's scf loops), named `<entry>:<op>:<k>` after its position, and every parallel
    region, whole, named after the kernels it calls (the module doc). A loop that holds outlined calls is not
    timed whole, its calls are; one that holds a region is."""
    entry_name = _name(entry)
    sites: list[Site] = []
    for op in entry.regions[0].blocks[0].operations:
        op = op.operation
        inner = [o for o in ops.walk_ops(op) if _outlined_call(o)]
        if op.name == PARALLEL or any(o.name == PARALLEL for o in ops.walk_ops(op)):
            callees = dict.fromkeys(ir.FlatSymbolRefAttr(c.attributes["callee"]).value for c in inner)
            name = "+".join(callees) or f"{entry_name}:{op.name}:{len(sites)}"
            nodes = dict.fromkeys(n for o in (inner or [op, *ops.walk_ops(op)]) for n in ops.node_names(o.location))
            sites.append(Site(op, [name, *nodes], _splits(op)))
            continue
        for call in [op] if _outlined_call(op) else inner:
            callee = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
            row = [callee, *dict.fromkeys(ops.node_names(call.location))]
            sites.append(Site(call, row, _splits(functions[callee])))
        if len(op.regions) and not inner:
            names = dict.fromkeys(n for o in [op, *ops.walk_ops(op)] for n in ops.node_names(o.location))
            sites.append(Site(op, [f"{entry_name}:{op.name}:{len(sites)}", *names], []))
    return sites


def instrument(module: ir.Module) -> None:
    """Times every call of an outlined function and every loop nest left in the module's entry function (see
    the module doc)."""
    functions = {_name(f): f for f in ops.functions(module)}
    entries = [
        f for name, f in functions.items()
        if f.regions[0].blocks and not name.startswith(OUTLINED_PREFIX) and "sym_visibility" not in f.attributes
    ]
    found = [site for entry in entries for site in _sites(entry, functions)]
    sites = [site.op for site in found]
    with module.context, ir.Location.unknown():
        runtime = ir.Module.parse(_runtime(max(len(sites), 1)))
        anchor = module.body.operations[0]
        for op in list(runtime.body.operations):
            op.operation.move_before(anchor)
        i64 = ir.IntegerType.get_signless(64)
        counters_type = ir.MemRefType.get([ROWS, max(len(sites), 1)], i64)
        for index, call in enumerate(sites):
            with ir.InsertionPoint(call), call.location:
                start = func.CallOp([i64], ir.FlatSymbolRefAttr.get(NOW), []).result
                stop = func.CallOp([i64], ir.FlatSymbolRefAttr.get(NOW), [])
                _accumulate(counters_type, index, start, stop.result)
            # Built before the call, the clock reads and counter updates are then put around it.
            call.move_before(stop)
        module.operation.attributes[KERNELS_ATTR] = ir.ArrayAttr.get(
            [ir.ArrayAttr.get([ir.StringAttr.get(text) for text in site.row]) for site in found]
        )
        module.operation.attributes[SPLITS_ATTR] = ir.ArrayAttr.get([ir.ArrayAttr.get(site.splits) for site in found])


def _accumulate(counters_type: ir.MemRefType, site: int, start: ir.Value, stop: ir.Value) -> None:
    """counters[NS][site] += stop - start; counters[CALLS][site] += 1; counters[START][site] = start for the
    first call. Built at the current insertion point and location."""
    counters = memref.get_global(counters_type, COUNTERS)
    index = ir.IndexType.get()
    column = arith.constant(index, site)
    rows = [arith.constant(index, row) for row in range(ROWS)]
    i64 = ir.IntegerType.get_signless(64)
    spent = memref.load(counters, [rows[NS_ROW], column])
    memref.store(arith.addi(spent, arith.subi(stop, start)), counters, [rows[NS_ROW], column])
    calls = memref.load(counters, [rows[CALLS_ROW], column])
    memref.store(arith.addi(calls, arith.constant(i64, 1)), counters, [rows[CALLS_ROW], column])
    first = arith.cmpi(arith.CmpIPredicate.eq, calls, arith.constant(i64, 0))
    earlier = memref.load(counters, [rows[START_ROW], column])
    memref.store(arith.select(first, start, earlier), counters, [rows[START_ROW], column])


def read_kernels(module: ir.Module) -> list[tuple[str, tuple[str, ...], tuple[Split, ...]]]:
    """The kernel table `instrument` left on `module` (callee, node names, splits) per site, removed from it."""
    attribute = ir.ArrayAttr(module.operation.attributes[KERNELS_ATTR])
    splits = ir.ArrayAttr(module.operation.attributes[SPLITS_ATTR])
    del module.operation.attributes[KERNELS_ATTR]
    del module.operation.attributes[SPLITS_ATTR]
    rows = [[ir.StringAttr(text).value for text in ir.ArrayAttr(row)] for row in attribute]
    return [
        (row[0], tuple(row[1:]), tuple(Split.from_attribute(a) for a in ir.ArrayAttr(site)))
        for row, site in zip(rows, splits, strict=True)
    ]
