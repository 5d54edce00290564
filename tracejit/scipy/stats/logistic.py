"""jax.scipy.stats.logistic: the logistic distribution (user-facing layer)."""
from __future__ import annotations

from typing import Any


from ...lax import lenient as lax
from ... import numpy as jnp
from ...numpy._util import promote_args_inexact
from ..special import expit, logit


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log of the logistic density, -2 logaddexp(z/2, -z/2) - log scale (no overflow)."""
    x, loc, scale = promote_args_inexact("logistic.logpdf", x, loc, scale)
    half_z = (x - loc) / scale / 2
    return -2 * jnp.logaddexp(half_z, -half_z) - lax.log(scale)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The logistic density."""
    return lax.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X <= x) = expit(z)."""
    x, loc, scale = promote_args_inexact("logistic.cdf", x, loc, scale)
    return expit((x - loc) / scale)


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X > x) = expit(-z)."""
    x, loc, scale = promote_args_inexact("logistic.sf", x, loc, scale)
    return expit(-((x - loc) / scale))


def ppf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The quantile logit(q) scale + loc."""
    x, loc, scale = promote_args_inexact("logistic.ppf", x, loc, scale)
    return logit(x) * scale + loc


def isf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The inverse survival function -logit(q) scale + loc."""
    x, loc, scale = promote_args_inexact("logistic.isf", x, loc, scale)
    return -logit(x) * scale + loc
