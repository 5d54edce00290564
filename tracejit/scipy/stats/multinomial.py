"""jax.scipy.stats.multinomial: the multinomial distribution (user-facing layer)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...lax import lenient as lax
from ... import numpy as jnp
from ...numpy._util import promote_args_inexact
from ...core import dtypes
from ...numpy._util import promote_args_numeric
from ..special import gammaln, xlogy


def logpmf(x: Any, n: Any, p: Any) -> Any:
    """log P(X = x) for integer counts x (last axis) summing to n; -inf otherwise."""
    (p,) = promote_args_inexact("multinomial.logpmf", p)
    x, n = promote_args_numeric("multinomial.logpmf", x, n)
    if not dtypes.issubdtype(x.dtype, np.integer):
        raise ValueError(f"x and n must be of integer type; got x.dtype={x.dtype}, "
                         f"n.dtype={n.dtype}")
    x, n = x.astype(p.dtype), n.astype(p.dtype)
    log_probs = gammaln(n + 1) + jnp.sum(xlogy(x, p) - gammaln(x + 1), axis=-1)
    return jnp.where(jnp.sum(x) == n, log_probs, -np.inf)


def pmf(x: Any, n: Any, p: Any) -> Any:
    """P(X = x)."""
    return lax.exp(logpmf(x, n, p))
