"""tracejit.numpy.linalg: norm and friends (jax.numpy.linalg)."""
from __future__ import annotations

__all__: list[str] = []
