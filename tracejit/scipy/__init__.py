"""jax.scipy: SciPy's API over tracejit arrays (user-facing layer, beside numpy and nn)."""
from . import cluster, fft, integrate, linalg, ndimage, signal, sparse, special, stats  # noqa: F401
