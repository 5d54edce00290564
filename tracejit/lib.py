"""jax.lib: in JAX, the face of jaxlib (its version). tracejit has no separate runtime library:
the version is that of the API implemented. User-facing; loaded on first use (`jax.lib`)."""
from .version import __version__  # noqa: F401

version_str = __version__  # (jax._src.lib's name for it)
