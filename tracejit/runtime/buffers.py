"""Output buffers for native executables, recycled when their Array dies.

A fresh large `np.empty` is fresh pages from the OS: the kernel writing it pays a page fault per
4 KiB (on this class of machine that costs more than the computation of a fused kernel). Buffers
come from a pool of previous outputs instead; an output returns to the pool when its Array is
garbage collected or deleted and nobody else (a NumPy view, an `np.asarray` result) still holds
the memory. The same test decides whether a donated input's buffer may become an output.
"""
from __future__ import annotations

import ctypes
import sys
import threading

import numpy as np

from ..core.array import ALIGN

MIN_BYTES = 1 << 16  # small arrays come from NumPy's own cache quickly enough
# Pooled buffers start at a multiple of ALIGN bytes (a cache line, an AVX-512 vector; XLA's
# alignment too; core.array aligns large arrays made from host data the same way): NumPy's start
# at 16 (mod 64, varying). Newton's iteration on 1M float32 (one thread, input at 16 mod 64):
# best 2.6-3.2 ms with outputs and workspace at 0 mod 64, 2.7-3.3 ms at 16 (about 5%, three runs
# of 60 calls each on the shared machine).
_MAX_POOLED_BYTES = 512 << 20
_PER_SIZE = 4
_addressof = ctypes.addressof
_from_buffer = ctypes.c_char.from_buffer


def address_of(value: np.ndarray) -> int:
    """A writable array's address, the cheap way (`ctypes.data` costs ~1 us more)."""
    try:
        return _addressof(_from_buffer(value))
    except ValueError:  # ml_dtypes' bfloat16 is outside the buffer protocol; a 0-byte array
        return value.ctypes.data


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
    """Free buffers by size. Each is kept as the aligned view last handed out, with its address:
    reusing it costs no `ctypes.data` (~1 us on NumPy's side) and no fresh view (~1 us), which
    was half of a 1M-element relu's fixed cost on top of `x+1`'s (6.4 against 3.9 us of CPU for
    16K elements pooled and not)."""

    def __init__(self) -> None:
        self._free: dict[int, list[tuple[np.ndarray, int]]] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    def empty(self, shape: tuple[int, ...], dtype: np.dtype, nbytes: int) -> tuple[np.ndarray, int]:
        """(a writable C-contiguous buffer of `nbytes` bytes (the caller's count) as `dtype`,
        its address)."""
        if nbytes < MIN_BYTES:
            value = np.empty(shape, dtype)
            return value, address_of(value)
        return self.aligned(shape, dtype, nbytes)

    def aligned(self, shape: tuple[int, ...], dtype: np.dtype, nbytes: int
                ) -> tuple[np.ndarray, int]:
        """`empty`'s buffer from the pool at any size, so at a multiple of ALIGN: a call's
        workspace (given back with give_back). NumPy's small buffers start at 16 mod 64, where
        a kernel's vector temporaries split cache lines, and a load of a split vector just
        stored misses store forwarding (a 3x3 convolution of 32x28x28 images, 1 -> 32
        features, kept its row of 32 sums in the workspace: 2.05 ms a call at 16 mod 64, 0.58
        at 0)."""
        kept = None
        with self._lock:
            bucket = self._free.get(nbytes)
            if bucket:
                kept = bucket.pop()
                self._bytes -= nbytes
        if kept is None:
            owner = np.empty(nbytes + ALIGN, np.uint8)
            address = _addressof(_from_buffer(owner))
            start = -address % ALIGN
            return owner[start:start + nbytes].view(dtype).reshape(shape), address + start
        value, address = kept
        value.setflags(write=True)  # (its base, the owner, always is)
        if value.dtype != dtype or value.shape != shape:  # (another program's, same size)
            value = value.reshape(-1).view(np.uint8).view(dtype).reshape(shape)
        return value, address

    def give_back(self, buf: np.ndarray, address: int) -> None:
        """Return a buffer `aligned` gave, at `address`, known to be unreferenced elsewhere (a
        call's workspace)."""
        self._keep(buf, address)

    def recycle(self, array) -> None:
        """Take back the buffer of a dying or deleted Array if nothing else refers to it."""
        if array._value is None or array._value.base is None or \
                array._value.nbytes < MIN_BYTES:
            return  # (an ndarray of its own is NumPy's, not the pool's)
        if sole_owner(array) is not None:
            self._keep(array._value, array._address or array._value.ctypes.data)

    def _keep(self, value: np.ndarray, address: int) -> None:
        nbytes = value.nbytes
        with self._lock:
            bucket = self._free.setdefault(nbytes, [])
            if len(bucket) < _PER_SIZE and self._bytes + nbytes <= _MAX_POOLED_BYTES:
                bucket.append((value, address))
                self._bytes += nbytes


pool = BufferPool()

# Outputs of at most SLAB_MAX_BYTES come from slabs (`Slab`) on jit's dispatch fast path.
SLAB_MAX_BYTES = 256
# (small, for a result kept alive holds its whole block: logging every 100th step's loss keeps
# 2 KiB a value; a refill, ~1.5 us, then serves 32 or more calls)
_SLAB_BYTES = 2048
_SLAB_STRIDE = 16  # (np.empty's alignment: native code may assume no more of a buffer)


class Slab:
    """Small output buffers of one shape and dtype, cut from read-only blocks of 2 KiB:
    `take()` is a list pop, where a fresh buffer was np.empty, its address and setflags
    (~0.3 us of a small program's ~2 us call). Each buffer is a read-only view (the native
    program writes it through its address; NumPy refuses to make a view of a read-only
    owner writable); a block is freed when its last view dies. Such outputs are never a
    donated buffer's new owner (`sole_owner`: the block has other users): donating one
    copies its few bytes instead. Thread-safe (list.pop and list.extend are atomic)."""
    __slots__ = ("_count", "_dtype", "_free", "_nbytes", "_shape", "_stride")

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, nbytes: int):
        assert 0 < nbytes <= SLAB_MAX_BYTES
        self._free: list[tuple[np.ndarray, int]] = []
        self._shape, self._dtype, self._nbytes = shape, dtype, nbytes
        self._stride = -(-nbytes // _SLAB_STRIDE) * _SLAB_STRIDE
        self._count = _SLAB_BYTES // self._stride

    def take(self) -> tuple[np.ndarray, int]:
        """(a read-only buffer nobody else holds, its address)."""
        try:
            return self._free.pop()
        except IndexError:
            return self.refill()

    def refill(self) -> tuple[np.ndarray, int]:
        """A new block's buffers: one returned, the rest kept for later calls."""
        stride, count, shape = self._stride, self._count, self._shape
        owner = np.empty(count * stride + _SLAB_STRIDE, np.uint8)
        address = _addressof(_from_buffer(owner))
        start = -address % _SLAB_STRIDE
        owner.setflags(write=False)  # (before the views: they are read-only with it)
        rows = owner[start:start + count * stride].reshape(count, stride)[:, :self._nbytes] \
            .view(self._dtype)
        # (made by NumPy's iteration, ~50 ns a view; a rank-0 view by indexing with `...`)
        views = [rows[i, 0, ...] for i in range(count)] if not shape else \
            list(rows.reshape(count, *shape))
        if views[-1].base is not owner:  # (never: NumPy made a copy, not views)
            raise AssertionError("a slab's views do not share its memory")
        cuts = [(v, address + start + i * stride) for i, v in enumerate(views)]
        self._free.extend(cuts[:0:-1])
        return cuts[0]
