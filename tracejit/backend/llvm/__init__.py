"""The LLVM backend: IR for fused kernels, vectorisable math polynomials, the process JIT."""
# the rule families fill rules' tables as they are imported; codegen's Emitter then reads them
from . import (bits, control_flow, convolution, ffi_call, fft, host_callback,  # noqa: F401
               identities, index_maps, indexing, lapack, linalg, reductions, sorting, windowed)
