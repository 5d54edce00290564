"""jax.scipy.integrate: the trapezoidal rule (user-facing layer)."""
from __future__ import annotations

from typing import Any

from .. import numpy as jnp
from ..numpy._util import check_arraylike, promote_dtypes_inexact


def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    """The integral of y along `axis` by the trapezoidal rule, at sample points x (or a
    spacing dx, a scalar or an array broadcast against y)."""
    if x is None:
        check_arraylike("trapezoid", y)
        (y,) = promote_dtypes_inexact(jnp.asarray(y))
        dx = jnp.asarray(dx)
        if dx.ndim > 0:
            dx = jnp.moveaxis(jnp.reshape(dx, (1,) * (y.ndim - dx.ndim) + dx.shape), axis, -1)
    else:
        check_arraylike("trapezoid", y, x)
        y, x = promote_dtypes_inexact(jnp.asarray(y), jnp.asarray(x))
        x = x if x.ndim == 1 else jnp.moveaxis(x, axis, -1)
        dx = x[..., 1:] - x[..., :-1]
    y = jnp.moveaxis(y, axis, -1)
    if dx.ndim == 0 or dx.shape[-1] == 1:
        # a uniform spacing: one multiply after the sum
        step = dx if dx.ndim == 0 else dx[..., 0]
        return step * (y.sum(-1) - 0.5 * (y[..., 0] + y[..., -1]))
    return 0.5 * (dx * (y[..., 1:] + y[..., :-1])).sum(-1)
