"""jax.scipy.stats.gumbel_l: the left-skewed Gumbel distribution (user-facing layer)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ...lax import lenient as lax
from ...numpy._util import promote_args_inexact
from ..special import xlog1py, xlogy


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """-log scale + z - exp(z); NaN unless scale > 0."""
    x, loc, scale = promote_args_inexact("gumbel_l.logpdf", x, loc, scale)
    z = (x - loc) / scale
    return jnp.where(scale > 0, xlogy(-1, scale) + (z - lax.exp(z)), np.nan)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The Gumbel density."""
    return lax.exp(logpdf(x, loc, scale))


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P(X <= x) = log(1 - exp(-exp(z)))."""
    x, loc, scale = promote_args_inexact("gumbel_l.logcdf", x, loc, scale)
    z = (x - loc) / scale
    return jnp.where(scale > 0, lax.log(-lax.expm1(-lax.exp(z))), np.nan)


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X <= x)."""
    return lax.exp(logcdf(x, loc, scale))


def ppf(p: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """loc + scale log(-log1p(-p)); NaN outside (0, 1)."""
    p, loc, scale = promote_args_inexact("gumbel_l.ppf", p, loc, scale)
    out = loc + scale * lax.log(xlog1py(-1, -p))
    return jnp.where((p > 0) & (p < 1), out, np.nan)


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P(X > x) = -exp(z)."""
    x, loc, scale = promote_args_inexact("gumbel_l.logsf", x, loc, scale)
    z = (x - loc) / scale
    return jnp.where(scale > 0, -lax.exp(z), np.nan)


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X > x) = exp(-exp(z))."""
    return jnp.exp(logsf(x, loc, scale))
