"""jax.scipy.stats.gumbel_r: the right-skewed Gumbel distribution (user-facing layer)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import numpy as jnp
from ...lax import lenient as lax
from ...numpy._util import promote_args_inexact
from ..special import xlogy


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """-log scale - (z + exp(-z)); NaN unless scale > 0."""
    x, loc, scale = promote_args_inexact("gumbel_r.logpdf", x, loc, scale)
    z = (x - loc) / scale
    return jnp.where(scale > 0, xlogy(-1, scale) - (z + lax.exp(-z)), np.nan)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The Gumbel density."""
    return lax.exp(logpdf(x, loc, scale))


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P(X <= x) = -exp(-z)."""
    x, loc, scale = promote_args_inexact("gumbel_r.logcdf", x, loc, scale)
    z = (x - loc) / scale
    return jnp.where(scale > 0, -lax.exp(-z), np.nan)


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X <= x) = exp(-exp(-z))."""
    return lax.exp(logcdf(x, loc, scale))


def ppf(p: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """loc - scale log(-log p); NaN outside (0, 1)."""
    p, loc, scale = promote_args_inexact("gumbel_r.ppf", p, loc, scale)
    out = loc - scale * lax.log(xlogy(-1, p))
    return jnp.where((p > 0) & (p < 1), out, np.nan)


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X > x) = 1 - exp(-exp(-z))."""
    x, loc, scale = promote_args_inexact("gumbel_r.sf", x, loc, scale)
    neg_z = (loc - x) / scale
    return jnp.where(scale > 0, 1 - lax.exp(-lax.exp(neg_z)), np.nan)


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P(X > x) = log(1 - exp(-exp(-z))), by log1mexp's two forms."""
    x, loc, scale = promote_args_inexact("gumbel_r.logsf", x, loc, scale)
    t = lax.exp((loc - x) / scale)
    # log(1 - exp(-t)): log(-expm1(-t)) for small t, log1p(-exp(-t)) for large
    out = jnp.where(t < math.log(2.), lax.log(-lax.expm1(-t)), lax.log1p(-lax.exp(-t)))
    return jnp.where(scale > 0, out, np.nan)
