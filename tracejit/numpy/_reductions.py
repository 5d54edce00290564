"""Reductions of tracejit.numpy (sum, mean, var, min/max, arg*, all/any, nan-variants, quantiles,
average, cumulative ops) on lax's reduce, cumulative and sort primitives.

JAX's dtype rules: bool and small ints sum to the default int, means of ints are floats, float16
accumulates in float32, and results are never weakly typed.
"""
from __future__ import annotations

import builtins
import math
from typing import Any, Callable, NamedTuple, Sequence, Union

import numpy as np

from ..lax import lenient as lax
from ..core import dtypes
from ..core.trace import get_aval
from ..lax._base import canonicalize_axis
from ..runtime.sharded import jitted_in_jax
from ._ufuncs import _where, subtract
from ._util import (_asarray, asarray, broadcast_to, check_arraylike, promote_dtypes_inexact,
                    promote_dtypes_numeric)

Axis = Union[int, Sequence[int], None]

__all__: list[str] = []


def _export(f: Callable) -> Callable:
    __all__.append(f.__name__)
    return f


# --- shared pieces -------------------------------------------------------------------------


def _reduction_axes(ndim: int, axis: Axis) -> tuple[int, ...]:
    """Canonical (non-negative) reduction axes; JAX's errors for repeats and out-of-range."""
    if axis is None:
        return tuple(range(ndim))
    axes = tuple(axis) if isinstance(axis, (tuple, list, np.ndarray)) else (axis,)
    canon = tuple(canonicalize_axis(a, ndim) for a in axes)
    if len(set(canon)) != len(canon):
        raise ValueError(f"duplicate value in 'axis': {axis}")
    return canon


def _check_out(name: str, out: Any) -> None:
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")


def _check_where(name: str, where: Any) -> Any:
    if where is None:
        return None
    check_arraylike(name, where)
    where = asarray(where)
    if get_aval(where).dtype != dtypes.bool_:
        raise ValueError(f"jnp.{name}: where must be None or a boolean array; got "
                         f"where.dtype={get_aval(where).dtype!r}.")
    return where


def _constant(value: Any, dtype: np.dtype) -> Any:
    """A strongly typed scalar constant; infinities become the dtype's extremes where it has
    none (ints), as JAX's reduction identities do."""
    if dtype == dtypes.bool_:
        return asarray(np.array(value > 0))
    if dtypes.is_int(dtype) and np.isinf(value):
        info = np.iinfo(dtype)
        value = info.min if value < 0 else info.max
    # (dtype named again: a NumPy value alone would be canonicalised, and a 64-bit dtype the
    # user asked for is kept under jax_explicit_x64_dtypes="allow")
    return asarray(np.array(value, dtype=dtype), dtype=dtype)


def _isnan(x: Any) -> Any:
    return lax.ne(x, x)


def _upcast_f16(dtype: np.dtype) -> np.dtype:
    if dtype == np.float16 or (dtypes.bfloat16 is not None and dtype == dtypes.bfloat16):
        return np.dtype(np.float32)
    return dtype


def _promote_integer_dtype(dtype: np.dtype) -> np.dtype:
    """Bools and ints narrower than the default become the default (u)int, as in JAX (NumPy
    always widens to 64 bits)."""
    if dtype == dtypes.bool_:
        return dtypes.default_int()
    for kind, default in (("u", dtypes.default_uint()), ("i", dtypes.default_int())):
        if dtype.kind == kind and dtype.itemsize < default.itemsize:
            return default
    return dtype


def _ravel(x: Any) -> Any:
    return lax.reshape(x, (get_aval(x).size,))


class _Monoid(NamedTuple):
    """A reduction primitive and the binary op that folds `initial` into its result."""
    reduce: Callable
    combine: Callable


_SUM = _Monoid(lax.reduce_sum, lax.add)
_PROD = _Monoid(lax.reduce_prod, lax.mul)
_MAX = _Monoid(lax.reduce_max, lax.max)
_MIN = _Monoid(lax.reduce_min, lax.min)
_AND = _Monoid(lax.reduce_and, lax.bitwise_and)
_OR = _Monoid(lax.reduce_or, lax.bitwise_or)


def _reduction(a: Any, name: str, op: _Monoid, init_val: float, *, has_identity: bool = True,
               preproc: Callable | None = None, bool_op: _Monoid | None = None,
               upcast_f16: bool = False, axis: Axis = None, dtype: Any = None, out: Any = None,
               keepdims: bool = False, initial: Any = None, where: Any = None,
               promote_integers: bool = False) -> Any:
    """The one reduction skeleton (JAX's `_reduction`): dtype choice, where-mask, initial,
    keepdims; `init_val` is op's identity, used to fill masked-out elements."""
    _check_out(name, out)
    check_arraylike(name, a)
    a = _asarray(a)  # (JAX's lax asarray: host data is not placed under set_mesh here)
    where = _check_where(name, where)
    if initial is None and not has_identity and where is not None:
        raise ValueError(f"reduction operation {name} does not have an identity, so to use a "
                         "where mask one has to specify 'initial'")
    a = preproc(a) if preproc else a
    aval = get_aval(a)
    dims = _reduction_axes(aval.ndim, axis)
    if initial is None and not has_identity and builtins.any(aval.shape[d] == 0 for d in dims):
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    if dtype is None:
        result_dtype = _promote_integer_dtype(aval.dtype) if promote_integers else aval.dtype
    else:
        result_dtype = dtypes.check_user_dtype(dtype)
    computation_dtype = _upcast_f16(result_dtype) if upcast_f16 else result_dtype
    a = lax.convert_element_type(a, computation_dtype)
    if computation_dtype == dtypes.bool_ and bool_op is not None:
        op = bool_op
    if where is not None:
        a = _where(where, a, _constant(init_val, computation_dtype))
    result = op.reduce(a, dims)
    if initial is not None:
        check_arraylike(name, initial)
        initial = lax.convert_element_type(asarray(initial), computation_dtype)
        if get_aval(initial).shape != ():
            raise ValueError(f"initial value must be a scalar. Got array of shape "
                             f"{get_aval(initial).shape}")
        result = op.combine(initial, result)
    if keepdims:
        result = lax.expand_dims(result, dims)
    return lax.convert_element_type(result, result_dtype)


def _cast_to_numeric(a: Any) -> Any:
    return promote_dtypes_numeric(a)[0]


def _cast_to_bool(a: Any) -> Any:
    return lax.convert_element_type(a, dtypes.bool_)


# --- sum, prod, max, min, all, any ---------------------------------------------------------


@_export
@jitted_in_jax("_reduce_sum")
def sum(a: Any, axis: Axis = None, dtype: Any = None, out: Any = None,  # noqa: A001
        keepdims: bool = False, initial: Any = None, where: Any = None,
        promote_integers: bool = True) -> Any:
    """Sum of elements over `axis` (bools and small ints sum in the default int)."""
    return _reduction(a, "sum", _SUM, 0, preproc=_cast_to_numeric, bool_op=_OR,
                      upcast_f16=dtype is None, axis=axis, dtype=dtype, out=out,
                      keepdims=keepdims, initial=initial, where=where,
                      promote_integers=promote_integers)


@_export
def prod(a: Any, axis: Axis = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
         initial: Any = None, where: Any = None, promote_integers: bool = True) -> Any:
    """Product of elements over `axis`."""
    return _reduction(a, "prod", _PROD, 1, preproc=_cast_to_numeric, bool_op=_AND,
                      upcast_f16=dtype is None, axis=axis, dtype=dtype, out=out,
                      keepdims=keepdims, initial=initial, where=where,
                      promote_integers=promote_integers)


@_export
def max(a: Any, axis: Axis = None, out: Any = None, keepdims: bool = False,  # noqa: A001
        initial: Any = None, where: Any = None) -> Any:
    """Maximum over `axis`; NaN propagates. Empty input needs `initial`."""
    return _reduction(a, "max", _MAX, -np.inf, has_identity=False, axis=axis, out=out,
                      keepdims=keepdims, initial=initial, where=where)


@_export
def min(a: Any, axis: Axis = None, out: Any = None, keepdims: bool = False,  # noqa: A001
        initial: Any = None, where: Any = None) -> Any:
    """Minimum over `axis`; NaN propagates. Empty input needs `initial`."""
    return _reduction(a, "min", _MIN, np.inf, has_identity=False, axis=axis, out=out,
                      keepdims=keepdims, initial=initial, where=where)


amax = max
amin = min
__all__ += ["amax", "amin"]


@_export
def minmax(a: Any, axis: Axis = None, out: Any = None, keepdims: bool = False,
           initial: Any = None, where: Any = None) -> tuple[Any, Any]:
    """(min, max) over `axis` (JAX 0.12's jnp.minmax): `initial` is one value for both or the
    pair (the min's, the max's); a where-mask or an empty reduction needs both."""
    _check_out("minmax", out)
    check_arraylike("minmax", a)
    init_min, init_max = initial if isinstance(initial, tuple) else (initial, initial)
    if init_min is None or init_max is None:
        if where is not None:
            raise ValueError("reduction operation minmax does not have an identity, so to use "
                             "a where mask one has to specify 'initial'")
        shape = get_aval(asarray(a)).shape
        if builtins.any(shape[d] < 1 for d in _reduction_axes(len(shape), axis)):
            raise ValueError("zero-size array to reduction operation minmax which has no "
                             "identity")
    return (min(a, axis, keepdims=keepdims, initial=init_min, where=where),
            max(a, axis, keepdims=keepdims, initial=init_max, where=where))



@_export
def all(a: Any, axis: Axis = None, out: Any = None, keepdims: bool = False,  # noqa: A001
        *, where: Any = None) -> Any:
    """Whether every element over `axis` is non-zero (NaN counts as true)."""
    return _reduction(a, "all", _AND, True, preproc=_cast_to_bool, axis=axis, out=out,
                      keepdims=keepdims, where=where)


@_export
def any(a: Any, axis: Axis = None, out: Any = None, keepdims: bool = False,  # noqa: A001
        *, where: Any = None) -> Any:
    """Whether some element over `axis` is non-zero (NaN counts as true)."""
    return _reduction(a, "any", _OR, False, preproc=_cast_to_bool, axis=axis, out=out,
                      keepdims=keepdims, where=where)


@_export
def ptp(a: Any, axis: Axis = None, out: Any = None, keepdims: bool = False) -> Any:
    """Range (max - min) over `axis`."""
    _check_out("ptp", out)
    return lax.sub(max(a, axis=axis, keepdims=keepdims), min(a, axis=axis, keepdims=keepdims))


@_export
def count_nonzero(a: Any, axis: Axis = None, keepdims: bool = False) -> Any:
    """Number of non-zero elements over `axis`, in the default int."""
    check_arraylike("count_nonzero", a)
    return sum(lax.ne(asarray(a), 0), axis=axis, dtype=dtypes.default_int(), keepdims=keepdims)


# --- mean, var, std, average ---------------------------------------------------------------


def _count(a: Any, dims: tuple[int, ...], keepdims: bool, where: Any, dtype: np.dtype) -> Any:
    """How many elements each reduction sees: the axis sizes, or the where-mask's count."""
    shape = get_aval(a).shape
    if where is None:
        return _constant(math.prod(shape[d] for d in dims), dtype)
    return sum(broadcast_to(where, shape), dims, dtype=dtype, keepdims=keepdims)


@_export
@jitted_in_jax("_mean")
def mean(a: Any, axis: Axis = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
         *, where: Any = None) -> Any:
    """Arithmetic mean over `axis` (ints and bools give the default float)."""
    _check_out("mean", out)
    check_arraylike("mean", a)
    a = asarray(a)
    where = _check_where("mean", where)
    if dtype is None:
        result_dtype = dtypes.to_inexact(get_aval(a).dtype)
        computation_dtype = _upcast_f16(result_dtype)
    else:
        result_dtype = computation_dtype = dtypes.check_user_dtype(dtype, "dtype")
    dims = _reduction_axes(get_aval(a).ndim, axis)
    normalizer = _count(a, dims, keepdims, where, computation_dtype)
    total = sum(a, dims, dtype=computation_dtype, keepdims=keepdims, where=where)
    return lax.convert_element_type(lax.div(total, normalizer), result_dtype)


_mean = mean  # var's `mean=` argument shadows the function


def _var_promote_types(a_dtype: np.dtype, dtype: Any) -> tuple[np.dtype, np.dtype]:
    """(computation dtype, result dtype) of var/std: a complex array's variance is real, the
    mean of |x - mean|^2."""
    complex_in = np.dtype(a_dtype).kind == "c"
    if dtype is not None:
        computation_dtype = dtype = dtypes.check_user_dtype(dtype)
        if complex_in and np.dtype(dtype).kind != "c":
            raise ValueError("jnp.var does not support a real `dtype` for complex input "
                             "(NumPy's meaning is unclear, as in JAX); leave `dtype` unset to "
                             "get the real variance")
    elif complex_in:
        computation_dtype, dtype = np.dtype(a_dtype), np.array(0, a_dtype).real.dtype
    else:
        dtype = computation_dtype = dtypes.to_inexact(a_dtype)
    return _upcast_f16(computation_dtype), dtype


def _squared_magnitude(centered: Any) -> Any:
    """|c|^2, real for complex c (c * conj(c) has no imaginary part)."""
    if get_aval(centered).dtype.kind == "c":
        return lax.real(lax.mul(centered, lax.conj(centered)))
    return lax.square(centered)


def _correction(ddof: Any, correction: Any) -> Any:
    if correction is None:
        return ddof
    if not isinstance(ddof, int) or ddof != 0:
        raise ValueError("ddof and correction can't be provided simultaneously.")
    return correction


@_export
def var(a: Any, axis: Axis = None, dtype: Any = None, out: Any = None, ddof: int = 0,
        keepdims: bool = False, *, where: Any = None, mean: Any = None,
        correction: int | float | None = None) -> Any:
    """Variance over `axis`, divided by N - ddof (NaN where that is not positive)."""
    correction = _correction(ddof, correction)
    _check_out("var", out)
    check_arraylike("var", a)
    a = asarray(a)
    where = _check_where("var", where)
    computation_dtype, dtype = _var_promote_types(get_aval(a).dtype, dtype)
    a = lax.convert_element_type(a, computation_dtype)
    dims = _reduction_axes(get_aval(a).ndim, axis)
    if mean is None:
        a_mean = _mean(a, dims, dtype=computation_dtype, keepdims=True, where=where)
    else:
        a_mean = lax.convert_element_type(asarray(mean), computation_dtype)
    centered = _squared_magnitude(lax.sub(a, broadcast_to(a_mean, get_aval(a).shape)))
    computation_dtype = get_aval(centered).dtype  # real, also for complex input
    normalizer = _count(a, dims, keepdims, where, computation_dtype)
    normalizer = lax.sub(normalizer, _constant(correction, computation_dtype))
    result = sum(centered, dims, dtype=computation_dtype, keepdims=keepdims, where=where)
    result = lax.convert_element_type(lax.div(result, normalizer), dtype)
    # an int `dtype` promotes with the NaN to a weak float here, as in JAX
    return _where(lax.gt(normalizer, 0), result, np.nan)


@_export
def std(a: Any, axis: Axis = None, dtype: Any = None, out: Any = None, ddof: int = 0,
        keepdims: bool = False, *, where: Any = None, mean: Any = None,
        correction: int | float | None = None) -> Any:
    """Standard deviation over `axis` (the square root of `var`)."""
    correction = _correction(ddof, correction)
    if dtype is not None:
        dtype = dtypes.check_user_dtype(dtype)
        if not dtypes.is_inexact(dtype):
            raise ValueError(f"dtype argument to jnp.std must be inexact; got {dtype}")
    _check_out("std", out)
    return lax.sqrt(var(a, axis=axis, dtype=dtype, keepdims=keepdims, where=where, mean=mean,
                        correction=correction))


@_export
def average(a: Any, axis: Axis = None, weights: Any = None, returned: bool = False,
            keepdims: bool = False) -> Any:
    """Weighted mean over `axis`; `returned=True` also gives the sum of the weights."""
    check_arraylike("average", a)
    a = asarray(a)
    if weights is None:
        (a,) = promote_dtypes_inexact(a)
        avg = mean(a, axis=axis, keepdims=keepdims)
        shape = get_aval(a).shape
        size = math.prod(shape[d] for d in _reduction_axes(len(shape), axis))
        weights_sum = _constant(size, get_aval(avg).dtype)
    else:
        check_arraylike("average", weights)
        a, weights = promote_dtypes_inexact(a, asarray(weights))
        a_shape, w_shape = get_aval(a).shape, get_aval(weights).shape
        if a_shape != w_shape:
            if axis is None:
                raise ValueError("Axis must be specified when shapes of a and weights differ.")
            dims = _reduction_axes(len(a_shape), axis)
            if w_shape != tuple(a_shape[d] for d in dims):
                raise ValueError("Shape of weights must be consistent with shape of a along "
                                 "specified axis.")
            weights = lax.broadcast_in_dim(weights, a_shape, dims)
        weights_sum = sum(weights, axis=axis, keepdims=keepdims)
        avg = lax.div(sum(lax.mul(a, weights), axis=axis, keepdims=keepdims), weights_sum)
    if not returned:
        return avg
    return avg, broadcast_to(weights_sum, get_aval(avg).shape)


# --- argmax, argmin ------------------------------------------------------------------------


def _arg_reduction(name: str, lax_fn: Callable, a: Any, axis: int | None, out: Any,
                   keepdims: bool | None) -> Any:
    _check_out(name, out)
    check_arraylike(name, a)
    a = asarray(a)
    ndim = get_aval(a).ndim
    if axis is None:
        dims, a, axis = tuple(range(ndim)), _ravel(a), 0
    else:
        axis = canonicalize_axis(axis, ndim)
        dims = (axis,)
    if get_aval(a).shape[axis] == 0:
        raise ValueError(f"attempt to get {name} of an empty sequence")
    result = lax_fn(a, axis, dtypes.default_int())
    return lax.expand_dims(result, dims) if keepdims else result


@_export
def argmax(a: Any, axis: int | None = None, out: Any = None, keepdims: bool | None = None
           ) -> Any:
    """Index of the maximum along `axis` (flattened if None); the first NaN wins."""
    return _arg_reduction("argmax", lax.argmax, a, axis, out, keepdims)


@_export
def argmin(a: Any, axis: int | None = None, out: Any = None, keepdims: bool | None = None
           ) -> Any:
    """Index of the minimum along `axis` (flattened if None); the first NaN wins."""
    return _arg_reduction("argmin", lax.argmin, a, axis, out, keepdims)


def _nan_arg_reduction(name: str, arg_fn: Callable, fill: float, a: Any, axis: int | None,
                       out: Any, keepdims: bool | None) -> Any:
    check_arraylike(name, a)
    a = asarray(a)
    if not dtypes.is_inexact(get_aval(a).dtype):
        return arg_fn(a, axis=axis, out=out, keepdims=keepdims)
    nan_mask = _isnan(a)
    result = arg_fn(_where(nan_mask, fill, a), axis=axis, out=out, keepdims=keepdims)
    return _where(all(nan_mask, axis=axis, keepdims=bool(keepdims)), -1, result)


@_export
def nanargmax(a: Any, axis: int | None = None, out: Any = None, keepdims: bool | None = None
              ) -> Any:
    """argmax ignoring NaNs; -1 where a slice is all NaN."""
    return _nan_arg_reduction("nanargmax", argmax, -np.inf, a, axis, out, keepdims)


@_export
def nanargmin(a: Any, axis: int | None = None, out: Any = None, keepdims: bool | None = None
              ) -> Any:
    """argmin ignoring NaNs; -1 where a slice is all NaN."""
    return _nan_arg_reduction("nanargmin", argmin, np.inf, a, axis, out, keepdims)


# --- NaN-ignoring reductions ---------------------------------------------------------------


def _nan_reduction(a: Any, name: str, reduction: Callable, init_val: float,
                   nan_if_all_nan: bool, axis: Axis = None, keepdims: bool = False,
                   where: Any = None, **kwargs: Any) -> Any:
    """`reduction` with NaNs replaced by its identity; all-NaN slices give NaN if asked."""
    check_arraylike(name, a)
    a = _asarray(a)  # (JAX's lax asarray: host data is not placed under set_mesh here)
    where = _check_where(name, where)
    if not dtypes.is_inexact(get_aval(a).dtype):
        return reduction(a, axis=axis, keepdims=keepdims, where=where, **kwargs)
    nan_mask = _isnan(a)
    init = _constant(init_val, get_aval(a).dtype)
    result = reduction(_where(nan_mask, init, a), axis=axis, keepdims=keepdims,
                       where=where, **kwargs)
    if not nan_if_all_nan:
        return result
    return _where(all(nan_mask, axis=axis, keepdims=keepdims), np.nan, result)


@_export
def nanmin(a: Any, axis: Axis = None, out: Any = None, keepdims: bool = False,
           initial: Any = None, where: Any = None) -> Any:
    """min ignoring NaNs (NaN where a slice is all NaN)."""
    return _nan_reduction(a, "nanmin", min, np.inf, initial is None, axis=axis, out=out,
                          keepdims=keepdims, initial=initial, where=where)


@_export
def nanmax(a: Any, axis: Axis = None, out: Any = None, keepdims: bool = False,
           initial: Any = None, where: Any = None) -> Any:
    """max ignoring NaNs (NaN where a slice is all NaN)."""
    return _nan_reduction(a, "nanmax", max, -np.inf, initial is None, axis=axis, out=out,
                          keepdims=keepdims, initial=initial, where=where)


@_export
def nansum(a: Any, axis: Axis = None, dtype: Any = None, out: Any = None,
           keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
    """sum treating NaNs as zero."""
    return _nan_reduction(a, "nansum", sum, 0, False, axis=axis, dtype=dtype, out=out,
                          keepdims=keepdims, initial=initial, where=where)


@_export
def nanprod(a: Any, axis: Axis = None, dtype: Any = None, out: Any = None,
            keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
    """prod treating NaNs as one."""
    return _nan_reduction(a, "nanprod", prod, 1, False, axis=axis, dtype=dtype, out=out,
                          keepdims=keepdims, initial=initial, where=where)


@_export
def nanmean(a: Any, axis: Axis = None, dtype: Any = None, out: Any = None,
            keepdims: bool = False, where: Any = None) -> Any:
    """mean of the non-NaN elements (NaN where there are none)."""
    _check_out("nanmean", out)
    check_arraylike("nanmean", a)
    a = asarray(a)
    where = _check_where("nanmean", where)
    a_dtype = get_aval(a).dtype
    if not dtypes.is_inexact(a_dtype):
        return mean(a, axis, dtype, keepdims=keepdims, where=where)
    dtype = a_dtype if dtype is None else dtypes.check_user_dtype(dtype)
    normalizer = sum(lax.not_(_isnan(a)), axis=axis, dtype=dtype, keepdims=keepdims,
                     where=where)
    return lax.div(nansum(a, axis, dtype=dtype, keepdims=keepdims, where=where), normalizer)


@_export
def nanvar(a: Any, axis: Axis = None, dtype: Any = None, out: Any = None, ddof: int = 0,
           keepdims: bool = False, where: Any = None, mean: Any = None) -> Any:
    """var of the non-NaN elements."""
    _check_out("nanvar", out)
    check_arraylike("nanvar", a)
    a = asarray(a)
    where = _check_where("nanvar", where)
    computation_dtype, dtype = _var_promote_types(get_aval(a).dtype, dtype)
    a = lax.convert_element_type(a, computation_dtype)
    if mean is None:
        a_mean = nanmean(a, axis, dtype=computation_dtype, keepdims=True, where=where)
    else:
        a_mean = lax.convert_element_type(asarray(mean), computation_dtype)
    nan_mask = _isnan(a)
    centered = _where(nan_mask, 0, lax.sub(a, broadcast_to(a_mean, get_aval(a).shape)))
    normalizer = sum(lax.not_(nan_mask), axis=axis, keepdims=keepdims, where=where)
    normalizer = subtract(normalizer, ddof)
    empty = lax.le(normalizer, 0)
    result = sum(_squared_magnitude(centered), axis, keepdims=keepdims, where=where)
    result = _where(empty, np.nan, result)
    divisor = lax.convert_element_type(_where(empty, 1, normalizer), get_aval(result).dtype)
    return lax.convert_element_type(lax.div(result, divisor), dtype)


@_export
def nanstd(a: Any, axis: Axis = None, dtype: Any = None, out: Any = None, ddof: int = 0,
           keepdims: bool = False, where: Any = None, mean: Any = None) -> Any:
    """std of the non-NaN elements."""
    return lax.sqrt(nanvar(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims,
                           where=where, mean=mean))


# --- cumulative ----------------------------------------------------------------------------


def _cumulative_reduction(name: str, reduction: Callable, a: Any, axis: int | None,
                          dtype: Any, out: Any = None, fill_nan: bool = False,
                          fill_value: float = 0, promote_integers: bool = False) -> Any:
    """A lax cumulative op along one axis (the flattened array if None), JAX's dtypes: bools
    accumulate as the default int, `dtype=bool` as ints cast back."""
    _check_out(name, out)
    check_arraylike(name, a)
    python_scalar = isinstance(a, (bool, int, float, complex, np.generic))
    a = asarray(a)
    if axis is None or python_scalar:
        a = _ravel(a)
    aval = get_aval(a)
    axis = canonicalize_axis(0 if axis is None else axis, aval.ndim)
    if fill_nan and dtypes.is_inexact(aval.dtype):
        a = _where(_isnan(a), _constant(fill_value, aval.dtype), a)
    if dtype is None:
        result_dtype = computation_dtype = (
            _promote_integer_dtype(aval.dtype) if promote_integers or aval.dtype == dtypes.bool_
            else aval.dtype)
    else:
        result_dtype = computation_dtype = dtypes.check_user_dtype(dtype)
        if result_dtype == dtypes.bool_:
            a = a if aval.dtype == dtypes.bool_ else lax.ne(a, 0)
            computation_dtype = _promote_integer_dtype(result_dtype)
    a = lax.convert_element_type(a, computation_dtype)
    return lax.convert_element_type(reduction(a, axis), result_dtype)


@_export
def cumsum(a: Any, axis: int | None = None, dtype: Any = None, out: Any = None) -> Any:
    """Cumulative sum along `axis` (of the flattened array if None)."""
    return _cumulative_reduction("cumsum", lax.cumsum, a, axis, dtype, out)


@_export
def cumprod(a: Any, axis: int | None = None, dtype: Any = None, out: Any = None) -> Any:
    """Cumulative product along `axis` (of the flattened array if None)."""
    return _cumulative_reduction("cumprod", lax.cumprod, a, axis, dtype, out)


@_export
def nancumsum(a: Any, axis: int | None = None, dtype: Any = None, out: Any = None) -> Any:
    """cumsum treating NaNs as zero."""
    return _cumulative_reduction("nancumsum", lax.cumsum, a, axis, dtype, out, fill_nan=True,
                                 fill_value=0)


@_export
def nancumprod(a: Any, axis: int | None = None, dtype: Any = None, out: Any = None) -> Any:
    """cumprod treating NaNs as one."""
    return _cumulative_reduction("nancumprod", lax.cumprod, a, axis, dtype, out, fill_nan=True,
                                 fill_value=1)


def _cumulative_array_api(name: str, what: str, reduction: Callable, x: Any, axis: int | None,
                          dtype: Any, include_initial: bool, initial: int,
                          promote_integers: bool) -> Any:
    """cumulative_sum/prod of the array API: rank >= 1, axis required beyond rank 1."""
    check_arraylike(name, x)
    x = asarray(x)
    ndim = get_aval(x).ndim
    if ndim == 0:
        raise ValueError(f"The input must be non-scalar to take a cumulative {what}, however a "
                         "scalar value or scalar array was given.")
    if axis is None:
        if ndim > 1:
            raise ValueError(f"The input array has rank {ndim}, however axis was not set to an "
                             "explicit value. The axis argument is only optional for "
                             "one-dimensional arrays.")
        axis = 0
    axis = canonicalize_axis(axis, ndim)
    out = _cumulative_reduction(name, reduction, x, axis, dtype,
                                promote_integers=promote_integers)
    if include_initial:
        aval = get_aval(out)
        shape = aval.shape[:axis] + (1,) + aval.shape[axis + 1:]
        out = lax.concatenate([broadcast_to(_constant(initial, aval.dtype), shape), out], axis)
    return out


@_export
def cumulative_sum(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                   include_initial: bool = False) -> Any:
    """Array-API cumulative sum (small ints widen to the default int)."""
    return _cumulative_array_api("cumulative_sum", "sum", lax.cumsum, x, axis, dtype,
                                 include_initial, 0, promote_integers=True)


@_export
def cumulative_prod(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                    include_initial: bool = False) -> Any:
    """Array-API cumulative product."""
    return _cumulative_array_api("cumulative_prod", "product", lax.cumprod, x, axis, dtype,
                                 include_initial, 1, promote_integers=False)


# --- quantiles -----------------------------------------------------------------------------

_QUANTILE_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


def _take_last(x: Any, index: Any) -> Any:
    """x[..., index] along x's last axis: x is B + (n,), index is Q + B (ints in [0, n))."""
    from ._indexing import take_along_axis  # (the indexing layer imports this module)
    x_shape, i_shape = get_aval(x).shape, get_aval(index).shape
    q_ndim = len(i_shape) - len(x_shape) + 1
    x = lax.reshape(x, (1,) * q_ndim + x_shape)
    out = take_along_axis(x, lax.reshape(index, i_shape + (1,)), axis=-1,
                          mode="promise_in_bounds")
    return lax.reshape(out, i_shape)


def _quantile(name: str, a: Any, q: Any, axis: int | Sequence[int] | None, method: str,
              keepdims: bool, squash_nans: bool, weights: Any) -> Any:
    """Quantiles over the (flattened) axes, JAX's algorithm: sort, then interpolate between the
    neighbours of q * (n - 1). NaNs make the result NaN, or (squash_nans) are left out."""
    if method not in _QUANTILE_METHODS:
        raise ValueError("method can only be 'linear', 'lower', 'higher', 'midpoint', "
                         "'nearest' or 'inverted_cdf'")
    check_arraylike(name, a, q)
    a, q = asarray(a), asarray(q)
    if weights is None:
        (a,) = promote_dtypes_inexact(a)
    else:
        check_arraylike(name, weights)
        weights = asarray(weights)
        if get_aval(weights).dtype.kind == "c":
            raise ValueError("Weights cannot be complex types.")
        if method != "inverted_cdf":
            raise NotImplementedError(f"{method} doesn't support weights. Only method "
                                      "'inverted_cdf' supports weights.")
        a, weights = promote_dtypes_inexact(a, weights)
    if axis is None and get_aval(a).ndim == 0:
        # JAX flattens first, so a scalar with keepdims gives shape (1,)
        a = lax.reshape(a, (1,))
        weights = None if weights is None else lax.reshape(weights, (1,))
    aval = get_aval(a)
    if aval.dtype.kind == "c":
        raise ValueError("quantile does not support complex input, as the operation is poorly "
                         "defined.")
    q_shape = get_aval(q).shape
    if len(q_shape) > 1:
        raise ValueError(f"q must be have rank <= 1, got shape {q_shape}")
    if axis is None:
        dims = tuple(range(aval.ndim))
    else:
        axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
        dims = tuple(canonicalize_axis(d, aval.ndim) for d in axes)
        if len(set(dims)) != len(dims):
            raise ValueError("repeated axis")
    if weights is not None and get_aval(weights).shape != aval.shape:
        if axis is None:
            raise ValueError("Weights shape must match 'a' shape when axis is None.")
        expected = tuple(aval.shape[d] for d in dims)
        if get_aval(weights).shape != expected:
            raise ValueError(f"Weights shape {get_aval(weights).shape} must match reduction "
                             f"axes {expected}")
        weights = lax.broadcast_in_dim(weights, aval.shape, dims)

    # the reduced axes, flattened, go last: a is batch + (n,)
    kept = tuple(d for d in range(aval.ndim) if d not in dims)
    batch = tuple(aval.shape[d] for d in kept)
    n = math.prod(aval.shape[d] for d in dims)
    if n == 0:
        # TypeError: JAX fails here inside its gather
        raise TypeError(f"jnp.{name}: cannot take a quantile over an empty axis (the reduced "
                        f"axes of shape {aval.shape} have no elements).")

    def flat(x: Any) -> Any:
        return lax.reshape(lax.transpose(x, kept + dims), batch + (n,))

    a = flat(a)
    nan = _isnan(a)
    if not squash_nans:
        a = _where(any(nan, axis=-1, keepdims=True), np.nan, a)
    if weights is None:
        a = lax.sort(a, dimension=-1)
    else:
        a, weights = lax.sort_key_val(a, flat(weights), dimension=-1)
    nan = _isnan(a)
    counts = sum(lax.not_(nan), axis=-1, dtype=get_aval(q).dtype) if squash_nans else None
    q_b = lax.broadcast_in_dim(q, q_shape + batch, tuple(range(len(q_shape))))

    def expand(x: Any) -> Any:  # batch -> q_shape + batch
        return lax.broadcast_in_dim(x, q_shape + batch, tuple(range(len(q_shape),
                                                                    len(q_shape + batch))))

    if method == "inverted_cdf":
        result = _inverted_cdf(a, weights, nan, q_b, expand, n, counts)
    else:
        size = expand(counts) if squash_nans else _constant(n, get_aval(q).dtype)
        last = lax.sub(size, _constant(1, get_aval(q).dtype))
        pos = lax.mul(q_b, last)
        low, high = lax.floor(pos), lax.ceil(pos)
        high_weight = lax.sub(pos, low)
        low_weight = lax.sub(_constant(1, get_aval(q).dtype), high_weight)
        low, high = (lax.convert_element_type(lax.max(_constant(0, get_aval(q).dtype),
                                                      lax.min(i, last)), dtypes.default_int())
                     for i in (low, high))
        low_value, high_value = _take_last(a, low), _take_last(a, high)
        if method == "linear":
            q_dtype = get_aval(q).dtype
            result = lax.add(lax.mul(lax.convert_element_type(low_value, q_dtype), low_weight),
                             lax.mul(lax.convert_element_type(high_value, q_dtype),
                                     high_weight))
        elif method == "lower":
            result = low_value
        elif method == "higher":
            result = high_value
        elif method == "nearest":
            result = lax.select(lax.le(high_weight, 0.5), low_value, high_value)
        else:  # midpoint
            result = lax.mul(lax.add(low_value, high_value), 0.5)
    if keepdims:
        result = lax.reshape(result, q_shape + tuple(1 if d in dims else s
                                                     for d, s in enumerate(aval.shape)))
    return lax.convert_element_type(result, aval.dtype)


def _inverted_cdf(a: Any, weights: Any, nan: Any, q_b: Any, expand: Callable, n: int,
                  counts: Any) -> Any:
    """The first sorted element whose cumulative weight reaches q * total weight; NaN when a
    weight is negative or NaN, or (without squashing) when the data has a NaN."""
    if weights is None:
        weights = broadcast_to(_constant(1, get_aval(a).dtype), get_aval(a).shape)
    bad_weights = lax.bitwise_or(lax.lt(weights, 0), _isnan(weights))
    clean = _where(lax.bitwise_or(bad_weights, nan), 0, weights)
    cum = lax.cumsum(clean, axis=get_aval(a).ndim - 1)
    total = lax.index_in_dim(cum, -1, axis=get_aval(a).ndim - 1, keepdims=False)
    target = lax.mul(lax.convert_element_type(q_b, get_aval(a).dtype), expand(total))
    shape = get_aval(target).shape + (n,)
    cum = lax.broadcast_in_dim(cum, shape, tuple(range(len(shape) - get_aval(cum).ndim,
                                                       len(shape))))
    below = lax.lt(cum, lax.broadcast_in_dim(target, shape, tuple(range(len(shape) - 1))))
    index = sum(below, axis=-1, dtype=dtypes.default_int())
    if counts is None:
        valid = _constant(n, dtypes.default_int())
    else:
        valid = expand(lax.convert_element_type(counts, dtypes.default_int()))
    index = lax.max(_constant(0, dtypes.default_int()), lax.min(index, lax.sub(valid, 1)))
    result = _take_last(a, index)
    force_nan = any(bad_weights, axis=-1)
    force_nan = lax.bitwise_or(force_nan, all(nan, axis=-1) if counts is not None
                               else any(nan, axis=-1))
    return _where(expand(force_nan), np.nan, result)


def _check_quantile_args(name: str, out: Any, overwrite_input: bool) -> None:
    if overwrite_input or out is not None:
        raise ValueError(f"jax.numpy.{name} does not support overwrite_input=True or "
                         "out != None")


@_export
def quantile(a: Any, q: Any, axis: int | Sequence[int] | None = None, out: Any = None,
             overwrite_input: bool = False, method: str = "linear", keepdims: bool = False, *,
             weights: Any = None) -> Any:
    """q-th quantile(s) over `axis` (q in [0, 1], a scalar or a vector)."""
    _check_quantile_args("quantile", out, overwrite_input)
    return _quantile("quantile", a, q, axis, method, keepdims, False, weights)


@_export
def nanquantile(a: Any, q: Any, axis: int | Sequence[int] | None = None, out: Any = None,
                overwrite_input: bool = False, method: str = "linear", keepdims: bool = False,
                *, weights: Any = None) -> Any:
    """quantile ignoring NaNs."""
    _check_quantile_args("nanquantile", out, overwrite_input)
    return _quantile("nanquantile", a, q, axis, method, keepdims, True, weights)


def _percent(name: str, q: Any) -> Any:
    check_arraylike(name, q)
    (q,) = promote_dtypes_inexact(asarray(q))
    return lax.div(q, 100)


@_export
def percentile(a: Any, q: Any, axis: int | Sequence[int] | None = None, out: Any = None,
               overwrite_input: bool = False, method: str = "linear", keepdims: bool = False,
               *, weights: Any = None) -> Any:
    """q-th percentile(s) over `axis` (q in [0, 100])."""
    return quantile(a, _percent("percentile", q), axis, out, overwrite_input, method, keepdims,
                    weights=weights)


@_export
def nanpercentile(a: Any, q: Any, axis: int | Sequence[int] | None = None, out: Any = None,
                  overwrite_input: bool = False, method: str = "linear",
                  keepdims: bool = False, *, weights: Any = None) -> Any:
    """percentile ignoring NaNs."""
    return nanquantile(a, _percent("nanpercentile", q), axis, out, overwrite_input, method,
                       keepdims, weights=weights)


@_export
def median(a: Any, axis: int | Sequence[int] | None = None, out: Any = None,
           overwrite_input: bool = False, keepdims: bool = False) -> Any:
    """Median over `axis` (the midpoint of the middle two for even counts)."""
    return quantile(a, 0.5, axis, out, overwrite_input, "midpoint", keepdims)


@_export
def nanmedian(a: Any, axis: int | Sequence[int] | None = None, out: Any = None,
              overwrite_input: bool = False, keepdims: bool = False) -> Any:
    """median ignoring NaNs."""
    return nanquantile(a, 0.5, axis, out, overwrite_input, "midpoint", keepdims)
