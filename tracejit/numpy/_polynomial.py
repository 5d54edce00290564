"""Polynomials of tracejit.numpy (coefficients highest power first, as NumPy's poly* functions):
evaluation by Horner's rule in a scan, products by scatter-add, roots from the companion
matrix's eigenvalues, fits by least squares (jnp.linalg.lstsq)."""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..lax import lenient as lax
from ..core import dtypes
from ..core.trace import concrete_value, get_aval
from . import linalg
from ._creation import arange, full, ones, zeros
from ._indexing import diag, where
from ._reductions import all as _all
from ._reductions import argmin
from ._shape import atleast_1d, concatenate, ravel, roll
from ._ufuncs import maximum, sqrt, true_divide
from ._util import array, asarray, broadcast_shapes, check_arraylike, promote_dtypes, \
    promote_dtypes_inexact

__all__ = ["poly", "polyadd", "polyder", "polydiv", "polyfit", "polyint", "polymul", "polysub",
           "polyval", "roots", "vander", "trim_zeros"]


def _arrays(name: str, *args: Any) -> list:
    check_arraylike(name, *args)
    return [asarray(a) for a in args]


def _convolve_full(a: Any, b: Any):
    """Full discrete convolution of two 1-D arrays: every product a[i] * b[j] added at i + j
    (the polynomial product; sizes here are a polynomial's degree, so n*m work is fine)."""
    n, m = get_aval(a).shape[0], get_aval(b).shape[0]
    i, j = np.indices((n, m))
    products = ravel(a[:, None] * b[None, :])
    return zeros(n + m - 1, dtype=get_aval(products).dtype).at[(i + j).ravel()].add(products)


def vander(x: Any, N: int | None = None, increasing: bool = False):
    """The Vandermonde matrix of 1-D x: columns x**(N-1), ..., x**0 (reversed if increasing)."""
    from ._ufuncs import power
    (x,) = _arrays("vander", x)
    aval = get_aval(x)
    if aval.ndim != 1:
        raise ValueError("x must be a one-dimensional array")
    N = aval.shape[0] if N is None else operator.index(
        concrete_value(N, "'N' argument of jnp.vander()"))
    if N < 0:
        raise ValueError("N must be nonnegative")
    iota = lax.iota(aval.dtype, N)
    if not increasing:
        iota = lax.sub(full((), N - 1, aval.dtype), iota)
    return power(x[:, None], iota[None, :])


def polyval(p: Any, x: Any, *, unroll: int = 16):
    """p evaluated at x by Horner's rule (p's leading axis holds the coefficients)."""
    p, x = promote_dtypes(*_arrays("polyval", p, x))
    p_aval, x_aval = get_aval(p), get_aval(x)
    shape = broadcast_shapes(p_aval.shape[1:], x_aval.shape)
    y = zeros(shape, dtype=x_aval.dtype)
    y, _ = lax.scan(lambda y, c: (y * x + c, None), y, p, unroll=unroll)
    return y


def polyadd(a1: Any, a2: Any):
    """The sum of two polynomials (the shorter aligned with the longer's low powers)."""
    a1, a2 = promote_dtypes(*_arrays("polyadd", a1, a2))
    n1, n2 = get_aval(a1).shape[0], get_aval(a2).shape[0]
    return a1.at[-n2:].add(a2) if n2 <= n1 else a2.at[-n1:].add(a1)


def polysub(a1: Any, a2: Any):
    """The difference of two polynomials."""
    a1, a2 = promote_dtypes(*_arrays("polysub", a1, a2))
    return polyadd(a1, -a2)


def polymul(a1: Any, a2: Any, *, trim_leading_zeros: bool = False):
    """The product of two polynomials (an empty one counts as zero)."""
    a1, a2 = promote_dtypes_inexact(*_arrays("polymul", a1, a2))
    if trim_leading_zeros and (get_aval(a1).shape[0] > 1 or get_aval(a2).shape[0] > 1):
        a1, a2 = trim_zeros(a1, trim="f"), trim_zeros(a2, trim="f")
    if get_aval(a1).shape[0] == 0:
        a1 = zeros(1, dtype=get_aval(a2).dtype)
    if get_aval(a2).shape[0] == 0:
        a2 = zeros(1, dtype=get_aval(a1).dtype)
    return _convolve_full(a1, a2)


def polydiv(u: Any, v: Any, *, trim_leading_zeros: bool = False) -> tuple:
    """(quotient, remainder) of u / v by long division (the remainder keeps u's length unless
    trim_leading_zeros, which needs concrete values)."""
    u, v = promote_dtypes_inexact(*_arrays("polydiv", u, v))
    m, n = get_aval(u).shape[0] - 1, get_aval(v).shape[0] - 1
    scale = 1.0 / v[0]
    q = zeros(max(m - n + 1, 1), dtype=get_aval(u).dtype)
    for k in range(0, m - n + 1):
        d = scale * u[k]
        q = q.at[k].set(d)
        u = u.at[k:k + n + 1].add(-d * v)
    if trim_leading_zeros:
        u = _trim_small(u, float(np.sqrt(dtypes.finfo_of(get_aval(u).dtype).eps)))
    return q, u


def _trim_small(filt: Any, tol: float):
    """filt without its leading entries smaller than tol in magnitude (concrete only)."""
    value = np.asarray(concrete_value(
        filt, "Error arose in the `filt` argument of trim_zeros_tol()"))
    small = np.abs(value) < tol
    if small.all():
        return zeros(0, dtype=get_aval(filt).dtype)
    return filt[int(np.argmin(small)):]


def polyint(p: Any, m: int = 1, k: Any = None):
    """The m-th antiderivative of p, with integration constants k (scalar or length m)."""
    m = operator.index(concrete_value(m, "'m' argument of jnp.polyint"))
    p, k = promote_dtypes_inexact(*_arrays("polyint", p, 0 if k is None else k))
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    k = atleast_1d(k)
    if get_aval(k).shape[0] == 1:
        k = full((m,), k[0])
    if get_aval(k).shape != (m,):
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
    if m == 0:
        return p
    dtype = get_aval(p).dtype
    n = get_aval(p).shape[0]
    grid = arange(n + m, dtype=dtype)[None] - arange(m, dtype=dtype)[:, None]
    coeff = maximum(1, grid).prod(0)[::-1]
    return true_divide(concatenate((p, k)), coeff)


def polyder(p: Any, m: int = 1):
    """The m-th derivative of p."""
    (p,) = promote_dtypes_inexact(*_arrays("polyder", p))
    m = operator.index(concrete_value(m, "'m' argument of jnp.polyder"))
    if m < 0:
        raise ValueError("Order of derivative must be positive")
    if m == 0:
        return p
    dtype, n = get_aval(p).dtype, get_aval(p).shape[0]
    coeff = (arange(m, n, dtype=dtype)[None] - arange(m, dtype=dtype)[:, None]).prod(0)
    return p[:-m] * coeff[::-1]


def poly(seq_of_zeros: Any):
    """The monic polynomial with the given roots (or a square matrix's eigenvalues)."""
    (z,) = promote_dtypes_inexact(*_arrays("poly", seq_of_zeros))
    z = atleast_1d(z)
    shape = get_aval(z).shape
    if len(shape) == 2 and shape[0] == shape[1] and shape[0] != 0:
        z = linalg.eigvals(z)
    if get_aval(z).ndim != 1:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    dtype = get_aval(z).dtype
    if get_aval(z).shape[0] == 0:
        return ones((), dtype=dtype)
    a = ones((1,), dtype=dtype)
    for k in range(get_aval(z).shape[0]):
        a = _convolve_full(a, concatenate([ones((1,), dtype), -z[k:k + 1]]))
    return a


def _companion_roots(p: Any):
    """The eigenvalues of p's companion matrix (p[0] != 0), complex."""
    n = get_aval(p).shape[0]
    complex_dtype = dtypes.to_inexact(np.result_type(get_aval(p).dtype, np.complex64))
    if n < 2:
        return array([], dtype=complex_dtype)
    A = diag(ones((n - 2,), get_aval(p).dtype), -1)
    A = A.at[0, :].set(-p[1:] / p[0])
    return linalg.eigvals(A)


def roots(p: Any, *, strip_zeros: bool = True):
    """The roots of p. Leading zeros are stripped (concrete p); with strip_zeros=False (under
    jit) each leading zero gives a NaN root instead."""
    (p,) = promote_dtypes_inexact(*_arrays("roots", p))
    p = atleast_1d(p)
    aval = get_aval(p)
    if aval.ndim != 1:
        raise ValueError("Input must be a rank-1 array.")
    complex_dtype = np.result_type(aval.dtype, np.complex64)
    if aval.shape[0] < 2:
        return array([], dtype=complex_dtype)
    n = aval.shape[0]
    num_leading_zeros = where(_all(p == 0), n, argmin(p == 0))
    if strip_zeros:
        nz = int(concrete_value(
            num_leading_zeros, "The error occurred in the jnp.roots() function. To use this "
            "within a JIT-compiled context, pass strip_zeros=False, but be aware that leading "
            "zeros will result in some returned roots being set to NaN."))
        return _companion_roots(p[nz:])
    # a fixed-size answer: shift the zeros to the end, then NaN the roots they produce
    p = where(n == num_leading_zeros, 1.0, p)
    r = _companion_roots(roll(p, -num_leading_zeros))
    r = lax.sort_key_val(r == 0, r)[1]
    size = get_aval(r).shape[0]
    return where(arange(size) < size - num_leading_zeros, r, complex(np.nan, np.nan))


def polyfit(x: Any, y: Any, deg: int, rcond: float | None = None, full: bool = False,
            w: Any = None, cov: bool | str = False):
    """The least-squares polynomial of degree deg through (x, y) (numpy.polyfit): columns of
    the Vandermonde matrix are scaled to unit norm before lstsq, as NumPy and JAX do."""
    from ._linalg import dot, outer
    x, y = _arrays("polyfit", x, y)
    deg = operator.index(concrete_value(deg, "deg must be int"))
    order = deg + 1
    x_aval, y_aval = get_aval(x), get_aval(y)
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if x_aval.ndim != 1:
        raise TypeError("expected 1D vector for x")
    if x_aval.shape[0] == 0:
        raise TypeError("expected non-empty vector for x")
    if y_aval.ndim < 1 or y_aval.ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if x_aval.shape[0] != y_aval.shape[0]:
        raise TypeError("expected x and y to have same length")
    if rcond is None:
        rcond = x_aval.shape[0] * float(dtypes.finfo_of(x_aval.dtype).eps)
    rcond = float(concrete_value(rcond, "rcond must be float"))
    lhs, rhs = vander(x, order), y
    if w is not None:
        (w,) = promote_dtypes_inexact(*_arrays("polyfit", w))
        if get_aval(w).ndim != 1:
            raise TypeError("expected a 1-d array for weights")
        if get_aval(w).shape[0] != y_aval.shape[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = lhs * w[:, None]
        rhs = rhs * (w[:, None] if y_aval.ndim == 2 else w)
    scale = sqrt((lhs * lhs).sum(axis=0))
    lhs = lhs / scale[None, :]
    c, resids, rank, s = linalg.lstsq(lhs, rhs, rcond)
    c = (c.T / scale[None, :]).T if get_aval(c).ndim > 1 else c / scale
    if full:
        return c, resids, rank, s, asarray(rcond)
    if cov:
        vbase = linalg.inv(dot(lhs.T, lhs)) / outer(scale, scale)
        if cov == "unscaled":
            fac = array(1.0)
        else:
            if x_aval.shape[0] <= order:
                raise ValueError("the number of data points must exceed order to scale the "
                                 "covariance matrix")
            fac = resids / (x_aval.shape[0] - order)
        if y_aval.ndim == 1:
            return c, vbase * atleast_1d(fac)[None]
        return c, vbase[:, :, None] * atleast_1d(fac)[None, None, :]
    return c


def trim_zeros(filt: Any, trim: str = "fb", axis: Any = None):
    """filt without its leading ('f') and/or trailing ('b') all-zero slices along each of
    `axis` (all axes by default); the result's shape depends on values, so filt must be
    concrete."""
    (filt,) = _arrays("trim_zeros", filt)
    value = np.asarray(concrete_value(filt, "Error arose in the `filt` argument of trim_zeros()"))
    ndim = value.ndim
    axes = range(ndim) if axis is None else \
        [a % ndim for a in ((axis,) if isinstance(axis, int) else axis)]
    trim = trim.lower()
    if not axes or ("f" not in trim and "b" not in trim):
        return filt

    def _slice(ax: int) -> slice:
        if ax not in axes:
            return slice(None)
        mask = value.any(axis=tuple(i for i in range(ndim) if i != ax)) if ndim > 1 \
            else value != 0
        if not mask.any():
            return slice(0, 0)
        start = int(mask.argmax()) if "f" in trim else None
        stop = value.shape[ax] - int(mask[::-1].argmax()) if "b" in trim else None
        return slice(start, stop)
    return filt[tuple(_slice(ax) for ax in range(ndim))]
