"""The device model: one CPU device, JAX's `devices()`, `device_put`, `block_until_ready`."""
from __future__ import annotations

from typing import Any


class CpuDevice:
    id = 0
    platform = "cpu"
    device_kind = "cpu"
    process_index = 0

    def __repr__(self) -> str:
        return "CpuDevice(id=0)"


_CPU = CpuDevice()


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


def device_put(x: Any, device: Any = None, *, donate: bool = False, may_alias=None) -> Any:
    """Put a pytree of arrays on the (only) device: NumPy inputs become Arrays."""
    from ..core.pytree import tree_map
    from ..numpy import asarray
    return tree_map(asarray, x)


def block_until_ready(x: Any) -> Any:
    from ..core.pytree import tree_leaves
    for leaf in tree_leaves(x):
        ready = getattr(leaf, "block_until_ready", None)
        if ready is not None:
            ready()
    return x
