"""jax.scipy.stats.multivariate_normal: the multivariate normal density (user-facing layer).
The Cholesky factor comes from jnp.linalg.cholesky and the whitening solve from
jax.scipy.linalg.solve_triangular (engineer D's LAPACK-backed functions)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import numpy as jnp
from ...lax import lenient as lax
from ...numpy._util import promote_dtypes_inexact


def logpdf(x: Any, mean: Any, cov: Any, allow_singular: None = None) -> Any:
    """log of the N(mean, cov) density at x (the last axis is the event); cov may be a scalar
    variance shared by every component."""
    if allow_singular is not None:
        raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
    x, mean, cov = promote_dtypes_inexact(jnp.asarray(x), jnp.asarray(mean), jnp.asarray(cov))
    if not mean.shape:
        return -0.5 * jnp.square(x - mean) / cov - 0.5 * (math.log(2 * np.pi) + jnp.log(cov))
    n = mean.shape[-1]
    y = x - mean
    if not np.shape(cov):
        return -0.5 * jnp.sum(y * y, axis=-1) / cov - n / 2 * (math.log(2 * np.pi) + jnp.log(cov))
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise ValueError("multivariate_normal.logpdf got incompatible shapes")
    from ..linalg import solve_triangular
    chol = jnp.linalg.cholesky(cov)
    batch = jnp.broadcast_shapes(chol.shape[:-2], y.shape[:-1])
    chol = jnp.broadcast_to(chol, batch + (n, n))
    z = solve_triangular(chol, jnp.broadcast_to(y, batch + (n,))[..., None], lower=True)[..., 0]
    log_det = jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * jnp.sum(z * z, axis=-1) - n / 2 * math.log(2 * np.pi) - log_det


def pdf(x: Any, mean: Any, cov: Any) -> Any:
    """The multivariate normal density."""
    return lax.exp(logpdf(x, mean, cov))
