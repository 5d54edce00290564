"""jax.scipy.special: special functions as compositions of lax primitives, so each one traces,
differentiates, batches and compiles natively like any other jax.numpy code."""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..core import dtypes
from ..core.trace import get_aval
from ..nn import logsumexp  # noqa: F401  (the same function in JAX)
from ..numpy._util import promote_args_inexact
from ..transforms.api import custom_jvp


def expit(x: Any) -> Any:
    """The logistic sigmoid 1 / (1 + exp(-x))."""
    (x,) = promote_args_inexact("expit", x)
    return lax.logistic(x)


def logit(x: Any) -> Any:
    """The inverse of expit: log(x / (1 - x))."""
    (x,) = promote_args_inexact("logit", x)
    return lax.log(lax.div(x, lax.sub(lax.full_like(x, 1), x)))


def erf(x: Any) -> Any:
    """The error function."""
    (x,) = promote_args_inexact("erf", x)
    return lax.erf(x)


def erfc(x: Any) -> Any:
    """The complementary error function 1 - erf(x), accurate where erf(x) is near 1."""
    (x,) = promote_args_inexact("erfc", x)
    return lax.erfc(x)


def erfinv(x: Any) -> Any:
    """The inverse of erf on (-1, 1)."""
    (x,) = promote_args_inexact("erfinv", x)
    return lax.erf_inv(x)


def gammaln(x: Any) -> Any:
    """log|Gamma(x)|."""
    (x,) = promote_args_inexact("gammaln", x)
    return lax.lgamma(x)


def digamma(x: Any) -> Any:
    """The logarithmic derivative of Gamma."""
    (x,) = promote_args_inexact("digamma", x)
    return lax.digamma(x)


def polygamma(n: Any, x: Any) -> Any:
    """The n-th derivative of digamma (n a non-negative integer)."""
    n, x = promote_args_inexact("polygamma", n, x)
    return lax.polygamma(n, x)


@custom_jvp
def xlogy(x: Any, y: Any) -> Any:
    """x * log(y), and 0 where x == 0 (even where log(y) is -inf or NaN)."""
    x, y = promote_args_inexact("xlogy", x, y)
    x_ok = x != 0.
    return jnp.where(x_ok, lax.mul(x, lax.log(y)), jnp.zeros_like(x))


@xlogy.defjvp
def _xlogy_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    result = xlogy(x, y)
    return result, (x_dot * lax.log(y) + y_dot * x / y).astype(get_aval(result).dtype)


@custom_jvp
def xlog1py(x: Any, y: Any) -> Any:
    """x * log1p(y), and 0 where x == 0."""
    x, y = promote_args_inexact("xlog1py", x, y)
    x_ok = x != 0.
    return jnp.where(x_ok, lax.mul(x, lax.log1p(y)), jnp.zeros_like(x))


@xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    result = xlog1py(x, y)
    return result, (x_dot * lax.log1p(y) + y_dot * x / (1 + y)).astype(get_aval(result).dtype)


def ndtr(x: Any) -> Any:
    """The standard normal CDF, from erf near 0 and erfc in the tails (no cancellation)."""
    x = _real_float("ndtr", x)
    half_sqrt_2 = np.sqrt(0.5)
    w = x * half_sqrt_2
    z = lax.abs(w)
    y = jnp.where(z < half_sqrt_2, 1. + lax.erf(w),
                  jnp.where(w > 0., 2. - lax.erfc(z), lax.erfc(z)))
    return 0.5 * y


def ndtri(p: Any) -> Any:
    """The inverse of ndtr: sqrt(2) * erfinv(2p - 1); -inf at 0, inf at 1, NaN outside."""
    p = _real_float("ndtri", p)
    return np.sqrt(2.) * lax.erf_inv(2. * p - 1.)


# the asymptotic series of log_ndtr takes over below these points (JAX's choice per dtype)
_LOG_NDTR_LOWER = {np.dtype(np.float32): -10., np.dtype(np.float64): -20.}
_LOG_NDTR_UPPER = {np.dtype(np.float32): 5., np.dtype(np.float64): 8.}


def log_ndtr(x: Any, series_order: int = 3) -> Any:
    """log(ndtr(x)), accurate far into both tails: log1p(-ndtr(-x)) above the upper point,
    log(ndtr(x)) in the middle, and an asymptotic series below the lower point."""
    if not isinstance(series_order, int) or not 0 <= series_order <= 30:
        raise ValueError("series_order must be a non-negative integer at most 30, "
                         f"got {series_order!r}")
    return _log_ndtr(_real_float("log_ndtr", x), series_order)


@functools.partial(custom_jvp, nondiff_argnums=(1,))
def _log_ndtr(x: Any, series_order: int) -> Any:
    dtype = np.dtype(get_aval(x).dtype)
    lower = _LOG_NDTR_LOWER.get(dtype, -10.)
    upper = _LOG_NDTR_UPPER.get(dtype, 5.)
    # each branch sees only inputs where it is accurate, so no branch makes a NaN or inf
    # that a gradient through the select would pick up
    safe_low = jnp.minimum(x, lower)
    safe_mid = jnp.clip(x, lower, upper)
    return jnp.where(x > upper, -ndtr(-x),
                     jnp.where(x > lower, lax.log(ndtr(safe_mid)),
                               _log_ndtr_lower(safe_low, series_order)))


@_log_ndtr.defjvp
def _log_ndtr_jvp(series_order, primals, tangents):
    # d/dx log ndtr(x) = pdf(x) / ndtr(x), taken in logs so neither tail over- or underflows
    (x,), (t,) = primals, tangents
    ans = _log_ndtr(x, series_order)
    log_pdf = -0.5 * lax.square(x) - 0.5 * np.log(2. * np.pi)
    return ans, t * lax.exp(log_pdf - ans)


def _log_ndtr_lower(x: Any, series_order: int) -> Any:
    """log(ndtr(x)) for x << 0: -x^2/2 - log(-x) - log(2 pi)/2 + log(1 + sum_k c_k / x^2k)."""
    x_2 = lax.square(x)
    log_scale = -0.5 * x_2 - lax.log(-x) - 0.5 * np.log(2. * np.pi)
    return log_scale + lax.log(_log_ndtr_series(x_2, series_order))


def _log_ndtr_series(x_2: Any, series_order: int) -> Any:
    """1 + sum_{k=1..order} (-1)^k (2k-1)!! / x^2k."""
    even_sum = jnp.zeros_like(x_2)
    odd_sum = jnp.zeros_like(x_2)
    x_2n = x_2
    for n in range(1, series_order + 1):
        term = _double_factorial(2 * n - 1) / x_2n
        if n % 2:
            odd_sum = odd_sum + term
        else:
            even_sum = even_sum + term
        x_2n = x_2n * x_2
    return 1. + even_sum - odd_sum


def _double_factorial(n: int) -> float:
    return float(np.prod(np.arange(n, 0, -2))) if n > 0 else 1.


def _real_float(name: str, x: Any) -> Any:
    """x as an array, which must already be of a real floating dtype (JAX does not promote
    integers here: a TypeError instead)."""
    x = jnp.asarray(x)
    dtype = np.dtype(get_aval(x).dtype)
    if not dtypes.issubdtype(dtype, np.floating):
        raise TypeError(f"{name}: x.dtype={dtype} is not supported; pass a floating-point "
                        "array, e.g. x.astype(jnp.float32)")
    return x
