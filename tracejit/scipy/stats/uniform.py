"""jax.scipy.stats.uniform: the uniform distribution on [loc, loc + scale] (user-facing
layer)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ...lax import lenient as lax
from ...numpy._util import promote_args_inexact


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """-log(scale) on the support, -inf off it."""
    x, loc, scale = promote_args_inexact("uniform.logpdf", x, loc, scale)
    return jnp.where((x > loc + scale) | (x < loc), -np.inf, -lax.log(scale))


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The uniform density."""
    return lax.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X <= x); NaN for NaN x."""
    x, loc, scale = promote_args_inexact("uniform.cdf", x, loc, scale)
    inside = (x >= loc) & (x <= loc + scale)
    return jnp.select([x < loc, x > loc + scale, inside], [0., 1., (x - loc) / scale])


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """loc + scale q; NaN outside [0, 1]."""
    q, loc, scale = promote_args_inexact("uniform.ppf", q, loc, scale)
    return jnp.where(jnp.isnan(q) | (q < 0) | (q > 1), np.nan, loc + scale * q)
