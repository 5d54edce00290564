"""Indexing in tracejit.numpy: x[idx] (basic and advanced), x.at[idx].set/add/..., take, take_along_axis, where, nonzero, ..."""
from __future__ import annotations

__all__: list[str] = []
