"""jax.scipy.stats: SciPy's distributions' densities and distribution functions over tracejit
arrays (user-facing layer)."""
from . import norm  # noqa: F401
