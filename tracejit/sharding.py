"""`jax.sharding`: meshes, partition specs and shardings (the objects live in core/sharding.py,
beside the device model, since arrays answer `.sharding`). One device: every sharding holds
the whole array, so these describe layouts and check them without moving data."""
from __future__ import annotations

from typing import Any

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


def reshard(xs: Any, out_shardings: Any) -> Any:
    """`xs` laid out as `out_shardings` says (a prefix of Shardings, or PartitionSpecs of the
    mesh in effect): at once for arrays, at that point of the program inside jit."""
    return constrain(xs, out_shardings, "reshard")


__all__ = ["AbstractDevice", "AbstractMesh", "AxisType", "Mesh", "NamedSharding",
           "PartitionSpec", "Sharding", "SingleDeviceSharding", "get_abstract_mesh", "get_mesh",
           "make_single_device_sharding", "reshard", "set_mesh", "use_abstract_mesh"]
