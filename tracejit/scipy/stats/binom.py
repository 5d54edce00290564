"""jax.scipy.stats.binom: the binomial distribution (user-facing layer)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ...lax import lenient as lax
from ...numpy._util import promote_args_inexact
from ..special import gammaln, xlog1py, xlogy


def logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """log P(K = k) for n trials of probability p; -inf off 0..n (shifted by loc)."""
    k, n, p, loc = promote_args_inexact("binom.logpmf", k, n, p, loc)
    y = k - loc
    comb_term = gammaln(n + 1) - (gammaln(y + 1) + gammaln(n - y + 1))
    log_linear = xlogy(y, p) + xlog1py(n - y, -p)
    log_probs = comb_term + log_linear
    # certain outcomes are exactly log 1 (the gammalns need not cancel to 0)
    log_probs = jnp.where(((y == 0) & (n == 0)) | (log_linear == 0), 0., log_probs)
    return jnp.where((k >= loc) & (k < loc + n + 1), log_probs, -np.inf)


def pmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """P(K = k)."""
    return lax.exp(logpmf(k, n, p, loc))
