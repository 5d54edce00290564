"""tracejit.nn: activation functions and friends (jax.nn), built from tracejit.numpy and lax."""
from __future__ import annotations
