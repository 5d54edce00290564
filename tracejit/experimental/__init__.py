"""jax.experimental: the experimental APIs that tracejit provides (a package: modules join it)."""
