"""Typed errors that the compiler raises for bad input or a failed stage."""

from __future__ import annotations


class GlowError(Exception):
    """Base of every error glow-mlir raises on purpose."""


class VerificationError(GlowError):
    """A `glow` or `glow_ir` op breaks a rule of its dialect.

    The message names the op, its location (the model node, for imported models) and the rule broken.
    """

    def __init__(self, op_name: str, location: str, rule: str) -> None:
        self.op_name = op_name
        self.location = location
        self.rule = rule
        super().__init__(f"{location}: '{op_name}' {rule}")


class PipelineError(GlowError):
    """A pass pipeline could not be parsed, or one of its passes failed."""


class UnsupportedError(GlowError):
    """The input uses something that this compiler does not implement yet."""


class ModelTooLargeError(GlowError, MemoryError):
    """A compiled model would need more memory to run (its outputs and arena) than this machine has."""


class ModelImportError(GlowError):
    """A model could not be imported; the base of the importers' errors."""


class MalformedModelError(ModelImportError):
    """A model file or byte string that is not a valid model (truncated, corrupt, inconsistent)."""


class UnsupportedModelError(ModelImportError, UnsupportedError):
    """A model uses ops the importer does not implement; lists every one of them, found in one scan.

    `nodes` holds one `(op_type, opset, node name)` per unsupported node.
    """

    def __init__(self, nodes: list[tuple[str, int, str]], detail: str = "") -> None:
        self.nodes = nodes
        # The If nodes whose compile-time condition took a branch before the import stopped, and that branch.
        self.taken_branches: dict[str, str] = {}
        lines = [f"  {op} (opset {opset}) at node '{name}'" for op, opset, name in nodes]
        head = f"the model uses {len(nodes)} unsupported node(s){': ' + detail if detail else ''}:"
        super().__init__("\n".join([head, *lines]))


class UnsupportedAttributeError(ModelImportError, UnsupportedError):
    """A supported op with an attribute value (or input form) that the importer does not implement."""

    def __init__(self, node: str, op_type: str, attribute: str, detail: str) -> None:
        self.node = node
        self.op_type = op_type
        self.attribute = attribute
        super().__init__(f"node '{node}' ({op_type}): attribute '{attribute}': {detail}")


class UnsupportedTypeError(ModelImportError, UnsupportedError):
    """A tensor of an element type that glow-mlir has no element type for (string, complex, ...), or that the op
    at `where` does not take."""

    def __init__(self, where: str, type_name: str) -> None:
        self.where = where
        self.type_name = type_name
        super().__init__(f"{where}: element type {type_name} is not supported here")


class EmptyTensorError(ModelImportError, UnsupportedError):
    """A valid model in which a tensor with a zero dimension would have to exist at run time.

    glow has no empty tensors. An empty value holds no data, so the importer keeps it as a compile-time
    array: one that nothing needs at run time (an unused Split output, a Concat input, a graph input used
    only for its type) is fine; this error names where one would have to be materialized.
    """


class DynamicShapeError(ModelImportError):
    """A tensor dimension that is not known at compile time and cannot be made static."""


class FeedError(GlowError, ValueError):
    """Arrays or shapes fed to a model contradict it (missing or extra input, dtype, rank, a dim).

    The message names the input and, for a shape, the dim. A ValueError too, as onnxruntime's feed errors
    are caught by callers.
    """


class StaticInputRequired(ModelImportError):
    """Graph inputs decide a shape (a Reshape's shape, Slice bounds, ...); bind them with `static_inputs`.

    `inputs` names those graph inputs; `node` names the node that needs them, `value` the ONNX value it needs
    (InferenceSession compiles per value a graph input that is one, and splits the model at a value computed
    from them: session.py).
    """

    def __init__(self, inputs: list[str], node: str, op_type: str, what: str, value: str | None = None) -> None:
        self.inputs = inputs
        self.node = node
        self.value = value
        super().__init__(
            f"node '{node}' ({op_type}): {what} must be known at compile time but depends on graph input(s) "
            f"{', '.join(repr(i) for i in inputs)}; pass their values with static_inputs="
        )


class InvalidNodeError(ModelImportError):
    """A node whose inputs or attributes break the op's rules (the message names the node and op)."""
