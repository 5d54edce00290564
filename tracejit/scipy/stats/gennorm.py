"""jax.scipy.stats.gennorm: the generalized normal distribution (user-facing layer)."""
from __future__ import annotations

from typing import Any


from ...lax import lenient as lax
from ... import numpy as jnp
from ...numpy._util import promote_args_inexact


def logpdf(x: Any, beta: Any) -> Any:
    """log(beta / 2) - lgamma(1 / beta) - |x|**beta."""
    x, beta = promote_args_inexact("gennorm.logpdf", x, beta)
    return lax.log(0.5 * beta) - lax.lgamma(1 / beta) - lax.abs(x) ** beta


def pdf(x: Any, beta: Any) -> Any:
    """The generalized normal density."""
    return lax.exp(logpdf(x, beta))


def cdf(x: Any, beta: Any) -> Any:
    """(1 + sign(x) P(1 / beta, |x|**beta)) / 2."""
    x, beta = promote_args_inexact("gennorm.cdf", x, beta)
    a, y = jnp.broadcast_arrays(1 / beta, lax.abs(x) ** beta)
    return 0.5 * (1 + lax.sign(x) * lax.igamma(a, y))
