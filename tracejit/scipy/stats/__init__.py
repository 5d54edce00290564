"""jax.scipy.stats: SciPy's distributions' densities and distribution functions over tracejit
arrays (user-facing layer)."""
from . import (bernoulli, beta, betabinom, binom, cauchy, chi2, dirichlet, expon,  # noqa: F401
               gamma, gennorm, geom, gumbel_l, gumbel_r, laplace, logistic, multinomial,
               multivariate_normal, nbinom, norm, pareto, poisson, t, truncnorm, uniform,
               vonmises, wrapcauchy)
from .kde import gaussian_kde  # noqa: F401
from ._core import mode, rankdata, sem  # noqa: F401
