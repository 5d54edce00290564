"""Several processes (user-facing): `jax.distributed.initialize()` joins the processes that
`mpiexec -n P python prog.py` started — MPI (mpi4py, imported only here and in core/mpi.py)
is the transport, so there is no coordinator service of our own — and arrays spanning them:
`make_array_from_callback`, `make_array_from_process_local_data`,
`make_array_from_single_device_arrays`.
"""
from __future__ import annotations

import os
import shutil
import sys
from typing import Any, Callable, Sequence

import numpy as np

from .core import devices as _devices, mpi
from .core.array import Array
from .core.global_array import GlobalArray, block_of, is_one_block, piece, pieces_of
from .core.sharding import NamedSharding, axes_across_processes
from .core.trace import get_aval
from .runtime.devices import to_array
from . import shard_map_processes  # noqa: F401  (sets how jit runs across processes)

__all__ = ["initialize", "shutdown", "is_initialized"]

_initialized = False


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None,
               local_device_ids: int | Sequence[int] | None = None,
               cluster_detection_method: str | None = None, initialization_timeout: int = 300,
               heartbeat_timeout_seconds: int = 100, shutdown_timeout_seconds: int = 300,
               coordinator_bind_address: str | None = None, slice_index: int | None = None,
               partition_index: int | None = None) -> None:
    """Join the processes `mpiexec -n P` started: this process's index and the number of
    processes come from MPI's COMM_WORLD (rank, size); `num_processes` and `process_id`, when
    given, must agree with them. Afterwards `jax.devices()` lists every process's devices,
    `jax.local_devices()` this one's, and shard_map over a mesh of them runs each process's
    part here, with collectives between processes through MPI. Call it before any other
    tracejit call, as JAX's. The coordinator and timeout arguments are JAX's and are not
    needed: MPI connects the processes."""
    global _initialized
    if _initialized:
        raise RuntimeError("distributed.initialize should only be called once.")
    if cluster_detection_method not in (None, "mpi4py", "deactivate"):
        raise ValueError(f"cluster_detection_method={cluster_detection_method!r}: tracejit "
                         f"joins processes through MPI; start them with mpiexec and pass None")
    for name, value in (("process_id", process_id), ("num_processes", num_processes)):
        if value is not None and (not isinstance(value, (int, np.integer)) or value < 0):
            raise TypeError(f"{name} must be a nonnegative int. Got {name}={value!r} of "
                            f"type {type(value)}.")
    comm = mpi.world()
    size, rank = comm.Get_size(), comm.Get_rank()
    if num_processes is not None and num_processes != size:
        raise ValueError(f"distributed.initialize(num_processes={num_processes}), but MPI "
                         f"started {size} processes: start the program with `mpiexec -n "
                         f"{num_processes}` (or drop the argument)")
    if process_id is not None and process_id != rank:
        raise ValueError(f"distributed.initialize(process_id={process_id}), but this is MPI "
                         f"rank {rank}: drop the argument (each process's id is its rank)")
    if local_device_ids is not None:
        ids = [local_device_ids] if isinstance(local_device_ids, int) else \
            list(local_device_ids)
        n = _devices._configured_count()
        if ids != list(range(n)):
            raise ValueError(f"local_device_ids={ids}: each process uses all of its {n} CPU "
                             f"devices (set their number with $TRACEJIT_NUM_CPU_DEVICES)")
    _devices.set_processes(size, rank)
    counts = mpi.allgather(np.asarray(_devices._configured_count(), np.int64),
                           tuple(range(size)), "distributed.initialize")
    if len(set(counts.tolist())) != 1:
        raise ValueError(f"the processes have different numbers of CPU devices "
                         f"({counts.tolist()}): give each the same $TRACEJIT_NUM_CPU_DEVICES")
    _initialized = True


def is_initialized() -> bool:
    """Whether initialize() has joined the processes."""
    return _initialized


def shutdown() -> None:
    """Leave the processes (MPI itself closes when the process exits). The device list stays
    as initialize() made it."""
    global _initialized
    if _initialized:  # (every process arrives, within the collective timeout)
        size = mpi.world().Get_size()
        mpi.allgather(np.asarray(0, np.int64), tuple(range(size)), "distributed.shutdown")
    _initialized = False


def mpiexec() -> str:
    """The path of the `mpiexec` that runs a program on several processes: the one installed
    beside this Python (the mpich wheel puts it there), else the first on $PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    found = here if os.path.exists(here) else shutil.which("mpiexec")
    if found is None:
        raise FileNotFoundError("no mpiexec: `pip install mpi4py mpich` installs one beside "
                                "Python")
    return found


# --- arrays spanning processes -------------------------------------------------------------

def _assemble(shape: tuple, sharding: Any, pieces: dict, dtype: Any) -> Any:
    """The array (GlobalArray over several processes) whose local devices hold `pieces`
    (device -> data at the device's index)."""
    index_map = sharding.devices_indices_map(shape)
    if not is_one_block(index_map, shape):  # (a mesh interleaving the processes)
        return _interleaved(shape, sharding, pieces, dtype, index_map)
    block = block_of(index_map, shape)
    local = None
    for d, data in pieces.items():
        data = np.asarray(data, dtype=dtype)
        if local is None:
            local = np.zeros(tuple(b.stop - b.start for b in block), data.dtype)
        at = tuple(slice(i.indices(n)[0] - b.start, i.indices(n)[1] - b.start)
                   for i, b, n in zip(index_map[d], block, shape))
        if local[at].shape != data.shape:
            raise ValueError(f"the data for device {d} has shape {data.shape}, but the "
                             f"sharding gives it a piece of shape {local[at].shape}")
        local[at] = data
    return _global(to_array(local), tuple(shape), sharding, block)


def _interleaved(shape: tuple, sharding: Any, pieces: dict, dtype: Any,
                 index_map: dict) -> GlobalArray:
    """The GlobalArray whose local devices hold `pieces` that are not one block of it."""
    at = {piece(index_map[d], shape): d for d in pieces}
    stacked = []
    for part in pieces_of(index_map, shape):
        data = np.asarray(pieces[at[part]], dtype=dtype)
        size = tuple(b - a for a, b in part)
        if data.shape != size:
            raise ValueError(f"the data for device {at[part]} has shape {data.shape}, but "
                             f"the sharding gives it a piece of shape {size}")
        stacked.append(data)
    return GlobalArray.from_pieces(to_array(np.stack(stacked)), tuple(shape), sharding)


def _global(local: Array, shape: tuple, sharding: Any, block: tuple) -> Any:
    """An Array where this process holds all of it (every process does: replicated), else
    a GlobalArray of this process's block."""
    if all(b == slice(0, n) for b, n in zip(block, shape)):
        return local.placed(sharding)
    return GlobalArray(local, shape, sharding)


def make_array_from_callback(shape: Sequence[int], sharding: Any,
                             data_callback: Callable, dtype: Any = None) -> Any:
    """The array of global `shape` laid out as `sharding`, each local device's piece being
    `data_callback(index)` (index: the tuple of slices of the global array it holds)."""
    shape = tuple(int(n) for n in shape)
    index_map = sharding.devices_indices_map(shape)
    pieces = {d: data_callback(index) for d, index in index_map.items()
              if d.process_index == _devices.process_index()}
    return _assemble(shape, sharding, pieces, dtype)


def make_array_from_process_local_data(sharding: Any, local_data: Any,
                                       global_shape: Sequence[int] | None = None) -> Any:
    """The global array whose part on this process's devices is `local_data` (this process's
    block of it): `global_shape` defaults to the local shape scaled by the number of processes
    each dimension is split over."""
    local = to_array(local_data) if not isinstance(local_data, Array) else local_data
    shape = get_aval(local).shape
    if global_shape is None:
        global_shape = _scaled(shape, sharding)
    global_shape = tuple(int(n) for n in global_shape)
    block = block_of(sharding.devices_indices_map(global_shape), global_shape)
    want = tuple(b.stop - b.start for b in block)
    if want != shape:
        raise ValueError(f"make_array_from_process_local_data: this process holds a block of "
                         f"shape {want} of the global shape {global_shape} under {sharding}, "
                         f"but local_data has shape {shape}")
    return _global(local, global_shape, sharding, block)


def _scaled(shape: tuple, sharding: Any) -> tuple:
    if not isinstance(sharding, NamedSharding):
        return shape
    m = sharding.mesh
    across, sizes = axes_across_processes(m), dict(m.shape_tuple)
    out = []
    for d, n in enumerate(shape):
        entry = sharding.spec[d] if d < len(sharding.spec) else None
        names = () if entry is None else entry if isinstance(entry, tuple) else (entry,)
        scale = 1
        for a in names:
            if a in across:
                scale *= sizes[a]
        out.append(n * scale)
    return tuple(out)


def make_array_from_single_device_arrays(shape: Sequence[int], sharding: Any,
                                         arrays: Sequence[Any], *, dtype: Any = None) -> Any:
    """The global array from one array per local device of `sharding` (in the order of its
    local devices, or matched by the device each array is on)."""
    shape = tuple(int(n) for n in shape)
    order = list(sharding.mesh.devices.flat) if isinstance(sharding, NamedSharding) else \
        sorted(sharding.device_set, key=lambda d: d.id)
    local = [d for d in order if d.process_index == _devices.process_index()]
    if len(arrays) != len(local):
        raise ValueError(f"make_array_from_single_device_arrays: {len(arrays)} arrays for the "
                         f"{len(local)} devices of this process in {sharding}")
    pieces = {}
    for d, a in zip(local, arrays):
        on = getattr(getattr(a, "sharding", None), "device_set", None)
        if on is not None and len(on) == 1 and next(iter(on)) in local:
            d = next(iter(on))
        pieces[d] = a
    return _assemble(shape, sharding, pieces, dtype)
