"""jax.scipy.stats.dirichlet: the Dirichlet distribution (user-facing layer). x holds the
components along axis 0 (SciPy's layout); it may leave out the last one."""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ...lax import lenient as lax
from ...numpy._util import promote_dtypes_inexact
from ..special import gammaln, xlogy


def logpdf(x: Any, alpha: Any) -> Any:
    """log of the Dirichlet density; -inf off the simplex."""
    x, alpha = promote_dtypes_inexact(jnp.asarray(x), jnp.asarray(alpha))
    if alpha.ndim != 1:
        raise ValueError(f"`alpha` must be one-dimensional; got alpha.shape={alpha.shape}")
    if x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
        raise ValueError("`x` must have either the same number of entries as `alpha` or one "
                         f"entry fewer; got x.shape={x.shape}, alpha.shape={alpha.shape}")
    if x.shape[0] != alpha.shape[0]:
        x = jnp.concatenate([x, 1 - x.sum(0, keepdims=True)], axis=0)
    normalize = jnp.sum(gammaln(alpha)) - gammaln(jnp.sum(alpha))
    alpha = jnp.reshape(alpha, alpha.shape + (1,) * (x.ndim - 1))
    log_probs = jnp.sum(xlogy(alpha - 1, x), axis=0) - normalize
    simplex = jnp.all(x > 0, axis=0) & (jnp.abs(jnp.sum(x, axis=0) - 1) < 1e-6)
    return jnp.where(simplex, log_probs, -np.inf)


def pdf(x: Any, alpha: Any) -> Any:
    """The Dirichlet density."""
    return lax.exp(logpdf(x, alpha))
