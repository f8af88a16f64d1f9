"""ONNX Einsum as transposes, reshapes, gathers, sums and (batched) matmuls.

The equation is parsed into one label per dim (an ellipsis becomes labels counted from the right, so that
ellipses of different ranks broadcast as numpy aligns them); an implicit output is the ellipsis, then the
labels used once, in alphabetical order (numpy's rule). Each operand first loses its repeated labels (a
diagonal: one gather from the two dims merged), then the labels no other operand and not the output needs
(summed). The operands are then multiplied left to right, each pair as one matmul over
[shared kept labels (batch), labels of the left only, summed shared labels] x [batch, summed, right only].
Float16 and bfloat16 operands are computed in float32 and rounded once, as the spec's reference does.
"""

from __future__ import annotations

import math
import string
from collections.abc import Sequence

import ml_dtypes
import numpy as np

from glow_mlir.frontends.onnx.node import NodeContext, Value, dtype, rank, shape
from glow_mlir.frontends.onnx.registry import handles

Term = list[str]
_LOW_PRECISION = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


def _ellipsis(count: int) -> Term:
    """The labels of `count` ellipsis dims, named by their distance from the right end."""
    return [f"...{count - 1 - i}" for i in range(count)]


def _term(ctx: NodeContext, text: str, dims: int | None) -> Term:
    """The labels of one side of the equation; `dims` is the operand's rank (None for the output)."""
    head, dots, tail = text.partition("...")
    letters = head + tail
    if "." in letters or any(c not in string.ascii_letters for c in letters):
        raise ctx.invalid(f"term '{text}' must be letters with at most one '...'")
    if dims is None:
        return [*head, *(["..."] if dots else []), *tail]
    extra = dims - len(letters)
    if extra < 0 or (extra > 0 and not dots):
        raise ctx.invalid(f"term '{text}' does not match an operand of rank {dims}")
    return [*head, *_ellipsis(extra), *tail]


def _parse(ctx: NodeContext, equation: str, ranks: Sequence[int]) -> tuple[list[Term], Term]:
    inputs, arrow, output = equation.replace(" ", "").partition("->")
    texts = inputs.split(",")
    if len(texts) != len(ranks):
        raise ctx.invalid(f"equation '{equation}' has {len(texts)} operands, the node {len(ranks)} inputs")
    terms = [_term(ctx, text, r) for text, r in zip(texts, ranks, strict=True)]
    widest = _ellipsis(max((sum(label.startswith("...") for label in t) for t in terms), default=0))
    if not arrow:
        used = [label for t in terms for label in t if not label.startswith("...")]
        return terms, [*widest, *sorted(label for label in set(used) if used.count(label) == 1)]
    out = _term(ctx, output, None)
    out = [label for o in out for label in (widest if o == "..." else [o])]
    known = {label for t in terms for label in t}
    if len(set(out)) != len(out) or not set(out) <= known:
        raise ctx.invalid(f"the output of '{equation}' repeats a label or names one no operand has")
    return terms, out


def _sizes(ctx: NodeContext, terms: Sequence[Term], values: Sequence[Value]) -> dict[str, int]:
    """Each label's size; 1 broadcasts against any size, as numpy's einsum allows."""
    sizes: dict[str, int] = {}
    for term, v in zip(terms, values, strict=True):
        for label, d in zip(term, shape(v), strict=True):
            if sizes.get(label, 1) not in (1, d) and d != 1:
                raise ctx.invalid(f"label '{label}' has sizes {sizes[label]} and {d}")
            sizes[label] = max(sizes.get(label, 1), d)
    return sizes


def _diagonal(ctx: NodeContext, v: Value, term: Term) -> tuple[Value, Term]:
    """`v` with each repeated label reduced to its diagonal (the label moves last)."""
    while len(set(term)) != len(term):
        label = next(lab for lab in term if term.count(lab) > 1)
        p = term.index(label)
        q = term.index(label, p + 1)
        n = shape(v)[p]
        if shape(v)[q] != n:
            raise ctx.invalid(f"label '{label}' repeats with sizes {n} and {shape(v)[q]}")
        rest = [i for i in range(rank(v)) if i not in (p, q)]
        moved = ctx.transpose(v, [*rest, p, q])
        merged = ctx.reshape(moved, [*(shape(v)[i] for i in rest), n * n])
        v = ctx.g.gather(merged, np.arange(n, dtype=np.int64) * (n + 1), len(rest))
        term = [*(term[i] for i in rest), label]
    return v, term


def _prepared(
    ctx: NodeContext, v: Value, term: Term, sizes: dict[str, int], needed: set[str]
) -> tuple[Value, Term]:
    """`v` broadcast to every label's size, with the labels `needed` does not name summed out."""
    full = [sizes[label] for label in term]
    if list(shape(v)) != full:
        v = ctx.g.broadcast(v, full, 0)
    drop = [i for i, label in enumerate(term) if label not in needed]
    if drop:
        v = ctx.g.batched_reduce_add(v, drop)
        term = [label for label in term if label in needed]
    return v, term


def _product(
    ctx: NodeContext, a: Value, a_term: Term, b: Value, b_term: Term, keep: set[str], sizes: dict[str, int]
) -> tuple[Value, Term]:
    """a * b summed over the labels both have and `keep` does not name, as one matmul."""
    batch = [label for label in a_term if label in b_term and label in keep]
    summed = [label for label in a_term if label in b_term and label not in keep]
    left = [label for label in a_term if label not in b_term]
    right = [label for label in b_term if label not in a_term]

    def arranged(v: Value, term: Term, groups: Sequence[Term]) -> Value:
        order = [term.index(label) for group in groups for label in group]
        return ctx.reshape(ctx.transpose(v, order), [math.prod(sizes[label] for label in g) for g in groups])

    lhs, rhs = arranged(a, a_term, [batch, left, summed]), arranged(b, b_term, [batch, summed, right])
    if shape(lhs)[0] == 1:
        product = ctx.g.matmul(ctx.reshape(lhs, shape(lhs)[1:]), ctx.reshape(rhs, shape(rhs)[1:]))
    else:
        product = ctx.g.batch_matmul(lhs, rhs)
    term = [*batch, *left, *right]
    return ctx.reshape(product, [sizes[label] for label in term]), term


@handles("Einsum")
def einsum(ctx: NodeContext) -> list[Value]:
    values = [ctx.input(i) for i in range(len(ctx.node.input))]
    terms, out = _parse(ctx, str(ctx.attr("equation")), [rank(v) for v in values])
    sizes = _sizes(ctx, terms, values)
    result_type = dtype(values[0])
    if any(dtype(v) != result_type for v in values):
        raise ctx.invalid("operands must have one element type, got " + ", ".join(str(dtype(v)) for v in values))
    if result_type == np.bool_:
        raise ctx.invalid("Einsum takes numbers, got bool")
    if result_type in _LOW_PRECISION:
        values = [ctx.convert(v, np.dtype(np.float32)) for v in values]
    prepared = [_diagonal(ctx, v, list(t)) for v, t in zip(values, terms, strict=True)]

    def needed_after(i: int) -> set[str]:
        """Labels the output or an operand after the i-th still needs; the rest are summed at once."""
        return {label for _, t in prepared[i + 1 :] for label in t} | set(out)

    acc, acc_term = _prepared(ctx, *prepared[0], sizes, needed_after(0))
    for i, (v, term) in enumerate(prepared[1:], 1):
        later = needed_after(i)
        acc, acc_term = _prepared(ctx, acc, acc_term, sizes, later | set(term))
        v, term = _prepared(ctx, v, term, sizes, later | set(acc_term))
        acc, acc_term = _product(ctx, acc, acc_term, v, term, later, sizes)
    acc = ctx.transpose(acc, [acc_term.index(label) for label in out])
    return [ctx.convert(acc, result_type)]
