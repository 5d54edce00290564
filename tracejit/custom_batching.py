"""jax.custom_batching: user-defined vmap rules (a user-facing face over
transforms.custom_batching, where the rules and their call primitive live)."""
from .transforms.custom_batching import custom_vmap, sequential_vmap  # noqa: F401

__all__ = ["custom_vmap", "sequential_vmap"]
