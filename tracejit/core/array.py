"""Array: the immutable concrete value (on CPU a read-only NumPy buffer plus its aval).

Operators and methods (`+`, `[]`, `.at`, `.sum()`, ...) are attached by tracejit.numpy's
array_methods, the same ones tracers get, so eager and traced code behave alike.
"""
from __future__ import annotations

import abc
import enum
import gc
import os
import sys
from typing import Any

import numpy as np

from .avals import ArrayMetadata, ShapedArray
from .devices import check_device, process_index
from .config import config
from .sharding import Shard, SingleDeviceSharding, default_sharding

# Large buffers made from host data (jnp.asarray/array, device_put, copies) start at a multiple
# of ALIGN bytes, as XLA's do: NumPy's large allocations start at 16 (mod 64), where every
# 64-byte vector load spans two cache lines. A whole-array sum of 10M float32 on one core took
# 770-790 us from such a buffer, 580-590 us from an aligned one (a C loop: 840 vs 510-530 us).
ALIGN = 64
ALIGN_MIN_BYTES = 1 << 16


def aligned_copy(x: Any, dtype: Any = None) -> np.ndarray:
    """A writable C-contiguous copy of x (as `dtype`) that nobody else holds; from
    ALIGN_MIN_BYTES on it starts at a multiple of ALIGN bytes (a view of a slightly longer
    owner, as the native buffer pool's outputs are)."""
    x = np.asarray(x)
    dtype = x.dtype if dtype is None else np.dtype(dtype)
    nbytes = x.size * dtype.itemsize
    if nbytes < ALIGN_MIN_BYTES:
        return np.array(x, dtype=dtype)
    out = aligned_view(np.empty(nbytes + ALIGN, np.uint8), nbytes, dtype, x.shape)
    np.copyto(out, x, casting="unsafe")
    return out


def aligned_view(owner: np.ndarray, nbytes: int, dtype: Any, shape: tuple) -> np.ndarray:
    """The `nbytes` of `owner` (uint8, at least nbytes + ALIGN long) from its first multiple
    of ALIGN, as a `dtype` array of `shape`."""
    start = -owner.ctypes.data % ALIGN
    return owner[start:start + nbytes].view(dtype).reshape(shape)


class DLDeviceType(enum.IntEnum):
    """DLPack's device codes, as JAX names them (`Array.__dlpack_device__()[0]`)."""
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLROCM = 10


# jax_default_device as the sharding uncommitted arrays made now report (None: device 0): the
# process-wide value's; while some thread is inside a `with jax.default_device(...)` block
# (`_homes_local`), each array reads its own thread's
_HOME: Any = None
_homes_local = False
_HOMES: dict = {}  # device -> its sharding, for the with-blocks' values


def _home_of(device: Any) -> Any:
    if device is not None and device != "cpu":
        check_device(device, "jax.default_device")
    if device in (None, "cpu") or device is default_sharding()._device:
        return None
    home = _HOMES.get(device)
    if home is None:
        home = _HOMES[device] = SingleDeviceSharding(device)
    return home


def _set_home(device: Any) -> None:
    global _HOME
    _HOME = _home_of(device)


def _thread_home_changed(device: Any) -> None:
    global _homes_local
    _home_of(device)  # (raises for a device not of this process: the with-block does not begin)
    _homes_local = config.overridden("jax_default_device")


def _thread_home() -> Any:
    return _home_of(config.read("jax_default_device"))


config.watch("jax_default_device", _set_home, local=_thread_home_changed)


class Array(ArrayMetadata):
    __slots__ = ("_value", "aval", "_deleted", "_address", "_pool", "_sharding", "_home",
                 "__weakref__")
    __array_priority__ = 100

    def __init__(self, value: np.ndarray, aval: ShapedArray, address: int = 0, pool=None):
        self._value = value  # None once deleted
        # a concrete value varies over no manual mesh axis (a type built from a shard_map
        # value's, such as a cotangent's ones, must not say it does)
        self.aval = aval.update(vma=frozenset()) if getattr(aval, "vma", None) else aval
        self._deleted = False
        self._address = address  # 0: not looked up yet
        self._pool = pool  # the buffer pool of a native output (see runtime.buffers)
        # None: all of it on device 0, uncommitted (see `sharding` and `committed`)
        self._sharding = None
        # where it lives uncommitted: the jax_default_device in effect when it was made (None:
        # device 0). Only what it reports: every device reads this process's memory.
        self._home = _HOME if not _homes_local else _thread_home()

    def __del__(self, _finalizing=sys.is_finalizing):
        # a native output: its buffer may serve the next call — unless Python is shutting
        # down, when the pool's module may already be torn down (its globals None)
        if self._pool is not None and not _finalizing():
            self._pool.recycle(self)

    @staticmethod
    def from_numpy(value: Any, aval: ShapedArray, *, fresh: bool = False) -> Array:
        """An Array holding `value`'s buffer, frozen (a copy where value is a view: never
        freeze somebody else's memory). `fresh`: value is a buffer of the caller's making that
        nobody else holds (aligned_copy's view), frozen as it is."""
        v = np.asarray(value)
        if v.dtype != aval.dtype:
            v = v.astype(aval.dtype)
        if not v.flags.c_contiguous:  # native code reads buffers as dense row-major
            v = np.ascontiguousarray(v)
        if v.flags.writeable:
            if not (fresh or v.flags.owndata or v.base is None):
                v = v.copy()  # never freeze a view of somebody else's buffer
            v.flags.writeable = False
        return Array(v, aval)

    # -- metadata
    nbytes = property(lambda self: self.aval.size * self.aval.dtype.itemsize)
    itemsize = property(lambda self: self.aval.dtype.itemsize)

    @property
    def address(self) -> int:
        """The buffer's address, for native calls (cached: ndarray.ctypes is slow)."""
        if not self._address:
            self._address = self._data.ctypes.data
        return self._address

    def unsafe_buffer_pointer(self) -> int:
        """JAX's name for the buffer's address."""
        return self.address

    @property
    def _data(self) -> np.ndarray:
        if self._deleted:
            raise RuntimeError(
                f"Array has been deleted with shape={self.dtype.name}"
                f"[{','.join(map(str, self.shape))}]. It was donated to a "
                "jitted function (donate_argnums/donate_argnames) or deleted explicitly: use "
                "the function's output instead, or stop donating this argument.")
        return self._value

    # -- conversion to Python / NumPy
    def __array__(self, dtype=None, copy=None):
        v = self._data
        if copy:
            return np.array(v, dtype=dtype)
        return v if dtype is None else v.astype(dtype, copy=False)

    def item(self, *args):
        return self._data.item(*args)

    def tolist(self):
        return self._data.tolist()

    def __bool__(self):
        return bool(self._data)

    def __int__(self):
        self._check_scalar()
        return int(self._data)

    def __float__(self):
        self._check_scalar()
        return float(self._data)

    def __complex__(self):
        self._check_scalar()
        return complex(self._data)

    def _check_scalar(self):
        if self.ndim > 0:  # (JAX's TypeError; NumPy's names 0-dimensional arrays)
            raise TypeError(f"Only scalar arrays can be converted to Python scalars; "
                            f"got arr.ndim={self.ndim}")

    def __index__(self):
        if self.dtype.kind not in "iu" or self.ndim > 0:
            raise TypeError("Only integer scalar arrays can be converted to a scalar index.")
        return self._data.__index__()

    def __hash__(self):
        raise TypeError("unhashable type: 'Array'. Static arguments of jit must be hashable; "
                        "pass arrays as ordinary (traced) arguments.")

    def __setitem__(self, idx, value):
        raise TypeError("JAX arrays are immutable and do not support in-place item assignment. "
                        "Instead of x[idx] = y, use x = x.at[idx].set(y).")

    def __reduce__(self):
        return (_rebuild, (np.array(self._data), self.aval.weak_type))

    def __repr__(self) -> str:
        self._data  # noqa: B018 - a deleted array raises JAX's error here too, as JAX's repr does
        weak = ", weak_type=True" if self.weak_type else ""
        prefix = "Array("
        if self.size == 0 and self.shape != (0,):
            body = f"[], shape={self.shape}"
        else:
            body = np.array2string(self._value, separator=", ", prefix=prefix)
        return f"{prefix}{body}, dtype={self.dtype.name}{weak})"

    def __str__(self) -> str:
        return str(self._data)

    def __format__(self, spec: str) -> str:
        if self.ndim == 0:
            return format(self._data[()], spec)
        return format(self._data, spec)

    # -- runtime
    def block_until_ready(self) -> Array:
        return self

    def copy_to_host_async(self) -> None:
        pass

    def delete(self) -> None:
        if self._deleted:
            return
        if self._pool is not None:
            self._pool.recycle(self)
        self._deleted = True
        self._value, self._address, self._pool = None, 0, None

    def _take_buffer(self) -> tuple[np.ndarray, int, Any]:
        """Hand this Array's buffer (value, address, pool) to a new owner; this Array is
        deleted (donation: a native output was written into this memory)."""
        taken = (self._value, self.address, self._pool)
        self._deleted = True
        self._value, self._address, self._pool = None, 0, None
        return taken

    def is_deleted(self) -> bool:
        return self._deleted

    def copy(self) -> Array:
        """A copy where the array is (committed where it was, as JAX's copy)."""
        out = Array.from_numpy(aligned_copy(self._data), self.aval, fresh=True)
        out._sharding, out._home = self._sharding, self._home
        return out

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self.copy()

    def devices(self):
        return set(self.sharding.device_set)

    @property
    def device(self):
        """The device holding the array; for an array over several devices, its sharding
        (as JAX)."""
        s = self.sharding
        return next(iter(s.device_set)) if len(s.device_set) == 1 else s

    @property
    def sharding(self):
        """How the array is laid out over devices (device_put or jit's out_shardings place
        it; anything else lives on device 0). All devices share this process's memory: the
        data is one buffer whatever the sharding."""
        if self._sharding is not None:
            return self._sharding
        return self._home if self._home is not None else default_sharding()

    @property
    def committed(self) -> bool:
        """Whether the array was placed (device_put to a device or sharding, or computed from
        a placed array): jit and eager operations then run where it is, or refuse devices
        elsewhere. One never placed lives on device 0 uncommitted and goes where it is used."""
        return self._sharding is not None

    def placed(self, sharding: Any) -> Array:
        """This array laid out as `sharding`, and so committed to its devices (a copy: never
        two owners of one buffer, which donation could overwrite)."""
        if sharding is None or sharding == self._sharding:
            return self
        out = Array.from_numpy(aligned_copy(self._data), self.aval, fresh=True)
        out._sharding = sharding
        return out

    @property
    def addressable_shards(self) -> list:
        """Each device's piece of the array (index: the slices of the global array it holds;
        replica_id: which copy, where several devices hold the same piece), in the order of
        the sharding's devices (a mesh's, as JAX lists them: reversed for a reversed mesh)."""
        s = self.sharding
        replicas = s.replica_ids(self.shape) if hasattr(s, "replica_ids") else {}
        return [Shard(d, index, replicas.get(d, 0), self._piece(index))
                for d, index in s.devices_indices_map(self.shape).items()
                if d.process_index == process_index()]

    def _piece(self, index: tuple) -> Array:
        if all(i == slice(None) for i in index):
            return self
        piece = self._data[index]
        return Array.from_numpy(piece, self.aval.update(shape=piece.shape))

    global_shards = addressable_shards

    def to_device(self, device: Any, *, stream: Any = None) -> Array:
        """This array placed on `device` (the CPU device, or None): itself, as it lives there."""
        if stream is not None:
            raise NotImplementedError("stream argument of array.to_device()")
        check_device(device, "to_device")
        return self

    # -- DLPack: the NumPy buffer is exported (so np.from_dlpack(x) shares memory)
    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[DLDeviceType, int] | None = None,
                   copy: bool | None = None):
        """A DLPack capsule of this array's buffer. Consumers that only speak DLPack < 1.0
        cannot be told the buffer is read-only, so they get a copy (copy=False: BufferError)."""
        v = self._data
        if max_version is None or max_version[0] < 1:
            if copy is False:
                raise BufferError("an immutable Array can be exported without a copy only to "
                                  "DLPack >= 1.0 consumers (max_version=(1, 0)), which are "
                                  "told that the buffer is read-only")
            v, copy = np.array(v), None
        return v.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device,
                            copy=copy)

    def __dlpack_device__(self) -> tuple[DLDeviceType, int]:
        return DLDeviceType.kDLCPU, 0

    def to_concrete_value(self):
        return self._data

    @property
    def is_fully_addressable(self) -> bool:
        return self.sharding.is_fully_addressable

    @property
    def is_fully_replicated(self) -> bool:
        """Whether every device of its sharding holds all of it (jax.Array's property)."""
        return self.sharding.is_fully_replicated


# --- jax_array_garbage_collection_guard: an Array freed by the cycle collector, not by reference
# counting, held its memory until a collection ran. While "log" or "fatal" is set, Array's
# finalizer is a checking one and a gc callback says when a collection runs; otherwise neither
# exists (nothing on the path of an ordinary deletion).
_COLLECTING = False
_GC_MESSAGE = ("`jax.Array` was deleted by the Python garbage collector instead of reference "
               "counting. Break the reference cycle that delays the deletion of this `jax.Array` "
               "to avoid hogging memory.")
_plain_del = Array.__del__


def _gc_phase(phase: str, info: dict) -> None:
    global _COLLECTING
    _COLLECTING = phase == "start"


def _guarded_del(self, _finalizing=sys.is_finalizing):
    if _COLLECTING:  # (the level of the thread the collection runs in, as JAX reads it)
        level = config.read("jax_array_garbage_collection_guard")
        if level == "fatal":
            os.write(2, f"Fatal: {_GC_MESSAGE}\n".encode())
            os.abort()  # (JAX's fatal level ends the process)
        if level == "log":
            _logger.error(_GC_MESSAGE)
    _plain_del(self, _finalizing)


_GC_GUARD = "jax_array_garbage_collection_guard"
_gc_global_level: str | None = None
_logger = None  # the `tracejit` logger, once a guard is set (no import inside a finalizer)


def _install_gc_guard() -> None:
    """The checking finalizer while the process-wide level or some thread's with-block logs or
    is fatal; it reads the collecting thread's level."""
    global _logger
    guarded = _gc_global_level in ("log", "fatal") or config.overridden(_GC_GUARD)
    if guarded and _logger is None:
        import logging  # (here: `import tracejit` need not import it for this)
        _logger = logging.getLogger("tracejit")
    Array.__del__ = _guarded_del if guarded else _plain_del
    if guarded and _gc_phase not in gc.callbacks:
        gc.callbacks.append(_gc_phase)
    elif not guarded and _gc_phase in gc.callbacks:
        gc.callbacks.remove(_gc_phase)


def _set_gc_guard(level: str | None) -> None:
    global _gc_global_level
    _gc_global_level = level
    _install_gc_guard()


config.watch(_GC_GUARD, _set_gc_guard, local=lambda level: _install_gc_guard())
_set_gc_guard(config.read(_GC_GUARD))  # ($JAX_ARRAY_GARBAGE_COLLECTION_GUARD)


def _rebuild(value: np.ndarray, weak_type: bool) -> Array:
    return Array.from_numpy(value, ShapedArray(value.shape, value.dtype, weak_type))


class BaseArray(abc.ABC):
    """The array type users see as `jax.Array` / `jnp.ndarray`: concrete Arrays and tracers
    both are instances (`isinstance(x, jax.Array)` holds inside jit, vmap and grad, as in
    JAX). Inside tracejit, `Array` is the concrete type and `Tracer` the traced one."""
    __slots__ = ()


BaseArray.__name__ = BaseArray.__qualname__ = "Array"
BaseArray.register(Array)
