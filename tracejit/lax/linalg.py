"""Linear-algebra primitives: dot_general (and dot, batch_matmul on top of it)."""
from __future__ import annotations

__all__: list[str] = []
