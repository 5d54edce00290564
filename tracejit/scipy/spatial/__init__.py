"""jax.scipy.spatial (user-facing layer): only the `transform` submodule, as in JAX."""
from . import transform  # noqa: F401
