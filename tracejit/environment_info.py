"""jax.print_environment_info: the versions and devices to quote in a bug report, JAX's lines
plus tracejit's own (llvmlite, LLVM, the host CPU LLVM compiles for). User-facing; loaded on
first use."""
from __future__ import annotations

import os
import platform
import sys

import numpy as np

from .core.devices import device_count, devices, local_device_count, process_count
from .version import __version__


def print_environment_info(return_string: bool = False) -> str | None:
    """The local environment and installation, as JAX's (printed, or returned with
    return_string=True)."""
    import llvmlite
    import llvmlite.binding as llvm
    python_version = sys.version.replace("\n", " ")
    info = "\n".join([
        f"jax:    {__version__}",
        f"jaxlib: {__version__}",
        f"numpy:  {np.__version__}",
        f"python: {python_version}",
        f"device info: {devices()[0].device_kind}-{device_count()}, "
        f"{local_device_count()} local devices",  # (JAX's line ends in a stray quote)
        f"process_count: {process_count()}",
        f"platform: {platform.uname()}",
        "tracejit: JAX's API compiled through LLVM (no jaxlib: its version is the API's)",
        f"llvmlite: {llvmlite.__version__} (LLVM {'.'.join(map(str, llvm.llvm_version_info))})",
        f"host cpu: {llvm.get_host_cpu_name()}"])
    for key, value in os.environ.items():
        if key.startswith(("JAX_", "XLA_", "TRACEJIT_")):
            info += f"\n{key}={value}"
    if return_string:
        return info
    print(info)
    return None
