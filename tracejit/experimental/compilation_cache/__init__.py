"""jax.experimental.compilation_cache: the persistent compilation cache's controls (a package, as
JAX's: the functions are in its module `compilation_cache`)."""
from . import compilation_cache  # noqa: F401
