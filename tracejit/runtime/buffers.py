"""Output buffers for native executables, recycled when their Array dies.

A fresh large `np.empty` is fresh pages from the OS: the kernel writing it pays a page fault per
4 KiB (on this class of machine that costs more than the computation of a fused kernel). Buffers
come from a pool of previous outputs instead; an output returns to the pool when its Array is
garbage collected or deleted and nobody else (a NumPy view, an `np.asarray` result) still holds
the memory. The same test decides whether a donated input's buffer may become an output.
"""
from __future__ import annotations

import sys
import threading

import numpy as np

from ..core.array import ALIGN, aligned_view

MIN_BYTES = 1 << 16  # small arrays come from NumPy's own cache quickly enough
# Pooled buffers start at a multiple of ALIGN bytes (a cache line, an AVX-512 vector; XLA's
# alignment too; core.array aligns large arrays made from host data the same way): NumPy's start
# at 16 (mod 64, varying). Newton's iteration on 1M float32 (one thread, input at 16 mod 64):
# best 2.6-3.2 ms with outputs and workspace at 0 mod 64, 2.7-3.3 ms at 16 (about 5%, three runs
# of 60 calls each on the shared machine).
_MAX_POOLED_BYTES = 512 << 20
_PER_SIZE = 4


def sole_owner(array) -> np.ndarray | None:
    """The ndarray owning an Array's memory if that Array is its only user, else None.

    Pooled outputs are views of an owner (NumPy points every view's `.base` at the owner), so
    both the Array's ndarray and its owner are counted. Works from `Array.__del__` too."""
    value = array._value
    # refs to value: `value` here, getrefcount's argument, and the Array's `_value`
    if value is None or sys.getrefcount(value) > 3:
        return None
    owner = value if value.base is None else value.base
    del value
    if not isinstance(owner, np.ndarray) or owner.base is not None:
        return None
    # refs to the owner: `owner` here, getrefcount's argument, and `_value` or the view's `.base`
    return owner if sys.getrefcount(owner) <= 3 else None


class BufferPool:
    def __init__(self) -> None:
        self._free: dict[int, list[np.ndarray]] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    def empty(self, shape: tuple[int, ...], dtype: np.dtype, nbytes: int) -> np.ndarray:
        """A writable C-contiguous buffer of `nbytes` bytes (the caller's count) as `dtype`."""
        if nbytes < MIN_BYTES:
            return np.empty(shape, dtype)
        owner = None
        with self._lock:
            bucket = self._free.get(nbytes + ALIGN)  # (owners are ALIGN bytes longer)
            if bucket:
                owner = bucket.pop()
                self._bytes -= owner.nbytes
        if owner is None:
            owner = np.empty(nbytes + ALIGN, np.uint8)
        owner.setflags(write=True)
        return aligned_view(owner, nbytes, dtype, shape)

    def give_back(self, buf: np.ndarray) -> None:
        """Return a buffer known to be unreferenced elsewhere (a call's workspace)."""
        if buf.base is None and buf.nbytes >= MIN_BYTES:
            self._keep(buf)

    def recycle(self, array) -> None:
        """Take back the buffer of a dying or deleted Array if nothing else refers to it."""
        if array._value is None or array._value.base is None or \
                array._value.nbytes < MIN_BYTES:
            return  # (an ndarray of its own is NumPy's, not the pool's: its size is no owner's
            # `empty` looks up, which are ALIGN bytes longer than their views, so kept it would
            # only hold memory)
        owner = sole_owner(array)
        if owner is not None:
            self._keep(owner)

    def _keep(self, owner: np.ndarray) -> None:
        with self._lock:
            bucket = self._free.setdefault(owner.nbytes, [])
            if len(bucket) < _PER_SIZE and self._bytes + owner.nbytes <= _MAX_POOLED_BYTES:
                bucket.append(owner)
                self._bytes += owner.nbytes


pool = BufferPool()
