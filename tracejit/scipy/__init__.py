"""jax.scipy: SciPy's API over tracejit arrays (user-facing layer, beside numpy and nn)."""
from . import integrate, linalg, ndimage, signal, special, stats  # noqa: F401
