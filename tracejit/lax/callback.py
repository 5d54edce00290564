"""Host callbacks: primitives whose work is a Python function run on concrete values, from the
reference interpreter (their impl) or from native code (backend/llvm/host_callback.py calls
`call_host` back through one trampoline). The user APIs (debug, callbacks) sit above lax.

debug_callback (and debug_print, its form for jax.debug.print, with the format in its params as
in JAX's jaxprs): effectful, no results; under jvp it runs on the primals and has no tangent, it
transposes to nothing, under vmap it runs once per batch element (JAX's rule).
pure_callback: pure (dropped when unused, may be merged); no JVP; vmap by its `vmap_method`.
io_callback: effectful; no JVP; vmap as a sequential loop, not at all when ordered.
"""
from __future__ import annotations

import sys
import threading
import traceback
from typing import Any, Callable, Sequence

import numpy as np

from ..core import dtypes
from ..core.array import Array
from ..core.avals import ShapedArray
from ..core.batching import current_axis
from ..core.errors import JaxRuntimeError
from ..core.primitive import Primitive
from ..core.pytree import PyTreeDef, tree_leaves, tree_structure, tree_unflatten
from ..core.rules import axis_size, moveaxis
from ..core.trace import get_aval
from .control_flow import scan
from .shape import broadcast, index_in_dim

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized", None)


class FlatCallback:
    """The user's function called with flat array leaves: it puts back the static (non-array)
    leaves, rebuilds (args, kwargs) and returns the flat leaves of the result. A param of the
    callback primitives; compared by identity, so two calls are never merged by accident."""
    __slots__ = ("callback_func", "in_tree", "static")

    def __init__(self, callback_func: Callable, in_tree: PyTreeDef,
                 static: tuple[tuple[int, Any], ...] = ()):
        self.callback_func = callback_func
        self.in_tree = in_tree
        self.static = static  # (flat position, value) of the leaves that are not arrays

    def __call__(self, *flat_args: Any) -> list:
        args, kwargs = _unflatten(flat_args, self.in_tree, self.static)
        return tree_leaves(self.callback_func(*args, **kwargs))

    def __repr__(self) -> str:
        return f"_FlatCallback(callback_func={self.callback_func!r}, in_tree={self.in_tree})"


def _unflatten(flat_args: Sequence[Any], in_tree: PyTreeDef,
               static: tuple[tuple[int, Any], ...]) -> tuple[tuple, dict]:
    """(args, kwargs) from the array leaves and the static ones at their flat positions."""
    leaves, dyn, by_position = [], iter(flat_args), dict(static)
    for i in range(len(by_position) + len(flat_args)):
        leaves.append(by_position[i] if i in by_position else next(dyn))
    return tree_unflatten(in_tree, leaves)


# --- running a callback on the host ---------------------------------------------------------

_state = threading.local()  # .compiled: > 0 while a compiled program of this thread runs


class compiled_program:
    """Marks the thread as running a compiled program (the interpreter backend's executable):
    a failing callback then raises JaxRuntimeError, as from native code."""

    def __enter__(self):
        _state.compiled = getattr(_state, "compiled", 0) + 1

    def __exit__(self, *exc):
        _state.compiled -= 1


def callback_error(exc: BaseException) -> JaxRuntimeError:
    """JAX's error for an exception raised by a callback inside a compiled program (an FFI
    handler's error is JAX's already: it stays as it is)."""
    if isinstance(exc, JaxRuntimeError) and getattr(exc, "raised_as_is", False):
        return exc
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return JaxRuntimeError(f"INTERNAL: CpuCallback error calling callback: {tb.rstrip()}")


def call_host(prim: Primitive, params: dict, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run the equation's callback on concrete inputs (handed to it as Arrays, as JAX hands
    jax.Arrays) and return its results checked against the declared avals, as NumPy arrays of
    exactly those dtypes. Raises what the callback raises, or JAX's RuntimeError on a result of
    the wrong number, shape or dtype."""
    arrays = _as_arrays(args)
    if prim is debug_print_p:
        _print_formatted(arrays, **params)
        return []
    out = params["callback"](*arrays)
    if prim is debug_callback_p:
        return []
    return checked_results(out, params["result_avals"])


def call_impl(prim: Primitive, params: dict, out_avals: Sequence[ShapedArray],
              args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run `prim`'s impl rule on concrete inputs (as Arrays) and return its results checked
    against `out_avals`: how native code runs a primitive that has no lowering of its own (a
    user-defined primitive; see backend/llvm/host_callback.lower_with_impl)."""
    out = prim.impl(*_as_arrays(args), **params)
    return checked_results(out if prim.multiple_results else [out], out_avals)


def _as_arrays(args: Sequence[np.ndarray]) -> list[Array]:
    # copies: the callee may keep them, and Array.from_numpy freezes what it is given (an
    # interpreter value may be the caller's own NumPy array)
    return [Array.from_numpy(np.array(x), get_aval(x)) for x in args]


def checked_results(out: Sequence[Any], result_avals: Sequence[ShapedArray]) -> list[np.ndarray]:
    """`out` as NumPy arrays of exactly `result_avals`' dtypes (64-bit values canonicalized as
    JAX does), or JAX's RuntimeError naming the first result of the wrong number/shape/dtype."""
    if len(out) != len(result_avals):
        raise RuntimeError("Mismatched number of outputs from callback. "
                           f"Expected: {len(result_avals)}, Actual: {len(out)}")
    checked = []
    for i, (x, aval) in enumerate(zip(out, result_avals)):
        x = np.asarray(x)
        x = x.astype(dtypes.canonicalize_dtype(x.dtype), copy=False)  # as JAX's x64 rule
        if x.shape != aval.shape:
            raise RuntimeError(f"Incorrect output shape for return value #{i}: "
                               f"Expected: {aval.shape}, Actual: {x.shape}")
        if x.dtype != aval.dtype:
            raise RuntimeError(f"Incorrect output dtype for return value #{i}: "
                               f"Expected: {aval.dtype}, Actual: {x.dtype}")
        checked.append(x)
    return checked


def _impl(prim: Primitive) -> Callable:
    def impl(*args, **params):
        try:
            return call_host(prim, params, args)
        except Exception as e:
            # eagerly a debug callback raises the user's exception itself (JAX's eager rule);
            # inside a compiled program, and for pure and io callbacks, which JAX runs as a
            # compiled program even eagerly, it is a JaxRuntimeError naming it
            if prim in (debug_callback_p, debug_print_p) and not getattr(_state, "compiled", 0):
                raise
            raise callback_error(e) from e
    return impl


def _result_avals(*avals, result_avals, **_):
    return list(result_avals)


# --- debug_callback ---------------------------------------------------------------------------

debug_callback_p = Primitive("debug_callback", multiple_results=True)
debug_callback_p.effectful = True
debug_callback_p.def_abstract_eval(lambda *avals, **params: [])
debug_callback_p.def_impl(_impl(debug_callback_p))


def _debug_callback_jvp(primals, tangents, **params):
    return debug_callback_p.bind(*primals, **params), []


def _debug_callback_transpose(ct, *args, **params):
    return [None] * len(args)


def _debug_callback_batch(vals, dims, **params):
    """Once per batch element, unrolled (JAX's rule): each call sees one element's values."""
    for i in range(axis_size(vals, dims)):
        debug_callback_p.bind(*[x if d is None else index_in_dim(x, i, d, keepdims=False)
                                for x, d in zip(vals, dims)], **params)
    return [], []


debug_callback_p.def_jvp(_debug_callback_jvp)
debug_callback_p.def_transpose(_debug_callback_transpose)
debug_callback_p.def_batch(_debug_callback_batch)

# jax.debug.print: the format, the tree of (args, kwargs), the leaves that are not arrays and
# NumPy's print options of the call site are params; the rules are debug_callback's
debug_print_p = Primitive("debug_print", multiple_results=True)
debug_print_p.effectful = True
debug_print_p.def_abstract_eval(lambda *avals, **params: [])
debug_print_p.def_impl(_impl(debug_print_p))
debug_print_p.def_jvp(lambda primals, tangents, **params: (debug_print_p.bind(*primals, **params),
                                                          []))
debug_print_p.def_transpose(_debug_callback_transpose)


def _debug_print_batch(vals, dims, **params):
    for i in range(axis_size(vals, dims)):
        debug_print_p.bind(*[x if d is None else index_in_dim(x, i, d, keepdims=False)
                             for x, d in zip(vals, dims)], **params)
    return [], []


debug_print_p.def_batch(_debug_print_batch)


def _print_formatted(arrays, *, fmt, has_placeholders, in_tree, static_args, np_printoptions,
                     logging_record, ordered, partitioned):
    args, kwargs = _unflatten(arrays, in_tree, static_args)
    if has_placeholders:
        with np.printoptions(**dict(np_printoptions)):
            msg = fmt.format(*args, **kwargs)
    else:
        msg = " ".join((fmt, *(str(x) for x in args)))
    if logging_record is not None:
        import logging  # (here: `import tracejit` need not import it for this)
        logging.getLogger(logging_record).info(msg)
    else:
        sys.stdout.write(msg + "\n")


# --- pure_callback ----------------------------------------------------------------------------

pure_callback_p = Primitive("pure_callback", multiple_results=True)
pure_callback_p.def_abstract_eval(_result_avals)
pure_callback_p.def_impl(_impl(pure_callback_p))


def _pure_callback_jvp(primals, tangents, **params):
    raise ValueError("Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use "
                     "callbacks while taking gradients.")


def _pure_callback_transpose(ct, *args, **params):
    raise ValueError("Pure callbacks do not support transpose. Please use `jax.custom_vjp` to "
                     "use callbacks while taking gradients.")


def _batched_avals(size: int, avals: Sequence[ShapedArray]) -> tuple[ShapedArray, ...]:
    return tuple(ShapedArray((size,) + a.shape, a.dtype, weak_type=a.weak_type) for a in avals)


def _sequential(prim: Primitive, vals, dims, unroll: bool = False, **params) -> list:
    """The callback once per batch element, in a loop (JAX's lax.map): unbatched operands are
    passed whole to every call."""
    batched = [d is not None for d in dims]
    fixed = [x for x, b in zip(vals, batched) if not b]
    xs = [moveaxis(x, d, 0) for x, d in zip(vals, dims) if d is not None]

    def step(carry, xs_i):
        it_fixed, it_xs = iter(fixed), iter(xs_i)
        args = [next(it_xs) if b else next(it_fixed) for b in batched]
        return carry, prim.bind(*args, **params)

    _, ys = scan(step, (), xs, unroll=axis_size(vals, dims) if unroll else 1)
    return list(ys)


def _pure_callback_batch(vals, dims, *, vmap_method, result_avals, **params):
    size = axis_size(vals, dims)
    params = dict(params, vmap_method=vmap_method)
    axis = current_axis()
    # over the devices of shard_map/pmap (batched here; JAX maps no vmap there) JAX calls a
    # callback without a vmap_method once per device with its block: so do we
    if vmap_method in ("sequential", "sequential_unrolled") or (
            vmap_method is None and axis is not None and axis.devices):
        outs = _sequential(pure_callback_p, vals, dims, vmap_method == "sequential_unrolled",
                           result_avals=result_avals, **params)
    elif vmap_method in ("expand_dims", "broadcast_all", "legacy_vectorized"):
        moved = [x if d is None else moveaxis(x, d, 0) for x, d in zip(vals, dims)]
        if vmap_method != "legacy_vectorized":
            n = size if vmap_method == "broadcast_all" else 1
            moved = [broadcast(x, (n,)) if d is None else x for x, d in zip(moved, dims)]
        outs = pure_callback_p.bind(*moved, result_avals=_batched_avals(size, result_avals),
                                    **params)
    else:
        raise NotImplementedError(
            "vmap is only supported for the pure_callback primitive when vmap_method is one of "
            "'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
            f"'legacy_vectorized'. Got vmap_method={vmap_method!r}.")
    return outs, [0] * len(outs)


pure_callback_p.def_jvp(_pure_callback_jvp)
pure_callback_p.def_transpose(_pure_callback_transpose)
pure_callback_p.def_batch(_pure_callback_batch)


# --- io_callback ------------------------------------------------------------------------------

io_callback_p = Primitive("io_callback", multiple_results=True)
io_callback_p.effectful = True
io_callback_p.def_abstract_eval(_result_avals)
io_callback_p.def_impl(_impl(io_callback_p))


def _io_callback_jvp(primals, tangents, **params):
    raise ValueError("IO callbacks do not support JVP.")


def _io_callback_transpose(ct, *args, **params):
    raise ValueError("IO callbacks do not support transpose.")


def _io_callback_batch(vals, dims, *, ordered, **params):
    if ordered:
        raise ValueError("Cannot `vmap` ordered IO callback.")
    outs = _sequential(io_callback_p, vals, dims, ordered=False, **params)
    return outs, [0] * len(outs)


io_callback_p.def_jvp(_io_callback_jvp)
io_callback_p.def_transpose(_io_callback_transpose)
io_callback_p.def_batch(_io_callback_batch)

CALLBACK_PRIMITIVES = (debug_callback_p, debug_print_p, pure_callback_p, io_callback_p)


def host_call(fn: Callable[..., Sequence[Any]], avals_out: Sequence[ShapedArray],
              *args: Any) -> list:
    """Run `fn(*args)` on the host as one pure_callback equation: under `jit` native code calls
    back into Python with the concrete values. `fn` takes the arrays and returns a sequence of
    arrays with `avals_out`' shapes and dtypes (e.g. a user primitive's impl rule, with its
    params bound). Pure: it may be dropped when its results are unused. Under vmap it runs once
    per batch element."""
    callback = FlatCallback(lambda *xs: list(fn(*xs)), _flat_tree(len(args)))
    return pure_callback_p.bind(*args, callback=callback,
                                result_avals=tuple(ShapedArray(a.shape, a.dtype)
                                                   for a in avals_out),
                                sharding=None, vmap_method="sequential")


def _flat_tree(n: int) -> PyTreeDef:
    return tree_structure((tuple(range(n)), {}))
