"""jax.scipy.stats.vonmises: the von Mises distribution on the circle (user-facing layer)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ...lax import lenient as lax
from ...numpy._util import promote_args_inexact


def logpdf(x: Any, kappa: Any) -> Any:
    """kappa (cos x - 1) - log(2 pi i0e(kappa)); NaN unless kappa > 0."""
    x, kappa = promote_args_inexact("vonmises.logpdf", x, kappa)
    out = kappa * (jnp.cos(x) - 1) - jnp.log(2 * np.pi * lax.bessel_i0e(kappa))
    return jnp.where(kappa > 0, out, np.nan)


def pdf(x: Any, kappa: Any) -> Any:
    """The von Mises density."""
    return lax.exp(logpdf(x, kappa))
