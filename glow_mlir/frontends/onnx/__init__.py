"""The ONNX importer: `import_model(model) -> glow_mlir.Graph` (see importer.py for what it accepts)."""

from glow_mlir.frontends.onnx.importer import SUPPORTED_OPS, import_model

__all__ = ["SUPPORTED_OPS", "import_model"]
