"""Shared machinery of tracejit.numpy: turning inputs into arrays, NumPy-style dtype promotion
and rank broadcasting on top of lax (which neither promotes nor broadcasts)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..lax import lenient as lax
from ..lax.shape import broadcast_shapes  # noqa: F401  (jnp's is lax's)
from ..core import dtypes, transfer_guard
from ..core.array import Array, aligned_copy
from ..core.avals import ShapedArray, check_shape
from ..core.config import config
from ..core.devices import check_device
from ..core.sharding import context_sharding
from ..core.trace import Tracer, current_dynamic_trace, get_aval
from ..lax.elementwise import copy_p

_scalar_types = (bool, int, float, complex)


def is_arraylike(x: Any) -> bool:
    return isinstance(x, (Array, Tracer, np.ndarray, np.generic) + _scalar_types) or \
        hasattr(x, "__jax_array__")


def check_arraylike(fun_name: str, *args: Any, names: Sequence[str] | None = None) -> None:
    for i, a in enumerate(args):
        if not is_arraylike(a):
            which = f"argument {names[i]!r}" if names else f"argument {i}"
            hint = " (lists and tuples must be wrapped: jnp.asarray(...))" \
                if isinstance(a, (list, tuple)) else ""
            raise TypeError(f"{fun_name} requires ndarray or scalar arguments, got "
                            f"{type(a).__name__} at {which}{hint}.")


def _scalar_array(x: Any, dtype: np.dtype | None) -> Array:
    d, weak = dtypes.dtype_and_weak(x)
    if dtype is not None:
        d, weak = dtypes.check_user_dtype(dtype), False
    if isinstance(x, int) and not isinstance(x, bool) and dtypes.is_int(d):
        info = np.iinfo(d)
        if not info.min <= x <= info.max:
            raise OverflowError(f"Python int {x} too large to convert to {d.name}")
    with np.errstate(all="ignore"):
        return _from_host(np.asarray(x, dtype=d), ShapedArray((), d, weak))


def asarray(a: Any, dtype: Any = None, order: str | None = None, *, copy: bool | None = None,
            device: Any = None) -> Any:
    """jnp.asarray: arrays pass through (converted if dtype given); Python scalars become weakly
    typed arrays; nested sequences are stacked with promotion."""
    if device is not None:
        check_device(device, "asarray")
    out = _asarray(a, dtype)
    if type(out) is Array and out._sharding is None and not isinstance(a, Array):
        # made from host data: under jax.set_mesh, replicated over its mesh (as JAX's
        # device_put writes it: P(), whatever the axis types)
        out._sharding = context_sharding(None)
    if copy and out is a and isinstance(out, Array):
        # eagerly an operation, as JAX's copy: the result goes where the array is (or is
        # replicated over the set_mesh in effect), and a committed array under a set_mesh of
        # other devices is refused; staged in a trace, the concrete copy it always was
        return copy_p.bind(out) if current_dynamic_trace() is None else out.copy()
    return out


def _asarray(x: Any, dtype: Any = None) -> Any:
    if isinstance(x, (Array, Tracer)):
        if dtype is None:
            return x
        return lax.convert_element_type(x, dtypes.check_user_dtype(dtype))
    if hasattr(x, "__jax_array__"):
        return asarray(x.__jax_array__(), dtype)
    if isinstance(x, _scalar_types):
        return _scalar_array(x, dtype)
    if isinstance(x, (np.ndarray, np.generic)):
        if x.dtype == object or not dtypes.is_supported(np.dtype(x.dtype)):
            raise TypeError(f"Value {x!r:.80} with dtype {x.dtype} is not a valid JAX array "
                            "type. Only arrays of numeric types are supported by JAX.")
        d = dtypes.canonicalize_dtype(x.dtype) if dtype is None else dtypes.check_user_dtype(dtype)
        with np.errstate(all="ignore"):
            return _from_host(aligned_copy(x, d), ShapedArray(np.shape(x), d, False),
                              fresh=True)
    if isinstance(x, (list, tuple)):
        return _asarray_sequence(x, dtype)
    if isinstance(x, (str, bytes)):
        raise TypeError(f"Value {x!r:.80} with dtype <U{len(x)} is not a valid JAX array type. "
                        "Only arrays of numeric types are supported by JAX.")
    raise TypeError(f"Value {x!r:.80} of type {type(x).__name__} is not a valid JAX array type. "
                    "Only arrays of numeric types (and nested lists/tuples of them) are "
                    "supported.")


def _asarray_sequence(x: Sequence, dtype: Any) -> Any:
    leaves = _flatten_nested(x)
    if any(isinstance(leaf, Tracer) or isinstance(leaf, Array) for leaf in leaves):
        # stack elementwise: keeps tracers traced
        parts = [asarray(e) for e in x]
        shapes = {get_aval(p).shape for p in parts}
        if len(shapes) > 1:
            raise ValueError(f"setting an array element with a sequence. The requested array has "
                             f"an inhomogeneous shape: element shapes {sorted(shapes)}")
        if dtype is None:
            dtype = dtypes.result_type(*parts)
        d = dtypes.check_user_dtype(dtype)
        parts = [lax.broadcast(lax.convert_element_type(p, d), (1,)) for p in parts]
        if not parts:
            return _empty((0,), d)
        return lax.concatenate(parts, 0)
    for leaf in leaves:
        if not isinstance(leaf, _scalar_types + (np.ndarray, np.generic)):
            raise TypeError(f"Value {leaf!r:.80} of type {type(leaf).__name__} inside a list is "
                            "not a valid JAX array element.")
    try:
        np_val = np.array(x)
    except ValueError as e:
        raise ValueError(f"setting an array element with a sequence. The requested array has "
                         f"an inhomogeneous shape ({e})") from None
    if dtype is None:
        # Python scalars in a list are not weak: float list -> default float, as in JAX
        if np_val.dtype == object or not dtypes.is_supported(np_val.dtype):
            raise TypeError(f"Value {x!r:.80} is not a valid JAX array: dtype {np_val.dtype}")
        if all(isinstance(v, _scalar_types) for v in leaves):
            dtype = dtypes.default_for_kind(np_val.dtype.kind) if np_val.size else \
                dtypes.default_float()
        else:
            dtype, _ = dtypes.result_type_and_weak(*leaves)
    d = dtypes.check_user_dtype(dtype)
    if d.kind in "iu" and np_val.dtype.kind in "iu":
        info = np.iinfo(d)
        if np_val.size and (np_val.min() < info.min or np_val.max() > info.max):
            raise OverflowError(f"Python int too large to convert to {d.name}")
    with np.errstate(all="ignore"):
        return _from_host(np_val.astype(d), ShapedArray(np_val.shape, d, False))


def _from_host(value: np.ndarray, aval: ShapedArray, fresh: bool = False) -> Array:
    """Host data (a NumPy array, Python scalars) as an Array: an implicit host-to-device
    transfer, which jax.transfer_guard may log or refuse."""
    if transfer_guard.guarding:
        transfer_guard.host_to_device(aval)
    return Array.from_numpy(value, aval, fresh=fresh)


def _flatten_nested(x) -> list:
    out, stack = [], [x]
    while stack:
        e = stack.pop()
        if isinstance(e, (list, tuple)):
            stack.extend(e)
        else:
            out.append(e)
    return out


def _empty(shape, dtype):
    return Array.from_numpy(np.zeros(shape, dtype), ShapedArray(shape, dtype, False))


def array(object: Any, dtype: Any = None, copy: bool = True, order: Any = "K",  # noqa: A002
          ndmin: int = 0, *, device: Any = None) -> Any:
    """jnp.array: as asarray, but a copy of an Array by default, and at least `ndmin` dims."""
    out = asarray(object, dtype, copy=copy, device=device)
    aval = get_aval(out)
    if ndmin > aval.ndim:
        out = lax.broadcast(out, (1,) * (ndmin - aval.ndim))
    return out


# --- promotion -----------------------------------------------------------------------------

def convert_to(x: Any, dtype: np.dtype, weak: bool = False) -> Any:
    """x as an array of `dtype`: Python scalars become constants directly (literals in jaxprs,
    no conversion equation); arrays convert only when dtype or weakness differ."""
    if isinstance(x, _scalar_types):
        if isinstance(x, complex) and dtype.kind != "c":
            raise TypeError(f"can't convert complex {x} to {dtype.name}")
        return _typed_scalar(x, dtype, weak)
    x = _asarray(x)  # (as JAX's promotion converts: not placed under set_mesh here)
    aval = get_aval(x)
    if aval.dtype == dtype and aval.weak_type == weak:
        return x
    return lax.convert_element_type(x, dtype, weak)


def _typed_scalar(x: Any, dtype: np.dtype, weak: bool) -> Array:
    if isinstance(x, int) and not isinstance(x, bool) and dtypes.is_int(dtype):
        info = np.iinfo(dtype)
        if not info.min <= x <= info.max:
            # JAX: an int that fits the default int wraps into a narrower dtype (uint8 + -1
            # gives 255); only ints beyond the default int overflow
            wide = np.iinfo(dtypes.default_int())
            if not wide.min <= x <= wide.max:
                raise OverflowError(f"Python int {x} too large to convert to {dtype.name}")
            x = np.asarray(x, wide.dtype).astype(dtype)
    with np.errstate(all="ignore"):
        return _from_host(np.asarray(x, dtype=dtype), ShapedArray((), dtype, weak))


def promote_dtypes(*args: Any) -> list:
    """Convert all args to their common (JAX-promoted) dtype, keeping weak types weak."""
    if len(args) < 2:  # (JAX's lax.asarray: host data is not placed under set_mesh here)
        return [_asarray(a) for a in args]
    dtype, weak = dtypes.result_type_and_weak(*args)
    return [convert_to(a, dtype, weak) for a in args]


def promote_dtypes_inexact(*args: Any) -> list:
    """As promote_dtypes, then ints/bools become the default float (jnp.sin(int) is float)."""
    dtype, weak = dtypes.result_type_and_weak(*args)
    return [convert_to(a, dtypes.to_inexact(dtype), weak) for a in args]


def promote_dtypes_numeric(*args: Any) -> list:
    """As promote_dtypes, but bools become the default int (for arithmetic like jnp.sum)."""
    dtype, weak = dtypes.result_type_and_weak(*args)
    if dtype == dtypes.bool_:
        dtype, weak = dtypes.default_int(), False
    return [convert_to(a, dtype, weak) for a in args]


def broadcast_to(x: Any, shape: tuple[int, ...] | int) -> Any:
    check_arraylike("broadcast_to", x)
    x = asarray(x)
    aval = get_aval(x)
    shape = check_shape((shape,) if np.ndim(shape) == 0 else shape)
    if aval.shape == shape:
        return x
    if len(shape) < aval.ndim:
        raise ValueError(f"Cannot broadcast to shape with fewer dimensions: arr_shape="
                         f"{aval.shape} shape={shape}")
    lead = len(shape) - aval.ndim
    for d, s in zip(aval.shape, shape[lead:]):
        if d != 1 and d != s:
            raise ValueError(f"Incompatible shapes for broadcasting: {aval.shape} and "
                             f"requested shape {shape}")
    squeeze_dims = tuple(i for i, (d, s) in enumerate(zip(aval.shape, shape[lead:]))
                         if d == 1 and s != 1)
    if squeeze_dims:
        x = lax.squeeze(x, squeeze_dims)
    kept = [lead + i for i in range(aval.ndim) if i not in squeeze_dims]
    return lax.broadcast_in_dim(x, shape, kept)


def promote_shapes(fun_name: str, *args: Any) -> list:
    """NumPy rank broadcasting; scalars (rank 0) are left for lax's scalar broadcast."""
    avals = [get_aval(a) for a in args]
    shapes = [a.shape for a in avals if a.shape != ()]
    if len({s for s in shapes}) <= 1:
        return list(args)
    if config.jax_numpy_rank_promotion != "allow" and len({len(s) for s in shapes}) > 1:
        msg = (f"Operands could not be broadcast together for {fun_name} with shapes "
               f"{' '.join(str(s) for s in shapes)} and with the config option "
               "jax_numpy_rank_promotion='raise'.")
        if config.jax_numpy_rank_promotion == "raise":
            raise ValueError(msg)
        import warnings
        warnings.warn(msg, stacklevel=3)
    try:
        shape = broadcast_shapes(*shapes)
    except ValueError:
        # JAX hands operands of a single rank straight to lax, whose check raises TypeError;
        # mixed ranks fail in broadcast_shapes with a ValueError
        error = TypeError if len({a.ndim for a in avals}) == 1 else ValueError
        raise error(f"{fun_name}: incompatible shapes for broadcasting: "
                    f"{', '.join(str(a.shape) for a in avals)}") from None
    return [a if get_aval(a).shape in ((), shape) else broadcast_to(a, shape) for a in args]


def promote_args(fun_name: str, *args: Any) -> list:
    check_arraylike(fun_name, *args)
    return promote_shapes(fun_name, *promote_dtypes(*args))


def promote_args_inexact(fun_name: str, *args: Any) -> list:
    check_arraylike(fun_name, *args)
    return promote_shapes(fun_name, *promote_dtypes_inexact(*args))


def promote_args_numeric(fun_name: str, *args: Any) -> list:
    check_arraylike(fun_name, *args)
    return promote_shapes(fun_name, *promote_dtypes_numeric(*args))
