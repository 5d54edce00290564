"""jax.scipy.stats.truncnorm: the normal distribution truncated to [a, b] (in standard units;
user-facing layer)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ...lax import lenient as lax
from ...numpy._util import promote_args_inexact
from .. import special
from . import norm


def _log_diff(log_x: Any, log_y: Any) -> Any:
    """log(exp(log_x) - exp(log_y)) for log_x >= log_y."""
    return log_x + jnp.log1p(-jnp.exp(log_y - log_x))


def _log_gauss_mass(a: Any, b: Any) -> Any:
    """log(ndtr(b) - ndtr(a)), from the tail nearer zero mass so nothing cancels."""
    a, b = jnp.broadcast_arrays(jnp.asarray(a), jnp.asarray(b))
    left, right = b <= 0, a > 0
    central = ~(left | right)
    a_tail, b_tail = jnp.where(right, -b, a), jnp.where(right, -a, b)
    tail = _log_diff(special.log_ndtr(b_tail), special.log_ndtr(a_tail))
    mass_central = jnp.log1p(-special.ndtr(a) - special.ndtr(-b))
    return jnp.where(central, mass_central, tail)


def logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log of the truncated normal density; -inf off [a, b], NaN where a >= b."""
    x, a, b, loc, scale = promote_args_inexact("truncnorm.logpdf", x, a, b, loc, scale)
    val = norm.logpdf(x, loc, scale) - _log_gauss_mass(a, b)
    z = (x - loc) / scale
    val = jnp.where((z < a) | (z > b), -np.inf, val)
    return jnp.where(a >= b, np.nan, val)


def pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The truncated normal density."""
    return lax.exp(logpdf(x, a, b, loc, scale))


def logcdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P(X <= x), from the survival side where the cdf is near 1."""
    x, a, b, loc, scale = promote_args_inexact("truncnorm.logcdf", x, a, b, loc, scale)
    x, a, b = jnp.broadcast_arrays(x, a, b)
    z = (x - loc) / scale
    mass = _log_gauss_mass(a, b)
    log_cdf = _log_gauss_mass(a, z) - mass
    log_sf = _log_gauss_mass(z, b) - mass
    out = jnp.select([z >= b, z <= a, log_cdf > -0.1, z > a],
                     [0., -np.inf, jnp.log1p(-jnp.exp(log_sf)), log_cdf])
    return jnp.where(a >= b, np.nan, out)


def cdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X <= x)."""
    return lax.exp(logcdf(x, a, b, loc, scale))


def logsf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P(X > x), the logcdf of the mirror image."""
    x, a, b, loc, scale = promote_args_inexact("truncnorm.logsf", x, a, b, loc, scale)
    return logcdf(-x, -b, -a, -loc, scale)


def sf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X > x)."""
    return lax.exp(logsf(x, a, b, loc, scale))
