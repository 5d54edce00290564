"""Configuration: one place for every option, with JAX's option names.

`config.update("jax_enable_x64", True)` and `config.jax_enable_x64` work as in JAX. Options that
change what a traced program means are part of every jit cache key (`config.trace_key()`).
"""
from __future__ import annotations

import contextlib
import os
from typing import Any

# name -> (default, affects tracing semantics?)
_OPTIONS: dict[str, tuple[Any, bool]] = {
    "jax_enable_x64": (False, True),
    "jax_disable_jit": (False, False),
    "jax_numpy_rank_promotion": ("allow", True),
    "jax_default_matmul_precision": (None, True),
    "jax_threefry_partitionable": (True, True),
    "jax_platforms": ("cpu", False),
    # CPU devices in this process (core/devices.py); -1: $TRACEJIT_NUM_CPU_DEVICES or XLA_FLAGS
    "jax_num_cpu_devices": (-1, False),
    # tracejit's own: which backend runs jitted programs — "native" (the LLVM compiler) or
    # "interpret" (the NumPy reference interpreter, the oracle the tests compare against).
    "tracejit_backend": ("native", True),
    # start the native backend (import llvmlite and our backend, initialise LLVM's target) on
    # a thread of its own at `import tracejit`, for the first compile to find it done
    # (runtime/backend_start.py); $TRACEJIT_BACKGROUND_START=0 turns it off
    "tracejit_background_start": (True, False),
    # the on-disk cache of object code (runtime/disk_cache.py): on/off, and its folder (None:
    # $XDG_CACHE_HOME/tracejit or ~/.cache/tracejit). Where code is cached changes no program.
    "tracejit_persistent_cache": (True, False),
    "tracejit_cache_dir": (None, False),
    # the runtime's own code (thread pool, math's slow paths) cached in that folder's `library`
    # subfolder, compiled once per machine; on even when tracejit_persistent_cache is off
    "tracejit_library_cache": (True, False),
    # a program's first calls run code from LLVM's fast (O0) code generation where that
    # computes the same bits as O3's, while O3's is generated on a thread of its own
    # (runtime/tiering.py); off: O3's code from the first call ($TRACEJIT_TIERED_COMPILE=0)
    "tracejit_tiered_compile": (True, False),
    # bounds: the on-disk cache's total size (least recently used entries go first), and how
    # many signatures each jitted function keeps traced and compiled (least recently called
    # go first; a call after that traces and compiles again)
    "tracejit_cache_max_bytes": (1 << 30, False),
    "tracejit_jit_cache_size": (4096, False),
    # run the jaxpr checker (core.jaxpr.check_jaxpr) on every traced jaxpr and after every
    # compiler pass: slower compiles, for the tests and for debugging a pass
    "tracejit_enable_checks": (False, False),
    # say (to the `tracejit` logger) why a jitted call traced again, and when jit traces and
    # compiles (JAX's options)
    "jax_explain_cache_misses": (False, False),
    # raise FloatingPointError where an operation produces a NaN (an infinity), naming it and
    # the user's line; part of jit's key, so a program compiled without the check gets it
    "jax_debug_nans": (False, True),
    "jax_debug_infs": (False, True),
    "jax_log_compiles": (False, False),
    # how many threads native code may use at once (BLAS calls; None: the CPUs this process may
    # run on, shared among an MPI launcher's processes on this host: blas.default_threads).
    # $TRACEJIT_NUM_THREADS sets it too. It changes speed only, never a result.
    "tracejit_num_threads": (None, False),
    # seconds a collective between processes (MPI, core/mpi.py) waits for its peers before
    # raising instead of hanging: a peer that died or took another branch
    # ($TRACEJIT_COLLECTIVE_TIMEOUT sets it too)
    "tracejit_collective_timeout": (300.0, False),
}


def _env_default(name: str, default: Any) -> Any:
    raw = os.environ.get(name.upper())
    if raw is None:
        return default
    if isinstance(default, bool):
        return raw.lower() in ("1", "true", "yes", "on")
    return raw


class Config:
    def __init__(self) -> None:
        self._values = {k: _env_default(k, d) for k, (d, _) in _OPTIONS.items()}
        self._trace_key_cache: tuple | None = None
        self._frozen: dict[str, tuple[Any, str]] = {}
        self._watchers: dict[str, list] = {}

    def freeze(self, name: str, value: Any, message: str) -> None:
        """From now on `name` keeps `value`: setting another raises RuntimeError(message)."""
        self._frozen[name] = (value, message)

    def update(self, name: str, value: Any) -> None:
        if name not in _OPTIONS:
            raise AttributeError(f"Unrecognized config option: {name}")
        if name == "jax_numpy_rank_promotion" and value not in ("allow", "warn", "raise"):
            raise ValueError("jax_numpy_rank_promotion must be 'allow', 'warn' or 'raise', "
                             f"got {value!r}")
        frozen = self._frozen.get(name)
        if frozen is not None and value != frozen[0]:
            raise RuntimeError(frozen[1])
        for fn in self._watchers.get(name, ()):
            fn(value)
        self._values[name] = value
        self._trace_key_cache = None

    def watch(self, name: str, fn) -> None:
        """Call fn(new value) at every `update` of option `name`, before it takes the value (a
        ValueError it raises rejects the value): for settings native code reads from memory."""
        self._watchers.setdefault(name, []).append(fn)

    def read(self, name: str) -> Any:
        return self._values[name]

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__.get("_values")
        if values is not None and name in values:
            return values[name]
        raise AttributeError(f"Unrecognized config option: {name}")

    def trace_key(self) -> tuple:
        """The options a traced program depends on, for jit cache keys. A new tuple after every
        `update` (of any option): a key held from before and compared with `is` tells whether
        anything changed since (jit's dispatch fast path stamps its entries so)."""
        if self._trace_key_cache is None:
            self._trace_key_cache = tuple(
                self._values[k] for k, (_, semantic) in _OPTIONS.items() if semantic)
        return self._trace_key_cache

    @contextlib.contextmanager
    def _override(self, name: str, value: Any):
        old = self._values[name]
        self.update(name, value)
        try:
            yield
        finally:
            self.update(name, old)


config = Config()


def enable_x64(enabled: bool = True):
    """Context manager: `with enable_x64(): ...` (like jax.experimental.enable_x64)."""
    return config._override("jax_enable_x64", enabled)


def disable_jit(disable: bool = True):
    return config._override("jax_disable_jit", disable)


def debug_nans(new_val: bool = True):
    """Context manager: `with jax.debug_nans(True): ...` checks for NaNs inside it."""
    return config._override("jax_debug_nans", new_val)


def debug_infs(new_val: bool = True):
    """Context manager: `with jax.debug_infs(True): ...` checks for infinities inside it."""
    return config._override("jax_debug_infs", new_val)


# JAX's other option context managers (`with jax.numpy_rank_promotion("raise"): ...`): the
# option set inside the block, put back after it
def numpy_rank_promotion(new_val: str):
    return config._override("jax_numpy_rank_promotion", new_val)


def default_matmul_precision(new_val: Any):
    return config._override("jax_default_matmul_precision", new_val)


def threefry_partitionable(new_val: bool = True):
    return config._override("jax_threefry_partitionable", new_val)


def log_compiles(new_val: bool = True):
    return config._override("jax_log_compiles", new_val)


def explain_cache_misses(new_val: bool = True):
    return config._override("jax_explain_cache_misses", new_val)
