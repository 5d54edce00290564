"""jax.scipy.stats.chi2: the chi-squared distribution (user-facing layer)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import numpy as jnp
from ...lax import lenient as lax
from ...numpy._util import promote_args_inexact
from ..special import gammainc, gammaincc


def logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log of the chi-squared density; -inf below loc."""
    x, df, loc, scale = promote_args_inexact("chi2.logpdf", x, df, loc, scale)
    y = (x - loc) / scale
    half_df = df / 2
    kernel = (half_df - 1) * lax.log(y) - y / 2
    normalizer = -(lax.lgamma(half_df) + math.log(2.) * df / 2)
    return jnp.where(x < loc, -np.inf, normalizer - lax.log(scale) + kernel)


def pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The chi-squared density."""
    return lax.exp(logpdf(x, df, loc, scale))


def cdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X <= x) = P(df / 2, x / 2)."""
    x, df, loc, scale = promote_args_inexact("chi2.cdf", x, df, loc, scale)
    return gammainc(df / 2, jnp.clip((x - loc) / (scale * 2), 0, np.inf))


def logcdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P(X <= x)."""
    return lax.log(cdf(x, df, loc, scale))


def sf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X > x) = Q(df / 2, x / 2)."""
    x, df, loc, scale = promote_args_inexact("chi2.sf", x, df, loc, scale)
    return gammaincc(df / 2, jnp.clip((x - loc) / (scale * 2), 0, np.inf))


def logsf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P(X > x)."""
    return lax.log(sf(x, df, loc, scale))
