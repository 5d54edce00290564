"""jax.scipy.stats.poisson: the Poisson distribution (user-facing layer)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ...numpy._util import promote_args_inexact
from ..special import entr, gammaincc, gammaln, xlogy


def logpmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """log P(K = k); -inf below loc and at non-integer k."""
    k, mu, loc = promote_args_inexact("poisson.logpmf", k, mu, loc)
    x = k - loc
    log_probs = xlogy(x, mu) - gammaln(x + 1) - mu
    return jnp.where((x < 0) | (jnp.round(k) != k), -np.inf, log_probs)


def pmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """P(K = k)."""
    return jnp.exp(logpmf(k, mu, loc))


def cdf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """P(K <= k) = Q(floor(k) + 1, mu)."""
    k, mu, loc = promote_args_inexact("poisson.cdf", k, mu, loc)
    x = k - loc
    return jnp.where(x < 0, 0, gammaincc(jnp.floor(1 + x), mu))


def entropy(mu: Any, loc: Any = 0) -> Any:
    """The entropy: a direct sum over the mass below mu + 10 sqrt(mu) + 20 for mu < 100 (fixed
    bounds, so it traces), the asymptotic expansion above."""
    mu, loc = promote_args_inexact("poisson.entropy", mu, loc)
    shape = jnp.broadcast_shapes(jnp.shape(mu), jnp.shape(loc))
    flat = jnp.ravel(mu)

    def direct(max_k, upper):
        k = jnp.arange(max_k, dtype=flat.dtype)[:, None]
        probs = jnp.where(k < upper[None, :], pmf(k, flat, 0), 0.)
        return jnp.sum(entr(probs), axis=0)

    safe = jnp.where(flat > 0, flat, 1.)
    small = direct(35, jnp.ceil(flat + 20))
    medium = direct(250, jnp.ceil(flat + 10 * jnp.sqrt(flat) + 20))
    large = 0.5 * jnp.log(2 * np.pi * np.e * safe) - 1. / (12 * safe)
    out = jnp.where(flat == 0, 0., jnp.where(flat < 10, small,
                                             jnp.where(flat < 100, medium, large)))
    return jnp.broadcast_to(jnp.reshape(out, jnp.shape(mu)), shape)
