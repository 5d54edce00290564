"""Moving values to the device and waiting for them (JAX's `device_put`, `block_until_ready`);
the device model itself (`devices()`, ...) is core/devices.py.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core import transfer_guard
from ..core.array import Array, aligned_copy
from ..core.devices import Device, check_device
from ..core.pytree import tree_flatten, tree_leaves, tree_map, tree_unflatten
from ..core.sharding import (PartitionSpec, Sharding, SingleDeviceSharding, check_shardings,
                             resolve_sharding)
from ..core.trace import Tracer, get_aval


def to_array(x: Any) -> Any:
    """A leaf on the device: Arrays and tracers as they are; a scalar or NumPy array as an Array
    of its canonical type (Python scalars weakly typed), as jnp.asarray makes it."""
    if isinstance(x, (Array, Tracer)):
        return x
    if hasattr(x, "__jax_array__"):
        return to_array(x.__jax_array__())
    aval = get_aval(x)  # raises JAX's TypeError for a value that is not an array
    with np.errstate(all="ignore"):
        return Array.from_numpy(aligned_copy(x, aval.dtype), aval, fresh=True)


def device_put(x: Any, device: Any = None, *, donate: bool = False, may_alias=None) -> Any:
    """Put a pytree of arrays on the (only) device: NumPy inputs become Arrays. `device` is
    None, the device, or a sharding (or PartitionSpec, or a pytree prefix of them), checked
    against each array's rank as JAX does; with one device the data is where it belongs."""
    if transfer_guard.guarding:  # host leaves: explicit host-to-device transfers
        transfer_guard.host_leaves(tree_leaves(x), explicit=True)
    out = tree_map(to_array, x)
    placements = (Sharding, PartitionSpec, Device)
    for s in tree_leaves(device, is_leaf=lambda s: s is None or isinstance(s, placements)):
        if s is not None and not isinstance(s, placements):  # (JAX's class and words)
            raise ValueError("`jax.device_put` only accepts `None`, `jax.sharding.Sharding`, "
                             "`jax.Device` or a pytree of these values (a PartitionSpec under "
                             f"a mesh). Received invalid value: {s}")
    if device is not None and not isinstance(device, Device):
        check_shardings(device, out, "device_put")
        return place(out, device)
    if device is not None:
        check_device(device, "device_put")
        return place(out, SingleDeviceSharding(device))
    return out


def place(tree: Any, shardings: Any) -> Any:
    """The Arrays of `tree` laid out as `shardings` says (a pytree prefix of Shardings,
    PartitionSpecs of the mesh in effect, or None); tracers as they are."""
    specs, treedef = tree_flatten(shardings, is_leaf=lambda s: s is None)
    subtrees = treedef.flatten_up_to(tree)
    placed = []
    for spec, sub in zip(specs, subtrees):
        sharding = resolve_sharding(spec, "device_put")
        placed.append(tree_map(lambda a: a.placed(sharding) if isinstance(a, Array) else a,
                               sub))
    return tree_unflatten(treedef, placed)


def device_get(x: Any) -> Any:
    """JAX's `device_get`: a pytree with every array leaf as a NumPy array (other leaves as
    they are)."""
    def get(leaf):
        if isinstance(leaf, Tracer):
            return np.asarray(leaf)  # JAX's conversion error for a tracer without a value
        return np.asarray(leaf) if isinstance(leaf, Array) else leaf
    return tree_map(get, x)


def block_until_ready(x: Any) -> Any:
    for leaf in tree_leaves(x):
        ready = getattr(leaf, "block_until_ready", None)
        if ready is not None:
            ready()
    return x


def copy_to_host_async(x: Any) -> Any:
    """JAX's: calls `copy_to_host_async` on each leaf that has one, and returns `x`. An Array's
    data already lives in host memory, so there is nothing to start."""
    for leaf in tree_leaves(x):
        copy = getattr(leaf, "copy_to_host_async", None)
        if copy is not None:
            copy()
    return x


def live_arrays(platform: str | None = None) -> list:
    """Every array alive in this process and not deleted (JAX's: of the backend's devices, all
    of which are this process's memory here). Found by a walk of the garbage collector's
    objects, not by a registry every array would pay to join: a debugging tool, and costs a
    walk of the heap."""
    import gc
    from ..core.global_array import GlobalArray
    if platform not in (None, "cpu"):
        raise RuntimeError(f"Unknown backend {platform}")
    return [x for x in gc.get_objects() if (type(x) is Array or type(x) is GlobalArray)
            and not x.is_deleted()]
