"""Sorting and searching in tracejit.numpy: sort, argsort, searchsorted, unique(size=), ..."""
from __future__ import annotations

__all__: list[str] = []
