"""Array creation in tracejit.numpy: zeros/ones/full(_like), empty, eye, identity, arange,
linspace/logspace/geomspace, meshgrid, tri/tril/triu, indices, copy. Built from lax; shapes
and counts must be concrete (known while tracing), fill values and bounds may be traced."""
from __future__ import annotations

import operator
import types
from typing import Any, Sequence

import numpy as np

from ..lax import lenient as lax
from ..core import dtypes
from ..core.avals import check_shape
from ..core.devices import check_device
from ..core.trace import Tracer, concrete_value, get_aval
from ..lax._base import canonicalize_axis
from ._ufuncs import add, multiply, subtract, true_divide
from ._util import (array, asarray, broadcast_shapes, broadcast_to, check_arraylike,
                    promote_args_inexact)

__all__ = ["zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like",
           "full_like", "eye", "identity", "arange", "linspace", "logspace", "geomspace",
           "meshgrid", "tri", "tril", "triu", "indices", "copy"]


# --- shared pieces -------------------------------------------------------------------------

def canonicalize_shape(shape: Any, name: str = "shape") -> tuple[int, ...]:
    """A user shape (an int or a sequence of ints) as a tuple; traced entries are errors."""
    if isinstance(shape, types.GeneratorType):
        raise TypeError("expected sequence object with len >= 0 or a single integer")
    if not isinstance(shape, (tuple, list)) and np.ndim(shape) == 0:
        shape = (shape,)
    return check_shape(shape, name)


def _dtype_arg(dtype: Any, default: Any, fun: str, shape: Any) -> np.dtype:
    if isinstance(dtype, int) and isinstance(shape, int):
        raise TypeError(f"Cannot interpret '{dtype}' as a data type.\n\nDid you accidentally "
                        f"write `jax.numpy.{fun}({shape}, {dtype})` when you meant "
                        f"`jax.numpy.{fun}(({shape}, {dtype}))`, i.e. with a single tuple "
                        "argument for the shape?")
    return dtypes.check_user_dtype(default if dtype is None else dtype)


def _concrete(x: Any, context: str) -> Any:
    """x itself, or the concrete value of a tracer (ConcretizationTypeError if it has none)."""
    return concrete_value(x, context) if isinstance(x, Tracer) else x


def _concrete_int(x: Any, context: str) -> int:
    return operator.index(_concrete(x, context))


def _to_inexact(dtype: np.dtype) -> np.dtype:
    return dtype if dtypes.is_inexact(dtype) else dtypes.default_float()


# --- filled arrays -------------------------------------------------------------------------

def zeros(shape: Any, dtype: Any = None, *, device: Any = None) -> Any:
    """An array of zeros (default dtype float32, float64 with x64)."""
    check_device(device, "zeros")
    dtype = _dtype_arg(dtype, float, "zeros", shape)
    return lax.full(canonicalize_shape(shape), 0, dtype)


def ones(shape: Any, dtype: Any = None, *, device: Any = None) -> Any:
    """An array of ones (default dtype float32, float64 with x64)."""
    check_device(device, "ones")
    dtype = _dtype_arg(dtype, float, "ones", shape)
    return lax.full(canonicalize_shape(shape), 1, dtype)


def empty(shape: Any, dtype: Any = None, *, device: Any = None) -> Any:
    """As zeros: JAX arrays are immutable, so 'uninitialised' memory is never observable."""
    check_device(device, "empty")
    dtype = _dtype_arg(dtype, float, "empty", shape)
    return lax.full(canonicalize_shape(shape), 0, dtype)


def full(shape: Any, fill_value: Any, dtype: Any = None, *, device: Any = None) -> Any:
    """An array of `shape` filled with fill_value (an array fill value is broadcast)."""
    check_device(device, "full")
    check_arraylike("full", fill_value)
    if dtype is not None:
        dtype = dtypes.check_user_dtype(dtype)
    elif device is not None:  # JAX commits the result to the device as a strong type
        dtype = dtypes.result_type(fill_value)
    if np.ndim(fill_value) == 0:
        return lax.full(canonicalize_shape(shape), fill_value, dtype)
    return broadcast_to(asarray(fill_value, dtype), canonicalize_shape(shape))


def _check_like(fun: str, a: Any, *others: Any) -> None:
    # duck-typed prototypes (anything with shape and dtype, e.g. ShapeDtypeStruct) are fine
    if hasattr(a, "shape") and hasattr(a, "dtype"):
        check_arraylike(fun, 0, *others)
    else:
        check_arraylike(fun, a, *others)


def full_like(a: Any, fill_value: Any, dtype: Any = None, shape: Any = None, *,
              device: Any = None) -> Any:
    """An array shaped and typed like `a` (unless overridden), filled with fill_value."""
    check_device(device, "full_like")
    _check_like("full_like", a, fill_value)
    if dtype is not None:
        dtype = dtypes.check_user_dtype(dtype)
    elif device is not None:  # JAX commits the result to the device as a strong type
        dtype = a.dtype if hasattr(a, "dtype") else dtypes.result_type(a)
    if shape is not None:
        shape = canonicalize_shape(shape)
    if np.ndim(fill_value) == 0:
        return lax.full_like(a, fill_value, dtype, shape)
    aval = a.aval if hasattr(a, "aval") else get_aval(a)
    return broadcast_to(asarray(fill_value, aval.dtype if dtype is None else dtype),
                        aval.shape if shape is None else shape)


def zeros_like(a: Any, dtype: Any = None, shape: Any = None, *, device: Any = None) -> Any:
    """Zeros shaped and typed like `a` (weakly typed if `a` is and no dtype is given)."""
    check_device(device, "zeros_like")
    _check_like("zeros_like", a)
    return full_like(a, 0, dtype, shape, device=device)


def ones_like(a: Any, dtype: Any = None, shape: Any = None, *, device: Any = None) -> Any:
    """Ones shaped and typed like `a` (weakly typed if `a` is and no dtype is given)."""
    check_device(device, "ones_like")
    _check_like("ones_like", a)
    return full_like(a, 1, dtype, shape, device=device)


def empty_like(prototype: Any, dtype: Any = None, shape: Any = None, *,
               device: Any = None) -> Any:
    """As zeros_like (see empty)."""
    check_device(device, "empty_like")
    _check_like("empty_like", prototype)
    return full_like(prototype, 0, dtype, shape, device=device)


# --- matrices ------------------------------------------------------------------------------

def eye(N: int, M: int | None = None, k: Any = 0, dtype: Any = None, *,
        device: Any = None) -> Any:
    """Ones on the k-th diagonal of an N x M matrix; k may be a traced integer scalar."""
    check_device(device, "eye")
    dtype = dtypes.check_user_dtype(float if dtype is None else dtype)
    if isinstance(k, int) and not isinstance(k, bool):
        info = np.iinfo(np.int32)  # a diagonal beyond int32 range is empty anyway
        k = min(max(k, info.min), info.max)
    check_arraylike("eye", k)
    offset = asarray(k)
    if offset.shape != () or not dtypes.is_int(offset.dtype):
        raise ValueError(f"k must be a scalar integer; got {k}")
    n = _concrete_int(N, "The argument 'N' of jnp.eye() must be concrete.")
    m = n if M is None else _concrete_int(M, "The argument 'M' of jnp.eye() must be concrete.")
    if n < 0 or m < 0:
        raise ValueError(f"negative dimensions are not allowed, got {N} and {M}")
    i = lax.broadcasted_iota(offset.dtype, (n, m), 0)
    j = lax.broadcasted_iota(offset.dtype, (n, m), 1)
    return lax.convert_element_type(lax.eq(lax.add(i, offset), j), dtype)


def identity(n: int, dtype: Any = None) -> Any:
    """The n x n identity matrix."""
    return eye(n, dtype=dtype)


def tri(N: int, M: int | None = None, k: int = 0, dtype: Any = None) -> Any:
    """Ones at and below the k-th diagonal. The default dtype is float32 even with x64 (JAX)."""
    dtype = np.dtype(np.float32) if dtype is None else dtypes.check_user_dtype(dtype)
    shape = (N, N if M is None else M)
    k = _concrete_int(k, "The argument 'k' of jnp.tri() must be concrete.")
    rows = lax.add(lax.broadcasted_iota(np.int32, shape, 0), np.int32(k))
    return lax.convert_element_type(lax.ge(rows, lax.broadcasted_iota(np.int32, shape, 1)), dtype)


def _triangle(name: str, m: Any, k: int, lower: bool) -> Any:
    check_arraylike(name, m)
    m = asarray(m)
    aval = get_aval(m)
    if aval.ndim < 2:
        raise ValueError(f"Argument to jax.numpy.{name} must be at least 2D")
    n_rows, n_cols = aval.shape[-2:]
    mask = lax.broadcast(tri(n_rows, n_cols, k if lower else k - 1, dtype=bool), aval.shape[:-2])
    zero = zeros_like(m)
    return lax.select(mask, m, zero) if lower else lax.select(mask, zero, m)


def tril(m: Any, k: int = 0) -> Any:
    """m with the elements above the k-th diagonal zeroed (on the last two axes)."""
    return _triangle("tril", m, k, lower=True)


def triu(m: Any, k: int = 0) -> Any:
    """m with the elements below the k-th diagonal zeroed (on the last two axes)."""
    return _triangle("triu", m, k, lower=False)


# --- ranges --------------------------------------------------------------------------------

def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None, *,
           device: Any = None) -> Any:
    """Evenly spaced values in [start, stop). The bounds must be concrete: the result's length
    depends on them (under jit, pass them as static arguments)."""
    check_device(device, "arange")
    if dtype is not None:
        dtype = dtypes.check_user_dtype(dtype)
    check_arraylike("arange", *(x for x in (start, stop, step) if x is not None))
    start_name = "stop" if stop is None and step is None else "start"
    start = _concrete(start, f"It arose in the jnp.arange argument '{start_name}'")
    stop = _concrete(stop, "It arose in the jnp.arange argument 'stop'")
    step = _concrete(step, "It arose in the jnp.arange argument 'step'")
    for name, val in ((start_name, start), ("stop", stop), ("step", step)):
        if val is not None and np.ndim(val) != 0:
            raise ValueError(f"jax.numpy.arange: arguments must be scalars; got {name}={val}")
    if dtype is None:
        dtype = dtypes.result_type(start, *(x for x in (stop, step) if x is not None))
    if any(x is not None and np.iscomplexobj(x) for x in (start, stop, step)):
        raise ValueError("Passing complex start/stop/step to jnp.arange is no longer supported "
                         "starting in JAX v0.10.0.")
    start, stop, step = (_scalar(x) for x in (start, stop, step))
    if stop is None:
        start, stop = 0, start
    if step is not None:
        # sub-32-bit floats accumulate in float32, as JAX does
        working = np.dtype(np.float32) if dtypes.is_float(dtype) and dtype.itemsize < 4 \
            else dtype
        size = max(0, int(np.ceil((stop - start) / step)))
        values = lax.mul(lax.convert_element_type(step, working),
                         lax.broadcasted_iota(working, (size,), 0))
        return lax.convert_element_type(
            lax.add(lax.convert_element_type(start, working), values), dtype)
    if start == 0:
        return lax.broadcasted_iota(dtype, (max(0, int(np.ceil(stop))),), 0)
    size = max(0, int(np.ceil(stop - start)))
    return lax.add(lax.convert_element_type(start, dtype), lax.broadcasted_iota(dtype, (size,), 0))


def _scalar(x: Any) -> Any:
    """Python scalars stay Python (so arange(0, 4, 0) raises ZeroDivisionError as in JAX);
    arrays become NumPy scalars of their dtype."""
    if x is None or isinstance(x, (bool, int, float)):
        return x
    return np.asarray(x)[()]


def _inexact_bounds(start: Any, stop: Any, dtype: Any) -> tuple:
    """linspace's, logspace's and geomspace's end points in the type they compute in, with the
    result's dtype (the user's, or the end points' promoted and made inexact) and that type."""
    if dtype is None:
        dtype = _to_inexact(dtypes.result_type(start, stop))
    else:
        dtype = dtypes.check_user_dtype(dtype)
    cdtype = _to_inexact(dtype)
    return (lax.convert_element_type(asarray(start), cdtype),
            lax.convert_element_type(asarray(stop), cdtype), dtype, cdtype)


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             retstep: bool = False, dtype: Any = None, axis: int = 0, *,
             device: Any = None) -> Any:
    """`num` evenly spaced values from start to stop (array bounds give one series per element,
    laid out along `axis`); with retstep, also the spacing."""
    check_device(device, "linspace")
    num = _concrete_int(num, "The 'num' argument of jnp.linspace must be concrete.")
    axis = _concrete_int(axis, "The 'axis' argument of jnp.linspace must be concrete.")
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    check_arraylike("linspace", start, stop)
    start, stop, dtype, cdtype = _inexact_bounds(asarray(start), asarray(stop), dtype)
    bounds_shape = list(broadcast_shapes(get_aval(start).shape, get_aval(stop).shape))
    start_b = broadcast_to(start, tuple(bounds_shape))
    stop_b = broadcast_to(stop, tuple(bounds_shape))
    axis = canonicalize_axis(axis, len(bounds_shape) + 1)
    bounds_shape.insert(axis, 1)
    div = num - 1 if endpoint else num
    if num > 1:
        delta = true_divide(subtract(stop, start), asarray(div, cdtype))
        # the same float arithmetic as JAX, which recovers both end points exactly
        real_dtype = dtypes.finfo_of(cdtype).dtype
        iota_shape = [1] * len(bounds_shape)
        iota_shape[axis] = div
        step = true_divide(lax.reshape(lax.iota(real_dtype, div), iota_shape),
                           asarray(div, real_dtype))
        step = lax.convert_element_type(step, cdtype)
        out = add(multiply(lax.reshape(start_b, bounds_shape), subtract(1, step)),
                  multiply(lax.reshape(stop_b, bounds_shape), step))
        if endpoint:
            out = lax.concatenate([out, lax.expand_dims(stop_b, (axis,))], axis)
    elif num == 1:
        delta = asarray(np.nan, cdtype) if endpoint else subtract(stop, start)
        out = lax.reshape(start_b, bounds_shape)
    else:
        delta = lax.full((), np.nan, cdtype)
        bounds_shape[axis] = 0
        out = zeros(bounds_shape, dtype)
    if dtypes.is_int(dtype) and not dtypes.is_int(get_aval(out).dtype):
        out = lax.floor(out)
    result = lax.convert_element_type(out, dtype)
    return (result, delta) if retstep else result


def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             base: Any = 10.0, dtype: Any = None, axis: int = 0) -> Any:
    """base ** linspace(start, stop, num)."""
    num = _concrete_int(num, "The 'num' argument of jnp.logspace must be concrete.")
    axis = _concrete_int(axis, "The 'axis' argument of jnp.logspace must be concrete.")
    check_arraylike("logspace", start, stop, base)
    start, stop, dtype, _ = _inexact_bounds(start, stop, dtype)
    exponents = linspace(start, stop, num, endpoint=endpoint, axis=axis)
    return lax.convert_element_type(_power(base, exponents), dtype)


def _power(base: Any, exponent: Any) -> Any:
    # the exponent is inexact, so jnp.power reduces to lax.pow of the promoted operands
    return lax.pow(*promote_args_inexact("power", base, exponent))


def _log10(x: Any) -> Any:
    return lax.div(lax.log(x), lax.log(lax.full((), 10, get_aval(x).dtype)))


def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
              dtype: Any = None, axis: int = 0) -> Any:
    """`num` values from start to stop spaced evenly on a log scale (signs kept)."""
    num = _concrete_int(num, "The 'num' argument of jnp.geomspace must be concrete.")
    axis = _concrete_int(axis, "The 'axis' argument of jnp.geomspace must be concrete.")
    check_arraylike("geomspace", start, stop)
    start, stop, dtype, cdtype = _inexact_bounds(start, stop, dtype)
    sign = lax.sign(start)
    res = multiply(sign, logspace(_log10(true_divide(start, sign)),
                                  _log10(true_divide(stop, sign)), num, endpoint=endpoint,
                                  base=10.0, dtype=cdtype, axis=0))
    ndim = get_aval(res).ndim
    axis = canonicalize_axis(axis, ndim)
    if axis != 0:
        res = lax.transpose(res, (*range(1, axis + 1), 0, *range(axis + 1, ndim)))
    return lax.convert_element_type(res, dtype)


# --- grids ---------------------------------------------------------------------------------

def meshgrid(*xi: Any, copy: bool = True, sparse: bool = False,
             indexing: str = "xy") -> list:
    """Coordinate grids from 1-D arrays ('xy': Cartesian, first two axes swapped; 'ij': matrix
    indexing); sparse grids keep size-1 axes for broadcasting."""
    check_arraylike("meshgrid", *xi)
    args = [asarray(x) for x in xi]
    if not copy:
        raise ValueError("jax.numpy.meshgrid only supports copy=True")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing}")
    shapes = [get_aval(a).shape for a in args]
    if any(len(s) != 1 for s in shapes):
        raise ValueError(f"Arguments to jax.numpy.meshgrid must be 1D, got shapes {shapes}")
    swap = indexing == "xy" and len(args) >= 2
    if swap:
        args[0], args[1] = args[1], args[0]
    sizes = [get_aval(a).shape[0] for a in args]
    full_shape = [1 if sparse else n for n in sizes]
    output = []
    for i, (a, n) in enumerate(zip(args, sizes)):
        shape = [*full_shape[:i], n, *full_shape[i + 1:]] if sparse else full_shape
        output.append(lax.broadcast_in_dim(a, shape, (i,)))
    if swap:
        output[0], output[1] = output[1], output[0]
    return output


def indices(dimensions: Sequence[int], dtype: Any = None, sparse: bool = False) -> Any:
    """The index grid of an array of shape `dimensions`: out[i] holds the i-th coordinate."""
    dtype = dtypes.check_user_dtype(int if dtype is None else dtype)
    dims = tuple(_concrete_int(d, "The dimensions argument of jnp.indices must be concrete.")
                 for d in dimensions)
    output = []
    for i, n in enumerate(dims):
        shape = (1,) * i + (n,) + (1,) * (len(dims) - i - 1) if sparse else dims
        output.append(lax.broadcast_in_dim(lax.iota(dtype, n), shape, (i,)))
    if sparse:
        return tuple(output)
    return lax.stack(output, 0) if output else zeros((0,), dtype)


def copy(a: Any, order: str | None = None) -> Any:
    """A copy of a (arrays are immutable, so the same value)."""
    check_arraylike("copy", a)
    return array(a, copy=True, order=order)
