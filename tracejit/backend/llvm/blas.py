"""BLAS entry points for generated code: the Fortran s/d/c/zgemm that SciPy exports as capsules
(`scipy.linalg.cython_blas.__pyx_capi__`). Generated code calls them by a symbol name that the
JIT binds to the capsule's address, so the IR (and the on-disk cache key made from it) does not
change with where the library happens to be loaded."""
from __future__ import annotations

import ctypes
import functools

import numpy as np

_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


@functools.cache
def _address(name: str) -> int:
    from scipy.linalg import cython_blas
    capsule = cython_blas.__pyx_capi__[name]
    return _get_pointer(capsule, _get_name(capsule))


@functools.cache
def gemm_symbol(dtype: np.dtype) -> str:
    """The name generated code calls ?gemm by, bound to SciPy's function for this process."""
    import llvmlite.binding as llvm
    name = {np.dtype(np.float32): "sgemm", np.dtype(np.float64): "dgemm",
            np.dtype(np.complex64): "cgemm", np.dtype(np.complex128): "zgemm"}[np.dtype(dtype)]
    symbol = f"tracejit_scipy_{name}"
    llvm.add_symbol(symbol, _address(name))
    return symbol
