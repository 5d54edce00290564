"""jax.scipy.stats.wrapcauchy: the wrapped Cauchy distribution on [0, 2 pi] (user-facing
layer)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import numpy as jnp
from ...lax import lenient as lax
from ...numpy._util import promote_args_inexact


def logpdf(x: Any, c: Any) -> Any:
    """log of the wrapped Cauchy density; -inf off [0, 2 pi], NaN unless 0 < c < 1."""
    x, c = promote_args_inexact("wrapcauchy.logpdf", x, c)
    out = jnp.log(1 - c * c) - math.log(2 * np.pi) - jnp.log(1 + c * c - 2 * c * jnp.cos(x))
    out = jnp.where((x >= 0) & (x <= 2 * np.pi), out, -np.inf)
    return jnp.where((c > 0) & (c < 1), out, np.nan)


def pdf(x: Any, c: Any) -> Any:
    """The wrapped Cauchy density."""
    return lax.exp(logpdf(x, c))
