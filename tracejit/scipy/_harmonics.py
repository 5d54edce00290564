"""jax.scipy.special.sph_harm_y: spherical harmonics from the stable recurrences of the
orthonormalised associated Legendre functions, in jax.numpy (user-facing layer)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..lax import lenient as lax
from .. import numpy as jnp
from ..core.trace import concrete_value


def _normalized_legendre(n: Any, m: Any, x: Any, n_max: int) -> Any:
    """sqrt((2n+1)/(4 pi) (n-m)!/(n+m)!) P_n^m(x) for 0 <= m <= n <= n_max (Condon-Shortley
    phase included, as SciPy), each element with its own n and m: first along the diagonal
    n = m, then up in n at fixed m (the recurrences whose terms stay bounded)."""
    dtype = x.dtype
    sin = jnp.sqrt(jnp.maximum(1 - x * x, 0))
    p_mm = jnp.full_like(x, 1 / math.sqrt(4 * math.pi))
    start = p_mm
    for k in range(1, n_max + 1):
        p_mm = -math.sqrt((2 * k + 1) / (2 * k)) * sin * p_mm
        start = jnp.where(m == k, p_mm, start)
    mf = m.astype(dtype)
    prev2 = jnp.zeros_like(x)
    prev1 = start
    out = start
    for k in range(1, n_max + 1):
        d = mf + k  # each element's degree at this step
        a = jnp.sqrt((4 * d * d - 1) / (d * d - mf * mf))
        d1 = d - 1
        a_prev = jnp.sqrt((4 * d1 * d1 - 1) / jnp.maximum(d1 * d1 - mf * mf, 1))
        term = jnp.where(k == 1, 0, prev2 / a_prev)  # no n - 2 term on the first step
        cur = a * (x * prev1 - term)
        out = jnp.where(n == m + k, cur, out)
        prev2, prev1 = prev1, cur
    return out


def sph_harm_y(n: Any, m: Any, theta: Any, phi: Any, diff_n: int | None = None,
               n_max: int | None = None) -> Any:
    """The spherical harmonic Y_n^m(theta, phi) (theta the colatitude, phi the longitude), as
    scipy.special.sph_harm_y. `n_max` (JAX's extra argument) bounds n statically: under
    transformations it must be given; degrees above it are clipped to it."""
    if diff_n is not None:
        raise NotImplementedError(
            "The 'diff_n' argument to jax.scipy.special.sph_harm_y is not supported.")
    if jnp.isscalar(theta):
        theta = jnp.array([theta])
    if n_max is None:
        n_max = np.max(concrete_value(n, "The `n_max` argument of `jnp.scipy.special.sph_harm` "
                                         "must be statically specified to use `sph_harm` "
                                         "within JAX transformations."))
    n_max = int(n_max)
    n, m = jnp.asarray(n), jnp.asarray(m)
    theta, phi = jnp.asarray(theta), jnp.asarray(phi)
    dtype = jnp.result_type(theta, phi, float)
    theta, phi = theta.astype(dtype), phi.astype(dtype)
    n, m, theta, phi = jnp.broadcast_arrays(n, m, theta, phi)
    m_abs = jnp.abs(m)
    n = jnp.clip(n, 0, n_max)
    legendre = _normalized_legendre(n, m_abs, jnp.cos(theta), n_max)
    legendre = jnp.where(m_abs > n, 0, legendre)
    angle = m_abs.astype(dtype) * phi
    y = lax.complex(legendre * jnp.cos(angle), legendre * jnp.sin(angle))
    sign = jnp.where(m_abs % 2 == 1, -1, 1).astype(dtype)
    return jnp.where(m < 0, sign * jnp.conj(y), y)
