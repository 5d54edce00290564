"""jax.experimental.multihost_utils (user-facing): values between the processes that
distributed.initialize() joined — gathered onto every process, broadcast from one, compared —
through MPI (core/mpi.py); with one process each is the value itself.
"""
from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from ..core import devices, mpi
from ..core.global_array import GlobalArray
from ..core.pytree import tree_leaves, tree_map

__all__ = ["process_allgather", "broadcast_one_to_all", "sync_global_devices", "assert_equal"]


def _world() -> tuple[int, ...]:
    return tuple(range(devices.process_count()))


def _allgather_leaf(x: Any, tiled: bool) -> np.ndarray:
    if isinstance(x, GlobalArray):
        if not tiled:  # (JAX's rule for arrays spanning processes)
            raise ValueError("Gathering global non-fully-addressable arrays only supports "
                             "tiled=True")
        return x.gathered("process_allgather")
    host = np.asarray(x)
    if getattr(x, "is_fully_addressable", True) is False:
        return host  # (an array every process holds whole: the global array)
    if devices.process_count() == 1:
        return host if tiled else host[None]
    if host.ndim == 0 or not tiled:
        host = host[None]
    stacked = mpi.allgather(host, _world(), "process_allgather")
    return stacked.reshape((-1,) + host.shape[1:])


def process_allgather(in_tree: Any, tiled: bool = False) -> Any:
    """Every process's value of each leaf of `in_tree`, as NumPy arrays: stacked along a new
    leading axis (tiled=True: concatenated along axis 0). An array spanning processes comes
    back whole (tiled=True only)."""
    return tree_map(lambda x: _allgather_leaf(x, tiled), in_tree)


def broadcast_one_to_all(in_tree: Any, is_source: bool | None = None) -> Any:
    """Process 0's value of each leaf (or the sum of those of the processes passing
    is_source=True), on every process, as NumPy arrays; every process's leaves must have the
    same shapes."""
    if devices.process_count() == 1:
        return tree_map(np.asarray, in_tree)
    if is_source is None:
        is_source = devices.process_index() == 0

    def leaf(x):
        x = np.asarray(x)
        mine = x if is_source else np.zeros_like(x)
        return mpi.allreduce(mine, "sum", _world(), "broadcast_one_to_all")
    return tree_map(leaf, in_tree)


def sync_global_devices(name: str) -> None:
    """Wait until every process reaches the call with the same `name` (an error when the names
    differ)."""
    tag = np.asarray(zlib.crc32(name.encode()), np.int64)
    if devices.process_count() == 1:
        return
    tags = mpi.allgather(tag, _world(), f"sync_global_devices({name!r})")
    if len(set(tags.tolist())) != 1:
        raise AssertionError(f"sync_global_devices name mismatch ('{name}')")


def assert_equal(in_tree: Any, fail_message: str = "") -> None:
    """Raise AssertionError unless every process passes equal values."""
    for x in tree_leaves(in_tree):
        everyone = _allgather_leaf(x, tiled=False)
        if not all(np.array_equal(everyone[0], e) for e in everyone[1:]):
            raise AssertionError(f"{fail_message} Expected equal values on every process, "
                                 f"got {everyone.tolist()}")
