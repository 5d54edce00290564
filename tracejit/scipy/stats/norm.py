"""jax.scipy.stats.norm: the normal distribution's pdf, cdf and their logs and inverses."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import numpy as jnp
from ...lax import lenient as lax
from ...numpy._util import promote_args_inexact
from ..special import log_ndtr, ndtr, ndtri

_HALF_LOG_2PI = 0.5 * math.log(2 * np.pi)


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log of the normal density at x."""
    x, loc, scale = promote_args_inexact("norm.logpdf", x, loc, scale)
    z = lax.div(lax.sub(x, loc), scale)
    return -0.5 * lax.square(z) - _HALF_LOG_2PI - lax.log(scale)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The normal density at x."""
    return lax.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X <= x)."""
    x, loc, scale = promote_args_inexact("norm.cdf", x, loc, scale)
    return ndtr(lax.div(lax.sub(x, loc), scale))


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P(X <= x), accurate in the far left tail."""
    x, loc, scale = promote_args_inexact("norm.logcdf", x, loc, scale)
    return log_ndtr(lax.div(lax.sub(x, loc), scale))


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The quantile function: the x with cdf(x) == q."""
    q, loc, scale = promote_args_inexact("norm.ppf", q, loc, scale)
    return jnp.asarray(ndtri(q) * scale + loc, dtype=q.dtype)


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The survival function P(X > x), computed as cdf of the mirror image (no 1 - cdf)."""
    x, loc, scale = promote_args_inexact("norm.sf", x, loc, scale)
    return cdf(-x, -loc, scale)


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P(X > x)."""
    x, loc, scale = promote_args_inexact("norm.logsf", x, loc, scale)
    return logcdf(-x, -loc, scale)


def isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The inverse survival function: the x with sf(x) == q."""
    return ppf(lax.sub(1, q), loc, scale)
