"""jax_thread_guard: while it is on, an operation spanning processes (a jitted call on arrays laid
out over devices of several processes: runtime/jit.py's call_across_processes) from a thread
other than the one that turned it on raises, as JAX's guard does — threads could otherwise
issue the processes' collectives in different orders and hang or mix them up. Operations within
one process are not guarded.
"""
from __future__ import annotations

import threading

from .config import config

_owner: int | None = None  # the thread that turned the guard on; None: off


def _set(value: bool) -> None:
    global _owner
    me = threading.get_ident()
    if value and _owner is not None and _owner != me:
        raise RuntimeError("Nested thread guards in different threads are not supported.")
    _owner = me if value else None


def check() -> None:
    """Raise if the guard is on and was set by another thread than this one."""
    owner = _owner
    if owner is not None and owner != threading.get_ident():
        raise RuntimeError("A JAX operation spanning several processes was called from a "
                           "thread other than the one in which the thread guard was set "
                           "(jax.thread_guard): every process must issue its multi-process "
                           "operations from the one thread, in the same order.")


# (a with-block sets the one guard of the process too, as JAX's thread-local hook does: the guard
# is about which thread may run these operations)
config.watch("jax_thread_guard", _set, local=_set)
_set(config.read("jax_thread_guard"))  # (from $JAX_THREAD_GUARD)
