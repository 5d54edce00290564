"""Transfer guards (`jax.transfer_guard`): what JAX does when host data moves onto a device, here
where NumPy arrays and Python scalars become Arrays (numpy/_util.py, lax/_base.py, jit's calls,
device_put). Off (the default), callers test one module flag and nothing else runs. The level is
the calling thread's (a `with jax.transfer_guard(...)` block guards its own thread only, as JAX's).

On CPU JAX counts host-to-device transfers only: a NumPy array or Python scalar given to a jitted
function or to an eager jnp/lax operation (implicit), or to device_put (explicit). Reading an
array back (np.asarray, float, tolist, device_get) shares host memory on CPU and is never a
device-to-host transfer there; with one address space there is no device-to-device transfer
either, so those two directions' levels are kept and validated but find nothing to guard.
"""
from __future__ import annotations

import numpy as np

from .config import config
from .errors import JaxRuntimeError

_H2D = "jax_transfer_guard_host_to_device"
# whether the process-wide host-to-device level is anything but "allow", or some thread is inside
# a with-block of it (the only test on the hot paths; host_to_device reads the thread's level)
guarding = False
_global_guards = False


def _set_level(value: str | None) -> None:
    global guarding, _global_guards
    _global_guards = value not in (None, "allow")
    guarding = _global_guards or config.overridden(_H2D)


def _thread_level(value: str | None) -> None:
    global guarding
    guarding = _global_guards or config.overridden(_H2D)


config.watch(_H2D, _set_level, local=_thread_level)
_set_level(config.read(_H2D))  # (from $JAX_TRANSFER_GUARD_...)


def host_to_device(aval, explicit: bool = False, sharding=None) -> None:
    """Host data of type `aval` is about to become an Array (on `sharding`, default: device 0):
    log or refuse it as the guard level says. Constants of a program being staged are not
    transfers (JAX embeds them), so nothing is checked while a jit trace records."""
    level = config.read(_H2D)
    if level in (None, "allow") or explicit and level in ("log", "disallow"):
        return
    from .trace import current_dynamic_trace  # (trace imports this module's importers)
    if current_dynamic_trace() is not None:
        return
    if sharding is None:
        from .sharding import default_sharding
        sharding = default_sharding()
    what = f"host-to-device transfer: aval={aval}, dst_sharding={sharding!r}"
    if level.startswith("log"):
        import logging  # (here: `import tracejit` need not import it for this)
        logging.getLogger("tracejit").warning(what)
        return
    raise JaxRuntimeError(f"INVALID_ARGUMENT: Disallowed {what}")


_HOST_TYPES = (np.ndarray, np.generic, bool, int, float, complex)


def host_leaves(leaves, explicit: bool = False) -> None:
    """Arguments of jit (or device_put's, `explicit`): each NumPy array or Python scalar among
    them is host data moving to the device (Arrays and tracers are there already)."""
    from .trace import get_aval
    for x in leaves:
        if isinstance(x, _HOST_TYPES):
            host_to_device(get_aval(x), explicit)
