"""Memory optimizations on the address-only `glow_ir` dialect, its verifier, and static allocation."""
