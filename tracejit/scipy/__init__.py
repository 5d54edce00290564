"""tracejit.scipy (JAX's `jax.scipy`): SciPy's API on tracejit arrays."""
from . import linalg  # noqa: F401
