"""jax.scipy.stats.nbinom: the negative binomial distribution (user-facing layer)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ...lax import lenient as lax
from ...numpy._util import promote_args_inexact
from ..special import gammaln, xlogy


def logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """log P(K = k) failures before the n-th success; -inf below loc."""
    k, n, p, loc = promote_args_inexact("nbinom.logpmf", k, n, p, loc)
    y = k - loc
    comb_term = gammaln(y + n) - gammaln(n) - gammaln(y + 1)
    log_probs = comb_term + xlogy(n, p) + xlogy(y, 1 - p)
    return jnp.where(k < loc, -np.inf, log_probs)


def pmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """P(K = k)."""
    return lax.exp(logpmf(k, n, p, loc))
