"""jax.experimental.mesh_utils (user-facing): device arrays shaped for jax.sharding.Mesh. Every
tracejit device is a CPU device of one process (core/devices.py), where JAX's own choice is the
devices in order, reshaped; no device kind has a topology of its own to follow."""
from __future__ import annotations

import collections
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core.devices import devices as _all_devices

__all__ = ["create_device_mesh", "create_hybrid_device_mesh", "device_kind_handler_dict"]

# device kind -> fn(mesh_shape, devices, *, contiguous_submeshes) giving the mesh or None (JAX's
# hook for accelerators with a physical topology; empty here, as on JAX's CPU)
device_kind_handler_dict: dict[str, Callable[..., np.ndarray | None]] = {}


def _axis_sizes(mesh_shape: Sequence[Any]) -> tuple[int, ...] | None:
    try:
        return tuple(int(s) for s in mesh_shape)
    except (TypeError, ValueError):
        return None


def create_device_mesh(mesh_shape: Sequence[int], devices: Sequence[Any] | None = None, *,
                       contiguous_submeshes: bool = False,
                       allow_split_physical_axes: bool = False) -> np.ndarray:
    """`devices` (all of jax.devices() by default) as an array of shape `mesh_shape`, for
    jax.sharding.Mesh. ValueError when their number is not the product of `mesh_shape`."""
    if devices is None:
        devices = _all_devices()
    shape = _axis_sizes(mesh_shape)
    if shape is None:
        raise ValueError(f"`mesh_shape` passed to `create_device_mesh` should be a sequence of "
                         f"ints. Got {mesh_shape}")
    if math.prod(shape) != len(devices):
        raise ValueError(f"Number of devices {len(devices)} must equal the product of "
                         f"mesh_shape {shape}")
    handler = device_kind_handler_dict.get(devices[-1].device_kind)
    if handler is not None:
        mesh = handler(shape, devices, contiguous_submeshes=contiguous_submeshes)
        if mesh is not None:
            return mesh
    return np.asarray(devices, dtype=object).reshape(shape)


def create_hybrid_device_mesh(mesh_shape: Sequence[int], dcn_mesh_shape: Sequence[int],
                              devices: Sequence[Any] | None = None, *,
                              process_is_granule: bool = False,
                              should_sort_granules_by_key: bool = True,
                              allow_split_physical_axes: bool = False) -> np.ndarray:
    """A mesh of `mesh_shape` blocks (each the devices of one granule: a process with
    `process_is_granule`, else a slice) laid out as `dcn_mesh_shape`: shape the product of the
    two, dimension by dimension. tracejit's devices carry no slice_index, so only
    process_is_granule=True applies (as on JAX's CPU)."""
    if devices is None:
        devices = _all_devices()
    attr = "process_index" if process_is_granule else "slice_index"
    if not hasattr(devices[0], attr):
        raise ValueError(f"Device {devices[0]} does not have attribute {attr}. See "
                         f"`process_is_granule` option.")
    by_granule: dict[Any, list] = collections.defaultdict(list)
    for d in devices:
        by_granule[getattr(d, attr)].append(d)
    granules = [by_granule[k] for k in sorted(by_granule)] if should_sort_granules_by_key \
        else list(by_granule.values())
    if math.prod(dcn_mesh_shape) != len(granules):
        raise ValueError(f"Number of slices {len(granules)} must equal the product of "
                         f"dcn_mesh_shape {dcn_mesh_shape}")
    blocks = [create_device_mesh(mesh_shape, g,
                                 allow_split_physical_axes=allow_split_physical_axes)
              for g in granules]
    grid = np.empty(len(granules), dtype=object)
    grid[:] = blocks
    return np.block(grid.reshape(tuple(dcn_mesh_shape)).tolist())
