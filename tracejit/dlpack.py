"""jax.dlpack: arrays from other libraries' buffers through the DLPack protocol (NumPy's
`__dlpack__` on this CPU runtime). User-facing; loaded on first use (`jax.dlpack`). The other
direction is `Array.__dlpack__` (core/array.py): np.from_dlpack(x) shares the Array's memory."""
from __future__ import annotations

from typing import Any

import numpy as np

from .core import dtypes
from .core.array import ALIGN
from .numpy._array_api import from_dlpack as _from_dlpack

# JAX's list: what a DLPack tensor may hold to become an Array
SUPPORTED_DTYPES = frozenset(np.dtype(t) for t in (
    np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, np.float32, np.float64, np.complex64, np.complex128, np.bool_))


def is_supported_dtype(dtype: Any) -> bool:
    """Whether an array of `dtype` can cross DLPack into an Array."""
    if dtype is None:  # (NumPy would read None as float64)
        raise TypeError(f"Expected a string or dtype-like object; got {dtype=}")
    dtype = dtypes.np_dtype(dtype)  # (and bfloat16, once ml_dtypes is loaded: core/dtypes.py)
    return dtype in SUPPORTED_DTYPES or dtype == dtypes.bfloat16


def from_dlpack(external_array: Any, device: Any = None, copy: bool | None = None) -> Any:
    """An Array of a DLPack-exporting array (`__dlpack__` and `__dlpack_device__`).

    copy=None shares the producer's memory where JAX's CPU client does — a C-contiguous
    buffer of a canonical dtype that starts at a multiple of 64 bytes — and copies otherwise;
    copy=False shares it always (any address), or raises ValueError when the values need
    converting; copy=True copies. Writing to a shared buffer afterwards is, as in JAX,
    undefined behaviour (the Array is immutable)."""
    if copy is None:
        try:
            view = np.from_dlpack(external_array, copy=False)
        except (TypeError, BufferError, AttributeError):
            view = None
        shareable = view is not None and view.ctypes.data % ALIGN == 0 and \
            view.flags.c_contiguous and dtypes.is_supported(view.dtype) and \
            dtypes.canonicalize_dtype(view.dtype) == view.dtype
        copy = not shareable
    return _from_dlpack(external_array, device=device, copy=copy)


__all__ = ["from_dlpack", "is_supported_dtype"]
