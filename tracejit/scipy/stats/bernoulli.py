"""jax.scipy.stats.bernoulli: the Bernoulli distribution (user-facing layer)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ...numpy._util import promote_args_inexact
from ..special import xlog1py, xlogy


def logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
    """log P(K = k): log p at 1, log(1 - p) at 0, -inf elsewhere."""
    k, p, loc = promote_args_inexact("bernoulli.logpmf", k, p, loc)
    x = k - loc
    log_probs = xlogy(x, p) + xlog1py(1 - x, -p)
    return jnp.where((x < 0) | (x > 1), -np.inf, log_probs)


def pmf(k: Any, p: Any, loc: Any = 0) -> Any:
    """P(K = k)."""
    return jnp.exp(logpmf(k, p, loc))


def cdf(k: Any, p: Any) -> Any:
    """P(K <= k); NaN for p outside [0, 1]."""
    k, p = promote_args_inexact("bernoulli.cdf", k, p)
    bad = jnp.isnan(k) | jnp.isnan(p) | (p < 0) | (p > 1)
    return jnp.select([bad, k < 0, (k >= 0) & (k < 1), k >= 1], [np.nan, 0., 1 - p, 1.])


def ppf(q: Any, p: Any) -> Any:
    """The smallest k in {0, 1} with cdf(k) >= q."""
    q, p = promote_args_inexact("bernoulli.ppf", q, p)
    bad = jnp.isnan(q) | jnp.isnan(p) | (p < 0) | (p > 1) | (q < 0) | (q > 1)
    return jnp.where(bad, np.nan, jnp.where(q <= 1 - p, jnp.zeros_like(q), jnp.ones_like(q)))
