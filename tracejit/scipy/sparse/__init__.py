"""jax.scipy.sparse: iterative solvers over linear operators (user-facing layer)."""
from . import linalg  # noqa: F401
