"""Model importers: each turns a model of another framework into a `glow_mlir.Graph`."""
