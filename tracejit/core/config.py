"""Configuration: one place for every option, with JAX's option names.

`config.update("jax_enable_x64", True)` and `config.jax_enable_x64` work as in JAX. Options that
change what a traced program means are part of every jit cache key (`config.trace_key()`).
As in JAX, `config.update` sets an option's process-wide value (what a new thread sees) and the
context managers (`with jax.enable_x64(): ...`) set it for the calling thread alone. Each
context manager is a `State` as JAX's are: `jax.debug_nans.value` reads the calling thread's value.
"""
from __future__ import annotations

import contextlib
import enum
import functools
import os
import threading
from typing import Any


# JAX's enum-valued options hold these (strings naming a member are accepted and converted)
class ExplicitX64Mode(enum.IntEnum):
    WARN = enum.auto()
    ERROR = enum.auto()
    ALLOW = enum.auto()

    @classmethod
    def _missing_(cls, value: object) -> ExplicitX64Mode | None:
        return {"warn": cls.WARN, "error": cls.ERROR, "allow": cls.ALLOW}.get(value)


class NumpyDtypePromotion(enum.StrEnum):
    STANDARD = "standard"
    STRICT = "strict"


class LegacyPrngKeyState(enum.StrEnum):
    ALLOW = "allow"
    WARN = "warn"
    ERROR = "error"

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
    # whether that O3 code is made at all: off, a tiered program keeps its first tier's code
    # (the same bits) and is not stored in the on-disk cache, which holds final code only --
    # for a process whose programs each run a few times, as the test suite's
    # ($TRACEJIT_SECOND_TIER=0)
    "tracejit_second_tier": (True, False),
    # that O3 code generation (and O3's optimisation, where a first tier skipped it) in a helper
    # process (runtime/compile_helper.py: the same optimised IR and object code), so this
    # process's next compile does not wait for LLVM's lock behind it; off, or where the helper
    # cannot run: on tiering's thread ($TRACEJIT_COMPILE_HELPER=0)
    "tracejit_compile_helper": (True, False),
    # seconds the interpreter's exit may spend making the final code of programs still waiting
    # for it, to store it in the on-disk cache (runtime/tiering.py); those left are compiled
    # again by the next process ($TRACEJIT_EXIT_COMPILE_SECONDS)
    "tracejit_exit_compile_seconds": (2.0, False),
    # bounds: the on-disk cache's total size (least recently used entries go first), and how
    # many signatures each jitted function keeps traced and compiled (least recently called
    # go first; a call after that traces and compiles again)
    "tracejit_cache_max_bytes": (1 << 30, False),
    "tracejit_jit_cache_size": (4096, False),
    # run the jaxpr checker (core.jaxpr.check_jaxpr) on every traced jaxpr and after every
    # compiler pass: slower compiles, for the tests and for debugging a pass (JAX's option for
    # checking its internals' invariants)
    "jax_enable_checks": (False, False),
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
    # --- JAX's other options, each honoured as JAX honours it on CPU ---
    # "strict": no implicit promotion between different strong dtypes (core/dtypes.py)
    "jax_numpy_dtype_promotion": (NumpyDtypePromotion.STANDARD, True),
    # what a 64-bit dtype named explicitly (jnp.zeros(3, jnp.float64), astype, result_type)
    # gives with x64 off: WARN truncates it with JAX's UserWarning, ERROR raises, ALLOW keeps it
    # (core/dtypes.py's check_user_dtype)
    "jax_explicit_x64_dtypes": (ExplicitX64Mode.WARN, True),
    # which transfers between host and device are allowed, logged or refused
    # (core/transfer_guard.py); None: "allow". jax_transfer_guard sets all three.
    "jax_transfer_guard": (None, False),
    "jax_transfer_guard_host_to_device": (None, False),
    "jax_transfer_guard_device_to_host": (None, False),
    "jax_transfer_guard_device_to_device": (None, False),
    # where values made without a device (jnp.zeros, device_put(x), a jit call on uncommitted
    # arguments) go: a Device, "cpu", or None for devices()[0]
    "jax_default_device": (None, True),
    # JAX's "Leaked trace" Exception as soon as a trace ends with one of its tracers still
    # referenced (core/trace.py's check_no_leaks)
    "jax_check_tracer_leaks": (False, False),
    # KeyReuseError when a typed key (random.key) is consumed twice (random.py, key_reuse.py)
    "jax_debug_key_reuse": (False, True),
    # the PRNG random.key / PRNGKey use when none is named (random.py: threefry2x32 only);
    # "allow"/"warn"/"error" for raw uint32 keys passed to jax.random (read while tracing, as
    # JAX: a function traced before keeps its answer); typed keys from raw ones (random.split)
    "jax_default_prng_impl": ("threefry2x32", True),
    "jax_legacy_prng_key": (LegacyPrngKeyState.ALLOW, False),
    "jax_enable_custom_prng": (False, True),
    # False: reduce_sum over float16/bfloat16 (more than one element) raises
    "jax_allow_f16_reductions": (True, True),
    # what happens when the garbage collector (not reference counting) frees an Array
    "jax_array_garbage_collection_guard": (None, False),
    # jax.nn.softmax's custom_jvp rule (the gradient is the same; JAX's memory upgrade)
    "jax_softmax_custom_jvp": (False, True),
    # RuntimeError at a jit trace / a compiled program's run
    "jax_no_tracing": (False, False),
    "jax_no_execution": (False, True),
    # an operation spanning processes called from another thread than the guard's raises
    # (core/thread_guard.py)
    "jax_thread_guard": (False, False),
    # shard_map's typing: size-1 mesh axes left out of vma and Explicit layouts in types
    # (transforms/spmd.py, core/sharding.py); False: no implicit pvary, JAX's error instead
    # (lax/parallel.py)
    "jax_remove_size_one_mesh_axis_from_type": (False, True),
    "jax_auto_pcast": (True, True),
    # mesh axes no collective may cross (jax.sharding.no_collectives; checked by reshard)
    "jax_no_collectives": (frozenset(), True),
    # jax2tf's choice of cumulative-reduction lowering; tracejit has one lowering on CPU
    "jax2tf_associative_scan_reductions": (False, False),
    # JAX's persistent compilation cache, mapped onto ours (runtime/disk_cache.py): its folder
    # (tracejit_cache_dir wins where both are set), and False turns the caching of programs
    # off. JAX's thresholds of what is worth caching are accepted and not applied: ours caches
    # every program (a hit is one file read and the checks)
    "jax_compilation_cache_dir": (None, False),
    "jax_enable_compilation_cache": (True, False),
    "jax_persistent_cache_min_compile_time_secs": (1.0, False),
    "jax_persistent_cache_min_entry_size_bytes": (0, False),
    # how JAX trims its own frames from tracebacks; tracejit keeps whole tracebacks (JAX's
    # "off": core/traceback_util.py), whatever the value
    "jax_traceback_filtering": ("auto", False),
}

_TRANSFER_LEVELS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")
_TRANSFER_DIRECTIONS = ("jax_transfer_guard_host_to_device", "jax_transfer_guard_device_to_host",
                        "jax_transfer_guard_device_to_device")
# the values an enumerated option may take (None allowed where the default is None)
_ENUMS: dict[str, tuple] = {
    "jax_numpy_rank_promotion": ("allow", "warn", "raise"),
    "jax_default_matmul_precision": (
        "default", "high", "highest", "bfloat16", "tensorfloat32", "float32", "ANY_F8_ANY_F8_F32",
        "ANY_F8_ANY_F8_F32_FAST_ACCUM", "ANY_F8_ANY_F8_ANY", "ANY_F8_ANY_F8_ANY_FAST_ACCUM",
        "F16_F16_F16", "F16_F16_F32", "BF16_BF16_BF16", "BF16_BF16_F32", "BF16_BF16_F32_X3",
        "BF16_BF16_F32_X6", "BF16_BF16_F32_X9", "TF32_TF32_F32", "TF32_TF32_F32_X3",
        "F32_F32_F32", "F64_F64_F64"),
    "jax_default_prng_impl": ("threefry2x32", "threefry4x32", "rbg", "unsafe_rbg", "philox2x32",
                              "philox4x32"),
    "jax_array_garbage_collection_guard": ("allow", "log", "fatal"),
    "jax_traceback_filtering": ("off", "tracebackhide", "remove_frames", "quiet_remove_frames",
                                "auto"),
    **{name: _TRANSFER_LEVELS for name in ("jax_transfer_guard", *_TRANSFER_DIRECTIONS)},
}
# the options whose values are members of an enum class
_ENUM_CLASSES: dict[str, type[enum.Enum]] = {
    "jax_explicit_x64_dtypes": ExplicitX64Mode,
    "jax_numpy_dtype_promotion": NumpyDtypePromotion,
    "jax_legacy_prng_key": LegacyPrngKeyState,
}


def _env_default(name: str, default: Any) -> Any:
    raw = os.environ.get(name.upper())
    if raw is None:
        return default
    if isinstance(default, bool):
        return raw.lower() in ("1", "true", "yes", "on")
    enum_class = _ENUM_CLASSES.get(name)
    if enum_class is not None:
        try:
            return enum_class(raw)
        except ValueError as e:
            raise ValueError(f'Invalid value "{raw}" for JAX flag {name}') from e
    return raw


class _ThreadValues(threading.local):
    """One thread's with-blocks: the options they set now, and that thread's trace key."""

    def __init__(self) -> None:
        self.overrides: dict[str, Any] = {}
        # how many of this thread's blocks of each option are open: when the last one ends its
        # value goes, even where blocks ended out of order (a generator's block ending inside
        # its caller's) and the value put back is a block's that has ended
        self.depth: dict[str, int] = {}
        # (the process-wide key it was made from, the thread's own key); None: make it again
        self.key: tuple | None = None


_UNSET = object()  # (JAX's `unset`: no with-block value in this thread)


class Config:
    def __init__(self) -> None:
        self._values = {k: _env_default(k, d) for k, (d, _) in _OPTIONS.items()}
        if self._values["jax_transfer_guard"] is not None:  # ($JAX_TRANSFER_GUARD: all three)
            for direction in _TRANSFER_DIRECTIONS:
                self._values[direction] = self._values["jax_transfer_guard"]
        self._trace_key_cache: tuple | None = None
        self._frozen: dict[str, tuple[Any, str]] = {}
        self._watchers: dict[str, list] = {}
        self._local_watchers: dict[str, list] = {}
        self._thread = _ThreadValues()
        # with-blocks open now in all threads, in all and per option: while there are none
        # (nearly always) a read is one dict lookup, as before options could be thread-local
        self._open = 0
        self._open_by_name: dict[str, int] = {}
        self._lock = threading.RLock()  # (the counts, and the local watchers called in order)

    def freeze(self, name: str, value: Any, message: str) -> None:
        """From now on `name` keeps `value`: setting another raises RuntimeError(message)."""
        self._frozen[name] = (value, message)

    def _check(self, name: str, value: Any) -> Any:
        """The value option `name` takes for `value` (a bool option's bool(value), an enum
        option's member), or raise as JAX does for a value it cannot take (update, the
        context managers)."""
        if name not in _OPTIONS:
            raise AttributeError(f"Unrecognized config option: {name}")
        default = _OPTIONS[name][0]
        enum_class = _ENUM_CLASSES.get(name)
        if enum_class is not None:
            if isinstance(value, str):
                value = enum_class(value)
            elif not isinstance(value, enum_class):
                raise TypeError(f"new enum value must be an instance of {enum_class}, got "
                                f"{value} of type {type(value)}.")
        elif isinstance(default, bool):
            value = bool(value)  # (as JAX's bool options parse: `debug_nans("yes")` is True)
        allowed = _ENUMS.get(name)
        if allowed is not None and value not in allowed and \
                not (value is None and default is None):
            none = "None or " if default is None else ""
            raise ValueError(f"new enum value must be {none}in {list(allowed)}, got {value} of "
                             f"type {type(value)}.")
        if name == "jax_default_device":
            _check_default_device(value)
        frozen = self._frozen.get(name)
        if frozen is not None and value != frozen[0]:
            raise RuntimeError(frozen[1])
        return value

    def update(self, name: str, value: Any) -> None:
        """Set the process-wide value: every thread's, except inside its own with-blocks of
        `name` (they keep theirs, and the process-wide value holds again after them)."""
        value = self._check(name, value)
        if name == "jax_transfer_guard":  # set-only: it sets the three directions
            for direction in _TRANSFER_DIRECTIONS:
                self.update(direction, value)
        for fn in self._watchers.get(name, ()):
            fn(value)
        self._values[name] = value
        self._trace_key_cache = None

    def watch(self, name: str, fn, local=None) -> None:
        """Call fn(new value) at every `update` of option `name`, before it takes the value (a
        ValueError it raises rejects the value): for settings native code reads from memory.
        `local(value)` is called when a with-block of `name` in any thread begins (with its
        value, just after it took effect in that thread; an exception it raises rejects it and
        must leave its own state as it was) or ends (with the value that thread has again);
        `overridden(name)` then says whether any thread is inside one (JAX's
        update_global_hook / update_thread_local_hook)."""
        self._watchers.setdefault(name, []).append(fn)
        if local is not None:
            self._local_watchers.setdefault(name, []).append(local)

    def overridden(self, name: str) -> bool:
        """Whether some thread is inside a with-block of option `name` now."""
        return bool(self._open_by_name.get(name))

    def read(self, name: str) -> Any:
        """The calling thread's value: its innermost with-block's, else the process-wide one."""
        if self._open:
            overrides = self._thread.overrides
            if name in overrides:
                return overrides[name]
        return self._values[name]

    def read_global(self, name: str) -> Any:
        """The process-wide value (`config.update`'s), whatever the caller's with-blocks say."""
        return self._values[name]

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__.get("_values")
        if values is not None and name in values:
            if self._open:  # (read's body: dtype rules read x64 so, op after op)
                overrides = self._thread.overrides
                if name in overrides:
                    return overrides[name]
            return values[name]
        raise AttributeError(f"'Config' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        # (JAX's options are read-only properties: `config.jax_enable_x64 = True` raises there
        # rather than leaving the option as it was behind an attribute that says otherwise)
        if name in _OPTIONS:
            raise AttributeError("property of 'Config' object has no setter")
        object.__setattr__(self, name, value)

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *_OPTIONS})

    @property
    def values(self) -> dict[str, Any]:
        """Every option's value as the calling thread sees it (JAX's `config.values`)."""
        return {name: self.read(name) for name in _OPTIONS}

    @property
    def x64_enabled(self) -> bool:
        return self.read("jax_enable_x64")

    def trace_key(self) -> tuple:
        """The options a traced program depends on, as the calling thread sees them, for jit
        cache keys. A new tuple after every `update` (of any option) and, in a thread, at every
        with-block's start and end: a key held from before and compared with `is` tells whether
        anything changed since (jit's dispatch fast path stamps its entries so, and reads the
        key inline: `_trace_key_cache` while `_open` is 0, this method otherwise)."""
        key = self._trace_key_cache
        if key is None:
            key = self._trace_key_cache = tuple(
                self._values[k] for k, (_, semantic) in _OPTIONS.items() if semantic)
        if self._open:
            thread = self._thread
            if thread.overrides:  # (any option, semantic or not: a new key, as `update` makes)
                own = thread.key
                if own is None or own[0] is not key:
                    own = thread.key = (key, tuple(
                        self.read(k) for k, (_, semantic) in _OPTIONS.items() if semantic))
                return own[1]
        return key

    @contextlib.contextmanager
    def _override(self, name: str, value: Any):
        """`name` is `value` in this thread until the block ends (also by an exception); other
        threads, and threads started inside it, keep the process-wide value."""
        value = self._check(name, value)
        thread = self._thread
        old = thread.overrides.get(name, _UNSET)
        self._enter(thread, name, value, old)
        try:
            yield
        finally:
            with self._lock:
                self._restore(thread, name, old)
                for fn in self._local_watchers.get(name, ()):
                    fn(self.read(name))

    def _enter(self, thread: _ThreadValues, name: str, value: Any, old: Any) -> None:
        with self._lock:
            self._open += 1
            self._open_by_name[name] = self._open_by_name.get(name, 0) + 1
            thread.depth[name] = thread.depth.get(name, 0) + 1
            thread.overrides[name] = value
            thread.key = None
            try:
                for fn in self._local_watchers.get(name, ()):
                    fn(value)
            except BaseException:  # (the watcher that raised kept its state: only undo ours)
                self._restore(thread, name, old)
                raise

    def _restore(self, thread: _ThreadValues, name: str, old: Any) -> None:
        depth = thread.depth[name] - 1
        if depth:
            thread.depth[name] = depth
        else:
            del thread.depth[name]
        if old is _UNSET or not depth:
            thread.overrides.pop(name, None)
        else:
            thread.overrides[name] = old
        thread.key = None
        self._open_by_name[name] -= 1
        self._open -= 1


def _check_default_device(value: Any) -> None:
    from .devices import Device  # (devices reads the config at import: imported late)
    if value is not None and not isinstance(value, Device) and value not in ("cpu", "gpu", "tpu"):
        raise ValueError("jax.default_device must be passed either a Device object (e.g. "
                         "`jax.devices('cpu')[0]`) or a platform name string like 'cpu' or "
                         f"'gpu', got: {value!r}")


config = Config()


class _NoDefault:
    pass


no_default = _NoDefault()


class State:
    # JAX's option handle (jax._src.config.State): `state.value` is the calling thread's value
    # (its innermost with-block's, else the process-wide one), `state(v)` a with-block or a
    # decorator setting it for the calling thread; bool(state) raises, as JAX's does, since
    # `if jax.debug_nans:` would always be true.

    def __init__(self, name: str, help: str = "", default_context_manager_value: Any = no_default):
        self._name = name
        self.__name__ = name.removeprefix("jax_")
        self.__doc__ = f"Context manager for `{name}` config option.\n\n{help}"
        self._default_context_manager_value = default_context_manager_value

    @property
    def name(self) -> str:
        return self._name

    @property
    def value(self) -> Any:
        return config.read(self._name)

    def get_global(self) -> Any:
        """The process-wide value (`config.update`'s)."""
        return config.read_global(self._name)

    def get_local(self) -> Any:
        """The calling thread's with-block value, or `unset` outside any block."""
        return config._thread.overrides.get(self._name, unset)

    def _set(self, value: Any) -> None:
        config.update(self._name, value)

    def __bool__(self):
        raise TypeError(f"bool() not supported for instances of type '{type(self).__name__}' "
                        f"(did you mean to use '{type(self).__name__}.value' instead?)")

    def __call__(self, new_val: Any = no_default) -> StateContextManager:
        if new_val is no_default:
            new_val = self._default_context_manager_value
            if new_val is no_default:
                raise TypeError(f"Context manager for {self.__name__} config option requires "
                                "an argument representing the new value for the config option.")
        return StateContextManager(self._name, new_val)


unset = _UNSET


class StateContextManager:
    """`with state(v):` — `v` checked when made (as JAX's: a bad value raises before the
    block), in effect for the calling thread inside the block; also a decorator."""

    __slots__ = ("_olds", "name", "new_val")

    def __init__(self, name: str, new_val: Any):
        self.name = name
        self.new_val = config._check(name, new_val)
        # thread id -> the values this object's open blocks in that thread put back, innermost
        # last: the object may be entered by several threads at once or again inside its own
        # block, and blocks of other objects may end in between (generators' blocks)
        self._olds: dict[int, list] = {}

    def __enter__(self) -> None:
        thread = config._thread
        old = thread.overrides.get(self.name, _UNSET)
        config._enter(thread, self.name, self.new_val, old)
        self._olds.setdefault(threading.get_ident(), []).append(old)

    def __exit__(self, *exc: object) -> None:
        thread, ident = config._thread, threading.get_ident()
        olds = self._olds[ident]
        old = olds.pop()
        if not olds:
            del self._olds[ident]
        with config._lock:
            config._restore(thread, self.name, old)
            for fn in config._local_watchers.get(self.name, ()):
                fn(config.read(self.name))

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with StateContextManager(self.name, self.new_val):
                return func(*args, **kwargs)
        return wrapper


def _state(name: str, help: str = "") -> State:
    """JAX's State for option `name`; `with state():` sets True where the option is a bool."""
    default = True if isinstance(_OPTIONS[name][0], bool) else no_default
    return State(name, help, default)


# JAX's option context managers, with JAX's names (jax.<name> in JAX 0.10 and 0.12)
enable_x64 = _state("jax_enable_x64", "Enable 64-bit types to be used")
debug_nans = _state("jax_debug_nans", "Add nan checks to every operation: a FloatingPointError "
                    "names the operation and the user's line.")
debug_infs = _state("jax_debug_infs", "Add inf checks to every operation.")
numpy_rank_promotion = _state("jax_numpy_rank_promotion",
                              "Control NumPy-style automatic rank promotion broadcasting "
                              '("allow", "warn", or "raise").')
default_matmul_precision = _state("jax_default_matmul_precision",
                                  "Control the default matmul and conv precision.")
threefry_partitionable = _state("jax_threefry_partitionable")
log_compiles = _state("jax_log_compiles", "Log a message each time jit compiles a function.")
explain_cache_misses = _state("jax_explain_cache_misses",
                              "Say why a jitted function traced again.")
numpy_dtype_promotion = _state("jax_numpy_dtype_promotion",
                               'Type promotion: "standard" or "strict".')
transfer_guard_host_to_device = _state("jax_transfer_guard_host_to_device")
transfer_guard_device_to_host = _state("jax_transfer_guard_device_to_host")
transfer_guard_device_to_device = _state("jax_transfer_guard_device_to_device")
default_device = _state("jax_default_device", "Where values made without a device go.")
check_tracer_leaks = _state("jax_check_tracer_leaks",
                            "Raise when a trace ends with one of its tracers still referenced.")
checking_leaks = functools.partial(check_tracer_leaks, True)
enable_checks = _state("jax_enable_checks", "Run the jaxpr checker after tracing and passes.")
debug_key_reuse = _state("jax_debug_key_reuse", "Raise when a typed key is consumed twice.")
default_prng_impl = _state("jax_default_prng_impl")
legacy_prng_key = _state("jax_legacy_prng_key")
enable_custom_prng = _state("jax_enable_custom_prng")
allow_f16_reductions = _state("jax_allow_f16_reductions")
array_garbage_collection_guard = _state("jax_array_garbage_collection_guard")
softmax_custom_jvp = _state("jax_softmax_custom_jvp")
no_tracing = _state("jax_no_tracing")
no_execution = _state("jax_no_execution")
thread_guard = _state("jax_thread_guard")
remove_size_one_mesh_axis_from_type = _state("jax_remove_size_one_mesh_axis_from_type")
auto_pcast = _state("jax_auto_pcast")
jax2tf_associative_scan_reductions = _state("jax2tf_associative_scan_reductions")
# JAX's, reached as jax._src.config.explicit_x64_dtypes (not a jax.* name)
explicit_x64_dtypes = _state("jax_explicit_x64_dtypes",
                             "ALLOW: a 64-bit dtype named explicitly is kept with x64 off; WARN: "
                             "truncated with a warning; ERROR: a ValueError.")


# (functions in JAX too, not States)
def disable_jit(disable: bool = True):
    return config._override("jax_disable_jit", disable)


@contextlib.contextmanager
def transfer_guard(new_val: str):
    """The transfer guard level `new_val` for all three directions inside the block."""
    with contextlib.ExitStack() as stack:
        for direction in _TRANSFER_DIRECTIONS:
            stack.enter_context(config._override(direction, new_val))
        # (entered last, left first: putting it back must not reset the directions after them)
        stack.enter_context(config._override("jax_transfer_guard", new_val))
        yield
