"""Sorting primitives: sort (multi-operand, stable), argsort, top_k."""
from __future__ import annotations

__all__: list[str] = []
