"""Pictures of what the compiler did: the optimized graph, drawn by Graphviz, and the activation arena's memory
plan, drawn by matplotlib (`glow-run --graph out.svg --memory-plan out.png`; docs/PICTURES.md).

`graph_dot` turns a `glow` module (the optimized one is the module after OPTIMIZED_STAGE) into DOT source:
one box per op with its name, the ONNX node(s) it came from (its location: a node name, or a fused location
listing several) and its result types. Fused activations get a thick orange border and their name in the
title; the CPU backend's NHWC ops are blue and transposes purple hexagons. Constants and splats are not
boxes: each consumer lists the ones it reads, which keeps ResNet-50's hundred weights from crowding it.
`render` runs Graphviz's `dot` on it.

`plan_rectangles` reads the memory plan back from a `glow_ir` module after glow-allocate: every activation is
a `memref.view` of the arena argument at a constant offset, live from its view up to the last instruction
that uses it (through tensor views), and the function carries the arena size and the peak-live lower bound.
`memory_plan` draws those rectangles. Both tools are optional: a missing `dot` or matplotlib raises
UnsupportedError saying how to install it, and a picture is written whole or not at all.
"""

from __future__ import annotations

import html
import os
import secrets
import shutil
import subprocess
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlir import ir

from glow_mlir import ops
from glow_mlir.context import copy_module, make_context
from glow_mlir.errors import GlowError, UnsupportedError
from glow_mlir.passes.lowering.irgen import buffer_users
from glow_mlir.pipeline.runner import COMPILE_PIPELINE, run_pipeline, stage_name
from glow_mlir.runtime import ABI_STAGE, OPTIMIZED_STAGE

# Op kinds drawn apart from plain ops; the legend shows each.
FUSED_BORDER = "#e07000"
NHWC_FILL = "#cfe2f3"
TRANSPOSE_FILL = "#e4d7f5"
INPUT_FILL = "#d9ead3"
OUTPUT_FILL = "#f4cccc"
# Values that need no box: their consumers list them.
CONSTANT_OPS = ("glow.constant", "glow.splat")
# A fused location can list many nodes (a conv with its batch norm, bias and activation); a box shows this many.
MAX_NODE_NAMES = 4
GRAPH_FORMATS = ("svg", "png", "pdf")
PLOT_FORMATS = ("png", "svg", "pdf")
DOT_INSTALL = (
    "install Graphviz, which provides it (Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz)"
)
MATPLOTLIB_INSTALL = "install it with pip install 'glow-mlir[viz]' (or pip install matplotlib)"


class PictureError(GlowError):
    """A picture could not be made from this input: no such function, unreadable IR, `dot` failed."""


@dataclass(frozen=True)
class Stages:
    """The module at the two stages the pictures show, each a copy in a context of its own."""

    optimized: ir.Module  # after OPTIMIZED_STAGE: the optimized, scheduled `glow` graph, with locations
    allocated: ir.Module  # after glow-allocate (ABI_STAGE): the `glow_ir` function with its memory plan


def compile_stages(module: ir.Module) -> Stages:
    """Runs the compile pipeline on a copy of `module` up to glow-allocate and keeps the two stages drawn.

    This is compile()'s pipeline without code generation (ResNet-50: about a second); it is run here rather
    than read from `compile(keep_ir=True)` because that keeps text without locations, which name the nodes.
    """
    work = copy_module(module)
    optimized: list[ir.Module] = []

    def keep(element: str, current: ir.Module) -> None:
        if stage_name(element) == OPTIMIZED_STAGE:
            optimized.append(copy_module(current))

    with work.context:
        run_pipeline(work, COMPILE_PIPELINE[: COMPILE_PIPELINE.index(ABI_STAGE) + 1], after_each=keep)
    return Stages(optimized[-1], work)


def _module(module: ir.Module | str) -> ir.Module:
    if isinstance(module, ir.Module):
        return module
    try:
        return ir.Module.parse(module, context=make_context())
    except ir.MLIRError as e:
        notes = "; ".join(f"{d.location}: {d.message}" for d in e.error_diagnostics)
        raise PictureError(f"cannot parse the module: {notes or e}") from None


def _function(module: ir.Module, name: str | None) -> ir.Operation:
    """The function `name`, or the module's only function with a body."""
    found = [f for f in ops.functions(module) if len(f.regions[0].blocks)]
    names = [ir.StringAttr(f.attributes["sym_name"]).value for f in found]
    if name is not None:
        if name not in names:
            raise PictureError(f"the module has no function '{name}' (functions: {', '.join(names) or 'none'})")
        return found[names.index(name)]
    if len(found) != 1:
        listed = ", ".join(names) or "none"
        raise PictureError(f"the module has {len(found)} functions ({listed}): name the one to draw")
    return found[0]


def type_text(t: ir.Type) -> str:
    """`tensor<1x64x56x56xf32>` -> `1x64x56x56 f32`; a scalar shape reads `scalar`."""
    if not isinstance(t, ir.ShapedType):
        return str(t)
    dims = "x".join(map(str, ops.shape(t))) or "scalar"
    return f"{dims} {ops.element_type(t)}"


def _attribute_names(operation: ir.Operation, key: str) -> list[str]:
    """The `glow.name` of each argument (key `arg_attrs`) or result (`res_attrs`) of a function."""
    if key not in operation.attributes:
        return []
    return [
        ir.StringAttr(ir.DictAttr(d)["glow.name"]).value if "glow.name" in ir.DictAttr(d) else ""
        for d in ir.ArrayAttr(operation.attributes[key])
    ]


def activation(operation: ir.Operation) -> str | None:
    """The activation a convolution or matmul applies fused, or None."""
    if "activation" not in operation.attributes:
        return None
    name = ir.StringAttr(operation.attributes["activation"]).value
    return None if name == "none" else name


def is_nhwc(name: str) -> bool:
    """An op of the CPU backend's NHWC layout (glow-cpu-layout)."""
    return name.startswith("glow.cpu_") and name.endswith("_nhwc")


def _constant_text(operation: ir.Operation) -> str:
    t = type_text(operation.results[0].type)
    if operation.name == "glow.splat":
        value = operation.attributes["value"]
        number = ir.FloatAttr(value).value if isinstance(value, ir.FloatAttr) else ir.IntegerAttr(value).value
        return f"splat {number:g} {t}"
    return f"const {t}"


def _html_label(title: str, rows: Sequence[tuple[str, bool]]) -> str:
    """A Graphviz HTML-like label: the title in bold, then one row per (text, small)."""
    cells = [f"<TR><TD><B>{html.escape(title)}</B></TD></TR>"]
    for text, small in rows:
        body = html.escape(text)
        cells.append(f'<TR><TD><FONT POINT-SIZE="9" COLOR="#555555">{body}</FONT></TD></TR>' if small
                     else f"<TR><TD>{body}</TD></TR>")
    return f'<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">{"".join(cells)}</TABLE>>'


def _op_node(node: str, operation: ir.Operation, constants: Sequence[str]) -> str:
    fused = activation(operation)
    names = ops.node_names(operation.location, positions=True)
    rows = [(name, True) for name in names[:MAX_NODE_NAMES]]
    if len(names) > MAX_NODE_NAMES:
        rows.append((f"(+{len(names) - MAX_NODE_NAMES} more nodes)", True))
    rows += [(type_text(r.type), False) for r in operation.results]
    if constants:
        rows.append((", ".join(constants), True))
    if operation.name == "glow.transpose":
        style = f'shape=hexagon, style=filled, fillcolor="{TRANSPOSE_FILL}"'
    else:
        fill = NHWC_FILL if is_nhwc(operation.name) else "white"
        style = f'shape=box, style="rounded,filled", fillcolor="{fill}"'
    if fused:
        style += f', color="{FUSED_BORDER}", penwidth=3'
    title = operation.name + (f" + {fused}" if fused else "")
    return f"  {node} [label={_html_label(title, rows)}, {style}];"


def _legend() -> list[str]:
    entries = [
        ("input", f'shape=invhouse, style=filled, fillcolor="{INPUT_FILL}"'),
        ("output", f'shape=house, style=filled, fillcolor="{OUTPUT_FILL}"'),
        ("NHWC op (glow-cpu-layout)", f'shape=box, style="rounded,filled", fillcolor="{NHWC_FILL}"'),
        ("layout transpose", f'shape=hexagon, style=filled, fillcolor="{TRANSPOSE_FILL}"'),
        ("fused activation",
         f'shape=box, style="rounded,filled", fillcolor="white", color="{FUSED_BORDER}", penwidth=3'),
    ]
    nodes = [f'    legend{i} [label="{text}", fontsize=9, {style}];' for i, (text, style) in enumerate(entries)]
    header = '    label="legend"; fontsize=10; style=dashed; color="#999999";'
    return ["  subgraph cluster_legend {", header, *nodes, "  }"]


def graph_dot(module: ir.Module | str, *, function: str | None = None) -> str:
    """DOT source drawing the dataflow of a `glow` function (the module's only one, or `function`)."""
    # The parsed module owns the function: it must stay referenced while the function is read.
    parsed = _module(module)
    func = _function(parsed, function)
    block = func.regions[0].blocks[0]
    lines = [
        "digraph glow {",
        '  graph [rankdir=TB, fontname="Helvetica", nodesep=0.3, ranksep=0.3];',
        '  node [fontname="Helvetica", fontsize=11, margin="0.1,0.04"];',
        '  edge [color="#555555", arrowsize=0.6];',
        *_legend(),
    ]
    producers: dict[ir.Value, str] = {}
    constants: dict[ir.Value, str] = {}
    input_names = _attribute_names(func, "arg_attrs")
    for k, argument in enumerate(block.arguments):
        name = input_names[k] if k < len(input_names) and input_names[k] else f"argument {k}"
        label = _html_label(f"input {name}", [(type_text(argument.type), False)])
        lines.append(f'  in{k} [label={label}, shape=invhouse, style=filled, fillcolor="{INPUT_FILL}"];')
        producers[argument] = f"in{k}"
    edges: list[str] = []
    for i, op in enumerate(block.operations):
        operation = op.operation
        if operation.name in CONSTANT_OPS:
            constants[operation.results[0]] = _constant_text(operation)
            continue
        if operation.name == "func.return":
            output_names = _attribute_names(func, "res_attrs")
            for k, value in enumerate(operation.operands):
                name = output_names[k] if k < len(output_names) and output_names[k] else f"result {k}"
                # A constant output has no box to come from; its label says what it is instead.
                rows = [(type_text(value.type), False), *([(constants[value], True)] if value in constants else [])]
                label = _html_label(f"output {name}", rows)
                lines.append(f'  out{k} [label={label}, shape=house, style=filled, fillcolor="{OUTPUT_FILL}"];')
                if value in producers:
                    edges.append(f"  {producers[value]} -> out{k};")
            continue
        node = f"n{i}"
        read = [constants[v] for v in operation.operands if v in constants]
        lines.append(_op_node(node, operation, read))
        edges += [f"  {producers[v]} -> {node};" for v in operation.operands if v in producers]
        producers.update((result, node) for result in operation.results)
    return "\n".join([*lines, *edges, "}"]) + "\n"


@contextmanager
def _atomic(target: Path) -> Iterator[Path]:
    """A new file beside `target` that replaces it only when the block succeeds."""
    # Not mkstemp: its files are private (0600), and a picture gets the permissions of any new file (umask).
    tmp = target.parent / f".{target.name}.{secrets.token_hex(6)}{target.suffix}"
    try:
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    except OSError as e:
        raise PictureError(f"cannot write '{target}': {e.strerror}") from None
    try:
        yield tmp
        os.replace(tmp, target)
    except OSError as e:
        raise PictureError(f"cannot write '{target}': {e}") from None
    finally:
        tmp.unlink(missing_ok=True)


def _format(path: Path, formats: Sequence[str], what: str) -> str:
    fmt = path.suffix.lstrip(".").lower()
    if fmt not in formats:
        raise PictureError(f"cannot draw {what} as '{path.name}': name a .{', .'.join(formats)} file")
    return fmt


def _dot() -> str:
    """The path of Graphviz's `dot` program."""
    dot = shutil.which("dot")
    if dot is None:
        raise UnsupportedError(f"drawing a graph needs Graphviz's `dot` program, which is not on PATH: {DOT_INSTALL}")
    return dot


def render(dot_source: str, path: str | os.PathLike[str]) -> None:
    """Draws DOT source with Graphviz's `dot` into `path` (.svg, .png or .pdf, by its suffix)."""
    target = Path(path)
    fmt = _format(target, GRAPH_FORMATS, "a graph")
    dot = _dot()
    with _atomic(target) as tmp:
        done = subprocess.run([dot, f"-T{fmt}", "-o", str(tmp)], input=dot_source, capture_output=True,
                              text=True, check=False)
        if done.returncode != 0:
            raise PictureError(f"dot failed with status {done.returncode}: {done.stderr.strip()}")


@dataclass(frozen=True)
class Rectangle:
    """One activation buffer of the arena: live at instructions start..end (inclusive) in bytes
    offset..offset + size."""

    start: int
    end: int
    offset: int
    size: int
    label: str  # the node(s) whose op writes it, else its type


@dataclass(frozen=True)
class MemoryPlan:
    """The arena of one function after glow-allocate, as glow-allocate decided it."""

    function: str
    buffers: tuple[Rectangle, ...]
    instructions: int
    arena_bytes: int
    peak_live_bytes: int  # the lower bound of any plan: the most bytes live at one instruction
    naive_bytes: int  # the arena if no two buffers shared memory


def _byte_size(t: ir.Type) -> int:
    # As glow-allocate sizes buffers: numpy's itemsize, so an i1 takes one byte.
    count = 1
    for d in ops.shape(t):
        count *= d
    return count * ops.numpy_dtype(ops.element_type(t)).itemsize


def plan_rectangles(module: ir.Module | str, *, function: str | None = None) -> MemoryPlan:
    """The memory plan of a `glow_ir` function after glow-allocate (the module's only one, or `function`).

    Instructions are the ops with operand roles (glow_ir instructions), numbered in program order; a buffer
    is live from the first instruction after its view to the last instruction that uses it.
    """
    # The parsed module owns the function: it must stay referenced while the function is read.
    parsed = _module(module)
    func = _function(parsed, function)
    name = ir.StringAttr(func.attributes["sym_name"]).value
    if not ops.has_attr(func, "glow.arena_bytes"):
        raise PictureError(
            f"function '{name}' has no memory plan (no glow.arena_bytes): draw the module after glow-allocate"
        )
    block = func.regions[0].blocks[0]
    arena_index = [
        i for i, d in enumerate(ir.ArrayAttr(func.attributes["arg_attrs"])) if "glow.arena" in ir.DictAttr(d)
    ]
    # The instruction index at each op: its own for an instruction, the next one's for a view or constant.
    at: dict[ir.Operation, int] = {}
    count = 0
    for op in block.operations:
        at[op.operation] = count
        count += bool(ops.roles(op))
    buffers = []
    for use in block.arguments[arena_index[0]].uses if arena_index else ():
        view = use.owner.operation
        offset_op = view.operands[1].owner if len(view.operands) > 1 else None
        if view.name != "memref.view" or not isinstance(offset_op, ir.OpView) or offset_op.name != "arith.constant":
            raise PictureError(f"'{view.name}' at {ops.location_text(view)} uses the arena otherwise than as a "
                               "memref.view at a constant offset")
        users = [at[u] for u in buffer_users(view.results[0]) if ops.roles(u)]
        start = at[view]
        offset = ir.IntegerAttr(offset_op.attributes["value"]).value
        t = view.results[0].type
        label = ", ".join(ops.node_names(view.location, positions=True)) or type_text(t)
        buffers.append(Rectangle(start, max([start, *users]), offset, _byte_size(t), label))
    buffers.sort(key=lambda b: (b.start, b.offset))
    return MemoryPlan(name, tuple(buffers), count, ops.integer(func, "glow.arena_bytes"),
                      ops.integer(func, "glow.peak_live_bytes"), ops.integer(func, "glow.naive_activation_bytes"))


def _matplotlib() -> tuple[Callable[..., Any], Callable[..., Any], Any]:
    """matplotlib's Figure, Rectangle and colormaps; imported here because it is an optional dependency."""
    try:
        from matplotlib import colormaps
        from matplotlib.figure import Figure
        from matplotlib.patches import Rectangle as Patch
    except ImportError:
        message = f"drawing a memory plan needs matplotlib, which is not installed: {MATPLOTLIB_INSTALL}"
        raise UnsupportedError(message) from None
    return Figure, Patch, colormaps


def _unit(size: int) -> tuple[str, int]:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= 4 * scale:
            return unit, scale
    return "bytes", 1


def _amount(size: int, unit: str, scale: int) -> str:
    return f"{size:,} {unit}" if scale == 1 else f"{size / scale:,.2f} {unit}"


def memory_plan(plan: MemoryPlan, path: str | os.PathLike[str], *, name: str | None = None) -> None:
    """Draws `plan` into `path` (.png, .svg or .pdf): one rectangle per buffer, x its lifetime in instructions,
    y its bytes in the arena, against the arena's size and the peak-live lower bound. The title names `name`
    (e.g. the model file), else the function."""
    target = Path(path)
    fmt = _format(target, PLOT_FORMATS, "a memory plan")
    figure, patch, colormaps = _matplotlib()
    unit, scale = _unit(max(plan.arena_bytes, 1))
    # The Figure API, not pyplot: no global backend or figure state changes in the caller's process.
    fig = figure(figsize=(12, 6), dpi=120, layout="constrained")
    ax = fig.add_subplot()
    colors = colormaps["tab20"]
    for k, b in enumerate(plan.buffers):
        ax.add_patch(patch((b.start, b.offset / scale), b.end - b.start + 1, b.size / scale,
                           facecolor=colors(k % colors.N), edgecolor="black", linewidth=0.4))
    ax.axhline(plan.arena_bytes / scale, color="black", linewidth=1.5,
               label=f"arena: {_amount(plan.arena_bytes, unit, scale)}")
    ax.axhline(plan.peak_live_bytes / scale, color="red", linestyle="--", linewidth=1.5,
               label=f"peak live bytes (lower bound): {_amount(plan.peak_live_bytes, unit, scale)}")
    ax.set_xlim(0, max(plan.instructions, 1))
    ax.set_ylim(0, max(plan.arena_bytes, plan.peak_live_bytes, 1) * 1.25 / scale)
    ax.set_xlabel("instruction index (a buffer spans its lifetime)")
    ax.set_ylabel(f"offset in the arena ({unit})")
    ax.set_title(f"memory plan of {name or plan.function}: {len(plan.buffers)} activation buffers; "
                 f"without sharing {_amount(plan.naive_bytes, unit, scale)}")
    ax.legend(loc="upper right")
    with _atomic(target) as tmp:
        fig.savefig(tmp, format=fmt)


def write_pictures(
    module: ir.Module,
    *,
    graph: str | os.PathLike[str] | None = None,
    plan: str | os.PathLike[str] | None = None,
    name: str | None = None,
) -> None:
    """glow-run's --graph and --memory-plan: draws the optimized graph of a `glow` module and its memory plan
    (titled `name`)."""
    # Bad file names and missing tools fail before the compile, not after it.
    if graph is not None:
        _format(Path(graph), GRAPH_FORMATS, "a graph")
        _dot()
    if plan is not None:
        _format(Path(plan), PLOT_FORMATS, "a memory plan")
        _matplotlib()
    stages = compile_stages(module)
    if graph is not None:
        render(graph_dot(stages.optimized), graph)
    if plan is not None:
        memory_plan(plan_rectangles(stages.allocated), plan, name=name)
