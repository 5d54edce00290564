"""jax.scipy.cluster.vq: assigning observations to the nearest code of a code book
(user-facing layer, in jax.numpy)."""
from __future__ import annotations

from typing import Any

from ... import numpy as jnp
from ...numpy._util import check_arraylike, promote_dtypes_inexact


def vq(obs: Any, code_book: Any, check_finite: bool = True) -> tuple[Any, Any]:
    """(index of the nearest code for each observation, its Euclidean distance), as SciPy's
    vq (check_finite is accepted and ignored, as in JAX)."""
    del check_finite
    check_arraylike("scipy.cluster.vq.vq", obs, code_book)
    obs, code_book = promote_dtypes_inexact(obs, code_book)
    if obs.ndim != code_book.ndim:
        raise ValueError("Observation and code_book should have the same rank")
    if obs.ndim == 1:
        obs, code_book = obs[..., None], code_book[..., None]
    if obs.ndim != 2:
        raise ValueError("ndim different than 1 or 2 are not supported")
    dist = jnp.linalg.norm(obs[:, None, :] - code_book[None, :, :], axis=-1)
    code = jnp.argmin(dist, axis=-1)
    return code, jnp.take_along_axis(dist, code[:, None], axis=-1)[:, 0]
