"""The CPU backend: NHWC layout, direct convolution and packed-GEMM schedules, vector code, LLVM and JIT."""
