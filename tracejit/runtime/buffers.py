"""Output buffers for native executables, recycled when their Array dies.

A fresh large `np.empty` is fresh pages from the OS: the kernel writing it pays a page fault per
4 KiB (on this class of machine that costs more than the computation of a fused kernel). Buffers
come from a pool of previous outputs instead; an output returns to the pool when its Array is
garbage collected and nobody else (a NumPy view, `np.asarray` result) still holds the memory.
"""
from __future__ import annotations

import sys
import threading

import numpy as np

_MIN_BYTES = 1 << 16  # small arrays come from NumPy's own cache quickly enough
_MAX_POOLED_BYTES = 512 << 20
_PER_SIZE = 4


class BufferPool:
    def __init__(self) -> None:
        self._free: dict[int, list[np.ndarray]] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        nbytes = int(np.prod(shape)) * dtype.itemsize
        if nbytes >= _MIN_BYTES:
            with self._lock:
                bucket = self._free.get(nbytes)
                if bucket:
                    owner = bucket.pop()
                    self._bytes -= nbytes
                    owner.flags.writeable = True
                    return owner.reshape(-1).view(np.uint8).view(dtype).reshape(shape)
        return np.empty(shape, dtype)

    def give_back(self, buf: np.ndarray) -> None:
        """Return a buffer known to be unreferenced elsewhere (a call's workspace)."""
        if buf.base is None and buf.nbytes >= _MIN_BYTES:
            with self._lock:
                bucket = self._free.setdefault(buf.nbytes, [])
                if len(bucket) < _PER_SIZE and self._bytes + buf.nbytes <= _MAX_POOLED_BYTES:
                    bucket.append(buf)
                    self._bytes += buf.nbytes

    def recycle(self, array) -> None:
        """Take back the buffer of a dying Array if nothing else refers to its memory.

        Called from Array.__del__ with the Array; NumPy views always point `.base` at the
        array that owns the memory, so one refcount check on the owner suffices."""
        value = array._value
        owner = value if value.base is None else value.base
        if owner.base is not None or owner.nbytes < _MIN_BYTES:
            return
        del value
        # refs to the owner: `owner` here, getrefcount's argument, and the Array's `_value`
        # (or the view's `.base`); anything more is somebody else's reference
        if sys.getrefcount(owner) > 3:
            return
        with self._lock:
            bucket = self._free.setdefault(owner.nbytes, [])
            if len(bucket) < _PER_SIZE and self._bytes + owner.nbytes <= _MAX_POOLED_BYTES:
                bucket.append(owner)
                self._bytes += owner.nbytes


pool = BufferPool()
