"""The LLVM backend: IR for fused kernels, vectorisable math polynomials, the process JIT."""
