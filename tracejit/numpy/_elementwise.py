"""Elementwise functions that jax.numpy builds outside its ufunc module: NaN-ignoring extremes,
clipping, NaN replacement, rounding to decimals, gcd/lcm, complex angle, and closeness tests.

Like _ufuncs, each follows JAX's construction, so values, dtypes and weak types are JAX's.
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..lax import lenient as lax
from ..core import dtypes
from ..core.trace import get_aval
from ._reductions import all as all_
from ._ufuncs import (_broadcast_arrays, _is_int, _is_int_or_bool, _lax_const, _real_dtype,
                      _where, absolute, ceil, degrees, equal, floor, floor_divide, greater, imag,
                      isfinite, isnan, isneginf, isposinf, less, logical_and, logical_or, maximum,
                      minimum, multiply, not_equal, real)
from ._util import (asarray, check_arraylike, promote_args, promote_args_inexact,
                    promote_dtypes)


# --- NaN-ignoring extremes, clipping, NaN replacement ---------------------------------------


def fmax(x1: Any, x2: Any):
    """Elementwise maximum that ignores NaNs (NaN only where both are NaN)."""
    return _where(logical_or(greater(x1, x2), isnan(x2)), x1, x2)


def fmin(x1: Any, x2: Any):
    """Elementwise minimum that ignores NaNs (NaN only where both are NaN)."""
    return _where(logical_or(less(x1, x2), isnan(x2)), x1, x2)


def clip(arr: Any = None, /, min: Any = None, max: Any = None):  # noqa: A002 - NumPy's names
    """Limit values to [min, max] (either bound may be None)."""
    if arr is None:
        raise ValueError("No input was provided to the clip function.")
    check_arraylike("clip", arr)
    if any(iscomplexobj(t) for t in (arr, min, max)):
        raise ValueError("Clip received a complex value either through the input or the min/max "
                         "keywords. Complex values have no ordering and cannot be clipped. "
                         "Please convert to a real value or array by taking the real or "
                         "imaginary components via jax.numpy.real/imag respectively.")
    if min is not None:
        arr = maximum(min, arr)
    if max is not None:
        arr = minimum(max, arr)
    return asarray(arr)


def nan_to_num(x: Any, copy: bool = True, nan: Any = 0.0, posinf: Any = None,
               neginf: Any = None):
    """Replace NaN by `nan` and ±inf by `posinf`/`neginf` (default: the dtype's extremes)."""
    check_arraylike("nan_to_num", x)
    x = asarray(x)
    dtype = get_aval(x).dtype
    if not dtypes.is_inexact(dtype):
        return x
    if dtype.kind == "c":
        return lax.complex(
            nan_to_num(lax.real(x), nan=nan, posinf=posinf, neginf=neginf),
            nan_to_num(lax.imag(x), nan=nan, posinf=posinf, neginf=neginf))
    info = dtypes.finfo_of(dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    out = _where(isnan(x), asarray(nan, dtype=dtype), x)
    out = _where(isposinf(out), asarray(posinf, dtype=dtype), out)
    return _where(isneginf(out), asarray(neginf, dtype=dtype), out)


# --- rounding -------------------------------------------------------------------------------


def trunc(x: Any):
    """Round toward zero; integers and bools come back unchanged."""
    check_arraylike("trunc", x)
    x = asarray(x)
    if _is_int_or_bool(x):
        return x
    return _where(lax.lt(x, _lax_const(x, 0)), ceil(x), floor(x))


def round(a: Any, decimals: int = 0, out: Any = None):  # noqa: A001 - NumPy's name
    """Round to `decimals` decimal places, ties to even (scaled by 10**decimals as JAX does)."""
    check_arraylike("round", a)
    a = asarray(a)
    decimals = operator.index(decimals)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.round is not supported.")
    dtype = get_aval(a).dtype
    if dtypes.is_int(dtype):
        if decimals < 0:
            raise NotImplementedError("integer np.round not implemented for decimals < 0")
        return a
    if not dtypes.is_inexact(dtype):
        raise ValueError(f"data type {dtype.type} not inexact")

    def round_float(x):
        if decimals == 0:
            return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)
        # float16 scales in float32: 10**decimals * x overflows float16 early
        x32 = lax.convert_element_type(x, dtypes.float32) if dtype == dtypes.float16 else x
        factor = _lax_const(x32, 10 ** decimals)
        y = lax.div(lax.round(lax.mul(x32, factor), lax.RoundingMethod.TO_NEAREST_EVEN), factor)
        return lax.convert_element_type(y, dtype) if dtype == dtypes.float16 else y

    if decimals > np.log10(dtypes.finfo_of(dtype).max):  # no digit to round
        return a
    if dtype.kind == "c":
        return lax.complex(round_float(lax.real(a)), round_float(lax.imag(a)))
    return round_float(a)


around = round


# --- integers -------------------------------------------------------------------------------


def gcd(x1: Any, x2: Any):
    """Greatest common divisor of |x1| and |x2| (Euclid's algorithm in a while_loop)."""
    check_arraylike("gcd", x1, x2)
    x1, x2 = promote_dtypes(x1, x2)
    if not _is_int(x1):
        raise ValueError("Arguments to jax.numpy.gcd must be integers.")
    x1, x2 = _broadcast_arrays(x1, x2)
    return lax.while_loop(_gcd_cond, _gcd_body, (absolute(x1), absolute(x2)))[0]


def _gcd_cond(xs: tuple) -> Any:
    x2 = xs[1]
    return lax.reduce_or(not_equal(x2, 0), tuple(range(get_aval(x2).ndim)))


def _gcd_body(xs: tuple) -> tuple:
    x1, x2 = xs
    nonzero = not_equal(x2, 0)
    x1, x2 = _where(nonzero, x2, x1), _where(nonzero, lax.rem(x1, x2), _lax_const(x2, 0))
    swap = less(x1, x2)
    return _where(swap, x2, x1), _where(swap, x1, x2)


def lcm(x1: Any, x2: Any):
    """Least common multiple of |x1| and |x2| (0 if either is 0)."""
    check_arraylike("lcm", x1, x2)
    x1, x2 = promote_dtypes(x1, x2)
    x1, x2 = absolute(x1), absolute(x2)
    if not _is_int(x1):
        raise ValueError("Arguments to jax.numpy.lcm must be integers.")
    d = gcd(x1, x2)
    return _where(equal(d, 0), _lax_const(d, 0), multiply(x1, floor_divide(x2, d)))


# --- complex angle, Bessel i0, realness -----------------------------------------------------


def angle(z: Any, deg: bool = False):
    """Argument of a complex number, atan2(imag, real) (in degrees if deg)."""
    check_arraylike("angle", z)
    z = asarray(z)
    re, im = real(z), imag(z)
    dtype = get_aval(re).dtype
    # JAX's rule: non-float inputs, and float scalars, are computed in the default float
    if not dtypes.is_inexact(dtype) or (dtypes.is_float(get_aval(z).dtype) and
                                        get_aval(z).ndim == 0):
        re = lax.convert_element_type(re, dtypes.default_float())
        im = lax.convert_element_type(im, dtypes.default_float())
    result = lax.atan2(im, re)
    return degrees(result) if deg else result


def isreal(x: Any):
    """Elementwise imag(x) == 0."""
    i = imag(x)
    return lax.eq(i, _lax_const(i, 0))


def iscomplex(x: Any):
    """Elementwise imag(x) != 0."""
    i = imag(x)
    return lax.ne(i, _lax_const(i, 0))


def iscomplexobj(x: Any) -> bool:
    """Whether x has a complex dtype (a Python bool, not an array)."""
    if isinstance(x, (complex, np.complexfloating)):
        return True
    if x is None or isinstance(x, (bool, int, float, str, np.generic)):
        return False
    dtype = getattr(x, "dtype", None)
    return np.dtype(dtype if dtype is not None else get_aval(asarray(x)).dtype).kind == "c"


def isrealobj(x: Any) -> bool:
    """Whether x has a real (non-complex) dtype."""
    return not iscomplexobj(x)


def i0(x: Any):
    """Modified Bessel function of the first kind, order 0."""
    (x,) = promote_args_inexact("i0", x)
    if not dtypes.is_float(get_aval(x).dtype):
        raise ValueError(f"Unsupported input type to jax.numpy.i0: {get_aval(x).dtype}")
    abs_x = lax.abs(x)
    return lax.mul(lax.exp(abs_x), lax.bessel_i0e(abs_x))


# --- closeness and equality of whole arrays -------------------------------------------------


def isclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: bool = False):
    """Elementwise |a - b| <= atol + rtol * |b| (infinities must match exactly)."""
    a, b = promote_args("isclose", a, b)
    a, b = promote_args_inexact("isclose", a, b)
    dtype = _real_dtype(get_aval(a).dtype)
    rtol = lax.convert_element_type(rtol, dtype)
    atol = lax.convert_element_type(atol, dtype)
    both_nan = logical_and(isnan(a), isnan(b))
    check_fin = isfinite(b)
    in_range = lax.le(lax.abs(lax.sub(a, b)), lax.add(atol, lax.mul(rtol, lax.abs(b))))
    out = logical_or(lax.eq(a, b), logical_and(check_fin, in_range))
    return logical_or(out, both_nan) if equal_nan else out


def allclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: bool = False):
    """Whether isclose holds everywhere (a bool array)."""
    check_arraylike("allclose", a, b)
    return all_(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1: Any, a2: Any, equal_nan: bool = False):
    """Same shape and equal elements (NaNs equal if equal_nan)."""
    a1, a2 = asarray(a1), asarray(a2)
    if get_aval(a1).shape != get_aval(a2).shape:
        return asarray(False)
    eq = equal(a1, a2)
    if equal_nan:
        eq = logical_or(eq, logical_and(isnan(a1), isnan(a2)))
    return all_(eq)


def array_equiv(a1: Any, a2: Any):
    """Equal elements after broadcasting (False under a rank-promotion error, as in JAX; other
    shape mismatches raise)."""
    a1, a2 = asarray(a1), asarray(a2)
    try:
        eq = equal(a1, a2)
    except ValueError:
        return asarray(False)
    return all_(eq)


__all__ = ["fmax", "fmin", "clip", "nan_to_num", "trunc", "round", "around", "gcd", "lcm", "angle",
           "isreal", "iscomplex", "iscomplexobj", "isrealobj", "i0", "isclose", "allclose",
           "array_equal", "array_equiv"]
