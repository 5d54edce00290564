"""BLAS entry points for generated code: the Fortran s/d/c/zgemm that SciPy exports as capsules
(`scipy.linalg.cython_blas.__pyx_capi__`); generated code calls them through their address."""
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


def gemm_address(dtype: np.dtype) -> int:
    return _address({np.dtype(np.float32): "sgemm", np.dtype(np.float64): "dgemm",
                     np.dtype(np.complex64): "cgemm",
                     np.dtype(np.complex128): "zgemm"}[np.dtype(dtype)])
