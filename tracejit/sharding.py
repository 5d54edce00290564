"""`jax.sharding`: meshes, partition specs and shardings (the objects live in core/sharding.py,
beside the device model, since arrays answer `.sharding`). One device: every sharding holds
the whole array, so these describe layouts and check them without moving data."""
from __future__ import annotations

from typing import Any

from .core.devices import Device
from .core.sharding import (AbstractDevice, AbstractMesh, AxisType,  # noqa: F401
                            DuplicateSpecError, Mesh, NamedSharding, PartitionSpec, Sharding,
                            SingleDeviceSharding, check_shardings, get_abstract_mesh, get_mesh,
                            set_mesh)


def make_single_device_sharding(device: Device, *, memory_kind: str | None = None
                                ) -> SingleDeviceSharding:
    """The sharding that puts a whole array on `device`."""
    return SingleDeviceSharding(device, memory_kind=memory_kind)


def reshard(xs: Any, out_shardings: Any) -> Any:
    """`xs` laid out as `out_shardings` says (checked; one device holds every layout)."""
    check_shardings(out_shardings, xs, "reshard")
    return xs


__all__ = ["AbstractDevice", "AbstractMesh", "AxisType", "Mesh", "NamedSharding",
           "PartitionSpec", "Sharding", "SingleDeviceSharding", "get_abstract_mesh", "get_mesh",
           "make_single_device_sharding", "reshard", "set_mesh"]
