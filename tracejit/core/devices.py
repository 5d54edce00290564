"""The device model: one CPU device and JAX's queries about it (`devices()`, `device_count()`,
...). It sits in core because an Array answers `.devices()` and `.device` itself; moving data to
the device and waiting for it are in runtime/devices.py.
"""
from __future__ import annotations

from typing import Any


class Device:
    """A device arrays live on (JAX's `jax.Device`); this process has one, the CPU."""
    __slots__ = ()


class CpuDevice(Device):
    id = 0
    platform = "cpu"
    device_kind = "cpu"
    process_index = 0

    def __repr__(self) -> str:
        return "CpuDevice(id=0)"


_CPU = CpuDevice()


def check_device(device: Any, fun_name: str) -> None:
    """The `device=` argument of creation functions, astype and to_device: None (uncommitted),
    the CPU device or a sharding over it; anything else is a ValueError naming `fun_name`."""
    if device is None or device is _CPU:
        return
    device_set = getattr(device, "device_set", None)  # a Sharding
    if device_set is not None and set(device_set) == {_CPU}:
        return
    raise ValueError(f"{fun_name}: device={device!r} is not a device of tracejit: pass None, "
                     f"{_CPU!r} (tracejit.devices()[0]) or a sharding over it.")


def devices(backend: str | None = None) -> list[CpuDevice]:
    if backend not in (None, "cpu"):
        raise RuntimeError(f"Unknown backend {backend!r}: tracejit runs on the CPU only.")
    return [_CPU]


def local_devices(process_index: int | None = None, backend: str | None = None):
    return devices(backend)


def device_count(backend: str | None = None) -> int:
    return 1


local_device_count = device_count


def default_backend() -> str:
    return "cpu"


def process_index() -> int:
    return 0


def process_count() -> int:
    return 1
