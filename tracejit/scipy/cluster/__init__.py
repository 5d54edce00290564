"""jax.scipy.cluster (user-facing layer)."""
from . import vq  # noqa: F401
