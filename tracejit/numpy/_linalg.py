"""Linear algebra basics of tracejit.numpy: dot, vdot, matmul, inner, outer, tensordot, einsum, kron, cross."""
from __future__ import annotations

__all__: list[str] = []
