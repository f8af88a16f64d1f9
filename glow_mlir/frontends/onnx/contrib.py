"""onnxruntime's contrib ops that its graph optimizer writes into the models it saves, imported as bodies of
default-domain ops, the way functions.py imports an ONNX op that its schema defines as a function.

A user who saves a session's optimized graph (`SessionOptions.optimized_model_filepath`, at the
ORT_ENABLE_EXTENDED level, or onnxruntime.transformers' optimizer) gets a model of fused ops of domain
com.microsoft: each of the 22 zoo models of bench/'s broad set did (Conv + activation as FusedConv, MatMul +
Transpose + scale as FusedMatMul, the GELU forms, SiLU as QuickGelu, Add + LayerNormalization as
SkipLayerNormalization, RMS norms as SimplifiedLayerNormalization, which onnxruntime puts in the default domain);
onnxruntime.transformers' and optimum's optimizers also fuse a BERT's self-attention (Attention; or
MultiHeadAttention, the projections apart) and its embeddings (EmbedLayerNormalization). Each is written here
as the default-domain ops it stands for (`BODIES`), which the importer imports with their usual checks, and
which glow's own graph passes fuse again as they fuse them in the original model. The semantics are
onnxruntime's CPU kernels', checked against them (test_onnx_contrib*.py). Other modules join the registry:
contrib_quant.py (its quantizer's QOperator format), contrib_decoder.py (LLM exports: MatMulNBits,
GroupQueryAttention, RotaryEmbedding), contrib_nchwc.py (the NCHWc ops of its ORT_ENABLE_ALL saves)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper

from glow_mlir.errors import InvalidNodeError, UnsupportedModelError

CONTRIB_DOMAIN = "com.microsoft"
# The default-domain opset the bodies are written for: Gelu's (20), ReduceMean's axes as an input (18).
BODY_OPSET = 20


class Body:
    """The default-domain nodes that stand for one contrib node (`node`, named `name` in the model), built by
    a function of BODIES: its inputs, their types and its attributes, and `add` for each new node."""

    def __init__(self, node: onnx.NodeProto, name: str, input_types: Sequence[onnx.TypeProto | None]) -> None:
        self.node, self.name, self.types = node, name, list(input_types)
        self.attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        self.nodes: list[onnx.NodeProto] = []
        self.count = 0
        # The default-domain opset the body's nodes are imported under: BODY_OPSET unless a body needs a newer op.
        self.opset = BODY_OPSET

    def input(self, i: int) -> str:
        """The name of input `i`, '' where absent."""
        return self.node.input[i] if i < len(self.node.input) else ""

    def rank(self, i: int) -> int:
        t = self.types[i]
        assert t is not None, "the importer gives every tensor input its type"
        return len(t.tensor_type.shape.dim)

    def dims(self, i: int) -> list[int]:
        """The static dims of input `i`."""
        t = self.types[i]
        assert t is not None
        return [d.dim_value for d in t.tensor_type.shape.dim]

    def dtype(self, i: int) -> np.dtype:
        t = self.types[i]
        assert t is not None
        return helper.tensor_dtype_to_np_dtype(t.tensor_type.elem_type)

    def attr(self, key: str, default: object = None) -> object:
        return self.attrs.get(key, default)

    def without(self, *names: str) -> dict[str, object]:
        """The node's attributes but `names`: those it passes on to the op its body writes."""
        return {key: value for key, value in self.attrs.items() if key not in names}

    def text(self, key: str, default: str = "") -> str:
        """String attribute `key` (onnx gives bytes)."""
        value = self.attrs.get(key, default)
        return value.decode() if isinstance(value, bytes) else str(value)

    def wanted(self, i: int) -> bool:
        """Whether the model uses output `i`."""
        return i < len(self.node.output) and bool(self.node.output[i])

    def output(self, i: int) -> str:
        """The name of output `i` where the model uses it, else a fresh one."""
        return self.node.output[i] if self.wanted(i) else self.fresh(f"output{i}")

    def fresh(self, stem: str) -> str:
        """A value name of its own, in the node's scope."""
        self.count += 1
        return f"{self.name}/{stem}_{self.count}"

    def add(self, op_type: str, inputs: Sequence[str], outputs: int | Sequence[str] = 1, **attrs: object) -> str:
        """A new node; its first output's name (fresh names for `outputs` outputs, or the given ones)."""
        names = [self.fresh(op_type) for _ in range(outputs)] if isinstance(outputs, int) else list(outputs)
        self.nodes.append(helper.make_node(op_type, list(inputs), names, name=f"{op_type}_{len(self.nodes)}",
                                           **attrs))  # fmt: skip
        return names[0]

    def constant(self, value: float | Sequence[int] | np.ndarray, dtype: np.dtype | type) -> str:
        return self.add("Constant", [], value=numpy_helper.from_array(np.asarray(value, dtype)))

    def refuse(self, detail: str) -> UnsupportedModelError:
        op = f"{self.node.domain}.{self.node.op_type}" if self.node.domain else self.node.op_type
        return UnsupportedModelError([(op, 1, self.name)], detail)


BodyFn = Callable[[Body], None]
# (domain, op type) -> the function that writes the op's body.
BODIES: dict[tuple[str, str], BodyFn] = {}


def body(*op_types: str, domain: str = CONTRIB_DOMAIN) -> Callable[[BodyFn], BodyFn]:
    def register(fn: BodyFn) -> BodyFn:
        for op in op_types:
            BODIES[(domain, op)] = fn
        return fn

    return register


def _key(node: onnx.NodeProto) -> tuple[str, str]:
    return ("" if node.domain == "ai.onnx" else node.domain, node.op_type)


def has_body(node: onnx.NodeProto) -> bool:
    return _key(node) in BODIES


def expand(node: onnx.NodeProto, name: str, opset: int,
           input_types: Sequence[onnx.TypeProto | None]) -> tuple[list[onnx.NodeProto], int]:  # fmt: skip
    """The body of contrib node `node` (named `name`), and the default-domain opset it is written for (the
    model's `opset` does not matter: functions.expand's signature)."""
    b = Body(node, name, input_types)
    BODIES[_key(node)](b)
    return b.nodes, b.opset


# Products.


def _transposed(b: Body, value: str, rank: int, batch: bool, last: bool) -> str:
    """`value` of `rank` with its first dim moved behind the batch dims (`batch`, onnxruntime's transBatch:
    [M, B1, .., K] read as [B1, .., M, K]), then its last two swapped (`last`)."""
    if rank < 2 or not (batch or last):
        return value
    perm = list(range(rank))
    if batch and rank > 2:
        perm = [*range(1, rank - 1), 0, rank - 1]
    if last:
        perm[-2], perm[-1] = perm[-1], perm[-2]
    return b.add("Transpose", [value], perm=perm) if perm != list(range(rank)) else value


@body("FusedMatMul", "TransposeMatMul")
def fused_matmul(b: Body) -> None:
    """alpha * op(A) @ op(B): each operand's last two dims swapped (transA, transB) after its first dim is moved
    behind its batch dims (transBatchA, transBatchB)."""
    batch = bool(b.attr("transBatchA", 0)) or bool(b.attr("transBatchB", 0))
    if batch and not (b.rank(0) == b.rank(1) and b.rank(0) > 2):
        raise InvalidNodeError(f"node '{b.name}' ({CONTRIB_DOMAIN}.FusedMatMul): transBatchA and transBatchB take "
                               f"operands of one rank, 3 or more; got ranks {b.rank(0)} and {b.rank(1)}")
    a = _transposed(b, b.input(0), b.rank(0), bool(b.attr("transBatchA", 0)), bool(b.attr("transA", 0)))
    w = _transposed(b, b.input(1), b.rank(1), bool(b.attr("transBatchB", 0)), bool(b.attr("transB", 0)))
    alpha = float(b.attr("alpha", 1.0))
    if alpha == 1.0:
        b.add("MatMul", [a, w], [b.output(0)])
        return
    product = b.add("MatMul", [a, w])
    b.add("Mul", [product, b.constant(alpha, b.dtype(0))], [b.output(0)])


def _activation(b: Body, x: str, name: str, params: Sequence[float], out: str) -> None:
    """Activation `name` of onnxruntime's fused ops (MLAS's: Relu, Tanh, Sigmoid, LeakyRelu, Clip,
    HardSigmoid; HardSwish, which its NCHWc Conv fuses) on x, into `out`."""
    if name in ("Relu", "Tanh", "Sigmoid", "HardSwish"):
        b.add(name, [x], [out])
    elif name == "LeakyRelu":
        b.add("LeakyRelu", [x], [out], alpha=float(params[0]) if params else 0.01)
    elif name == "HardSigmoid":
        alpha, beta = (list(params) + [0.2, 0.5][len(params):])[:2]
        b.add("HardSigmoid", [x], [out], alpha=float(alpha), beta=float(beta))
    elif name == "Clip":
        if len(params) != 2:
            raise b.refuse(f"a Clip activation takes 2 activation_params (min, max), got {len(params)}")
        dtype = b.dtype(0)
        b.add("Clip", [x, b.constant(params[0], dtype), b.constant(params[1], dtype)], [out])
    else:
        raise b.refuse(f"activation '{name}' is not one of onnxruntime's fused activations")


def conv_activated(b: Body, x: str, w: str, bias: str, z: str) -> None:
    """Output 0 = activation(Conv(x, w, bias) + z) (bias and z '' where absent): the node's Conv attributes,
    `activation` and its `activation_params` (FusedConv's, and the NCHWc Conv's of contrib_nchwc.py)."""
    conv = b.add("Conv", [x, w, *([bias] if bias else [])], **b.without("activation", "activation_params"))
    if z:
        conv = b.add("Add", [conv, z])
    name = b.text("activation")
    if not name:
        b.add("Identity", [conv], [b.output(0)])
        return
    _activation(b, conv, name, list(b.attr("activation_params", [])), b.output(0))


@body("FusedConv")
def fused_conv(b: Body) -> None:
    """activation(Conv(X, W, B) + Z): the Conv's attributes, `activation` and its `activation_params`."""
    conv_activated(b, b.input(0), b.input(1), b.input(2), b.input(3))


@body("FusedGemm")
def fused_gemm(b: Body) -> None:
    """activation(Gemm(A, B, C)): the Gemm's attributes, `activation` and its activation_alpha/beta."""
    inputs = [b.input(i) for i in range(3) if b.input(i)]
    names = ("activation", "activation_alpha", "activation_beta", "activation_gamma")
    gemm = b.add("Gemm", inputs, **b.without(*names))
    params = [b.attr(k) for k in ("activation_alpha", "activation_beta") if b.attr(k) is not None]
    _activation(b, gemm, b.text("activation"), [float(p) for p in params], b.output(0))


# GELU and SiLU forms.


@body("Gelu")
def gelu(b: Body) -> None:
    """x / 2 * (1 + erf(x / sqrt 2))."""
    b.add("Gelu", [b.input(0)], [b.output(0)])


@body("BiasGelu")
def bias_gelu(b: Body) -> None:
    """Gelu(A + B)."""
    b.add("Gelu", [b.add("Add", [b.input(0), b.input(1)])], [b.output(0)])


@body("FastGelu")
def fast_gelu(b: Body) -> None:
    """GELU's tanh form of X (+ bias)."""
    x = b.add("Add", [b.input(0), b.input(1)]) if b.input(1) else b.input(0)
    b.add("Gelu", [x], [b.output(0)], approximate="tanh")


@body("QuickGelu")
def quick_gelu(b: Body) -> None:
    """x * sigmoid(alpha * x) (alpha 1.702; 1 for SiLU, as onnxruntime fuses it)."""
    alpha = float(b.attr("alpha", 1.702))
    x = b.input(0)
    scaled = x if alpha == 1.0 else b.add("Mul", [x, b.constant(alpha, b.dtype(0))])
    b.add("Mul", [x, b.add("Sigmoid", [scaled])], [b.output(0)])


# Normalizations.


def _skip_sum(b: Body, bias_input: int) -> str:
    """input + skip (+ bias), into output 3 (input_skip_bias_sum) where the model uses it."""
    total = b.add("Add", [b.input(0), b.input(1)])
    if b.input(bias_input):
        total = b.add("Add", [total, b.input(bias_input)])
    if b.wanted(3):
        b.add("Identity", [total], [b.output(3)])
    return total


@body("SkipLayerNormalization")
def skip_layer_normalization(b: Body) -> None:
    """LayerNormalization(input + skip + bias) over the last axis, times gamma plus beta; the mean, the
    inverse standard deviation and the sum as its other outputs."""
    total = _skip_sum(b, 4)
    inputs = [total, b.input(2), *([b.input(3)] if b.input(3) else [])]
    b.add("LayerNormalization", inputs, [b.output(0), b.output(1), b.output(2)], axis=-1,
          epsilon=float(b.attr("epsilon", 1e-12)))  # fmt: skip


def _rms(b: Body, x: str, scale: str, axis: int, rank: int, epsilon: float, dtype: np.dtype, out: str,
         inv_std: str | None) -> None:  # fmt: skip
    """x (of `dtype`) / sqrt(mean(x^2 over axis..last) + epsilon) * scale into `out`; the inverse into
    `inv_std`."""
    first = axis % rank
    mean = b.add("ReduceMean", [b.add("Mul", [x, x]), b.constant(list(range(first, rank)), np.int64)], keepdims=1)
    shifted = b.add("Add", [mean, b.constant(epsilon, dtype)])
    inverse = b.add("Reciprocal", [b.add("Sqrt", [shifted])], [inv_std] if inv_std else 1)
    b.add("Mul", [b.add("Mul", [x, inverse]), scale], [out])


@body("SkipSimplifiedLayerNormalization")
def skip_simplified_layer_normalization(b: Body) -> None:
    """The RMS norm of input + skip + bias over the last axis, times gamma; the inverse root mean square and
    the sum as its other outputs."""
    if b.wanted(1):
        raise b.refuse("output 1 (mean) is not computed by an RMS norm")
    total = _skip_sum(b, 3)
    _rms(b, total, b.input(2), -1, b.rank(0), float(b.attr("epsilon", 1e-12)), b.dtype(0), b.output(0),
         b.output(2) if b.wanted(2) else None)  # fmt: skip


@body("SimplifiedLayerNormalization", domain="")
def simplified_layer_normalization(b: Body) -> None:
    """X / sqrt(mean(X^2 over axis..last) + epsilon) * scale, the inverse as output 1; a float16 X computed in
    float32 (stash_type 1) and rounded once."""
    x, scale = b.input(0), b.input(1)
    half = b.dtype(0) == np.float16 and int(b.attr("stash_type", 1)) == 1
    if half:
        x = b.add("Cast", [x], to=onnx.TensorProto.FLOAT)
        scale = b.add("Cast", [scale], to=onnx.TensorProto.FLOAT)
    out = b.fresh("y") if half else b.output(0)
    _rms(b, x, scale, int(b.attr("axis", -1)), b.rank(0), float(b.attr("epsilon", 1e-5)),
         np.dtype(np.float32) if half else b.dtype(0), out, b.output(1) if b.wanted(1) else None)  # fmt: skip
    if half:
        b.add("Cast", [out], [b.output(0)], to=onnx.TensorProto.FLOAT16)


# BERT-class blocks of onnxruntime.transformers' optimizer (and optimum's O2+).


@body("EmbedLayerNormalization")
def embed_layer_normalization(b: Body) -> None:
    """LayerNormalization(word[ids] + position[position_ids or 0..S-1] + segment[segment_ids]); output 1 the
    number of nonzero mask entries of each row (int32), output 2 the sum before the norm."""
    ids = b.input(0)
    batch, sequence = (d.dim_value for d in b.types[0].tensor_type.shape.dim)
    total = b.add("Gather", [b.input(2), ids])
    if b.input(8):
        positions = b.input(8)
    else:
        positions = b.constant(np.arange(sequence, dtype=np.int64)[None], np.int64)
    total = b.add("Add", [total, b.add("Gather", [b.input(3), positions])])
    if b.input(1) and b.input(4):
        total = b.add("Add", [total, b.add("Gather", [b.input(4), b.input(1)])])
    if b.wanted(2):
        b.add("Identity", [total], [b.output(2)])
    b.add("LayerNormalization", [total, b.input(5), b.input(6)], [b.output(0)], axis=-1,
          epsilon=float(b.attr("epsilon", 1e-12)))  # fmt: skip
    if b.wanted(1):
        if b.input(7):
            nonzero = b.add("Cast", [b.add("Not", [b.add("Equal", [b.input(7), b.constant(0, b.dtype(7))])])],
                            to=onnx.TensorProto.INT32)  # fmt: skip
            b.add("ReduceSum", [nonzero, b.constant([1], np.int64)], [b.output(1)], keepdims=0)
        else:
            b.add("Identity", [b.constant(np.zeros(batch, np.int32), np.int32)], [b.output(1)])


def split_heads(b: Body, x: str, batch: int, sequence: int, heads: int, size: int, perm: list[int]) -> str:
    """[B, S, N x size] as [B, N, S, size] permuted by `perm` (of [B, S, N, size])."""
    shaped = b.add("Reshape", [x, b.constant([batch, sequence, heads, size], np.int64)])
    return b.add("Transpose", [shaped], perm=perm)


def _key_mask(b: Body, mask: int, batch: int, sequence: int, keys: int) -> str:
    """Where input `mask` (onnxruntime's mask_index forms) masks a key, as booleans [B, 1, 1 or S, keys]. 1-D of
    B: each row's valid length (keys from it on masked); 1-D of 2B: ends then starts; 2-D [B, keys] or 3-D
    [B, S, keys]: a zero entry masks its key."""
    dims, name = b.dims(mask), b.input(mask)
    if len(dims) == 1:
        positions = b.constant(np.arange(keys, dtype=np.int32)[None], np.int32)
        as_column = b.constant([batch, 1], np.int64)
        bounds = b.add("Cast", [name], to=onnx.TensorProto.INT32)
        if dims[0] == batch:
            masked = b.add("Not", [b.add("Less", [positions, b.add("Reshape", [bounds, as_column])])])
        elif dims[0] == 2 * batch:
            ends, starts = (b.add("Reshape", [b.add("Slice", [bounds, b.constant([s], np.int64),
                                                              b.constant([s + batch], np.int64)]), as_column])
                            for s in (0, batch))  # fmt: skip
            masked = b.add("Or", [b.add("Not", [b.add("Less", [positions, ends])]), b.add("Less", [positions, starts])])
        else:
            raise b.refuse(f"a 1-D mask of {dims[0]} entries is neither B ({batch}) nor 2B")
        return b.add("Reshape", [masked, b.constant([batch, 1, 1, keys], np.int64)])
    if len(dims) not in (2, 3):
        raise b.refuse(f"a {len(dims)}-D mask is not supported (1-D, 2-D and 3-D are)")
    masked = b.add("Equal", [name, b.constant(0, b.dtype(mask))])
    rows = 1 if len(dims) == 2 else sequence
    return b.add("Reshape", [masked, b.constant([batch, 1, rows, keys], np.int64)])


def _attend(b: Body, q: str, k: str, v: str, lengths: tuple[int, int, int], sizes: tuple[int, int, int],
            mask: int, bias: int) -> None:  # fmt: skip
    """Output 0: softmax(Q K^T * scale + masks) V per head, heads joined, for q [B, S, Hq], k [B, L, Hq],
    v [B, L, Hv] (`lengths` B, S, L; `sizes` heads, Hq, Hv), as onnxruntime's CPU kernels compute it: a key
    masked by input `mask` (`_key_mask`) gets mask_filter_value added, input `bias` (attention_bias) is added,
    and with unidirectional=1 each query weighs the keys up to its own only."""
    (batch, sequence, keys), (heads, width, values) = lengths, sizes
    if width % heads or values % heads:
        raise b.refuse(f"{heads} heads do not split widths {width} and {values}")
    dtype = b.dtype(0)
    head = width // heads
    q = split_heads(b, q, batch, sequence, heads, head, [0, 2, 1, 3])
    k = split_heads(b, k, batch, keys, heads, head, [0, 2, 3, 1])
    v = split_heads(b, v, batch, keys, heads, values // heads, [0, 2, 1, 3])
    scale = float(b.attr("scale", 0.0)) or 1 / np.sqrt(head)
    scores = b.add("Mul", [b.add("MatMul", [q, k]), b.constant(scale, dtype)])
    if b.input(mask):
        dims = b.dims(mask)
        # [1, 1] or [B, 1]: onnxruntime's dummy mask, no mask at all.
        if not (len(dims) == 2 and dims[1] == 1 and keys > 1):
            masked = _key_mask(b, mask, batch, sequence, keys)
            fill = float(b.attr("mask_filter_value", -10000.0))
            added = b.add("Where", [masked, b.constant(fill, dtype), b.constant(0.0, dtype)])
            scores = b.add("Add", [scores, added])
    if b.input(bias):
        scores = b.add("Add", [scores, b.input(bias)])
    if int(b.attr("unidirectional", 0)):
        if keys != sequence:
            raise b.refuse(f"unidirectional=1 over {keys} keys for {sequence} queries (past state) is not supported")
        # onnxruntime's causal softmax runs over the keys up to the query's own: the later ones weigh nothing, even
        # where the key mask masks all the earlier ones (-inf here; key 0 always stays).
        causal = b.constant(np.triu(np.ones((sequence, sequence), bool), 1), np.bool_)
        scores = b.add("Where", [causal, b.constant(-np.inf, dtype), scores])
    context = b.add("MatMul", [b.add("Softmax", [scores], axis=-1), v])
    joined = b.add("Transpose", [context], perm=[0, 2, 1, 3])
    b.add("Reshape", [joined, b.constant([batch, sequence, values], np.int64)], [b.output(0)])


@body("Attention")
def attention(b: Body) -> None:
    """Multi-head self-attention of X [B, S, H] with packed weights [H, Hq + Hk + Hv] and bias: softmax(Q K^T *
    scale + masks) V per head, as onnxruntime computes it (`_attend`), mask_index input 3, attention_bias input
    5. No past state (input 4, output 1) and no rotary embedding."""
    if b.input(4) or b.wanted(1) or b.input(6):
        raise b.refuse("past and present key/value state is not supported")
    if int(b.attr("do_rotary", 0)):
        raise b.refuse("do_rotary=1 is not supported")
    heads = int(b.attr("num_heads"))
    batch, sequence, _ = b.dims(0)
    width = b.dims(1)[1]
    sizes = [int(s) for s in b.attr("qkv_hidden_sizes", [])] or [width // 3] * 3
    if sum(sizes) != width or sizes[0] != sizes[1]:
        raise b.refuse(f"qkv_hidden_sizes {sizes} do not split the weights' {width} columns")
    qkv = b.add("MatMul", [b.input(0), b.input(1)])
    if b.input(2):
        qkv = b.add("Add", [qkv, b.input(2)])
    q, k, v = (b.fresh(part) for part in "qkv")
    b.add("Split", [qkv, b.constant(sizes, np.int64)], [q, k, v], axis=-1)
    _attend(b, q, k, v, (batch, sequence, sequence), (heads, sizes[0], sizes[2]), 3, 5)


@body("MultiHeadAttention")
def multi_head_attention(b: Body) -> None:
    """Multi-head attention of query [B, S, Hq] over key [B, L, Hq] and value [B, L, Hv], their bias [Hq + Hq +
    Hv] added first: softmax(Q K^T * scale + masks) V per head (`_attend`), key_padding_mask input 4,
    attention_bias input 5. Packed query/key/value forms, past state and its cache (inputs 6-9, outputs 1-3) are
    not supported."""
    if any(b.input(i) for i in range(6, 10)) or any(b.wanted(i) for i in (1, 2, 3)):
        raise b.refuse("past and present key/value state is not supported")
    if not (b.input(1) and b.input(2)) or b.rank(0) != 3 or b.rank(1) != 3 or b.rank(2) != 3:
        raise b.refuse("packed query/key/value forms are not supported (query, key and value of rank 3 are)")
    heads = int(b.attr("num_heads"))
    (batch, sequence, width), keys, values = b.dims(0), b.dims(1)[1], b.dims(2)[2]
    q, k, v = b.input(0), b.input(1), b.input(2)
    if b.input(3):
        parts = [b.fresh(part) for part in "qkv"]
        b.add("Split", [b.input(3), b.constant([width, width, values], np.int64)], parts, axis=0)
        q, k, v = (b.add("Add", [x, bias]) for x, bias in zip((q, k, v), parts, strict=True))
    _attend(b, q, k, v, (batch, sequence, keys), (heads, width, values), 4, 5)
