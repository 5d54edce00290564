"""`jax.sharding`: meshes, partition specs and shardings (the objects live in core/sharding.py,
beside the device model, since arrays answer `.sharding`). One device: every sharding holds
the whole array, so these describe layouts and check them without moving data."""
from __future__ import annotations

import enum
from typing import Any

from .core.config import config
from .core.devices import Device
from .lax.sharding import constrain
from .core.sharding import (AbstractDevice, AbstractMesh, AxisType,  # noqa: F401
                            DuplicateSpecError, Mesh, NamedSharding, PartitionSpec, Sharding,
                            SingleDeviceSharding, check_shardings, get_abstract_mesh, get_mesh,
                            set_mesh, use_abstract_mesh)


def make_single_device_sharding(device: Device, *, memory_kind: str | None = None
                                ) -> SingleDeviceSharding:
    """The sharding that puts a whole array on `device`."""
    return SingleDeviceSharding(device, memory_kind=memory_kind)


class UnreducedKind(enum.Enum):
    """How an unreduced axis's partial values combine (JAX 0.12's enum, beside PartitionSpec's
    `unreduced`)."""
    sum = enum.auto()
    max = enum.auto()
    min = enum.auto()


class ForbiddenCollectiveError(Exception):
    """An operation needs a collective over an axis that `no_collectives` forbids (JAX's
    core.ForbiddenCollectiveError)."""


class _NoCollectives:
    """JAX's option `jax_no_collectives` (a set of mesh axis names, empty by default):
    `with no_collectives({"x"}):` forbids collectives across those Explicit axes, and `.value`
    reads it. Checked where tracejit changes a layout: `reshard` that moves an axis to another
    dimension, or drops it (JAX checks those, and also its typing rules of dot_general and
    broadcast_in_dim, which tracejit's Explicit types do not track: see README)."""

    def __call__(self, new_val: Any):
        if not isinstance(new_val, (set, frozenset)):
            raise TypeError(f"Expected axis name(s) as set or frozenset, got {new_val} of type "
                            f"{type(new_val)}")
        return config._override("jax_no_collectives", frozenset(new_val))

    @property
    def value(self) -> frozenset:
        return config.read("jax_no_collectives")


no_collectives = _NoCollectives()


def _spec_axes(parts: tuple) -> dict[str, list[int]]:
    """Mesh axis -> the dimensions it splits."""
    out: dict[str, list[int]] = {}
    for i, p in enumerate(parts):
        for name in (p if isinstance(p, tuple) else (p,)):
            if isinstance(name, str):
                out.setdefault(name, []).append(i)
    return out


def _check_no_collectives_reshard(src: Any, dst: Any) -> None:
    """JAX's _check_no_collectives_reshard: a reshard moving or dropping a forbidden axis."""
    forbidden = no_collectives.value
    if not forbidden or not isinstance(src, NamedSharding) or not isinstance(dst, NamedSharding):
        return
    src_axes, dst_axes = _spec_axes(tuple(src.spec)), _spec_axes(tuple(dst.spec))
    for r in sorted(forbidden):
        if r in src_axes and r not in dst_axes and r not in dst.spec.unreduced:
            raise ForbiddenCollectiveError(
                f"Collective across axis '{r}' is forbidden by `no_collectives`, but `reshard` "
                f"loses sharding axis '{r}' in the output without marking it unreduced.")
        if r in src_axes and r in dst_axes and src_axes[r] != dst_axes[r]:
            raise ForbiddenCollectiveError(
                f"Collective across axis '{r}' is forbidden by `no_collectives`, but `reshard` "
                f"changes the sharded dimension of axis '{r}'.")


def reshard(xs: Any, out_shardings: Any) -> Any:
    """`xs` laid out as `out_shardings` says (a prefix of Shardings, or PartitionSpecs of the
    mesh in effect): at once for arrays, at that point of the program inside jit."""
    if no_collectives.value:
        from .core.pytree import tree_flatten
        from .core.trace import Tracer, get_aval
        from .lax.sharding import resolve_sharding
        specs, treedef = tree_flatten(out_shardings, is_leaf=lambda s: s is None)
        for spec, sub in zip(specs, treedef.flatten_up_to(xs)):
            dst = resolve_sharding(spec, "reshard")
            for leaf in tree_flatten(sub)[0]:
                src = get_aval(leaf).sharding if isinstance(leaf, Tracer) else \
                    getattr(leaf, "sharding", None)
                _check_no_collectives_reshard(src, dst)
    return constrain(xs, out_shardings, "reshard")


__all__ = ["AbstractDevice", "AbstractMesh", "AxisType", "Mesh", "NamedSharding",
           "PartitionSpec", "Sharding", "SingleDeviceSharding", "UnreducedKind",
           "get_abstract_mesh", "get_mesh", "make_single_device_sharding", "no_collectives",
           "reshard", "set_mesh", "use_abstract_mesh"]
