"""`jax.version`: the JAX release whose API tracejit implements. Libraries choose code paths by
comparing jax.__version_info__ (flax, equinox, optax), so it names the API they will find.
User-facing layer (no dependencies)."""
__version__ = "0.10.0"
__version_info__ = tuple(int(part) for part in __version__.split("."))  # as JAX's
