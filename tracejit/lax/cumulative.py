"""Cumulative primitives (cumsum, cumprod, cummax, cummin, cumlogsumexp) with their rules."""
from __future__ import annotations

__all__: list[str] = []
