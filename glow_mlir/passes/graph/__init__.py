"""Graph optimizations on the `glow` dialect (Glow's graph passes) and the graph verifier."""
