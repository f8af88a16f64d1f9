"""glow-merge-pad-into-conv: merges an explicit spatial pad into the convolution or pooling that reads it
(Glow's MergePadIntoConvolution).

An ONNX Pad, and glow-lower's expansion of padded convs and pools, both appear in the graph as
`insert_tensor(splat(v), x, start = [0, 0, top, left])`: x surrounded by a border of v. A convolution or
pool pads its input itself, so the border becomes part of its `pads` and x is read directly, which is the
graph-level canonical form (the CPU backend's glow-lower expands it again; other backends keep it whole).
The border must be spatial only (x and the padded tensor agree on N and C) and its value must be the one
the op pads with:

- convolution: 0 (products with the border add nothing);
- max_pool: -inf (padding never wins the max);
- avg_pool: 0, and the op then counts padding in its windows (countIncludePads): allowed when the op already
  counts its pads or has none, because the explicit zeros were counted as real elements.

The new pads are the op's pads plus the border. A merge that glow-verify's pool rule would reject (a window
made only of padding) is skipped. The insert_tensor stays while other ops read it.
"""

from __future__ import annotations

import math

from mlir import ir

from glow_mlir import ops

from glow_mlir.opdefs import shapes
from glow_mlir.passes.graph import utils as g
from glow_mlir.passes.registry import register

PAD_VALUE = {"glow.convolution": 0.0, "glow.max_pool": -math.inf, "glow.avg_pool": 0.0}


def _border(value: ir.Value, fill: float) -> tuple[ir.Value, list[int]] | None:
    """(x, [top, left, bottom, right]) when `value` is x inside a spatial border of `fill`, else None."""
    insert = g.producer(value)
    if insert is None or insert.name != "glow.insert_tensor":
        return None
    big, x = insert.operands
    if not g.is_uniform(big, fill):
        return None
    big_shape, x_shape = ops.shape(big), ops.shape(x)
    start = ops.ints(insert, "start")
    if len(big_shape) != 4 or big_shape[:2] != x_shape[:2] or start[:2] != [0, 0]:
        return None
    top, left = start[2], start[3]
    bottom = big_shape[2] - x_shape[2] - top
    right = big_shape[3] - x_shape[3] - left
    return x, [top, left, bottom, right]


def _merged(op: ir.Operation) -> ir.Value | None:
    found = _border(op.operands[0], PAD_VALUE[op.name])
    if found is None:
        return None
    x, border = found
    attrs = g.attributes(op)
    pads = [p + b for p, b in zip(ops.ints(op, "pads"), border, strict=True)]
    if op.name == "glow.avg_pool":
        if not ops.integer(op, "countIncludePads") and any(ops.ints(op, "pads")):
            return None
        attrs["countIncludePads"] = ops.boolean(True)
    if op.name != "glow.convolution":
        try:
            shapes.pool(ops.shape(x), kernels=ops.ints(op, "kernels"), strides=ops.ints(op, "strides"), pads=pads)
        except shapes.ShapeError:
            return None
    attrs["pads"] = ops.i64_array(pads)
    with ir.InsertionPoint(op), op.location:
        return g.make(op.name, [x, *list(op.operands)[1:]], op.results[0].type, attrs)


def merge_function(function: ir.Operation) -> bool:
    return g.rewrite_ops(function, lambda op: _merged(op) if op.name in PAD_VALUE else None)


@register("glow-merge-pad-into-conv")
def merge_pad_into_conv(module: ir.Module) -> None:
    """Merge a zero (or -inf) spatial border built with splat + insert_tensor into the conv's or pool's pads."""
    g.run_on_functions(module, merge_function, fixed_point=False)
