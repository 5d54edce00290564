"""jax.scipy.stats.t: Student's t distribution (user-facing layer)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...lax import lenient as lax
from ...numpy._util import promote_args_inexact


def logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log of the t density with df degrees of freedom."""
    x, df, loc, scale = promote_args_inexact("t.logpdf", x, df, loc, scale)
    z = (x - loc) / scale
    half_df_1 = df / 2 + 0.5
    normalize = lax.log(scale * scale * np.pi * df) / 2 + lax.lgamma(df / 2) - \
        lax.lgamma(half_df_1)
    return -(normalize + half_df_1 * lax.log1p(z * z / df))


def pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The t density."""
    return lax.exp(logpdf(x, df, loc, scale))
