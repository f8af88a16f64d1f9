"""onnx's backend test suite run through glow_mlir.onnx_backend: the cases, a crash-safe parallel runner, and the
updater that rewrites passing.txt and docs/SupportedOps.md (`python test/onnx_backend/update.py`)."""
