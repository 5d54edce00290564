"""tracejit: JAX's programming model (jit, lax control flow, jax.numpy, ...) as a compiler.

    import tracejit as jax
    import tracejit.numpy as jnp
    from tracejit import lax
"""
from .runtime import backend_start  # (first: LLVM's library loads while the rest imports)
backend_start.start()  # the native backend's start-up, on a thread of its own
from . import errors  # noqa: F401,E402  (and with it tracejit.core and NumPy)
backend_start.import_llvmlite()  # (then the thread starts LLVM while the rest imports)
from . import lax, nn, numpy, stages, tree, tree_util  # noqa: F401,E402
from .core.array import BaseArray as Array  # noqa: F401  (concrete arrays and tracers)
from .core.avals import ShapedArray, ShapeDtypeStruct  # noqa: F401
from .core.config import (config, debug_infs, debug_nans, default_matmul_precision,  # noqa: F401
                          disable_jit, enable_x64, explain_cache_misses, log_compiles,
                          numpy_rank_promotion, threefry_partitionable)
# JAX's option context managers (the option set inside a `with` block, put back after it)
from .core.config import (allow_f16_reductions, array_garbage_collection_guard,  # noqa: F401
                          auto_pcast, check_tracer_leaks, checking_leaks, debug_key_reuse,
                          default_device, default_prng_impl, enable_checks, enable_custom_prng,
                          jax2tf_associative_scan_reductions, legacy_prng_key, no_execution,
                          no_tracing, numpy_dtype_promotion, remove_size_one_mesh_axis_from_type,
                          softmax_custom_jvp, thread_guard, transfer_guard,
                          transfer_guard_device_to_device, transfer_guard_device_to_host,
                          transfer_guard_host_to_device)
from .core.devices import (Device, default_backend, device_count, devices,  # noqa: F401
                           local_device_count, local_devices, process_count, process_index,
                           process_indices)
from .core.dtypes import float0  # noqa: F401
from .core.sharding import (NamedSharding, PartitionSpec as P, Shard,  # noqa: F401
                            make_mesh, set_mesh)
from .shard_map import pmap, shard_map  # noqa: F401,E402
from .core.trace import ensure_compile_time_eval, named_call, named_scope, typeof  # noqa: F401
from .runtime.devices import block_until_ready, device_get, device_put  # noqa: F401
from .runtime.jit import clear_caches, eval_shape, jit, make_jaxpr  # noqa: F401
from .runtime.stages import Compiled, Lowered, Traced  # noqa: F401
from .alias import alias_jax  # noqa: F401
from .transforms.api import (checkpoint, custom_jvp, custom_vjp, grad, hessian,  # noqa: F401
                             jacfwd, jacobian, jacrev, jvp, linear_transpose, linearize, remat,
                             value_and_grad, vjp, vmap)

from .version import __version__, __version_info__  # noqa: F401  (the JAX API implemented)
from . import random  # noqa: E402,F401  (after numpy: random is built on it)
# (as with JAX, flatten_util and test_util load when imported, not with the package; image,
# custom_batching and the modules in _LAZY_MODULES below on first use)
from . import dtypes, sharding, typing  # noqa: E402,F401
from .sharding import reshard  # noqa: E402,F401
from . import debug, experimental  # noqa: E402,F401
from .callback import effects_barrier, pure_callback  # noqa: E402,F401
from . import api_util, version  # noqa: E402,F401  (libraries reach them as jax.api_util, ...)
from . import custom_derivatives  # noqa: E402,F401
from .custom_derivatives import closure_convert, custom_gradient  # noqa: E402,F401
from . import ad_checkpoint  # noqa: E402,F401
from .ad_checkpoint import checkpoint_policies  # noqa: E402,F401
from . import ref  # noqa: E402,F401
from . import distributed  # noqa: E402,F401
from .distributed import (make_array_from_callback,  # noqa: E402,F401
                          make_array_from_process_local_data,
                          make_array_from_single_device_arrays)
from .ref import Ref, empty_ref, free_ref, freeze, new_ref  # noqa: E402,F401

# --- JAX's remaining top-level names (the surface branch): functions and enums here, modules
# loaded on first use through __getattr__ below (import time unchanged)
from types import SimpleNamespace as _Namespace  # noqa: E402
from .api import fwd_and_bwd  # noqa: E402,F401
from .core.devices import host_count, host_id, host_ids  # noqa: E402,F401
from .core.sharding import (MemorySpace as _MemorySpace, get_abstract_mesh,  # noqa: E402,F401
                            get_mesh, use_abstract_mesh)
from .core.slicing import ds  # noqa: E402,F401
from .core.user_context import make_user_context  # noqa: E402,F401
from .runtime.devices import copy_to_host_async, live_arrays  # noqa: E402,F401
from .runtime.jit import Inline  # noqa: E402,F401
from .runtime.stages import CompilerEffortLevel  # noqa: E402,F401
from .shard_map import smap  # noqa: E402,F401
from .transforms import api as _transforms_api  # noqa: E402
ad = _Namespace(DontWant=_transforms_api.DontWant, DidntWant=_transforms_api.DidntWant,
                GradRef=_transforms_api.GradRef, GradValue=_transforms_api.GradValue)
memory = _Namespace(Space=_MemorySpace)
_LAZY_MODULES = frozenset({"custom_batching", "dlpack", "export", "ffi", "image", "interpreters",
                           "lib", "monitoring", "ops", "profiler", "scipy"})
_LAZY_NAMES = {"print_environment_info": "environment_info"}


def __getattr__(name: str):
    """`jax.profiler`, `jax.scipy`, ... without an import of their own, as JAX's modules are
    attributes of the package: each imported on first use (import tracejit stays as fast)."""
    import importlib
    if name in _LAZY_MODULES:
        return importlib.import_module(f".{name}", __name__)
    if name in _LAZY_NAMES:
        return getattr(importlib.import_module(f".{_LAZY_NAMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _LAZY_MODULES | set(_LAZY_NAMES))


backend_start.imported()  # (last: the start-up thread may import from here on)
