"""jax.pure_callback, jax.experimental.io_callback and jax.effects_barrier: user-facing, over the
callback primitives of lax/callback.py (pytrees in and out, JAX's argument checks)."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .core import dtypes
from .core.avals import ShapedArray
from .core.pytree import tree_flatten, tree_map, tree_unflatten
from .lax.callback import VMAP_METHODS, FlatCallback, io_callback_p, pure_callback_p

__all__ = ["effects_barrier", "io_callback", "pure_callback"]


def _result_avals(result_shape_dtypes: Any) -> tuple[list[ShapedArray], Any]:
    def aval(x):
        dt = np.dtype(x.dtype)
        if dtypes.canonicalize_dtype(dt) != dt:
            raise ValueError("result_shape_dtypes cannot specify 64-bit types when "
                             "`jax_enable_x64` is disabled")
        return ShapedArray(x.shape, dt)
    avals, out_tree = tree_flatten(tree_map(aval, result_shape_dtypes))
    return avals, out_tree


def pure_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                  sharding: Any = None, vmap_method: str | None = None, **kwargs: Any) -> Any:
    """Call the pure Python function `callback(*args, **kwargs)` on concrete arrays, also inside
    jit (native code calls back into Python). It must return arrays of `result_shape_dtypes`'
    shapes and dtypes (a pytree of objects with .shape and .dtype, e.g. ShapeDtypeStruct).
    Being pure, it may be dropped when its result is unused, merged with an identical call, or
    called once per batch element. Under vmap, `vmap_method` decides: "sequential" (a loop over
    the batch), "sequential_unrolled", "expand_dims" (unbatched arguments get a leading axis of
    size 1), "broadcast_all" (they are tiled to the batch size), "legacy_vectorized" (called
    once with the batched arguments as they are); None raises under vmap. There is no JVP: wrap
    it in custom_jvp/custom_vjp to differentiate."""
    if vmap_method not in VMAP_METHODS:
        raise ValueError(f"vmap_method must be on of the allowed methods {list(VMAP_METHODS)}, "
                         f"but got: {vmap_method}")
    flat_args, in_tree = tree_flatten((args, kwargs))
    avals, out_tree = _result_avals(result_shape_dtypes)
    out = pure_callback_p.bind(*flat_args, callback=FlatCallback(callback, in_tree),
                               result_avals=tuple(avals), sharding=sharding,
                               vmap_method=vmap_method)
    return tree_unflatten(out_tree, out)


def io_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                sharding: Any = None, ordered: bool = False, **kwargs: Any) -> Any:
    """Call the impure Python function `callback(*args, **kwargs)` on concrete arrays, also
    inside jit. It is never dropped or merged; with `ordered=True` calls run in program order
    (and cannot be vmapped). Unordered, vmap calls it once per batch element. No JVP."""
    flat_args, in_tree = tree_flatten((args, kwargs))
    avals, out_tree = _result_avals(result_shape_dtypes)
    out = io_callback_p.bind(*flat_args, callback=FlatCallback(callback, in_tree),
                             result_avals=tuple(avals), sharding=sharding, ordered=ordered)
    return tree_unflatten(out_tree, out)


def effects_barrier() -> None:
    """Wait until every callback of the programs dispatched so far has run. A compiled program
    runs to its end before its call returns (callbacks included), so there is never anything
    to wait for."""
