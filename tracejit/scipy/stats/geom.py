"""jax.scipy.stats.geom: the geometric distribution on 1, 2, ... (user-facing layer)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ...lax import lenient as lax
from ...numpy._util import promote_args_inexact
from ..special import xlog1py


def logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
    """log P(K = k) = (k - 1) log(1 - p) + log p; -inf at k - loc <= 0."""
    k, p, loc = promote_args_inexact("geom.logpmf", k, p, loc)
    x = k - loc
    return jnp.where(x <= 0, -np.inf, xlog1py(x - 1, -p) + lax.log(p))


def pmf(k: Any, p: Any, loc: Any = 0) -> Any:
    """P(K = k)."""
    return jnp.exp(logpmf(k, p, loc))
