"""Differences, integrals and statistics of tracejit.numpy along an axis (diff, ediff1d,
gradient, trapezoid, unwrap, interp, cov, corrcoef), written over jnp slicing and reductions as
JAX's are, so they trace to a few fused kernels and differentiate through."""
from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from ..lax import lenient as lax
from ..core import dtypes
from ..core.trace import concrete_value, get_aval
from ..lax._base import canonicalize_axis
from ._creation import full
from ._elementwise import clip, iscomplexobj
from ._indexing import diag, where
from ._linalg import dot
from ._reductions import average, cumsum
from ._shape import atleast_2d, concatenate, moveaxis, ravel
from ._sorting import searchsorted
from ._ufuncs import abs as _abs
from ._ufuncs import imag, mod, real, sqrt, true_divide
from ._util import array, asarray, broadcast_to, check_arraylike, promote_dtypes, \
    promote_dtypes_inexact

__all__ = ["diff", "ediff1d", "gradient", "trapezoid", "unwrap", "interp", "cov", "corrcoef"]


def _arrays(name: str, *args: Any) -> list:
    check_arraylike(name, *args)
    return [asarray(a) for a in args]


def _slice(x: Any, start: int | None, stop: int | None, axis: int):
    return lax.slice_in_dim(x, start, stop, axis=axis)


def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None):
    """The n-th discrete difference along axis (`!=` for booleans, as NumPy)."""
    (arr,) = _arrays("diff", a)
    n = operator.index(concrete_value(n, "'n' argument of jnp.diff"))
    axis = operator.index(concrete_value(axis, "'axis' argument of jnp.diff"))
    if n == 0:
        return arr
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    aval = get_aval(arr)
    if aval.ndim == 0:
        raise ValueError(f"diff requires input that is at least one dimensional; got {a}")
    axis = canonicalize_axis(axis, aval.ndim)
    def _edge(extra: Any):
        (extra,) = _arrays("diff", extra)
        if get_aval(extra).ndim == 0:  # a scalar stands for one slice along the axis
            shape = list(aval.shape)
            shape[axis] = 1
            extra = broadcast_to(extra, tuple(shape))
        return extra
    parts = ([] if prepend is None else [_edge(prepend)]) + [arr] + \
        ([] if append is None else [_edge(append)])
    if len(parts) > 1:
        arr = concatenate(parts, axis)
    for _ in range(n):
        hi, lo = _slice(arr, 1, None, axis), _slice(arr, None, -1, axis)
        arr = (hi != lo) if get_aval(arr).dtype == np.bool_ else hi - lo
    return arr


def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None):
    """Differences of consecutive elements of the flattened array, with optional values
    (cast to its dtype) put before and after."""
    (arr,) = _arrays("ediff1d", ary)
    arr = ravel(arr)
    result = lax.sub(arr[1:], arr[:-1])
    dtype = get_aval(arr).dtype
    if to_begin is not None:
        (to_begin,) = _arrays("ediff1d", to_begin)
        result = concatenate((ravel(to_begin.astype(dtype)), result))
    if to_end is not None:
        (to_end,) = _arrays("ediff1d", to_end)
        result = concatenate((result, ravel(to_end.astype(dtype))))
    return result


def _gradient_along(a: Any, h: Any, axis: int):
    """Second-order central differences inside, first-order ones at the two edges; h is a
    scalar spacing or the coordinates along the axis."""
    upper = _slice(a, 1, 2, axis) - _slice(a, 0, 1, axis)
    lower = _slice(a, -1, None, axis) - _slice(a, -2, -1, axis)
    if get_aval(h).ndim == 0:
        inner = (_slice(a, 2, None, axis) - _slice(a, None, -2, axis)) * 0.5 / h
        return concatenate((upper / h, inner, lower / h), axis=axis)
    if get_aval(h).ndim != 1:
        raise ValueError("Spacing arrays must be 1D arrays or scalars.")
    if get_aval(h).shape[0] != get_aval(a).shape[axis]:
        raise ValueError("Spacing arrays must have the same length as the dimension along which "
                         "the gradient is calculated.")
    shape = [1] * get_aval(a).ndim
    shape[axis] = get_aval(h).shape[0]
    h = h.reshape(shape)
    upper = upper / (_slice(h, 1, 2, axis) - _slice(h, 0, 1, axis))
    lower = lower / (_slice(h, -1, None, axis) - _slice(h, -2, -1, axis))
    dx1 = _slice(h, 1, -1, axis) - _slice(h, 0, -2, axis)
    dx2 = _slice(h, 2, None, axis) - _slice(h, 1, -1, axis)
    inner = (-dx2 / (dx1 * (dx1 + dx2)) * _slice(a, 0, -2, axis)
             + (dx2 - dx1) / (dx1 * dx2) * _slice(a, 1, -1, axis)
             + dx1 / (dx2 * (dx1 + dx2)) * _slice(a, 2, None, axis))
    return concatenate((upper, inner, lower), axis=axis)


def gradient(f: Any, *varargs: Any, axis: int | Sequence[int] | None = None,
             edge_order: int | None = None):
    """The gradient of sampled f along each axis (one array per axis, or one array for one
    axis); varargs give one spacing for all axes or one per axis (scalars or coordinates)."""
    if edge_order is not None:
        raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not supported.")
    check_arraylike("gradient", f, *varargs)
    a, *spacing = promote_dtypes_inexact(*(asarray(v) for v in (f, *varargs)))
    ndim = get_aval(a).ndim
    if axis is None:
        axes = tuple(range(ndim))
    else:
        axes = tuple(canonicalize_axis(i, ndim)
                     for i in ((axis,) if isinstance(axis, int) else axis))
    if not axes:
        return []
    if min(s for i, s in enumerate(get_aval(a).shape) if i in axes) < 2:
        raise ValueError("Shape of array too small to calculate a numerical gradient, at least "
                         "2 elements are required.")
    if not spacing:
        dx = [asarray(1.0)] * len(axes)
    elif len(spacing) == 1:
        dx = spacing * len(axes)
    elif len(spacing) == len(axes):
        dx = spacing
    else:
        raise TypeError(f"Invalid number of spacing arguments {len(spacing)} for axis={axis!r}")
    grads = [_gradient_along(a, h, ax) for ax, h in zip(axes, dx)]
    return grads[0] if len(axes) == 1 else grads


def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1):
    """The integral of y along axis by the trapezoidal rule, at points x or spacing dx."""
    if x is None:
        (y,) = promote_dtypes_inexact(*_arrays("trapezoid", y))
        dx = asarray(dx)
        if get_aval(dx).ndim > 0:
            dx = moveaxis(lax.expand_dims(dx, tuple(range(get_aval(y).ndim
                                                          - get_aval(dx).ndim))), axis, -1)
    else:
        y, x = promote_dtypes_inexact(*_arrays("trapezoid", y, x))
        dx = diff(x) if get_aval(x).ndim == 1 else moveaxis(diff(x, axis=axis), axis, -1)
    y = moveaxis(y, axis, -1)
    if get_aval(dx).ndim == 0 or get_aval(dx).shape[-1] == 1:
        d = dx if get_aval(dx).ndim == 0 else dx[..., 0]
        return d * (y.sum(-1) - 0.5 * (y[..., 0] + y[..., -1]))
    return 0.5 * (dx * (y[..., 1:] + y[..., :-1])).sum(-1)


def unwrap(p: Any, discont: Any = None, axis: int = -1, period: Any = 2 * np.pi):
    """p with jumps larger than discont (period/2 by default) along axis replaced by their
    complement modulo period."""
    (p,) = _arrays("unwrap", p)
    p, period = promote_dtypes(p, period)
    dtype = get_aval(p).dtype
    if dtypes.issubdtype(dtype, np.complexfloating):
        raise ValueError("jnp.unwrap does not support complex inputs.")
    if get_aval(p).shape[axis] == 0:
        return p
    if discont is None:
        discont = period / 2
    interval = period // 2 if dtypes.issubdtype(dtype, np.integer) else period / 2
    dd = diff(p, axis=axis)
    ddmod = mod(dd + interval, period) - interval
    ddmod = where((ddmod == -interval) & (dd > 0), interval, ddmod)
    correction = where(_abs(dd) < discont, 0, ddmod - dd)
    return concatenate((_slice(p, 0, 1, axis),
                        _slice(p, 1, None, axis) + cumsum(correction, axis=axis)), axis=axis)


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None):
    """Piecewise-linear interpolation of (xp, fp) at x; left/right give the values outside
    (or 'extrapolate'), period makes xp periodic."""
    x, xp, fp = _arrays("interp", x, xp, fp)
    if get_aval(xp).shape != get_aval(fp).shape or get_aval(xp).ndim != 1:
        raise ValueError("xp and fp must be one-dimensional arrays of equal size")
    x, xp = promote_dtypes_inexact(x, xp)
    (fp,) = promote_dtypes_inexact(fp)
    extrapolate = {}
    for name, v in (("left", left), ("right", right)):
        if isinstance(v, str) and v != "extrapolate":
            raise ValueError(f"the only valid string value of `{name}` is 'extrapolate', but "
                             f"got: {v!r}")
        extrapolate[name] = isinstance(v, str)
    if dtypes.issubdtype(get_aval(x).dtype, np.complexfloating):
        raise ValueError("jnp.interp: complex x values not supported.")
    if period is not None:
        if np.ndim(period) != 0:
            raise ValueError(f"period must be a scalar; got {period}")
        period = _abs(period)
        x, xp = x % period, xp % period
        xp, fp = lax.sort_key_val(xp, fp)
        xp = concatenate([xp[-1:] - period, xp, xp[:1] + period])
        fp = concatenate([fp[-1:], fp, fp[:1]])
    n = get_aval(xp).shape[0]
    i = clip(searchsorted(xp, x, side="right"), 1, n - 1)
    df, dx = fp[i] - fp[i - 1], xp[i] - xp[i - 1]
    delta = x - xp[i - 1]
    # equal neighbouring xp: take the left value rather than divide by zero
    epsilon = np.spacing(dtypes.finfo_of(get_aval(xp).dtype).eps)
    dx0 = lax.abs(dx) <= epsilon
    f = where(dx0, fp[i - 1], fp[i - 1] + delta / where(dx0, 1, dx) * df)
    if period is None:
        if not extrapolate["left"]:
            f = where(x < xp[0], fp[0] if left is None else left, f)
        if not extrapolate["right"]:
            f = where(x > xp[-1], fp[-1] if right is None else right, f)
    return f


def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: int | None = None,
        fweights: Any = None, aweights: Any = None, dtype: Any = None):
    """The covariance matrix of the variables in m's rows (columns if not rowvar), with
    optional frequency and analytic weights."""
    if y is not None:
        m, y = promote_dtypes_inexact(*_arrays("cov", m, y))
        if get_aval(y).ndim > 2:
            raise ValueError("y has more than 2 dimensions")
    else:
        (m,) = promote_dtypes_inexact(*_arrays("cov", m))
    if get_aval(m).ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if dtype is not None and not dtypes.issubdtype(dtype, np.inexact):
        raise ValueError(f"cov: dtype must be a subclass of float or complex; got "
                         f"dtype={dtype!r}")
    X = atleast_2d(m)
    if not rowvar and get_aval(m).ndim != 1:
        X = X.T
    if get_aval(X).shape[0] == 0:
        return array([]).reshape(0, 0)
    if y is not None:
        y2 = atleast_2d(y)
        if not rowvar and get_aval(y2).shape[0] != 1:
            y2 = y2.T
        X = concatenate((X, y2), axis=0)
    rows, cols = get_aval(X).shape
    if cols == 0:
        return full(() if rows == 1 else (rows, rows), np.nan, dtype=get_aval(X).dtype)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    w = None
    if fweights is not None:
        (fweights,) = _arrays("cov", fweights)
        if get_aval(fweights).ndim > 1:
            raise RuntimeError("cannot handle multidimensional fweights")
        if get_aval(fweights).shape[0] != cols:
            raise RuntimeError("incompatible numbers of samples and fweights")
        if not dtypes.issubdtype(get_aval(fweights).dtype, np.integer):
            raise TypeError("fweights must be integer.")
        w = _abs(fweights)
    if aweights is not None:
        (aweights,) = _arrays("cov", aweights)
        if get_aval(aweights).ndim > 1:
            raise RuntimeError("cannot handle multidimensional aweights")
        if get_aval(aweights).shape[0] != cols:
            raise RuntimeError("incompatible numbers of samples and aweights")
        aweights = _abs(aweights)
        w = aweights if w is None else w * aweights
    if dtype is not None:
        X = X.astype(dtype)
        w = None if w is None else w.astype(dtype)
    avg, w_sum = average(X, axis=1, weights=w, returned=True)
    w_sum = w_sum[0]
    if w is None:
        f = cols - ddof
    elif ddof == 0:
        f = w_sum
    elif aweights is None:
        f = w_sum - ddof
    else:
        f = w_sum - ddof * (w * aweights).sum() / w_sum
    X = X - avg[:, None]
    X_T = X.T if w is None else (X * w[None, :]).T
    return true_divide(dot(X, X_T.conj()), f).squeeze()


def corrcoef(x: Any, y: Any = None, rowvar: bool = True, dtype: Any = None):
    """Pearson correlation coefficients (cov normalised by the standard deviations, clipped to
    [-1, 1])."""
    check_arraylike("corrcoef", x)
    if dtype is not None and not dtypes.issubdtype(dtype, np.inexact):
        raise ValueError(f"corrcoef: dtype must be a subclass of float or complex; got "
                         f"dtype={dtype!r}")
    c = cov(x, y, rowvar, dtype=dtype)
    if get_aval(c).ndim == 0:
        return true_divide(c, c)
    cdtype = get_aval(c).dtype
    stddev = sqrt(real(diag(c))).astype(cdtype)
    c = c / stddev[:, None] / stddev[None, :]
    real_part = clip(real(c), -1, 1)
    if iscomplexobj(c):
        return lax.complex(real_part, clip(imag(c), -1, 1))
    return real_part
