"""The device model: N CPU devices in this process (one unless configured: the option
`jax_num_cpu_devices`, $TRACEJIT_NUM_CPU_DEVICES, or XLA's
--xla_force_host_platform_device_count in $XLA_FLAGS, as JAX reads them), and JAX's queries
about them (`devices()`, `device_count()`, ...). Every device's memory is this process's: an
array sharded over devices is one buffer, and each device's shard a view of it. After
`distributed.initialize()` (several processes under mpiexec) `devices()` lists every process's
devices, numbered as JAX numbers them, and `local_devices()` this process's. It sits in core
because an Array answers `.devices()` and `.device` itself; moving data to a device and waiting
for it are in runtime/devices.py.
"""
from __future__ import annotations

import os
import re
import warnings
from typing import Any

from .config import config


class Device:
    """A device arrays live on (JAX's `jax.Device`)."""
    __slots__ = ()


class CpuDevice(Device):
    __slots__ = ("id", "process_index")
    platform = "cpu"
    device_kind = "cpu"

    def __init__(self, id: int, process_index: int = 0):  # noqa: A002 - JAX's name
        self.id = id
        self.process_index = process_index

    def __repr__(self) -> str:
        return f"CpuDevice(id={self.id})"

    def __reduce__(self):
        return _device, (self.id,)

    # memory kinds (jax.memory; a sharding's memory_kind): all three are this process's host
    # memory here, so device_put to any of them records the kind and copies nothing
    def addressable_memories(self) -> list[Memory]:
        return [Memory(self, kind) for kind in MEMORY_KINDS]

    def default_memory(self) -> Memory:
        return Memory(self, "device")

    def memory(self, kind: str) -> Memory:
        if kind not in MEMORY_KINDS:
            from .errors import JaxRuntimeError
            raise JaxRuntimeError(
                f"INVALID_ARGUMENT: Could not find memory addressable by device cpu. Device cpu "
                f"can address the following memory kinds: {', '.join(MEMORY_KINDS)}. Got memory "
                f"kind: {kind}")
        return Memory(self, kind)


MEMORY_KINDS = ("device", "pinned_host", "unpinned_host")
_MEMORY_NAMES = {"device": ("CPU_DEVICE", "CpuDeviceMemory"),
                 "pinned_host": ("PINNED_HOST", "PinnedHostMemory"),
                 "unpinned_host": ("UNPINNED_HOST", "UnpinnedHostMemory")}


class Memory:
    """A memory space of a device (JAX's `jax.Device.memory(kind)`), numbered as JAX's CPU
    client numbers them: three per device, in MEMORY_KINDS order."""
    __slots__ = ("_device", "kind")
    platform = "cpu"

    def __init__(self, device: CpuDevice, kind: str):
        self._device, self.kind = device, kind

    @property
    def process_index(self) -> int:
        return self._device.process_index

    def addressable_by_devices(self) -> list[CpuDevice]:
        return [self._device]

    def _id(self) -> int:
        return len(MEMORY_KINDS) * self._device.id + MEMORY_KINDS.index(self.kind)

    def __repr__(self) -> str:
        return f"{_MEMORY_NAMES[self.kind][0]}_{self._id()}"

    def __str__(self) -> str:
        return (f"{_MEMORY_NAMES[self.kind][1]}(id={self._id()}, "
                f"process_index={self.process_index}, client=cpu)")

    def __eq__(self, other: object) -> bool:
        return type(other) is Memory and other._device is self._device and \
            other.kind == self.kind

    def __hash__(self) -> int:
        return hash((self._device.id, self.kind))


def _device(i: int) -> CpuDevice:
    return next(d for d in devices() if d.id == i)


_CPU = CpuDevice(0)  # device 0 exists before the count is read
_DEVICES: list[CpuDevice] | None = None
# (how many processes, this one's index): set by distributed.initialize before any device use
_PROCESSES = (1, 0)
# JAX numbers process p's k-th CPU device p * 2048 + k (ids stay global and never collide)
_IDS_PER_PROCESS = 2048


def set_processes(count: int, index: int) -> None:
    """Make this process `index` of `count` (distributed.initialize): the device list becomes
    every process's devices. Only before the devices are first used, as in JAX."""
    global _PROCESSES, _CPU
    if _DEVICES is not None:
        raise RuntimeError("jax.distributed.initialize() must be called before any JAX calls "
                           "that might initialise the XLA backend. This includes any "
                           "computation, but also calls to jax.devices, jax.device_put, and "
                           "others.")
    _PROCESSES = (count, index)
    _CPU = CpuDevice(index * _IDS_PER_PROCESS, index)
_XLA_COUNT = re.compile(r"--xla_force_host_platform_device_count=(\d+)")


def default_device() -> CpuDevice:
    """Where an array without a sharding lives: device 0."""
    return _CPU


def _configured_count() -> int:
    n = config.read("jax_num_cpu_devices")
    if n is None or int(n) < 0:
        n = os.environ.get("TRACEJIT_NUM_CPU_DEVICES")
    if n is None:
        found = _XLA_COUNT.search(os.environ.get("XLA_FLAGS", ""))
        n = found.group(1) if found else 1
    n = int(n)
    if n < 1:
        raise ValueError(f"the number of CPU devices must be at least 1, got {n}")
    return n


def _all() -> list[CpuDevice]:
    """The devices, fixed at the first question about them (as JAX's backend initialisation:
    changing jax_num_cpu_devices later raises)."""
    global _DEVICES
    if _DEVICES is None:
        n = _configured_count()
        count, here = _PROCESSES
        _DEVICES = [_CPU if (p, k) == (here, 0) else CpuDevice(p * _IDS_PER_PROCESS + k, p)
                    for p in range(count) for k in range(n)]
        config.freeze("jax_num_cpu_devices", n, (
            "jax_num_cpu_devices config should be updated before backends are initialized i.e. "
            "before any JAX operation is executed. You should initialize this config "
            "immediately after `import jax`."))
    return _DEVICES


def check_device(device: Any, fun_name: str) -> None:
    """The `device=` argument of creation functions, astype and to_device: None (uncommitted),
    the CPU device or a sharding over it; anything else is a ValueError naming `fun_name`."""
    if device is None or isinstance(device, CpuDevice) and device in _all():
        return
    device_set = getattr(device, "device_set", None)  # a Sharding
    if device_set is not None and set(device_set) <= set(_all()):
        return
    raise ValueError(f"{fun_name}: device={device!r} is not a device of tracejit: pass None, "
                     f"one of tracejit.devices() or a sharding over them.")


def devices(backend: str | None = None) -> list[CpuDevice]:
    if backend not in (None, "cpu"):
        raise RuntimeError(f"Unknown backend {backend!r}: tracejit runs on the CPU only.")
    return list(_all())


def local_devices(process_index: int | None = None, backend: str | None = None):
    """The devices of process `process_index` (this one by default)."""
    p = _PROCESSES[1] if process_index is None else process_index
    return [d for d in devices(backend) if d.process_index == p]


def device_count(backend: str | None = None) -> int:
    """The devices of all processes."""
    return len(devices(backend))


def local_device_count(backend: str | None = None) -> int:
    return len(local_devices(backend=backend))


def default_backend() -> str:
    return "cpu"


def process_index(backend: str | None = None) -> int:
    """This process's index among those distributed.initialize() joined (0 alone)."""
    return _PROCESSES[1]


def process_count(backend: str | None = None) -> int:
    return _PROCESSES[0]


def process_indices(backend: str | None = None) -> list[int]:
    """Every process's index (JAX's name): 0 .. process_count() - 1."""
    return list(range(_PROCESSES[0]))


# JAX's old names, which warn (a UserWarning, as JAX's; JAX's texts name the wrong function)
def host_count(backend: str | None = None) -> int:
    warnings.warn("jax.host_count has been renamed to jax.process_count. This alias will "
                  "eventually be removed; please update your code.", stacklevel=2)
    return process_count(backend)


def host_id(backend: str | None = None) -> int:
    warnings.warn("jax.host_id has been renamed to jax.process_index. This alias will "
                  "eventually be removed; please update your code.", stacklevel=2)
    return process_index(backend)


def host_ids(backend: str | None = None) -> list[int]:
    warnings.warn("jax.host_ids has been renamed to jax.process_indices. This alias will "
                  "eventually be removed; please update your code.", stacklevel=2)
    return process_indices(backend)
