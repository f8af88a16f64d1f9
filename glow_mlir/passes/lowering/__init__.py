"""From the graph to instructions: node lowering, the memory-aware scheduler, and IRGen (bufferization)."""
