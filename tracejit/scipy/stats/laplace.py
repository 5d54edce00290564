"""jax.scipy.stats.laplace: the Laplace distribution (user-facing layer)."""
from __future__ import annotations

from typing import Any


from ...lax import lenient as lax
from ... import numpy as jnp
from ...numpy._util import promote_args_inexact


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log of the Laplace density, -|x - loc| / scale - log(2 scale)."""
    x, loc, scale = promote_args_inexact("laplace.logpdf", x, loc, scale)
    return -(jnp.abs(x - loc) / scale + lax.log(2 * scale))


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The Laplace density."""
    return lax.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X <= x): exp(z) / 2 below loc, 1 - exp(-z) / 2 above."""
    x, loc, scale = promote_args_inexact("laplace.cdf", x, loc, scale)
    z = (x - loc) / scale
    return jnp.where(z <= 0, 0.5 * lax.exp(z), 1 - 0.5 * lax.exp(-z))
