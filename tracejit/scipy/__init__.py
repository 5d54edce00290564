"""jax.scipy: SciPy's API over tracejit arrays (user-facing layer, beside numpy and nn)."""
from . import special, stats  # noqa: F401
