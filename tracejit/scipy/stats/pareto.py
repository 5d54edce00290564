"""jax.scipy.stats.pareto: the Pareto distribution (user-facing layer)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ...lax import lenient as lax
from ...numpy._util import promote_args_inexact


def logpdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log of the Pareto density; -inf below loc + scale."""
    x, b, loc, scale = promote_args_inexact("pareto.logpdf", x, b, loc, scale)
    z = (x - loc) / scale
    log_probs = -(lax.log(scale / b) + (b + 1) * lax.log(z))
    return jnp.where(x < loc + scale, -np.inf, log_probs)


def pdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The Pareto density."""
    return lax.exp(logpdf(x, b, loc, scale))


def cdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X <= x) = 1 - z**-b."""
    x, b, loc, scale = promote_args_inexact("pareto.cdf", x, b, loc, scale)
    z = (x - loc) / scale
    return jnp.where(x < loc + scale, 0., 1 - lax.pow(z, -b))


def logcdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P(X <= x) = log1p(-z**-b)."""
    x, b, loc, scale = promote_args_inexact("pareto.logcdf", x, b, loc, scale)
    z = (x - loc) / scale
    return jnp.where(x < loc + scale, -np.inf, lax.log1p(-lax.pow(z, -b)))


def logsf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P(X > x) = -b log z."""
    x, b, loc, scale = promote_args_inexact("pareto.logsf", x, b, loc, scale)
    z = (x - loc) / scale
    return jnp.where(x < loc + scale, 0., -(b * lax.log(z)))


def sf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X > x) = z**-b."""
    return lax.exp(logsf(x, b, loc, scale))


def ppf(q: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """loc + scale (1 - q)**(-1/b); NaN outside [0, 1]."""
    q, b, loc, scale = promote_args_inexact("pareto.ppf", q, b, loc, scale)
    out = loc + scale * lax.pow(1 - q, -(1 / b))
    return jnp.where(jnp.isnan(q) | (q < 0) | (q > 1), np.nan, out)
