"""jax.experimental: the experimental APIs that tracejit provides (a package: modules join it)."""
from ..callback import io_callback  # noqa: F401
from . import multihost_utils  # noqa: F401,E402
