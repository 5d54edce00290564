"""jax.scipy.stats.betabinom: the beta-binomial distribution (user-facing layer)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ...lax import lenient as lax
from ...numpy._util import promote_args_inexact
from ..special import betaln


def logpmf(k: Any, n: Any, a: Any, b: Any, loc: Any = 0) -> Any:
    """log P(K = k); -inf off 0..n, NaN unless n >= 0 and a, b > 0."""
    k, n, a, b, loc = promote_args_inexact("betabinom.logpmf", k, n, a, b, loc)
    y = jnp.floor(k) - loc
    combiln = -(jnp.log1p(n) + betaln(n - y + 1, y + 1))
    log_probs = combiln + betaln(y + a, n - y + b) - betaln(a, b)
    log_probs = jnp.where((y == 0) & (n == 0), 0., log_probs)
    log_probs = jnp.where((y < -loc) | (y > n) | (y + a <= 0), -np.inf, log_probs)
    return jnp.where((n < 0) | (a <= 0) | (b <= 0), np.nan, log_probs)


def pmf(k: Any, n: Any, a: Any, b: Any, loc: Any = 0) -> Any:
    """P(K = k)."""
    return lax.exp(logpmf(k, n, a, b, loc))
